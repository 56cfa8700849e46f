#pragma once
/// @file
/// @brief A dataset over arrays the caller already has in memory (one array per field).
///
/// @code
/// std::vector<float> x(n * 16);  std::vector<std::int64_t> y(n);
/// auto data = std::make_shared<gpufeed::in_memory>(n);
/// data->add<float>("x", {16}, x).add<std::int64_t>("y", {}, y);
/// @endcode

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gpufeed/dataset.hpp"

namespace gpufeed {

/// @brief Each sample is a row of each array: read() is one memcpy per field.
///
/// Does not copy or own the arrays (unless given an owner): they must outlive every loader that
/// reads this dataset. Add every field before the first loader is made.
class in_memory final : public dataset {
 public:
  explicit in_memory(std::size_t size) : size_{size} {}

  /// @brief Adds a field whose rows are `data` (size() x elements of `shape`, row-major).
  /// @param owner optional: kept alive as long as this dataset.
  /// @throws logic_error if `data` does not hold exactly size() rows of `shape`.
  in_memory& add_bytes(std::string name, dtype type, std::vector<std::int64_t> shape,
                       std::span<std::byte const> data, std::shared_ptr<void const> owner = {});

  /// @brief Typed form of `add_bytes`.
  template <class T>
  in_memory& add(std::string name, std::vector<std::int64_t> shape, std::span<T const> data,
                 std::shared_ptr<void const> owner = {}) {
    return add_bytes(std::move(name), dtype_for<T>(), std::move(shape), std::as_bytes(data),
                     std::move(owner));
  }
  template <class T>
  in_memory& add(std::string name, std::vector<std::int64_t> shape, std::vector<T> const& data) {
    return add<T>(std::move(name), std::move(shape), std::span<T const>{data});
  }

  [[nodiscard]] std::size_t size() const override { return size_; }
  [[nodiscard]] sample_spec spec() const override { return spec_; }
  void read(std::size_t index, sample_view out, read_context const& ctx) const override;

 private:
  template <class T>
  static constexpr dtype dtype_for() {
    if constexpr (std::is_same_v<T, std::uint8_t>)
      return dtype::u8;
    else if constexpr (std::is_same_v<T, bool>)
      return dtype::boolean;
    else if constexpr (std::is_same_v<T, std::int8_t>)
      return dtype::i8;
    else if constexpr (std::is_same_v<T, std::uint16_t>)
      return dtype::u16;
    else if constexpr (std::is_same_v<T, std::int16_t>)
      return dtype::i16;
    else if constexpr (std::is_same_v<T, std::int32_t>)
      return dtype::i32;
    else if constexpr (std::is_same_v<T, std::int64_t>)
      return dtype::i64;
    else if constexpr (std::is_same_v<T, float>)
      return dtype::f32;
    else if constexpr (std::is_same_v<T, double>)
      return dtype::f64;
    else
      static_assert(sizeof(T) == 0, "use add_bytes with an explicit dtype for this type");
  }
  std::size_t size_;
  sample_spec spec_;
  std::vector<std::span<std::byte const>> columns_;
  std::vector<std::shared_ptr<void const>> owners_;
};

}  // namespace gpufeed
