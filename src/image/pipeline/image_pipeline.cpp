#include "gpufeed/detail/image_pipeline.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <system_error>
#include <utility>

#include "gpufeed/error.hpp"
#include "image/decode/image_format.hpp"
#include "image/decode/jpeg_decode.hpp"
#include "image/decode/png_decode.hpp"
#include "image/jitter/image_jitter.hpp"
#include "image/pipeline/decode_strategy.hpp"
#include "image/resample/image_resize.hpp"
#if GPUFEED_WITH_OPENCV
#include "image/decode/opencv_decode.hpp"
#endif

namespace gpufeed::detail {

namespace {

constexpr int max_side = 16384;

// The formats decode_whole reads, for its error on any other file.
#if GPUFEED_WITH_OPENCV
constexpr char const* readable_formats =
    "not a JPEG, PNG, BMP, TIFF, WebP, JPEG 2000, PNM or Sun raster image";
#else
constexpr char const* readable_formats = "not a JPEG or PNG image";
#endif

std::string errno_text(int err) {
  return std::system_category().message(err);
}

// Closes a POSIX file descriptor on scope exit.
class file_descriptor {
 public:
  explicit file_descriptor(int fd) noexcept : fd_{fd} {}
  ~file_descriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  file_descriptor(file_descriptor const&) = delete;
  file_descriptor& operator=(file_descriptor const&) = delete;
  [[nodiscard]] int get() const noexcept { return fd_; }

 private:
  int fd_;
};

// splitmix64: one word of state, the same stream on every platform (unlike the standard
// distributions), so the same seed gives the same crop everywhere.
class random_stream {
 public:
  explicit random_stream(std::uint64_t seed) noexcept : state_{seed} {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31U);
  }
  // Uniform in [lo, hi).
  double uniform(double lo, double hi) noexcept {
    double const unit = static_cast<double>(next() >> 11U) * 0x1.0p-53;
    return lo + (hi - lo) * unit;
  }
  // Uniform integer in [0, n] (n >= 0).
  int up_to(int n) noexcept {
    auto const span = static_cast<std::uint64_t>(n) + 1U;
    return static_cast<int>(next() % span);
  }

 private:
  std::uint64_t state_;
};

// An image's size as its header states it.
struct image_extent {
  int width = 0;
  int height = 0;
};

int default_resize_to(image_options const& o) {
  return static_cast<int>(std::lround(std::min(o.height, o.width) * 256.0 / 224.0));
}

// torchvision's Resize(side) + CenterCrop(height, width) as one box in source pixels: the scaled
// image's size is truncated to whole pixels and the crop's offset rounded on that grid, as there.
crop_area center_box(image_options const& o, image_extent src) {
  double const side = o.resize_to > 0 ? o.resize_to : default_resize_to(o);
  double const w = src.width;
  double const h = src.height;
  double const s = std::max({side / std::min(w, h), o.height / h, o.width / w});
  double const scaled_w = std::max<double>(o.width, std::floor(w * s + 1e-6));
  double const scaled_h = std::max<double>(o.height, std::floor(h * s + 1e-6));
  double const sx = scaled_w / w;
  double const sy = scaled_h / h;
  double const left = std::round((scaled_w - o.width) / 2);
  double const top = std::round((scaled_h - o.height) / 2);
  return {left / sx, top / sy, o.width / sx, o.height / sy};
}

// torchvision.transforms.RandomResizedCrop.get_params.
crop_area random_box(image_options const& o, image_extent src, random_stream& rng) {
  int const w = src.width;
  int const h = src.height;
  double const area = static_cast<double>(w) * h;
  double const log_lo = std::log(static_cast<double>(o.ratio_min));
  double const log_hi = std::log(static_cast<double>(o.ratio_max));
  for (int attempt = 0; attempt < 10; ++attempt) {
    double const target = area * rng.uniform(o.scale_min, o.scale_max);
    double const aspect = std::exp(rng.uniform(log_lo, log_hi));
    auto const cw = static_cast<int>(std::lround(std::sqrt(target * aspect)));
    auto const ch = static_cast<int>(std::lround(std::sqrt(target / aspect)));
    if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
      int const y = rng.up_to(h - ch);
      int const x = rng.up_to(w - cw);
      return {static_cast<double>(x), static_cast<double>(y), static_cast<double>(cw),
              static_cast<double>(ch)};
    }
  }
  // Fallback: the centre crop of the closest allowed aspect ratio.
  double const in_ratio = static_cast<double>(w) / h;
  double cw = w;
  double ch = h;
  if (in_ratio < o.ratio_min) {
    ch = std::round(w / static_cast<double>(o.ratio_min));
  } else if (in_ratio > o.ratio_max) {
    cw = std::round(h * static_cast<double>(o.ratio_max));
  }
  return {std::floor((w - cw) / 2), std::floor((h - ch) / 2), cw, ch};
}

