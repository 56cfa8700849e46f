#include "core/ring/slot.hpp"

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

namespace {
// The per-sample lists of a slot, sized once; a plain std::bad_alloc becomes an out_of_memory
// that names the option that sized them.
template <class T>
std::vector<T> sample_list(std::size_t batch_size, bool sized) {
  try {
    std::vector<T> list;
    if (sized) {
      list.resize(batch_size);
    } else {
      list.reserve(batch_size);
    }
    return list;
  } catch (std::bad_alloc const&) {
    throw out_of_memory{
        "gpufeed: could not allocate a ring slot's per-sample lists for "
        "loader_options::batch_size = " +
        std::to_string(batch_size) + " samples; lower batch_size, or free memory"};
  } catch (std::length_error const&) {
    throw out_of_memory{
        "gpufeed: a ring slot's per-sample lists cannot hold "
        "loader_options::batch_size = " +
        std::to_string(batch_size) + " samples; lower batch_size"};
  }
}
}  // namespace

slot::slot(std::size_t position, std::byte* external, std::size_t bytes, std::size_t alignment,
           std::size_t batch_size)
    : id{position},
      indices(sample_list<std::size_t>(batch_size, true)),
      failures(sample_list<read_failure>(batch_size, true)),
      skipped(sample_list<std::size_t>(batch_size, false)),
      memory{external} {
  if (memory == nullptr) {
    owned_memory = allocate_resident(bytes, alignment, "a ring slot");
    memory = owned_memory.get();
  }
}

}  // namespace gpufeed::detail
