#!/usr/bin/env python3
"""HDF5: torch's DataLoader over an h5py dataset (the file opened lazily in __getitem__, once per
worker process, the common idiom) vs gpufeed.datasets.HDF5 in gpufeed.DataLoader (worker
threads), same file, batch size and worker count, shuffled, interleaved paired repeats. Goal:
gpufeed at least 10x torch (median of the per-repeat ratios), on both files:

  contiguous.h5  images uint8 [N, 64, 64, 3], labels int64 [N], contiguous storage
  chunked.h5     the same, chunked (64 rows per chunk) and gzip level 4

gpufeed runs twice: with a plain shuffle (shuffle=True, as torch reads) and, on the chunked
file, with the chunk-aware shuffle its documentation recommends (chunk_window=16,
cache_chunks=32: each chunk is inflated about once per epoch instead of once per sample).

  PYTHONPATH=build/python /usr/bin/python3 benchmarks/python/bench_hdf5.py [--repeats 5]
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paired  # noqa: E402


def make_files(folder, samples, side=64, chunk=64, seed=5):
    """contiguous.h5 and chunked.h5: smooth colour fields plus noise (gzip compresses them
    about as it compresses photographs' pixels; random bytes would not compress)."""
    import h5py

    done = os.path.join(folder, f".done-{samples}-{side}-{chunk}-{seed}")
    if os.path.exists(done):
        return
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:side, 0:side].astype(np.float32) / side
    images = np.empty((samples, side, side, 3), np.uint8)
    for i in range(samples):
        a, b, c = rng.random(3)
        base = np.stack([a * x + b * y, np.sin((i % 10 + 1) * 3.1 * x) * 0.5 + 0.5, c * (1 - y)],
                        axis=-1)
        noise = rng.normal(0.0, 0.03, base.shape)
        images[i] = np.clip((base + noise) * 255.0, 0, 255).astype(np.uint8)
    labels = rng.integers(0, 10, samples).astype(np.int64)
    with h5py.File(os.path.join(folder, "contiguous.h5"), "w") as f:
        f.create_dataset("images", data=images)
        f.create_dataset("labels", data=labels)
    with h5py.File(os.path.join(folder, "chunked.h5"), "w") as f:
        f.create_dataset("images", data=images, chunks=(chunk, side, side, 3),
                         compression="gzip", compression_opts=4)
        f.create_dataset("labels", data=labels, chunks=(chunk,), compression="gzip",
                         compression_opts=4)
    open(done, "w").close()


class H5Dataset:
    """What PyTorch users write: the file opened on first use in each worker process (an h5py
    handle does not survive fork), one sample per __getitem__."""

    def __init__(self, path):
        import h5py

        self.path = path
        self.file = None
        with h5py.File(path, "r") as f:
            self.length = len(f["labels"])

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        if self.file is None:
            import h5py

            self.file = h5py.File(self.path, "r")
            self.images, self.labels = self.file["images"], self.file["labels"]
        return self.images[index], self.labels[index]


def torch_loader(path, batch_size, workers):
    import torch

    return torch.utils.data.DataLoader(H5Dataset(path), batch_size=batch_size, shuffle=True,
                                       num_workers=workers, persistent_workers=True,
                                       pin_memory=torch.cuda.is_available(), drop_last=True)


def gpufeed_loader(path, batch_size, workers, chunk_window=0):
    import gpufeed

    data = gpufeed.datasets.HDF5(path, ["images", "labels"],
                                 cache_chunks=max(8, 2 * chunk_window))
    return gpufeed.DataLoader(data, batch_size=batch_size, shuffle=True, num_workers=workers,
                              persistent_workers=True, drop_last=True, chunk_window=chunk_window)


def main():
    p = paired.loader_parser(__doc__, batch_size=64)
    p.add_argument("--samples", type=int, default=4096)
    p.add_argument("--chunk-window", type=int, default=16)
    p.add_argument("--torch-batches", default="contiguous=20,chunked=3",
                   help="timed batches of torch per file")
    p.add_argument("--gpufeed-batches", default="contiguous=300,chunked=4")
    p.add_argument("--chunk-aware-batches", type=int, default=30)
    p.add_argument("--files", default="contiguous,chunked")
    a = paired.parse(p)

    folder = os.path.join(a.data, "hdf5")
    make_files(folder, a.samples)
    torch_batches = dict((k, int(v)) for k, v in (x.split("=") for x in a.torch_batches.split(",")))
    gpufeed_batches = dict((k, int(v)) for k, v in
                           (x.split("=") for x in a.gpufeed_batches.split(",")))
    results, goals = {}, []
    for name in a.files.split(","):
        print(f"== {name}")
        path = os.path.join(folder, f"{name}.h5")
        # torch's worker processes first: they fork before gpufeed's threads exist.
        loaders = {"torch": torch_loader(path, a.batch_size, a.workers)}
        streams = {"torch": paired.start(loaders["torch"], a.warmup)}
        loaders["gpufeed"] = gpufeed_loader(path, a.batch_size, a.workers)
        counts = {"gpufeed": gpufeed_batches[name], "torch": torch_batches[name]}
        ratios = [("gpufeed", "torch")]
        if name == "chunked":
            loaders["gpufeed_chunk_aware"] = gpufeed_loader(path, a.batch_size, a.workers,
                                                            a.chunk_window)
            counts["gpufeed_chunk_aware"] = a.chunk_aware_batches
            ratios.append(("gpufeed_chunk_aware", "torch"))
        for n in loaders:
            if n not in streams:
                streams[n] = paired.start(loaders[n], a.warmup)
        runners = {n: (lambda n=n: paired.timed(streams[n], a.warmup, counts[n]))
                   for n in streams}
        r = paired.paired(runners, a.repeats, ratios)
        for loader in loaders.values():
            if hasattr(loader, "close"):
                loader.close()
        results[name] = r
        best = ratios[-1][0]
        goals.append(paired.goal(f"{name}: {best} >= 10x torch", r["median_ratio"][f"{best}/torch"],
                                 10.0, "median of paired ratios"))
    config = {k: v for k, v in vars(a).items() if k not in ("out", "data")}
    config.update(sample="images uint8 [64, 64, 3] + labels int64", storage_chunk_rows=64,
                  gzip_level=4, shuffle=True, persistent_workers=True, pin_memory=False,
                  torch_dataset="h5py, file opened lazily in __getitem__ per worker")
    paired.report("hdf5", config, results, goals, a.out)


if __name__ == "__main__":
    main()
