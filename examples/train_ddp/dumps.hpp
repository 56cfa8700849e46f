#pragma once
// What the ranks write for audits (and for tests/torch/ddp_check.py): the dataset indices each
// rank trained on, and its model's weights. Each rank writes its own files, named
// <prefix>.rank<R>.txt (and <prefix>.rank<R>.step1.txt for the weights after the first step).
#include <torch/torch.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace train_ddp {

/// `<prefix>.rank<rank><suffix>`.
[[nodiscard]] std::string rank_path(std::string const& prefix, int rank,
                                    std::string const& suffix = ".txt");

/// One line per epoch: the epoch, then the indices this rank trained on, in order.
class index_log {
 public:
  /// Opens nothing when `path` is empty. @throws std::runtime_error if the file cannot be opened.
  explicit index_log(std::string const& path);
  void add(std::vector<std::int64_t> const& indices);
  /// Writes the epoch's line and starts the next epoch's.
  void end_epoch(std::uint64_t epoch);

 private:
  std::ofstream out_;
  std::vector<std::int64_t> epoch_;
};

/// Writes `model`'s parameters, one line each: name, element count, then every value with enough
/// digits to read back the same bits. @throws std::runtime_error if the file cannot be written.
void write_weights(std::string const& path, torch::nn::Module const& model);

}  // namespace train_ddp
