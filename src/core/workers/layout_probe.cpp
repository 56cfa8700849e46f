#include "core/workers/layout_probe.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "core/loader_core.hpp"
#include "core/workers/batch_fill.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/sampler.hpp"

namespace gpufeed::detail {

layout_probe::layout_probe(std::shared_ptr<adapted_dataset const> data,
                           loader_options const& options, unsigned threads)
    : data_{std::move(data)},
      options_{options},
      epochs_{data_->size(), options_.chunk_window > 0 ? data_->storage_chunk() : 0, options_},
      threads_wanted_{std::max(threads, 1U)} {
  {
    std::lock_guard const lock{mutex_};
    restart_locked({});
  }
  threads_.reserve(threads_wanted_);
  for (unsigned t = 0; t < threads_wanted_; ++t) {
    threads_.emplace_back([this, t] { run(t); });
  }
}

layout_probe::~layout_probe() {
  {
    std::lock_guard const lock{mutex_};
    stop_.store(true);
  }
  changed_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) {
      t.join();
    }
  }
}

// ---- the consumer's position
// ---------------------------------------------------------------------

void layout_probe::restart_locked(cursor at) {
  at_ = epochs_.normalized(at);
  batch_failure_ = nullptr;
  epoch_over_ = false;
  ++generation_;
  staged_.clear();
  failed_ = 0;
  failed_first_batch_ = 0;
  next_ = end_ = first_batch_ = first_ = 0;
  if (auto const* plan = epochs_.plan(at_.epoch); plan != nullptr && plan->batches() > 0) {
    auto const first = plan->span(at_.sequence);
    auto const last = plan->span(plan->batches() - 1);
    first_ = next_ = first.first;
    first_batch_ = first.count;
    end_ = last.first + last.count;
    if (options_.on_error == error_policy::raise) {
      // Past the first batch only as far as every thread needs a sample of its own: when the
      // whole first batch fails, the loader fails.
      end_ = std::min(end_, first_ + std::max<std::size_t>(first_batch_, threads_wanted_));
    }
  }
  changed_.notify_all();
}

void layout_probe::set_epoch(std::uint64_t epoch) {
  std::lock_guard const lock{mutex_};
  if (at_ != cursor{epoch, 0}) {
    restart_locked({epoch, 0});
  }
  epoch_over_ = false;  // the consumer chose where it stands
}

void layout_probe::set_epoch(std::uint64_t epoch, epoch_order order) {
  auto copy = order;  // kept for replay_on: the core checks and cuts it again
  auto given = epochs_.make_order(epoch, std::move(order));
  std::lock_guard const lock{mutex_};
  (void)epochs_.give(std::move(given));
  order_ = std::move(copy);
  order_epoch_ = epoch;
  restart_locked({epoch, 0});
}

void layout_probe::restore(loader_state const& state) {
  epochs_.expect_same_fingerprint(state);
  std::lock_guard const lock{mutex_};
  restart_locked(epochs_.restore_point(state));
}

std::uint64_t layout_probe::epoch() const {
  std::lock_guard const lock{mutex_};
  return at_.epoch;
}

loader_state layout_probe::state() const {
  std::lock_guard const lock{mutex_};
  return epochs_.state_at(at_);
}

layout_probe::plan_sizes layout_probe::current_plan_sizes() const {
  std::lock_guard const lock{mutex_};
  auto const* plan = epochs_.plan(at_.epoch);
  if (plan == nullptr) {
    return {};
  }
  return {plan->batches(), plan->steps(), plan->samples()};
}

std::size_t layout_probe::staged_count() const {
  std::lock_guard const lock{mutex_};
  return staged_.size();
}

// ---- staging
// -------------------------------------------------------------------------------------

std::optional<std::size_t> layout_probe::next_position_locked() {
  if (stop_.load() || spec_ || choosing_ || failure_ || batch_failure_ || next_ >= end_) {
    return std::nullopt;
  }
  return next_++;
}

void layout_probe::check_exhausted_locked() {
  if (spec_ || choosing_ || failure_ || batch_failure_ || stop_.load()) {
    return;
  }
  // Under raise the whole first batch failed (the loader delivers that batch's failure before
  // it learns the layout from a later one); under skip, every position was read.
  bool const first_batch_failed = first_batch_ > 0 && failed_first_batch_ == first_batch_;
  bool const all_read = next_ >= end_ && reading_ == 0;
  if (!(options_.on_error == error_policy::raise ? first_batch_failed || all_read : all_read)) {
    return;
  }
  // In batch order, as a batch's sample_error names them.
  std::vector<staged_read const*> failed;
  for (auto const& r : staged_) {
    if (r.failure &&
        (options_.on_error != error_policy::raise || r.position < first_ + first_batch_)) {
      failed.push_back(&r);
    }
  }
  if (failed.empty()) {
    return;  // nothing staged in this position yet (an order to come, or no samples)
  }
  std::sort(failed.begin(), failed.end(),
            [](auto const* a, auto const* b) { return a->position < b->position; });
  std::vector<sample_failure> failures;
  failures.reserve(failed.size());
  for (auto const* r : failed) {
    failures.push_back(describe_failure(r->failure, r->worker, r->index, r->epoch));
  }
  if (options_.on_error == error_policy::raise && first_batch_failed) {
    batch_failure_ = gather_failures(std::move(failures));
  } else {
    failure_ = gather_failures(std::move(failures));
  }
  changed_.notify_all();
}

