"""gpufeed.DataLoader's worker processes (worker_type="process"): every start method, a worker
that dies, and torch's worker contract inside a worker (worker_init_fn, get_worker_info, seeds).
Many loaders made and dropped, Ctrl-C and the shared ring are test_worker_lifetimes.py's.

A worker process's Python state is its own, so what it must tell the test comes back in the
samples it returns or through a multiprocessing Pipe or Barrier made before the loader (handed
to the worker with the dataset under every start method). Datasets that spawn and forkserver
must pickle live in samples.py. No assertion depends on how fast anything runs: a hang guard
(hang_guard, pytest's timeout) bounds each wait generously.
"""

import collections
import gc
import multiprocessing
import os
import pickle
import re
import signal
import time

import numpy as np
import pytest

import gpufeed
import samples
from processes import hang_guard, open_files, settles_to, worker_children
from samples import (ALL_FORMS, BlocksFrom, ExitsAt, FirstDraws, InitFailed, assert_same,
                     fail_init)

torch = pytest.importorskip("torch")
psutil = pytest.importorskip("psutil")

START_METHODS = ["fork", "spawn", "forkserver"]

# How long a worker's death may take to reach next() before the test calls it a hang. Not a
# timing check: a loader that does notice the death raises at once; one that does not waits
# for an hour-long sample.
DEATH_GUARD_S = 60


def _pids():
    return {p.pid for p in worker_children()}


def _fd_targets():
    return sorted(open_files().values())


def _start_helpers(method):
    """Starts multiprocessing's helpers for `method` (spawn and forkserver: the resource
    tracker; forkserver: the server), which it keeps for the session with a pipe to each: a
    test that counts files starts them first."""
    loader = gpufeed.DataLoader(samples.Indices(4), num_workers=1, worker_type="process",
                                multiprocessing_context=method)
    next(iter(loader))  # the workers start at the first iter()
    loader.close()


def _extra(now, before):
    """What `now` holds beyond `before` (lists of descriptor targets)."""
    extra = collections.Counter(now)
    extra.subtract(collections.Counter(before))
    return sorted(t for t, n in extra.items() for _ in range(max(n, 0)))


# ---- start methods -------------------------------------------------------------------------------

@pytest.mark.timeout(600)
@pytest.mark.parametrize("form", ALL_FORMS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("method", START_METHODS)
def test_every_start_method_delivers_torchs_batches(method, form):
    """fork, spawn and forkserver: the same batches as torch's DataLoader, read by processes
    started by that method (a spawned worker runs a fresh interpreter; a forkserver's worker is
    the server's child, not ours)."""
    data = form(11)  # 11 samples in batches of 3: a short last batch
    theirs = list(torch.utils.data.DataLoader(data, batch_size=3, num_workers=0))
    loader = gpufeed.DataLoader(data, batch_size=3, num_workers=2, worker_type="process",
                                multiprocessing_context=method)
    try:
        assert loader._workers.start_method == method
        assert loader._workers.processes == []  # they start at the first iter(), as torch's
        ours = list(loader)
        processes = [psutil.Process(p.pid) for p in loader._workers.processes]
        assert len(processes) == 2
        me = os.getpid()
        if method == "forkserver":
            assert all(p.ppid() != me for p in processes)
        else:
            assert all(p.ppid() == me for p in processes)
        if method == "spawn":  # they have run the reads, so they are past their exec
            assert all("multiprocessing.spawn" in " ".join(p.cmdline()) for p in processes)
        assert len(ours) == len(theirs) == 4
        for n, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"batch {n}")
        # A second epoch from the same processes.
        for n, (a, b) in enumerate(zip(loader, theirs)):
            assert_same(a, b, f"epoch 1, batch {n}")
    finally:
        loader.close()


