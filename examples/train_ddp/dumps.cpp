#include "dumps.hpp"

#include <limits>
#include <stdexcept>

namespace train_ddp {
namespace {
void check(std::ofstream const& out, std::string const& path) {
  if (!out) throw std::runtime_error{"cannot write " + path};
}
}  // namespace

std::string rank_path(std::string const& prefix, int rank, std::string const& suffix) {
  return prefix + ".rank" + std::to_string(rank) + suffix;
}

index_log::index_log(std::string const& path) {
  if (path.empty()) return;
  out_.open(path);
  check(out_, path);
}

void index_log::add(std::vector<std::int64_t> const& indices) {
  if (out_.is_open()) epoch_.insert(epoch_.end(), indices.begin(), indices.end());
}

void index_log::end_epoch(std::uint64_t epoch) {
  if (!out_.is_open()) return;
  out_ << epoch;
  for (auto const i : epoch_) out_ << ' ' << i;
  out_ << '\n' << std::flush;
  epoch_.clear();
}

void write_weights(std::string const& path, torch::nn::Module const& model) {
  std::ofstream out{path};
  check(out, path);
  out.precision(std::numeric_limits<double>::max_digits10);
  for (auto const& item : model.named_parameters()) {
    auto const values = item.value().detach().to(torch::kCPU, torch::kDouble).contiguous();
    auto const* data = values.data_ptr<double>();
    out << item.key() << ' ' << values.numel();
    for (std::int64_t i = 0; i < values.numel(); ++i) out << ' ' << data[i];
    out << '\n';
  }
  out.flush();
  check(out, path);
}

}  // namespace train_ddp
