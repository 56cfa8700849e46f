#!/usr/bin/env python3
"""train_classifier.py: the demo's small CNN trained from Python with torch, fed by torch's
DataLoader (torchvision ImageFolder + transforms) and by gpufeed.DataLoader (gpufeed.datasets.
ImageFolder with the same options), side by side: same images, model, batch size, workers,
epochs and augmentations. Prints each loader's samples/s, its data-wait share (time in next() /
training time) and gpufeed's diagnosis. docs/python.md explains the output.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/train_classifier.py
    ... train_classifier.py --quick                      # a smoke run, well under a minute
    ... train_classifier.py --loader gpufeed --epochs 8 --workers 4 --json run.json
    ... train_classifier.py --device cuda                # batches converted on the GPU

Without --data the images (ten kinds of texture, 320 to 500 pixels on the long side, seeded)
are written once into a cache folder. Exit status: 0; 1 on an error; 2 on a bad flag.
"""

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

import gpufeed
import synthetic_images
from feeds import Augmentation, GpufeedFeed, TorchFeed


class Classifier(nn.Module):
    """Four 3x3 convolutions with batch norm and ReLU, each halving the resolution, global
    average pooling and one linear layer (the C++ demo's model): about 33 thousand parameters,
    light enough that the loader, not the step, sets the pace on a CPU as on a GPU."""

    def __init__(self, classes):
        super().__init__()
        layers = []
        for c_in, c_out in ((3, 16), (16, 32), (32, 32), (32, 64)):
            layers += [nn.Conv2d(c_in, c_out, 3, stride=2, padding=1, bias=False),
                       nn.BatchNorm2d(c_out), nn.ReLU(inplace=True)]
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(64, classes)

    def forward(self, images):
        return self.head(F.adaptive_avg_pool2d(self.features(images), 1).flatten(1))


class Run:
    """One loader's training: a model from the shared seed, its optimizer, its feeds."""

    def __init__(self, feed, held_out, args, device):
        torch.manual_seed(args.seed)  # the same initial weights in every run
        self.model = Classifier(len(feed.dataset.classes)).to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=args.lr)
        self.feed, self.held_out = feed, held_out
        self.epochs = args.epochs
        self.device = device
        self.samples = 0
        self.train_s = 0.0
        self.per_epoch = []
        self.held_out_accuracy = None

    @property
    def name(self):
        return self.feed.name

    def train_epoch(self, epoch):
        self.model.train()
        start = time.perf_counter()
        wait_before = self.feed.wait_s
        loss_sum = torch.zeros((), dtype=torch.float64, device=self.device)
        correct = torch.zeros((), dtype=torch.int64, device=self.device)
        samples = 0
        for images, labels in self.feed.epoch(epoch):
            logits = self.model(images)
            loss = F.cross_entropy(logits, labels)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            loss_sum += loss.detach() * labels.numel()
            correct += (logits.detach().argmax(1) == labels).sum()
            samples += labels.numel()
        mean_loss = loss_sum.item() / max(1, samples)  # waits for the GPU's last step
        seconds = time.perf_counter() - start
        if not math.isfinite(mean_loss):
            raise RuntimeError(f"the {self.name} run's training loss is not finite ({mean_loss}) "
                               f"in epoch {epoch + 1}; lower --lr")
        self.samples += samples
        self.train_s += seconds
        e = dict(epoch=epoch + 1, samples=samples, seconds=seconds,
                 wait_seconds=self.feed.wait_s - wait_before, loss=mean_loss,
                 train_accuracy=correct.item() / max(1, samples))
        self.per_epoch.append(e)
        print(f"[{self.name}] epoch {epoch + 1}/{self.epochs}: loss {mean_loss:.3f}, train acc "
              f"{100 * e['train_accuracy']:.1f}% | {samples / seconds:.0f} samples/s, data wait "
              f"{100 * e['wait_seconds'] / seconds:.1f}%, {seconds:.1f} s", flush=True)

    @torch.no_grad()
    def evaluate(self):
        self.feed.close()
        if self.held_out is None:
            return
        self.model.eval()
        correct = total = 0
        for images, labels in self.held_out.epoch(0):
            correct += (self.model(images).argmax(1) == labels).sum().item()
            total += labels.numel()
        self.held_out.close()
        self.held_out_accuracy = correct / max(1, total)

    def result(self):
        diagnosis = self.feed.diagnosis()
        return dict(
            loader=self.name, samples=self.samples, train_seconds=self.train_s,
            wait_seconds=self.feed.wait_s, convert_seconds=self.feed.convert_s,
            samples_per_s=self.samples / self.train_s if self.train_s > 0 else 0.0,
            wait_share=self.feed.wait_s / self.train_s if self.train_s > 0 else 0.0,
            final_loss=self.per_epoch[-1]["loss"],
            train_accuracy=self.per_epoch[-1]["train_accuracy"],
            held_out_accuracy=self.held_out_accuracy, epochs=self.per_epoch,
            diagnosis=None if diagnosis is None else dict(kind=diagnosis.kind,
                                                          sentence=diagnosis.sentence),
            epoch_diagnoses=[d.kind for d in getattr(self.feed, "epoch_diagnoses", [])],
            last_epoch_stats=getattr(self.feed, "last_stats", None))


