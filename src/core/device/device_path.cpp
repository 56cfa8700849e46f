#include "core/device/device_path.hpp"

#include <exception>
#include <stdexcept>
#include <string>

#include "gpufeed/error.hpp"

#if defined(GPUFEED_WITH_CUDA)
#include "gpufeed/cuda/error.hpp"
#endif

namespace gpufeed::detail {

namespace {
std::string batch_text(std::size_t slot, std::uint64_t sequence, std::uint64_t epoch) {
  return "gpufeed: batch " + std::to_string(sequence) + " of epoch " + std::to_string(epoch) +
         " (ring slot " + std::to_string(slot) + ")";
}
}  // namespace

template <class Step, class Who>
void device_path::enter(Step const& step, Who const& who, char const* doing) {
  if (!stage_) {
    return;  // the host path
  }
  try {
    step(*stage_);
  } catch (...) {
    rethrow_naming(who() + ", " + doing);
  }
}

void device_path::rethrow_naming(std::string const& what) {
  try {
    throw;
  }
#if defined(GPUFEED_WITH_CUDA)
  catch (cuda_error const& e) {
    throw cuda_error{e.code(), what + ": " + e.what()};
  }
#endif
  catch (out_of_memory const& e) {
    throw out_of_memory{what + ": " + e.what()};
  } catch (logic_error const& e) {
    throw logic_error{what + ": " + e.what()};
  } catch (std::exception const& e) {
    // Another type cannot be rebuilt with the batch named: the original stays nested, so that a
    // caller can still reach it (std::rethrow_if_nested).
    std::throw_with_nested(std::runtime_error{what + ": " + e.what()});
  }
}

device_path::device_path(std::unique_ptr<device_stage> stage) noexcept : stage_{std::move(stage)} {}

device_layout const* device_path::output_layout() const noexcept {
  return stage_ ? &stage_->layout() : nullptr;
}

int device_path::device() const noexcept {
  return stage_ ? stage_->device() : -1;
}

std::byte* device_path::host_memory(std::size_t id) const noexcept {
  return stage_ ? stage_->host_memory(id) : nullptr;
}

std::byte* device_path::device_memory(std::size_t id) const noexcept {
  return stage_ ? stage_->device_memory(id) : nullptr;
}

void device_path::bind_worker_thread(unsigned worker) {
  enter([&](device_stage& stage) { stage.bind_worker_thread(); },
        [&] { return "gpufeed: worker " + std::to_string(worker); },
        "could not use the loader's CUDA device");
}

void device_path::wait_for_copy(slot const& s) {
  enter([&](device_stage& stage) { stage.wait_host_free(s.id); },
        [&] { return batch_text(s.id, s.at.sequence, s.at.epoch); },
        "waiting for the slot's previous copy");
}

void device_path::copy_async(slot const& s) {
  enter([&](device_stage& stage) { stage.copy_async(s.id, s.delivered); },
        [&] { return batch_text(s.id, s.at.sequence, s.at.epoch); }, "its copy to the device");
}

void device_path::hand_off(lease const& held, stream_view consumer) {
  enter([&](device_stage& stage) { stage.hand_off(held.slot, consumer); },
        [&] { return batch_text(held.slot, held.sequence, held.epoch); },
        "its hand-off to the consumer's stream (the batch is not delivered)");
}

void device_path::use_on(lease const& held, stream_view stream) {
  enter([&](device_stage& stage) { stage.use_on(held.slot, stream); },
        [&] { return batch_text(held.slot, held.sequence, held.epoch); }, "batch::use_on");
}

void device_path::release(std::size_t id) noexcept {
  if (stage_) {
    stage_->release(id);
  }
}

void device_path::add_slot(std::size_t id) {
  enter(
      [&](device_stage& stage) {
        GPUFEED_EXPECTS(stage.add_slot() == id,
                        "the CUDA stage's slots are out of step with the ring's");
      },
      [&] { return "gpufeed: ring slot " + std::to_string(id); }, "added for held batches");
}

void device_path::add_to(stats& out) const {
  if (stage_) {
    stage_->add_to(out);
  }
}

}  // namespace gpufeed::detail
