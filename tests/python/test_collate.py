"""A custom collate_fn: it runs in the worker processes on each batch's samples, as in torch,
and its output (any structure of CPU tensors, numpy arrays and Python objects, shapes that
change from batch to batch) comes back as it made it, read in place from the shared ring."""

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader as TorchLoader

import gpufeed
from samples import Sentences, pad_sentences as pad


def same(ours, theirs):
    assert type(ours) is type(theirs), (type(ours), type(theirs))
    if isinstance(theirs, torch.Tensor):
        assert ours.dtype == theirs.dtype and torch.equal(ours, theirs)
    elif isinstance(theirs, np.ndarray):
        assert ours.dtype == theirs.dtype and (ours == theirs).all()
    elif isinstance(theirs, dict):
        assert list(ours) == list(theirs)
        for key in theirs:
            same(ours[key], theirs[key])
    elif isinstance(theirs, (tuple, list)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            same(a, b)
    else:
        assert ours == theirs


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_the_same_batches_as_torch_with_per_batch_shapes(context):
    ours = list(gpufeed.DataLoader(Sentences(), batch_size=7, num_workers=2, collate_fn=pad,
                                   multiprocessing_context=context))
    theirs = list(TorchLoader(Sentences(), batch_size=7, collate_fn=pad))
    assert len(ours) == len(theirs) == 9
    for a, b in zip(ours, theirs):  # every batch kept alive: none was overwritten meanwhile
        same(a, b)


class Growing(torch.utils.data.Dataset):
    """Batch k's samples are 4**k bytes each: every batch needs a larger block than the last."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        return np.full(4 ** (i // 2), i, dtype=np.uint8)


def test_blocks_grow_to_the_largest_batch_and_values_survive():
    loader = gpufeed.DataLoader(Growing(), batch_size=2, num_workers=1,
                                collate_fn=lambda s: np.stack(s))
    batches = [b for b in loader]  # 6 batches, from 2 to 2 x 1024 bytes
    for k, b in enumerate(batches):
        assert b.shape == (2, 4 ** k) and (b[0] == 2 * k).all() and (b[1] == 2 * k + 1).all()


def test_a_budget_too_small_for_a_batch_is_refused_naming_it():
    loader = gpufeed.DataLoader(Growing(), batch_size=2, num_workers=1, held_batches_budget=2048,
                                collate_fn=lambda s: np.stack(s))
    with pytest.raises(MemoryError, match="held_batches_budget"):
        list(loader)


def fails_on_seven(samples):
    if any(int(s[0]) == 7 for s in samples):
        raise KeyError("no 7 here")
    return torch.stack(samples)


def test_a_failing_collate_fn_raises_its_own_exception_and_the_loader_goes_on():
    data = [torch.tensor([i]) for i in range(12)]
    it = iter(gpufeed.DataLoader(data, batch_size=4, num_workers=2, collate_fn=fails_on_seven))
    assert next(it)[:, 0].tolist() == [0, 1, 2, 3]
    with pytest.raises(KeyError, match="no 7 here"):
        next(it)
    assert next(it)[:, 0].tolist() == [8, 9, 10, 11]


@pytest.mark.parametrize("kwargs, words", [
    (dict(worker_type="thread"), "worker_type='process'"),
    (dict(on_error="skip"), "on_error='raise'"),
    (dict(batch_size=None), "batch_size=None"),
])
def test_what_a_collate_fn_cannot_go_with_is_refused(kwargs, words):
    with pytest.raises(ValueError, match=words):
        gpufeed.DataLoader(Sentences(), collate_fn=pad, **kwargs)
    with pytest.raises(ValueError, match="gpufeed.datasets"):
        gpufeed.DataLoader(gpufeed.datasets.Synthetic(8, [("x", "float32", [2])]), collate_fn=pad)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the GPU path is "
                    "checked on a GPU machine (scripts/device-check)")
def test_collated_batches_on_the_gpu():
    for a, b in zip(gpufeed.DataLoader(Sentences(), batch_size=7, num_workers=2, collate_fn=pad,
                                       device="cuda"),
                    TorchLoader(Sentences(), batch_size=7, collate_fn=pad)):
        assert a["text"].ids.is_cuda and torch.equal(a["text"].ids.cpu(), b["text"].ids)


@pytest.mark.parametrize("local_rank, expected", [(None, 0), ("3", 3), ("", 0), ("x", None)])
def test_collated_batches_go_to_the_device_the_core_would_choose(monkeypatch, local_rank,
                                                                  expected):
    """device='cuda' without a number: a collate_fn's batches go where the core sends the other
    batches (the core's own rule: LOCAL_RANK, set by torchrun, else 0; a LOCAL_RANK that is not
    a number is refused), not to torch's current device."""
    if local_rank is None:
        monkeypatch.delenv("LOCAL_RANK", raising=False)
    else:
        monkeypatch.setenv("LOCAL_RANK", local_rank)
    if expected is None:
        with pytest.raises(ValueError, match="LOCAL_RANK='x' is not a non-negative integer"):
            gpufeed._gpufeed.default_cuda_device()
    else:
        assert gpufeed._gpufeed.default_cuda_device() == expected
