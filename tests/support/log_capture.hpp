#pragma once
// log_capture: collects the messages gpufeed's logger writes while it lives (header-only; the
// suite links spdlog::spdlog). Attach it before starting threads that log and drop it after they
// are joined or destroyed: spdlog's sink list itself is not synchronized.

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpufeed/log.hpp"

namespace gpufeed::test {

class log_capture {
 public:
  /// Sets gpufeed's log level to `level` first (info by default, so that what a test reads does
  /// not depend on GPUFEED_LOG_LEVEL in its environment), unless it is empty.
  explicit log_capture(std::string const& level = "info") : sink_{std::make_shared<sink>()} {
    if (!level.empty()) gpufeed::set_log_level(level);
    gpufeed::logger()->sinks().push_back(sink_);
  }
  ~log_capture() {
    auto& sinks = gpufeed::logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  log_capture(log_capture const&) = delete;
  log_capture& operator=(log_capture const&) = delete;

  /// The messages so far, oldest first.
  [[nodiscard]] std::vector<std::string> lines() const { return sink_->lines(); }

  /// How many of the messages contain `text`.
  [[nodiscard]] std::size_t count(std::string const& text) const {
    auto const all = lines();
    return static_cast<std::size_t>(std::count_if(all.begin(), all.end(), [&](auto const& line) {
      return line.find(text) != std::string::npos;
    }));
  }

 private:
  class sink final : public spdlog::sinks::base_sink<std::mutex> {
   public:
    std::vector<std::string> lines() {
      std::lock_guard const lock{mutex_};
      return lines_;
    }

   protected:
    void sink_it_(spdlog::details::log_msg const& message) override {
      lines_.emplace_back(message.payload.data(), message.payload.size());
    }
    void flush_() override {}

   private:
    std::vector<std::string> lines_;
  };
  std::shared_ptr<sink> sink_;
};

}  // namespace gpufeed::test
