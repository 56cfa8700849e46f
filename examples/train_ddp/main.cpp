// Data-parallel training with gpufeed under torchrun: each rank reads a disjoint shard of every
// epoch through gpufeed (sharded from RANK / WORLD_SIZE), and the ranks average their gradients
// with c10d (Gloo on the CPU, NCCL on GPUs) before every optimizer step. See docs/torch.md,
// "Multi-process training (torchrun)".
//
//   torchrun --no_python --nproc_per_node 2 build/bin/train_ddp --epochs 3
#include <cstdlib>
#include <exception>
#include <iostream>

#include "cli.hpp"
#include "trainer.hpp"

int main(int argc, char** argv) {
  train_ddp::run_options options;
  if (auto const code = train_ddp::parse(argc, argv, options)) return *code;
  try {
    return train_ddp::train(options);
  } catch (std::exception const& e) {
    char const* rank = std::getenv("RANK");
    std::cerr << "train_ddp (rank " << (rank != nullptr ? rank : "0") << "): " << e.what() << "\n";
    return 1;
  }
}
