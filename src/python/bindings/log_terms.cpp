#include "python/bindings/log_terms.hpp"

#include <spdlog/details/log_msg.h>
#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "gpufeed/log.hpp"
#include "python/bindings/python_terms.hpp"

namespace gpufeed::python {

namespace {

// Hands each message, in Python terms, to the sink it wraps, which formats and writes it as
// before (its pattern, colours and level stay its own).
class python_terms_sink final : public spdlog::sinks::sink {
 public:
  explicit python_terms_sink(spdlog::sink_ptr inner) : inner_{std::move(inner)} {}

  void log(spdlog::details::log_msg const& msg) override {
    auto const text = in_python_terms(std::string_view{msg.payload.data(), msg.payload.size()});
    auto translated = msg;
    translated.payload = spdlog::string_view_t{text.data(), text.size()};
    inner_->log(translated);
  }
  void flush() override { inner_->flush(); }
  void set_pattern(std::string const& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override {
    inner_->set_formatter(std::move(formatter));
  }

 private:
  spdlog::sink_ptr inner_;
};

}  // namespace

void log_in_python_terms() {
  // At import, before any loader's threads log: the logger's sink list is not guarded.
  auto& sinks = logger()->sinks();
  for (auto& s : sinks) {
    if (std::dynamic_pointer_cast<python_terms_sink>(s) == nullptr) {
      s = std::make_shared<python_terms_sink>(s);
    }
  }
}

}  // namespace gpufeed::python
