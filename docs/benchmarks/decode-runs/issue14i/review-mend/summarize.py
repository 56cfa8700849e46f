"""The resize micro-benchmarks of d7199ed ("now2" in the files' names) and of the review mend
("mend2"): each binary's median of its runs' medians, and mend/d7199ed."""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
from runs import micro_medians  # noqa: E402

for name, v in micro_medians('q-*.json').items():
    a, m = statistics.median(v['now2']), statistics.median(v['mend2'])
    print(f"{name:45s} d7199ed {a:6.1f} us  mend {m:6.1f} us  {m / a:.3f}")
