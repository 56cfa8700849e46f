import json, glob, re, statistics, sys
rows = {}
for f in sorted(glob.glob('*.json')):
    m = re.match(r'(\w+)-(\d+)-(\w+)\.json', f)
    if not m: continue
    s, n, b = m.group(1), int(m.group(2)), m.group(3)
    d = json.load(open(f))
    for r in d['results']:
        x = r['details']
        if 'case' not in x: continue
        key = (s, r['loader'].replace('gpufeed image_folder: ', ''))
        rows.setdefault(key, {}).setdefault(b, []).append((n, r['ratio'], x['decode_us_per_image'], x['resize_us_per_image'], r['samples_per_s']))
for (s, case), v in rows.items():
    m = sorted(v.get('main', [])); w = sorted(v.get('new', []))
    if not m or not w: continue
    # pairs: ABBA -> (1,2),(3,4) , (5,6),(7,8): pair run k of main with nearest new
    pairs = list(zip([t for t in sorted(m + w)] [::2], [t for t in sorted(m + w)][1::2]))
    ratios = []
    for a, b in pairs:
        mm = a if a in m else b; ww = b if a in m else a
        ratios.append(ww[4] / mm[4])
    f = lambda L, i: statistics.median([t[i] for t in L])
    print(f"{s:9s} {case:40s} ratio-to-limit main {f(m,1):.3f} new {f(w,1):.3f} | decode us main {f(m,2):5.1f} new {f(w,2):5.1f} | resize us main {f(m,3):4.1f} new {f(w,3):4.1f} | new/main samples/s pairs {' '.join(f'{r:.3f}' for r in ratios)} median {statistics.median(ratios):.3f}")
