#include "gpufeed/torch/data_loader.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <exception>
#include <string>
#include <utility>

#include "gpufeed/error.hpp"
#include "gpufeed/log.hpp"
#include "gpufeed/torch/current_stream.hpp"
#include "gpufeed/torch/worker_exception.hpp"

namespace gpufeed::torch {

namespace {

loader_options checked(data_loader_options const& options) {
  if (options.loader().target == placement::cuda) {
    GPUFEED_EXPECTS(detail::torch_has_cuda(),
                    "gpufeed::torch: device() asks for CUDA batches, but this gpufeed::torch was "
                    "built against a libtorch without CUDA (or gpufeed without CUDA); leave "
                    "device() unset and call .to(device) on the tensors, or rebuild against a "
                    "CUDA libtorch");
  }
  return options.loader();
}

// The seed torch::manual_seed set (or torch's default seed), read without drawing from the
// generator, so that the program's random numbers stay those it would have without gpufeed.
std::uint64_t torch_seed() {
  return at::detail::getDefaultCPUGenerator().current_seed();
}

// libtorch's view of the options in force.
::torch::data::FullDataLoaderOptions full_options_of(gpufeed::loader& l, bool drop_last) {
  auto const& o = l.options();
  auto const counts = l.snapshot();
  ::torch::data::DataLoaderOptions out{o.batch_size};
  out.workers(o.workers == auto_workers ? counts.worker_threads : o.workers);
  out.max_jobs(o.prefetch_depth == auto_depth ? counts.ring_capacity : o.prefetch_depth);
  if (o.timeout.count() > 0) out.timeout(o.timeout);
  out.enforce_ordering(true).drop_last(drop_last);
  return ::torch::data::FullDataLoaderOptions{out};
}

}  // namespace

data_loader::data_loader(std::shared_ptr<gpufeed::dataset const> dataset,
                         data_loader_options const& options)
    : data_loader{std::move(dataset), options, nullptr} {}

data_loader::data_loader(std::shared_ptr<gpufeed::dataset const> dataset,
                         data_loader_options const& options,
                         std::unique_ptr<detail::sampler_orders> sampler)
    : sampler_{std::move(sampler)},
      batch_size_{options.batch_size()},
      drop_last_{options.drop_last()},
      begin_starts_over_{options.begin_starts_over_},
      full_options_{::torch::data::DataLoaderOptions{}} {
  auto o = checked(options);
  auto notes = options.notes_;
  auto const world = resolve_distributed(o).world_size.value_or(1);
  if (sampler_) {
    o.order = sample_order::given;
    notes.push_back("each epoch's order is drawn from the sampler (" + sampler_->name() + "), " +
                    (sampler_->draws_ahead() ? "ahead of the epoch, as it depends on the "
                                               "sampler's own state only"
                                             : "when the epoch begins, as libtorch's loader does"));
    if (world > 1 && !sampler_->distributed()) {
      log_message(log_level::warn,
                  "gpufeed::torch: WORLD_SIZE is " + std::to_string(world) + " but the sampler (" +
                      sampler_->name() +
                      ") is not a distributed one: every rank reads the whole dataset, as with "
                      "libtorch's loader; pass DistributedRandomSampler(size, world_size, rank) "
                      "to give each rank its share");
    }
  }
  if (!options.seed_.has_value() && o.seed == 0) {
    bool const shuffles = o.shuffle && !sampler_;
    if (world == 1) {
      o.seed = torch_seed();
      if (shuffles) {
        notes.push_back("shuffle seed " + std::to_string(o.seed) +
                        ": torch's seed (torch::manual_seed, or torch's default); seed(s) sets "
                        "another");
      }
    } else if (shuffles) {
      notes.push_back("shuffle seed 0 on each of the " + std::to_string(world) +
                      " ranks: every rank must shuffle alike to take disjoint shares, and torch's "
                      "seed often differs by rank; seed(s) sets another");
    }
  }
  loader_.emplace(std::move(dataset), o);
  for (auto const& note : notes) log_message(log_level::info, "gpufeed::torch: " + note);
  full_options_ = full_options_of(*loader_, drop_last_);
  if (sampler_ && sampler_->draws_ahead()) give_order(0);  // the workers start at once
}

data_loader::data_loader(data_loader&&) noexcept = default;
data_loader& data_loader::operator=(data_loader&&) noexcept = default;
data_loader::~data_loader() = default;

gpufeed::loader& data_loader::running() {
  GPUFEED_EXPECTS(loader_.has_value(),
                  "gpufeed::torch: this data loader was joined (join() stopped its workers); make "
                  "a new one to load again");
  return *loader_;
}

gpufeed::loader& data_loader::loader() {
  return running();
}

void data_loader::give_order(std::uint64_t epoch) {
  auto& l = running();
  std::optional<std::uint64_t> sampler_epoch;
  if (follow_epochs_ && sampler_->distributed()) {
    sampler_->set_epoch(epoch);
    sampler_epoch = epoch;
  }
  l.set_epoch(epoch, sampler_->draw(batch_size_, drop_last_));
  given_epoch_ = epoch;
  given_sampler_epoch_ = sampler_epoch;
}

std::optional<tensor_batch> data_loader::next() {
  auto& l = running();
  if (end_owed_) {
    end_owed_ = false;
    return std::nullopt;
  }
  if (sampler_ && given_epoch_ != l.epoch()) give_order(l.epoch());
  auto const& o = l.options();
  auto b = [&] {
    try {
      return o.target == placement::cuda ? l.next(detail::current_stream(o.device.value_or(0)))
                                         : l.next();
    } catch (sample_error const& e) {
      // libtorch reports a worker's failure as torch::data::WorkerException, and programs
      // ported from it catch that type; gpufeed's context rides along.
      throw worker_exception{e};
    } catch (timeout_error const& e) {
      // libtorch's loader words its timeout "Timeout in DataLoader ...", and programs ported
      // from it may look for that word; gpufeed's explanation follows it.
      throw timeout_error{e.index(),
                          "gpufeed::torch: Timeout in DataLoader while waiting for the next "
                          "batch (timeout was " +
                              std::to_string(o.timeout.count()) + " ms). " + e.what()};
    }
  }();
  if (!b) return std::nullopt;
  if (sampler_ && sampler_->draws_ahead() && b->sequence() + 1 == l.batches_per_epoch()) {
    // The last batch of the epoch: the sampler's next epoch depends on its own state only, so it
    // is given now and the workers prepare its first batches while this one is used. The core
    // then stands at its start; the caller still gets this epoch's end from the next call.
    try {
      give_order(b->epoch() + 1);
      end_owed_ = true;
    } catch (std::exception const&) {
      // Not lost: drawn again, and raised then, when the next epoch begins.
    }
  }
  return to_tensors(std::move(*b));
}

void data_loader::start_epoch() {
  auto& l = running();
  if (end_owed_) {
    end_owed_ = false;  // the next epoch was given ahead: the core stands at its start
    return;
  }
  if (l.state().next_sequence == 0) return;
  auto const next = l.epoch() + 1;  // an epoch left half-way: start the next one
  if (sampler_) {
    give_order(next);
  } else {
    l.set_epoch(next);
  }
}

void data_loader::begin_epoch() {
  (void)running();
  auto const under_way = iteration_.lock();
  if (under_way && !under_way->exhausted && !begin_starts_over_) {
    throw logic_error{
        "gpufeed::torch: Attempted to get a new DataLoader iterator while another iterator is "
        "not yet exhausted: an iterator of the last begin() is still in use and short of the "
        "end of its epoch, which libtorch's loader refuses too with worker threads. Run the "
        "epoch to its end, or let go of that iterator (leave its loop) and begin() starts the "
        "next epoch"};
  }
  start_epoch();
}

data_loader::iterator data_loader::begin() {
  return iterate<data_loader, tensor_batch>(this);
}

void data_loader::set_epoch(std::uint64_t epoch) {
  auto& l = running();
  end_owed_ = false;
  if (!sampler_) {
    l.set_epoch(epoch);
    return;
  }
  follow_epochs_ = true;
  // Already drawn ahead for this epoch, with this sampler epoch, and nothing of it consumed:
  // drawing again would give the same order and discard what the workers prepared.
  bool const same_epoch = !sampler_->distributed() || given_sampler_epoch_ == epoch;
  if (sampler_->draws_ahead() && given_epoch_ == epoch && same_epoch && l.epoch() == epoch &&
      l.state().next_sequence == 0) {
    return;
  }
  give_order(epoch);
}

void data_loader::join() {
  loader_.reset();
  end_owed_ = false;
}

namespace detail {

// Each message opens with libtorch's own sentence for the same misuse, which programs ported
// from libtorch may match on.
void throw_dereferenced_past_the_end(bool at_end) {
  throw logic_error{
      at_end ? "gpufeed::torch: Attempted to dereference iterator that was past the end: its "
               "epoch is over (it equals end() and holds no batch); call begin() to start the "
               "next epoch"
             : "gpufeed::torch: Dereferencing the DataLoader's past-the-end iterator is not "
               "allowed: end() marks the end of every epoch and holds no batch"};
}

void throw_incremented_past_the_end(bool at_end) {
  throw logic_error{
      at_end ? "gpufeed::torch: Attempted to increment iterator past the end: its epoch is over "
               "(it equals end()), and there is no batch after the last one; call begin() to "
               "start the next epoch"
             : "gpufeed::torch: Incrementing the DataLoader's past-the-end iterator is not "
               "allowed: end() marks the end of every epoch, and there is nothing after it"};
}

void refuse_device_for_objects(data_loader_options const& options, std::string const& example) {
  GPUFEED_EXPECTS(options.loader().target != placement::cuda,
                  "gpufeed::torch: device() puts batches of tensors on a GPU, but this dataset's "
                  "batches are made on the slow path from examples of type " +
                      example +
                      "; leave device() unset and call .to(device) on the tensors its batches "
                      "hold, or return torch::data::Example<> from get() and end in Stack<>");
}

}  // namespace detail

}  // namespace gpufeed::torch
