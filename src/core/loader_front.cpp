#include "gpufeed/detail/loader_front.hpp"

#include <string>
#include <utility>

#include "gpufeed/detail/autotuner.hpp"
#include "gpufeed/error.hpp"

namespace gpufeed::detail {

loader_front::loader_front(std::shared_ptr<dataset const> data, loader_options options)
    : data_{std::move(data)}, options_{std::move(options)} {
  if (data_->layout_from_first_sample()) {
    // As many probe threads as the loader will have workers: reads that wait for each other
    // (a barrier across workers) all run.
    probe_ = std::make_unique<layout_probe>(data_, options_, plan_autotune(options_, 1).threads);
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

loader_core* loader_front::core(clock::time_point give_up_at) {
  if (auto* c = ready()) {
    return c;
  }
  if (failed_) {
    std::rethrow_exception(failed_);
  }
  auto deadline = give_up_at;
  bool const limited = options_.timeout.count() > 0;
  if (limited) {
    deadline = std::min(deadline, clock::now() + options_.timeout);
  }
  if (!probe_->wait(deadline)) {
    if (limited && deadline < give_up_at) {
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