def parse_flags(argv):
    # No abbreviated flags: --quick must see every flag given explicitly.
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False,
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--loader", choices=("torch", "gpufeed", "both"), default="both",
                   help="which data loader feeds the training (both: side by side)")
    p.add_argument("--data", help="an ImageFolder root (one directory per class), or a folder "
                   "holding train/ and val/ such roots; default: generated images")
    p.add_argument("--cache-dir", default=str(synthetic_images.default_cache_dir()),
                   help="where generated images are kept")
    p.add_argument("--images", type=int, default=3000,
                   help="training images to generate (a fifth more are held out)")
    p.add_argument("--min-side", type=int, default=320, help="shortest long side generated, px")
    p.add_argument("--max-side", type=int, default=500, help="longest long side generated, px")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--workers", type=int, default=2,
                   help="num_workers of each loader (torch: processes, gpufeed: threads)")
    p.add_argument("--image-size", type=int, default=64, help="the model's input side, px")
    p.add_argument("--lr", type=float, default=3e-3, help="Adam's learning rate")
    p.add_argument("--seed", type=int, default=1,
                   help="model initialisation, shuffle and augmentation seed")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="where the training step runs (auto: cuda when torch sees a GPU)")
    p.add_argument("--full-decode", action="store_true",
                   help="gpufeed decodes every JPEG whole, at full size, to RGB, as PIL does "
                   "(by default it decodes only the part the crop needs, at 1/2, 1/4 or 1/8 "
                   "size when the crop allows)")
    p.add_argument("--progress", action="store_true",
                   help="draw gpufeed's progress line (gpufeed.progress) during its epochs")
    p.add_argument("--json", help="also write the results to this JSON file")
    p.add_argument("--commit", help="the source's commit, recorded in the JSON (default: git's)")
    p.add_argument("--quick", action="store_true",
                   help="a tiny run (300 images, 1 epoch) for smoke tests; explicit flags win")
    args = p.parse_args(argv)
    if args.quick:
        given = {a.split("=")[0] for a in argv if a.startswith("--")}
        if "--images" not in given:
            args.images = 300
        if "--epochs" not in given:
            args.epochs = 1
    for name in ("images", "epochs", "batch_size", "image_size"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} should be at least 1")
    if args.workers < 0:
        p.error("--workers should be 0 or more")
    if args.min_side > args.max_side:
        p.error(f"--min-side {args.min_side} is above --max-side {args.max_side}")
    return p, args


