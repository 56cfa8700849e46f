#include "gpufeed/loader_state.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

#include "gpufeed/error.hpp"

namespace gpufeed {

std::string loader_state::to_string() const {
  std::ostringstream out;
  out << "gpufeed-state/1 seed=" << seed << " epoch=" << epoch << " next_sequence=" << next_sequence
      << " dataset_size=" << dataset_size << " batch_size=" << batch_size << " rank=" << rank
      << " world_size=" << world_size << " shuffle=" << (shuffle ? 1 : 0)
      << " chunk_window=" << chunk_window;
  return out.str();
}

loader_state loader_state::parse(std::string_view text) {
  auto const bad = [&](std::string const& why) {
    GPUFEED_EXPECTS(false, "cannot parse loader state '" + std::string{text} + "': " + why);
  };
  std::istringstream in{std::string{text}};
  std::string word;
  in >> word;
  if (word != "gpufeed-state/1") {
    bad("it must start with gpufeed-state/1");
  }
  loader_state state;
  // Each key exactly once: a state written by hand or spliced from two checkpoints is refused.
  struct key_slot {
    char const* name;
    std::uint64_t* target;
    std::uint64_t max;
  };
  std::uint64_t rank = 0;
  std::uint64_t world_size = 0;
  std::uint64_t shuffle = 0;
  constexpr auto unsigned_max = std::uint64_t{std::numeric_limits<unsigned>::max()};
  std::array keys{key_slot{"seed", &state.seed, UINT64_MAX},
                  key_slot{"epoch", &state.epoch, UINT64_MAX},
                  key_slot{"next_sequence", &state.next_sequence, UINT64_MAX},
                  key_slot{"dataset_size", &state.dataset_size, UINT64_MAX},
                  key_slot{"batch_size", &state.batch_size, UINT64_MAX},
                  key_slot{"rank", &rank, unsigned_max},
                  key_slot{"world_size", &world_size, unsigned_max},
                  key_slot{"shuffle", &shuffle, 1},
                  key_slot{"chunk_window", &state.chunk_window, UINT64_MAX}};
  std::array<bool, keys.size()> seen{};
  while (in >> word) {
    auto const eq = word.find('=');
    if (eq == std::string::npos) {
      bad("'" + word + "' is not key=value");
    }
    auto const key = word.substr(0, eq);
    auto const value = word.substr(eq + 1);
    auto const k = std::find_if(keys.begin(), keys.end(), [&](auto& e) { return key == e.name; });
    if (k == keys.end()) {
      bad("unknown key '" + key + "'");
    }
    auto const at = static_cast<std::size_t>(k - keys.begin());
    if (seen[at]) {
      bad("key '" + key + "' appears twice");
    }
    seen[at] = true;
    std::uint64_t number = 0;
    auto const [end, error] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (error != std::errc{} || end != value.data() + value.size() || number > k->max) {
      bad("'" + value + "' is not a number from 0 to " + std::to_string(k->max));
    }
    *k->target = number;
  }
  seen.back() = true;  // chunk_window is optional: states written before it existed had none
  if (std::find(seen.begin(), seen.end(), false) != seen.end()) {
    bad("every one of seed, epoch, next_sequence, dataset_size, batch_size, rank, world_size, "
        "shuffle must be given");
  }
  state.rank = static_cast<unsigned>(rank);
  state.world_size = static_cast<unsigned>(world_size);
  state.shuffle = shuffle != 0;
  return state;
}

}  // namespace gpufeed
