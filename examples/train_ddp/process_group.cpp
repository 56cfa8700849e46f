#include "process_group.hpp"

#include <torch/version.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if TRAIN_DDP_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <charconv>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "gpufeed/options.hpp"

namespace train_ddp {
namespace {

std::string environment(char const* name, std::string fallback) {
  char const* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::string{value} : std::move(fallback);
}

// The variable `name` as an integer in [low, high], or `fallback` when it is unset.
long long integer_from(char const* name, long long fallback, long long low, long long high) {
  auto const text = environment(name, "");
  if (text.empty()) return fallback;
  long long value = 0;
  auto const [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size() || value < low || value > high) {
    throw std::runtime_error{std::string{name} + "='" + text + "' is not an integer in [" +
                             std::to_string(low) + ", " + std::to_string(high) + "]"};
  }
  return value;
}

}  // namespace

launch_env read_launch_env() {
  launch_env env;
  // RANK, WORLD_SIZE and LOCAL_RANK as gpufeed's loader reads them, so the two always agree.
  gpufeed::loader_options placed;
  placed.target = gpufeed::placement::cuda;  // only to have LOCAL_RANK read into `device`
  placed = gpufeed::resolve_distributed(placed);
  gpufeed::loader_options ranks;
  ranks.rank = placed.rank;
  ranks.world_size = placed.world_size;
  gpufeed::validate(ranks);  // rank < world_size, world_size >= 1, with gpufeed's messages
  env.world_size = static_cast<int>(*placed.world_size);
  env.rank = static_cast<int>(*placed.rank);
  env.local_rank = placed.device.value_or(0);
  env.master_addr = environment("MASTER_ADDR", env.master_addr);
  env.master_port = static_cast<std::uint16_t>(
      integer_from("MASTER_PORT", env.master_port, 1, std::numeric_limits<std::uint16_t>::max()));
  env.agent_store = environment("TORCHELASTIC_USE_AGENT_STORE", "") == "True";
  env.restart_count = environment("TORCHELASTIC_RESTART_COUNT", "0");
  return env;
}

bool nccl_available() {
  return TRAIN_DDP_WITH_NCCL != 0;
}

// libtorch 2.x split ProcessGroup into a dispatching ProcessGroup and per-backend c10d::Backend
// objects: ProcessGroupGloo and ProcessGroupNCCL derive from Backend there, from ProcessGroup in
// 1.13. Both bases declare the same broadcast/allreduce, so only the pointer's type changes.
#if TORCH_VERSION_MAJOR >= 2
using collectives = c10d::Backend;
#else
using collectives = c10d::ProcessGroup;
#endif

struct process_group::state {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<collectives> group;
};

namespace {

// The store at MASTER_ADDR:MASTER_PORT, as torch.distributed's env:// rendezvous opens it.
c10::intrusive_ptr<c10d::Store> open_store(launch_env const& env,
                                           std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = env.master_port;
  options.numWorkers = static_cast<std::size_t>(env.world_size);
  options.waitWorkers = true;
  options.timeout = timeout;
  if (env.agent_store) {
    // torchrun's launcher already serves this port: every rank connects, under the prefix that
    // keeps this attempt's keys apart from the launcher's and from a restarted attempt's.
    options.isServer = false;
    auto store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
    return c10::make_intrusive<c10d::PrefixStore>("/worker/attempt_" + env.restart_count,
                                                  std::move(store));
  }
  options.isServer = env.rank == 0;
  options.multiTenant = true;
  return c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
}

c10::intrusive_ptr<collectives> make_gloo(c10::intrusive_ptr<c10d::Store> const& store,
                                          launch_env const& env,
                                          std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  // As torch.distributed does: the interface named by GLOO_SOCKET_IFNAME, else the address this
  // host's name resolves to (loopback when it resolves to none).
  auto const interface = environment("GLOO_SOCKET_IFNAME", "");
  options->devices.push_back(interface.empty()
                                 ? c10d::ProcessGroupGloo::createDefaultDevice()
                                 : c10d::ProcessGroupGloo::createDeviceForInterface(interface));
  options->threads = 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, options);
}

c10::intrusive_ptr<collectives> make_nccl(c10::intrusive_ptr<c10d::Store> const& store,
                                          launch_env const& env,
                                          std::chrono::milliseconds timeout) {
#if TRAIN_DDP_WITH_NCCL
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world_size, options);
#else
  (void)store;
  (void)env;
  (void)timeout;
  throw std::runtime_error{
      "this train_ddp was built without NCCL (a libtorch with CUDA and NCCL); use --backend gloo"};
#endif
}

void run(collectives& group, torch::Tensor& tensor, c10d::ReduceOp::RedOpType op) {
  std::vector<torch::Tensor> tensors{tensor};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp{op};
  group.allreduce(tensors, options)->wait();
}

}  // namespace

process_group::process_group(launch_env const& env, backend kind, std::chrono::milliseconds timeout)
    : rank_{env.rank}, world_size_{env.world_size}, state_{std::make_unique<state>()} {
  if (world_size_ == 1) return;  // nothing to talk to: every collective is the identity
  state_->store = open_store(env, timeout);
  state_->group = kind == backend::nccl ? make_nccl(state_->store, env, timeout)
                                        : make_gloo(state_->store, env, timeout);
}

process_group::~process_group() = default;

void process_group::broadcast(torch::Tensor& tensor) {
  if (!state_->group) return;
  std::vector<torch::Tensor> tensors{tensor};
  c10d::BroadcastOptions options;
  options.rootRank = 0;
  state_->group->broadcast(tensors, options)->wait();
}

void process_group::sum(torch::Tensor& tensor) {
  if (state_->group) run(*state_->group, tensor, c10d::ReduceOp::SUM);
}

void process_group::max(torch::Tensor& tensor) {
  if (state_->group) run(*state_->group, tensor, c10d::ReduceOp::MAX);
}

}  // namespace train_ddp
