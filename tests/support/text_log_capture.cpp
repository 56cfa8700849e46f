#include "support/text_log_capture.hpp"

#include "support/log_capture.hpp"

namespace gpufeed::test {

text_log_capture::text_log_capture() : capture_{std::make_unique<log_capture>()} {}
text_log_capture::text_log_capture(std::string const& level)
    : capture_{std::make_unique<log_capture>(level)} {}
text_log_capture::~text_log_capture() = default;

std::vector<std::string> text_log_capture::lines() const {
  return capture_->lines();
}
std::size_t text_log_capture::count(std::string const& text) const {
  return capture_->count(text);
}

}  // namespace gpufeed::test
