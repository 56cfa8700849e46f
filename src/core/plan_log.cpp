#include "core/plan_log.hpp"

#include <spdlog/spdlog.h>

#include <string>
#include <string_view>

#include "core/checked_math.hpp"
#include "core/units.hpp"
#include "gpufeed/detail/adapted_dataset.hpp"
#include "gpufeed/log.hpp"

namespace gpufeed::detail {

std::string loader_plan(dataset const& data, slot_layout const& layout, loader_options const& o,
                        epoch_source const& epochs, ring_plan const& sizes) {
  std::string text;
  auto const line = [&text](std::string const& said) {
    text += said;
    text += '\n';
  };
  auto const& plan = epochs.builtin_plan();
  auto const& order = epochs.builtin();
  if (epochs.open_ended()) {
    line(fmt::format(
        "open-ended epochs ({}): each ends when all {} of the dataset's sources have ended, its "
        "length unknown until then; batch_size {} x accumulation_steps {}",
        layout.spec().to_string(), open_ended_sources(data), o.batch_size, o.accumulation_steps));
  } else if (epochs.given()) {
    line(fmt::format(
        "{} samples ({}): the order of each epoch is given by the caller (set_epoch(epoch, "
        "order)); batch_size {} x accumulation_steps {}",
        data.size(), layout.spec().to_string(), o.batch_size, o.accumulation_steps));
  } else {
    auto const per_rank = try_mul(o.batch_size, o.accumulation_steps);
    auto const effective = per_rank ? try_mul(*per_rank, *o.world_size) : std::nullopt;
    line(fmt::format(
        "{} samples ({}), rank {} of {}: {} batches and {} optimizer steps per epoch; effective "
        "batch = batch_size {} x accumulation_steps {} x world_size {} = {}",
        data.size(), layout.spec().to_string(), *o.rank, *o.world_size, plan.batches(),
        plan.steps(), o.batch_size, o.accumulation_steps, *o.world_size,
        effective ? std::to_string(*effective) : std::string{"more than SIZE_MAX"}));
    if (*o.world_size > 1) {
      std::string evened;
      if (order.repeated() > 0) {
        evened = ": its own " + std::to_string(order.own_samples()) + " and its first again";
      } else if (order.shard_size() < order.own_samples()) {
        evened = " of its own " + std::to_string(order.own_samples()) + " (the epoch's last " +
                 std::to_string(data.size() % *o.world_size) +
                 " are left out, as short batches are: drop_last)";
      }
      line(fmt::format(
          "rank {} reads {} samples of each epoch{}: every rank reads as many, so that each "
          "has {} batches",
          *o.rank, order.shard_size(), evened, plan.batches()));
    }
  }
  auto const slots = sizes.tuning.slots;
  line(fmt::format(
      "{} workers, ring of {} slots x {} = {} of host memory (and {} of per-sample lists), "
      "allocated once",
      sizes.tuning.threads, slots, mib_text(layout.slot_bytes()),
      mib_text(layout.slot_bytes() * slots),
      mib_text((sizes.footprint - layout.slot_bytes()) * slots)));
  bool const workers = o.workers == auto_workers;
  bool const depth = o.prefetch_depth == auto_depth;
  if (workers || depth) {
    line(fmt::format(
        "autotuning {}: starting with {} of {} workers active and {} of {} slots in use{}; "
        "deciding every {} batches",
        workers && depth ? "workers and prefetch depth"
        : workers        ? "workers"
                         : "prefetch depth",
        sizes.tuning.start_workers, sizes.tuning.threads, sizes.tuning.start_depth, slots,
        depth ? " (budget " + mib_text(sizes.tuning.budget_bytes) + ")" : std::string{},
        o.autotune.window_batches));
  }
  if (epochs.given()) {
    // The caller's sampler decides; the builtin order's settings say nothing here.
  } else if (order.chunk_aware()) {
    line(fmt::format("chunk-aware shuffle: {} chunks of {} samples, drawn {} chunks at a time",
                     (data.size() + data.storage_chunk() - 1) / data.storage_chunk(),
                     data.storage_chunk(), o.chunk_window));
  } else if (o.shuffle && o.chunk_window > 0) {
    line(
        fmt::format("chunk_window {} ignored: the dataset reports no storage chunks (a plain "
                    "shuffle is used)",
                    o.chunk_window));
  }
  return text;
}

std::string log_loader_plan(dataset const& data, slot_layout const& layout, loader_options const& o,
                            epoch_source const& epochs, ring_plan const& sizes) {
  auto text = loader_plan(data, layout, o, epochs, sizes);
  if (logger()->should_log(spdlog::level::info)) {
    std::string_view rest{text};
    while (!rest.empty()) {
      auto const end = rest.find('\n');
      logger()->info("{}", rest.substr(0, end));
      rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    }
  }
  auto const& plan = epochs.builtin_plan();
  auto const& order = epochs.builtin();
  if (!epochs.given() && plan.batches() == 0) {
    logger()->warn(
        "this rank's epoch has no batches ({} samples, batch_size {}, last_batch {}): next() "
        "will return nothing",
        order.shard_size(), o.batch_size, o.last_batch == tail_policy::drop ? "drop" : "keep");
  }
  return text;
}

}  // namespace gpufeed::detail
