"""The resize micro-benchmarks of d7199ed ("now2" in the files' names) and of the review mend
("mend2"): each binary's median of its runs' medians, and mend/d7199ed."""
import glob
import json
import statistics

d = {}
for f in sorted(glob.glob('q-*.json')):
    b = f.split('-')[1]
    for x in json.load(open(f))['benchmarks']:
        if x.get('aggregate_name') == 'median':
            d.setdefault(x['run_name'], {}).setdefault(b, []).append(x['real_time'] / 1e3)
for name, v in d.items():
    a, m = statistics.median(v['now2']), statistics.median(v['mend2'])
    print(f"{name:45s} d7199ed {a:6.1f} us  mend {m:6.1f} us  {m / a:.3f}")
