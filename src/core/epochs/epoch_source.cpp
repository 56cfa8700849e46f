#include "core/epochs/epoch_source.hpp"

#include <limits>
#include <string>
#include <utility>

#include "gpufeed/error.hpp"

namespace gpufeed::detail {

namespace {
// An open-ended epoch's places: whole steps of whole batches, far more than any epoch takes, and
// few enough that no offset of the plan's arithmetic can overflow.
std::size_t open_ended_places(loader_options const& options) {
  auto const step = options.batch_size * options.accumulation_steps;  // checked by batch_plan
  auto const limit = std::numeric_limits<std::size_t>::max() / 4;
  return step == 0 || step > limit ? 0 : limit / step * step;
}

loader_options const& checked_open_ended(loader_options const& options, bool open_ended) {
  if (open_ended) {
    GPUFEED_EXPECTS(options.order == sample_order::builtin,
                    "loader_options::order = sample_order::given: this dataset's epochs are "
                    "open-ended (an iterable dataset: its length is known only when it ends), "
                    "so no order of indices can be given; use sample_order::builtin");
    GPUFEED_EXPECTS(!options.shuffle,
                    "loader_options::shuffle = true: this dataset's epochs are open-ended (an "
                    "iterable dataset, which makes its own order); set shuffle = false");
  }
  return options;
}
}  // namespace

epoch_source::epoch_source(std::size_t dataset_size, std::size_t storage_chunk,
                           loader_options const& options, bool open_ended)
    : options_{checked_open_ended(options, open_ended)},
      open_ended_{open_ended},
      sampler_{open_ended ? 0 : dataset_size,
               options.shuffle,
               options.seed,
               *options.rank,
               *options.world_size,
               {options.chunk_window > 0 ? storage_chunk : 0, options.chunk_window},
               // Every rank gets the same batches: a short tail is evened out the way the
               // tail policy treats a short batch (kept: padded; dropped: trimmed).
               options.last_batch == tail_policy::keep ? even_shards::pad : even_shards::trim},
      plan_{open_ended ? open_ended_places(options) : sampler_.shard_size(), options.batch_size,
            options.accumulation_steps, options.last_batch, options.last_step} {}

batch_plan const* epoch_source::plan(std::uint64_t epoch) const noexcept {
  if (!given()) {
    return &plan_;
  }
  return given_ && given_->epoch == epoch ? &given_->plan : nullptr;
}

cursor epoch_source::normalized(cursor c) const noexcept {
  auto const* p = plan(c.epoch);
  return p != nullptr && c.sequence >= p->batches() ? cursor{c.epoch + 1, 0} : c;
}

std::shared_ptr<given_order const> epoch_source::order_of(std::uint64_t epoch) const noexcept {
  return given() && given_ && given_->epoch == epoch ? given_ : nullptr;
}

std::size_t epoch_source::index(given_order const* order, std::uint64_t epoch,
                                std::size_t position) const noexcept {
  if (open_ended_) {
    return position;  // a place, not an index: the sources choose the samples
  }
  return order != nullptr ? order->indices[position] : sampler_.index(epoch, position);
}

std::size_t epoch_source::index(std::uint64_t epoch, std::size_t position) const {
  if (open_ended_) {
    return position;
  }
  if (!given()) {
    return sampler_.index(epoch, position);
  }
  GPUFEED_EXPECTS(given_ && given_->epoch == epoch,
                  "no order given for epoch " + std::to_string(epoch));
  return given_->indices[position];
}

epoch_order epoch_source::builtin_order(std::uint64_t epoch) const {
  GPUFEED_EXPECTS(!given(),
                  "builtin_order: this loader's order is given by the caller "
                  "(loader_options::order = sample_order::given), who knows it already");
  GPUFEED_EXPECTS(!open_ended_,
                  "builtin_order: this dataset's epochs are open-ended (an iterable dataset): "
                  "its sources choose the samples, and the epoch's length is known only when it "
                  "ends");
  epoch_order out;
  out.indices.reserve(plan_.samples());
  out.batch_sizes.reserve(plan_.batches());
  for (std::size_t b = 0; b < plan_.batches(); ++b) {
    auto const span = plan_.span(b);
    for (std::size_t p = span.first; p < span.first + span.count; ++p) {
      out.indices.push_back(sampler_.index(epoch, p));
    }
    out.batch_sizes.push_back(span.count);
  }
  return out;
}

std::shared_ptr<given_order const> epoch_source::make_order(std::uint64_t epoch,
                                                            epoch_order order) const {
  GPUFEED_EXPECTS(given(),
                  "set_epoch(epoch, order): this loader makes its own order "
                  "(loader_options::order = sample_order::builtin); construct it with "
                  "order = sample_order::given to give each epoch's indices");
  return make_given_order(epoch, std::move(order), sampler_.dataset_size(), options_);
}

bool epoch_source::give(std::shared_ptr<given_order const> order) noexcept {
  bool const first = !(given_ && given_->epoch == order->epoch);
  given_ = std::move(order);
  return first;
}

loader_state epoch_source::state_at(cursor at) const noexcept {
  loader_state out;
  out.seed = options_.seed;
  out.epoch = at.epoch;
  out.next_sequence = at.sequence;
  out.dataset_size = sampler_.dataset_size();  // dataset::size() is read once, at construction
  out.batch_size = options_.batch_size;
  out.rank = *options_.rank;
  out.world_size = *options_.world_size;
  out.shuffle = options_.shuffle;
  out.chunk_window = options_.chunk_window;
  return out;
}

void epoch_source::expect_resumable(char const* call) const {
  GPUFEED_EXPECTS(!open_ended_,
                  std::string{call} +
                      ": this dataset's epochs are open-ended (an iterable dataset): no state "
                      "can say where its sources stand; resume by epoch (set_epoch) instead");
}

cursor epoch_source::restore_point(loader_state const& saved) const {
  auto const* wanted = plan(saved.epoch);
  GPUFEED_EXPECTS(wanted != nullptr, "cannot restore to epoch " + std::to_string(saved.epoch) +
                                         ": its order is not given yet; call set_epoch(" +
                                         std::to_string(saved.epoch) + ", order) first");
  GPUFEED_EXPECTS(saved.next_sequence <= wanted->batches(),
                  "cannot restore: next_sequence " + std::to_string(saved.next_sequence) +
                      " is past the epoch's " + std::to_string(wanted->batches()) + " batches");
  return {saved.epoch, static_cast<std::size_t>(saved.next_sequence)};
}

void epoch_source::expect_same_fingerprint(loader_state const& saved) const {
  auto const here = state_at({});
  auto const mismatch = [&](char const* what, auto saved_value, auto current) {
    GPUFEED_EXPECTS(saved_value == current,
                    std::string{"cannot restore: the state was saved with "} + what + " = " +
                        std::to_string(saved_value) + " but this loader has " +
                        std::to_string(current) + "; construct the loader with the same settings");
  };
  mismatch("dataset size", saved.dataset_size, here.dataset_size);
  mismatch("batch_size", saved.batch_size, here.batch_size);
  mismatch("rank", saved.rank, here.rank);
  mismatch("world_size", saved.world_size, here.world_size);
  mismatch("shuffle", saved.shuffle, here.shuffle);
  mismatch("seed", saved.seed, here.seed);
  mismatch("chunk_window", saved.chunk_window, here.chunk_window);
}

}  // namespace gpufeed::detail
