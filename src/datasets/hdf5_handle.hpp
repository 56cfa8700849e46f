#pragma once
// HDF5's C API made safe to use from the HDF5 dataset: identifiers that close themselves, the
// thread's error stack as text, and the file's types as gpufeed's. Internal to src/datasets.

#include <hdf5.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpufeed/dtype.hpp"

namespace gpufeed::detail::h5 {

// The thread-safe build keeps one error stack per thread: silence it on every thread that calls
// HDF5, so failures become exceptions and nothing is printed to stderr.
void silence() noexcept;

// `what`, followed by the outermost and the innermost message of this thread's HDF5 error stack
// (which is cleared).
std::string with_error(std::string what);

// An HDF5 identifier closed by its own close function.
class h5_id {
 public:
  h5_id() = default;
  h5_id(hid_t id, herr_t (*close)(hid_t)) noexcept : id_{id}, close_{close} {}
  h5_id(h5_id&& other) noexcept
      : id_{std::exchange(other.id_, H5I_INVALID_HID)}, close_{other.close_} {}
  h5_id& operator=(h5_id&& other) noexcept {
    if (this != &other) {
      reset();
      id_ = std::exchange(other.id_, H5I_INVALID_HID);
      close_ = other.close_;
    }
    return *this;
  }
  h5_id(h5_id const&) = delete;
  h5_id& operator=(h5_id const&) = delete;
  ~h5_id() { reset(); }
  [[nodiscard]] hid_t get() const noexcept { return id_; }
  [[nodiscard]] bool valid() const noexcept { return id_ >= 0; }
  void reset() noexcept {
    if (id_ >= 0 && close_ != nullptr) close_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
};

// "32-bit float", "string", ...: a stored type in the words of an error message.
std::string describe_type(hid_t type);

// The gpufeed dtype a stored type reads as without conversion (byte order aside), if any.
std::optional<dtype> map_type(hid_t type);

// "[4,3,2]"
std::string dims_string(std::vector<hsize_t> const& dims);

}  // namespace gpufeed::detail::h5
