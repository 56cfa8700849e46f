#!/usr/bin/env python3
"""GIL scaling: Python datasets read by gpufeed.DataLoader's worker threads
(worker_type="thread"; processes are the default for Python datasets), 1, 2, 4 and 8
workers, on work that releases the GIL and on pure-Python work (about 1 ms per sample each):

  numpy        elementwise ops on a 1 MiB float32 array (numpy drops the GIL in the loop)
  pil_decode   PIL decodes a 400-500 px JPEG held in memory (workloads.make_images's files)
  file_read    reads a 4 MiB file (page cache) with open().read()
  pure_python  a Python loop of integer arithmetic (holds the GIL throughout)

Reports samples/s per worker count (median over the repeats, which interleave the worker
counts), the scaling against 1 worker (median of the per-repeat ratios), and what
loader.diagnose() says after each run; from 2 workers up, the pure-Python case should be
"gil_bound" and the others should not.
On an N-core machine, GIL-free work can scale up to about N x; pure Python cannot pass 1 x.

  PYTHONPATH=build/python /usr/bin/python3 benchmarks/python/bench_gil.py [--repeats 3]
"""

import glob
import io
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paired  # noqa: E402
from workloads import make_images  # noqa: E402


class NumpyWork:
    def __init__(self, samples):
        self.samples = samples
        self.base = np.random.default_rng(1).random((512, 512), dtype=np.float32)

    def __len__(self):
        return self.samples

    def __getitem__(self, index):
        x = np.sqrt(self.base * np.float32(1.0 + index * 1e-6) + np.float32(1.0))
        np.exp(x, out=x)
        return x[0, :16].copy(), index


class PilDecode:
    def __init__(self, samples, folder):
        self.samples = samples
        self.jpegs = [open(f, "rb").read() for f in sorted(glob.glob(f"{folder}/*/*.jpg"))[:64]]

    def __len__(self):
        return self.samples

    def __getitem__(self, index):
        from PIL import Image

        image = Image.open(io.BytesIO(self.jpegs[index % len(self.jpegs)])).convert("RGB")
        return np.asarray(image)[:32, :32].copy(), index


class FileRead:
    def __init__(self, samples, folder, files=16, size=4 << 20):
        self.samples = samples
        os.makedirs(folder, exist_ok=True)
        self.paths = [os.path.join(folder, f"{i:02d}.bin") for i in range(files)]
        for p in self.paths:
            if not os.path.exists(p) or os.path.getsize(p) != size:
                with open(p, "wb") as f:
                    f.write(np.random.default_rng(2).bytes(size))

    def __len__(self):
        return self.samples

    def __getitem__(self, index):
        with open(self.paths[index % len(self.paths)], "rb") as f:
            data = f.read()
        return np.frombuffer(data[:16], np.uint8).copy(), index


class PurePython:
    def __init__(self, samples, loops=15000):
        self.samples = samples
        self.loops = loops

    def __len__(self):
        return self.samples

    def __getitem__(self, index):
        s = index
        for i in range(self.loops):
            s = (s * 31 + i) % 1000003
        return np.full(16, s, np.int64), index


def main():
    p = paired.parser(__doc__, repeats=3)
    p.add_argument("--workers", default="1,2,4,8")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--samples", type=int, default=4096, help="dataset length")
    p.add_argument("--batches", type=int, default=24, help="timed batches per run")
    p.add_argument("--cases", default="numpy,pil_decode,file_read,pure_python")
    a = p.parse_args()
    import gpufeed

    make_images(os.path.join(a.data, "images"), 512, 8)
    makers = {"numpy": lambda: NumpyWork(a.samples),
              "pil_decode": lambda: PilDecode(a.samples, os.path.join(a.data, "images")),
              "file_read": lambda: FileRead(a.samples, os.path.join(a.data, "files")),
              "pure_python": lambda: PurePython(a.samples)}
    counts = [int(w) for w in a.workers.split(",")]
    results, goals = {}, []
    for case in a.cases.split(","):
        print(f"== {case}")
        data = makers[case]()
        diagnoses = {w: [] for w in counts}

        def run(workers, data=data, diagnoses=diagnoses):
            loader = gpufeed.DataLoader(data, batch_size=a.batch_size, shuffle=True, seed=0,
                                        num_workers=workers, worker_type="thread")
            try:
                out = paired.timed(paired.endless(loader), paired.warmup_batches(workers),
                                   a.batches)
                d = loader.diagnose()
                diagnoses[workers].append({"kind": d.kind, "sentence": d.sentence})
                out["diagnosis"] = d.kind
                return out
            finally:
                loader.close()

        runners = {f"w{w}": (lambda w=w: run(w)) for w in counts}
        r = paired.paired(runners, a.repeats, [(f"w{w}", f"w{counts[0]}") for w in counts[1:]])
        r["diagnoses"] = {f"w{w}": d for w, d in diagnoses.items()}
        for w in counts:
            kinds = sorted({d["kind"] for d in diagnoses[w]})
            print(f"  {w} workers: diagnose() -> {', '.join(kinds)}")
        results[case] = r
    # With one worker nothing contends for the GIL but the consumer: judge from 2 workers up.
    def share(case, kind):
        runs = [d["kind"] for w, ds in results[case]["diagnoses"].items() if int(w[1:]) >= 2
                for d in ds]
        return runs.count(kind) / len(runs)

    if "pure_python" in results:
        goals.append(paired.goal("pure_python, 2+ workers: diagnose() says gil_bound",
                                 share("pure_python", "gil_bound"), 1.0,
                                 "share of the runs with 2 or more workers"))
    for case in results:
        if case != "pure_python":
            goals.append(paired.goal(f"{case}, 2+ workers: diagnose() does not say gil_bound",
                                     1.0 - share(case, "gil_bound"), 1.0,
                                     "share of the runs with 2 or more workers"))
    config = {k: v for k, v in vars(a).items() if k not in ("out", "data")}
    config.update(loader="gpufeed.DataLoader, worker threads, shuffle, default prefetch")
    paired.report("gil_scaling", config, results, goals, a.out)


if __name__ == "__main__":
    main()
