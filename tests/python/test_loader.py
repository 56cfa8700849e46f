"""gpufeed.DataLoader against torch.utils.data.DataLoader: the same batches, orders, epochs,
samplers, held batches, step information, worker information and argument checks.
The bundled datasets are test_datasets.py's; resumption is test_resume.py's; statistics, diagnosis and traces are
test_diagnosis.py's."""

import os
import warnings

import numpy as np
import pytest
import torch
from torch.utils.data import (BatchSampler, DataLoader as TorchLoader, DistributedSampler,
                              RandomSampler, SequentialSampler, SubsetRandomSampler)

import gpufeed
import samples
from samples import ALL_FORMS, WORKER_TYPES, Indices, WorkerReport, assert_same, indices_of


@pytest.mark.parametrize("form", ALL_FORMS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("workers", [0, 3])
@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_same_batches_as_torch_without_shuffle(form, drop_last, workers, worker_type):
    data = form(23)
    ours = gpufeed.DataLoader(data, batch_size=4, num_workers=workers, drop_last=drop_last,
                              worker_type=worker_type)
    theirs = TorchLoader(data, batch_size=4, drop_last=drop_last)
    assert len(ours) == len(theirs)
    got = list(ours)  # every batch kept alive: the ring grows past its depth
    want = list(theirs)
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        assert_same(a, b, f"batch {i}")


def test_a_sequential_sampler_is_the_plain_order():
    data = Indices(10)
    got = indices_of(gpufeed.DataLoader(data, batch_size=3, sampler=SequentialSampler(data)))
    assert got == list(range(10))


@pytest.mark.parametrize("workers", range(1, 9))
@pytest.mark.parametrize("drop_last", [False, True])
def test_shuffle_gives_each_sample_once_per_epoch(workers, drop_last):
    loader = gpufeed.DataLoader(Indices(103), batch_size=10, shuffle=True, num_workers=workers,
                                drop_last=drop_last, seed=5)
    for epoch in range(2):
        got = indices_of(loader)
        assert len(got) == (100 if drop_last else 103)
        assert len(set(got)) == len(got)
        if not drop_last:
            assert sorted(got) == list(range(103))
        assert got != sorted(got)


def test_the_order_does_not_depend_on_the_worker_count():
    orders = [indices_of(gpufeed.DataLoader(Indices(97), batch_size=7, shuffle=True,
                                            num_workers=w, seed=11)) for w in (1, 2, 5, 8)]
    assert all(order == orders[0] for order in orders) and sorted(orders[0]) == list(range(97))


def test_epochs_reshuffle_and_set_epoch_repeats_one():
    loader = gpufeed.DataLoader(Indices(50), batch_size=5, shuffle=True, seed=3)
    first, second = indices_of(loader), indices_of(loader)
    assert first != second and sorted(first) == sorted(second)
    loader.set_epoch(0)
    assert indices_of(loader) == first


def test_generator_and_torch_seed_make_the_shuffle_reproducible():
    def order(**kwargs):
        return indices_of(gpufeed.DataLoader(Indices(60), batch_size=6, shuffle=True, **kwargs))

    assert order(generator=torch.Generator().manual_seed(7)) == \
        order(generator=torch.Generator().manual_seed(7))
    assert order(generator=torch.Generator().manual_seed(7)) != \
        order(generator=torch.Generator().manual_seed(8))
    torch.manual_seed(1)
    a = order()
    torch.manual_seed(1)
    assert order() == a


def test_a_random_sampler_and_a_batch_sampler_give_torchs_batches():
    data = Indices(41)
    ours = gpufeed.DataLoader(data, batch_size=4,
                              sampler=RandomSampler(data, generator=torch.Generator().manual_seed(1)))
    theirs = TorchLoader(data, batch_size=4,
                         sampler=RandomSampler(data, generator=torch.Generator().manual_seed(1)))
    for _ in range(2):  # each epoch draws the sampler again, as torch does
        assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]

    def batches():
        return BatchSampler(SubsetRandomSampler(range(0, 41, 2),
                                                generator=torch.Generator().manual_seed(4)),
                            batch_size=3, drop_last=False)

    ours = gpufeed.DataLoader(data, batch_sampler=batches())
    theirs = TorchLoader(data, batch_sampler=batches())
    assert len(ours) == len(theirs)
    assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]


