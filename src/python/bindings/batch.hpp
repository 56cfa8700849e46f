#pragma once
// A batch on the Python side: a shared lease on one ring slot, and one exporter object per field
// speaking DLPack (__dlpack__, __dlpack_device__), the numpy array interface (host) and the CUDA
// array interface (device). The slot goes back to the loader when the last tensor made from any
// of its fields dies (the DLPack deleter), not when the Python batch object does.

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <optional>

#include "gpufeed/batch.hpp"
#include "python/bindings/owner_process.hpp"

namespace gpufeed::python {

namespace py = pybind11;

/// The lease, shared by the batch object, its fields and every tensor exported from them.
struct batch_lease {
  explicit batch_lease(batch&& b, std::optional<std::uintptr_t> stream)
      : value{std::move(b)}, consumer_stream{stream} {}
  /// Gives the slot back, except in a process forked from the loader's (a worker process that
  /// inherited this object): the loader there is the parent's, its locks may be held by threads
  /// the child does not have, so the lease is left alone.
  ~batch_lease();
  batch_lease(batch_lease const&) = delete;
  batch_lease& operator=(batch_lease const&) = delete;
  batch value;
  owner_process owner;
  /// The stream the batch was handed to by next() (CUDA path), as DLPack numbers it
  /// (1: the legacy default stream).
  std::optional<std::uintptr_t> consumer_stream;
};

/// `bytes` bytes of host memory at `data` that belong to `lease`'s batch (a collate_fn's output),
/// as a uint8 exporter (DLPack, the array interface) that keeps the batch leased.
[[nodiscard]] py::object export_host_bytes(std::shared_ptr<batch_lease> lease, std::byte* data,
                                           std::size_t bytes);

/// Wraps a batch from next() for Python.
[[nodiscard]] py::object wrap_batch(batch&& b, std::optional<std::uintptr_t> consumer_stream);

void bind_batch(py::module_& m);

}  // namespace gpufeed::python
