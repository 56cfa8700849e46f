// Built when gpufeed is compiled without CUDA: placement::cuda is refused with the reason.

#include "core/device/device_stage.hpp"
#include "gpufeed/error.hpp"

namespace gpufeed::detail {

std::unique_ptr<device_stage> make_cuda_stage(slot_layout const&, std::size_t, std::size_t,
                                              loader_options const&,
                                              std::shared_ptr<host_memory_source>) {
  throw logic_error{
      "loader_options::target = placement::cuda, but this gpufeed was built without CUDA "
      "(GPUFEED_WITH_CUDA=OFF: no nvcc was found at configure time); rebuild with CUDA, or use "
      "placement::host"};
}

}  // namespace gpufeed::detail
