#pragma once
// Whether this build runs under ThreadSanitizer or AddressSanitizer, where the suites scale their
// loops down.

#include <cstddef>

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define GPUFEED_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define GPUFEED_TEST_SANITIZED 1
#endif
#endif
#ifndef GPUFEED_TEST_SANITIZED
#define GPUFEED_TEST_SANITIZED 0
#endif

namespace gpufeed::test {

/// True in ThreadSanitizer / AddressSanitizer builds, where loops are scaled down.
inline constexpr bool sanitized = GPUFEED_TEST_SANITIZED != 0;

/// `normal` iterations, or `under_sanitizer` in a sanitizer build.
constexpr std::size_t scaled(std::size_t normal, std::size_t under_sanitizer) noexcept {
  return sanitized ? under_sanitizer : normal;
}

}  // namespace gpufeed::test
