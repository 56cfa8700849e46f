#pragma once
// libjpeg-turbo's own decode speed on a set of JPEGs: the limit `gpufeed-bench decode` holds the
// image datasets against, measured the way libjpeg-turbo's tjbench measures it.

#include <cstdint>
#include <vector>

namespace gpufeed::bench {

/// The encoded bytes of each JPEG, in memory.
using jpeg_files = std::vector<std::vector<unsigned char>>;

/// What `measure_decode_limit` measured.
struct decode_limit_run {
  std::uint64_t images = 0;  ///< images decoded, all threads
  std::uint64_t pixels = 0;  ///< their pixels
  double seconds = 0;        ///< from the threads' common start to the last one's end
  [[nodiscard]] double images_per_s() const noexcept {
    return seconds > 0 ? static_cast<double>(images) / seconds : 0.0;
  }
};

/// Which inverse DCT the limit decodes with.
enum class limit_dct : std::uint8_t {
  fast,      ///< JDCT_IFAST, as tjbench -fastdct: the limit the goals are judged against
  accurate,  ///< JDCT_ISLOW, libjpeg's default, which the image datasets (as PIL, OpenCV) use
};

/// Decodes `images` images of `files` on `threads` threads (thread t takes files t, t +
/// threads, ..., round the set), each whole, from memory, with libjpeg's API as tjbench does:
/// the inverse DCT `dct`, fancy upsampling, RGB output into a buffer each thread allocates once.
/// No file reading, cropping or resizing.
/// @throws std::runtime_error if a file does not decode.
[[nodiscard]] decode_limit_run measure_decode_limit(jpeg_files const& files, unsigned threads,
                                                    std::uint64_t images,
                                                    limit_dct dct = limit_dct::fast);

}  // namespace gpufeed::bench
