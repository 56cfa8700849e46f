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


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paired  # noqa: E402
from workloads import H5Dataset, make_h5_files  # noqa: E402


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
    make_h5_files(folder, a.samples)
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
