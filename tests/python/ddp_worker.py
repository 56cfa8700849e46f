"""One rank of test_torchrun.py, started by torchrun: a DistributedSampler with set_epoch each
epoch; the builtin order sharded by torchrun's environment; a loader made before the process
group exists and read after, each rank's torch seeded differently; a sampler that does not
shard, refused; writes what it saw as JSON."""

import json
import os
import sys

import torch
import torch.distributed as dist
from torch.utils.data import DistributedSampler

import gpufeed


class Indices(torch.utils.data.Dataset):
    def __len__(self):
        return 90

    def __getitem__(self, i):
        return i


class Odd(Indices):
    def __len__(self):
        return 91


def main(out_dir):
    # Made before init_process_group, each rank's torch seeded differently (as DDP scripts do
    # for their augmentations), 91 samples (not a multiple of 2): read after it.
    torch.manual_seed(1000 + int(os.environ["RANK"]))
    early = gpufeed.DataLoader(Odd(), batch_size=8, shuffle=True, num_workers=1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    early_epochs = [[int(i) for b in early for i in b] for _ in range(2)]
    early_batches = len(early)
    try:
        gpufeed.DataLoader(Indices(), batch_size=8,
                           sampler=torch.utils.data.RandomSampler(Indices()))
        refused = ""
    except ValueError as e:
        refused = str(e)
    data = Indices()
    sampler = DistributedSampler(data, shuffle=True, seed=4)  # rank and world from the group
    loader = gpufeed.DataLoader(data, batch_size=8, sampler=sampler, num_workers=2)
    sampled = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        sampled.append([int(i) for b in loader for i in b])
    # No sampler: gpufeed shards its own order by RANK / WORLD_SIZE from torchrun.
    builtin = gpufeed.DataLoader(data, batch_size=8, shuffle=True, seed=4)
    sharded = [int(i) for b in builtin for i in b]
    resolved = builtin._core.resolved
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump({"sampled": sampled, "sharded": sharded, "rank": resolved["rank"],
                   "world_size": resolved["world_size"], "early": early_epochs,
                   "early_batches": early_batches, "early_seed": early.seed,
                   "refused": refused}, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