def resolve_device(parser, name):
    """--device: cuda is refused, with the reason, where it cannot work."""
    if name == "cpu" or (name == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        built = torch.version.cuda
        why = ("this torch was built without CUDA" if built is None else
               f"torch (CUDA {built}) sees no GPU: none on this machine, no driver, or "
               "CUDA_VISIBLE_DEVICES hides it")
        parser.error(f"--device cuda: torch.cuda.is_available() is False ({why}); run with "
                     "--device cpu, or without --device")
    if not gpufeed._gpufeed.has_cuda:
        parser.error("--device cuda: this gpufeed was built without CUDA, so it cannot put "
                     "batches on the GPU; rebuild it where nvcc is found, or use --device cpu")
    return torch.device("cuda", 0)


def dataset_folders(args):
    """(train, val or None, description) from --data or the generated set."""
    if args.data:
        root = Path(args.data)
        if not root.is_dir():
            raise FileNotFoundError(f"--data {root}: no such folder")
        if (root / "train").is_dir():
            val = root / "val" if (root / "val").is_dir() else None
            return root / "train", val, dict(root=str(root))
        return root, None, dict(root=str(root))
    s = synthetic_images.ensure_images(args.cache_dir, args.images, args.min_side, args.max_side)
    info = {k: (str(v) if isinstance(v, Path) else v) for k, v in s.items()}
    return s["train"], s["val"], info


def git_commit():
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=here, capture_output=True, text=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def machine(load_average):
    """The machine, for the JSON; `load_average`: the 1-minute load when the run started (other
    jobs on a shared machine slow both loaders)."""
    model = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return dict(cpus=len(os.sched_getaffinity(0)), cpu_model=model, system=platform.platform(),
                python=platform.python_version(), torch=torch.__version__,
                gpufeed=gpufeed.__version__, load_average=load_average,
                gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None)


def make_runs(args, device, train, val):
    augment = Augmentation(args.image_size)
    common = dict(augment=augment, batch_size=args.batch_size, workers=args.workers,
                  seed=args.seed, device=device)
    gpufeed_extra = dict(full_decoding=args.full_decode)
    runs = []
    if args.loader in ("torch", "both"):
        runs.append((TorchFeed(train, True, **common),
                     val and TorchFeed(val, False, **common)))
    if args.loader in ("gpufeed", "both"):
        runs.append((GpufeedFeed(train, True, **common, **gpufeed_extra,
                                 show_progress=args.progress),
                     val and GpufeedFeed(val, False, **common, **gpufeed_extra)))
    return [Run(feed, held_out, args, device) for feed, held_out in runs]


def warm_up(args, device, classes):
    """torch's one-time set-up (thread pools, kernels, allocator), charged to no run."""
    model = Classifier(classes).to(device)
    x = torch.zeros(args.batch_size, 3, args.image_size, args.image_size, device=device)
    model(x).sum().backward()


def speed_ratio(results):
    """gpufeed's samples/s over torch's, over the whole run and the median of the epochs' ratios
    (each epoch's two runs ran next to each other): (whole, median), or None unless both ran."""
    by_name = {r["loader"]: r for r in results}
    if len(by_name) < 2 or by_name["torch"]["samples_per_s"] <= 0:
        return None
    g, t = by_name["gpufeed"], by_name["torch"]
    per_epoch = [(a["samples"] / a["seconds"]) / (b["samples"] / b["seconds"])
                 for a, b in zip(g["epochs"], t["epochs"])]
    return g["samples_per_s"] / t["samples_per_s"], statistics.median(per_epoch)


def print_summary(results):
    print("results (training epochs only; data wait = time in the loader's next() / that time):")
    for r in results:
        held = ("-" if r["held_out_accuracy"] is None
                else f"{100 * r['held_out_accuracy']:.1f}%")
        print(f"  {r['loader']:>7}: {r['samples_per_s']:8.1f} samples/s, data wait "
              f"{100 * r['wait_share']:5.1f}%, held-out accuracy {held}, "
              f"{r['train_seconds']:.1f} s for {r['samples']} samples")
    if (ratio := speed_ratio(results)) is not None:
        print(f"  gpufeed / torch: {ratio[0]:.2f}x samples/s (median of the epochs' ratios "
              f"{ratio[1]:.2f}x)")
    for r in results:
        if r["diagnosis"] is None:
            continue
        d = r["diagnosis"]
        print(f"gpufeed's diagnosis of its last epoch ({d['kind']}): {d['sentence']}")


def main(argv):
    parser, args = parse_flags(argv)
    if "GPUFEED_LOG_LEVEL" not in os.environ:
        gpufeed.set_log_level("warn")  # its info lines describe each loader made
    device = resolve_device(parser, args.device)
    start = time.perf_counter()
    load_average = os.getloadavg()[0]
    train, val, data = dataset_folders(args)
    runs = make_runs(args, device, train, val)
    print(f"train_classifier.py: {len(runs[0].feed.dataset)} training images in "
          f"{len(runs[0].feed.dataset.classes)} classes from {train} -> "
          f"{args.image_size}x{args.image_size} | batch {args.batch_size} | {args.workers} "
          f"workers each | {args.epochs} epochs | Adam lr {args.lr} | {device} "
          f"({torch.get_num_threads()} torch threads, {len(os.sched_getaffinity(0))} CPUs)",
          flush=True)
    warm_up(args, device, len(runs[0].feed.dataset.classes))
    # Epoch by epoch, in turn (the order swapped every epoch), so that a drift in the machine's
    # speed (other jobs on it) touches both loaders alike.
    for epoch in range(args.epochs):
        for run in (runs if epoch % 2 == 0 else runs[::-1]):
            run.train_epoch(epoch)
    for run in runs:
        run.evaluate()
    results = [run.result() for run in runs]
    print_summary(results)
    ratio = speed_ratio(results)
    if args.json:
        report = dict(
            command=[Path(sys.executable).name, *sys.argv], commit=args.commit or git_commit(),
            machine=machine(load_average), device=str(device), data=data,
            settings=dict(epochs=args.epochs, batch_size=args.batch_size, workers=args.workers,
                          image_size=args.image_size, lr=args.lr, seed=args.seed,
                          full_decode=args.full_decode, torch_threads=torch.get_num_threads()),
            results=results, gpufeed_over_torch=ratio and dict(
                samples_per_s=ratio[0], median_of_epoch_ratios=ratio[1]),
            total_seconds=time.perf_counter() - start)
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except (gpufeed.SampleError, gpufeed.FileError, OSError, RuntimeError, ValueError) as e:
        print(f"train_classifier.py: error: {e}", file=sys.stderr)
        sys.exit(1)
