#include "gpufeed/error.hpp"

#include <string>

namespace gpufeed {

namespace {
std::string describe(std::size_t index, std::uint64_t epoch, unsigned worker,
                     std::string const& message, std::string const& file) {
  std::string text = "gpufeed: reading sample " + std::to_string(index) + " (epoch " +
                     std::to_string(epoch) + ", worker " + std::to_string(worker) + ")";
  if (!file.empty()) {
    text += " from '" + file + "'";
  }
  return text + " failed: " + message;
}
}  // namespace

sample_error::sample_error(std::size_t index, std::uint64_t epoch, unsigned worker,
                           std::string const& message, std::string file)
    : std::runtime_error{describe(index, epoch, worker, message, file)},
      index_{index},
      epoch_{epoch},
      worker_{worker},
      file_{std::move(file)} {}

namespace detail {
void throw_logic_error(char const* condition, std::string const& message, char const* file,
                       int line) {
  throw logic_error{"gpufeed: " + message + " [" + condition + " failed at " + file + ":" +
                    std::to_string(line) + "]"};
}
}  // namespace detail

}  // namespace gpufeed
