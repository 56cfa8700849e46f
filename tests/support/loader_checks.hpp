#pragma once
// Checks on what a loader delivers: a batch's echo content, the records of an epoch, and the base
// options of loader tests.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "echo_dataset.hpp"
#include "gpufeed/gpufeed.hpp"
#include "process_probes.hpp"

namespace gpufeed::test {

/// The values of an int64 scalar-per-sample field as size_t.
inline std::vector<std::size_t> index_column(gpufeed::batch const& b) {
  auto values = b.field("index").as<std::int64_t>();
  std::vector<std::size_t> out;
  out.reserve(values.size());
  for (auto v : values) out.push_back(static_cast<std::size_t>(v));
  return out;
}

/// Checks that `b` holds what an echo_dataset wrote for b.indices(): sizes agree, each row's
/// index, epoch and payload match.
inline ::testing::AssertionResult echo_content_matches(gpufeed::batch const& b,
                                                       std::size_t payload_bytes) {
  if (!b) return ::testing::AssertionFailure() << "empty batch";
  auto idx = b.indices();
  if (idx.size() != b.size()) {
    return ::testing::AssertionFailure() << "batch " << b.sequence() << ": size() " << b.size()
                                         << " but indices() has " << idx.size();
  }
  auto const index = b.field("index");
  if (index.rank() != 1 || index.shape()[0] != static_cast<std::int64_t>(b.size())) {
    return ::testing::AssertionFailure()
           << "batch " << b.sequence() << ": field 'index' has rank " << index.rank()
           << " and leading dim " << (index.rank() > 0 ? index.shape()[0] : -1) << ", want ["
           << b.size() << "]";
  }
  auto values = index.as<std::int64_t>();
  auto context = b.field("context").as<std::int64_t>();
  if (values.size() != b.size() || context.size() != 3 * b.size()) {
    return ::testing::AssertionFailure() << "batch " << b.sequence() << ": field sizes "
                                         << values.size() << ", " << context.size();
  }
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (values[i] != static_cast<std::int64_t>(idx[i])) {
      return ::testing::AssertionFailure()
             << "batch " << b.sequence() << " row " << i << ": content says index " << values[i]
             << ", indices() says " << idx[i];
    }
    if (context[3 * i] != static_cast<std::int64_t>(b.epoch())) {
      return ::testing::AssertionFailure()
             << "batch " << b.sequence() << " row " << i << ": read in epoch " << context[3 * i]
             << ", batch epoch " << b.epoch();
    }
  }
  if (payload_bytes > 0) {
    auto payload = b.field("payload").as<std::uint8_t>();
    if (payload.size() != payload_bytes * b.size()) {
      return ::testing::AssertionFailure()
             << "batch " << b.sequence() << ": payload has " << payload.size() << " bytes";
    }
    for (std::size_t i = 0; i < b.size(); ++i) {
      for (std::size_t j = 0; j < payload_bytes; ++j) {
        if (payload[i * payload_bytes + j] != payload_byte(idx[i], j)) {
          return ::testing::AssertionFailure()
                 << "batch " << b.sequence() << " row " << i << " (index " << idx[i]
                 << "): payload byte " << j << " is " << int{payload[i * payload_bytes + j]}
                 << ", want " << int{payload_byte(idx[i], j)};
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

/// What one delivered batch was.
struct batch_record {
  std::uint64_t epoch = 0;
  std::uint64_t sequence = 0;
  std::vector<std::size_t> indices;
  gpufeed::step_info step;
  friend bool operator==(batch_record const&, batch_record const&) = default;
};

inline batch_record record_of(gpufeed::batch const& b) {
  return {b.epoch(), b.sequence(), {b.indices().begin(), b.indices().end()}, b.step()};
}

/// Calls next() until the epoch ends, checking each batch's echo content; returns the records.
inline std::vector<batch_record> drain_epoch(gpufeed::loader& l, std::size_t payload_bytes = 0,
                                             std::size_t limit = 1'000'000) {
  std::vector<batch_record> out;
  while (out.size() < limit) {
    auto b = l.next();
    if (!b) break;
    EXPECT_TRUE(echo_content_matches(*b, payload_bytes));
    out.push_back(record_of(*b));
  }
  return out;
}

/// The indices of the records, concatenated.
inline std::vector<std::size_t> flatten(std::vector<batch_record> const& records) {
  std::vector<std::size_t> out;
  for (auto const& r : records) out.insert(out.end(), r.indices.begin(), r.indices.end());
  return out;
}

inline std::vector<std::vector<std::size_t>> index_lists(std::vector<batch_record> const& rs) {
  std::vector<std::vector<std::size_t>> out;
  out.reserve(rs.size());
  for (auto const& r : rs) out.push_back(r.indices);
  return out;
}

/// Waits until `l` has `count` batches ready (the ring is full when count == prefetch_depth).
inline bool wait_ready(gpufeed::loader const& l, std::size_t count) {
  return eventually([&] { return l.snapshot().ring_ready >= count; });
}

/// Base options for loader tests: quiet, small, deterministic.
inline gpufeed::loader_options small_options(std::size_t batch_size = 4, unsigned workers = 2) {
  gpufeed::loader_options o;
  o.batch_size = batch_size;
  o.workers = workers;
  o.prefetch_depth = 4;
  o.rank = 0;
  o.world_size = 1;
  return o;
}

}  // namespace gpufeed::test
