"""Summarizes issue14i/any-taps: the planar resize micro-benchmarks, each binary's median of its
runs' medians. m-*.json: dc1fc36, c358e54 and `now` (the eight-row block for run-time tap counts,
its slots in a loop), ABBA-ordered once; n-*.json: dc1fc36, `now` and `now2` (the same block, the
slots unrolled per tap: the committed version), three rounds."""
import glob
import json
import statistics

for prefix, order in (('m', ['dc1fc36', 'c358e54', 'now']), ('n', ['dc1fc36', 'now', 'now2'])):
    d = {}
    for f in sorted(glob.glob(prefix + '-*.json')):
        b = f.split('-')[1]
        for x in json.load(open(f))['benchmarks']:
            if x.get('aggregate_name') == 'median':
                d.setdefault(x['run_name'], {}).setdefault(b, []).append(x['real_time'] / 1e3)
    print(f"{prefix}-*.json (us)")
    for name, v in d.items():
        print(f"  {name:45s}" +
              "  ".join(f"{b} {statistics.median(v[b]):6.1f}" for b in order if b in v))
