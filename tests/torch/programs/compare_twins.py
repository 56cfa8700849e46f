#!/usr/bin/env python3
"""Runs one program's two builds (libtorch's loader, gpufeed's) and compares what they print.

--order exact: the outputs must be the same text (same batches in the same order).
--order shuffled: per epoch, the same batch lines (sizes, dtypes, shapes) in the same order and
the same samples, in any order and any batch (the sampler shuffles with its own generator).
Lines other than "epoch", "batch" and "sample" lines must match exactly in both modes.
Exit status 1, with the first difference, when they do not match.
"""

import argparse
import collections
import subprocess
import sys


def run(program):
    done = subprocess.run([program], capture_output=True, text=True, timeout=240, check=False)
    if done.returncode != 0:
        sys.exit(f"{program} failed with status {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout.splitlines()


def epochs(lines):
    """(other lines, batch lines, samples) per epoch, in order."""
    out = []
    for line in lines:
        if line.startswith("epoch ") or not out:
            out.append(([], [], collections.Counter()))
        others, batches, samples = out[-1]
        if line.startswith("batch "):
            batches.append(line)
        elif line.startswith("sample "):
            samples[line] += 1
        else:
            others.append(line)
    return out


def first_difference(want, got):
    for n, (a, b) in enumerate(zip(want, got)):
        if a != b:
            return f"line {n + 1}: libtorch printed\n  {a}\nbut gpufeed printed\n  {b}"
    return f"libtorch printed {len(want)} lines, gpufeed {len(got)}"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--libtorch", required=True, help="the build against torch::data")
    parser.add_argument("--gpufeed", required=True, help="the build against gpufeed::torch")
    parser.add_argument("--order", choices=["exact", "shuffled"], required=True)
    args = parser.parse_args()
    want, got = run(args.libtorch), run(args.gpufeed)
    if not any(line.startswith("sample ") for line in want):
        sys.exit("the libtorch build printed no sample: nothing was compared")
    if args.order == "exact":
        if want != got:
            sys.exit(first_difference(want, got))
    else:
        want_epochs, got_epochs = epochs(want), epochs(got)
        if len(want_epochs) != len(got_epochs):
            sys.exit(f"libtorch printed {len(want_epochs)} epochs, gpufeed {len(got_epochs)}")
        for n, (a, b) in enumerate(zip(want_epochs, got_epochs)):
            for what, x, y in (("lines", a[0], b[0]), ("batches", a[1], b[1])):
                if x != y:
                    sys.exit(f"epoch part {n}, {what}: " + first_difference(x, y))
            if a[2] != b[2]:
                missing = list((a[2] - b[2]).elements())[:3]
                extra = list((b[2] - a[2]).elements())[:3]
                sys.exit(f"epoch part {n}: the samples differ; libtorch's only: {missing}; "
                         f"gpufeed's only: {extra}")
    print(f"the same {sum(1 for line in want if line.startswith('sample '))} samples "
          f"({args.order} order)")


if __name__ == "__main__":
    main()
