#!/usr/bin/env python3
"""gpufeed from Python vs gpufeed from C++ on the bundled datasets: the same dataset and
options, interleaved paired repeats. Goal: Python within 10% of C++ (median of the per-repeat
ratios Python / C++ at least 0.90) on every case.

C++ side: `gpufeed-bench compare --peers gpufeed --repeats 1` (one process per repeat; it builds
the dataset, then a fresh gpufeed::loader: --warmup untimed batches, then --batches timed ones,
releasing each batch at once; only that is timed). Python side, in this process: the same
dataset through gpufeed.datasets, then a fresh gpufeed.DataLoader per repeat with
shuffle=True, seed=0, the same workers and prefetch_depth (and chunk_window), timed the same
way; each batch becomes torch tensors (DLPack) and is dropped at once. Cases:

  synthetic   gpufeed's Synthetic: image uint8 [3, 64, 64] + label int64, --cpu-cost-us each
  memory      in-memory arrays of the same shape (C++: gpufeed::in_memory; Python: InMemory)
  hdf5        bench_hdf5.py's contiguous.h5 (workloads.make_h5_files)
  hdf5_chunked  its chunked.h5 (gzip), chunk-aware shuffle (chunk_window 16, 32 cached chunks)
  images      bench_images.py's JPEGs (workloads.make_images), random resized crop 224 + flip

  PYTHONPATH=build/python /usr/bin/python3 benchmarks/python/bench_vs_cpp.py [--bench build/bin/gpufeed-bench]
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paired  # noqa: E402
from workloads import make_h5_files, make_images  # noqa: E402

SIDE = 64


def cases(a):
    """name -> (gpufeed-bench arguments, Python dataset maker, loader options, timed batches)."""
    h5 = os.path.join(a.data, "hdf5")
    images = os.path.join(a.data, "images")
    n = a.samples

    def synthetic():
        import gpufeed

        return gpufeed.datasets.Synthetic(n, [("image", "uint8", [3, SIDE, SIDE]),
                                              ("label", "int64", [])],
                                          seed=0, cpu_cost_us=a.cpu_cost_us)

    def memory():
        import gpufeed

        rng = np.random.default_rng(0)
        return gpufeed.datasets.InMemory({
            "image": rng.integers(0, 256, (n, 3, SIDE, SIDE), dtype=np.uint8),
            "label": rng.integers(0, 1000, n).astype(np.int64)})

    def hdf5(name, window):
        import gpufeed

        return lambda: gpufeed.datasets.HDF5(os.path.join(h5, name), ["images", "labels"],
                                             cache_chunks=max(8, 2 * window))

    def image_folder():
        import gpufeed

        return gpufeed.datasets.ImageFolder(images, height=224, width=224,
                                            resize="random_resized_crop", horizontal_flip=True)

    size = ["--order", "shuffle", "--samples", str(n), "--sample-bytes", str(3 * SIDE * SIDE)]
    return {
        "synthetic": (["--dataset", "synthetic", "--cpu-cost-us", str(a.cpu_cost_us), *size],
                      synthetic, {}, a.batches["synthetic"]),
        "memory": (["--dataset", "memory", *size], memory, {}, a.batches["memory"]),
        "hdf5": (["--dataset", f"hdf5:{h5}/contiguous.h5:images,labels", "--order", "shuffle"],
                 hdf5("contiguous.h5", 0), {}, a.batches["hdf5"]),
        "hdf5_chunked": (["--dataset", f"hdf5:{h5}/chunked.h5:images,labels", "--order",
                          "chunk-aware", "--chunk-window", str(a.chunk_window)],
                         hdf5("chunked.h5", a.chunk_window), {"chunk_window": a.chunk_window},
                         a.batches["hdf5_chunked"]),
        "images": (["--dataset", f"images:{images}", "--order", "shuffle", "--image-size", "224"],
                   image_folder, {},
                   a.batches["images"]),
    }


def run_cpp(a, bench_args, batches):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        command = [a.bench, "compare", "--peers", "gpufeed", "--repeats", "1", "--warmup",
                   str(a.warmup), "--batches", str(batches), "--batch-size", str(a.batch_size),
                   "--workers", str(a.workers), "--prefetch-depth", str(a.prefetch_depth),
                   "--seed", "0", *bench_args, "--json", f.name]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr}")
        doc = json.load(open(f.name))
    row = doc["results"][0]
    return {"samples_per_s": row["samples_per_s"], "command": " ".join(command[1:])}


def run_python(a, data, options, batches):
    import gpufeed

    loader = gpufeed.DataLoader(data, batch_size=a.batch_size, shuffle=True, seed=0,
                                num_workers=a.workers, prefetch_depth=a.prefetch_depth, **options)
    try:
        return paired.timed(paired.endless(loader), a.warmup, batches, min_seconds=0)
    finally:
        loader.close()


def main():
    p = paired.parser(__doc__)
    p.add_argument("--bench", default=os.path.join(paired.REPO, "build", "bin", "gpufeed-bench"))
    p.add_argument("--samples", type=int, default=4096, help="synthetic and memory samples")
    p.add_argument("--cpu-cost-us", type=float, default=20.0)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--prefetch-depth", type=int, default=4)
    p.add_argument("--warmup", type=int, default=6,
                   help="untimed batches before each run (more than --prefetch-depth)")
    p.add_argument("--chunk-window", type=int, default=16)
    p.add_argument("--batches", default="synthetic=300,memory=3000,hdf5=3000,hdf5_chunked=100,"
                   "images=12", help="timed batches per case (both sides; gpufeed-bench takes "
                   "a fixed count, so each is about 0.3 s or more here)")
    p.add_argument("--cases", default="synthetic,memory,hdf5,hdf5_chunked,images")
    a = p.parse_args()
    a.batches = dict((k, int(v)) for k, v in (x.split("=") for x in a.batches.split(",")))

    make_h5_files(os.path.join(a.data, "hdf5"), 4096)
    make_images(os.path.join(a.data, "images"), 512, 8)
    results, goals = {}, []
    all_cases = cases(a)
    for name in a.cases.split(","):
        bench_args, make, options, batches = all_cases[name]
        print(f"== {name}")
        data = make()
        runners = {"cpp": lambda: run_cpp(a, bench_args, batches),
                   "python": lambda: run_python(a, data, options, batches)}
        r = paired.paired(runners, a.repeats, [("python", "cpp")])
        r["cpp_command"] = r["runs"]["cpp"][0]["command"]
        results[name] = r
        goals.append(paired.goal(f"{name}: Python >= 0.90 x C++", r["median_ratio"]["python/cpp"],
                                 0.90, "median of paired ratios"))
    config = {k: v for k, v in vars(a).items() if k not in ("out", "data")}
    config.update(order="shuffle, seed 0", python_output="torch tensors (DLPack)")
    paired.report("python_vs_cpp", config, results, goals, a.out)


if __name__ == "__main__":
    main()
