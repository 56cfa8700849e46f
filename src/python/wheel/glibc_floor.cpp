// Built only into the self-contained wheel's extension (GPUFEED_STATIC_DEPENDENCIES), whose C++
// runtime is libstdc++'s archive: it keeps the glibc the extension needs at 2.34.
//
// libstdc++'s std::random_device (in the archive's random.o, which its copy-on-write string
// instantiations pull in; gpufeed never constructs one) refers to arc4random, which glibc has
// only since 2.36. A definition in the extension satisfies that reference at link time, so the
// extension does not ask the C library for it and loads where glibc is 2.34 or 2.35 (RHEL 9,
// Ubuntu 22.04). It is hidden: nothing outside the extension sees it.
#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>

extern "C" __attribute__((visibility("hidden"))) std::uint32_t arc4random() noexcept {
  std::uint32_t value = 0;
  // getrandom (glibc 2.25) blocks only until the kernel's pool is first seeded; four bytes are
  // never returned in part.
  while (getrandom(&value, sizeof value, 0) != static_cast<ssize_t>(sizeof value)) {
    if (errno != EINTR) std::abort();  // as glibc's arc4random: no way to report a failure
  }
  return value;
}
