#include "core/plan_log.hpp"

#include <spdlog/spdlog.h>

#include <string>

#include "core/checked_math.hpp"
#include "core/units.hpp"
#include "gpufeed/log.hpp"

namespace gpufeed::detail {

void log_loader_plan(dataset const& data, slot_layout const& layout, loader_options const& o,
                     epoch_source const& epochs, ring_plan const& sizes) {
  auto const& plan = epochs.builtin_plan();
  if (epochs.given()) {
    logger()->info(
        "{} samples ({}): the order of each epoch is given by the caller (set_epoch(epoch, "
        "order)); batch_size {} x accumulation_steps {}",
        data.size(), layout.spec().to_string(), o.batch_size, o.accumulation_steps);
  } else {
    auto const per_rank = try_mul(o.batch_size, o.accumulation_steps);
    auto const effective = per_rank ? try_mul(*per_rank, *o.world_size) : std::nullopt;
    logger()->info(
        "{} samples ({}), rank {} of {}: {} batches and {} optimizer steps per epoch; effective "
        "batch = batch_size {} x accumulation_steps {} x world_size {} = {}",
        data.size(), layout.spec().to_string(), *o.rank, *o.world_size, plan.batches(),
        plan.steps(), o.batch_size, o.accumulation_steps, *o.world_size,
        effective ? std::to_string(*effective) : std::string{"more than SIZE_MAX"});
  }
  auto const slots = sizes.tuning.slots;
  logger()->info(
      "{} workers, ring of {} slots x {} = {} of host memory (and {} of per-sample lists), "
      "allocated once",
      sizes.tuning.threads, slots, mib_text(layout.slot_bytes()),
      mib_text(layout.slot_bytes() * slots),
      mib_text((sizes.footprint - layout.slot_bytes()) * slots));
  bool const workers = o.workers == auto_workers;
  bool const depth = o.prefetch_depth == auto_depth;
  if (workers || depth) {
    logger()->info(
        "autotuning {}: starting with {} of {} workers active and {} of {} slots in use{}; "
        "deciding every {} batches",
        workers && depth ? "workers and prefetch depth"
        : workers        ? "workers"
                         : "prefetch depth",
        sizes.tuning.start_workers, sizes.tuning.threads, sizes.tuning.start_depth, slots,
        depth ? " (budget " + mib_text(sizes.tuning.budget_bytes) + ")" : std::string{},
        o.autotune.window_batches);
  }
  auto const& order = epochs.builtin();
  if (epochs.given()) {
    // The caller's sampler decides; the builtin order's settings say nothing here.
  } else if (order.chunk_aware()) {
    logger()->info("chunk-aware shuffle: {} chunks of {} samples, drawn {} chunks at a time",
                   (data.size() + data.storage_chunk() - 1) / data.storage_chunk(),
                   data.storage_chunk(), o.chunk_window);
  } else if (o.shuffle && o.chunk_window > 0) {
    logger()->info(
        "chunk_window {} ignored: the dataset reports no storage chunks (a plain "
        "shuffle is used)",
        o.chunk_window);
  }
  if (!epochs.given() && plan.batches() == 0) {
    logger()->warn(
        "this rank's epoch has no batches ({} samples, batch_size {}, last_batch {}): next() "
        "will return nothing",
        order.shard_size(), o.batch_size, o.last_batch == tail_policy::drop ? "drop" : "keep");
  }
}

}  // namespace gpufeed::detail
