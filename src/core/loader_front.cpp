#include "core/loader_front.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "core/tuning/autotuner.hpp"
#include "gpufeed/detail/adapted_dataset.hpp"
#include "gpufeed/error.hpp"

namespace gpufeed::detail {

loader_front::loader_front(std::shared_ptr<dataset const> data, loader_options options)
    : data_{std::move(data)}, options_{std::move(options)} {
  if (auto a = std::dynamic_pointer_cast<adapted_dataset const>(data_);
      a != nullptr && a->layout_from_first_sample()) {
    // As many probe threads as the loader will have workers: reads that wait for each other
    // (a barrier across workers) all run.
    probe_ =
        std::make_unique<layout_probe>(std::move(a), options_, plan_autotune(options_, 1).threads);
    return;
  }
  core_ = std::make_shared<loader_core>(data_, options_);
  core_->start();
  ready_.store(core_.get(), std::memory_order_release);
}

loader_front::~loader_front() {
  if (core_) {
    core_->stop();
  }
}

loader_core* loader_front::core(clock::time_point give_up_at, bool* epoch_over) {
  if (auto* c = ready()) {
    return c;
  }
  if (failed_) {
    std::rethrow_exception(failed_);
  }
  // The loader's timeout counts from the first call that waits for this batch, however many
  // short waits (try_next_for) it takes.
  bool const limited = options_.timeout.count() > 0;
  auto const now = clock::now();
  if (!waiting_since_) {
    waiting_since_ = now;
  }
  auto const timeout_at = *waiting_since_ + options_.timeout;
  auto const deadline = limited ? std::min(give_up_at, timeout_at) : give_up_at;
  layout_probe::wait_result waited{};
  try {
    waited = probe_->wait(deadline, epoch_over != nullptr);
  } catch (...) {
    waiting_since_.reset();  // a failed batch was delivered: the next one has its own time
    throw;
  }
  if (waited == layout_probe::wait_result::epoch_over) {
    waiting_since_.reset();
    *epoch_over = true;
    return nullptr;
  }
  if (waited == layout_probe::wait_result::timed_out) {
    if (limited && clock::now() >= timeout_at) {
      waiting_since_.reset();
      throw timeout_error{0,
                          "gpufeed: no sample of the first batch was read within "
                          "loader_options::timeout (" +
                              std::to_string(options_.timeout.count()) +
                              " ms); the batch layout is learned from the first sample read"};
    }
    return nullptr;
  }
  try {
    auto learned = probe_->take();
    auto core = std::make_shared<loader_core>(data_, options_, std::move(learned.spec),
                                              std::move(learned.staged));
    probe_->replay_on(*core);
    core->start();
    std::lock_guard const lock{mutex_};
    core_ = std::move(core);
    ready_.store(core_.get(), std::memory_order_release);
    probe_.reset();
  } catch (...) {
    failed_ = std::current_exception();
    throw;
  }
  return core_.get();
}

stats loader_front::snapshot() const {
  if (auto* c = ready()) {
    return c->snapshot();
  }
  std::lock_guard const lock{mutex_};
  if (core_) {
    return core_->snapshot();
  }
  stats out;
  out.workers = plan_autotune(options_, 1).threads;
  return out;
}

}  // namespace gpufeed::detail
