"""The harness the Python benchmarks share (benchmarks/python/bench_*.py): interleaved paired
repeats judged on the median of per-repeat ratios, endless iteration over a loader, peak memory
of a process tree, and the JSON report with the commit, machine, date and command.

Each bench_*.py script imports this module from its own folder; run them with
``PYTHONPATH=build/python /usr/bin/python3 benchmarks/python/bench_X.py`` (or scripts/bench-python).
"""

import datetime
import itertools
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
LOAD_AT_START = list(os.getloadavg())


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
    processes), and of the descendants they have reaped (SPDL and torchdata.nodes end their
    worker processes with each epoch: the difference of two readings counts a process that
    ended in between once, its whole time in its parent's reading less what the first reading
    had of it): what a run cost in CPU, whatever share of the cores other load left it."""
    try:
        import psutil
    except ImportError:  # a machine without psutil (an offline GPU machine): the same from /proc
        return _proc_tree_cpu_seconds()

    me = psutil.Process()
    total = 0.0
    for p in [me] + me.children(recursive=True):
        try:
            t = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def _proc_tree_cpu_seconds():
    """tree_cpu_seconds() read from /proc/PID/stat (utime, stime, cutime, cstime: the fields
    psutil reads), for Linux without psutil."""
    ticks, children = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                text = f.read()
        except OSError:  # ended since listdir
            continue
        fields = text[text.rindex(")") + 2:].split()  # from field 3, state; comm may hold spaces
        ticks[int(name)] = sum(int(x) for x in fields[11:15])
        children.setdefault(int(fields[1]), []).append(int(name))
    total, todo = 0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo += children.get(pid, [])
    return total / os.sysconf("SC_CLK_TCK")


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


def timed(stream, warmup, batches, min_seconds=0.3, step=None):
    """Takes `warmup` untimed batches from `stream` (see warmup_batches), then times `batches`
    more, and more again until `min_seconds` have passed (a run of a few milliseconds measures
    the scheduler, and CPU times come in 10 ms ticks): {"seconds", "samples", "batches",
    "samples_per_s", "cpu_ms_per_sample"}. The CPU time is the whole process tree's over the
    timed batches (the other loaders of the process sit idle with full queues then: settle()
    waits for that first). With `step` (a training step: step(batch), returning when it is done)
    each batch goes through it, and the run also says "step_ms" (the median step's time) and
    "wait_share" (the share of the run spent waiting for batches)."""
    settle()
    for _ in range(warmup):
        batch = next(stream)
        if step is not None:
            step(batch)
    samples = taken = 0
    waited = 0.0
    steps = []
    cpu = tree_cpu_seconds()
    start = time.perf_counter()
    while taken < batches or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        batch = next(stream)
        if step is not None:
            t1 = time.perf_counter()
            step(batch)
            steps.append(time.perf_counter() - t1)
            waited += t1 - t0
        samples += batch_samples(batch)
        taken += 1
    seconds = time.perf_counter() - start
    cpu = tree_cpu_seconds() - cpu
    run = {"seconds": seconds, "samples": samples, "batches": taken,
           "samples_per_s": samples / seconds, "cpu_ms_per_sample": 1e3 * cpu / samples}
    if step is not None:
        run.update(step_ms=1e3 * statistics.median(steps), wait_share=waited / seconds)
    return run


def spread(values):
    """{"median", "min", "max"} of per-repeat values: the median judges a goal, the range says
    how far the repeats agree."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def paired_ratios(runs, a, b, key="samples_per_s"):
    """Per repeat, run a's `key` over run b's (runs: name -> [run per repeat])."""
    return [x[key] / y[key] for x, y in zip(runs[a], runs[b])]


def paired(runners, repeats, ratios, log=print):
    """Runs every runner (name -> callable returning a dict with "samples_per_s") once per
    repeat, back to back, alternating the order each repeat (ABBA...) so that no peer always
    runs first. `ratios` lists (numerator, denominator) names; the ratio of a repeat is the
    numerator's samples/s over the denominator's in the same repeat. Returns {"runs": {name:
    [run, ...]}, "median_samples_per_s": {name: x}, "ratios": {"a/b": [per repeat]},
    "median_ratio": {"a/b": x}, "ratio_spread": {"a/b": spread()}, and where both sides
    measured CPU time "cpu_ratios" and "median_cpu_ratio": b's CPU per sample over a's}: goals
    are judged on the median of the paired ratios of samples/s, never on a ratio of medians."""
    names = list(runners)
    runs = {n: [] for n in names}
    for r in range(repeats):
        order = names if r % 2 == 0 else names[::-1]
        for name in order:
            run = runners[name]()
            runs[name].append(run)
            log(f"  repeat {r + 1}/{repeats} {name:>24}: {run['samples_per_s']:10.1f} samples/s"
                + (f", step {run['step_ms']:.1f} ms" if "step_ms" in run else ""))
    out = {"runs": runs, "ratios": {}, "median_ratio": {}, "ratio_spread": {},
           "median_samples_per_s": {n: statistics.median(x["samples_per_s"] for x in runs[n])
                                    for n in names}}
    for a, b in ratios:
        per_repeat = paired_ratios(runs, a, b)
        key = f"{a}/{b}"
        out["ratios"][key] = per_repeat
        out["ratio_spread"][key] = spread(per_repeat)
        out["median_ratio"][key] = statistics.median(per_repeat)
        line = (f"  {key}: median of paired ratios {out['median_ratio'][key]:.2f}x "
                f"(per repeat: {', '.join(f'{x:.2f}' for x in per_repeat)})")
        if all("cpu_ms_per_sample" in x for x in runs[a] + runs[b]):
            # CPU per sample, b's over a's: the ratio if both had the same cores to themselves.
            cpu = paired_ratios(runs, b, a, "cpu_ms_per_sample")
            out.setdefault("cpu_ratios", {})[key] = cpu
            out.setdefault("median_cpu_ratio", {})[key] = statistics.median(cpu)
            line += f"; CPU per sample {b} / {a}: {statistics.median(cpu):.2f}x"
        log(line)
    return out


def run_case(make, names, ratios, a, step=None, batches=4, convert=None):
    """One comparison: loader `name` = make(name) for each of `names` (made in this order: put
    those that fork first), each started (a.warmup batches), then paired() over timed() runs
    (a.min_seconds each, each batch through `convert` (e.g. to the GPU) and then `step` when
    given), then every loader closed. `names` may include "in_memory": the first 8 batches of the
    first loader, held and given again and again (the training step's own time with no loader
    feeding it)."""
    loaders, streams = {}, {}
    for n in names:
        if n == "in_memory":
            continue
        loaders[n] = make(n)
        streams[n] = start(loaders[n], a.warmup)
        if convert is not None:
            streams[n] = map(convert, streams[n])
    if "in_memory" in names:
        # Copies (a batch of gpufeed's held for good would keep a slot of its ring) of several
        # batches, so that the step does not learn one batch by heart.
        first = next(iter(streams.values()))
        held = [[t.clone() for t in next(first)] for _ in range(8)]
        streams["in_memory"] = itertools.cycle(held)
    runners = {n: (lambda n=n: timed(streams[n], a.warmup, batches, a.min_seconds, step))
               for n in names}
    try:
        return paired(runners, a.repeats, ratios)
    finally:
        streams.clear()
        for loader in loaders.values():
            if hasattr(loader, "close"):
                loader.close()


def memory_child(make_stream, warmup, batches):
    """Peak memory of this process tree while a loader made by make_stream() (an endless stream
    of its batches) gives `warmup` + `batches` batches: {"baseline_rss", "peak_rss", "peak_pss",
    "processes", "samples_per_s"}, baseline taken before the loader was made."""
    import psutil

    baseline = psutil.Process().memory_info().rss
    with TreeMemory() as memory:
        run = timed(make_stream(), warmup, batches)
    return {"baseline_rss": baseline, "peak_rss": memory.peak_rss, "peak_pss": memory.peak_pss,
            "processes": memory.peak_processes, "samples_per_s": run["samples_per_s"]}


def memory_in_children(names, repeats, child_args, log=print):
    """Runs this script again once per loader and repeat (alternating the order), each child
    with `child_args(name)` appended to this command line, printing memory_child()'s dict as its
    last line. Returns {"runs": {name: [dict]}, "median": {name: {key: median}}}."""
    runs = {n: [] for n in names}
    for r in range(repeats):
        for name in (names if r % 2 == 0 else names[::-1]):
            out = subprocess.run([sys.executable, os.path.abspath(sys.argv[0]), *sys.argv[1:],
                                  *child_args(name)], capture_output=True, text=True)
            if out.returncode != 0:
                raise RuntimeError(f"memory run of {name} failed:\n{out.stderr[-3000:]}")
            m = json.loads(out.stdout.strip().splitlines()[-1])
            runs[name].append(m)
            log(f"  {name:>16}: peak RSS {m['peak_rss'] / 2**20:7.1f} MiB, peak PSS "
                f"{m['peak_pss'] / 2**20:7.1f} MiB over {m['processes']} processes "
                f"(baseline {m['baseline_rss'] / 2**20:.1f} MiB)")
    median = {n: {k: statistics.median(x[k] for x in v) for k in v[0]} for n, v in runs.items()}
    return {"runs": runs, "median": median}


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
    for module in ("torch", "torchvision", "numpy", "h5py", "PIL", "gpufeed", "torchdata"):
        try:
            info[f"{module}_version"] = getattr(__import__(module), "__version__", "?")
        except ImportError:
            info[f"{module}_version"] = None
    try:
        import importlib.metadata

        info["spdl_version"] = importlib.metadata.version("spdl")
    except importlib.metadata.PackageNotFoundError:
        info["spdl_version"] = None
    try:
        import gpufeed

        info["gpufeed_extension"] = gpufeed._gpufeed.__file__
    except (ImportError, AttributeError):
        pass
    try:
        import torch

        info["cuda_available"] = torch.cuda.is_available()
        info["torch_threads"] = torch.get_num_threads()
        if info["cuda_available"]:
            info["gpu"] = torch.cuda.get_device_name()
    except ImportError:
        pass
    info["load_average_at_start"] = LOAD_AT_START
    return info


def _git(*args):
    # Only the trailing newline goes: a porcelain line starts with its status columns, blank
    # for a file changed in the work tree alone.
    return subprocess.run(["git", "-C", REPO, *args], capture_output=True, text=True,
                          check=False).stdout.rstrip("\n")


# The tree as the run starts: what it measures (files edited while it runs are not in it).
TREE_AT_START = {"commit": _git("rev-parse", "HEAD"),
                 "changed": [line[3:] for line in _git("status", "--porcelain").splitlines()]}


def commit(out_dir=RESULTS):
    """The commit measured and the files that differed from it when the run started (the
    benchmark measures the working tree's build), other than the results being written."""
    out = os.path.relpath(os.path.abspath(out_dir), REPO)
    files = [f for f in TREE_AT_START["changed"]
             if out.startswith("..") or not (f == out or f.startswith(out.rstrip("/") + "/"))]
    return {"commit": TREE_AT_START["commit"], "dirty": bool(files), "dirty_files": files}


def report(name, config, results, goals, out_dir=None):
    """Writes OUT_DIR/NAME.json (default docs/benchmarks/python/) and returns its path."""
    out_dir = out_dir or RESULTS
    os.makedirs(out_dir, exist_ok=True)
    doc = {"benchmark": name, **commit(out_dir),
           "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "command": " ".join([os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:]),
           "machine": machine(), "config": config, "results": results, "goals": goals}
    path = os.path.join(out_dir, f"{name}.json")
    with open(path, "w") as f:
        f.write(compact_json(doc) + "\n")
    print(f"wrote {os.path.relpath(path, REPO)}")
    return path


def compact_json(value, indent=0, width=1000):
    """JSON with each object or list on one line where that line fits in `width` characters,
    else one line per member (as docs/benchmarks stores its reports: short, and diffable)."""
    flat = json.dumps(value)
    if len(flat) + indent <= width or not isinstance(value, (dict, list)) or not value:
        return flat
    pad = " " * (indent + 1)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k)}: {compact_json(v, indent + 1, width)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + compact_json(v, indent + 1, width) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def goal(name, measured, target, statistic, at_most=False, spread_of=None):
    """A goal as the reports keep it: met when measured >= target (<= with `at_most`), with the
    range of the per-repeat values it is the median of, where given."""
    out = {"goal": name, "measured": round(measured, 3), "target": target,
           "statistic": statistic, "met": measured <= target if at_most else measured >= target}
    if spread_of:
        out["range"] = [round(min(spread_of), 3), round(max(spread_of), 3)]
    return out


def print_table(headers, rows):
    """Prints rows (lists of cells) under `headers`, columns padded to their widest cell."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for i, row in enumerate(cells):
        print("  ".join(c.rjust(w) if j else c.ljust(w)
                        for j, (c, w) in enumerate(zip(row, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


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
    p.add_argument("--min-seconds", type=float, default=0.3,
                   help="each timed run lasts at least this long")
    return p


def parse(p):
    """The arguments of a loader_parser(), --warmup resolved."""
    a = p.parse_args()
    a.warmup = warmup_batches(a.workers) if a.warmup is None else a.warmup
    return a
