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
