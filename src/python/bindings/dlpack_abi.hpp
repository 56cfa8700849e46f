#pragma once
// The DLPack C ABI (version 1.0), declared here rather than taken from a dlpack.h: Debian 12's
// libdlpack-dev is 0.6, which has neither the versioned managed tensor nor the bool type code,
// and the binding needs both. Layouts follow the DLPack specification
// (https://dmlc.github.io/dlpack/latest/c_api.html); the static_asserts pin them.

#include <cstddef>
#include <cstdint>

namespace gpufeed::python::dlpack {

/// DLDeviceType values used here.
enum device_type : std::int32_t {
  cpu = 1,        // kDLCPU: host memory, pinned included (the spec's advice for pinned memory)
  cuda = 2,       // kDLCUDA
  cuda_host = 3,  // kDLCUDAHost: accepted when reading a producer's tensor
};

/// DLDataTypeCode values used here.
enum type_code : std::uint8_t {
  signed_int = 0,  // kDLInt
  unsigned_int = 1,
  floating = 2,
  bfloat = 4,
  complex_number = 5,  // kDLComplex: not batched, named in the refusal
  boolean = 6,         // kDLBool (DLPack 0.8 and later)
};

struct device {
  std::int32_t type;
  std::int32_t id;
};

struct data_type {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};

struct tensor {
  void* data;
  device dev;
  std::int32_t ndim;
  data_type dtype;
  std::int64_t* shape;
  std::int64_t* strides;  // in elements
  std::uint64_t byte_offset;
};

/// DLManagedTensor: the legacy capsule's payload ("dltensor").
struct managed_tensor {
  tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(managed_tensor* self);
};

struct version {
  std::uint32_t major;
  std::uint32_t minor;
};

/// DLManagedTensorVersioned: the payload of a "dltensor_versioned" capsule (DLPack 1.0).
struct managed_tensor_versioned {
  version ver;
  void* manager_ctx;
  void (*deleter)(managed_tensor_versioned* self);
  std::uint64_t flags;
  tensor dl_tensor;
};

inline constexpr version current_version{1, 0};
inline constexpr char const* legacy_capsule = "dltensor";
inline constexpr char const* legacy_used = "used_dltensor";
inline constexpr char const* versioned_capsule = "dltensor_versioned";
inline constexpr char const* versioned_used = "used_dltensor_versioned";

static_assert(sizeof(device) == 8 && sizeof(data_type) == 4);
static_assert(offsetof(tensor, dev) == 8 && offsetof(tensor, ndim) == 16 &&
              offsetof(tensor, dtype) == 20 && offsetof(tensor, shape) == 24 &&
              offsetof(tensor, byte_offset) == 40 && sizeof(tensor) == 48);
static_assert(offsetof(managed_tensor, manager_ctx) == 48 && sizeof(managed_tensor) == 64);
static_assert(offsetof(managed_tensor_versioned, flags) == 24 &&
              offsetof(managed_tensor_versioned, dl_tensor) == 32);

}  // namespace gpufeed::python::dlpack