class _Local(torch.utils.data.Dataset):
    """Defined in a test module's scope but holding a lambda: pickle cannot name it."""

    def __init__(self):
        self.transform = lambda x: x

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return self.transform(np.full(2, i, np.float32))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_a_dataset_that_does_not_pickle_is_refused_saying_so(method):
    """As torch: spawn and forkserver pickle the dataset to start each worker, when the loader
    is first iterated. The refusal is a ValueError that names the start method and pickling, and
    says what to do; the loader is closed, and nothing is left behind (no process, no file).
    fork takes the same dataset."""
    data = _Local()
    with pytest.raises(Exception):  # the premise: this dataset does not pickle
        pickle.dumps(data)
    _start_helpers(method)
    gc.collect()
    pids, files = _pids(), _fd_targets()
    loader = gpufeed.DataLoader(data, batch_size=2, num_workers=2, worker_type="process",
                                multiprocessing_context=method)
    assert len(loader) == 4  # made: the workers start at iter(), as torch's
    # torch's warning first, then the refusal.
    with pytest.warns(UserWarning, match="Got pickle error when attempting to start a worker "
                      "Process") as warned:
        try:
            iter(loader)
        except ValueError as e:  # not pytest.raises: its traceback would keep the loader alive
            message = str(e)
        else:
            pytest.fail("a dataset that does not pickle was taken")
    assert any(w.filename == __file__ for w in warned), [w.filename for w in warned]
    assert method in message and "pickl" in message, message
    assert "fork" in message or "thread" in message, message  # what to do instead
    with pytest.raises(ValueError, match="closed"):
        next(iter(loader))
    del loader
    gc.collect()
    assert settles_to(_pids, pids) == pids
    assert _fd_targets() == files

    loader = gpufeed.DataLoader(data, batch_size=2, num_workers=2, worker_type="process",
                                multiprocessing_context="fork")
    assert [b.tolist() for b in loader][0] == [[0, 0], [1, 1]]
    loader.close()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("method", START_METHODS)
def test_workers_start_and_copy_the_dataset_at_the_first_iter(method):
    """As torch's: the worker processes start when the loader is first iterated, so they copy
    the dataset as it is then, and a loader that is made but never iterated starts none. The
    loader's threads, which may already have asked for the first sample, wait for them."""
    _start_helpers(method)
    gc.collect()
    pids = _pids()
    data = samples.StartedLater()
    loader = gpufeed.DataLoader(data, batch_size=3, num_workers=2, worker_type="process",
                                multiprocessing_context=method)
    try:
        time.sleep(0.2)  # the loader's threads are free to ask for the first sample meanwhile
        assert _pids() == pids, "a process started before iter()"
        assert len(loader) == 2 and loader.state_dict()["next_epoch"] == 0
        data.start = 100
        assert [b[:, 0].tolist() for b in loader] == [[100, 101, 102], [103, 104, 105]]
        assert len(_pids() - pids) == 2
    finally:
        loader.close()
    never = gpufeed.DataLoader(data, batch_size=3, num_workers=2, worker_type="process",
                               multiprocessing_context=method)
    never.close()
    del never
    gc.collect()
    assert settles_to(_pids, pids) == pids


# ---- a worker that dies --------------------------------------------------------------------------

def _kill_a_worker_mid_batch(method, report, reports):
    """A loader whose worker was killed (SIGKILL) inside a sample of its second batch: (the
    loader, its iterator, the killed worker's number, the sample it held)."""
    loader = gpufeed.DataLoader(BlocksFrom(64, 4, report), batch_size=4, num_workers=2,
                                worker_type="process", multiprocessing_context=method)
    it = iter(loader)
    assert next(it).tolist() == [[float(i)] * 4 for i in range(4)]
    # A worker is inside a sample of the second batch, for an hour.
    assert reports.poll(DEATH_GUARD_S), "no worker entered a sample of the second batch"
    pid, index = reports.recv()
    workers = [p.pid for p in loader._workers.processes]
    assert pid in workers
    os.kill(pid, signal.SIGKILL)
    return loader, it, workers.index(pid), index


