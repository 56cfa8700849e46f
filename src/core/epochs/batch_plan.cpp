#include "gpufeed/batch_plan.hpp"

#include <algorithm>
#include <string>

#include "core/checked_math.hpp"
#include "gpufeed/error.hpp"

namespace gpufeed {

namespace {
// Batches kept out of `raw` micro-batches: whole steps, plus the short last one when kept.
// A step's samples (accumulation_steps x batch_size at most) are counted in step_info and
// compared with that product: it must fit.
void expect_step_fits(std::size_t batch_size, std::size_t accumulation_steps) {
  (void)detail::checked_mul(accumulation_steps, batch_size,
                            "loader_options::accumulation_steps x batch_size (the samples of one "
                            "optimizer step)");
}

std::size_t kept_batches(std::size_t raw, std::size_t accumulation, tail_policy last_step) {
  auto const whole = raw - raw % accumulation;
  return last_step == tail_policy::keep ? raw : whole;
}
}  // namespace

batch_plan::batch_plan(std::size_t shard_size, std::size_t batch_size,
                       std::size_t accumulation_steps, tail_policy last_batch,
                       tail_policy last_step)
    : shard_size_{shard_size}, batch_size_{batch_size}, accumulation_{accumulation_steps} {
  GPUFEED_EXPECTS(batch_size >= 1, "batch_size must be at least 1");
  GPUFEED_EXPECTS(accumulation_steps >= 1, "accumulation_steps must be at least 1");
  expect_step_fits(batch_size, accumulation_steps);
  auto const partial = shard_size % batch_size != 0 && last_batch == tail_policy::keep;
  auto const raw = shard_size / batch_size + (partial ? 1 : 0);
  batches_ = kept_batches(raw, accumulation_, last_step);
  steps_ = (batches_ + accumulation_ - 1) / accumulation_;
}

batch_plan::batch_plan(std::span<std::size_t const> batch_sizes, std::size_t batch_size,
                       std::size_t accumulation_steps, tail_policy last_step)
    : shard_size_{0}, batch_size_{batch_size}, accumulation_{accumulation_steps} {
  GPUFEED_EXPECTS(batch_size >= 1, "batch_size must be at least 1");
  GPUFEED_EXPECTS(accumulation_steps >= 1, "accumulation_steps must be at least 1");
  expect_step_fits(batch_size, accumulation_steps);
  batches_ = kept_batches(batch_sizes.size(), accumulation_, last_step);
  steps_ = (batches_ + accumulation_ - 1) / accumulation_;
  offsets_.reserve(batches_ + 1);
  offsets_.push_back(0);
  for (std::size_t b = 0; b < batches_; ++b) {
    GPUFEED_EXPECTS(batch_sizes[b] >= 1 && batch_sizes[b] <= batch_size,
                    "batch " + std::to_string(b) + " has " + std::to_string(batch_sizes[b]) +
                        " samples; each batch must have 1 to batch_size = " +
                        std::to_string(batch_size) + " samples");
    offsets_.push_back(offsets_.back() + batch_sizes[b]);
  }
  shard_size_ = offsets_.back();
}

std::size_t batch_plan::offset(std::size_t sequence) const noexcept {
  return offsets_.empty() ? sequence * batch_size_ : offsets_[sequence];
}

std::size_t batch_plan::samples() const noexcept {
  return batches_ == 0 ? 0 : std::min(shard_size_, offset(batches_));
}

batch_span batch_plan::span(std::size_t sequence) const noexcept {
  auto const first = offset(sequence);
  if (!offsets_.empty()) {
    return {first, offsets_[sequence + 1] - first};
  }
  return {first, std::min(batch_size_, shard_size_ - first)};
}

step_info batch_plan::step(std::size_t sequence) const noexcept {
  step_info info;
  info.step = sequence / accumulation_;
  info.micro = sequence % accumulation_;
  auto const first_batch = info.step * accumulation_;
  info.micros_in_step = std::min(accumulation_, batches_ - first_batch);
  auto const first_sample = offset(first_batch);
  auto const end_sample = std::min(shard_size_, offset(first_batch + info.micros_in_step));
  info.samples_in_step = end_sample - first_sample;
  info.last_micro = info.micro + 1 == info.micros_in_step;
  info.short_step = info.samples_in_step < accumulation_ * batch_size_;
  return info;
}

}  // namespace gpufeed
