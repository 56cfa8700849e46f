#pragma once
/// @file
/// @brief Everything in gpufeed's core (CMake target `gpufeed::gpufeed`): include this one header.
/// The system monitor and the progress line are `gpufeed/observe.hpp` (target `gpufeed::observe`).

#include "gpufeed/batch.hpp"
#include "gpufeed/batch_plan.hpp"
#include "gpufeed/dataset.hpp"
#include "gpufeed/datasets/in_memory.hpp"
#include "gpufeed/datasets/synthetic.hpp"
#include "gpufeed/diagnosis.hpp"
#include "gpufeed/dtype.hpp"
#include "gpufeed/epoch_order.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/loader.hpp"
#include "gpufeed/log.hpp"
#include "gpufeed/options.hpp"
#include "gpufeed/sample_layout.hpp"
#include "gpufeed/sample_spec.hpp"
#include "gpufeed/sample_view.hpp"
#include "gpufeed/sampler.hpp"
#include "gpufeed/stats.hpp"
#include "gpufeed/stats_json.hpp"
#include "gpufeed/tensor_view.hpp"
#include "gpufeed/version.hpp"

// The optional datasets, when the library was built with them (the macros come with the target).
#if defined(GPUFEED_WITH_HDF5)
#include "gpufeed/datasets/hdf5.hpp"
#endif
#if defined(GPUFEED_WITH_IMAGES)
#include "gpufeed/datasets/file_list.hpp"
#include "gpufeed/datasets/image_folder.hpp"
#endif
