"""Where iteration stands, saved and resumed: state_dict and load_state_dict (torchdata's
StatefulDataLoader semantics), and the epochs iter() starts around them."""

import threading

import pytest
import torch
from torch.utils.data import RandomSampler

import gpufeed
from samples import Indices, indices_of


@pytest.mark.parametrize("sampled", [False, True])
def test_resume_from_a_state_dict_mid_epoch(sampled):
    data = Indices(64)

    def make():
        if sampled:
            return gpufeed.DataLoader(
                data, batch_size=5, num_workers=3,
                sampler=RandomSampler(data, generator=torch.Generator().manual_seed(3)))
        return gpufeed.DataLoader(data, batch_size=5, shuffle=True, seed=21, num_workers=3)

    first = make()
    it = iter(first)
    head = [next(it).tolist() for _ in range(4)]
    state = first.state_dict()
    rest = [b.tolist() for b in it]
    next_epoch = indices_of(first)

    resumed = make()
    resumed.load_state_dict(state)
    assert [b.tolist() for b in resumed] == rest
    assert head  # the state was taken after real batches
    if not sampled:  # the builtin shuffle continues with the same following epoch
        assert indices_of(resumed) == next_epoch


@pytest.mark.parametrize("sampled", [False, True])
def test_a_state_dict_before_the_first_iter_resumes_at_the_start(sampled):
    data = Indices(20)

    def make():
        sampler = (RandomSampler(data, generator=torch.Generator().manual_seed(4)) if sampled
                   else None)
        return gpufeed.DataLoader(data, batch_size=3, sampler=sampler, shuffle=not sampled,
                                  seed=None if sampled else 8, num_workers=2)

    state = make().state_dict()  # no epoch started yet: the sampler has drawn no order
    resumed = make()
    resumed.load_state_dict(state)
    got = indices_of(resumed)
    assert sorted(got) == list(range(20)) and got != list(range(20))  # shuffled, whole
    assert got == indices_of(make())  # the first epoch, as a loader never saved reads it


def test_an_epoch_whose_reads_all_failed_is_over_for_the_next_iter():
    class FailsFirstReads:
        """Its first `failing` reads raise (one worker thread reads in order: epoch 0's)."""

        def __init__(self, failing):
            self.failing = failing
            self.lock = threading.Lock()

        def __len__(self):
            return 6

        def __getitem__(self, index):
            with self.lock:
                self.failing -= 1
                if self.failing >= 0:
                    raise KeyError(index)
            return index

    def make(failing):
        return gpufeed.DataLoader(FailsFirstReads(failing), batch_size=3, shuffle=True, seed=5,
                                  worker_type="thread", num_workers=1)

    loader = make(6)
    it = iter(loader)
    for _ in range(2):
        with pytest.raises(KeyError):
            next(it)
    with pytest.raises(StopIteration):
        next(it)
    second = indices_of(loader)  # epoch 1, not epoch 0 again
    fresh = make(0)
    fresh.set_epoch(1)
    assert second == indices_of(fresh)
    assert second != indices_of(make(0))  # epoch 0's order differs
