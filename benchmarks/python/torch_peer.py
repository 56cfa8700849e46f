#!/usr/bin/env python3
"""The torch_python peer of `gpufeed-bench compare`: torch.utils.data.DataLoader as its users
write it, on the same data, batch size and workers as gpufeed.

Run by gpufeed-bench with Debian's /usr/bin/python3 (torch, h5py, numpy; PIL and torchvision for
images). Prints one JSON line: {"loader": "torch_python", "seconds": ..., "batches": ...,
"samples": ..., "bytes": ..., "skipped": ..., ...}; on a missing module it prints
{"error": "..."} and exits with status 3.

Datasets:
  synthetic        fields image uint8 SHAPE and label int64; each __getitem__ makes the bytes with
                   numpy (a splitmix64 hash per 8 bytes) and burns --cpu-cost-us of CPU.
  memory           the synthetic content made once (numpy) and held as two tensors in a
                   torch.utils.data.TensorDataset, as PyTorch users hold in-memory data.
  hdf5:PATH[:a,b]  h5py, one file handle per worker process, opened lazily in __getitem__; the
                   fields are the named datasets, else every top-level dataset whose first
                   dimension is the sample count, in name order.
  images:DIR       torchvision's ImageFolder layout, PIL decode, RandomResizedCrop(SIZE),
                   RandomHorizontalFlip, PILToTensor (uint8), as a torchvision user writes it.
"""

import argparse
import json
import os
import sys
import time


def fail(message):
    print(json.dumps({"loader": "torch_python", "error": message}), flush=True)
    sys.exit(3)


try:
    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset
except ImportError as e:  # pragma: no cover - depends on the machine
    fail(f"{sys.executable}: {e}")


class SyntheticDataset(Dataset):
    def __init__(self, samples, shape, cpu_cost_us, seed):
        self.samples = samples
        self.shape = tuple(shape)
        self.nbytes = int(np.prod(self.shape))
        self.words = (self.nbytes + 7) // 8
        self.cost_s = cpu_cost_us * 1e-6
        self.seed = np.uint64(seed)

    def __len__(self):
        return self.samples

    def __getitem__(self, index):
        if self.cost_s > 0:
            until = time.perf_counter() + self.cost_s
            while time.perf_counter() < until:
                pass
        # splitmix64 of (seed, index, word): pseudo-random bytes like gpufeed::synthetic's.
        z = splitmix_rows(self.seed, np.array([index]), self.words + 1)[0]
        image = z[: self.words].view(np.uint8)[: self.nbytes].reshape(self.shape)
        label = np.int64(z[self.words].view(np.int64))
        return torch.from_numpy(image.copy()), torch.tensor(label)


def hdf5_fields(path, names):
    import h5py

    with h5py.File(path, "r") as f:
        if names:
            return names, f[names[0]].shape[0]
        top = sorted(k for k in f.keys() if isinstance(f[k], h5py.Dataset) and f[k].ndim >= 1)
        counts = {}
        for k in top:
            counts[f[k].shape[0]] = counts.get(f[k].shape[0], 0) + 1
        if not counts:
            raise ValueError(f"{path}: no top-level dataset with a first dimension")
        n = max(counts.items(), key=lambda kv: (kv[1], -list(counts).index(kv[0])))[0]
        return [k for k in top if f[k].shape[0] == n], n


def splitmix_rows(seed, indices, words):
    """[len(indices), words] uint64 of splitmix64(seed, index, word), made at once."""
    with np.errstate(over="ignore"):
        base = (np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)) ^ (
            np.asarray(indices, dtype=np.uint64)[:, None] << np.uint64(20))
        z = np.arange(words, dtype=np.uint64)[None, :] + base
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return z


def memory_dataset(samples, shape, seed):
    from torch.utils.data import TensorDataset

    nbytes = int(np.prod(shape))
    words = (nbytes + 7) // 8
    images = np.empty((samples, nbytes), dtype=np.uint8)
    labels = np.empty(samples, dtype=np.int64)
    for start in range(0, samples, 4096):
        # The absolute indices go into the hash, so every row differs (not only within a block).
        z = splitmix_rows(seed, np.arange(start, min(samples, start + 4096)), words + 1)
        images[start:start + len(z)] = z[:, :words].view(np.uint8)[:, :nbytes]
        labels[start:start + len(z)] = z[:, words].view(np.int64)
    return TensorDataset(torch.from_numpy(images.reshape((samples,) + tuple(shape))),
                         torch.from_numpy(labels))


