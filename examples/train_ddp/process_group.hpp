#pragma once
// Who this process is in a torchrun job, and the c10d process group its collectives go through.
//
// torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT for every worker. The
// process group rendezvouses through a c10d::TCPStore at MASTER_ADDR:MASTER_PORT, as Python's
// init_process_group("env://") does: with torchrun's default static rendezvous the launcher
// itself serves that store (TORCHELASTIC_USE_AGENT_STORE=True) and every rank is a client; with
// --rdzv-backend=c10d / --standalone, rank 0 serves it. Gloo carries the collectives on the CPU;
// NCCL on the GPU, where this program was built against a libtorch with NCCL.
#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace train_ddp {

/// The launcher's environment. Without torchrun (no WORLD_SIZE): a single process, rank 0 of 1.
struct launch_env {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 29500;
  bool agent_store = false;         ///< TORCHELASTIC_USE_AGENT_STORE: the launcher serves the store
  std::string restart_count = "0";  ///< TORCHELASTIC_RESTART_COUNT, part of the store's prefix
};

/// Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT and torchelastic's store variables.
/// @throws std::runtime_error naming the variable when one is not a number or out of range.
[[nodiscard]] launch_env read_launch_env();

enum class backend { gloo, nccl };

/// Whether this build has the NCCL backend (a libtorch with CUDA and NCCL).
[[nodiscard]] bool nccl_available();

/// A c10d process group over every rank of the job; with one rank, collectives do nothing.
/// Collectives are blocking: each returns once the result is in the tensor, and every rank must
/// make the same calls in the same order.
class process_group {
 public:
  /// Rendezvouses with the other ranks (blocks until they are all there, or `timeout`).
  /// @throws std::runtime_error for NCCL in a build without it; c10::Error from c10d.
  process_group(launch_env const& env, backend kind, std::chrono::milliseconds timeout);
  ~process_group();
  process_group(process_group const&) = delete;
  process_group& operator=(process_group const&) = delete;

  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int world_size() const noexcept { return world_size_; }

  /// Replaces `tensor` on every rank by rank 0's.
  void broadcast(torch::Tensor& tensor);
  /// Replaces `tensor` on every rank by the element-wise sum over the ranks.
  void sum(torch::Tensor& tensor);
  /// Replaces `tensor` on every rank by the element-wise maximum over the ranks.
  void max(torch::Tensor& tensor);

 private:
  struct state;  // the c10d objects, whose types differ between libtorch 1.13 and 2.x
  int rank_;
  int world_size_;
  std::unique_ptr<state> state_;
};

}  // namespace train_ddp
