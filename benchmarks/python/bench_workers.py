#!/usr/bin/env python3
"""Python datasets on worker processes: gpufeed.DataLoader (worker processes, the default for a
Python dataset) against torch.utils.data.DataLoader (persistent worker processes), with
gpufeed's worker threads (worker_type="thread") as a third column; the same dataset object,
batch size and worker count, interleaved paired repeats (the order reversed every other one).

Datasets (workloads.py): crop (a random-offset crop of a larger uint8 array, and a label), folder
(torchvision's ImageFolder, unchanged: RandomResizedCrop + RandomHorizontalFlip + ToTensor +
Normalize over JPEGs made here with PIL), h5py (the user's own class reading rows of an h5py
file). For each:
  train    samples/s of a training loop: a small CNN's forward, backward and SGD step per batch
           (on --device; `torch.set_num_threads(--torch-threads)` in the training process), and
           of the same loop on batches held in memory (in_memory): no loader can beat that, so
           in_memory/torch is the most any loader could gain over torch's in that run
  loader   samples/s of the loader alone (batches taken and dropped; moved to --device)
  step     the training step's own time while fed (--step-workers workers, default 1) over its
           time on a batch already in memory (the same step, no loader running)
  memory   peak RSS and PSS summed over all processes, each loader alone in a child process
Every run reports CPU time per sample of the whole process tree (workers included).

Goals: gpufeed >= 1.2x torch (median of paired ratios) and never below 1.0x; the step
while fed within 15 % of its time with data in memory; CPU per sample below torch's.

  PYTHONPATH=/tmp/build-bench/python /tmp/venv-bench/bin/python \\
      benchmarks/python/bench_workers.py --repeats 7 --out docs/benchmarks/python-workers
  (a GPU machine: add --device cuda --workers 8 --step-workers 8)
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paired  # noqa: E402
import workloads  # noqa: E402

LOADERS = ("torch", "gpufeed", "gpufeed_thread")  # the forking ones first
RATIOS = [("gpufeed", "torch"), ("gpufeed_thread", "torch"), ("gpufeed", "gpufeed_thread")]
CEILING = ("in_memory",)  # train runs: the same step on held batches, no loader running
CEILING_RATIOS = [("in_memory", "torch"), ("gpufeed", "in_memory")]
NO_RATIOS = [""] * 5  # a row without the table's five ratio columns


class Step:
    """A training step as a small model takes it: uint8 images to float in [0, 1] (HWC to CHW),
    two strided convolutions, pooling, a linear layer, cross-entropy, backward, SGD; loss.item()
    waits for the device, as a loop that logs its loss does."""

    def __init__(self, device):
        import torch
        from torch import nn

        self.torch = torch
        torch.set_flush_denormal(True)  # a step on held batches must not slow down on denormals
        self.model = nn.Sequential(
            nn.Conv2d(3, 16, 5, stride=4, padding=2), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)).to(device or "cpu")
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)

    def __call__(self, batch):
        x, y = batch[0], batch[1]
        if x.dtype == self.torch.uint8:
            if x.shape[-1] == 3:
                x = x.permute(0, 3, 1, 2)
            x = x.float().div_(255)
        loss = self.torch.nn.functional.cross_entropy(self.model(x), y.long() % 10)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return loss.item()


def main():
    p = paired.loader_parser(__doc__, batch_size=32)
    p.add_argument("--datasets", default="crop,folder,h5py")
    p.add_argument("--modes", default="train,loader,step,memory")
    p.add_argument("--device", default=None, help="cuda: batches and the model on the GPU")
    p.add_argument("--step-workers", type=int, default=1, help="workers of the step comparison")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch's intra-op threads in the training process")
    p.add_argument("--memory-repeats", type=int, default=2)
    p.add_argument("--memory-batches", type=int, default=16)
    workloads.add_dataset_arguments(p)
    p.add_argument("--child", help=argparse.SUPPRESS)  # "LOADER:DATASET", a memory run
    a = paired.parse(p)
    import torch

    torch.set_num_threads(a.torch_threads)
    convert = None if a.device in (None, "cpu") else (lambda b: workloads.to_device(b, a.device))

    def loaders(data, workers):
        return lambda n: workloads.make_loader(n, data, a.batch_size, workers, a.device)

    if a.child:
        name, dataset = a.child.split(":")
        make = loaders(workloads.make_dataset(dataset, a), a.workers)
        print(json.dumps(paired.memory_child(lambda: paired.endless(make(name)), a.warmup,
                                             a.memory_batches)))
        return

    modes = a.modes.split(",")
    step = Step(a.device) if {"train", "step"} & set(modes) else None
    results, goals, rows = {}, [], []
    for ds in a.datasets.split(","):
        data = workloads.make_dataset(ds, a)
        results[ds] = {}
        for mode in [m for m in ("train", "loader") if m in modes]:
            print(f"== {ds}, {mode}, {a.workers} workers")
            # A training loop cannot run faster than on batches already in memory: in_memory/torch
            # is the most any loader could gain over torch's in that run.
            train = mode == "train"
            r = paired.run_case(loaders(data, a.workers), LOADERS + (CEILING if train else ()),
                                RATIOS + (CEILING_RATIOS if train else []), a,
                                step if train else None, convert=convert)
            results[ds][mode] = r
            ratios = r["ratios"]["gpufeed/torch"]
            goals.append(paired.goal(f"{ds} {mode}: gpufeed >= 1.2x torch",
                                     r["median_ratio"]["gpufeed/torch"], 1.2,
                                     "median of paired ratios", spread_of=ratios))
            goals.append(paired.goal(f"{ds} {mode}: gpufeed never below 1.0x torch", min(ratios),
                                     1.0, "lowest paired ratio"))
            cpu = r["cpu_ratios"]["gpufeed/torch"]
            goals.append(paired.goal(f"{ds} {mode}: gpufeed's CPU per sample below torch's",
                                     r["median_cpu_ratio"]["gpufeed/torch"], 1.0,
                                     "median of paired ratios, torch's CPU/sample over gpufeed's",
                                     spread_of=cpu))
            rows.append([ds, mode, a.workers] + [f"{r['median_samples_per_s'][n]:.0f}"
                                                 for n in LOADERS] +
                        [f"{r['median_ratio'][k]:.2f} ({min(r['ratios'][k]):.2f}-"
                         f"{max(r['ratios'][k]):.2f})" for k in ("gpufeed/torch",
                                                                 "gpufeed_thread/torch")] +
                        [f"{r['median_cpu_ratio']['gpufeed/torch']:.2f}"] +
                        [f"{r['median_ratio'][k]:.2f}" if k in r["median_ratio"] else ""
                         for k in ("in_memory/torch", "gpufeed/in_memory")])
        if "step" in modes:
            print(f"== {ds}, step time fed by {a.step_workers} workers / in memory")
            r = paired.run_case(loaders(data, a.step_workers), LOADERS + ("in_memory",),
                                [(n, "in_memory") for n in LOADERS], a, step, convert=convert)
            r["step_ratios"] = {n: paired.paired_ratios(r["runs"], n, "in_memory", "step_ms")
                                for n in LOADERS}
            r["step_ratio_spread"] = {n: paired.spread(v) for n, v in r["step_ratios"].items()}
            results[ds]["step"] = r
            for n in LOADERS:
                s = r["step_ratio_spread"][n]
                print(f"  step {n} / in_memory: {s['median']:.2f}x ({s['min']:.2f}-{s['max']:.2f})")
            goals.append(paired.goal(f"{ds}: the step fed by gpufeed within 15 % of in memory",
                                     r["step_ratio_spread"]["gpufeed"]["median"], 1.15,
                                     "median of paired ratios of step times", at_most=True,
                                     spread_of=r["step_ratios"]["gpufeed"]))
            rows.append([ds, "step fed / in memory", a.step_workers] +
                        [f"{r['step_ratio_spread'][n]['median']:.2f}" for n in LOADERS] +
                        NO_RATIOS)
        if "memory" in modes:
            print(f"== {ds}, memory (each loader alone in a child process)")
            results[ds]["memory"] = paired.memory_in_children(
                list(LOADERS), a.memory_repeats, lambda n: ["--child", f"{n}:{ds}"])
            m = results[ds]["memory"]["median"]
            rows.append([ds, "peak RSS / PSS MiB", a.workers] +
                        [f"{m[n]['peak_rss'] / 2**20:.0f} / {m[n]['peak_pss'] / 2**20:.0f}"
                         for n in LOADERS] + NO_RATIOS)
    print(f"\n{os.cpu_count()} cores, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    paired.print_table(["dataset", "run", "workers"] + list(LOADERS) +
                       ["gpufeed/torch", "thread/torch", "CPU torch/gpufeed", "in memory/torch",
                        "gpufeed/in memory"], rows)
    for g in goals:
        print(f"  {'met' if g['met'] else 'NOT met'}: {g['goal']}: {g['measured']}"
              + (f" (range {g['range'][0]}-{g['range'][1]})" if "range" in g else ""))
    config = {k: v for k, v in vars(a).items() if k not in ("out", "data", "child")}
    config.update(loaders={"torch": "persistent_workers=True, pin_memory with a GPU",
                           "gpufeed": "worker_type auto (processes)",
                           "gpufeed_thread": "worker_type='thread'"},
                  shuffle=True, drop_last=True, model=str(step.model) if step else None)
    paired.report("workers", config, results, goals, a.out)


if __name__ == "__main__":
    main()