class H5Dataset(Dataset):
    """One h5py file handle per worker process, opened on the worker's first __getitem__."""

    def __init__(self, path, names):
        self.path = path
        self.names, self.samples = hdf5_fields(path, names)
        self.file = None
        self.datasets = None

    def __len__(self):
        return self.samples

    def __getitem__(self, index):
        if self.file is None:
            import h5py

            self.file = h5py.File(self.path, "r")
            self.datasets = [self.file[n] for n in self.names]
        return tuple(torch.from_numpy(np.asarray(d[index])) for d in self.datasets)


def image_dataset(root, size):
    try:
        from torchvision import datasets, transforms
    except ImportError as e:
        fail(f"images need torchvision: {e}")
    transform = transforms.Compose(
        [
            transforms.RandomResizedCrop(size),
            transforms.RandomHorizontalFlip(),
            transforms.PILToTensor(),
        ]
    )
    return datasets.ImageFolder(root, transform=transform)


class Skipping(Dataset):
    """--on-error skip: a failing sample becomes None and the collate leaves it out."""

    def __init__(self, inner):
        self.inner = inner

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, index):
        try:
            return self.inner[index]
        except Exception:  # noqa: BLE001 - skipping any bad sample is the point
            return None


def skipping_collate(batch):
    kept = [s for s in batch if s is not None]
    skipped = len(batch) - len(kept)
    if not kept:
        return None, skipped
    return torch.utils.data.default_collate(kept), skipped


def batch_samples(batch):
    first = batch[0] if isinstance(batch, (list, tuple)) else batch
    return int(first.shape[0])


def batch_bytes(batch):
    parts = batch if isinstance(batch, (list, tuple)) else [batch]
    return sum(int(t.numel()) * t.element_size() for t in parts)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dataset", default="synthetic")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--prefetch-factor", type=int, default=2)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--batches", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--on-error", choices=["raise", "skip"], default="raise")
    p.add_argument("--samples", type=int, default=50000)
    p.add_argument("--shape", default="3,64,64")
    p.add_argument("--cpu-cost-us", type=float, default=0.0)
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--probe", action="store_true", help="print versions and exit")
    a = p.parse_args()

    info = {"loader": "torch_python", "python": sys.version.split()[0], "torch": torch.__version__,
            "numpy": np.__version__}
    if a.probe:
        print(json.dumps(info), flush=True)
        return

    if a.dataset == "synthetic":
        shape = [int(s) for s in a.shape.split(",")]
        data = SyntheticDataset(a.samples, shape, a.cpu_cost_us, a.seed)
    elif a.dataset == "memory":
        data = memory_dataset(a.samples, [int(s) for s in a.shape.split(",")], a.seed)
    elif a.dataset.startswith("hdf5:"):
        rest = a.dataset[5:]
        names = []
        colon = rest.rfind(":")
        if colon > 0 and "/" not in rest[colon:]:
            names = rest[colon + 1:].split(",")
            rest = rest[:colon]
        import h5py

        info["h5py"] = h5py.__version__
        data = H5Dataset(rest, names)
    elif a.dataset.startswith("images:"):
        data = image_dataset(a.dataset[7:], a.image_size)
        import torchvision

        info["torchvision"] = torchvision.__version__
    else:
        fail(f"unknown --dataset {a.dataset}")

    skip = a.on_error == "skip"
    if skip:
        data = Skipping(data)
    torch.manual_seed(a.seed)
    loader = DataLoader(
        data,
        batch_size=a.batch_size,
        shuffle=True,
        num_workers=a.workers,
        persistent_workers=a.workers > 0,
        prefetch_factor=a.prefetch_factor if a.workers > 0 else 2,
        collate_fn=skipping_collate if skip else None,
    )

    epochs = 0
    it = None

    def take(count, counted, totals):
        nonlocal it, epochs
        for _ in range(count):
            batch = None
            while batch is None:
                if it is None:
                    it = iter(loader)
                    epochs += 1
                try:
                    batch = next(it)
                except StopIteration:
                    it = None
                    continue
            skipped = 0
            if skip:
                batch, skipped = batch
            if counted:
                totals["skipped"] += skipped
                if batch is not None:
                    totals["batches"] += 1
                    totals["samples"] += batch_samples(batch)
                    totals["bytes"] += batch_bytes(batch)

    warm = {"batches": 0, "samples": 0, "bytes": 0, "skipped": 0}
    take(a.warmup, False, warm)
    totals = {"batches": 0, "samples": 0, "bytes": 0, "skipped": 0}
    start = time.perf_counter()
    take(a.batches, True, totals)
    seconds = time.perf_counter() - start
    info.update(totals)
    info.update({"seconds": seconds, "epochs_started": epochs, "workers": a.workers,
                 "torch_threads": torch.get_num_threads(), "pid": os.getpid()})
    print(json.dumps(info), flush=True)


if __name__ == "__main__":
    main()
