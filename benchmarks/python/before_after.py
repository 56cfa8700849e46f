#!/usr/bin/env python3
"""Paired before/after runs of two builds of gpufeed: does the after build run slower?

    python benchmarks/python/before_after.py --before /work/wt-base/build-bench \\
        --after build-bench --rounds 24 --out docs/benchmarks/python-workers/before-after.json

Each build dir is a CMake build (Release, benchmarks and Python on) of its own tree; both are
first brought up to date (ninja gpufeed-bench gpufeed_python). A round runs, per benchmark, the
two builds back to back, before first in odd rounds (AB BA ...: drift cancels over two rounds):
  workers   THIS tree's bench_workers.py (--modes loader, --repeats 1) with PYTHONPATH at the
            build's python/ (the extension that ran is checked): torch, gpufeed (worker
            processes), gpufeed_thread and gpufeed/torch in the run, per --datasets. torch's
            loader is the same code in both builds: its after/before is the machine's noise.
  overhead  the build's own gpufeed-bench overhead (a short run); condvar_wake is the control.
Reported per figure: each build's values per round, the paired ratios after/before, their
median and range ("better": higher or lower), both commits, cores and load (once built). An
untimed workers run per build comes first (inputs made, caches warm). A failed run exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, NoReturn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import paired  # noqa: E402

Values = dict[str, float]
TREES, LOADERS = ("before", "after"), ("gpufeed", "gpufeed_thread", "torch")
GOALS = {"/gpufeed/samples_per_s": 0.95, "/gpufeed_thread/samples_per_s": 0.95,  # no slowdown
         "steady/handoff_us": 1.05}  # beyond 5 %, on the median of the paired ratios after/before
MACHINE: dict[str, Any] = {}  # from the first workers run's report: platform, CPU, versions


def git(src: str, *args: str) -> str:
    return subprocess.run(["git", "-C", src, *args], capture_output=True, text=True,
                          check=True).stdout.rstrip("\n")


def fail(message: str) -> NoReturn:
    sys.exit(f"before_after.py: {message}")


def tree(build: str) -> dict[str, Any]:
    """The build dir, brought up to date, its source tree (CMakeCache.txt) and its commit."""
    build = os.path.realpath(build)
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            src = next(l.split("=", 1)[1].strip() for l in f
                       if l.startswith("CMAKE_HOME_DIRECTORY:"))
    except (OSError, StopIteration):
        fail(f"{build} is not a CMake build dir")
    print(f"building {build} (nothing to do when it is current)", flush=True)
    run(["nice", "-n", "10", "ninja", "-C", build, "-j2", "gpufeed-bench", "gpufeed_python"])
    changed = [l[3:] for l in git(src, "status", "--porcelain").splitlines()]
    return {"build": build, "source": src, "commit": git(src, "rev-parse", "HEAD"),
            "dirty": bool(changed), "dirty_files": changed}


def run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"exit status {out.returncode}: {' '.join(cmd)}\n{out.stdout[-2000:]}"
             f"{out.stderr[-4000:]}")


def workers(t: dict[str, Any], a: argparse.Namespace, raw: str, name: str) -> Values:
    """One bench_workers.py run on build t: samples/s and CPU ms per sample of each loader."""
    out = os.path.join(raw, name)
    env = {**os.environ, "PYTHONPATH": os.path.join(t["build"], "python"),
           "OMP_NUM_THREADS": "1", "GPUFEED_LOG_LEVEL": "warn"}
    run([sys.executable, os.path.join(HERE, "bench_workers.py"), "--datasets", a.datasets,
         "--modes", "loader", "--repeats", "1", "--workers", str(a.workers), "--min-seconds",
         str(a.min_seconds), "--h5-samples", str(a.h5_samples), "--data", a.data, "--out", out],
        env)
    with open(os.path.join(out, "workers.json")) as f:
        doc = json.load(f)
    extension = doc["machine"].get("gpufeed_extension", "")
    if not extension.startswith(os.path.join(t["build"], "python") + os.sep):
        fail(f"{name} ran the extension {extension!r}, not {t['build']}'s")
    t.update(gpufeed_extension=extension, gpufeed_version=doc["machine"].get("gpufeed_version"))
    MACHINE.update({k: v for k, v in doc["machine"].items() if k in (
        "platform", "python", "cpu_model", "mem_total_kib") or k.endswith("_version")})
    values: Values = {}
    for ds in a.datasets.split(","):
        runs = doc["results"][ds]["loader"]["runs"]
        values.update({f"{ds}/{n}/{k}": runs[n][0][k] for n in LOADERS
                       for k in ("samples_per_s", "cpu_ms_per_sample")})
        # gpufeed's samples/s over torch's in the same run: less moved by the machine's load.
        values.update({f"{ds}/{k}/samples_per_s_ratio": v[0]
                       for k, v in doc["results"][ds]["loader"]["ratios"].items()})
    return values


def overhead(t: dict[str, Any], a: argparse.Namespace, raw: str, name: str) -> Values:
    """One gpufeed-bench overhead run of build t: hand-off times (us) and the control."""
    path = os.path.join(raw, f"{name}.json")
    run([os.path.join(t["build"], "bin", "gpufeed-bench"), "overhead", *a.overhead_args.split(),
         "--json", path])
    with open(path) as f:
        rows = {r["loader"]: r for r in json.load(f)["results"]}
    d = rows["gpufeed"]["details"]
    return {"steady/handoff_us": d["steady"]["handoff_us"], "steady/p99_us": d["steady"]["p99_us"],
            "best_case/handoff_us": d["best_case"]["handoff_us"], "streaming/wall_us_per_batch":
            d["wall_us_per_batch"], "condvar_wake/handoff_us (control)":
            rows["condvar_wake"]["handoff_us"]}


BENCHES: dict[str, Callable[[dict[str, Any], argparse.Namespace, str, str], Values]] = {
    "workers": workers, "overhead": overhead}


def summary(runs: list[dict[str, Any]], bench: str) -> dict[str, Any]:
    """Per figure: each build's per-round values and the paired ratios after/before."""
    by = {t: sorted((r for r in runs if r["bench"] == bench and r["tree"] == t),
                    key=lambda r: r["round"]) for t in TREES}
    out: dict[str, Any] = {}
    for key in by["after"][0]["values"]:
        before = [r["values"][key] for r in by["before"]]
        after = [r["values"][key] for r in by["after"]]
        ratios = [x / y for x, y in zip(after, before)]
        better = "higher" if "samples_per_s" in key else "lower"  # else times
        out[key] = {"better": better, "before": before, "after": after, "ratios": ratios,
                    **paired.spread(ratios)}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", required=True, help="build dir of the tree before")
    p.add_argument("--after", required=True, help="build dir of the tree after")
    p.add_argument("--rounds", type=int, default=24, help="pairs of runs (even: ABBA complete)")
    p.add_argument("--out", required=True, help="the JSON report written")
    p.add_argument("--raw", help="keep each run's own report here (default: a temporary dir)")
    p.add_argument("--datasets", default="crop,numpy", help="bench_workers.py --datasets (h5py: "
                   "its H5Dataset opens its file racily under worker_type='thread')")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--min-seconds", type=float, default=1.0, help="each loader's timed run")
    p.add_argument("--h5-samples", type=int, default=8192, help="with h5py in --datasets")
    p.add_argument("--data", help="inputs made once (default: AFTER/bench-data)")
    p.add_argument("--overhead-args", default="--batches 3000 --repeats 3")
    a = p.parse_args()
    trees = {"before": tree(a.before), "after": tree(a.after)}
    a.data = os.path.abspath(a.data or os.path.join(trees["after"]["build"], "bench-data"))
    out_dir = os.path.dirname(os.path.abspath(a.out))
    os.makedirs(out_dir, exist_ok=True)  # now, not after the runs
    os.makedirs(raw := a.raw or tempfile.mkdtemp(prefix="before-after-"), exist_ok=True)
    print(f"{os.cpu_count()} cores, load {(load0 := list(os.getloadavg()))}; runs in {raw}")
    started = time.perf_counter()
    for name in TREES:  # untimed: makes the inputs, warms caches, proves both builds run
        workers(trees[name], a, raw, f"warmup-{name}")
    runs: list[dict[str, Any]] = []
    for r in range(1, a.rounds + 1):
        t0 = time.perf_counter()
        for bench, measure in BENCHES.items():
            for name in TREES if r % 2 else TREES[::-1]:
                load, t1 = list(os.getloadavg()), time.perf_counter()
                values = measure(trees[name], a, raw, f"{bench}-{r}-{name}")
                runs.append({"round": r, "bench": bench, "tree": name, "load_average_1_5_15":
                             load, "seconds": round(time.perf_counter() - t1, 1),
                             "values": values})
        print(f"round {r}/{a.rounds}: {time.perf_counter() - t0:.0f} s", flush=True)
    results = {bench: summary(runs, bench) for bench in BENCHES}
    goals = []
    for key, s in {**results["workers"], **results["overhead"]}.items():
        print(f"  {key:>40}: after/before {s['median']:.3f} ({s['min']:.3f}-{s['max']:.3f}), "
              f"{s['better']} is better")
        target = next((v for k, v in GOALS.items() if key.endswith(k)), None)
        if target is not None:
            low = s["better"] == "lower"
            goals.append(paired.goal(f"{key}: after {'<=' if low else '>='} {target}x before",
                                     s["median"], target, "median of paired ratios after/before",
                                     at_most=low, spread_of=s["ratios"]))
    bench_diff = git(paired.REPO, "diff", "--name-only", *[trees[t]["commit"] for t in TREES],
                     "--", "benchmarks/gpufeed_bench", "benchmarks/CMakeLists.txt").splitlines()
    doc = {"benchmark": "before_after", **paired.commit(out_dir),
           "date_utc": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
           "command": " ".join([os.path.relpath(sys.argv[0], paired.REPO)] + sys.argv[1:]),
           "machine": {"cpu_count": os.cpu_count(), "load_average_1_5_15": load0,
                       "load_average_at_end": list(os.getloadavg()),
                       **{k: v for k, v in MACHINE.items() if k != "gpufeed_version"}},
           "config": {**{k: v for k, v in vars(a).items() if k not in ("out", "raw")},
                      "order": "before first in odd rounds", "gpufeed_bench_diff": bench_diff},
           "trees": trees, "seconds": round(time.perf_counter() - started),
           "results": results, "goals": goals}  # each run's own report stays in --raw
    with open(a.out, "w") as f:
        f.write(paired.compact_json(doc) + "\n")
    print(f"wrote {a.out} ({doc['seconds']} s)")


if __name__ == "__main__":
    main()