def test_distributed_sampler_over_two_ranks_with_set_epoch():
    data = Indices(50)
    per_epoch = []
    for epoch in range(3):
        ranks = []
        for rank in range(2):
            sampler = DistributedSampler(data, num_replicas=2, rank=rank, shuffle=True, seed=9)
            sampler.set_epoch(epoch)
            got = indices_of(gpufeed.DataLoader(data, batch_size=4, sampler=sampler,
                                                num_workers=2))
            twin = DistributedSampler(data, num_replicas=2, rank=rank, shuffle=True, seed=9)
            twin.set_epoch(epoch)
            assert got == indices_of(TorchLoader(data, batch_size=4, sampler=twin))
            ranks.append(got)
        assert not set(ranks[0]) & set(ranks[1])  # disjoint
        assert sorted(ranks[0] + ranks[1]) == list(range(50))  # complete
        per_epoch.append(ranks[0])
    assert per_epoch[0] != per_epoch[1] != per_epoch[2]  # reshuffled per epoch


def test_one_loader_follows_its_distributed_samplers_set_epoch():
    data = Indices(40)
    sampler = DistributedSampler(data, num_replicas=2, rank=1, shuffle=True, seed=2)
    loader = gpufeed.DataLoader(data, batch_size=5, sampler=sampler)
    seen = []
    for epoch in range(2):
        sampler.set_epoch(epoch)  # the idiom of every DDP script
        seen.append(indices_of(loader))
        expected = DistributedSampler(data, num_replicas=2, rank=1, shuffle=True, seed=2)
        expected.set_epoch(epoch)
        assert seen[-1] == list(expected)
    assert seen[0] != seen[1]


def test_held_batches_grow_the_ring_and_a_zero_budget_refuses():
    data = Indices(200)
    loader = gpufeed.DataLoader(data, batch_size=4, prefetch_depth=2)
    held = list(loader)  # 50 batches alive at once, far past 2 slots
    assert indices_of(held) == list(range(200))
    stats = loader.stats()
    assert stats["ring_grown"] > 0 and stats["ring_max_slots"] >= 50

    strict = gpufeed.DataLoader(data, batch_size=4, prefetch_depth=2, held_batches_budget=0)
    with pytest.raises(ValueError, match="held_batches_budget"):
        kept = [b for b in strict]  # noqa: F841
    # Batches dropped as they go never need more slots.
    light = gpufeed.DataLoader(data, batch_size=4, prefetch_depth=2)
    total = sum(int(b.sum()) for b in light)
    assert total == sum(range(200)) and light.stats()["ring_grown"] == 0


def test_step_info_for_gradient_accumulation():
    loader = gpufeed.DataLoader(Indices(26), batch_size=4, accumulation_steps=3)
    infos = []
    for batch in loader:
        assert loader.step_info is not None
        infos.append(loader.step_info)
    assert [i.step for i in infos] == [0, 0, 0, 1, 1, 1, 2]
    assert [i.last_micro for i in infos] == [False, False, True, False, False, True, True]
    assert infos[-1].samples_in_step == 2 and infos[-1].short_step
    assert infos[0].samples_in_step == 12
    listed = next(iter(gpufeed.DataLoader(Indices(8), batch_size=4)))
    assert isinstance(listed, torch.Tensor)  # a bare tensor carries no attribute...
    pairs = next(iter(gpufeed.DataLoader(ALL_FORMS[0](8), batch_size=4, accumulation_steps=2)))
    assert pairs.step_info.micro == 0 and pairs.step_info.micros_in_step == 2  # ...a list does


def test_len_matches_torch_for_every_form_of_order():
    data = Indices(45)
    for kwargs in (dict(batch_size=7), dict(batch_size=7, drop_last=True),
                   dict(batch_size=7, shuffle=True),
                   dict(batch_size=7, sampler=RandomSampler(data)),
                   dict(batch_size=7, drop_last=True, sampler=RandomSampler(data)),
                   dict(batch_sampler=BatchSampler(RandomSampler(data), 6, False))):
        assert len(gpufeed.DataLoader(data, **kwargs)) == len(TorchLoader(data, **kwargs)), kwargs


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
@pytest.mark.parametrize("shuffle", [False, True])
def test_len_and_the_epoch_follow_a_dataset_that_grew_or_shrank(worker_type, shuffle):
    """As torch's DataLoader: len(loader) and the next epoch follow len(dataset); the workers
    are made again, so worker processes read the dataset as it is now. An epoch under way
    keeps the length it started with."""
    data = Indices(10)  # len() is data.n
    loader = gpufeed.DataLoader(data, batch_size=4, num_workers=2, worker_type=worker_type,
                                shuffle=shuffle)
    assert len(loader) == 3 and sorted(indices_of(loader)) == list(range(10))
    data.n = 13
    assert len(loader) == 4 == len(TorchLoader(data, batch_size=4))
    assert sorted(indices_of(loader)) == list(range(13))
    it = iter(loader)
    first = next(it).tolist()
    data.n = 6  # mid-epoch: this epoch reads the 13 it started with
    assert len(loader) == 4
    assert sorted(first + [i for b in it for i in b.tolist()]) == list(range(13))
    assert sorted(indices_of(loader)) == list(range(6)) and len(loader) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # following the dataset is not a warning's matter
        data.n = 9
        assert sorted(indices_of(loader)) == list(range(9))
    loader.close()
    data.n = 20
    with pytest.raises(ValueError, match="closed"):
        next(iter(loader))
    assert loader._core.closed  # not made again (no workers started) for the new length