void layout_probe::run(unsigned thread) {
  std::unique_lock lock{mutex_};
  for (;;) {
    std::optional<std::size_t> position;
    changed_.wait(lock, [&] {
      return stop_.load() || spec_ || failure_ || (position = next_position_locked());
    });
    if (!position) {
      return;  // stopped, learned, or failed: nothing more to stage
    }
    auto const generation = generation_;
    auto const epoch = at_.epoch;
    auto const order = epochs_.order_of(epoch);
    auto const index = epochs_.index(order.get(), epoch, *position);
    ++reading_;
    lock.unlock();

    read_context const ctx{index, epoch, thread, mix_seed(options_.seed, epoch, index), &stop_};
    std::unique_ptr<staged_sample> sample;
    std::exception_ptr failed;
    bool fatal = false;
    try {
      sample = data_->stage(index, ctx);
      if (!sample) {
        throw logic_error{"the dataset's stage() returned no sample for index " +
                          std::to_string(index)};
      }
    } catch (worker_error const&) {
      failed = std::current_exception();
      fatal = true;
    } catch (...) {
      failed = std::current_exception();
    }

    lock.lock();
    --reading_;
    if (fatal && !failure_) {
      failure_ = failed;
    }
    bool const current = generation == generation_ && !stop_.load();
    if (sample && current && !spec_ && !choosing_) {
      // The layout is this sample's. The dataset hears of it before anything is written.
      choosing_ = true;
      lock.unlock();
      std::optional<sample_spec> spec;
      try {
        spec = sample->spec();
        data_->layout_chosen(*sample);
      } catch (...) {
        failed = std::current_exception();
      }
      lock.lock();
      choosing_ = false;
      if (spec && !failed) {
        spec_ = std::move(spec);
      } else if (!failure_) {
        failure_ = failed;  // the layout of the first sample could not be taken
      }
    }
    if (current && generation == generation_ && !fatal) {
      bool const in_first_batch = *position < first_ + first_batch_;
      if (failed && !sample) {
        ++failed_;
        failed_first_batch_ += in_first_batch ? 1 : 0;
      }
      staged_.push_back({epoch, *position, index, thread, std::move(sample), failed});
    }
    check_exhausted_locked();
    changed_.notify_all();
  }
}

layout_probe::wait_result layout_probe::wait(clock::time_point give_up_at, bool consumer) {
  std::unique_lock lock{mutex_};
  // An epoch without batches (a rank's share smaller than a batch, with drop_last) has no
  // sample to learn the layout from: its end comes at once.
  auto const past_end = [&] {
    auto const* plan = epochs_.plan(at_.epoch);
    return plan != nullptr && at_.sequence >= plan->batches();
  };
  auto const done = [&] {
    return failure_ || batch_failure_ || (consumer && (epoch_over_ || past_end())) ||
           (spec_ && !choosing_ && reading_ == 0);
  };
  if (give_up_at == clock::time_point::max()) {
    changed_.wait(lock, done);
  } else if (!changed_.wait_until(lock, give_up_at, done)) {
    return wait_result::timed_out;
  }
  if (failure_) {
    std::rethrow_exception(failure_);
  }
  if (consumer && (epoch_over_ || past_end())) {
    if (!epoch_over_) {
      restart_locked({at_.epoch + 1, 0});
    }
    epoch_over_ = false;  // the position is the next epoch's already
    return wait_result::epoch_over;
  }
  if (batch_failure_) {
    auto failed = batch_failure_;
    if (consumer) {
      // Delivered: the consumer stands at the next batch, or, after the epoch's last, at the
      // next epoch, whose end it is told of first.
      auto const* plan = epochs_.plan(at_.epoch);
      bool const last = plan == nullptr || at_.sequence + 1 >= plan->batches();
      restart_locked({at_.epoch, at_.sequence + 1});
      epoch_over_ = last;
    }
    std::rethrow_exception(failed);
  }
  return wait_result::learned;
}

layout_probe::learned layout_probe::take() {
  learned out;
  {
    std::lock_guard const lock{mutex_};
    GPUFEED_EXPECTS(spec_.has_value() && !taken_, "layout_probe::take before the layout is known");
    taken_ = true;
    stop_.store(true);
    out.spec = *spec_;
    out.staged = std::move(staged_);
    staged_.clear();
  }
  changed_.notify_all();
  for (auto& t : threads_) {
    t.join();
  }
  threads_.clear();
  return out;
}

void layout_probe::replay_on(loader_core& core) const {
  std::lock_guard const lock{mutex_};
  cursor start{};
  if (order_) {
    core.set_epoch(order_epoch_, *order_);
    start = {order_epoch_, 0};
  }
  if (at_ == start) {
    return;
  }
  if (at_.sequence == 0) {
    core.set_epoch(at_.epoch);
  } else {
    core.restore(epochs_.state_at(at_));
  }
}

}  // namespace gpufeed::detail