# Under forkserver the workers are the server's children, not the loader's process's: the
# loader learns how one ended from multiprocessing, which hears it from the server.
@pytest.mark.timeout(300)
@pytest.mark.parametrize("method", START_METHODS)
def test_a_worker_killed_mid_batch_raises_worker_error(method):
    """SIGKILL (what the out-of-memory killer sends) to a worker in the middle of a batch's
    sample: next() raises gpufeed.WorkerError naming the worker, the signal and the sample it
    held, instead of waiting for it; every later call raises it again; close() leaves no child
    process (nor zombie), and once the loader is dropped no file of its is open."""
    reports, report = multiprocessing.get_context(method).Pipe(duplex=False)
    _start_helpers(method)
    gc.collect()
    pids, files = _pids(), _fd_targets()
    loader, it, worker, index = _kill_a_worker_mid_batch(method, report, reports)
    pid = loader._workers.processes[worker].pid

    with hang_guard(DEATH_GUARD_S, "next() after a worker was killed"):
        with pytest.raises(gpufeed.WorkerError) as raised:
            next(it)
    error = raised.value
    del raised  # its traceback's frames hold the loader
    message = str(error)
    assert re.search(rf"worker process {worker}\b", message), message
    assert "SIGKILL" in message, message
    assert re.search(rf"\bsample {index}\b", message), message
    # The same account as data (under forkserver, how it ended comes from multiprocessing).
    assert (error.worker, error.pid, error.signal, error.exit_status) == (
        worker, pid, signal.SIGKILL, None)
    assert index in error.samples and error.epoch == 0
    del error

    with hang_guard(DEATH_GUARD_S, "next() again"):
        with pytest.raises(gpufeed.WorkerError):
            next(it)
        with pytest.raises(gpufeed.WorkerError):
            next(iter(loader))  # a new epoch of a stopped loader

    loader.close()
    # No worker left, none a zombie (a forkserver reaps its children on its own: a moment).
    assert settles_to(_pids, pids) == pids
    del loader, it
    gc.collect()
    left = _extra(_fd_targets(), files)
    assert left == [], f"the dropped loader left these open: {left}"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", ["epoch_read", "worker_killed"])
def test_close_closes_every_file_of_the_loader(case):
    """close() gives back the files the workers needed (the memfds of the ring and mailboxes,
    the eventfds, the pidfds, multiprocessing's pipes) while the DataLoader object lives on:
    after an epoch read, and after a worker was killed."""
    reports, report = multiprocessing.Pipe(duplex=False)
    _start_helpers("fork")
    gc.collect()
    files = _fd_targets()
    if case == "epoch_read":
        loader = gpufeed.DataLoader(samples.Indices(16), batch_size=4, num_workers=2,
                                    worker_type="process")
        assert [b.tolist() for b in loader][0] == [0, 1, 2, 3]
    else:
        loader, it, _, _ = _kill_a_worker_mid_batch("fork", report, reports)
        with hang_guard(DEATH_GUARD_S, "next() after a worker was killed"):
            with pytest.raises(gpufeed.WorkerError):
                next(it)
    loader.close()
    left = _extra(_fd_targets(), files)
    assert left == [], f"close() left these open: {left}"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("method", START_METHODS)
def test_a_worker_that_exits_raises_worker_error_naming_its_status(method):
    """os._exit(3) in __getitem__: WorkerError naming the worker, "exit" and the status, and
    the sample it was reading."""
    pids = _pids()
    loader = gpufeed.DataLoader(ExitsAt(64, 6, 3), batch_size=4, num_workers=2,
                                worker_type="process", multiprocessing_context=method)
    with hang_guard(DEATH_GUARD_S, "iterating over a worker that exits"):
        with pytest.raises(gpufeed.WorkerError) as raised:
            for _ in loader:
                pass
    message = str(raised.value)
    assert re.search(r"worker process [01]\b", message), message
    assert re.search(r"\bexit\w*\b.*\b3\b", message), message
    assert re.search(r"\bsample 6\b", message), message
    assert "SIGKILL" not in message and "signal" not in message, message
    assert (raised.value.exit_status, raised.value.signal) == (3, None)
    assert raised.value.worker in (0, 1) and 6 in raised.value.samples
    assert isinstance(raised.value.pid, int) and raised.value.pid > 0
    del raised
    loader.close()
    assert settles_to(_pids, pids) == pids  # a forkserver reaps its children on its own


@pytest.mark.timeout(120)
@pytest.mark.parametrize("worker_type", ["process", "thread"])
def test_worker_init_fn_raising_reaches_the_first_next_as_its_own_type(worker_type):
    """worker_init_fn runs in the worker; what it raises reaches the first next() as its own
    type (an except clause written for it catches it), with its message, and the loader
    cannot go on."""
    loader = gpufeed.DataLoader(samples.Indices(16), batch_size=4, num_workers=2,
                                worker_init_fn=fail_init, worker_type=worker_type)
    it = iter(loader)
    with hang_guard(DEATH_GUARD_S, "next() after worker_init_fn raised"):
        with pytest.raises(InitFailed) as raised:
            next(it)
    assert "worker_init_fn could not open its handle in worker" in str(raised.value)
    if worker_type == "process":
        assert "worker_init_fn" in str(raised.value).splitlines()[0]  # where it was raised
    with hang_guard(DEATH_GUARD_S, "next() again"):
        with pytest.raises(Exception):  # still stopped: no batch comes
            next(it)
    loader.close()


