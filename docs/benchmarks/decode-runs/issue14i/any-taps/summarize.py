"""Summarizes issue14i/any-taps: the planar resize micro-benchmarks, each binary's median of its
runs' medians. m-*.json: dc1fc36, c358e54 and `now` (the eight-row block for run-time tap counts,
its slots in a loop), ABBA-ordered once; n-*.json: dc1fc36, `now` and `now2` (the same block, the
slots unrolled per tap: the committed version), three rounds."""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
from runs import micro_medians  # noqa: E402

for prefix, order in (('m', ['dc1fc36', 'c358e54', 'now']), ('n', ['dc1fc36', 'now', 'now2'])):
    print(f"{prefix}-*.json (us)")
    for name, v in micro_medians(prefix + '-*.json').items():
        print(f"  {name:45s}" +
              "  ".join(f"{b} {statistics.median(v[b]):6.1f}" for b in order if b in v))
