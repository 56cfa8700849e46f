#!/usr/bin/python3
"""Summarizes paired `gpufeed-bench decode` runs of two builds (benchmarks/decode/abba.sh).

    abba_summary.py DIR A B

DIR holds <set>-<run>-<build>.json, runs numbered from 1 in the order they ran, A and B
alternating (A B B A ...): runs 2k-1 and 2k are a pair. Per set and case it prints each build's
ratio to the decode limit (median over its runs, and their range), its decode and resize
microseconds per image, and B's images/s over A's, pair by pair (their median and range). Google
Benchmark reports named micro-<build>-*.json in DIR (gpufeed-microbench --benchmark_out) add a line
per benchmark: each build's median of its runs' medians.
"""

import json
import pathlib
import re
import statistics
import sys


def pipeline_rows(folder, builds):
    """rows[(set, case)][build][run] = (ratio, decode us, resize us, images/s); runs[set]."""
    rows, runs = {}, {}
    pattern = re.compile(r"(\w+)-(\d+)-(" + "|".join(map(re.escape, builds)) + r")\.json")
    for path in sorted(pathlib.Path(folder).glob("*-*-*.json")):
        match = pattern.fullmatch(path.name)
        if not match:
            continue
        name, number, build = match.group(1), int(match.group(2)), match.group(3)
        runs.setdefault(name, {})[number] = build
        for result in json.loads(path.read_text())["results"]:
            details = result["details"]
            if "case" not in details:
                continue  # the limit's row
            case = result["loader"].replace("gpufeed image_folder: ", "")
            rows.setdefault((name, case), {}).setdefault(build, {})[number] = (
                result["ratio"], details["decode_us_per_image"], details["resize_us_per_image"],
                result["samples_per_s"])
    return rows, runs


def pairs(runs, a, b):
    """(run of a, run of b) for each pair of consecutive runs (1, 2), (3, 4), ... of a set."""
    out = []
    for first in range(1, max(runs, default=0), 2):
        two = {runs.get(first): first, runs.get(first + 1): first + 1}
        if a in two and b in two:
            out.append((two[a], two[b]))
    return out


def micro_medians(folder):
    """{benchmark: {build: [each run's median, us]}} from micro-<build>-*.json."""
    out = {}
    for path in sorted(pathlib.Path(folder).glob("micro-*.json")):
        build = path.name.split("-")[1]
        for entry in json.loads(path.read_text())["benchmarks"]:
            if entry.get("aggregate_name") == "median":
                out.setdefault(entry["run_name"], {}).setdefault(build, []).append(
                    entry["real_time"] / 1e3)
    return out


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    folder, a, b = sys.argv[1:]
    rows, runs = pipeline_rows(folder, [a, b])
    if not rows:
        sys.exit(f"no <set>-<run>-{a}|{b}.json report in {folder}")
    print(f"A = {a}, B = {b}; ratio to the decode limit: median (range); us per image; "
          "B/A images/s: median of pairs (range)")
    for (name, case), builds in rows.items():
        if a not in builds or b not in builds:
            continue
        row_a, row_b = builds[a], builds[b]
        med = lambda runs_of, i: statistics.median(t[i] for t in runs_of.values())  # noqa: E731
        spread = lambda runs_of: (f"{min(t[0] for t in runs_of.values()):.2f}-"  # noqa: E731
                                  f"{max(t[0] for t in runs_of.values()):.2f}")
        ratios = [row_b[j][3] / row_a[i][3] for i, j in pairs(runs[name], a, b)
                  if i in row_a and j in row_b]
        paired = (f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}), "
                  f"{len(ratios)} pairs" if ratios else "no pair")
        print(f"{name:9s} {case:38s} limit A {med(row_a, 0):.3f} ({spread(row_a)}) "
              f"B {med(row_b, 0):.3f} ({spread(row_b)}) | decode {med(row_a, 1):5.1f} -> "
              f"{med(row_b, 1):5.1f} | resize {med(row_a, 2):5.1f} -> {med(row_b, 2):5.1f} | "
              f"B/A {paired}")
    for name, builds in micro_medians(folder).items():
        if a in builds and b in builds:
            print(f"micro {name:40s} A {statistics.median(builds[a]):6.1f} us "
                  f"B {statistics.median(builds[b]):6.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
