#include "gpufeed/detail/slot.hpp"

#include <cstring>
#include <new>
#include <string>

#include "gpufeed/error.hpp"

namespace gpufeed::detail {

void aligned_delete::operator()(std::byte* p) const noexcept {
  ::operator delete (p, std::align_val_t{alignment});
}

aligned_bytes allocate_resident(std::size_t bytes, std::size_t alignment, char const* what) {
  void* raw = nullptr;
  try {
    raw = ::operator new (bytes == 0 ? 1 : bytes, std::align_val_t{alignment});
  } catch (std::bad_alloc const&) {
    throw out_of_memory{std::string{"gpufeed: could not allocate "} + std::to_string(bytes) +
                        " bytes for " + what +
                        "; lower batch_size or prefetch_depth, or free memory"};
  }
  std::memset(raw, 0, bytes);
  return aligned_bytes{static_cast<std::byte*>(raw), aligned_delete{alignment}};
}

slot::slot(std::size_t position, std::byte* external, std::size_t bytes, std::size_t alignment,
           std::size_t batch_size)
    : id{position}, indices(batch_size), errors(batch_size), memory{external} {
  if (memory == nullptr) {
    owned_memory = allocate_resident(bytes, alignment, "a ring slot");
    memory = owned_memory.get();
  }
  skipped.reserve(batch_size);
}

}  // namespace gpufeed::detail
