#pragma once
/// @file
/// @brief The libtorch adapter (CMake target `gpufeed::torch`): include this one header.
///
/// - `make_data_loader(...)`: the drop-in for `torch::data::make_data_loader`, over any libtorch
///   dataset with indices or one of gpufeed's own, with libtorch's arguments (a sampler type or
///   instance, `DataLoaderOptions` or a batch size) and libtorch's iterators; tensor examples
///   are copied straight into the batch, anything else is batched by libtorch's own transforms
///   (the slow path); docs/torch.md has the migration table.
/// - `to_tensors(batch&&)`: a batch's fields as `torch::Tensor`s, without a copy.
/// - `find_batch_size`, `scale_learning_rate`: suggestions, never applied.

#include "gpufeed/gpufeed.hpp"
#include "gpufeed/torch/batch_size.hpp"
#include "gpufeed/torch/data_loader.hpp"
#include "gpufeed/torch/dataset_adapter.hpp"
#include "gpufeed/torch/loader_iterator.hpp"
#include "gpufeed/torch/object_batches.hpp"
#include "gpufeed/torch/sampler_orders.hpp"
#include "gpufeed/torch/tensors.hpp"
#include "gpufeed/torch/worker_exception.hpp"
