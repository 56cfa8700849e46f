#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

#include "datasets/hdf5_filters.hpp"

namespace gpufeed::detail {

std::ptrdiff_t hdf5_inflate(std::span<std::byte const> in, std::span<std::byte> out,
                            std::string& error) noexcept {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) {
    error = "zlib inflateInit failed";
    return -1;
  }
  // zlib counts in uInt: feed and drain in pieces so that chunks over 4 GiB work too.
  constexpr std::size_t piece = UINT_MAX;
  std::size_t in_done = 0;
  std::size_t out_done = 0;
  int rc = Z_OK;
  while (true) {
    auto const in_now = std::min(piece, in.size() - in_done);
    auto const out_now = std::min(piece, out.size() - out_done);
    // zlib's API takes non-const input (it never writes through it).
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data() + in_done));
    z.avail_in = static_cast<uInt>(in_now);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + out_done);
    z.avail_out = static_cast<uInt>(out_now);
    rc = inflate(&z, Z_NO_FLUSH);
    in_done += in_now - z.avail_in;
    out_done += out_now - z.avail_out;
    if (rc == Z_STREAM_END) break;
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      error =
          std::string{"corrupt deflate data ("} + (z.msg != nullptr ? z.msg : "zlib error") + ")";
      inflateEnd(&z);
      return -1;
    }
    if (out_done == out.size()) {
      // Output full: the stream may still owe its end marker, which needs no output space.
      unsigned char extra = 0;
      z.next_out = &extra;
      z.avail_out = 1;
      rc = inflate(&z, Z_NO_FLUSH);
      if (rc == Z_STREAM_END && z.avail_out == 1) break;
      error =
          "deflate data inflates to more than the chunk's " + std::to_string(out.size()) + " bytes";
      inflateEnd(&z);
      return -1;
    }
    if (in_done == in.size()) {
      error = "deflate data ends early (truncated chunk) after " + std::to_string(out_done) +
              " of " + std::to_string(out.size()) + " bytes";
      inflateEnd(&z);
      return -1;
    }
  }
  inflateEnd(&z);
  return static_cast<std::ptrdiff_t>(out_done);
}

void hdf5_unshuffle(std::span<std::byte const> in, std::span<std::byte> out,
                    std::size_t element_size) noexcept {
  auto const n = std::min(in.size(), out.size());
  if (element_size <= 1) {
    std::memcpy(out.data(), in.data(), n);
    return;
  }
  auto const elements = n / element_size;
  for (std::size_t b = 0; b < element_size; ++b) {
    std::byte const* src = in.data() + b * elements;
    std::byte* dst = out.data() + b;
    for (std::size_t e = 0; e < elements; ++e) {
      dst[e * element_size] = src[e];
    }
  }
  auto const whole = elements * element_size;
  std::memcpy(out.data() + whole, in.data() + whole, n - whole);
}

}  // namespace gpufeed::detail
