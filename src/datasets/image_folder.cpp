#include "gpufeed/datasets/image_folder.hpp"

#include <algorithm>
#include <cctype>
#include <system_error>
#include <utility>

#include "gpufeed/error.hpp"

namespace gpufeed {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The images under one class directory, sorted as sorted(os.walk(...)) then sorted(files) sorts
// them in torchvision: by directory, then by name.
std::vector<std::string> images_under(fs::path const& dir) {
  std::vector<std::pair<std::string, std::string>> found;
  std::error_code ec;
  fs::recursive_directory_iterator it{dir, fs::directory_options::follow_directory_symlink, ec};
  if (ec) throw file_error(dir.string(), "cannot list the directory: " + ec.message());
  for (fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
    if (ec) throw file_error(dir.string(), "cannot list the directory: " + ec.message());
    std::error_code kind_ec;
    if (!it->is_regular_file(kind_ec) || !has_image_extension(it->path())) continue;
    found.emplace_back(it->path().parent_path().string(), it->path().filename().string());
  }
  if (ec) throw file_error(dir.string(), "cannot list the directory: " + ec.message());
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  out.reserve(found.size());
  for (auto const& [parent, name] : found) out.push_back((fs::path{parent} / name).string());
  return out;
}

}  // namespace

// torchvision's IMG_EXTENSIONS, in every build, so that a folder lists the same files whatever
// the build decodes; a build without OpenCV fails on the BMP, TIFF, WebP and PNM files by name.
bool has_image_extension(fs::path const& path) {
  auto const ext = lower(path.extension().string());
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".bmp" || ext == ".tif" ||
         ext == ".tiff" || ext == ".webp" || ext == ".ppm" || ext == ".pgm";
}

image_folder::image_folder(fs::path const& root, image_options options) : pipeline_{options} {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw file_error(root.string(), fs::exists(root, ec) ? "is not a directory"
                                                         : "no such directory (image_folder root)");
  }
  fs::directory_iterator it{root, ec};
  if (ec) throw file_error(root.string(), "cannot list the directory: " + ec.message());
  for (fs::directory_iterator end; it != end; it.increment(ec)) {
    if (ec) throw file_error(root.string(), "cannot list the directory: " + ec.message());
    std::error_code kind_ec;
    if (it->is_directory(kind_ec)) classes_.push_back(it->path().filename().string());
  }
  if (ec) throw file_error(root.string(), "cannot list the directory: " + ec.message());
  if (classes_.empty()) {
    throw file_error(root.string(),
                     "no class directories (image_folder expects root/<class>/<image>)");
  }
  std::sort(classes_.begin(), classes_.end());
  for (std::size_t label = 0; label < classes_.size(); ++label) {
    auto const dir = root / classes_[label];
    auto images = images_under(dir);
    if (images.empty()) {
      throw file_error(dir.string(),
                       "no images (.jpg, .jpeg, .png, .bmp, .tif, .tiff, .webp, .ppm or .pgm) in "
                       "class directory '" +
                           classes_[label] + "'");
    }
    for (auto& path : images) {
      entries_.push_back(image_entry{std::move(path), static_cast<std::int64_t>(label)});
    }
  }
}

sample_spec image_folder::spec() const {
  return detail::labelled_image_spec(pipeline_);
}

void image_folder::read(std::size_t index, sample_view out, read_context const& ctx) const {
  detail::read_labelled_image(pipeline_, entries_, index, out, ctx, "image_folder");
}

}  // namespace gpufeed
