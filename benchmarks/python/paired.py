"""Shared helpers of the Python benchmarks (benchmarks/python/bench_*.py): interleaved paired
repeats judged on the median of per-repeat ratios, endless iteration over a loader, peak memory
of a process tree, and the JSON report with the commit, machine, date and command.

Each bench_*.py script imports this module from its own folder; run them with
``PYTHONPATH=build/python /usr/bin/python3 benchmarks/python/bench_X.py`` (or scripts/bench-python).
"""

import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(REPO, "docs", "benchmarks", "python")


def endless(loader):
    """Batches of `loader` forever: a new epoch (``iter(loader)``) whenever one ends, as
    gpufeed-bench's timed runs cross epochs."""
    while True:
        empty = True
        for batch in loader:
            empty = False
            yield batch
        if empty:
            raise RuntimeError("the loader delivered an empty epoch")


def start(loader, warmup):
    """An endless stream of `loader`'s batches, its workers started (the first `warmup`
    batches taken: torch spawns its worker processes on the first iter())."""
    stream = endless(loader)
    for _ in range(warmup):
        next(stream)
    return stream


def batch_samples(batch):
    """Samples in a batch: the first dimension of its first tensor or array."""
    while isinstance(batch, (list, tuple, dict)):
        batch = next(iter(batch.values())) if isinstance(batch, dict) else batch[0]
    return int(batch.shape[0])


def tree_cpu_seconds():
    """User + system CPU seconds of this process and its live descendants (torch's worker
    processes): what a run cost in CPU, whatever share of the cores other load left it."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for p in [me] + me.children(recursive=True):
        try:
            t = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system
    return total


def warmup_batches(workers):
    """Untimed batches before each timed run: more than a loader holds ready (gpufeed's default
    ring is 2 x workers + 1 batches, torch's prefetch 2 x workers), so that the batches its
    workers prepared during the pause between runs are consumed before the clock starts (a run
    that began with them would count samples read while it was not timed)."""
    return 2 * workers + 3


def settle(interval=0.05, idle_share=0.1, quiet=2, limit=10.0):
    """Waits until this process tree is idle: under `idle_share` of one CPU in each of `quiet`
    consecutive `interval`s (up to `limit` seconds; check_settle.py tests it). A loader keeps working after its timed run ends (torch's
    workers finish the batches they were sent, gpufeed's refill its ring); timed without this,
    the next peer shared the cores with that work and was charged its CPU time. Without it,
    commit dafb8c9's images run measured gpufeed 1.62x torch where gpufeed_full_decode, the same
    work on those images, measured 2.14x: gpufeed ran right after torch in 3 of 5 repeats."""
    deadline = time.perf_counter() + limit
    last = tree_cpu_seconds()
    idle = 0
    while time.perf_counter() < deadline and idle < quiet:
        time.sleep(interval)
        now = tree_cpu_seconds()
        idle = idle + 1 if now - last < idle_share * interval else 0
        last = now


def timed(stream, warmup, batches, min_seconds=0.3):
    """Takes `warmup` untimed batches from `stream` (see warmup_batches), then times `batches`
    more, and more again until `min_seconds` have passed (a run of a few milliseconds measures
    the scheduler, and CPU times come in 10 ms ticks): {"seconds", "samples", "batches",
    "samples_per_s", "cpu_ms_per_sample"}. The CPU time is the whole process tree's over the
    timed batches (the other loaders of the process sit idle with full queues then: settle()
    waits for that first)."""
    settle()
    for _ in range(warmup):
        next(stream)
    samples = taken = 0
    cpu = tree_cpu_seconds()
    start = time.perf_counter()
    while taken < batches or time.perf_counter() - start < min_seconds:
        samples += batch_samples(next(stream))
        taken += 1
    seconds = time.perf_counter() - start
    cpu = tree_cpu_seconds() - cpu
    return {"seconds": seconds, "samples": samples, "batches": taken,
            "samples_per_s": samples / seconds, "cpu_ms_per_sample": 1e3 * cpu / samples}


def paired(runners, repeats, ratios, log=print):
    """Runs every runner (name -> callable returning a dict with "samples_per_s") once per
    repeat, back to back, alternating the order each repeat (ABBA...) so that no peer always
    runs first. `ratios` lists (numerator, denominator) names; the ratio of a repeat is the
    numerator's samples/s over the denominator's in the same repeat. Returns {"runs": {name:
    [run, ...]}, "median_samples_per_s": {name: x}, "ratios": {"a/b": [per repeat]},
    "median_ratio": {"a/b": x}, and where both sides measured CPU time "cpu_ratios" and
    "median_cpu_ratio": b's CPU per sample over a's}: goals are judged on the median of the
    paired ratios of samples/s, never on a ratio of medians."""
    names = list(runners)
    runs = {n: [] for n in names}
    for r in range(repeats):
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            run = runners[name]()
            runs[name].append(run)
            log(f"  repeat {r + 1}/{repeats} {name:>24}: {run['samples_per_s']:10.1f} samples/s")
    out = {"runs": runs, "ratios": {}, "median_ratio": {},
           "median_samples_per_s": {n: statistics.median(x["samples_per_s"] for x in runs[n])
                                    for n in names}}
    for a, b in ratios:
        per_repeat = [x["samples_per_s"] / y["samples_per_s"] for x, y in zip(runs[a], runs[b])]
        key = f"{a}/{b}"
        out["ratios"][key] = per_repeat
        out["median_ratio"][key] = statistics.median(per_repeat)
        line = (f"  {key}: median of paired ratios {out['median_ratio'][key]:.2f}x "
                f"(per repeat: {', '.join(f'{x:.2f}' for x in per_repeat)})")
        if all("cpu_ms_per_sample" in x for x in runs[a] + runs[b]):
            # CPU per sample, b's over a's: the ratio if both had the same cores to themselves.
            cpu = [y["cpu_ms_per_sample"] / x["cpu_ms_per_sample"]
                   for x, y in zip(runs[a], runs[b])]
            out.setdefault("cpu_ratios", {})[key] = cpu
            out.setdefault("median_cpu_ratio", {})[key] = statistics.median(cpu)
            line += f"; CPU per sample {b} / {a}: {statistics.median(cpu):.2f}x"
        log(line)
    return out


class TreeMemory:
    """Samples, every `interval` seconds on a thread, the summed RSS (and PSS, which splits
    shared pages among their users) of this process and all its descendants; ``peak_rss`` and
    ``peak_pss`` in bytes. RSS counts a page shared by N processes N times (torch's workers
    share the dataset's pages with the main process after fork), PSS once."""

    def __init__(self, interval=0.02):
        import psutil

        self._psutil = psutil
        self._interval = interval
        self._stop = threading.Event()
        self.peak_rss = 0
        self.peak_pss = 0
        self.peak_processes = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self):
        me = self._psutil.Process()
        rss = pss = 0
        procs = [me] + me.children(recursive=True)
        for p in procs:
            try:
                info = p.memory_full_info()
            except (self._psutil.NoSuchProcess, self._psutil.AccessDenied):
                continue
            rss += info.rss
            pss += getattr(info, "pss", info.rss)
        self.peak_rss = max(self.peak_rss, rss)
        self.peak_pss = max(self.peak_pss, pss)
        self.peak_processes = max(self.peak_processes, len(procs))

    def _run(self):
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self._interval)

    def __enter__(self):
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()


def machine():
    """What the figures were taken on: CPUs, load, memory, Python and library versions."""
    info = {"cpu_count": os.cpu_count(), "load_average_1_5_15": list(os.getloadavg()),
            "platform": platform.platform(), "python": sys.version.split()[0],
            "gpu": "none (host-only machine; batches stay in host memory)"}
    try:
        with open("/proc/cpuinfo") as f:
            info["cpu_model"] = next((l.split(":", 1)[1].strip() for l in f
                                      if l.startswith("model name")), "?")
        with open("/proc/meminfo") as f:
            info["mem_total_kib"] = int(f.readline().split()[1])
    except OSError:
        pass
    for module in ("torch", "torchvision", "numpy", "h5py", "PIL", "gpufeed"):
        try:
            info[f"{module}_version"] = getattr(__import__(module), "__version__", "?")
        except ImportError:
            info[f"{module}_version"] = None
    try:
        import torch

        info["cuda_available"] = torch.cuda.is_available()
    except ImportError:
        pass
    return info


def commit():
    def git(*args):
        return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True,
                              check=False).stdout.strip()

    # Dirty: a tracked file differs from the commit, other than the results being written.
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".",
                  ":(exclude)docs/benchmarks/python")
    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(changed)}


