#pragma once
// gated_dataset + gate: blocks chosen reads until the gate opens (optionally honouring
// read_context::stop_requested()).

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "echo_dataset.hpp"
#include "gpufeed/gpufeed.hpp"

namespace gpufeed::test {

/// A latch that reads wait on until a test opens it.
class gate {
 public:
  void open() {
    {
      std::lock_guard lock{mutex_};
      open_ = true;
    }
    cv_.notify_all();
  }
  [[nodiscard]] bool is_open() const {
    std::lock_guard lock{mutex_};
    return open_;
  }

  /// Blocks until the gate opens; when `honour_stop`, also returns (false) once the loader asks
  /// the read to stop. The stop flag has no wake-up of its own, so it is polled every 200 us.
  bool pass(gpufeed::read_context const& ctx, bool honour_stop) {
    std::unique_lock lock{mutex_};
    ++entered_;
    cv_.notify_all();
    while (!open_) {
      if (honour_stop && ctx.stop_requested()) {
        ++stopped_;
        cv_.notify_all();
        return false;
      }
      if (honour_stop) {
        cv_.wait_for(lock, std::chrono::microseconds{200});
      } else {
        cv_.wait(lock);
      }
    }
    return true;
  }

  /// Waits (up to `limit`) until at least `count` reads have arrived at the gate.
  bool wait_entered(std::size_t count, std::chrono::seconds limit = std::chrono::seconds{20}) {
    std::unique_lock lock{mutex_};
    return cv_.wait_for(lock, limit, [&] { return entered_ >= count; });
  }
  [[nodiscard]] std::size_t entered() const {
    std::lock_guard lock{mutex_};
    return entered_;
  }
  /// Reads that gave up because stop_requested() became true.
  [[nodiscard]] std::size_t stopped() const {
    std::lock_guard lock{mutex_};
    return stopped_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
  std::size_t entered_ = 0;
  std::size_t stopped_ = 0;
};

/// Blocks the reads of `blocked` indices (all indices when empty) at a gate.
class gated_dataset final : public echo_dataset {
 public:
  gated_dataset(std::size_t size, std::shared_ptr<gate> g, std::set<std::size_t> blocked = {},
                bool honour_stop = true)
      : echo_dataset{size},
        gate_{std::move(g)},
        blocked_{std::move(blocked)},
        honour_stop_{honour_stop} {}

 protected:
  void before_read(std::size_t index, gpufeed::read_context const& ctx) const override {
    if (!blocked_.empty() && !blocked_.contains(index)) return;
    (void)gate_->pass(ctx, honour_stop_);
  }

 private:
  std::shared_ptr<gate> gate_;
  std::set<std::size_t> blocked_;
  bool honour_stop_;
};

}  // namespace gpufeed::test
