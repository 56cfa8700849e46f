"""An IterableDataset's epochs end in the engine: when every worker's iterator has ended, every
batch made before it delivered in order, whichever worker ends first, whatever the epoch's
length; the next epoch, or one set with set_epoch, iterates anew."""

import collections
import warnings

import pytest
import torch
from torch.utils.data import DataLoader as TorchLoader

import gpufeed

pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create")


class Uneven(torch.utils.data.IterableDataset):
    """Worker k yields lengths[k] samples (k * 1000 + j, for j < lengths[k])."""

    def __init__(self, lengths):
        self.lengths = lengths

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        worker = info.id if info is not None else 0
        for j in range(self.lengths[worker]):
            yield torch.tensor(worker * 1000 + j)


def counted(batches):
    return collections.Counter(int(x) for b in batches for x in b)


def loaders(lengths, **kwargs):
    kwargs = dict(batch_size=3, num_workers=len(lengths), **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # more workers than this machine's CPUs
        return gpufeed.DataLoader(Uneven(lengths), **kwargs), TorchLoader(Uneven(lengths),
                                                                           **kwargs)


@pytest.mark.parametrize("lengths", [[10, 1], [0, 7], [0, 0], [2, 9, 0]])
@pytest.mark.parametrize("drop_last", [False, True])
def test_workers_that_end_apart_give_what_torch_gives(lengths, drop_last):
    ours, theirs = loaders(lengths, drop_last=drop_last)
    want = counted(theirs)
    for epoch in range(3):
        assert counted(list(ours)) == want, epoch


def test_a_batch_per_worker_at_most_is_short():
    ours, theirs = loaders([8, 4], drop_last=False)
    got = [len(b) for b in ours]
    assert sorted(got) == sorted(len(b) for b in theirs)


def test_an_epoch_left_midway_starts_anew():
    ours, _ = loaders([6, 6])
    first = next(iter(ours))
    assert len(first) == 3
    assert counted(list(ours)) == counted([[w * 1000 + j for j in range(6)] for w in (0, 1)])


def test_set_epoch_between_epochs():
    ours, theirs = loaders([5, 3])
    want = counted(theirs)
    for epoch in (0, 4, 5, 9):
        ours.set_epoch(epoch)
        assert counted(list(ours)) == want, epoch


@pytest.mark.parametrize("epochs", [(0, 0, 0, 0), (3, 1, 3, 3)])
def test_an_epoch_read_again_iterates_anew(epochs):
    # torch makes every worker's iterator again at each iter(); so does a repeated epoch here.
    ours, theirs = loaders([5, 3])
    want = counted(theirs)
    for k, epoch in enumerate(epochs):
        ours.set_epoch(epoch)
        assert counted(list(ours)) == want, (k, epoch)


def test_its_length_is_unknown_to_the_engine():
    ours, _ = loaders([4, 4])
    with pytest.raises(TypeError):
        len(ours)  # as torch: an IterableDataset without __len__
    assert ours._core.batches_per_epoch == 0
