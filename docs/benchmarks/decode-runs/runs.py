"""Reading the decode rounds' result files, for their summarize.py scripts (run in the folder
that holds the files; import with `sys.path` pointing at docs/benchmarks/decode-runs)."""
import glob
import json
import re


def pipeline_rows(binary, sets='generated|photos|photos2'):
    """The gpufeed-bench decode reports <set>-<run>-<binary>.json here, `binary` and `sets`
    regular expressions: rows[(set, case)][binary][run] = (ratio to the limit, decode us, resize
    us, images/s) per pipeline row, and runs[set] = the run numbers seen."""
    rows, runs = {}, {}
    for f in sorted(glob.glob('*-*-*.json')):
        m = re.fullmatch(rf'({sets})-(\d+)-({binary})\.json', f)
        if not m:
            continue
        s, n, b = m.group(1), int(m.group(2)), m.group(3)
        runs.setdefault(s, set()).add(n)
        for r in json.load(open(f))['results']:
            x = r['details']
            if 'case' not in x:
                continue
            key = (s, r['loader'].replace('gpufeed image_folder: ', ''))
            rows.setdefault(key, {}).setdefault(b, {})[n] = (
                r['ratio'], x['decode_us_per_image'], x['resize_us_per_image'], r['samples_per_s'])
    return rows, runs


def abba_pairs(count):
    """(A run, B run) for runs 1 .. count in the order A B B A, repeated."""
    out = []
    for start in range(1, count + 1, 4):
        out += [(start, start + 1), (start + 3, start + 2)]
    return out


def micro_medians(pattern):
    """The Google Benchmark reports matching `pattern` here, the binary the second field of each
    name (<prefix>-<binary>-...json): {benchmark: {binary: [each run's median, us]}}."""
    out = {}
    for f in sorted(glob.glob(pattern)):
        b = f.split('-')[1]
        for x in json.load(open(f))['benchmarks']:
            if x.get('aggregate_name') == 'median':
                out.setdefault(x['run_name'], {}).setdefault(b, []).append(x['real_time'] / 1e3)
    return out
