#include "python/workers/shared_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

namespace gpufeed::python::workers {

void throw_errno(std::string const& what) {
  throw std::system_error{errno, std::generic_category(), what};
}

file_descriptor::~file_descriptor() {
  if (fd_ >= 0) {
    ::close(fd_);
  }
}

file_descriptor::file_descriptor(file_descriptor&& other) noexcept
    : fd_{std::exchange(other.fd_, -1)} {}

file_descriptor& file_descriptor::operator=(file_descriptor&& other) noexcept {
  std::swap(fd_, other.fd_);
  return *this;
}

std::size_t page_bytes() noexcept {
  static std::size_t const bytes = [] {
    auto const n = ::sysconf(_SC_PAGESIZE);
    return n > 0 ? static_cast<std::size_t>(n) : std::size_t{4096};
  }();
  return bytes;
}

std::size_t round_to_pages(std::size_t bytes) noexcept {
  auto const page = page_bytes();
  return (bytes + page - 1) / page * page;
}

namespace {
std::byte* reserve_range(std::size_t bytes) {
  // Address space only: no memory, no swap is committed (MAP_NORESERVE, PROT_NONE).
  void* p = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    throw_errno("gpufeed: reserving " + std::to_string(bytes) + " bytes of address space");
  }
  return static_cast<std::byte*>(p);
}
}  // namespace

shared_mapping shared_mapping::create(char const* name, std::size_t reserve) {
  shared_mapping m;
  m.file_ = file_descriptor{::memfd_create(name, MFD_CLOEXEC)};
  if (!m.file_) {
    throw_errno(std::string{"gpufeed: memfd_create("} + name + ")");
  }
  m.reserved_ = round_to_pages(reserve);
  m.base_ = reserve_range(m.reserved_);
  return m;
}

shared_mapping shared_mapping::open(int fd, std::size_t reserve) {
  shared_mapping m;
  m.file_ = file_descriptor{fd};
  m.reserved_ = round_to_pages(reserve);
  m.base_ = reserve_range(m.reserved_);
  m.follow();
  return m;
}

shared_mapping::~shared_mapping() {
  if (base_ != nullptr) {
    ::munmap(base_, reserved_);
  }
}

shared_mapping::shared_mapping(shared_mapping&& other) noexcept
    : file_{std::move(other.file_)},
      base_{std::exchange(other.base_, nullptr)},
      reserved_{std::exchange(other.reserved_, 0)},
      size_{std::exchange(other.size_, 0)} {}

shared_mapping& shared_mapping::operator=(shared_mapping&& other) noexcept {
  std::swap(file_, other.file_);
  std::swap(base_, other.base_);
  std::swap(reserved_, other.reserved_);
  std::swap(size_, other.size_);
  return *this;
}

void shared_mapping::map_to(std::size_t bytes) {
  if (bytes <= size_) {
    return;
  }
  if (bytes > reserved_) {
    errno = ENOMEM;
    throw_errno("gpufeed: the shared ring needs " + std::to_string(bytes) +
                " bytes, more than the " + std::to_string(reserved_) + " reserved for it");
  }
  // Maps the new part of the file over the reserved range, at its offset.
  void* p = ::mmap(base_ + size_, bytes - size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                   file_.get(), static_cast<off_t>(size_));
  if (p == MAP_FAILED) {
    throw_errno("gpufeed: mapping " + std::to_string(bytes - size_) + " bytes of shared memory");
  }
  size_ = bytes;
}

void shared_mapping::grow(std::size_t bytes) {
  bytes = round_to_pages(bytes);
  if (bytes <= size_) {
    return;
  }
  if (::ftruncate(file_.get(), static_cast<off_t>(bytes)) != 0) {
    throw_errno("gpufeed: growing shared memory to " + std::to_string(bytes) + " bytes");
  }
  map_to(bytes);
}

void shared_mapping::follow() {
  struct stat info {};
  if (::fstat(file_.get(), &info) != 0) {
    throw_errno("gpufeed: reading the size of shared memory");
  }
  map_to(static_cast<std::size_t>(info.st_size));
}

}  // namespace gpufeed::python::workers
