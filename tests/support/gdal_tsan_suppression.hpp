#pragma once
// Include once per test program that decodes PNGs through OpenCV, under ThreadSanitizer.

#if defined(__SANITIZE_THREAD__)
// Debian's OpenCV registers GDAL's codecs at its first use; GDAL (not instrumented) takes its own
// mutexes in an order ThreadSanitizer reports as a potential deadlock. Not gpufeed's code.
extern "C" char const* __tsan_default_suppressions() {  // NOLINT: TSan hook
  return "deadlock:libgdal.so\n";
}
#endif
