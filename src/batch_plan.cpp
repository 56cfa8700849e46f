#include "gpufeed/batch_plan.hpp"

#include <algorithm>

#include "gpufeed/error.hpp"

namespace gpufeed {

batch_plan::batch_plan(std::size_t shard_size, std::size_t batch_size,
                       std::size_t accumulation_steps, tail_policy last_batch,
                       tail_policy last_step)
    : shard_size_{shard_size}, batch_size_{batch_size}, accumulation_{accumulation_steps} {
  GPUFEED_EXPECTS(batch_size >= 1, "batch_size must be at least 1");
  GPUFEED_EXPECTS(accumulation_steps >= 1, "accumulation_steps must be at least 1");
  auto const partial = shard_size % batch_size != 0 && last_batch == tail_policy::keep;
  auto const raw = shard_size / batch_size + (partial ? 1 : 0);
  auto const extra_micros = raw % accumulation_;
  steps_ = raw / accumulation_;
  if (extra_micros != 0 && last_step == tail_policy::keep) {
    ++steps_;
    batches_ = raw;
  } else {
    batches_ = steps_ * accumulation_;
  }
}

std::size_t batch_plan::samples() const noexcept {
  return batches_ == 0 ? 0 : std::min(shard_size_, batches_ * batch_size_);
}

batch_span batch_plan::span(std::size_t sequence) const noexcept {
  auto const first = sequence * batch_size_;
  return {first, std::min(batch_size_, shard_size_ - first)};
}

step_info batch_plan::step(std::size_t sequence) const noexcept {
  step_info info;
  info.step = sequence / accumulation_;
  info.micro = sequence % accumulation_;
  auto const first_batch = info.step * accumulation_;
  info.micros_in_step = std::min(accumulation_, batches_ - first_batch);
  auto const first_sample = first_batch * batch_size_;
  auto const end_sample = std::min(shard_size_, (first_batch + info.micros_in_step) * batch_size_);
  info.samples_in_step = end_sample - first_sample;
  info.last_micro = info.micro + 1 == info.micros_in_step;
  info.short_step = info.samples_in_step < accumulation_ * batch_size_;
  return info;
}

}  // namespace gpufeed
