#include "python/bindings/interpreter_exit.hpp"

#include <pybind11/pybind11.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace gpufeed::python {

namespace py = pybind11;

namespace {

std::mutex registry_mutex;
std::vector<std::weak_ptr<closes_at_exit>> registry;

struct deferred_stop {
  std::thread thread;
  std::shared_ptr<std::atomic<bool>> done;
};
std::vector<deferred_stop> deferred_stops;  // under registry_mutex

std::atomic<bool> interpreter_exiting{false};
std::atomic<std::thread::id> exiting_thread{};

}  // namespace

void close_at_exit(std::shared_ptr<closes_at_exit> const& l) {
  std::lock_guard const lock{registry_mutex};
  std::erase_if(registry, [](auto const& w) { return w.expired(); });
  registry.push_back(l);
}

bool must_park() noexcept {
  return interpreter_exiting.load() && exiting_thread.load() != std::this_thread::get_id();
}

void park_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours{1});
}

void stop_elsewhere(loader&& l) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread stopper{[owned = std::make_unique<loader>(std::move(l)), done]() mutable {
    owned.reset();  // joins the workers, the caller's included once its read returns
    done->store(true);
  }};
  std::lock_guard const lock{registry_mutex};
  std::erase_if(deferred_stops, [](deferred_stop& d) {
    if (!d.done->load()) return false;
    d.thread.join();
    return true;
  });
  deferred_stops.push_back({std::move(stopper), std::move(done)});
}

void close_all() {
  std::vector<std::shared_ptr<closes_at_exit>> open;  // alive until closed, whoever drops them
  {
    std::lock_guard const lock{registry_mutex};
    for (auto const& w : registry) {
      if (auto l = w.lock()) open.push_back(std::move(l));
    }
  }
  for (auto const& l : open) l->close();
  std::vector<deferred_stop> stopping;
  {
    std::lock_guard const lock{registry_mutex};
    stopping.swap(deferred_stops);
  }
  py::gil_scoped_release const released;  // their workers may need it to finish a read
  for (auto& d : stopping) d.thread.join();
}

void at_exit() {
  exiting_thread.store(std::this_thread::get_id());
  interpreter_exiting.store(true);
  close_all();
}

}  // namespace gpufeed::python