def test_a_grown_dataset_keeps_the_epoch_count_and_a_sampler_follows_it():
    data = Indices(8)
    loader = gpufeed.DataLoader(data, batch_size=3, shuffle=True, seed=5)
    indices_of(loader)  # epoch 0
    data.n = 11
    got = indices_of(loader)  # epoch 1, of 11 samples
    reference = gpufeed.DataLoader(Indices(11), batch_size=3, shuffle=True, seed=5)
    reference.set_epoch(1)
    assert got == indices_of(reference)
    sampled = gpufeed.DataLoader(data, batch_size=3, sampler=RandomSampler(data))
    data.n = 20  # the sampler draws from 20 indices: the loader reads them all
    assert sorted(indices_of(sampled)) == list(range(20))


def test_a_new_iter_starts_the_next_epoch_after_a_break():
    loader = gpufeed.DataLoader(Indices(30), batch_size=5, shuffle=True, seed=1)
    it = iter(loader)
    next(it)
    full = indices_of(loader)  # iter() again: a whole new epoch (epoch 1)
    assert sorted(full) == list(range(30))
    reference = gpufeed.DataLoader(Indices(30), batch_size=5, shuffle=True, seed=1)
    reference.set_epoch(1)
    assert indices_of(reference) == full


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_numpy_output_and_worker_info(worker_type):
    # Every sample is read inside a worker (the layout comes from the first one a worker reads).
    loader = gpufeed.DataLoader(WorkerReport(12), batch_size=4, num_workers=3, output="numpy",
                                worker_type=worker_type)
    batches = list(loader)
    assert all(isinstance(b[0], np.ndarray) and b[0].dtype == np.int64 for b in batches)
    assert np.concatenate([b[0] for b in batches]).tolist() == list(range(12))
    for b in batches:
        assert set(b[1].tolist()) <= {0, 1, 2} and set(b[2].tolist()) == {3}
        assert b[3].all()  # get_worker_info().dataset is the dataset the worker reads
    assert gpufeed.get_worker_info() is None


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_worker_init_fn_runs_once_per_worker_before_its_reads(worker_type):
    samples.INIT_CALLS.clear()
    loader = gpufeed.DataLoader(WorkerReport(64), batch_size=2, num_workers=4,
                                worker_init_fn=samples.record_init, worker_type=worker_type)
    for _ in range(2):
        for _, workers, _, _, calls in loader:
            for worker, seen in zip(workers.tolist(), calls.tolist()):
                seen = [c for c in seen if c >= 0]
                assert worker in seen  # this worker's init ran before this read
                if worker_type == "process":
                    assert seen == [worker]  # once, in its own process
    if worker_type == "thread":  # one process: every worker's call is here, once each
        assert sorted(samples.INIT_CALLS) == sorted(set(samples.INIT_CALLS))
        assert set(samples.INIT_CALLS) <= {0, 1, 2, 3}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the GPU path is "
                    "checked on a GPU machine (scripts/device-check)")
@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_cuda_batches_match_host_batches(worker_type):
    data = Indices(40)
    host = [b.tolist() for b in gpufeed.DataLoader(data, batch_size=8)]
    # Every batch kept: the ring grows while the workers write, each new slot page-locked (with
    # processes, a slot of the shared ring).
    on_gpu = list(gpufeed.DataLoader(data, batch_size=8, device="cuda", num_workers=2,
                                     worker_type=worker_type, prefetch_depth=2))
    assert all(b.is_cuda for b in on_gpu)
    assert [b.cpu().tolist() for b in on_gpu] == host


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
@pytest.mark.parametrize("form", ALL_FORMS, ids=lambda c: c.__name__)
def test_batch_size_none_gives_samples_as_torch_does(form, worker_type):
    data = form(7)
    ours = list(gpufeed.DataLoader(data, batch_size=None, num_workers=2, worker_type=worker_type))
    theirs = list(TorchLoader(data, batch_size=None))
    assert len(ours) == len(theirs) == len(gpufeed.DataLoader(data, batch_size=None)) == 7
    def numbers_as_tensors(sample):
        # torch leaves a Python number as it is; gpufeed gives it as a 0-d tensor of its value
        if isinstance(sample, (bool, int, float)):
            return torch.tensor(sample, dtype=torch.float64 if isinstance(sample, float) else None)
        if isinstance(sample, list):
            return [numbers_as_tensors(x) for x in sample]
        if isinstance(sample, dict):
            return {k: numbers_as_tensors(v) for k, v in sample.items()}
        return sample

    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_same(a, numbers_as_tensors(b), f"sample {i}")


