import json, statistics, glob, os, sys
# Writes summary.json next to this script from the before-*/after-* reports here.
d = os.path.dirname(os.path.abspath(__file__))
def rounds_of(cmd):
    return sorted({int(os.path.basename(f).split('-')[-1].split('.')[0]) for f in glob.glob(f'{d}/before-{cmd}-*.json')})
rounds = {cmd: rounds_of(cmd) for cmd in ('overhead', 'memcpy')}
def load(bin, cmd, r):
    return json.load(open(f'{d}/{bin}-{cmd}-{r}.json'))
def gf(doc):
    return next(x for x in doc['results'] if x['loader'] == 'gpufeed')
figs = {
  'overhead: hand-off, steady state, mean of repeats (us)': ('overhead', lambda g: g['details']['steady']['handoff_us']),
  'overhead: hand-off, steady state, p50 (us)': ('overhead', lambda g: g['details']['steady']['p50_us']),
  'overhead: hand-off, steady state, p99 (us)': ('overhead', lambda g: g['details']['steady']['p99_us']),
  'overhead: hand-off, best case (us)': ('overhead', lambda g: g['details']['best_case']['handoff_us']),
  'overhead: wall clock per batch, back to back (us)': ('overhead', lambda g: g['details']['wall_us_per_batch']),
  'memcpy: loader / peak, median of paired ratios': ('memcpy', lambda g: g['ratio']),
  'memcpy: loader bytes/s': ('memcpy', lambda g: g['bytes_per_s']),
}
out = {'rounds': rounds, 'before': 'library and gpufeed-bench of 96861dc (main before the split)',
       'after': 'library and gpufeed-bench of 36cd8ab (issue13b: the split and the hardening)', 'figures': {}}
for name, (cmd, get) in figs.items():
    b = [get(gf(load('before', cmd, r))) for r in rounds[cmd]]
    a = [get(gf(load('after', cmd, r))) for r in rounds[cmd]]
    ratios = [x / y for x, y in zip(a, b)]
    out['figures'][name] = {'rounds': rounds[cmd], 'before': b, 'after': a, 'after_over_before_per_round': ratios,
                            'median_before': statistics.median(b), 'median_after': statistics.median(a),
                            'median_ratio': statistics.median(ratios)}
    print(f"{name}: before {statistics.median(b):.3g} after {statistics.median(a):.3g} ratio per round "
          + ', '.join(f'{x:.2f}' for x in ratios) + f" median {statistics.median(ratios):.3f}")
loads = [load(bin, cmd, r)['machine']['load_average'][0] for bin in ('before','after') for cmd in ('overhead','memcpy') for r in rounds[cmd]]
out['load_average_1min_range'] = [min(loads), max(loads)]
print('load', min(loads), max(loads))
json.dump(out, open(d + '/summary.json', 'w'), indent=1)