def report(name, config, results, goals, out_dir=None):
    """Writes OUT_DIR/NAME.json (default docs/benchmarks/python/) and returns its path."""
    out_dir = out_dir or RESULTS
    os.makedirs(out_dir, exist_ok=True)
    doc = {"benchmark": name, **commit(),
           "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join([os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:]),
           "machine": machine(), "config": config, "results": results, "goals": goals}
    path = os.path.join(out_dir, f"{name}.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote {os.path.relpath(path, REPO)}")
    return path


def goal(name, measured, target, statistic):
    """A goal as the reports keep it: met when measured >= target."""
    return {"goal": name, "measured": round(measured, 3), "target": target,
            "statistic": statistic, "met": measured >= target}


def parser(doc, repeats=5):
    """A script's argument parser (its docstring as help) with --repeats, --out (results folder)
    and --data (cache of generated inputs)."""
    import argparse

    p = argparse.ArgumentParser(description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=repeats)
    p.add_argument("--out", default=RESULTS, help="folder of the JSON results")
    p.add_argument("--data", default=os.path.join(REPO, "build", "bench-python-data"),
                   help="cache of the generated inputs (made once, reused)")
    return p


def loader_parser(doc, batch_size):
    """parser() plus the loaders' shared settings: --batch-size, --workers, --warmup."""
    p = parser(doc)
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--warmup", type=int, help="untimed batches before each run "
                   "(default: warmup_batches(workers))")
    return p


def parse(p):
    """The arguments of a loader_parser(), --warmup resolved."""
    a = p.parse_args()
    a.warmup = warmup_batches(a.workers) if a.warmup is None else a.warmup
    return a