def test_batching_arguments_cannot_change_after_construction():
    loader = gpufeed.DataLoader(Indices(10), batch_size=2)
    for name, value in [("batch_size", 3), ("sampler", SequentialSampler(range(10))),
                        ("batch_sampler", [[0]]), ("drop_last", True), ("dataset", Indices(5)),
                        ("persistent_workers", True)]:
        with pytest.raises(ValueError, match=f"{name} attribute should not be set after"):
            setattr(loader, name, value)
    assert [b.tolist() for b in loader][0] == [0, 1]
    loader.anything_else = 1  # other attributes are the caller's


def test_multiprocessing_context_is_checked_as_torch_checks_it():
    with pytest.raises(ValueError, match=r"multi-process loading \(num_workers > 0\), but got "
                       "num_workers=0"):
        gpufeed.DataLoader(Indices(4), multiprocessing_context="spawn")
    with pytest.raises(ValueError, match="should specify a valid start method in .*'bad'"):
        gpufeed.DataLoader(Indices(4), num_workers=1, multiprocessing_context="bad")
    with pytest.raises(TypeError, match="should be a valid context object or a string"):
        gpufeed.DataLoader(Indices(4), num_workers=1, multiprocessing_context=object())
    with gpufeed.DataLoader(Indices(4), batch_size=2, worker_type="process",
                            multiprocessing_context="spawn") as loader:  # one process, asked for
        assert loader._workers.start_method == "spawn"
    context = __import__("multiprocessing").get_context("fork")
    with gpufeed.DataLoader(Indices(4), batch_size=2, num_workers=1, worker_type="process",
                            multiprocessing_context=context) as loader:
        assert indices_of(loader) == [0, 1, 2, 3]


def test_sampler_and_shuffle_is_refused_before_batch_sampler_as_torch_orders_its_checks():
    data = Indices(10)
    sampler = SequentialSampler(data)
    with pytest.raises(ValueError, match="^sampler option is mutually exclusive with shuffle"):
        gpufeed.DataLoader(data, batch_sampler=BatchSampler(sampler, 3, False), sampler=sampler,
                           shuffle=True)


def test_the_class_takes_a_type_argument_for_annotations():
    alias = gpufeed.DataLoader[torch.Tensor]
    assert alias.__origin__ is gpufeed.DataLoader


def test_more_workers_than_cpus_warns_with_torchs_phrase():
    with pytest.warns(UserWarning, match="more than the .* CPUs.*excessive worker creation "
                      "might get DataLoader running slow or even freeze"):
        gpufeed.DataLoader(Indices(4), num_workers=len(os.sched_getaffinity(0)) + 1,
                           worker_type="thread").close()


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_zero_size_dimensions_batch_as_torch_batches_them(worker_type):
    class Empty(torch.utils.data.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return np.zeros((3, 0), dtype=np.float32), np.arange(i, i + 2)

    ours = list(gpufeed.DataLoader(Empty(), batch_size=2, num_workers=1, worker_type=worker_type))
    theirs = list(TorchLoader(Empty(), batch_size=2))
    for a, b in zip(ours, theirs):
        assert_same(a, b)


CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the GPU path "
                          "is checked on a GPU machine (scripts/device-check)")


