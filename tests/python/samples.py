"""Datasets and comparisons shared by the pytest suites: map-style datasets of every sample form
torch's default collate handles, and an equality that checks types, dtypes and values."""

import collections

import numpy as np
import torch

Point = collections.namedtuple("Point", ["a", "b"])

# The kinds of workers a Python dataset can be read by (gpufeed.DataLoader's worker_type): the
# suites run their cases on both where the behaviour must be the same.
WORKER_TYPES = ["process", "thread"]


class Sized(torch.utils.data.Dataset):
    """n samples; subclasses say what sample i is."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


class TupleSamples(Sized):
    """(float32 [2, 3] ndarray, Python int, Python float, Python bool)"""

    def __getitem__(self, i):
        return (np.arange(6, dtype=np.float32).reshape(2, 3) + i, i, i * 0.5, i % 3 == 0)


class DictSamples(Sized):
    """{"x": int16 tensor [3], "y": numpy int32 scalar, "nested": {"z": uint8 [2] ndarray}}"""

    def __getitem__(self, i):
        return {"x": torch.full((3,), i, dtype=torch.int16), "y": np.int32(-i),
                "nested": {"z": np.array([i % 256, 7], dtype=np.uint8)}}


class ListSamples(Sized):
    """[int64 [2] ndarray, float32 0-d tensor, a transposed (non-contiguous) float64 array]"""

    def __getitem__(self, i):
        strided = np.arange(12, dtype=np.float64).reshape(3, 4).T * i  # not C-contiguous
        return [np.array([i, -i], dtype=np.int64), torch.tensor(i * 1.5), strided]


class NamedSamples(Sized):
    def __getitem__(self, i):
        return Point(np.float64(i) / 3, torch.tensor([i, i + 1], dtype=torch.int32))


class BareSamples(Sized):
    def __getitem__(self, i):
        return torch.tensor([i, 2 * i], dtype=torch.int64)


class TextSamples(Sized):
    """(str, {"raw": bytes, "x": int64 [2] ndarray}, numpy.str_): text leaves come back as the
    samples' values, as torch's default collate returns them (a tuple here, a list in the dict)."""

    def __getitem__(self, i):
        return (f"image-{i % 7}.jpg", {"raw": bytes([i % 256, 0, 255]),
                                       "x": np.array([i, -i], dtype=np.int64)},
                np.str_(f"class {i % 3}"))


class Indices(Sized):
    """Sample i is the int i: the batches say which samples came, in which order."""

    def __getitem__(self, i):
        return i


class WorkerReport(Sized):
    """Sample i: (i, the reading worker's id, num_workers, whether its dataset is this one, the
    worker_init_fn calls its process has seen). Made to be read in worker threads and processes
    alike: what a worker knows comes back in the batch."""

    def __getitem__(self, i):
        import gpufeed

        info = gpufeed.get_worker_info()
        assert info is not None, "get_worker_info() is None inside a worker"
        assert torch.utils.data.get_worker_info() is None or (
            torch.utils.data.get_worker_info().id == info.id)
        return (i, info.id, info.num_workers, info.dataset is self,
                np.array(INIT_CALLS + [-1] * (8 - len(INIT_CALLS)), dtype=np.int64))


# worker_init_fn's calls in this process (a worker process's own, or every worker thread's).
INIT_CALLS = []


def record_init(worker_id):
    INIT_CALLS.append(worker_id)


ALL_FORMS = [TupleSamples, DictSamples, ListSamples, NamedSamples, BareSamples, TextSamples]


def assert_same(ours, theirs, where="batch"):
    """Equal in structure, container types, dtypes, shapes and values."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, torch.Tensor), f"{where}: {type(ours)} is not a tensor"
        assert ours.dtype == theirs.dtype, f"{where}: {ours.dtype} != {theirs.dtype}"
        assert ours.shape == theirs.shape, f"{where}: {ours.shape} != {theirs.shape}"
        assert torch.equal(ours, theirs), f"{where}: values differ"
        return
    if isinstance(theirs, (str, bytes)):
        # gpufeed returns the plain type (numpy.str_ comes back as str); torch keeps the object.
        plain = str if isinstance(theirs, str) else bytes
        assert type(ours) is plain, f"{where}: {type(ours)} is not {plain}"
        assert ours == theirs, f"{where}: {ours!r} != {theirs!r}"
        return
    if isinstance(theirs, tuple) and hasattr(theirs, "_fields"):
        assert type(ours) is type(theirs), f"{where}: {type(ours)} != {type(theirs)}"
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict), f"{where}: {type(ours)} is not a dict"
        assert list(ours.keys()) == list(theirs.keys()), f"{where}: keys differ"
        for key in theirs:
            assert_same(ours[key], theirs[key], f"{where}[{key!r}]")
        return
    elif isinstance(theirs, tuple):  # torch's collate of text inside a sequence
        assert type(ours) is tuple, f"{where}: {type(ours)} is not a tuple"
    else:
        assert isinstance(ours, list) and isinstance(theirs, list), \
            f"{where}: {type(ours)} / {type(theirs)}"
    assert len(ours) == len(theirs), f"{where}: lengths differ"
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_same(a, b, f"{where}[{i}]")


