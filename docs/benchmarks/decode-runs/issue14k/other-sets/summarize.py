"""Summary of other-sets/: per set and case, each run's ratio to the decode limit (the median of
its 5 paired ratios), its decode and resize us per image. Run here: python3 summarize.py"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
from runs import pipeline_rows  # noqa: E402

rows, runs = pipeline_rows('main', sets='444|422|prog')
names = {'444': '4:4:4', '422': '4:2:2', 'prog': 'progressive 4:2:0'}
for (s, case), by_binary in sorted(rows.items()):
    per_run = [by_binary['main'][n] for n in sorted(by_binary['main'])]
    ratios = ' '.join(f'{r[0]:.3f}' for r in per_run)
    decode = ' '.join(f'{r[1]:5.1f}' for r in per_run)
    resize = ' '.join(f'{r[2]:4.1f}' for r in per_run)
    print(f'{names[s]:18s} {case:40s} ratio {ratios} | decode us {decode} | resize us {resize}')
