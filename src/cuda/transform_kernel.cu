// One thread per output element, grid-stride; writes (2 or 4 bytes per element) are coalesced
// in every layout. Meant to be bound by device-memory bandwidth, but not measured yet: no
// benchmark runs transforms (the 64-bit index arithmetic per element is the first suspect).

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/transform_kernel.hpp"
#include "gpufeed/cuda/error.hpp"

namespace gpufeed::detail {

namespace {

template <class T>
__device__ T convert(float v);
template <>
__device__ float convert<float>(float v) {
  return v;
}
template <>
__device__ __half convert<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __nv_bfloat16 convert<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

template <class T, layout_change Change>
__global__ void transform_kernel(std::uint8_t const* __restrict__ in, T* __restrict__ out,
                                 unsigned long long total, unsigned long long channels,
                                 unsigned long long pixels, bool channels_last, float scale,
                                 float const* __restrict__ mean,
                                 float const* __restrict__ inv_std) {
  auto const stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (auto o = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; o < total;
       o += stride) {
    unsigned long long source = o;
    unsigned long long c = 0;
    if constexpr (Change == layout_change::hwc_to_chw) {
      // o = (n*C + c)*P + p  reads  (n*P + p)*C + c
      auto const p = o % pixels;
      auto const nc = o / pixels;
      c = nc % channels;
      auto const n = nc / channels;
      source = (n * pixels + p) * channels + c;
    } else if constexpr (Change == layout_change::chw_to_hwc) {
      // o = (n*P + p)*C + c  reads  (n*C + c)*P + p
      c = o % channels;
      auto const np = o / channels;
      auto const p = np % pixels;
      auto const n = np / pixels;
      source = (n * channels + c) * pixels + p;
    } else {
      c = channels_last ? o % channels : (o / pixels) % channels;
    }
    out[o] = convert<T>((static_cast<float>(in[source]) * scale - mean[c]) * inv_std[c]);
  }
}

template <class T>
void launch(transform_args const& a, cudaStream_t stream) {
  auto const total = static_cast<unsigned long long>(a.samples) * a.channels * a.pixels;
  if (total == 0) {
    return;
  }
  constexpr unsigned threads = 256;
  auto const wanted = (total + threads - 1) / threads;
  auto const blocks = static_cast<unsigned>(wanted < a.max_blocks ? wanted : a.max_blocks);
  auto* out = static_cast<T*>(a.out);
  switch (a.change) {
    case layout_change::hwc_to_chw:
      transform_kernel<T, layout_change::hwc_to_chw><<<blocks, threads, 0, stream>>>(
          a.in, out, total, a.channels, a.pixels, a.channels_last, a.scale, a.mean, a.inv_std);
      break;
    case layout_change::chw_to_hwc:
      transform_kernel<T, layout_change::chw_to_hwc><<<blocks, threads, 0, stream>>>(
          a.in, out, total, a.channels, a.pixels, a.channels_last, a.scale, a.mean, a.inv_std);
      break;
    case layout_change::none:
      transform_kernel<T, layout_change::none><<<blocks, threads, 0, stream>>>(
          a.in, out, total, a.channels, a.pixels, a.channels_last, a.scale, a.mean, a.inv_std);
      break;
  }
  GPUFEED_CUDA_TRY(cudaGetLastError());
}

}  // namespace

void transform_async(transform_args const& args, cudaStream_t stream) {
  switch (args.out_type) {
    case dtype::f16:
      launch<__half>(args, stream);
      break;
    case dtype::bf16:
      launch<__nv_bfloat16>(args, stream);
      break;
    default:
      launch<float>(args, stream);
      break;
  }
}

}  // namespace gpufeed::detail
