"""Summarizes issue14h's ABBA runs: per case, each setting's ratio to the decode limit (median
over its runs, and the runs' spread), decode and resize us per image, and fast/accurate
images/s paired run by run (ABBA: pairs (1,2) (4,3) (5,6) (8,7))."""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from runs import abba_pairs, pipeline_rows  # noqa: E402

rows, runs = pipeline_rows('accurate|fast', 'generated|photos')
# The fast_dct binary's rows are named for the option: the same case as the accurate one's.
named = {}
for (s, case), v in rows.items():
    named.setdefault((s, case.replace(', fast_dct)', ')').replace(' (fast_dct)', '')), {}).update(v)
rows = named



for (s, case), v in rows.items():
    m, w = v['accurate'], v['fast']
    pairs = abba_pairs(len(runs[s]))
    med = lambda d, i: statistics.median(t[i] for t in d.values())
    spread = lambda d: f"{min(t[0] for t in d.values()):.2f}-{max(t[0] for t in d.values()):.2f}"
    ratios = [w[b][3] / m[a][3] for a, b in pairs]
    print(f"{s:9s} {case:38s} limit ratio accurate {med(m, 0):.3f} ({spread(m)}) fast {med(w, 0):.3f} "
          f"({spread(w)}) | resize us {med(m, 2):5.1f} -> {med(w, 2):5.1f} | decode us "
          f"{med(m, 1):5.1f} -> {med(w, 1):5.1f} | fast/accurate images/s median of {len(ratios)} "
          f"pairs {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
