"""Two real processes started by torchrun (gloo): a DistributedSampler with set_epoch,
gpufeed's own order sharded by torchrun's environment, and by the process group for a loader
made before it, with ranks whose torch generators differ; a sampler that does not shard."""

import json
import os
import socket
import subprocess
import sys

import pytest


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_ranks_under_torchrun_are_disjoint_complete_and_reshuffled(tmp_path):
    pytest.importorskip("torch.distributed.run")
    here = os.path.dirname(__file__)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    # torchrun 1.13 spells its options with underscores; "--redirects 1 --tee 1": Debian 12's
    # torchrun 1.13 on Python 3.11 cannot parse its own defaults for them.
    command = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1",
               "--nproc_per_node", "2", "--master_port", str(free_port()), "--max_restarts", "0",
               "--redirects", "1", "--tee", "1", os.path.join(here, "ddp_worker.py"),
               str(tmp_path)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    assert [r["rank"] for r in ranks] == [0, 1] and all(r["world_size"] == 2 for r in ranks)
    for epoch in range(2):
        a, b = ranks[0]["sampled"][epoch], ranks[1]["sampled"][epoch]
        assert not set(a) & set(b) and sorted(a + b) == list(range(90))
    assert ranks[0]["sampled"][0] != ranks[0]["sampled"][1]
    a, b = ranks[0]["sharded"], ranks[1]["sharded"]
    assert not set(a) & set(b) and sorted(a + b) == list(range(90))
    # Made before init_process_group, read after: each rank its own share of the 91 samples
    # (rank 1 reads its first sample again: as many batches as rank 0), one seed on both.
    assert ranks[0]["early_seed"] == ranks[1]["early_seed"]
    assert ranks[0]["early_batches"] == ranks[1]["early_batches"] == 6
    for epoch in range(2):
        a, b = ranks[0]["early"][epoch], ranks[1]["early"][epoch]
        assert len(a) == len(b) == 46
        assert not set(a) & set(b) and set(a) | set(b) == set(range(91))
    assert ranks[0]["early"][0] != ranks[0]["early"][1]
    for r in ranks:
        assert "sampler=RandomSampler gives the same order to each of the 2" in r["refused"]
