"""Summarizes issue14f's ABBA runs: per case, the ratio to the decode limit (median over each
binary's 4 runs), decode and resize us per image, and new/main images/s paired run by run; then
the resize micro-benchmark's medians, new/main paired."""
import os
import glob
import json
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from runs import pipeline_rows  # noqa: E402

rows, runs = pipeline_rows('main|new', 'generated|photos')
# ABBA order main new new main main new new main: pairs (1,2) (3,4) (5,6) (7,8)
pairs = [(1, 2), (4, 3), (5, 6), (8, 7)]  # (main run, new run)
for (s, case), v in rows.items():
    m, w = v['main'], v['new']
    med = lambda d, i: statistics.median(t[i] for t in d.values())
    ratios = [w[b][3] / m[a][3] for a, b in pairs]
    print(f"{s:9s} {case:42s} limit ratio main {med(m, 0):.3f} new {med(w, 0):.3f} | "
          f"resize us {med(m, 2):5.1f} -> {med(w, 2):5.1f} | decode us {med(m, 1):5.1f} -> "
          f"{med(w, 1):5.1f} | new/main images/s {' '.join(f'{r:.3f}' for r in ratios)} "
          f"median {statistics.median(ratios):.3f}")
micro = {}
for f in sorted(glob.glob('micro-*.json')):
    n, b = re.match(r'micro-(\d+)-(main|new)\.json', f).groups()
    for bench in json.load(open(f))['benchmarks']:
        if bench.get('aggregate_name') == 'median':
            micro.setdefault(bench['run_name'], {}).setdefault(b, {})[int(n)] = bench['real_time']
for name, v in micro.items():
    ratios = [v['new'][b] / v['main'][a] for a, b in pairs]
    print(f"micro {name:40s} main {statistics.median(v['main'].values()) / 1e3:6.1f} us new "
          f"{statistics.median(v['new'].values()) / 1e3:6.1f} us | new/main time "
          f"{' '.join(f'{r:.3f}' for r in ratios)} median {statistics.median(ratios):.3f}")
