"""gpufeed.DataLoader inside the programs people train with, run for real: Lightning on one
process and DDP on two CPU processes (fit, validate, test, predict, limit_train_batches), a
checkpoint taken mid-epoch and resumed in a new process; accelerate and transformers' Trainer
on two processes under torchrun, each also stopped mid-epoch and resumed.

The programs are the examples of examples/python: each writes, for each rank, the samples each
stage read. Every rank's samples must be disjoint, their union the dataset, each epoch
reshuffled, a resumed run free of repeats and gaps, and every process must exit within a few
seconds of its last step (a bound against hangs, not a timing check).
"""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python")
SAMPLES = 256
BATCH = 16
# From a program's last step to the end of its process (its launcher's, with several ranks).
EXIT_BOUND_S = 30


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(program, out, *args, torchrun=0):
    """Runs an example (under torchrun with `torchrun` processes); returns each rank's record,
    once every process has exited."""
    command = [sys.executable, os.path.join(EXAMPLES, program), "--record", str(out), *args]
    if torchrun:
        command[1:1] = ["-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node",
                        str(torchrun), "--master_port", str(_free_port()), "--max_restarts", "0"]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore::DeprecationWarning")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    ended = time.time()
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    records = [json.loads(p.read_text()) for p in sorted(out.glob("rank*.json"))]
    assert [r["rank"] for r in records] == list(range(len(records))), done.stderr[-4000:]
    for r in records:
        assert ended - r["finished_at"] < EXIT_BOUND_S, (
            f"rank {r['rank']} exited {ended - r['finished_at']:.0f} s after its last step")
    return records


def _epochs(records, stage):
    """{epoch: [each rank's samples]} of a stage."""
    epochs = {}
    for r in records:
        for epoch, samples in r["seen"].get(stage, {}).items():
            epochs.setdefault(int(epoch), []).append(samples)
    return epochs


def _assert_sharded(shares, world, n=SAMPLES):
    """Each rank read its own share once: disjoint, as large as the others', together all."""
    assert len(shares) == world
    for share in shares:
        assert len(share) == len(set(share)) == n // world
    assert sorted(i for share in shares for i in share) == list(range(n))


