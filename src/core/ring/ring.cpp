#include "core/ring/ring.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "gpufeed/error.hpp"

namespace gpufeed::detail {

namespace {
std::size_t index_of(slot::state s) noexcept {
  return static_cast<std::size_t>(s);
}

std::string text(cursor c) {
  return "(epoch " + std::to_string(c.epoch) + ", batch " + std::to_string(c.sequence) + ")";
}

// A rule that a transition's caller must keep (rule 5): checked where violation() cannot see it.
void require(bool kept, char const* rule) noexcept {
#ifndef NDEBUG
  if (!kept) {
    std::fprintf(stderr, "gpufeed: the ring broke %s\n", rule);
    std::abort();
  }
#else
  (void)kept;
  (void)rule;
#endif
}

char const* name(slot::state s) noexcept {
  switch (s) {
    case slot::state::free:
      return "free";
    case slot::state::filling:
      return "filling";
    case slot::state::ready:
      return "ready";
    case slot::state::leased:
      return "leased";
  }
  return "?";
}
}  // namespace

ring::ring(epoch_source const& epochs, std::vector<std::unique_ptr<slot>> slots,
           std::size_t max_slots, std::size_t depth, bool whole_batches, std::size_t sources)
    : epochs_{epochs},
      max_slots_{std::max(max_slots, slots.size())},
      depth_{depth},
      whole_batches_{whole_batches},
      source_ended_(epochs.open_ended() ? std::max<std::size_t>(sources, 1) : 0, false) {
  slots_.reserve(max_slots_);
  prepared_.reserve(max_slots_);
  epoch_ends_.reserve(epochs.open_ended() ? max_slots_ + 1 : 0);
  for (auto& s : slots) {
    ++counts_[index_of(s->status)];
    slots_.push_back(std::move(s));
  }
  check();
}

// ---- workers ------------------------------------------------------------------------------------

slot* ring::unclaimed() const noexcept {
  slot* earliest = nullptr;
  for (auto const& s : slots_) {
    if (s->status == slot::state::filling &&
        s->claims.next.load(std::memory_order_relaxed) < s->count &&
        (earliest == nullptr || s->at < earliest->at)) {
      earliest = s.get();
    }
  }
  return earliest;
}

slot* ring::start_next(unsigned workers) {
  auto const* plan = epochs_.plan(producer_.epoch);
  if (plan == nullptr || plan->batches() == 0) {
    return nullptr;  // nothing to start: no batches, or an epoch whose order is not given yet
  }
  if (epochs_.open_ended() && producer_.epoch > consumer_.epoch) {
    // A source starts its epoch when it is first asked for it: the next open-ended epoch
    // waits for the consumer, who may yet leave for another (set_epoch), or read it again.
    return nullptr;
  }
  for (std::size_t i = 0; i < depth_; ++i) {
    auto& s = *slots_[i];
    if (s.status != slot::state::free || s.attached != 0) {
      continue;
    }
    auto const span = plan->span(producer_.sequence);
    move(s, slot::state::filling);
    s.generation = generation_;
    s.at = producer_;
    s.order = epochs_.order_of(producer_.epoch);
    s.first_position = span.first;
    s.count = span.count;
    s.step = plan->step(producer_.sequence);
    // A claim takes a short run of consecutive samples when the batch is large next to the
    // worker count: still many workers per batch, but far fewer trips to the shared counters.
    s.grain = whole_batches_ ? std::max<std::size_t>(span.count, 1)
                             : std::clamp<std::size_t>(
                                   span.count / (4 * std::size_t{std::max(workers, 1U)}), 1, 16);
    s.ended = false;
    s.source = 0;
    s.claims.cancelled.store(false, std::memory_order_relaxed);
    s.claims.remaining.store(span.count, std::memory_order_relaxed);
    s.claims.next.store(0, std::memory_order_release);
    producer_ = normalized({producer_.epoch, producer_.sequence + 1});
    check();
    return &s;
  }
  return nullptr;
}

void ring::attach(slot& s) noexcept {
  ++s.attached;
}

bool ring::detach(slot& s) noexcept {
  return --s.attached == 0 && s.status == slot::state::free;
}

bool ring::complete(slot& s) noexcept {
  if (s.status != slot::state::filling || s.generation != generation_) {
    return false;  // discarded by set_epoch / restore while it was being filled
  }
  move(s, slot::state::ready);
  if (s.ended) {
    source_ended(s);
  }
  check();
  return true;
}

void ring::source_ended(slot const& s) noexcept {
  require(!source_ended_.empty() && s.source < source_ended_.size(),
          "an ended batch outside an open-ended epoch, or from a source the dataset does not "
          "count");
  if (source_ended_.empty() || s.at.epoch != producer_.epoch) {
    return;  // the producer's epoch ended already: this batch was planned before its end
  }
  auto const source = s.source % source_ended_.size();
  if (source_ended_[source]) {
    return;
  }
  source_ended_[source] = true;
  if (++sources_ended_ < source_ended_.size()) {
    return;
  }
  // Every source has ended: what is planned is the whole epoch, and nothing more of it is.
  epoch_ends_.push_back({producer_.epoch, producer_.sequence});
  producer_ = {producer_.epoch + 1, 0};
  reset_sources();
}

void ring::reset_sources() noexcept {
  std::fill(source_ended_.begin(), source_ended_.end(), false);
  sources_ended_ = 0;
}

std::optional<std::size_t> ring::batches_of(std::uint64_t epoch) const noexcept {
  auto const* plan = epochs_.plan(epoch);
  if (plan == nullptr) {
    return std::nullopt;
  }
  if (!epochs_.open_ended()) {
    return plan->batches();
  }
  for (auto const& end : epoch_ends_) {
    if (end.epoch == epoch) {
      return end.sequence;
    }
  }
  return std::nullopt;
}

cursor ring::normalized(cursor c) const noexcept {
  auto const batches = batches_of(c.epoch);
  return batches && c.sequence >= *batches ? cursor{c.epoch + 1, 0} : c;
}

// ---- consumer -----------------------------------------------------------------------------------

slot* ring::consumer_slot() const noexcept {
  for (auto const& s : slots_) {
    if ((s->status == slot::state::filling || s->status == slot::state::ready) &&
        s->generation == generation_ && s->at == consumer_) {
      return s.get();
    }
  }
  return nullptr;
}

bool ring::step_past_epoch_end() noexcept {
  auto const batches = batches_of(consumer_.epoch);
  if (!batches || consumer_.sequence < *batches) {
    return false;
  }
  consumer_ = {consumer_.epoch + 1, 0};
  std::erase_if(epoch_ends_, [&](cursor end) { return end.epoch < consumer_.epoch; });
  check();
  return true;
}

void ring::hand_out(slot& s) noexcept {
  take(s, slot::state::leased);
}

void ring::discard(slot& s) noexcept {
  take(s, slot::state::free);
}

void ring::take(slot& s, slot::state to) noexcept {
  require(s.status == slot::state::ready && s.at == consumer_,
          "rule 5: the consumer took a slot that is not its ready batch");
  move(s, to);
  ++consumer_.sequence;
  check();
}

void ring::release(slot& s) noexcept {
  require(s.status == slot::state::leased, "rule 5: a slot released is not leased");
  move(s, slot::state::free);
  check();
}

// ---- positioning --------------------------------------------------------------------------------

bool ring::at_start_of(std::uint64_t epoch) const noexcept {
  cursor const start{epoch, 0};
  return consumer_ == start || normalized(consumer_) == start;
}

bool ring::enter_epoch(std::uint64_t epoch, bool keep) noexcept {
  cursor const start{epoch, 0};
  if (keep) {
    consumer_ = start;
    std::erase_if(epoch_ends_, [&](cursor end) { return end.epoch < epoch; });
    check();
    return false;
  }
  flush(start);
  return true;
}

void ring::flush(cursor to) noexcept {
  ++generation_;
  for (auto const& s : slots_) {
    if (s->status == slot::state::filling || s->status == slot::state::ready) {
      move(*s, slot::state::free);
      s->claims.cancelled.store(true, std::memory_order_relaxed);
    }
  }
  // An open-ended epoch is read anew: its sources and its length are learned again.
  epoch_ends_.clear();
  reset_sources();
  consumer_ = to;
  producer_ = normalized(to);
  check();
}

// ---- depth and growth ---------------------------------------------------------------------------

void ring::deepen(std::size_t depth) noexcept {
  depth_ = std::clamp(depth, depth_, slots_.size());
  check();
}

bool ring::all_leased() const noexcept {
  return count(slot::state::leased) >= depth_;
}

bool ring::depth_full() const noexcept {
  for (std::size_t i = 0; i < depth_; ++i) {
    if (slots_[i]->status == slot::state::free) {
      return false;
    }
  }
  return true;
}

bool ring::may_grow() const noexcept {
  return slots_.size() < max_slots_ && depth_ == slots_.size();
}

void ring::grow(std::unique_ptr<slot> s) {
  GPUFEED_EXPECTS(s != nullptr && s->id == slots_.size() && may_grow(),
                  "ring::grow: the new slot must be the next one of a ring that may grow");
  ++counts_[index_of(s->status)];
  slots_.push_back(std::move(s));  // reserved: never reallocated under the workers
  ++grown_;
  depth_ = slots_.size();
  check();
}

ring_occupancy ring::occupancy() const noexcept {
  return {count(slot::state::ready), count(slot::state::leased), count(slot::state::filling),
          count(slot::state::free)};
}

// ---- rules --------------------------------------------------------------------------------------

void ring::move(slot& s, slot::state to) noexcept {
  --counts_[index_of(s.status)];
  ++counts_[index_of(to)];
  s.status = to;
}

std::string ring::violation() const {
  std::array<std::size_t, 4> seen{};
  for (auto const& s : slots_) {
    ++seen[index_of(s->status)];
  }
  for (std::size_t k = 0; k < seen.size(); ++k) {
    if (seen[k] != counts_[k]) {
      return "rule 1: " + std::to_string(seen[k]) + " slots are " +
             name(static_cast<slot::state>(k)) + " but the ring counts " +
             std::to_string(counts_[k]);
    }
  }
  if (slots_.size() > max_slots_) {
    return "rule 2: " + std::to_string(slots_.size()) + " slots, more than the limit of " +
           std::to_string(max_slots_);
  }
  if (depth_ < 1 || depth_ > slots_.size()) {
    return "rule 2: depth " + std::to_string(depth_) + " outside 1 .. " +
           std::to_string(slots_.size());
  }
  // The scratch list is reserved for every slot at construction: checked after every transition,
  // under the loader's mutex, the walk allocates nothing unless it finds a broken rule.
  auto& prepared = prepared_;
  prepared.clear();
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    auto const& s = *slots_[i];
    if (s.id != i) {
      return "rule 2: slot " + std::to_string(i) + " has id " + std::to_string(s.id);
    }
    if (i >= depth_ && s.status != slot::state::free) {
      return "rule 3: slot " + std::to_string(i) + " beyond the depth of " +
             std::to_string(depth_) + " is " + name(s.status);
    }
    if (s.status != slot::state::filling && s.status != slot::state::ready) {
      continue;
    }
    if (s.generation != generation_) {
      return "rule 4: slot " + std::to_string(i) + " is " + name(s.status) + " from generation " +
             std::to_string(s.generation) + ", the ring's is " + std::to_string(generation_);
    }
    if (s.at < consumer_ || !(s.at < producer_)) {
      return "rule 4: slot " + std::to_string(i) + " holds batch " + text(s.at) +
             ", outside [consumer " + text(consumer_) + ", producer " + text(producer_) + ")";
    }
    prepared.push_back(s.at);
  }
  std::sort(prepared.begin(), prepared.end());
  if (auto twice = std::adjacent_find(prepared.begin(), prepared.end()); twice != prepared.end()) {
    return "rule 4: two slots hold batch " + text(*twice);
  }
  return {};
}

void ring::check() const noexcept {
#ifndef NDEBUG
  auto const broken = violation();
  if (!broken.empty()) {
    std::fprintf(stderr, "gpufeed: the ring broke %s\n", broken.c_str());
    std::abort();
  }
#endif
}

}  // namespace gpufeed::detail