def indices_of(batches):
    return [int(i) for b in batches for i in b]


# ---- worker processes: datasets that must pickle (spawn, forkserver) -------------------------------
# (A dataset or collate_fn defined in a test module does not unpickle in a spawned worker: pytest
# names the module after its path, which the worker cannot import.)

Padded = collections.namedtuple("Padded", ["ids", "lengths"])


class Sentences(torch.utils.data.Dataset):
    """Sample i: a sequence of i % 9 + 1 token ids, and its name."""

    def __len__(self):
        return 60

    def __getitem__(self, i):
        return torch.arange(i % 9 + 1, dtype=torch.int64) * 10 + i, f"s{i}"


def pad_sentences(samples):
    """Pads each batch to its own longest sequence (per-batch shapes)."""
    sequences, names = zip(*samples)
    longest = max(len(s) for s in sequences)
    ids = torch.zeros(len(sequences), longest, dtype=torch.int64)
    for k, s in enumerate(sequences):
        ids[k, :len(s)] = s
    return {"text": Padded(ids, torch.tensor([len(s) for s in sequences])),
            "names": list(names), "mask": (ids > 0).numpy(), "half": ids.to(torch.bfloat16),
            "count": len(sequences)}


class Shards(torch.utils.data.IterableDataset):
    """n samples (i, i * 2.5); worker k of w takes i = k, k + w, ..."""

    def __init__(self, n, raise_at=None):
        self.n, self.raise_at = n, raise_at

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        for i in range(worker, self.n, workers):
            if i == self.raise_at:
                raise KeyError(f"record {i} is missing")
            yield torch.tensor(i), torch.tensor(i * 2.5)


class InitFailed(Exception):
    """Raised by fail_init: a type of the user's, which must reach the caller as itself."""


def fail_init(worker_id):
    raise InitFailed(f"worker_init_fn could not open its handle in worker {worker_id}")


class BlocksFrom(Sized):
    """Samples below `block_from` are their index; reading any other sends (pid, index) on
    `report` (a multiprocessing Connection) and then sleeps for an hour: a batch that needs it
    comes only if the worker dies."""

    def __init__(self, n, block_from, report):
        super().__init__(n)
        self.block_from = block_from
        self.report = report

    def __getitem__(self, i):
        import os
        import time

        if i >= self.block_from:
            self.report.send((os.getpid(), i))
            time.sleep(3600)
        return np.full(4, i, np.float32)


class ExitsAt(Sized):
    """Sample `at` ends its worker process with os._exit(status)."""

    def __init__(self, n, at, status):
        super().__init__(n)
        self.at = at
        self.status = status

    def __getitem__(self, i):
        import os

        if i == self.at:
            os._exit(self.status)
        return np.full(4, i, np.float32)


class FirstDraws(Sized):
    """Sample i: (i, the worker's id, how many samples this worker read before it, a draw from
    random, from numpy's global generator and from torch, the worker's seed as a str). Each
    worker's first read waits at `barrier` (a multiprocessing Barrier of num_workers parties,
    or None) until every worker has started one, so every worker reads at least one sample."""

    def __init__(self, n, barrier=None):
        super().__init__(n)
        self.barrier = barrier
        self.calls = 0  # this worker's own count: each worker process has its own copy

    def __getitem__(self, i):
        import random

        info = torch.utils.data.get_worker_info()
        call = self.calls
        self.calls += 1
        if call == 0 and self.barrier is not None:
            self.barrier.wait(120)
        return (i, info.id, call, random.random(), float(np.random.random()),
                float(torch.rand(())), str(info.seed))


class StartedLater(torch.utils.data.Dataset):
    """Gets its `start` only after the loader is made, as torch's test_dataset_not_reset sets it:
    a worker that copied the dataset before that fails with AttributeError."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return np.full(2, self.start + i, np.float32)
