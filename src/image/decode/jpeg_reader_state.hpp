#pragma once
/// @file
/// @brief What jpeg_reader's source files share (internal to src/image/decode): libjpeg's
/// decompressor with the error manager that turns its errors and warnings into a longjmp.
///
/// image_jpeg_reader.cpp reads the header and sizes, image_jpeg_rgb.cpp decodes rows to RGBX,
/// image_jpeg_planes.cpp decodes YCbCr planes; each calls into libjpeg only from functions that
/// set their own jump point and hold only trivially destructible locals, so the longjmp skips no
/// destructor.

#include <csetjmp>
#include <cstddef>
#include <cstdio>  // jpeglib.h uses FILE and size_t without declaring them

#include <jpeglib.h>
// libjpeg-turbo's internal header: what decode_planes needs to skip rows and columns in raw mode
// (partial_raw_decoding in image_jpeg_planes.cpp), as the internal structs are laid out since 2.1
// (the master's last_good_iMCU_row). Without it every column is decoded.
#if defined(LIBJPEG_TURBO_VERSION_NUMBER) && LIBJPEG_TURBO_VERSION_NUMBER >= 2001000 && \
    __has_include(<jpegint.h>)
#include <jpegint.h>
#define GPUFEED_JPEG_PARTIAL_RAW 1
#endif

#include <type_traits>

#include "image/decode/jpeg_decode.hpp"

namespace gpufeed::detail {

/// libjpeg hands its callbacks only the jpeg_error_mgr; being the first member of a
/// standard-layout struct, it leads them to the jump buffer and the message.
struct jpeg_failure {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};
static_assert(std::is_standard_layout_v<jpeg_failure>);

using jpeg_state = jpeg_decompress_struct;

struct jpeg_reader::state {
  jpeg_decompress_struct info{};
  jpeg_failure failure{};
  bool complete = false;    // an end-of-image marker follows the first scan's start
  bool read_to_end = true;  // set_read_to_end

  /// Installs the error manager whose callbacks longjmp to `failure.jump`.
  state() noexcept;
  /// Safe after a longjmp out of libjpeg, and before or after a failed jpeg_create_decompress
  /// (it frees nothing while `info.mem` is null).
  ~state() { jpeg_destroy_decompress(&info); }
  state(state const&) = delete;
  state& operator=(state const&) = delete;
  state(state&&) = delete;
  state& operator=(state&&) = delete;
};

}  // namespace gpufeed::detail
