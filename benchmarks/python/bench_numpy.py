#!/usr/bin/env python3
"""A Python dataset of numpy arrays (map-style, __getitem__ returns (np.ndarray, int)) in
gpufeed.DataLoader (worker threads, each holding the GIL only inside __getitem__) vs torch's
DataLoader (worker processes), same dataset object, batch size and workers, shuffled.

Reports the median of the per-repeat paired ratios of samples/s (both loaders in this process,
interleaved), and the peak memory of all processes together while each loader runs alone in a
fresh child process (this script again, --memory-peer NAME): summed RSS, which counts a page
shared by N processes N times, and summed PSS, which splits it among them; both sampled every
20 ms by psutil over the process tree. The dataset's array is made before the loader in both
children (it is in `baseline`, taken after importing torch and gpufeed).

  PYTHONPATH=build/python /usr/bin/python3 benchmarks/python/bench_numpy.py [--repeats 5]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paired  # noqa: E402
from workloads import NumpyDataset  # noqa: E402


def make_loader(name, data, a):
    if name == "torch":
        import torch

        return torch.utils.data.DataLoader(data, batch_size=a.batch_size, shuffle=True,
                                           num_workers=a.workers, persistent_workers=True,
                                           pin_memory=torch.cuda.is_available(), drop_last=True)
    import gpufeed

    return gpufeed.DataLoader(data, batch_size=a.batch_size, shuffle=True, num_workers=a.workers,
                              persistent_workers=True, drop_last=True)


def memory_child(name, a):
    """One loader alone: the tree's peak memory over `--memory-batches` batches."""
    import gpufeed  # noqa: F401 (imported before the baseline: both children import torch)
    import psutil
    import torch  # noqa: F401

    data = NumpyDataset(a.samples, a.side)
    baseline = psutil.Process().memory_info().rss
    with paired.TreeMemory() as memory:
        loader = make_loader(name, data, a)
        run = paired.timed(paired.endless(loader), a.warmup, a.memory_batches)
    print(json.dumps({"loader": name, "baseline_rss": baseline, "peak_rss": memory.peak_rss,
                      "peak_pss": memory.peak_pss, "processes": memory.peak_processes,
                      "samples_per_s": run["samples_per_s"]}))


def main():
    p = paired.loader_parser(__doc__, batch_size=64)
    p.add_argument("--samples", type=int, default=2048)
    p.add_argument("--side", type=int, default=128, help="images uint8 [3, SIDE, SIDE]")
    p.add_argument("--torch-batches", type=int, default=20)
    p.add_argument("--gpufeed-batches", type=int, default=40)
    p.add_argument("--memory-batches", type=int, default=64, help="batches per memory run")
    p.add_argument("--memory-repeats", type=int, default=2)
    p.add_argument("--memory-peer", help=argparse.SUPPRESS)
    a = paired.parse(p)
    if a.memory_peer:
        memory_child(a.memory_peer, a)
        return

    data = NumpyDataset(a.samples, a.side)
    print("== throughput")
    loaders = {"torch": make_loader("torch", data, a)}  # forks before gpufeed's threads exist
    streams = {"torch": paired.start(loaders["torch"], a.warmup)}
    loaders["gpufeed"] = make_loader("gpufeed", data, a)
    streams["gpufeed"] = paired.start(loaders["gpufeed"], a.warmup)
    counts = {"gpufeed": a.gpufeed_batches, "torch": a.torch_batches}
    runners = {n: (lambda n=n: paired.timed(streams[n], a.warmup, counts[n])) for n in streams}
    throughput = paired.paired(runners, a.repeats, [("gpufeed", "torch")])
    loaders["gpufeed"].close()
    # torch's persistent workers stay until this process ends; they are idle during the
    # memory runs, which measure their own children only.

    print("== memory (each loader alone in a child process)")
    memory = {"gpufeed": [], "torch": []}
    for r in range(a.memory_repeats):
        for name in (["gpufeed", "torch"] if r % 2 == 0 else ["torch", "gpufeed"]):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), *sys.argv[1:],
                                  "--memory-peer", name], capture_output=True, text=True,
                                 check=True).stdout
            m = json.loads(out.strip().splitlines()[-1])
            memory[name].append(m)
            print(f"  {name:>8}: peak RSS {m['peak_rss'] / 2**20:7.1f} MiB, peak PSS "
                  f"{m['peak_pss'] / 2**20:7.1f} MiB over {m['processes']} processes "
                  f"(baseline {m['baseline_rss'] / 2**20:.1f} MiB)")
    summary = {n: {k: statistics.median(x[k] for x in runs)
                   for k in ("baseline_rss", "peak_rss", "peak_pss", "processes")}
               for n, runs in memory.items()}
    results = {"throughput": throughput, "memory_runs": memory, "memory_median": summary}
    config = {k: v for k, v in vars(a).items() if k not in ("out", "data", "memory_peer")}
    config.update(sample="(np.ndarray uint8 [3, SIDE, SIDE], int)", shuffle=True,
                  persistent_workers=True, pin_memory=False, memory_sampling="psutil, 20 ms, "
                  "this process and its descendants, RSS and PSS summed")
    # No goal in the issue for this one: the ratio and memory are reported.
    paired.report("numpy_dataset", config, results, [], a.out)


if __name__ == "__main__":
    main()
