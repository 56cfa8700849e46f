#pragma once
/// @file
/// @brief Everything in gpufeed's core: include this one header.

#include "gpufeed/batch.hpp"
#include "gpufeed/batch_plan.hpp"
#include "gpufeed/dataset.hpp"
#include "gpufeed/datasets/in_memory.hpp"
#include "gpufeed/datasets/synthetic.hpp"
#include "gpufeed/dtype.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/log.hpp"
#include "gpufeed/options.hpp"
#include "gpufeed/sample_spec.hpp"
#include "gpufeed/sample_view.hpp"
#include "gpufeed/sampler.hpp"
#include "gpufeed/stats.hpp"
#include "gpufeed/tensor_view.hpp"
#include "gpufeed/version.hpp"
