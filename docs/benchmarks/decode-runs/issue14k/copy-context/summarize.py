"""copy-context/: per set, the ratio to the decode limit (median of the runs), the decode us per
image, and new/main images/s (median of the ABBA pairs). Run here: python3 summarize.py"""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
from runs import abba_pairs, pipeline_rows  # noqa: E402

rows, runs = pipeline_rows('main|new', sets='s444|s422|s320')
for (s, case), by in sorted(rows.items()):
    ratios = [by['new'][b][3] / by['main'][a][3] for a, b in abba_pairs(len(runs[s]))]
    limit = {k: statistics.median(v[0] for v in by[k].values()) for k in ('main', 'new')}
    decode = {k: statistics.median(v[1] for v in by[k].values()) for k in ('main', 'new')}
    print(f"{s} {case:35s} limit ratio main {limit['main']:.3f} new {limit['new']:.3f} | "
          f"decode us {decode['main']:6.1f} -> {decode['new']:6.1f} | new/main images/s median "
          f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