@pytest.mark.parametrize("device", [None, pytest.param("cuda", marks=CUDA)])
@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_samples_of_zero_bytes_batch_as_torch_batches_them(worker_type, device):
    # Every sample an empty tensor: each slot has no bytes (on the GPU path, each is still
    # page-locked on its own).
    class Nothing(torch.utils.data.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return torch.empty(0)

    ours = list(gpufeed.DataLoader(Nothing(), batch_size=2, num_workers=2,
                                   worker_type=worker_type, device=device))
    theirs = list(TorchLoader(Nothing(), batch_size=2))
    assert len(ours) == len(theirs) == 3
    for a, b in zip(ours, theirs):
        assert a.is_cuda == (device == "cuda")
        assert_same(a.cpu(), b)


# ---- how many workers read, and the ring's depth ----------------------------------------------

_NATIVE, _PYTHON = False, True


@pytest.mark.parametrize("args, expected", [
    # gpufeed.datasets: threads, one for num_workers=0; the depth is torch's prefetch_factor
    # (2) batches per worker, plus the one in use.
    (dict(num_workers=0, worker_type="auto", python_dataset=_NATIVE), ("thread", None, 1, 3)),
    (dict(num_workers=4, worker_type="thread", python_dataset=_NATIVE), ("thread", None, 4, 9)),
    (dict(num_workers=4, worker_type="auto", python_dataset=_NATIVE, autotune=True),
     ("thread", None, "auto", "auto")),
    # a Python dataset on threads
    (dict(num_workers=0, worker_type="thread", python_dataset=_PYTHON), ("thread", None, 1, 3)),
    (dict(num_workers=3, worker_type="thread", python_dataset=_PYTHON, autotune=True),
     ("thread", None, "auto", "auto")),
    # a Python dataset on processes: one worker thread drives each
    (dict(num_workers=3, worker_type="process", python_dataset=_PYTHON), ("process", 3, 3, 7)),
    (dict(num_workers=0, worker_type="process", python_dataset=_PYTHON), ("process", 1, 1, 3)),
    (dict(num_workers=2, worker_type="process", python_dataset=_PYTHON, autotune=True),
     ("process", 2, 2, "auto")),
    # prefetch_factor and prefetch_depth shape the ring, autotune or not
    (dict(num_workers=2, worker_type="process", python_dataset=_PYTHON, prefetch_factor=4),
     ("process", 2, 2, 9)),
    (dict(num_workers=2, worker_type="thread", python_dataset=_NATIVE, autotune=True,
          prefetch_depth=5), ("thread", None, "auto", 5)),
])
def test_worker_plan_is_the_rule_for_workers_and_the_ring(args, expected):
    from gpufeed._options import worker_plan

    args = dict(dict(autotune=False, prefetch_factor=None, prefetch_depth=None), **args)
    plan = worker_plan(**args)
    assert (plan.kind, plan.processes, plan.workers, plan.prefetch_depth) == expected


def test_worker_plan_lets_a_python_dataset_choose_its_kind():
    """worker_type="auto": processes for a Python dataset where the GIL would serialize
    threads, threads with num_workers=0; gpufeed.datasets refuse processes."""
    from gpufeed._arguments import free_threaded
    from gpufeed._options import worker_plan

    def plan(num_workers, worker_type, python_dataset):
        return worker_plan(num_workers=num_workers, worker_type=worker_type,
                           python_dataset=python_dataset, autotune=False, prefetch_factor=None,
                           prefetch_depth=None)

    chosen = plan(2, "auto", _PYTHON)
    assert (chosen.kind, chosen.processes) == (
        ("thread", None) if free_threaded() else ("process", 2))
    assert plan(0, "auto", _PYTHON).kind == "thread"
    with pytest.raises(ValueError, match="worker_type='process': gpufeed.datasets"):
        plan(2, "process", _NATIVE)


def test_autotune_starts_as_many_worker_processes_as_gpufeed_would_start_threads():
    """With autotune and num_workers=0 a Python dataset's worker processes are the usable
    cores, at most 64: the count the C++ autotuner starts threads with (its most)."""
    from gpufeed._options import worker_plan

    expected = min(len(os.sched_getaffinity(0)), 64)
    assert gpufeed._gpufeed.auto_worker_threads() == expected
    plan = worker_plan(num_workers=0, worker_type="process", python_dataset=_PYTHON,
                       autotune=True, prefetch_factor=None, prefetch_depth=None)
    assert (plan.processes, plan.workers, plan.prefetch_depth) == (expected, expected, "auto")
    loader = gpufeed.DataLoader(Indices(8), batch_size=2, worker_type="process", autotune=True)
    try:  # never iterated: no process starts, but the ring's links are made for them
        assert loader._native_dataset.workers == expected
        assert f"{expected} worker processes" in loader.describe()
    finally:
        loader.close()


def test_describe_says_autotune_chooses_the_worker_threads():
    loader = gpufeed.DataLoader(Indices(8), batch_size=2, worker_type="thread", autotune=True)
    try:
        assert (f"up to {gpufeed._gpufeed.auto_worker_threads()} worker threads (autotune)"
                in loader.describe())
    finally:
        loader.close()
