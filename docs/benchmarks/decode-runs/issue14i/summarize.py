"""Summarizes issue14i's ABBA runs in the current directory: per set and case, each binary's
ratio to the decode limit (median over its runs, and the runs' spread), decode and resize us per
image, and new/main images/s paired run by run (ABBA: pairs (1,2) (4,3) (5,6) (8,7) ...); then
the resize micro-benchmarks, each binary's median of its runs' medians.

Usage: python3 summarize.py [MAIN NEW] -- the two binaries' names in the files' names
(<set>-<run>-<binary>.json, micro-<binary>-*.json); main and new by default. In the printout
they are called main and new whatever their names."""
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from runs import abba_pairs, micro_medians, pipeline_rows  # noqa: E402

main_name, new_name = sys.argv[1:3] if len(sys.argv) == 3 else ('main', 'new')
rows, runs = pipeline_rows(f'{re.escape(main_name)}|{re.escape(new_name)}')



for (s, case), v in rows.items():
    m, w = v[main_name], v[new_name]
    pairs = abba_pairs(len(runs[s]))
    med = lambda d, i: statistics.median(t[i] for t in d.values())
    spread = lambda d: f"{min(t[0] for t in d.values()):.2f}-{max(t[0] for t in d.values()):.2f}"
    ratios = [w[b][3] / m[a][3] for a, b in pairs]
    print(f"{s:9s} {case:38s} limit ratio main {med(m, 0):.3f} ({spread(m)}) new {med(w, 0):.3f} "
          f"({spread(w)}) | resize us {med(m, 2):5.1f} -> {med(w, 2):5.1f} | decode us "
          f"{med(m, 1):5.1f} -> {med(w, 1):5.1f} | new/main images/s median of {len(ratios)} "
          f"pairs {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
micro = micro_medians('micro-*.json')
for name, v in micro.items():
    if main_name not in v or new_name not in v:
        continue
    print(f"micro {name:40s} main {statistics.median(v[main_name]):6.1f} us new "
          f"{statistics.median(v[new_name]):6.1f} us (median of each binary's run medians)")
