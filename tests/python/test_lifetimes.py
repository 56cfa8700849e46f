"""Lifetimes of gpufeed.DataLoader, for each kind of worker: worker processes and worker threads
reading a Python dataset, and threads reading a bundled one.

What can go wrong here does not raise in the test's own process: a worker (thread or process)
that outlives its loader, a thread that joins itself (std::terminate), a batch whose memory goes
with its loader. So the checks count threads (/proc/self/task), open files (/proc/self/fd) and
child processes (psutil), and hold weak references to what should be gone, with a generous hang
guard around each. A worker process's Python state is its own (a forked copy), so what a worker
must tell the test travels by a multiprocessing Event made before the loader (inherited by fork)
or in the samples it returns. No assertion depends on how fast anything runs. Ctrl-C and
interpreter exit, which run in a child interpreter, are test_exits.py's.
"""

import collections
import gc
import multiprocessing
import os
import threading
import time
import weakref

import numpy as np
import pytest

import gpufeed
from gpufeed import datasets
from processes import gpufeed_memfds, mappings, settles_to, worker_children

torch = pytest.importorskip("torch")
psutil = pytest.importorskip("psutil")

# Who reads: worker processes or worker threads calling a Python dataset's __getitem__, or
# gpufeed's threads reading a bundled (C++) dataset.
KINDS = ["process", "thread", "bundled"]


# ---- in-process helpers --------------------------------------------------------------------------

def _threads():
    """The process's threads by id (Python's and the loaders' C++ threads alike)."""
    return set(os.listdir("/proc/self/task"))


def _open_files():
    return len(os.listdir("/proc/self/fd"))


def _rss():
    return psutil.Process().memory_info().rss


def _children():
    return {p.pid for p in worker_children()}


def _still_running(threads):
    return _threads() & threads


class Indexed:
    """A Python dataset whose sample i is a float32 row of 4096 copies of i, and i itself. In a
    worker (process or thread) it sleeps `sleep_s` per sample and, with signal_inside, sets
    `inside`: a multiprocessing Event, so that a worker process's set() reaches the test."""

    def __init__(self, n=64, sleep_s=0.0, signal_inside=False):
        self.n = n
        self.sleep_s = sleep_s
        self.inside = multiprocessing.Event() if signal_inside else None

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if gpufeed.get_worker_info() is not None:  # in a worker, not on the caller's thread
            if self.inside is not None:
                self.inside.set()
            if self.sleep_s:
                time.sleep(self.sleep_s)
        return {"x": np.full(4096, i, np.float32), "i": np.int64(i)}


def _in_memory(n=64, offset=0):
    index = np.arange(n, dtype=np.int64)
    rows = np.repeat((index + offset).astype(np.float32)[:, None], 4096, axis=1)
    return datasets.InMemory({"x": rows, "i": index})


def _synthetic(n=64, sleep_us=0.0):
    return datasets.Synthetic(n, [("x", "float32", (4096,)), ("i", "int64", ())],
                              sleep_us=sleep_us)


def _loader(kind, data, **kwargs):
    """gpufeed.DataLoader over `data`, its workers of `kind`."""
    if kind != "bundled":
        kwargs["worker_type"] = kind
    return gpufeed.DataLoader(data, **kwargs)


# ---- create / iterate / drop ---------------------------------------------------------------------