# ---- torch's worker contract ---------------------------------------------------------------------

class _Reports(torch.utils.data.Dataset):
    """Sample i: what gpufeed's and torch's get_worker_info() say in the worker that reads it.
    Each worker's first read waits at `barrier` until every worker has started one."""

    def __init__(self, n, barrier):
        self.n = n
        self.barrier = barrier
        self.first = True

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        ours, theirs = gpufeed.get_worker_info(), torch.utils.data.get_worker_info()
        if self.first:
            self.first = False
            self.barrier.wait(120)
        return (i, os.getpid(), ours.id, ours.num_workers, str(ours.seed), ours.dataset is self,
                theirs.id, theirs.num_workers, str(theirs.seed), theirs.dataset is self)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seeded_by", ["manual_seed", "generator"])
def test_get_worker_info_in_worker_processes(seeded_by):
    """In each worker: gpufeed.get_worker_info() and torch.utils.data.get_worker_info() agree on
    its id, num_workers, seed (the base seed drawn as torch draws it, plus the id) and dataset
    (the worker's own copy); each id 0..num_workers-1 is one process; None in this process."""
    workers = 3
    torch.manual_seed(1234)
    generator = torch.Generator().manual_seed(99) if seeded_by == "generator" else None
    expected_base = int(torch.empty((), dtype=torch.int64).random_(generator=(
        torch.Generator().manual_seed(99) if generator is not None else None)).item())
    torch.manual_seed(1234)
    loader = gpufeed.DataLoader(_Reports(30, multiprocessing.Barrier(workers)), batch_size=5,
                                num_workers=workers, worker_type="process",
                                generator=generator)
    rows = []
    for batch in loader:
        assert gpufeed.get_worker_info() is None and torch.utils.data.get_worker_info() is None
        rows += zip(*[c.tolist() if isinstance(c, torch.Tensor) else c for c in batch])
    loader.close()
    assert sorted(r[0] for r in rows) == list(range(30))
    pid_of = {}
    for i, pid, wid, n, seed, same, t_id, t_n, t_seed, t_same in rows:
        assert (t_id, t_n, t_seed, t_same) == (wid, n, seed, same), i
        assert n == workers and same, i
        assert int(seed) == expected_base + wid, (i, seed, expected_base)
        assert pid_of.setdefault(wid, pid) == pid, f"worker {wid} in two processes"
    assert sorted(pid_of) == list(range(workers))
    assert len(set(pid_of.values())) == workers
    assert gpufeed.get_worker_info() is None


def _first_draws(loader_class, workers, **kwargs):
    """{worker id: its first sample's (random, numpy, torch) draws and seed}."""
    data = FirstDraws(4 * workers, multiprocessing.Barrier(workers))
    loader = loader_class(data, batch_size=1, num_workers=workers, **kwargs)
    firsts = {}
    for i, wid, call, *draws in loader:
        if int(call) == 0:
            firsts[int(wid)] = tuple(float(d) for d in draws[:3]) + (draws[3][0],)
    if hasattr(loader, "close"):
        loader.close()
    assert sorted(firsts) == list(range(workers)), firsts
    return firsts


@pytest.mark.timeout(300)
def test_seeds_differ_per_worker_and_repeat_per_seed():
    """random, numpy's global generator and torch are seeded in each worker as torch's own
    workers are: different in each worker, the same again for the same torch.manual_seed or
    generator, different for another, and equal to torch's DataLoader's draws."""
    workers = 3

    def gpufeed_draws(seed=None, generator_seed=None):
        torch.manual_seed(0 if seed is None else seed)
        generator = None if generator_seed is None else torch.Generator().manual_seed(
            generator_seed)
        return _first_draws(gpufeed.DataLoader, workers, worker_type="process",
                            generator=generator)

    first = gpufeed_draws(seed=7)
    for source in range(3):  # random, numpy, torch: no two workers draw the same
        values = [first[w][source] for w in range(workers)]
        assert len(set(values)) == workers, (source, values)
    assert first == gpufeed_draws(seed=7)
    assert first != gpufeed_draws(seed=8)
    by_generator = gpufeed_draws(seed=1, generator_seed=7)
    assert by_generator == gpufeed_draws(seed=2, generator_seed=7)  # the generator decides
    assert by_generator != gpufeed_draws(seed=1, generator_seed=8)

    torch.manual_seed(7)
    assert first == _first_draws(torch.utils.data.DataLoader, workers)