// The crop in source pixels.
crop_area plan_crop(image_options const& o, image_extent source, random_stream& rng) {
  return o.resize == resize_mode::center_crop ? center_box(o, source) : random_box(o, source, rng);
}

// `box` (source pixels) in the pixels of the image decoded at `decoded` size, inside it.
crop_area scaled(crop_area const& box, image_extent source, image_extent decoded) {
  double const sx = static_cast<double>(decoded.width) / source.width;
  double const sy = static_cast<double>(decoded.height) / source.height;
  double const x = std::clamp(box.x * sx, 0.0, decoded.width - 1.0);
  double const y = std::clamp(box.y * sy, 0.0, decoded.height - 1.0);
  return {x, y, std::clamp(box.width * sx, 1e-3, decoded.width - x),
          std::clamp(box.height * sy, 1e-3, decoded.height - y)};
}

void apply_jitter(color_jitter const& j, std::span<std::uint8_t> out, random_stream& rng) {
  if (j.brightness <= 0 && j.contrast <= 0 && j.saturation <= 0 && j.hue <= 0) return;
  std::array<int, 4> order{0, 1, 2, 3};
  for (int i = 3; i > 0; --i)
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(rng.up_to(i))]);
  auto factor = [&](float x) { return x > 0 ? rng.uniform(std::max(0.0, 1.0 - x), 1.0 + x) : 1.0; };
  double const b = factor(j.brightness);
  double const c = factor(j.contrast);
  double const s = factor(j.saturation);
  double const h = j.hue > 0 ? rng.uniform(-j.hue, j.hue) : 0.0;
  for (int op : order) {
    switch (op) {
      case 0:
        if (j.brightness > 0) adjust_brightness(out, b);
        break;
      case 1:
        if (j.contrast > 0) adjust_contrast(out, c);
        break;
      case 2:
        if (j.saturation > 0) adjust_saturation(out, s);
        break;
      default:
        if (j.hue > 0) adjust_hue(out, h);
    }
  }
}

}  // namespace

void read_file(std::string const& path, std::vector<unsigned char>& buffer) {
  file_descriptor fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.get() < 0) {
    int const err = errno;
    throw file_error(path, "cannot open: " + errno_text(err));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) {
    int const err = errno;
    throw file_error(path, "cannot stat: " + errno_text(err));
  }
  // st_size is a hint: read until end of file, growing the buffer if the file grew.
  std::size_t capacity = info.st_size > 0 ? static_cast<std::size_t>(info.st_size) + 1 : 4096;
  buffer.resize(capacity);
  std::size_t used = 0;
  while (true) {
    if (used == buffer.size()) buffer.resize(buffer.size() * 2);
    ssize_t const got = ::read(fd.get(), buffer.data() + used, buffer.size() - used);
    if (got < 0) {
      int const err = errno;
      if (err == EINTR) continue;
      throw file_error(path, "cannot read: " + errno_text(err));
    }
    if (got == 0) break;
    used += static_cast<std::size_t>(got);
  }
  buffer.resize(used);
  if (used == 0) throw file_error(path, "the file is empty");
}

