"""planar_min_share trial: per set, case and threshold, the ratio to the decode limit (median
of its runs and spread), decode and resize us per image, and images/s over the 0.5 binary's
run next to it in the same round (median of those pairs).

Usage: python3 summarize.py [ROUND] -- ROUND: runs per round (8 here, the default; 6 in
issue14j/share)."""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
from runs import pipeline_rows  # noqa: E402

round_length = int(sys.argv[1]) if len(sys.argv) > 1 else 8
rows, _ = pipeline_rows(r'[\d.]+', 'generated|photos')
for (s, case), byv in sorted(rows.items()):
    base = byv['0.5']
    for v in sorted(byv, key=float):
        d = byv[v]
        med = lambda i: statistics.median(t[i] for t in d.values())
        # pair each run with the 0.5 run of the same round
        pairs = []
        for n, t in d.items():
            block = (n - 1) // round_length
            cands = [m for m in base if (m - 1) // round_length == block]
            if cands:
                m = min(cands, key=lambda m: abs(m - n))
                pairs.append(t[3] / base[m][3])
        print(f"{s:9s} {case:38s} share {v:5s} ratio {med(0):.3f} "
              f"({min(t[0] for t in d.values()):.2f}-{max(t[0] for t in d.values()):.2f}) "
              f"decode {med(1):5.1f} resize {med(2):5.1f} us | vs 0.5 {statistics.median(pairs):.3f}")
