#pragma once
// How gpufeed's dtypes are named on the Python side: DLPack type codes, buffer-protocol format
// characters (numpy's), and the names numpy and torch share ("uint8", "float32", ...).

#include <cstddef>
#include <optional>
#include <string_view>

#include "gpufeed/dtype.hpp"
#include "python/bindings/dlpack_abi.hpp"

namespace gpufeed::python {

/// The DLPack type of `type` (one lane).
[[nodiscard]] dlpack::data_type to_dlpack(dtype type) noexcept;

/// The dtype of a DLPack type, or nullopt when gpufeed has none (complex, vectors of lanes).
[[nodiscard]] std::optional<dtype> from_dlpack(dlpack::data_type type) noexcept;

/// The dtype of a buffer-protocol format ("B", "<f4", "=q", "?", ...) of `itemsize` bytes, or
/// nullopt for formats gpufeed cannot batch (structures, complex, objects, big-endian data).
[[nodiscard]] std::optional<dtype> from_buffer_format(std::string_view format,
                                                      std::size_t itemsize) noexcept;

/// The dtype called `name` ("uint8", "float32", "bool", ...: gpufeed::to_string's names), or
/// nullopt.
[[nodiscard]] std::optional<dtype> dtype_named(std::string_view name) noexcept;

}  // namespace gpufeed::python