def _assert_resumed(first, second, world):
    """A run stopped mid-epoch and the run resumed from its checkpoint read each rank's share
    of that epoch exactly once between them, and the next epoch whole."""
    stopped, resumed = _epochs(first, "train"), _epochs(second, "train")
    assert list(stopped) == [0] and sorted(resumed) == [0, 1]
    assert all(0 < len(s) < SAMPLES // world for s in stopped[0])
    _assert_sharded([a + b for a, b in zip(stopped[0], resumed[0])], world)
    _assert_sharded(resumed[1], world)


# ---- Lightning ---------------------------------------------------------------------------------

@pytest.mark.timeout(900)
@pytest.mark.parametrize("devices", [1, 2])
def test_lightning_fit_validate_test_predict(tmp_path, devices):
    pytest.importorskip("lightning")
    strategy = ["--accelerator", "cpu", "--devices", str(devices)] + (
        ["--strategy", "ddp"] if devices > 1 else [])
    records = _run("with_lightning.py", tmp_path, *strategy)
    assert [r["world_size"] for r in records] == [devices] * devices
    train = _epochs(records, "train")
    assert sorted(train) == [0, 1]
    for shares in train.values():
        _assert_sharded(shares, devices)
    assert train[0][0] != train[1][0], "the second epoch was not reshuffled"
    for stage in ("validate", "test", "predict"):
        epochs = _epochs(records, stage)
        assert epochs, f"{stage} read nothing"
        for shares in epochs.values():
            _assert_sharded(shares, devices)


@pytest.mark.timeout(900)
def test_lightning_limit_train_and_val_batches(tmp_path):
    pytest.importorskip("lightning")
    records = _run("with_lightning.py", tmp_path, "--accelerator", "cpu", "--devices", "2",
                   "--strategy", "ddp", "--limit-train-batches", "3", "--limit-val-batches", "2")
    for stage, batches in (("train", 3), ("validate", 2)):
        epochs = _epochs(records, stage)
        assert sorted(epochs)[:2] == [0, 1], stage
        for shares in epochs.values():
            assert [len(s) for s in shares] == [batches * BATCH] * 2, stage
            assert not set(shares[0]) & set(shares[1]), stage
    # An epoch left after 3 batches does not hold the next one back: it starts afresh.
    train = _epochs(records, "train")
    assert train[0][0] != train[1][0]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("devices", [1, 2])
def test_lightning_resumes_mid_epoch_from_a_checkpoint(tmp_path, devices):
    pytest.importorskip("lightning")
    strategy = ["--accelerator", "cpu", "--devices", str(devices)] + (
        ["--strategy", "ddp"] if devices > 1 else [])
    checkpoint = str(tmp_path / "stopped.ckpt")
    first = _run("with_lightning.py", tmp_path / "first", *strategy, "--stop-after", "3",
                 "--checkpoint", checkpoint)
    second = _run("with_lightning.py", tmp_path / "second", *strategy, "--resume", checkpoint)
    _assert_resumed(first, second, devices)


def _cuda_devices():
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.timeout(900)
def test_lightning_on_gpus(tmp_path):
    """DDP on every GPU of the machine (one is enough), the batches delivered on each rank's
    device by gpufeed. Skipped where there is no GPU; scripts/device-check runs it."""
    pytest.importorskip("lightning")
    gpus = _cuda_devices()
    if gpus == 0:
        pytest.skip("no CUDA device: Lightning on GPUs runs in scripts/device-check")
    strategy = ["--accelerator", "gpu", "--devices", str(gpus)] + (
        ["--strategy", "ddp"] if gpus > 1 else [])
    records = _run("with_lightning.py", tmp_path, *strategy, "--samples", str(256 * gpus))
    for shares in _epochs(records, "train").values():
        _assert_sharded(shares, gpus, n=256 * gpus)


# ---- accelerate --------------------------------------------------------------------------------

SKIPPED_BATCHES = """
import sys, warnings
import torch
from accelerate import Accelerator
import gpufeed
sys.path.insert(0, sys.argv[1])
from points import Points

accelerator = Accelerator(cpu=True)
loader = accelerator.prepare(gpufeed.DataLoader(Points(64), batch_size=8, shuffle=True,
                                                num_workers=1))
assert isinstance(loader, gpufeed.DataLoader), type(loader)  # passed through, not rebuilt
whole = [b[2].tolist() for b in loader]
loader.set_epoch(0)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    rest = [b[2].tolist() for b in accelerator.skip_first_batches(loader, 3)]
assert rest == whole[3:], (rest, whole)
assert any("batch_sampler is being iterated outside" in str(w.message) for w in caught)
print("ok")
"""


@pytest.mark.timeout(300)
def test_accelerate_prepare_passes_the_loader_through_and_skips_batches(tmp_path):
    """One process: prepare() leaves a gpufeed loader as it is; skip_first_batches() reads the
    rest of the epoch (this process's share, in gpufeed's order), saying that torch reads it."""
    pytest.importorskip("accelerate")
    script = tmp_path / "skip.py"
    script.write_text(SKIPPED_BATCHES)
    done = subprocess.run([sys.executable, str(script), EXAMPLES], capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-4000:]


@pytest.mark.timeout(900)
def test_accelerate_on_two_processes_resumes_mid_epoch(tmp_path):
    pytest.importorskip("accelerate")
    whole = _run("with_accelerate.py", tmp_path / "whole", "--cpu", torchrun=2)
    for shares in _epochs(whole, "train").values():
        _assert_sharded(shares, 2)
    state = str(tmp_path / "state")
    first = _run("with_accelerate.py", tmp_path / "first", "--cpu", "--stop-after", "3",
                 "--state", state, torchrun=2)
    second = _run("with_accelerate.py", tmp_path / "second", "--cpu", "--resume", state,
                  torchrun=2)
    _assert_resumed(first, second, 2)


# ---- transformers' Trainer ---------------------------------------------------------------------

@pytest.mark.timeout(900)
def test_transformers_trainer_on_two_processes_resumes_mid_epoch(tmp_path):
    pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    output = tmp_path / "output"
    alone = _run("with_transformers.py", tmp_path / "alone", "--output", str(output))
    for shares in _epochs(alone, "train").values():
        _assert_sharded(shares, 1)
    whole = _run("with_transformers.py", tmp_path / "whole", "--output", str(output),
                 torchrun=2)
    train = _epochs(whole, "train")
    assert sorted(train) == [0, 1]
    for shares in train.values():
        _assert_sharded(shares, 2)
    first = _run("with_transformers.py", tmp_path / "first", "--output", str(output),
                 "--stop-after", "3", torchrun=2)
    second = _run("with_transformers.py", tmp_path / "second", "--output", str(output),
                  "--resume", str(output / "checkpoint-3"), torchrun=2)
    _assert_resumed(first, second, 2)
