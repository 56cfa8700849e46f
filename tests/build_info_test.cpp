// gpufeed::build_parts(): every optional part, in order, each saying what it runs with or why
// this build lacks it.
#include "gpufeed/build_info.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

// The library's public definitions say which parts it was built with.
#if GPUFEED_WITH_HDF5
constexpr bool with_hdf5 = true;
#else
constexpr bool with_hdf5 = false;
#endif
#if GPUFEED_WITH_IMAGES
constexpr bool with_images = true;
#else
constexpr bool with_images = false;
#endif
#if GPUFEED_WITH_OPENCV
constexpr bool with_opencv = true;
#else
constexpr bool with_opencv = false;
#endif
#if GPUFEED_WITH_CUDA
constexpr bool with_cuda = true;
#else
constexpr bool with_cuda = false;
#endif

bool built_here(std::string const& name) {
  if (name == "hdf5") return with_hdf5;
  if (name == "images") return with_images;
  if (name == "opencv") return with_opencv;
  if (name == "cuda") return with_cuda;
  ADD_FAILURE() << "unknown part " << name;
  return false;
}

TEST(BuildParts, EveryPartInOrderAsThisBuildHasIt) {
  auto const parts = gpufeed::build_parts();
  std::vector<std::string> names;
  for (auto const& part : parts) {
    names.push_back(part.name);
    EXPECT_EQ(part.built, built_here(part.name)) << part.name;
    EXPECT_FALSE(part.detail.empty()) << part.name << " says nothing";
  }
  EXPECT_EQ(names, (std::vector<std::string>{"hdf5", "images", "opencv", "cuda"}));
}

TEST(BuildParts, APartLeftOutSaysWhy) {
  for (auto const& part : gpufeed::build_parts()) {
    if (part.built) continue;
    bool const says_why = part.detail.find("turned off") != std::string::npos ||
                          part.detail.find("not found") != std::string::npos ||
                          part.detail.find("left out") != std::string::npos;
    EXPECT_TRUE(says_why) << part.name << ": " << part.detail;
  }
}

TEST(BuildParts, ABuiltPartNamesItsLibrariesVersions) {
  for (auto const& part : gpufeed::build_parts()) {
    if (!part.built) continue;
    if (part.name == "hdf5") {
      EXPECT_EQ(part.detail.rfind("HDF5 1.", 0), 0U) << part.detail;
    }
    if (part.name == "images") {
      EXPECT_NE(part.detail.find("libpng 1."), std::string::npos) << part.detail;
      EXPECT_NE(part.detail.find("jpeg"), std::string::npos) << part.detail;
    }
    if (part.name == "cuda") {
      EXPECT_EQ(part.detail.rfind("CUDA runtime ", 0), 0U) << part.detail;
    }
  }
}

}  // namespace
