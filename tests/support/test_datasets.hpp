#pragma once
// Test doubles and helpers shared by gpufeed's suites (header-only), one header per role:
//
// - sanitized.hpp: whether this is a sanitizer build, and loop counts scaled for it.
// - lifetime_counter.hpp: counts live instances, for leak checks.
// - echo_dataset.hpp: echo_dataset, every sample says who it is (its index, the read context, an
//   index-derived payload), so a batch's content can be checked against batch::indices();
//   sleepy_dataset sleeps a per-index amount, to force out-of-order completion.
// - failing_dataset.hpp: throws for chosen indices (std::runtime_error, gpufeed::file_error, or a
//   non-std type).
// - gated_dataset.hpp: gated_dataset + gate, blocks chosen reads until the gate opens (optionally
//   honouring read_context::stop_requested()).
// - loader_checks.hpp: a batch's echo content, the records of an epoch, base loader options.
// - reference_plan.hpp: an independent, brute-force cut of an epoch into batches and steps.
// - process_probes.hpp: threads (/proc/self/task), open fds (/proc/self/fd), RSS (VmRSS).
// - message_checks.hpp: nested_message, the message of the exception nested in a sample_error.

#include "echo_dataset.hpp"
#include "failing_dataset.hpp"
#include "gated_dataset.hpp"
#include "lifetime_counter.hpp"
#include "loader_checks.hpp"
#include "message_checks.hpp"
#include "process_probes.hpp"
#include "reference_plan.hpp"
#include "sanitized.hpp"
