#pragma once
/// @file
/// @brief `pinned_buffer` (page-locked host memory) and `device_buffer` (device memory):
/// owning, move-only, allocated once at construction.

#include <cstddef>

namespace gpufeed::cuda {

/// @brief Page-locked host memory from `cudaHostAlloc` (portable, so any device can copy from
/// it). Freeing waits for nothing: the owner must know that no copy still reads it.
class pinned_buffer {
 public:
  pinned_buffer() = default;
  /// @throws out_of_memory with the size when the driver refuses to pin that much.
  explicit pinned_buffer(std::size_t bytes);
  ~pinned_buffer();
  pinned_buffer(pinned_buffer&& other) noexcept;
  pinned_buffer& operator=(pinned_buffer&& other) noexcept;
  pinned_buffer(pinned_buffer const&) = delete;
  pinned_buffer& operator=(pinned_buffer const&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

/// @brief Host memory someone else owns, page-locked with `cudaHostRegister` for as long as this
/// lives (memory shared with other processes, which cudaHostAlloc cannot give). The owner
/// keeps the memory mapped until this is destroyed.
class registered_host_memory {
 public:
  registered_host_memory() = default;
  /// @throws out_of_memory with the size when the driver refuses to page-lock that much.
  registered_host_memory(std::byte* data, std::size_t bytes);
  ~registered_host_memory();
  registered_host_memory(registered_host_memory&& other) noexcept;
  registered_host_memory& operator=(registered_host_memory&& other) noexcept;
  registered_host_memory(registered_host_memory const&) = delete;
  registered_host_memory& operator=(registered_host_memory const&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return data_; }

 private:
  std::byte* data_ = nullptr;
};

/// @brief Device memory from `cudaMalloc` on the current device. Freeing waits for nothing:
/// the owner must know that no kernel or copy still uses it.
class device_buffer {
 public:
  device_buffer() = default;
  /// @throws out_of_memory with the size when the device has not that much free.
  explicit device_buffer(std::size_t bytes);
  ~device_buffer();
  device_buffer(device_buffer&& other) noexcept;
  device_buffer& operator=(device_buffer&& other) noexcept;
  device_buffer(device_buffer const&) = delete;
  device_buffer& operator=(device_buffer const&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

/// @brief How many pinned and device allocations gpufeed has made in this process: a test
/// checks that the steady state makes none.
[[nodiscard]] std::size_t allocation_count() noexcept;

}  // namespace gpufeed::cuda