image_pipeline::image_pipeline(image_options options)
    : options_{options},
      strategy_{std::make_shared<decode_strategy const>(decode_strategy_for(options))},
      counters_{std::make_shared<image_stage_counters>()} {
  auto const& o = options_;
  GPUFEED_EXPECTS(o.height >= 1 && o.height <= max_side,
                  "image_options::height is " + std::to_string(o.height) + "; allowed 1 .. 16384");
  GPUFEED_EXPECTS(o.width >= 1 && o.width <= max_side,
                  "image_options::width is " + std::to_string(o.width) + "; allowed 1 .. 16384");
  GPUFEED_EXPECTS(o.resize_to >= 0 && o.resize_to <= max_side,
                  "image_options::resize_to is " + std::to_string(o.resize_to) +
                      "; allowed 0 (automatic) .. 16384");
  GPUFEED_EXPECTS(o.scale_min > 0 && o.scale_min <= o.scale_max,
                  "image_options::scale_min/scale_max are " + std::to_string(o.scale_min) + "/" +
                      std::to_string(o.scale_max) + "; need 0 < scale_min <= scale_max");
  GPUFEED_EXPECTS(o.ratio_min > 0 && o.ratio_min <= o.ratio_max,
                  "image_options::ratio_min/ratio_max are " + std::to_string(o.ratio_min) + "/" +
                      std::to_string(o.ratio_max) + "; need 0 < ratio_min <= ratio_max");
  auto const& j = o.jitter;
  GPUFEED_EXPECTS(j.brightness >= 0 && j.contrast >= 0 && j.saturation >= 0,
                  "image_options::jitter: brightness, contrast and saturation must be >= 0 (got " +
                      std::to_string(j.brightness) + ", " + std::to_string(j.contrast) + ", " +
                      std::to_string(j.saturation) + ")");
  GPUFEED_EXPECTS(j.hue >= 0 && j.hue <= 0.5F,
                  "image_options::jitter.hue is " + std::to_string(j.hue) + "; allowed 0 .. 0.5");
}

std::vector<std::int64_t> image_pipeline::shape() const {
  return {options_.height, options_.width, 3};
}

std::size_t image_pipeline::bytes() const noexcept {
  return static_cast<std::size_t>(options_.height) * static_cast<std::size_t>(options_.width) * 3U;
}

void image_pipeline::load(std::string const& path, std::span<std::uint8_t> out,
                          std::uint64_t seed) const {
  thread_local std::vector<unsigned char> buffer;
  auto const start = stage_clock::now();
  read_file(path, buffer);
  counters_->record_read(stage_clock::now() - start);
  transform(buffer, path, out, seed);
}

