#pragma once
/// @file
/// @brief Everything a loader can be told. An aggregate: use designated initializers.
///
/// @code
/// gpufeed::loader_options opts{.batch_size = 256, .workers = 8, .prefetch_depth = 4,
///                              .accumulation_steps = 4, .shuffle = true, .seed = 42};
/// @endcode
///
/// Let the loader choose the worker count and the prefetch depth (see docs/tuning.md,
/// "Autotuning"):
/// @code
/// gpufeed::loader_options opts{.batch_size = 256, .workers = gpufeed::auto_workers,
///                              .prefetch_depth = gpufeed::auto_depth};
/// @endcode

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpufeed/stream_view.hpp"
#include "gpufeed/transform.hpp"

namespace gpufeed {

/// @brief What to do with a short last batch, or a last optimizer step of fewer micro-batches.
enum class tail_policy : std::uint8_t {
  drop,  ///< leave it out of the epoch
  keep,  ///< deliver it; `batch::size()` / `step_info` say it is short
};

/// @brief What to do when `dataset::read` throws.
enum class error_policy : std::uint8_t {
  raise,  ///< `next()` throws `sample_error` for that batch
  skip,   ///< leave the sample out of its batch, count it and list its index, go on
};

/// @brief Where each epoch's sample order comes from.
enum class sample_order : std::uint8_t {
  builtin,  ///< the seeded permutation of (seed, epoch, rank, world_size), or the identity
  given,    ///< the caller gives each epoch's indices: `loader::set_epoch(epoch, epoch_order)`
};

/// @brief Where batches are delivered.
enum class placement : std::uint8_t {
  host,  ///< host memory; no CUDA is used (also what runs where there is no GPU)
  cuda,  ///< device memory: pinned ring, one cudaMemcpyAsync per batch on a copy stream
};

/// @brief Host memory the CUDA path stages batches in.
enum class staging_memory : std::uint8_t {
  pinned,    ///< page-locked (cudaHostAlloc): truly asynchronous copies at full PCIe speed
  pageable,  ///< ordinary memory, for hosts that restrict pinning (containers, WSL); the
             ///< driver copies through its own staging buffer, slower and partly synchronous
};

/// @brief `loader_options::workers = auto_workers` lets the loader choose how many workers read.
///
/// It starts `autotune_options::max_workers` threads (default: the cores this process may run
/// on, at most 64) but lets only a few of them take work at first (2, or half the cores), and
/// next() adds or gives back active workers from what it measures (the consumer's stall, the
/// workers' read time); the others sleep on a condition variable. `stats::workers` is the
/// active count, `stats::worker_threads` the threads started.
inline constexpr unsigned auto_workers = std::numeric_limits<unsigned>::max();

/// @brief `loader_options::prefetch_depth = auto_depth` lets the loader choose the ring's depth.
///
/// The ring is allocated once, at construction, at its largest depth within the budget
/// (`autotune_options::max_depth` slots, and no more than `autotune_options::memory_budget` /
/// the batch's bytes; on the CUDA path also `pinned_budget`), and next() raises the depth in
/// use (from 2) when the consumer stalls while the workers sit idle. Slots beyond the active
/// depth are never filled. Nothing is allocated after construction. `stats::ring_slots` is the
/// active depth, `stats::ring_capacity` the slots allocated.
inline constexpr std::size_t auto_depth = std::numeric_limits<std::size_t>::max();

/// @brief Bounds and pace of the autotuner (used only with `auto_workers` or `auto_depth`).
struct autotune_options {
  /// Most worker threads (and active workers); 0: the cores this process may run on (its
  /// affinity mask), at most 64. Allowed: 0 to 1024.
  unsigned max_workers = 0;
  /// Most ring slots (1 .. 4096); the memory budget may allow fewer.
  std::size_t max_depth = 16;
  /// Most host memory the automatic ring may take; default: 1/8 of the physical memory, at
  /// most 4 GiB. With pinned staging on the CUDA path, `pinned_budget` bounds it too.
  std::optional<std::size_t> memory_budget{};
  /// Batches delivered between two decisions (2 .. 4096). Each decision looks at the window
  /// since the previous one; one step per decision, so settling takes a few windows (in the one
  /// measured far-from-start run, 2 -> 16 workers, the last change came at batch 49: see
  /// docs/tuning.md, Autotuning).
  std::size_t window_batches = 16;
};

/// @brief Loader settings. Every field is validated at construction.
struct loader_options {
  /// Samples per batch; respected exactly as given, never changed (see `suggest_*` helpers).
  /// 1 to 2^32, and at most what one ring slot of this machine's memory holds (checked at
  /// construction, before anything is allocated: `out_of_memory` naming it).
  std::size_t batch_size = 1;
  /// Worker threads reading samples (1 .. 1024), or `auto_workers` to let the loader choose.
  unsigned workers = 4;
  /// Slots in the ring: batches prepared ahead of the consumer, leases included (1 .. 4096, and
  /// no more than this machine's memory holds: `out_of_memory` naming it), or `auto_depth` to let
  /// the loader choose.
  std::size_t prefetch_depth = 4;
  /// Micro-batches per optimizer step (gradient accumulation); 1 means no accumulation. 1 to
  /// 2^32, with accumulation_steps x batch_size (a step's samples) within std::size_t.
  std::size_t accumulation_steps = 1;
  /// Seeded shuffle when true, dataset order when false.
  bool shuffle = false;
  /// The shuffle's and the augmentations' seed.
  std::uint64_t seed = 0;
  /// Where the order comes from. With `sample_order::given` the caller gives each epoch's
  /// indices (a sampler or batch sampler of its own) with `loader::set_epoch(epoch, order)`;
  /// `shuffle`, `chunk_window`, `rank` and `world_size` then do not shape the order (the indices
  /// are this rank's already), and workers do not run ahead into an epoch before it is given.
  sample_order order = sample_order::builtin;
  /// Chunk-aware shuffle: when shuffling a dataset that reports storage chunks
  /// (`dataset::storage_chunk() > 1`), shuffle the chunks, then draw samples at random from a
  /// window of this many chunks at a time (FFCV's quasi-random order), so that each chunk is
  /// decompressed once per epoch, not once per sample. 0 turns it off (a plain shuffle).
  std::size_t chunk_window = 0;
  /// A last batch with fewer than batch_size samples.
  tail_policy last_batch = tail_policy::keep;
  /// A last optimizer step with fewer than accumulation_steps micro-batches.
  tail_policy last_step = tail_policy::keep;
  /// What a failing read does.
  error_policy on_error = error_policy::raise;
  /// Longest `next()` waits for one batch before throwing `timeout_error`; zero waits forever
  /// (and logs a warning naming the late sample every `stall_warning`).
  std::chrono::milliseconds timeout{0};
  /// How long `next()` waits before it logs which sample it is waiting for.
  std::chrono::milliseconds stall_warning{30'000};
  /// This process's rank among `world_size`; default: from the launcher's environment (see
  /// `resolve_distributed`). The builtin order gives each rank a disjoint share of every epoch,
  /// and every rank the same number of batches.
  std::optional<unsigned> rank{};
  /// Number of ranks; default: the WORLD_SIZE environment variable (torchrun), else 1.
  std::optional<unsigned> world_size{};
  /// Held batches: when every slot is leased to a live batch (the consumer keeps batches past the
  /// next step, e.g. a list of losses that keeps each step's graph and inputs), next() adds a
  /// slot, with one warning, instead of failing, as long as the ring's memory stays within this
  /// many bytes (and 4096 slots); past it next() throws `logic_error`. Default: a quarter of the
  /// physical memory (on the CUDA path with pinned staging, no more than `pinned_budget`);
  /// 0: the ring never grows.
  std::optional<std::size_t> held_batches_budget{};
  /// At most this many skipped indices are kept in `stats` (the count is always exact).
  std::size_t max_listed_skips = 10'000;
  /// Stage spans to keep for `loader::write_trace` (the last ones: reads, waits for a free
  /// slot, batch completions, next()'s waits), in a ring of this many entries (48 bytes each)
  /// allocated at construction. 0 (the default) records nothing and costs one branch per span.
  std::size_t trace_events = 0;
  /// Bounds of the autotuner; only read when workers or prefetch_depth is automatic. Manual
  /// settings are never changed.
  autotune_options autotune{};

  // ---- the CUDA path (placement::cuda) ----
  /// Where batches go. `cuda` needs a build with CUDA and a device.
  placement target = placement::host;
  /// CUDA device; default: the LOCAL_RANK environment variable (torchrun), else 0.
  std::optional<int> device{};
  /// The stream the training step runs on: `next()` makes it wait for the batch's copy, and
  /// releasing the batch records on it. Unset: pass the stream to `next(stream_view)`.
  std::optional<stream_view> consumer_stream{};
  /// Host staging memory for the copies.
  staging_memory staging = staging_memory::pinned;
  /// Most page-locked memory the ring may take (prefetch_depth x batch bytes); default: half
  /// of the machine's physical memory, since pinned pages can never be swapped out.
  std::optional<std::size_t> pinned_budget{};
  /// Conversions run on the GPU after the copy, at most one per field.
  std::vector<field_transform> transforms{};
};

/// @brief `options` with rank, world size and (for placement::cuda) the device filled in where
/// unset, by one rule: the options' own values first, then the launcher's environment as
/// torchrun defines it: WORLD_SIZE; RANK, else LOCAL_RANK on node GROUP_RANK (or Lightning's
/// NODE_RANK) of LOCAL_WORLD_SIZE ranks each; LOCAL_RANK for the device. A world of one process
/// is rank 0; a larger one is never rank 0 by default.
/// @throws logic_error if one of those variables is set but is not a number, or if the world
/// has more than one process and nothing says which one this is (with the builtin order: every
/// process would read rank 0's share).
[[nodiscard]] loader_options resolve_distributed(loader_options options);

/// @brief Checks every option; the message names the option, its value and the allowed range.
/// @throws logic_error on the first bad option.
void validate(loader_options const& options);

}  // namespace gpufeed
