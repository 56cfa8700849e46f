#include "gpufeed/torch/worker_exception.hpp"

#include <exception>

namespace gpufeed::torch {

namespace {
std::exception_ptr original_of(sample_error const& error) {
  auto const& cause = error.failures().front().cause;
  return cause ? cause : std::make_exception_ptr(error);
}
}  // namespace

worker_exception::worker_exception(sample_error const& error)
    : ::torch::data::WorkerException{original_of(error)}, context_{error} {}

}  // namespace gpufeed::torch
