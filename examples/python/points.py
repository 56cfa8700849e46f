"""The small dataset the framework examples train on, and the record of which samples each rank
read (``--record DIR``: what tests/python/test_frameworks.py checks)."""

import argparse
import json
import os
import time

import torch


class Points(torch.utils.data.Dataset):
    """Sample i: eight features drawn from seed i, their sum as the target, and i itself, so that
    a run can say which samples it read. ``as_dict``: the sample as a dict, as transformers'
    Trainer passes it to the model (``x``, ``labels``, ``index``)."""

    def __init__(self, n, as_dict=False):
        self.n, self.as_dict = n, as_dict

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        x = torch.randn(8, generator=torch.Generator().manual_seed(i))
        if self.as_dict:
            return {"x": x, "labels": x.sum(), "index": i}
        return x, x.sum(), i


def example_arguments(description, stop_after):
    """The examples' arguments: the run's size, the stop mid-epoch (``--stop-after``, with
    `stop_after` saying what is saved) and ``--record``."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--samples", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--stop-after", type=int, default=0, help=stop_after)
    p.add_argument("--record", help="a folder for what each rank read, as JSON")
    return p


def write_record(folder, rank, world_size, seen):
    """Writes FOLDER/rank<RANK>.json: ``seen`` ({stage: {epoch: [sample indices]}}) and when the
    program finished (its process must end within seconds of it)."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"rank{rank}.json"), "w") as f:
        json.dump({"rank": rank, "world_size": world_size, "seen": seen,
                   "finished_at": time.time()}, f)
