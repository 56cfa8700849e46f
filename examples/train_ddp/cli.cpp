#include "cli.hpp"

#include <CLI/CLI.hpp>

namespace train_ddp {

std::optional<int> parse(int argc, char** argv, run_options& options) {
  CLI::App app{
      "Data-parallel training with gpufeed and c10d. Run it under torchrun, e.g.\n"
      "  torchrun --no_python --nproc_per_node 2 train_ddp --epochs 3\n"
      "Each rank reads its own shard of every epoch (from RANK / WORLD_SIZE) and the ranks "
      "average their gradients every step."};
  app.add_option("--epochs", options.epochs, "Epochs")->capture_default_str();
  app.add_option("--batch-size", options.batch_size, "Samples per batch, per rank")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--steps", options.steps, "Most optimizer steps per epoch (0: the whole epoch)")
      ->capture_default_str();
  app.add_option("--samples", options.samples, "Samples in the dataset")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--features", options.features, "Features per sample")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--chunk", options.chunk,
                 "Storage chunk the dataset reports: >1 turns on the chunk-aware shuffle "
                 "(contiguous shards)")
      ->capture_default_str();
  app.add_option("--chunk-window", options.chunk_window, "Chunks drawn from together")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", options.seed, "Seed of the data, the target, the weights, the shuffle")
      ->capture_default_str();
  app.add_option("--lr", options.lr, "SGD learning rate")->capture_default_str();
  app.add_option("--workers", options.workers, "gpufeed worker threads per rank")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--backend", options.backend, "Collectives: auto, gloo or nccl")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "gloo", "nccl"}));
  app.add_option("--timeout", options.timeout_s, "Rendezvous and collective timeout (s)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--dump-indices", options.dump_indices,
                 "Write each rank's dataset indices per epoch to PREFIX.rank<R>.txt");
  app.add_option("--dump-weights", options.dump_weights,
                 "Write each rank's weights after step 1 and at the end to "
                 "PREFIX.rank<R>.step1.txt and PREFIX.rank<R>.txt");
  try {
    app.parse(argc, argv);
  } catch (CLI::ParseError const& e) {
    return app.exit(e);
  }
  return std::nullopt;
}

}  // namespace train_ddp
