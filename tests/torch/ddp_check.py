#!/usr/bin/env python3
"""Runs examples/train_ddp under torchrun with several ranks on the CPU and checks the result.

- Sharding: in every epoch the ranks' samples are disjoint, together they are the whole dataset
  (the loader keeps a short last batch, so no sample is dropped), and rank r has
  ceil((N - r) / W) of them. With --chunk, each rank's samples come from its own run of storage
  chunks (the chunk-aware shuffle gives contiguous shards), not from every chunk.
- Gradient averaging: the ranks' weights are bitwise equal after the first step and at the end
  (each rank trains on different samples, so they differ unless the gradients are averaged), the
  weights moved between the two, and the loss went down.

Usage: ddp_check.py --torchrun /usr/bin/torchrun --program build/bin/train_ddp --workdir DIR
Exit status 0 when every check passes, 1 with the failures listed otherwise. Standard library
only.
"""
import argparse
import os
import re
import shutil
import socket
import subprocess
import sys


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_indices(path):
    """{epoch: [indices in order]} from one rank's --dump-indices file."""
    epochs = {}
    with open(path) as f:
        for line in f:
            fields = [int(v) for v in line.split()]
            if fields:
                epochs[fields[0]] = fields[1:]
    return epochs


def read_weights(path):
    """{parameter: [values as written]}: the text is compared, so equality is bitwise."""
    weights = {}
    with open(path) as f:
        for line in f:
            name, count, *values = line.split()
            if int(count) != len(values):
                raise ValueError(f"{path}: {name} says {count} values, has {len(values)}")
            weights[name] = values
    return weights


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torchrun", required=True)
    parser.add_argument("--program", required=True, help="the train_ddp executable")
    parser.add_argument("--workdir", required=True, help="where the dumps go (emptied first)")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--samples", type=int, default=1025)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=0)
    parser.add_argument("--chunk-window", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120)
    args = parser.parse_args()

    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    indices_prefix = os.path.join(args.workdir, "indices")
    weights_prefix = os.path.join(args.workdir, "weights")
    world = args.nproc
    # torchrun 1.13 spells its options with underscores only (2.x takes both spellings). The
    # default static rendezvous on a free port: torchrun's own store serves the ranks too.
    # "--redirects 1 --tee 1" (workers' stdout to a log file and to ours, lines prefixed with
    # "[default<rank>]:"): Debian 12's torchrun 1.13 on Python 3.11 cannot parse its default
    # "0" for either (Std.from_str returns None for the zero flag) and fails before it starts.
    command = [
        args.torchrun, "--nnodes", "1", "--nproc_per_node", str(world),
        "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
        "--max_restarts", "0", "--redirects", "1", "--tee", "1",
        "--log_dir", os.path.join(args.workdir, "logs"), "--no_python", args.program,
        "--samples", str(args.samples), "--batch-size", str(args.batch_size),
        "--epochs", str(args.epochs), "--chunk", str(args.chunk),
        "--chunk-window", str(args.chunk_window), "--workers", "1", "--backend", "gloo",
        "--timeout", "60", "--seed", "7",
        "--dump-indices", indices_prefix, "--dump-weights", weights_prefix,
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    print("$ " + " ".join(command), flush=True)
    run = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=args.timeout, check=False)
    print(run.stdout, flush=True)
    if run.returncode != 0:
        print(f"FAIL: torchrun exited with {run.returncode}")
        return 1

    failures = []

    def check(ok, message):
        print(("ok:   " if ok else "FAIL: ") + message)
        if not ok:
            failures.append(message)

    n = args.samples
    ranks = [read_indices(f"{indices_prefix}.rank{r}.txt") for r in range(world)]
    for epoch in range(args.epochs):
        shards = [rank.get(epoch, []) for rank in ranks]
        sizes = [len(s) for s in shards]
        # Every rank reads as many samples (as many batches): the ranks with a sample fewer
        # read their own first sample again.
        expected = [(n + world - 1) // world] * world
        check(sizes == expected, f"epoch {epoch}: shard sizes {sizes} == {expected}")
        check(all(len(set(s)) == (n - r + world - 1) // world for r, s in enumerate(shards)),
              f"epoch {epoch}: a rank sees a sample twice only where it has one fewer")
        check(all(len(set(s)) == len(s) or s[-1] == s[0] for s in shards),
              f"epoch {epoch}: the sample read twice is the rank's first")
        seen = set()
        overlap = 0
        for s in shards:
            overlap += len(seen & set(s))
            seen |= set(s)
        check(overlap == 0, f"epoch {epoch}: ranks are disjoint ({overlap} samples shared)")
        missing = set(range(n)) - seen
        check(not missing and seen <= set(range(n)),
              f"epoch {epoch}: the ranks together cover all {n} samples "
              f"({len(missing)} missing)")
        check(shards[0] != sorted(shards[0]), f"epoch {epoch}: rank 0's order is shuffled")
        if args.chunk > 1:
            touched = [len({i // args.chunk for i in s}) for s in shards]
            chunks = (n + args.chunk - 1) // args.chunk
            # Contiguous shards share at most the window a boundary cuts (+ the short tail
            # chunk); interleaved ones would each touch almost every chunk.
            bound = chunks + (world - 1) * (args.chunk_window + 1)
            check(sum(touched) <= bound,
                  f"epoch {epoch}: chunk-aware shards touch {touched} of {chunks} chunks "
                  f"(sum <= {bound})")
    if args.epochs > 1:
        check(ranks[0].get(0) != ranks[0].get(1), "epochs 0 and 1 have different orders")

    for stage, suffix in (("after step 1", ".step1.txt"), ("at the end", ".txt")):
        weights = [read_weights(f"{weights_prefix}.rank{r}{suffix}") for r in range(world)]
        for r in range(1, world):
            differing = sorted(k for k in weights[0] if weights[r].get(k) != weights[0][k])
            check(weights[r].keys() == weights[0].keys() and not differing,
                  f"{stage}: rank {r}'s weights are bitwise rank 0's "
                  f"(differing: {differing or 'none'})")
    first = read_weights(f"{weights_prefix}.rank0.step1.txt")
    final = read_weights(f"{weights_prefix}.rank0.txt")
    check(first != final, "the weights changed after step 1")

    # Rank 0's "epoch E: ... mean loss L" lines (prefixed "[default0]:" by --tee).
    epoch_line = re.compile(r"^(?:\[\w+\]:)?epoch \d+: .*mean loss (\S+)$", re.M)
    losses = [float(v) for v in epoch_line.findall(run.stdout)]
    check(len(losses) == args.epochs and losses[-1] < losses[0],
          f"the loss went down: {losses}")

    print("PASS" if not failures else f"FAILED: {len(failures)} check(s)")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
