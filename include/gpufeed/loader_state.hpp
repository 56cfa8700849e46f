#pragma once
/// @file
/// @brief Where a loader's consumer stands, small enough for a checkpoint (`loader::state()`,
/// `loader::restore()`), with a one-line text form.

#include <cstdint>
#include <string>
#include <string_view>

namespace gpufeed {

/// @brief Where the consumer is: enough to resume exactly, for any worker count.
struct loader_state {
  std::uint64_t seed = 0;
  std::uint64_t epoch = 0;
  std::uint64_t next_sequence = 0;  ///< the next batch next() will return, in `epoch`'s plan
  // Fingerprint of what the order depends on; restore() refuses a state that does not match.
  std::uint64_t dataset_size = 0;
  std::uint64_t batch_size = 0;
  unsigned rank = 0;
  unsigned world_size = 1;
  bool shuffle = false;
  std::uint64_t chunk_window = 0;

  /// @brief A one-line text form, for checkpoints.
  [[nodiscard]] std::string to_string() const;
  /// @brief Parses `to_string()`'s form (`chunk_window` may be absent: 0). @throws logic_error on
  /// anything else.
  [[nodiscard]] static loader_state parse(std::string_view text);
  friend bool operator==(loader_state const&, loader_state const&) = default;
};

}  // namespace gpufeed
