"""An IterableDataset: each worker process iterates its own copy, sharded through
get_worker_info() as torch users shard it, and makes batches of what it takes (torch's default
collate, or the user's collate_fn); an epoch ends when every worker's iterator has ended, and
the next epoch iterates anew."""

import collections
import warnings

import pytest
import torch
from torch.utils.data import DataLoader as TorchLoader

import gpufeed
from samples import Shards


class Sized(Shards):
    def __len__(self):
        return self.n


def samples_of(loader):
    return collections.Counter(int(x) for batch in loader for x in batch[0])


@pytest.mark.parametrize("workers", [1, 2, 3])
@pytest.mark.parametrize("drop_last", [False, True])
def test_every_sample_once_per_epoch_as_torch_gives_them(workers, drop_last):
    ours = gpufeed.DataLoader(Shards(23), batch_size=4, num_workers=workers, drop_last=drop_last)
    theirs = TorchLoader(Shards(23), batch_size=4, num_workers=workers, drop_last=drop_last)
    want = samples_of(theirs)
    for epoch in range(2):  # each epoch iterates the workers' copies anew
        batches = list(ours)
        assert collections.Counter(int(x) for b in batches for x in b[0]) == want, epoch
        for b in batches:
            assert torch.equal(b[1], b[0] * 2.5) and b[0].dtype == torch.int64


def test_spawned_workers_and_a_collate_fn():
    ours = gpufeed.DataLoader(Shards(17), batch_size=5, num_workers=2,
                              multiprocessing_context="spawn", collate_fn=tuple)
    got = [int(sample[0]) for batch in ours for sample in batch]
    assert sorted(got) == list(range(17))


def test_batch_size_none_gives_the_samples():
    got = list(gpufeed.DataLoader(Shards(6), batch_size=None, num_workers=2))
    assert sorted(int(s[0]) for s in got) == list(range(6))
    assert all(s[0].shape == () for s in got)


def test_len_is_the_datasets_when_it_has_one():
    assert len(gpufeed.DataLoader(Sized(23), batch_size=4, num_workers=1)) == 6
    assert len(gpufeed.DataLoader(Sized(23), batch_size=4, num_workers=1, drop_last=True)) == 5
    with pytest.raises(TypeError):
        len(gpufeed.DataLoader(Shards(23), batch_size=4, num_workers=1))


class Unsharded(Sized):
    """Every worker yields the whole dataset (the mistake torch's warning is for)."""

    def __iter__(self):
        for i in range(self.n):
            yield torch.tensor(i), torch.tensor(i * 2.5)


def test_more_batches_than_len_promised_samples_warns_once_len_was_asked():
    """torch's rule: once len(loader) has asked the dataset's __len__, more batches than those
    samples (each batch holds one at least) means workers repeat the dataset."""
    loader = gpufeed.DataLoader(Unsharded(6), batch_size=None, num_workers=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # len() not asked (list() would ask): nothing to compare
        assert sum(1 for _ in loader) == 12
    assert len(loader) == 6
    it = iter(loader)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(6):
            next(it)
    for fetched in (7, 8):
        with pytest.warns(UserWarning, match=f"__len__ is 6, but {fetched} samples have been "
                          "fetched. For multiprocessing data-loading, this"):
            next(it)
    batched = gpufeed.DataLoader(Unsharded(4), batch_size=2, num_workers=3)
    assert len(batched) == 2
    with pytest.warns(UserWarning, match="__len__ is 4, but 5 batches have been fetched"):
        assert len(list(batched)) == 6
    sharded = gpufeed.DataLoader(Sized(22), batch_size=4, num_workers=4)
    assert len(sharded) == 6
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 4 short last batches: 8 batches, but 22 samples
        assert len(list(sharded)) == 8


def test_an_iterator_that_raises_raises_its_own_exception():
    loader = gpufeed.DataLoader(Shards(20, raise_at=9), batch_size=2, num_workers=1)
    with pytest.raises(KeyError, match="record 9 is missing"):
        list(loader)


@pytest.mark.parametrize("kwargs, words", [
    (dict(shuffle=True), "shuffle"),
    (dict(sampler=[0, 1]), "sampler"),
    (dict(batch_sampler=[[0]]), "batch_sampler"),
    (dict(worker_type="thread"), "worker_type='process'"),
])
def test_what_an_iterable_dataset_cannot_go_with_is_refused(kwargs, words):
    with pytest.raises(ValueError, match=words):
        gpufeed.DataLoader(Shards(4), **kwargs)


def test_its_state_cannot_be_saved():
    loader = gpufeed.DataLoader(Shards(8), batch_size=2, num_workers=1)
    next(iter(loader))
    with pytest.raises(ValueError, match="IterableDataset"):
        loader.state_dict()
