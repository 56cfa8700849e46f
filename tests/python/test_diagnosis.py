"""gpufeed.DataLoader's statistics, diagnosis and trace: the GIL named when Python work serializes
the workers (and not when a dataset releases it), autotune, and write_trace before the first
batch."""

import time

import numpy as np
import pytest
import torch
from torch.utils.data import RandomSampler

import gpufeed
from samples import WORKER_TYPES, Indices, indices_of


def test_diagnosis_and_stats_are_there():
    loader = gpufeed.DataLoader(gpufeed.datasets.Synthetic(400, [("x", "float32", [16])]),
                                batch_size=8, num_workers=2)
    batches = sum(1 for _ in loader)
    stats = loader.stats()
    assert stats["batches"] == batches == 50 and stats["samples"] == 400
    d = loader.diagnose()
    assert d.kind and d.sentence and str(d) == d.sentence


def test_the_diagnosis_names_the_gil_when_python_work_serializes_the_workers():
    class PurePython(torch.utils.data.Dataset):
        def __len__(self):
            return 240

        def __getitem__(self, i):
            total = 0
            for k in range(20_000):  # bytecode: holds the GIL throughout
                total += k * i
            return np.int64(total % 7)

    loader = gpufeed.DataLoader(PurePython(), batch_size=4, num_workers=4, worker_type="thread")
    for _ in loader:
        pass
    d = loader.diagnose()
    assert d.kind == "gil_bound", d
    assert "GIL" in d.sentence and "gpufeed.datasets" in d.sentence
    assert d.sentence.endswith(".)")  # the core's own sentence, whole, after it
    times = loader._native_dataset.gil_times()
    assert times["reads"] >= 240 and times["wait_s"] > 0  # workers run ahead into epoch 1


class HoldsTheGil(torch.utils.data.Dataset):
    """About a millisecond of bytecode per sample: the reading thread holds the GIL."""

    def __len__(self):
        return 800

    def __getitem__(self, i):
        total = 0
        for k in range(20_000):
            total += k ^ i
        return np.int64(total % 5)


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_worker_threads_holding_the_gil_are_named_even_without_a_data_wait(worker_type):
    # The loop's "GPU step" releases the GIL and is long enough for the workers to keep up, so
    # the loop hardly waits for data (the core alone says gpu_bound); but worker threads hold
    # the GIL for much of the run, which the loop's own Python waits for.
    loader = gpufeed.DataLoader(HoldsTheGil(), batch_size=8, num_workers=2, prefetch_depth=8,
                                worker_type=worker_type)
    for _ in loader:
        time.sleep(0.01)
    d = loader.diagnose()
    if worker_type == "thread":
        assert d.kind == "gil_bound", d
        assert "held Python's GIL" in d.sentence and "worker_type='process'" in d.sentence
    else:  # each worker process has a GIL of its own
        assert d.kind != "gil_bound", d


def test_autotune_lets_gpufeed_choose_workers_and_depth():
    loader = gpufeed.DataLoader(Indices(300), batch_size=6, shuffle=True, seed=2, autotune=True)
    assert sorted(indices_of(loader)) == list(range(300))
    stats = loader.stats()
    assert stats["autotuned"] and stats["worker_threads"] >= 1


def test_a_dataset_that_releases_the_gil_is_not_called_gil_bound():
    class Sleeps(torch.utils.data.Dataset):
        def __len__(self):
            return 160

        def __getitem__(self, i):
            time.sleep(0.002)  # storage latency: the GIL is released while it waits
            return np.int64(i)

    loader = gpufeed.DataLoader(Sleeps(), batch_size=4, num_workers=2)
    for _ in loader:
        pass
    d = loader.diagnose()
    assert d.kind != "gil_bound", d


@pytest.mark.timeout(120)
@pytest.mark.parametrize("worker_type", WORKER_TYPES)
@pytest.mark.parametrize("sampled", [False, True])
def test_write_trace_before_the_first_batch_returns_at_once(tmp_path, worker_type, sampled):
    """Before the first batch there is no span to write: the trace has none, at once, rather
    than waiting for a first sample that a worker thread reads only with the GIL the caller
    holds, or for a sampler's order that iter() has not drawn yet."""
    import json

    data = Indices(16)
    loader = gpufeed.DataLoader(data, batch_size=4, num_workers=1, worker_type=worker_type,
                                trace_events=1000,
                                sampler=RandomSampler(data) if sampled else None)
    loader.write_trace(tmp_path / "before.json")
    before = json.loads((tmp_path / "before.json").read_text())
    assert [e for e in before["traceEvents"] if e["ph"] == "X"] == []
    assert sorted(indices_of(loader)) == list(range(16))
    loader.write_trace(tmp_path / "after.json")
    after = json.loads((tmp_path / "after.json").read_text())
    assert any(e["name"] == "consumer wait" for e in after["traceEvents"])
    loader.close()


def test_a_diagnosis_pickles_and_copies():
    """A Diagnosis goes into logs, checkpoints and other processes: pickle and copy keep it."""
    import copy
    import pickle

    d = gpufeed.Diagnosis("input_bound", "add workers")
    for twin in (pickle.loads(pickle.dumps(d)), copy.copy(d), copy.deepcopy(d)):
        assert twin == d and type(twin) is gpufeed.Diagnosis
        assert (twin.kind, twin.sentence) == ("input_bound", "add workers")
