"""Summarizes one folder of issue 13's paired `overhead` (and `memcpy`) rounds.

Usage: summarize.py FOLDER BEFORE AFTER [AFTER ...]
Files are FOLDER/<build>-<command>-<round>.json (or <build>-<round>.json for overhead alone).
A ratio is after / before within a round; the median is over the rounds. Writes
FOLDER/summary.json and prints a table.
"""
import glob
import json
import os
import re
import statistics as st
import sys


def gpufeed_result(path):
    d = json.load(open(path))
    return d, [x for x in d['results'] if x['loader'] == 'gpufeed'][0]


def overhead(path):
    _, r = gpufeed_result(path)
    s, b = r['details']['steady'], r['details']['best_case']
    return {'steady_mean_us': s['handoff_us'], 'steady_p50_us': s['p50_us'],
            'steady_p99_us': s['p99_us'], 'steady_next_us': s['next_us'],
            'steady_release_us': s['release_us'], 'best_case_us': b['handoff_us'],
            'wall_us_per_batch': r['details']['wall_us_per_batch']}


def memcpy(path):
    _, r = gpufeed_result(path)
    return {'loader_over_peak': r['ratio'], 'loader_bytes_per_s': r['bytes_per_s']}


def files(folder, build, command):
    """round -> path"""
    found = {}
    for path in glob.glob(os.path.join(folder, f'{build}-*.json')):
        name = os.path.basename(path)
        m = re.fullmatch(rf'{re.escape(build)}-(?:({command})-)?(\d+)\.json', name)
        if m and (m.group(1) == command or (m.group(1) is None and command == 'overhead')):
            found[int(m.group(2))] = path
    return found


def main():
    folder, before, afters = sys.argv[1], sys.argv[2], sys.argv[3:]
    out = {'ratio': 'after / before within a round; median over the rounds', 'pairs': {}}
    for after in afters:
        pair = {}
        for command, read in (('overhead', overhead), ('memcpy', memcpy)):
            b_files, a_files = files(folder, before, command), files(folder, after, command)
            rounds = sorted(set(b_files) & set(a_files))
            if not rounds:
                continue
            for key in read(b_files[rounds[0]]):
                b = [read(b_files[r])[key] for r in rounds]
                a = [read(a_files[r])[key] for r in rounds]
                ratios = [x / y for x, y in zip(a, b)]
                pair[f'{command}.{key}'] = {
                    'rounds': rounds, 'before_median': st.median(b), 'after_median': st.median(a),
                    'ratios': [round(x, 3) for x in ratios], 'median_ratio': st.median(ratios),
                    'after_higher_in': sum(x > 1 for x in ratios)}
                print(f'{after}/{before} {command}.{key:20s} median ratio {st.median(ratios):.3f}'
                      f'  higher in {sum(x > 1 for x in ratios)}/{len(ratios)}'
                      f'  (medians {st.median(b):.4g} -> {st.median(a):.4g})')
        loads = [json.load(open(p))['machine']['load_average'][0]
                 for p in files(folder, after, 'overhead').values()]
        pair['load_average_1min'] = [min(loads), max(loads)]
        out['pairs'][f'{after}/{before}'] = pair
    json.dump(out, open(os.path.join(folder, 'summary.json'), 'w'), indent=1)


if __name__ == '__main__':
    main()
