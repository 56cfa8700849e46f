"""Summarizes issue14g's ABBA runs: per case, each binary's ratio to the decode limit (median
over its runs, and the runs' spread), decode and resize (here: copy) us per image, and new/main
images/s paired run by run (ABBA: pairs (1,2) (4,3) (5,6) (8,7) ...); then the copy kernel's
micro-benchmark."""
import os
import json
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from runs import abba_pairs, pipeline_rows  # noqa: E402

rows, runs = pipeline_rows('main|new', 'generated|photos')



for (s, case), v in rows.items():
    m, w = v['main'], v['new']
    pairs = abba_pairs(len(runs[s]))
    med = lambda d, i: statistics.median(t[i] for t in d.values())
    spread = lambda d: f"{min(t[0] for t in d.values()):.2f}-{max(t[0] for t in d.values()):.2f}"
    ratios = [w[b][3] / m[a][3] for a, b in pairs]
    print(f"{s:9s} {case:38s} limit ratio main {med(m, 0):.3f} ({spread(m)}) new {med(w, 0):.3f} "
          f"({spread(w)}) | resize us {med(m, 2):5.1f} -> {med(w, 2):5.1f} | decode us "
          f"{med(m, 1):5.1f} -> {med(w, 1):5.1f} | new/main images/s median of {len(ratios)} "
          f"pairs {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
for bench in json.load(open('micro-new.json'))['benchmarks']:
    if bench.get('aggregate_name') == 'median':
        print(f"micro {bench['run_name']:40s} new {bench['real_time'] / 1e3:6.1f} us (median of "
              f"{bench['repetitions']})")