namespace {

// A decoded image, or the part of it the crop needs: RGBX pixels, or YCbCr planes; and the crop
// in their pixels.
struct decoded_image {
  rgbx_view rgbx;
  std::optional<ycc_view> ycc;  // set: the planes, not rgbx
  crop_area area;
  image_extent source;               // the image's full size
  std::uint64_t decoded_pixels = 0;  // pixels the decoder produced
};

// Not cv::imdecode: it lets libjpeg decode damaged scan data into a garbled picture with only a
// warning on stderr, and it decodes the whole image at full size, to RGB.
decoded_image decode_jpeg(std::span<unsigned char const> encoded, std::string const& name,
                          image_options const& o, decode_strategy const& strategy,
                          random_stream& rng) {
  jpeg_reader reader{encoded, name};
  // Without check_whole_file a truncated file fails only where the decode reaches its end.
  if (o.check_whole_file && !reader.complete()) {
    throw file_error(name, "truncated JPEG (no end-of-image marker after the scan)");
  }
  reader.set_read_to_end(o.check_whole_file);
  // Per thread, reused: the pixel buffers grow to the largest image a thread has decoded and
  // are not allocated again after that (libjpeg still allocates its own state for each image).
  thread_local rgbx_buffer pixels;
  thread_local std::vector<std::uint8_t> planes;
  decoded_image d;
  d.source = {reader.width(), reader.height()};
  if (d.source.width <= 0 || d.source.height <= 0) throw file_error(name, "the JPEG has no pixels");
  crop_area const box = plan_crop(o, d.source, rng);
  int const reduction = jpeg_reduction(o, strategy, box.width, box.height);
  if (reduction > 1) reader.set_reduction(reduction);
  d.area = scaled(box, d.source, {reader.decoded_width(), reader.decoded_height()});
  // The planar path decodes the iMCUs under the crop to YCbCr planes, where it can
  // (decodes_planes_in_part: baseline JPEGs), else every column from the top; the cropped one
  // the crop's rows and columns to RGB. Decoding in part, the planar path is the quicker for
  // any crop (gpufeed-bench decode); else from about half the area on
  // (planar_min_share). A crop the output's size (a copy) takes it whenever its pixels are then
  // exactly libjpeg's (copy_ycc_to_rgb): it converts only the crop's pixels, into the batch, and
  // needs no buffer of RGB rows nor a copy out of it (gpufeed-bench decode,
  // docs/benchmarks/decode).
  double const covered = d.area.width * d.area.height /
                         (static_cast<double>(reader.decoded_width()) * reader.decoded_height());
  bool const copy = is_copy(d.area, o.width, o.height);
  bool const planar =
      strategy.planar && reader.planar() &&
      (copy ? reader.planes_copy_exactly()
            : reader.decodes_planes_in_part() || covered >= planar_min_share || !strategy.cropped);
  if (planar) {
    d.ycc = reader.decode_planes(
        planes, planes_read(d.area, o.width, o.height, reader.planes_chroma_steps()));
    d.decoded_pixels = static_cast<std::uint64_t>(d.ycc->decoded.width) *
                       static_cast<std::uint64_t>(d.ycc->decoded.height);
    return d;
  }
  pixel_rect want{0, 0, reader.decoded_width(), reader.decoded_height()};
  if (strategy.cropped) {
    int const x0 = static_cast<int>(std::floor(d.area.x));
    int const y0 = static_cast<int>(std::floor(d.area.y));
    want = {x0, y0, static_cast<int>(std::ceil(d.area.x + d.area.width)) - x0,
            static_cast<int>(std::ceil(d.area.y + d.area.height)) - y0};
  }
  d.rgbx = reader.decode(want, pixels);
  d.area.x -= d.rgbx.x;
  d.area.y -= d.rgbx.y;
  d.decoded_pixels =
      static_cast<std::uint64_t>(d.rgbx.width) * static_cast<std::uint64_t>(d.rgbx.height);
  return d;
}

// Every format but JPEG: PNG with libpng; the formats only OpenCV reads (by their signature,
// never anything else: imdecode would try every codec it was built with, and GDCM, for one,
// asserts on damaged input) with OpenCV where it is built in. The whole image, at full size.
decoded_image decode_whole(std::span<unsigned char const> encoded, std::string const& name,
                           image_options const& o, random_stream& rng) {
  image_format const format = sniff_image_format(encoded);
  thread_local rgbx_buffer pixels;
  decoded_image d;
  if (format == image_format::png) {
    d.rgbx = decode_png_rgbx(encoded, name, pixels);
  } else if (format == image_format::unknown) {
    throw file_error(name, std::string{"not an image this build reads: "} + readable_formats +
                               " (told by content, not by extension)");
  } else {
#if GPUFEED_WITH_OPENCV
    d.rgbx = decode_with_opencv(encoded, format, name, pixels);
#else
    throw file_error(name, "a " + std::string{image_format_name(format)} +
                               " image: this build of gpufeed reads JPEG and PNG only (the other "
                               "formats need a build with OpenCV, GPUFEED_WITH_OPENCV=ON)");
#endif
  }
  d.source = {d.rgbx.width, d.rgbx.height};
  d.area = scaled(plan_crop(o, d.source, rng), d.source, d.source);
  d.decoded_pixels =
      static_cast<std::uint64_t>(d.rgbx.width) * static_cast<std::uint64_t>(d.rgbx.height);
  return d;
}

}  // namespace

