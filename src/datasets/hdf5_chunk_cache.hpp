#pragma once
// The decoded chunks of one compressed HDF5 field, shared by the loader's workers. Internal to
// src/datasets.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gpufeed::detail::h5 {

inline constexpr std::size_t no_chunk = std::numeric_limits<std::size_t>::max();

struct decoded_chunk {
  std::vector<std::byte> bytes;  // written by its decoder alone, read once `ready`
  bool ready = false;
  std::string error;  // set instead of `ready` when decoding failed
};

// The first worker that needs a chunk decodes it, outside the lock; workers that need it
// meanwhile wait for it instead of decoding it again. A chunk is therefore decompressed once per
// stay in the cache, whatever the number of workers. When the cache is full, the least recently
// used decoded chunk makes room (its memory is reused when no reader holds it).
class chunk_cache {
 public:
  struct found {
    std::shared_ptr<decoded_chunk> data;  // readers hold a reference while they copy
    bool decode = false;  // the caller decodes into data->bytes, then calls decoded()
    // Why its decode failed, read under the lock (data->error may be cleared for a reuse once
    // the last reader has dropped its reference, which the readers' copies of the bytes are
    // ordered before, but not a read of the error after them).
    std::string error;
  };

  // Chunk `k`: decoded (or failed: error), after waiting for a decode under way; or, with
  // `decode` set, an entry the caller fills. At most `capacity` decoded chunks are kept.
  [[nodiscard]] found find_or_claim(std::size_t k, std::size_t capacity);

  // Ends the decode of a claimed entry: ready for the waiting readers, or, with an error, failed
  // for them and removed (the next read of the chunk tries again).
  void decoded(std::shared_ptr<decoded_chunk> const& data, std::string error);

 private:
  struct entry {
    std::size_t chunk = no_chunk;
    std::uint64_t used = 0;
    std::shared_ptr<decoded_chunk> data;
  };

  std::shared_ptr<decoded_chunk> claim(std::size_t k, std::size_t capacity);

  std::mutex mutex_;
  std::condition_variable decoded_;
  std::vector<entry> entries_;
  std::uint64_t tick_ = 0;
};

}  // namespace gpufeed::detail::h5
