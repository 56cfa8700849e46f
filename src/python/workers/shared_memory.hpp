#pragma once
// Memory that the loader's process and its worker processes map together: anonymous files
// (memfd_create), which live in the kernel's own shared-memory mount, not in /dev/shm (whose
// size a container may cap at 64 MB), and have no name to leave behind: they go with the last
// process that maps them or holds their descriptor.
//
// A mapping reserves a large address range once and maps the file into its start as the file
// grows, so that what was handed out never moves (a batch slot's address is fixed for the
// loader's life).

#include <cstddef>
#include <string>

namespace gpufeed::python::workers {

/// A file descriptor, closed on destruction.
class file_descriptor {
 public:
  file_descriptor() = default;
  explicit file_descriptor(int fd) noexcept : fd_{fd} {}
  ~file_descriptor();
  file_descriptor(file_descriptor&& other) noexcept;
  file_descriptor& operator=(file_descriptor&& other) noexcept;
  file_descriptor(file_descriptor const&) = delete;
  file_descriptor& operator=(file_descriptor const&) = delete;

  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] explicit operator bool() const noexcept { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

/// Throws std::system_error naming `what` with errno's text.
[[noreturn]] void throw_errno(std::string const& what);

/// The system's page size (4 KiB on x86, 64 KiB on some ARM kernels): the unit of every mapping.
[[nodiscard]] std::size_t page_bytes() noexcept;
/// `bytes` rounded up to whole pages.
[[nodiscard]] std::size_t round_to_pages(std::size_t bytes) noexcept;

/// A shared, growable mapping of an anonymous file.
class shared_mapping {
 public:
  /// A new anonymous file named `name` (seen in /proc/<pid>/fd), empty, in a reserved range of
  /// `reserve` bytes. @throws std::system_error.
  static shared_mapping create(char const* name, std::size_t reserve);
  /// Maps an existing file (another process's, by its descriptor, which this takes over) in a
  /// reserved range of `reserve` bytes, as large as the file is now. @throws std::system_error.
  static shared_mapping open(int fd, std::size_t reserve);

  shared_mapping() = default;
  ~shared_mapping();
  shared_mapping(shared_mapping&& other) noexcept;
  shared_mapping& operator=(shared_mapping&& other) noexcept;
  shared_mapping(shared_mapping const&) = delete;
  shared_mapping& operator=(shared_mapping const&) = delete;

  [[nodiscard]] std::byte* base() const noexcept { return base_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t reserved() const noexcept { return reserved_; }
  [[nodiscard]] int fd() const noexcept { return file_.get(); }

  /// Grows the file to `bytes` (at least) and maps it. Pages are allocated when first written.
  /// @throws std::system_error (or when `bytes` exceeds the reserved range).
  void grow(std::size_t bytes);
  /// Maps whatever the file has grown to in another process. @throws std::system_error.
  void follow();
  /// Closes the file's descriptor; what is mapped stays (it cannot grow or follow any more).
  void close_file() noexcept { file_ = file_descriptor{}; }
  /// Whether [offset, offset + bytes) lies inside what is mapped.
  [[nodiscard]] bool holds(std::size_t offset, std::size_t bytes) const noexcept {
    return offset <= size_ && bytes <= size_ - offset;
  }

 private:
  void map_to(std::size_t bytes);

  file_descriptor file_;
  std::byte* base_ = nullptr;
  std::size_t reserved_ = 0;
  std::size_t size_ = 0;
};

}  // namespace gpufeed::python::workers
