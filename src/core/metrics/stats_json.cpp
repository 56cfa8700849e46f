#include "gpufeed/stats_json.hpp"

#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <ostream>
#include <utility>

#include "core/metrics/json_text.hpp"
#include "gpufeed/diagnosis.hpp"
#include "gpufeed/error.hpp"

namespace gpufeed {

namespace {

using detail::object_text;

void stage(object_text& o, char const* name, stage_stats const& s) {
  o.key(name);
  object_text stage{o.out()};
  stage.integer("count", s.count);
  stage.number("total_s", s.total_s);
  stage.number("p50_s", s.p50_s);
  stage.number("p99_s", s.p99_s);
  stage.number("max_s", s.max_s);
}

}  // namespace

std::string to_json(stats const& s) {
  std::string out;
  out.reserve(2048);
  {
    object_text o{out};
    o.number("wall_s", s.wall_s);
    o.integer("batches", s.batches);
    o.integer("samples", s.samples);
    o.integer("bytes", s.bytes);
    o.number("samples_per_s", s.samples_per_s());
    o.number("bytes_per_s", s.bytes_per_s());
    o.number("stall_fraction", s.stall_fraction());
    o.number("steady_stall_fraction", s.steady_stall_fraction());
    o.number("worker_busy_fraction", s.worker_busy_fraction());
    o.number("read_s", s.read_s);
    o.number("slot_wait_s", s.slot_wait_s);
    o.number("consumer_wait_s", s.consumer_wait_s);
    o.number("first_batch_s", s.first_batch_s);
    o.number("first_wait_s", s.first_wait_s);
    o.integer("samples_read", s.samples_read);
    o.integer("skipped", s.skipped);
    o.integer("failed_batches", s.failed_batches);
    o.integer("workers", s.workers);
    o.integer("ring_slots", s.ring_slots);
    o.boolean("autotuned", s.autotuned);
    o.integer("worker_threads", s.worker_threads);
    o.integer("ring_capacity", s.ring_capacity);
    o.integer("ring_grown", s.ring_grown);
    o.integer("ring_max_slots", s.ring_max_slots);
    o.integer("autotune_changes", s.autotune_changes);
    o.integer("autotune_last_change_batch", s.autotune_last_change_batch);
    o.integer("ring_ready", s.ring_ready);
    o.integer("ring_leased", s.ring_leased);
    o.number("ring_ready_mean", s.ring_ready_mean);
    o.integer("slot_bytes", s.slot_bytes);
    o.integer("host_bytes", s.host_bytes);
    o.integer("pinned_bytes", s.pinned_bytes);
    o.integer("bookkeeping_bytes", s.bookkeeping_bytes);
    o.text("staging", s.staging);
    o.signed_integer("device", s.device);
    o.integer("device_bytes", s.device_bytes);
    o.integer("copies", s.copies);
    o.integer("h2d_bytes", s.h2d_bytes);
    o.integer("timed_copies", s.timed_copies);
    o.number("h2d_s", s.h2d_s);
    o.number("transform_s", s.transform_s);
    o.number("copy_wait_s", s.copy_wait_s);
    o.key("stages");
    {
      object_text stages{o.out()};
      stage(stages, "read", s.read);
      stage(stages, "slot_wait", s.slot_wait);
      stage(stages, "consumer_wait", s.consumer_wait);
      stage(stages, "h2d", s.h2d);
      stage(stages, "transform", s.transform);
    }
    auto const d = diagnose(s);
    o.key("diagnosis");
    {
      object_text verdict{o.out()};
      verdict.text("kind", to_string(d.kind));
      verdict.text("sentence", d.sentence);
    }
  }
  return out;
}

void write_json_line(std::ostream& out, stats const& s,
                     std::chrono::system_clock::time_point when) {
  using namespace std::chrono;
  auto const since_epoch = duration_cast<milliseconds>(when.time_since_epoch()).count();
  auto const whole = static_cast<std::time_t>(since_epoch / 1000);
  std::tm utc{};
  gmtime_r(&whole, &utc);
  char stamp[64];
  std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                static_cast<int>(since_epoch % 1000));
  std::string line = "{\"time\":\"";
  line += stamp;
  line += "\",\"unix_s\":";
  char seconds[40];
  std::snprintf(seconds, sizeof seconds, "%.3f", static_cast<double>(since_epoch) * 1e-3);
  line += seconds;
  line += ',';
  line += std::string_view{to_json(s)}.substr(1);  // the object's fields, after its '{'
  line += '\n';
  out << line;
}

stats_writer::stats_writer(std::filesystem::path path)
    : path_{std::move(path)}, file_{path_, std::ios::app | std::ios::binary} {
  if (!file_) {
    throw file_error{path_.string(), "cannot open the statistics file for appending"};
  }
}

void stats_writer::write(stats const& s) {
  write_json_line(file_, s);
  file_.flush();
  if (!file_) {
    throw file_error{path_.string(), "cannot write to the statistics file"};
  }
}

}  // namespace gpufeed
