#pragma once
/// @file
/// @brief A non-owning view of one field of a batch: pointer, dtype, shape with the batch dim.

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "gpufeed/dtype.hpp"
#include "gpufeed/error.hpp"
#include "gpufeed/sample_spec.hpp"

namespace gpufeed {

/// @brief One field of a batch as a dense, row-major tensor of shape [batch, field dims...].
///
/// Valid while the `batch` it came from is alive. `device < 0` means host memory.
class tensor_view {
 public:
  tensor_view() = default;
  /// @brief Used by `batch`.
  tensor_view(std::string_view name, dtype type, void* data, std::size_t batch,
              std::span<std::int64_t const> field_shape, int device) noexcept;

  [[nodiscard]] std::string_view name() const noexcept { return name_; }
  [[nodiscard]] dtype type() const noexcept { return type_; }
  [[nodiscard]] void* data() const noexcept { return data_; }
  /// @brief CUDA device ordinal, or -1 for host memory.
  [[nodiscard]] int device() const noexcept { return device_; }
  /// @brief Dimensions, the batch dimension first.
  [[nodiscard]] std::span<std::int64_t const> shape() const noexcept {
    return {shape_.data(), rank_};
  }
  [[nodiscard]] std::size_t rank() const noexcept { return rank_; }
  /// @brief Elements in the whole tensor.
  [[nodiscard]] std::size_t elements() const noexcept;
  [[nodiscard]] std::size_t bytes() const noexcept { return elements() * size_of(type_); }

  /// @brief The elements, for host tensors.
  /// @throws logic_error if the data is on a device or `T` does not match the dtype.
  template <class T>
  [[nodiscard]] std::span<T const> as() const {
    GPUFEED_EXPECTS(device_ < 0, "tensor '" + std::string{name_} + "' is on a CUDA device");
    GPUFEED_EXPECTS(dtype_matches<T>(type_),
                    "tensor '" + std::string{name_} + "' is " + std::string{to_string(type_)});
    return {static_cast<T const*>(data_), bytes() / sizeof(T)};
  }

 private:
  std::string_view name_;
  dtype type_ = dtype::u8;
  void* data_ = nullptr;
  std::array<std::int64_t, max_field_dims + 1> shape_{};
  std::size_t rank_ = 0;
  int device_ = -1;
};

}  // namespace gpufeed
