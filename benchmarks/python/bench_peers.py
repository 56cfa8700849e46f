#!/usr/bin/env python3
"""gpufeed.DataLoader against the loaders PyTorch users pick besides torch's own: torchdata's
StatefulDataLoader, torchdata.nodes (a map-style recipe on worker processes) and SPDL's
get_pytorch_dataloader (workloads.py says how each is made), with torch's DataLoader as the
reference; the same data, batch size and worker count, loader-only samples/s (batches moved to
--device), interleaved paired repeats, CPU time per sample of the whole process tree.

Cases (the datasets of the other Python benchmarks; workloads.make_dataset):
  Python datasets, the same object in every loader (gpufeed on worker processes):
    numpy    rows of a uint8 [N, 3, 128, 128] array and a label
    crop     a random-offset 128 px crop of a 160 px uint8 array, and a label
    folder   torchvision's ImageFolder, RandomResizedCrop + flip + ToTensor + Normalize
    h5py     the user's own h5py class, one row per __getitem__
  gpufeed working in C++ (gpufeed.datasets, on threads), the peers on the Python equivalent:
    hdf5          gpufeed.datasets.HDF5 / h5py, contiguous file
    hdf5_chunked  the same, chunked + gzip (both inflate a chunk per sample)
    hdf5_chunk_window  the chunked file, gpufeed with chunk_window=16 (cache_chunks=32): its
                  shuffle draws each stretch from 16 chunks, so that a chunk is inflated about
                  once per epoch (docs/datasets-hdf5.md); the peers as in hdf5_chunked
    images        gpufeed.datasets.ImageFolder(random_resized_crop, flip) / torchvision
                  ImageFolder with RandomResizedCrop + flip + PILToTensor (uint8, the same output)

Goals: ahead of each peer where gpufeed works in C++; on Python datasets no worse
than the best peer (per repeat: gpufeed over the fastest peer in that repeat; median >= 1.0).

  PYTHONPATH=/tmp/build-bench/python /tmp/venv-bench/bin/python \\
      benchmarks/python/bench_peers.py --repeats 7 --out docs/benchmarks/python-peers
  (a GPU machine: add --device cuda --workers 8)
"""

import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paired  # noqa: E402
import workloads  # noqa: E402

# case -> (the peers' dataset, gpufeed's dataset, gpufeed's loader options): the same name, the
# same object.
CASES = {"numpy": ("numpy", "numpy", {}), "crop": ("crop", "crop", {}),
         "folder": ("folder", "folder", {}), "h5py": ("h5py", "h5py", {}),
         "hdf5": ("h5py", "gpufeed_hdf5", {}),
         "hdf5_chunked": ("h5py_chunked", "gpufeed_hdf5_chunked", {}),
         "hdf5_chunk_window": ("h5py_chunked", "gpufeed_hdf5_chunk_window", {"chunk_window": 16}),
         "images": ("folder_u8", "gpufeed_images", {})}
PEERS = ("torch", "torchdata", "nodes", "spdl")


def main():
    p = paired.loader_parser(__doc__, batch_size=32)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--peers", default=",".join(PEERS))
    p.add_argument("--device", default=None, help="cuda: batches moved to the GPU")
    workloads.add_dataset_arguments(p)
    a = paired.parse(p)
    peers = a.peers.split(",")
    names = [n for n in workloads.FORKING if n in peers or n == "gpufeed"]
    convert = None if a.device in (None, "cpu") else (lambda b: workloads.to_device(b, a.device))
    results, goals, rows = {}, [], []
    for case in a.cases.split(","):
        peer_name, own_name, own_options = CASES[case]
        peer_data = workloads.make_dataset(peer_name, a)
        own_data = peer_data if own_name == peer_name else workloads.make_dataset(own_name, a)
        print(f"== {case}: peers on {peer_name}, gpufeed on {own_name}, {a.workers} workers")

        def make(n):
            if n == "gpufeed":
                return workloads.make_loader(n, own_data, a.batch_size, a.workers, a.device,
                                             **own_options)
            return workloads.make_loader(n, peer_data, a.batch_size, a.workers, a.device)

        r = paired.run_case(make, names, [("gpufeed", n) for n in peers], a, convert=convert)
        # gpufeed over the fastest peer of the same repeat.
        best = [g["samples_per_s"] / max(r["runs"][n][i]["samples_per_s"] for n in peers)
                for i, g in enumerate(r["runs"]["gpufeed"])]
        r["ratios"]["gpufeed/best_peer"] = best
        r["ratio_spread"]["gpufeed/best_peer"] = paired.spread(best)
        results[case] = r
        in_cpp = own_name != peer_name
        if in_cpp:
            for n in peers:
                k = f"gpufeed/{n}"
                goals.append(paired.goal(f"{case} (C++): gpufeed ahead of {n}",
                                         r["median_ratio"][k], 1.0, "median of paired ratios",
                                         spread_of=r["ratios"][k]))
        else:
            goals.append(paired.goal(f"{case} (Python): gpufeed no worse than the best peer",
                                     statistics.median(best), 1.0,
                                     "median of per-repeat gpufeed / fastest peer", spread_of=best))
        rows.append([case, "C++" if in_cpp else "Python"] +
                    [f"{r['median_samples_per_s'][n]:.0f}" for n in ["gpufeed"] + peers] +
                    [f"{r['median_ratio'][f'gpufeed/{n}']:.2f}" for n in peers] +
                    [f"{statistics.median(best):.2f} ({min(best):.2f}-{max(best):.2f})"] +
                    ["/".join(f"{r['median_cpu_ratio'][f'gpufeed/{n}']:.1f}" for n in peers)])
    print(f"\n{os.cpu_count()} cores, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"samples/s, loader only, {a.workers} workers, batch {a.batch_size}")
    cpu_header = f"CPU per sample {'/'.join(peers)} / gpufeed"
    paired.print_table(["case", "gpufeed in", "gpufeed"] + peers + [f"/{n}" for n in peers] +
                       ["/best peer (range)", cpu_header], rows)
    for g in goals:
        print(f"  {'met' if g['met'] else 'NOT met'}: {g['goal']}: {g['measured']} "
              f"(range {g['range'][0]}-{g['range'][1]})")
    config = {k: v for k, v in vars(a).items() if k not in ("out", "data")}
    config.update(cases={c: {"peers": p_, "gpufeed": g, "gpufeed_options": o}
                         for c, (p_, g, o) in CASES.items()},
                  loaders=workloads.__doc__.split("Loaders")[1].strip(), shuffle=True,
                  drop_last=True)
    paired.report("peers", config, results, goals, a.out)


if __name__ == "__main__":
    main()
