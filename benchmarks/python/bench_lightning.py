#!/usr/bin/env python3
"""The worker benchmark's training loop run by Lightning: the same small CNN (bench_workers.py's
Step), dataset, batch size and workers, its train_dataloader() returning gpufeed.DataLoader
(worker processes) or torch.utils.data.DataLoader (persistent worker processes), and batches
held in memory as the ceiling no loader can beat; interleaved paired repeats.

Each run is one Trainer.fit on the CPU (one process, one torch thread) of --warmup untimed
batches then --batches timed ones, lasting at least --min-seconds; the loader persists across
runs (each fit is an epoch of it). A callback times the batches from the first timed batch's
start to the last one's end, with the CPU time of the whole process tree.

Goal: gpufeed >= 1.2x torch (median of paired ratios) on the crop dataset, never below 1.0x.
--model linear swaps the CNN for one linear layer, so light that the loader sets the pace.

  PYTHONPATH=build-dev/python build/venv-current/bin/python benchmarks/python/bench_lightning.py \\
      --repeats 7 --out docs/benchmarks/python-lightning
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paired  # noqa: E402
import workloads  # noqa: E402
from bench_workers import Step  # noqa: E402

LOADERS = ("torch", "gpufeed")
RATIOS = [("gpufeed", "torch"), ("in_memory", "torch"), ("gpufeed", "in_memory")]


class Held:
    """Batches held in memory, given again and again (`batches` of them per epoch)."""

    def __init__(self, batches, count):
        self.batches, self.count = batches, count

    def __len__(self):
        return self.count

    def __iter__(self):
        return (self.batches[i % len(self.batches)] for i in range(self.count))


def fit_run(loader, step, warmup, batches, min_seconds):
    """One Trainer.fit over `loader`: {"samples_per_s", "cpu_ms_per_sample", ...} of the timed
    batches (all after `warmup`; at least `batches`, and more until `min_seconds` passed)."""
    import lightning as L
    import torch

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = step.model

        def training_step(self, batch, batch_idx):
            x, y = batch[0], batch[1]
            if x.dtype == torch.uint8:
                if x.shape[-1] == 3:
                    x = x.permute(0, 3, 1, 2)
                x = x.float().div_(255)
            if isinstance(self.model, torch.nn.Linear):  # a model light enough to wait for data
                x = x[:, :, ::8, ::8].flatten(1)
            return torch.nn.functional.cross_entropy(self.model(x), y.long() % 10)

        def configure_optimizers(self):
            return torch.optim.SGD(self.model.parameters(), lr=0.01)

        def train_dataloader(self):
            return loader

    class Clock(L.Callback):
        def __init__(self):
            self.samples = self.start = self.cpu = None
            self.done = False

        def on_train_batch_start(self, trainer, module, batch, batch_idx):
            if batch_idx == warmup:
                paired.settle()
                self.cpu, self.start, self.samples = paired.tree_cpu_seconds(), \
                    time.perf_counter(), 0

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            if self.start is None:
                return
            self.samples += paired.batch_samples(batch)
            elapsed = time.perf_counter() - self.start
            if batch_idx + 1 - warmup >= batches and elapsed >= min_seconds and not self.done:
                self.done = True
                self.seconds, self.cpu = elapsed, paired.tree_cpu_seconds() - self.cpu
                trainer.should_stop = True

    clock = Clock()
    trainer = L.Trainer(accelerator="cpu", devices=1, max_epochs=1, callbacks=[clock],
                        logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, num_sanity_val_steps=0)
    trainer.fit(Module())
    assert clock.done, "the epoch ended before the timed batches: raise --length"
    return {"seconds": clock.seconds, "samples": clock.samples,
            "samples_per_s": clock.samples / clock.seconds,
            "cpu_ms_per_sample": 1e3 * clock.cpu / clock.samples}


def main():
    p = paired.loader_parser(__doc__, batch_size=32)
    p.add_argument("--dataset", default="crop")
    p.add_argument("--batches", type=int, default=16, help="timed batches per run, at least")
    p.add_argument("--model", choices=("cnn", "linear"), default="cnn",
                   help="cnn: bench_workers.py's small CNN; linear: one linear layer on a 1/8 "
                   "subsample, light enough that the loader sets the pace")
    workloads.add_dataset_arguments(p)
    a = paired.parse(p)
    a.min_seconds = max(a.min_seconds, 2.0)
    import logging

    import torch

    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)
    torch.set_num_threads(1)
    data = workloads.make_dataset(a.dataset, a)
    step = Step(None)
    if a.model == "linear":
        step.model = torch.nn.Linear(3 * (a.crop // 8) ** 2, 10)
    loaders = {n: workloads.make_loader(n, data, a.batch_size, a.workers) for n in LOADERS}
    first = iter(loaders["gpufeed"])
    held = [[t.clone() for t in next(first)] for _ in range(8)]
    del first
    loaders["in_memory"] = Held(held, len(loaders["torch"]))
    runners = {n: (lambda n=n: fit_run(loaders[n], step, a.warmup, a.batches, a.min_seconds))
               for n in LOADERS + ("in_memory",)}
    try:
        r = paired.paired(runners, a.repeats, RATIOS)
    finally:
        for loader in loaders.values():
            if hasattr(loader, "close"):
                loader.close()
    ratios = r["ratios"]["gpufeed/torch"]
    goals = [paired.goal(f"{a.dataset} under Lightning: gpufeed >= 1.2x torch",
                         r["median_ratio"]["gpufeed/torch"], 1.2, "median of paired ratios",
                         spread_of=ratios),
             paired.goal(f"{a.dataset} under Lightning: gpufeed never below 1.0x torch",
                         min(ratios), 1.0, "lowest paired ratio")]
    print(f"\n{os.cpu_count()} cores, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for key in ("gpufeed/torch", "in_memory/torch", "gpufeed/in_memory"):
        s = r["ratio_spread"][key]
        print(f"  {key}: {s['median']:.2f} ({s['min']:.2f}-{s['max']:.2f})")
    for g in goals:
        print(f"  {'met' if g['met'] else 'NOT met'}: {g['goal']}: {g['measured']}"
              + (f" (range {g['range'][0]}-{g['range'][1]})" if "range" in g else ""))
    import lightning

    config = {k: v for k, v in vars(a).items() if k not in ("out", "data")}
    config.update(lightning=lightning.__version__, model=str(step.model),
                  loaders={"torch": "persistent_workers=True", "gpufeed": "worker processes",
                           "in_memory": "8 batches held, given again and again"})
    paired.report(f"lightning-{a.model}", config, {a.dataset: r}, goals, a.out)


if __name__ == "__main__":
    main()
