#include "gpufeed/error.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace gpufeed {

namespace {
// A batch's message names at most this many failed samples, then how many more there are.
constexpr std::size_t described_failures = 8;

std::string describe(std::size_t index, std::uint64_t epoch, unsigned worker,
                     std::string const& message, std::string const& file) {
  std::string text = "reading sample " + std::to_string(index) + " (epoch " +
                     std::to_string(epoch) + ", worker " + std::to_string(worker) + ")";
  if (!file.empty()) {
    text += " from '" + file + "'";
  }
  return text + " failed: " + message;
}

std::string describe(sample_failure const& f) {
  return describe(f.index, f.epoch, f.worker, f.message, f.file);
}

std::string describe(std::vector<sample_failure> const& failures) {
  if (failures.empty()) {
    throw std::invalid_argument{"gpufeed::sample_error: no failed sample given"};
  }
  if (failures.size() == 1) {
    return "gpufeed: " + describe(failures.front());
  }
  std::string text = "gpufeed: " + std::to_string(failures.size()) +
                     " samples of one batch failed (sample_error::failures() has each): ";
  auto const shown = std::min(failures.size(), described_failures);
  for (std::size_t k = 0; k < shown; ++k) {
    text += (k == 0 ? "" : "; ") + describe(failures[k]);
  }
  if (shown < failures.size()) {
    text += "; and " + std::to_string(failures.size() - shown) + " more";
  }
  return text;
}
}  // namespace

sample_error::sample_error(std::size_t index, std::uint64_t epoch, unsigned worker,
                           std::string const& message, std::string file)
    : sample_error{std::vector<sample_failure>{
          {index, epoch, worker, std::move(file), message, std::current_exception()}}} {}

sample_error::sample_error(std::vector<sample_failure> failures)
    : std::runtime_error{describe(failures)}, failures_{std::move(failures)} {}

namespace detail {
void throw_logic_error(char const* condition, std::string const& message, char const* file,
                       int line) {
  throw logic_error{"gpufeed: " + message + " [" + condition + " failed at " + file + ":" +
                    std::to_string(line) + "]"};
}
}  // namespace detail

}  // namespace gpufeed