def _one_cycle(i, refs):
    """Cycle i: a bundled dataset (in memory, synthetic) or a Python one (on worker threads, on
    worker processes), workers 0 or 2, output numpy or torch, and 0, 1 or 3 batches read before
    the loop breaks; the loader is then simply dropped."""
    kind = i % 4
    data = _in_memory() if kind == 0 else _synthetic() if kind == 1 else Indexed()
    loader = gpufeed.DataLoader(data, batch_size=4, num_workers=(i // 4) % 2 * 2,
                                output=("numpy", "torch")[(i // 8) % 2],
                                worker_type=("thread", "process")[kind == 3] if kind >= 2
                                else "auto")
    refs.append(weakref.ref(loader))
    refs.append(weakref.ref(data))
    take = (0, 1, 3)[(i // 16) % 3]
    if take == 0:
        iter(loader)  # an epoch started and not read at all
    else:
        for n, batch in enumerate(loader):
            if kind != 1:  # synthetic bytes are pseudo-random
                assert int(batch["i"][0]) == 4 * n
            if n + 1 == take:
                break


@pytest.mark.timeout(900)
def test_a_thousand_loaders_leave_no_threads_processes_files_or_memory_behind():
    """1,000 create / iterate / break cycles, mixed, a quarter on worker processes. Tolerance
    on memory: each loader's ring is 3 or 5 slots of 4 x 16 KiB, so leaking one ring per cycle
    would add 190 to 320 MiB over the run; glibc's caching of freed chunks and per-thread arenas
    moves RSS by a few MiB once warm (measured on 6c7df71's tree: +0.2 MiB after 1,000 and after
    2,000 cycles). 32 MiB catches a leak of one ring every 6 cycles (or of 32 KiB per cycle)
    and stays clear of allocator noise. Threads, child processes, files and the memfds the
    worker processes share must come back exactly."""
    refs = []
    for i in range(48):  # warm-up: every variant, torch's and numpy's one-time allocations
        _one_cycle(i, refs)
    gc.collect()
    threads, children, files, rss = _threads(), _children(), _open_files(), _rss()
    assert gpufeed_memfds() == [] and mappings(containing="memfd:gpufeed") == []
    refs.clear()
    for i in range(1000):
        _one_cycle(i, refs)
    # Dropping a loader stops its workers at once (no cycle waits for the collector).
    assert settles_to(lambda: _threads() - threads, set()) == set()
    assert settles_to(lambda: _children() - children, set()) == set()
    gc.collect()
    alive = [r() for r in refs if r() is not None]
    assert not alive, f"{len(alive)} loaders or datasets of 2,000 outlived their cycle: {alive[:3]}"
    assert _open_files() == files
    assert gpufeed_memfds() == []
    assert mappings(containing="memfd:gpufeed") == []
    grown = _rss() - rss
    assert grown < 32 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 1,000 cycles"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", KINDS)
def test_del_stops_the_workers_without_the_garbage_collector(kind):
    """Reference counting alone stops a dropped loader's workers (the collector may not run
    for a long time; meanwhile the workers and the ring would stay)."""
    data = _in_memory() if kind == "bundled" else Indexed()
    before, children = _threads(), _children()
    gc.disable()
    try:
        loader = _loader(kind, data, batch_size=4, num_workers=3, output="numpy")
        batch = next(iter(loader))
        workers = _threads() - before
        processes = _children() - children
        if kind == "process":
            assert len(processes) == 3 and workers  # and the threads that drive them
        else:
            assert len(workers) == 3 and not processes
        del loader
        assert settles_to(lambda: _still_running(workers), set()) == set()
        assert settles_to(lambda: _children() & processes, set()) == set()
        assert batch["x"][0, 0] == 0  # a batch alive keeps its memory, not the workers
    finally:
        gc.enable()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", KINDS)
def test_a_loader_dropped_mid_epoch_while_its_workers_read(kind):
    if kind == "bundled":
        data = _synthetic(10000, 20000)
    else:
        data = Indexed(n=10000, sleep_s=0.02, signal_inside=True)
    before, children = _threads(), _children()
    loader = _loader(kind, data, batch_size=4, num_workers=3, output="numpy")
    it = iter(loader)
    for _ in range(2):
        next(it)
    workers = _threads() - before
    processes = _children() - children
    assert len(processes if kind == "process" else workers) == 3
    if kind != "bundled":
        assert data.inside.wait(60)
    alive = weakref.ref(loader)
    del loader, it
    gc.collect()
    assert alive() is None
    assert settles_to(lambda: _still_running(workers), set()) == set()
    assert settles_to(lambda: _children() & processes, set()) == set()


# ---- tensors and their slots ---------------------------------------------------------------------

@pytest.mark.timeout(120)
@pytest.mark.parametrize("output", ["torch", "numpy"])
@pytest.mark.parametrize("kind", KINDS)
def test_tensors_outlive_their_loader(output, kind):
    """A batch's memory (for worker processes: the ring they share, an anonymous memfd) lives
    as long as its tensors, after the loader and its workers are gone."""
    data = _in_memory() if kind == "bundled" else Indexed()
    loader = _loader(kind, data, batch_size=4, num_workers=2, output=output)
    kept = [batch for _, batch in zip(range(6), loader)]
    del loader
    gc.collect()
    # Another loader's ring now takes memory, and writes other values into it.
    other = _in_memory(offset=-1000) if kind == "bundled" else _Offset(-1000)
    for _ in _loader(kind, other, batch_size=4, num_workers=2, output=output):
        pass
    gc.collect()
    for n, batch in enumerate(kept):
        expected = np.repeat(np.arange(4 * n, 4 * n + 4, dtype=np.float32)[:, None], 4096, 1)
        assert np.array_equal(np.asarray(batch["x"]), expected)
        assert np.array_equal(np.asarray(batch["i"]), np.arange(4 * n, 4 * n + 4))


class _Offset(Indexed):
    """Indexed, with x shifted by `offset`."""

    def __init__(self, offset):
        super().__init__()
        self.offset = offset

    def __getitem__(self, i):
        sample = super().__getitem__(i)
        sample["x"] += self.offset
        return sample


@pytest.mark.timeout(120)
@pytest.mark.parametrize("output", ["torch", "numpy"])
@pytest.mark.parametrize("kind", KINDS)
def test_tensors_hold_their_slot_until_they_die(output, kind):
    """The slot goes back when the last tensor of the batch dies (not the batch's dict): the
    ring (5 slots) grows only while tensors are held, and their slots are reused once they die."""
    data = _in_memory(n=256) if kind == "bundled" else Indexed(n=256)
    loader = _loader(kind, data, batch_size=4, num_workers=2, output=output)
    for batch in loader:  # 64 batches, each dropped by the next step
        pass
    assert loader.stats()["ring_slots"] == 5
    assert loader.stats()["ring_grown"] == 0

    held = [batch["x"] for _, batch in zip(range(12), loader)]  # the tensors, not the batches
    grown = loader.stats()["ring_grown"]
    assert grown > 0
    del held
    gc.collect()
    # Held again: the slots the first 12 tensors freed serve these 12, so the ring does not grow.
    held = [batch["i"] for _, batch in zip(range(12), loader)]
    assert loader.stats()["ring_grown"] == grown
    del held


# ---- consumers -----------------------------------------------------------------------------------

@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", KINDS)
def test_two_threads_share_one_epoch(kind):
    """Two threads draw from one iterator: every batch of the epoch reaches exactly one of
    them, and both stop at the epoch's end (neither reads on into the next epoch)."""
    n = 400
    data = _in_memory(n=n) if kind == "bundled" else Indexed(n=n)
    loader = _loader(kind, data, batch_size=4, num_workers=2, output="numpy")
    it = iter(loader)
    seen = collections.defaultdict(list)
    errors = []

    def consume(name):
        try:
            for batch in it:
                seen[name].extend(batch["i"].tolist())
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=consume, args=(name,), daemon=True) for name in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a consumer hung"
    assert not errors, errors
    indices = seen["a"] + seen["b"]
    assert sorted(indices) == list(range(n)), (len(seen["a"]), len(seen["b"]))
    # Both threads ran; the loader served them one at a time (each saw its own batches whole).
    assert loader.stats()["batches"] == n // 4


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["process", "thread"])
def test_close_ends_a_wait_in_another_thread(kind):
    """close() while another thread waits in next(): that thread gets ValueError, no hang, and
    the workers are gone (a worker process in the middle of a sample is ended)."""
    # 4 samples of 4 s on 2 workers: no batch can be ready before close(), even on a machine
    # so loaded that the main thread runs seconds late.
    data = Indexed(n=10000, sleep_s=4.0, signal_inside=True)
    children = _children()
    loader = _loader(kind, data, batch_size=4, num_workers=2, output="numpy")
    it = iter(loader)
    outcome = []

    def consume():
        try:
            next(it)
            outcome.append("batch")
        except ValueError as e:
            outcome.append(str(e))

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    assert data.inside.wait(60)
    loader.close()
    t.join(60)
    assert not t.is_alive(), "the waiting thread hung after close()"
    assert len(outcome) == 1 and "closed" in outcome[0], outcome
    assert _children() - children == set()  # close() reaped them


# ---- close() -------------------------------------------------------------------------------------

class _FailsFirst(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i < 2:
            raise KeyError(f"no record for {i}")
        return np.full(4, i, np.float32)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["process", "thread"])
def test_a_failed_batchs_exception_holding_the_last_reference_to_its_loader(kind):
    """The only reference to the loader is the iterator in the frame of the failed next():
    dropping the exception drops the loader, whose __del__ closes it on the thread that was
    in next() (closing must not wait there for a lock that thread holds)."""
    children = _children()
    for _ in range(20):
        def fail_once():
            loader = gpufeed.DataLoader(_FailsFirst(), batch_size=2, num_workers=2,
                                        worker_type=kind)
            it = iter(loader)
            del loader
            next(it)

        try:
            fail_once()
        except KeyError as e:
            error = e
        del error  # the traceback's frames go, with the iterator and the loader
        gc.collect()
    assert settles_to(lambda: _children() - children, set()) == set()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", KINDS)
def test_close_then_iterate_raises_and_close_twice_is_fine(kind):
    data = _in_memory() if kind == "bundled" else Indexed()
    before, children = _threads(), _children()
    loader = _loader(kind, data, batch_size=4, num_workers=2, output="numpy")
    it = iter(loader)
    batch = next(it)
    workers = _threads() - before
    processes = _children() - children
    assert len(processes if kind == "process" else workers) == 2
    loader.close()
    assert _children() - children == set()  # close() reaped them: no zombie either
    assert settles_to(lambda: _still_running(workers), set()) == set()
    with pytest.raises(ValueError, match="closed"):
        iter(loader)
    with pytest.raises(ValueError, match="closed"):
        next(it)
    loader.close()
    assert batch["i"].tolist() == [0, 1, 2, 3]  # batches stay valid after close

    with _loader(kind, data, batch_size=4, output="numpy") as scoped:
        next(iter(scoped))
    with pytest.raises(ValueError, match="closed"):
        next(iter(scoped))
    scoped.close()