void image_pipeline::transform(std::span<unsigned char const> encoded, std::string const& name,
                               std::span<std::uint8_t> out, std::uint64_t seed) const {
  GPUFEED_EXPECTS(out.size() == bytes(), "image_pipeline: the destination has " +
                                             std::to_string(out.size()) + " bytes, not " +
                                             std::to_string(bytes()));
  if (encoded.empty()) throw file_error(name, "the file is empty");
  auto const& o = options_;
  random_stream rng{seed};
  auto const started = stage_clock::now();
  decoded_image const d = looks_like_jpeg(encoded) ? decode_jpeg(encoded, name, o, *strategy_, rng)
                                                   : decode_whole(encoded, name, o, rng);
  auto const decoded_at = stage_clock::now();
  bool const flip = o.horizontal_flip && (rng.next() >> 63U) != 0;
  if (d.ycc) {
    resize_ycc_to_rgb(*d.ycc, d.area, out, o.width, o.height, flip);
  } else {
    resize_rgbx_to_rgb(d.rgbx, d.area, out, o.width, o.height, flip);
  }
  auto const resized_at = stage_clock::now();
  apply_jitter(o.jitter, out, rng);
  counters_->record(
      started, decoded_at, resized_at, stage_clock::now(), d.decoded_pixels,
      static_cast<std::uint64_t>(d.source.width) * static_cast<std::uint64_t>(d.source.height),
      d.ycc.has_value());
}

image_stage_times image_pipeline::stage_times() const noexcept {
  return counters_->totals();
}

void image_stage_counters::record_read(stage_clock::duration elapsed) noexcept {
  read_ns_.fetch_add(static_cast<std::uint64_t>(elapsed.count()), std::memory_order_relaxed);
}

void image_stage_counters::record(stage_clock::time_point start, stage_clock::time_point decoded,
                                  stage_clock::time_point resized, stage_clock::time_point done,
                                  std::uint64_t decoded_pixels, std::uint64_t source_pixels,
                                  bool planar) noexcept {
  auto const ns = [](stage_clock::duration d) { return static_cast<std::uint64_t>(d.count()); };
  images_.fetch_add(1, std::memory_order_relaxed);
  decode_ns_.fetch_add(ns(decoded - start), std::memory_order_relaxed);
  resize_ns_.fetch_add(ns(resized - decoded), std::memory_order_relaxed);
  jitter_ns_.fetch_add(ns(done - resized), std::memory_order_relaxed);
  decoded_pixels_.fetch_add(decoded_pixels, std::memory_order_relaxed);
  source_pixels_.fetch_add(source_pixels, std::memory_order_relaxed);
  if (planar) planar_images_.fetch_add(1, std::memory_order_relaxed);
}

image_stage_times image_stage_counters::totals() const noexcept {
  auto const seconds = [](std::atomic<std::uint64_t> const& ns) {
    return std::chrono::duration<double>(stage_clock::duration{static_cast<stage_clock::rep>(
                                             ns.load(std::memory_order_relaxed))})
        .count();
  };
  return {.images = images_.load(std::memory_order_relaxed),
          .read_s = seconds(read_ns_),
          .decode_s = seconds(decode_ns_),
          .resize_s = seconds(resize_ns_),
          .jitter_s = seconds(jitter_ns_),
          .decoded_pixels = decoded_pixels_.load(std::memory_order_relaxed),
          .source_pixels = source_pixels_.load(std::memory_order_relaxed),
          .planar_images = planar_images_.load(std::memory_order_relaxed)};
}

sample_spec labelled_image_spec(image_pipeline const& pipeline) {
  return sample_spec{}.add("image", dtype::u8, pipeline.shape()).add("label", dtype::i64, {});
}

void read_labelled_image(image_pipeline const& pipeline, std::span<image_entry const> entries,
                         std::size_t index, sample_view out, read_context const& ctx,
                         char const* dataset) {
  GPUFEED_EXPECTS(index < entries.size(), std::string{dataset} + "::read: index " +
                                              std::to_string(index) + " is past the end (" +
                                              std::to_string(entries.size()) + " images)");
  auto const& entry = entries[index];
  pipeline.load(entry.path, out.as<std::uint8_t>(0), ctx.seed);
  out.as<std::int64_t>(1)[0] = entry.label;
}

}  // namespace gpufeed::detail
