"""Lifetimes, interrupts and exits of gpufeed.DataLoader, for each kind of worker: worker
processes and worker threads reading a Python dataset, and threads reading a bundled one.

What can go wrong here does not raise in the test's own process: a worker (thread or process)
that outlives its loader, a thread that joins itself (std::terminate), a wait that ignores
Ctrl-C, an exit that hangs or aborts, a worker process left running or unreaped after its
loader's process exits. So the checks count threads (/proc/self/task), open files
(/proc/self/fd) and child processes (psutil), hold weak references to what should be gone, and
run the interrupt and exit cases in a child interpreter whose exit code and stderr are read,
with a generous hang guard around each. A worker process's Python state is its own (a forked
copy), so what a worker must tell the test travels by a multiprocessing Event made before the
loader (inherited by fork) or in the samples it returns. No assertion depends on how fast
anything runs.
"""

import collections
import gc
import multiprocessing
import os
import signal
import textwrap
import threading
import time
import weakref

import numpy as np
import pytest

import gpufeed
from gpufeed import datasets
from samples import (CHILD_TIMEOUT_S, Child, assert_no_crash, gpufeed_memfds, mappings,
                     settles_to, still_running, worker_children)

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


# ---- child-interpreter helpers -------------------------------------------------------------------

# Shared by every child script: datasets that tell a worker from the caller's thread, and a
# loader of each kind. sys.argv[1] is the kind where a case takes one:
#   "process"       worker processes, sleeping in __getitem__
#   "process_busy"  worker processes, running Python in __getitem__
#   "thread"        worker threads, sleeping (the GIL released)
#   "thread_gil"    worker threads, running Python (holding the GIL but for switches)
#   "bundled"       datasets.Synthetic, read in C++ on threads
_PRELUDE = '''
import gc, multiprocessing, os, signal, sys, threading, time, traceback
import numpy as np
import psutil
import gpufeed
from gpufeed import datasets
from samples import announce_when_main_waits_in_gpufeed

gpufeed.set_log_level("warn")


def in_worker():
    """In a worker process, or on a loader's worker thread."""
    return (gpufeed.get_worker_info() is not None
            or threading.current_thread() is not threading.main_thread())


class Sleeps:
    """Sleeps in __getitem__ (the GIL released) in workers; `inside` (a multiprocessing Event,
    inherited by forked workers) is set once a worker is in __getitem__."""

    def __init__(self, seconds, n=100000):
        self.seconds, self.n = seconds, n
        self.inside = multiprocessing.Event()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if in_worker():
            self.inside.set()
            time.sleep(self.seconds)
        return np.full(4, i, np.float32)


class Spins(Sleeps):
    """Runs Python in __getitem__ in workers (on a thread: holding the GIL but for switches)."""

    def __getitem__(self, i):
        if in_worker():
            self.inside.set()
            end = time.perf_counter() + self.seconds
            while time.perf_counter() < end:
                pass
        return np.full(4, i, np.float32)


def make(kind, seconds):
    if kind == "bundled":
        return datasets.Synthetic(100000, [("x", "float32", (4,))], sleep_us=seconds * 1e6)
    return (Spins if kind.endswith(("_busy", "_gil")) else Sleeps)(seconds)


def loader_for(kind, data, **kwargs):
    """A loader of `kind` over `data`; prints its worker processes ("workers pid:start ...")
    so that the test can check, after this interpreter exits, that none is left."""
    if kind != "bundled":
        kwargs["worker_type"] = kind.split("_")[0]
    if kind.startswith("process"):
        kwargs["multiprocessing_context"] = "fork"  # this script cannot be imported again
    loader = gpufeed.DataLoader(data, **kwargs)
    workers = loader._workers.processes if loader._workers is not None else []
    print("workers", *(f"{p.pid}:{psutil.Process(p.pid).create_time()!r}" for p in workers),
          flush=True)
    return loader


def wait_inside(data):
    """Until a worker is inside the dataset's __getitem__ (bundled ones: a moment)."""
    if isinstance(data, Sleeps):
        assert data.inside.wait(60), "no worker entered __getitem__"
    else:
        time.sleep(0.2)
'''


def _child(tmp_path, body, *args):
    """A child interpreter running _PRELUDE + body."""
    body = textwrap.dedent(body).lstrip("\n")
    assert not body[:1].isspace(), "the child's body must dedent to module level"
    return Child(tmp_path, _PRELUDE + "\n" + body, *args)


def _workers_printed(out):
    """[(pid, create_time)] of every worker process the child's loader_for() printed."""
    pairs = []
    for line in out.splitlines():
        if line.startswith("workers"):
            for item in line.split()[1:]:
                pid, start = item.split(":")
                pairs.append((int(pid), float(start)))
    return pairs


def _assert_no_worker_left(out, kind):
    """Every worker process the child made is gone (not running, not a zombie) once the child
    has exited: its exit reaped them."""
    workers = _workers_printed(out)
    if kind.startswith("process"):
        assert workers, f"the child printed no worker processes:\n{out}"
    assert still_running(workers) == [], f"worker processes outlived the child: {workers}"


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


@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
def test_a_loader_collected_on_its_own_worker_thread(tmp_path):
    """Threads only (a worker process runs no collection of the loader's process). Python's
    collector runs wherever Python allocates, so it can drop a loader kept in a reference cycle
    inside that loader's own __getitem__; the loader's close must not join the thread it runs
    on (it did: std::terminate, 'Resource deadlock avoided')."""
    child = _child(tmp_path, '''
        class Collects(Sleeps):
            """Runs the collector inside __getitem__ once armed."""
            armed = False

            def __getitem__(self, i):
                if in_worker() and self.armed:
                    gc.collect()
                return super().__getitem__(i)

        on_worker = 0
        for round in range(10):
            data = Collects(0.005)
            loader = gpufeed.DataLoader(data, batch_size=2, num_workers=2, prefetch_depth=64,
                                        worker_type="thread")
            next(iter(loader))
            loader.cycle = loader  # only the collector can drop it now
            where = []
            weakref_finalize = __import__("weakref").finalize
            weakref_finalize(loader, lambda: where.append(in_worker()))
            del loader
            data.armed = True
            deadline = time.monotonic() + 60
            while not where and time.monotonic() < deadline:
                time.sleep(0.01)  # allocates nothing: the collection happens on a worker
            assert where, "the loader was never collected"
            on_worker += where[0]
        print("collected on a worker", on_worker, flush=True)
    ''')
    code, out, err = child.finish()
    assert_no_crash(err)
    assert code == 0, err[-4000:]
    # The case was exercised: the collector ran on a worker thread (not the main one) at least once.
    collected = [line for line in out.splitlines() if line.startswith("collected on a worker")]
    assert collected and int(collected[0].split()[-1]) >= 1, out


# ---- Ctrl-C --------------------------------------------------------------------------------------

# Ctrl-C reaches the child's whole session (its worker processes too), as a terminal's does.
_INTERRUPT_KINDS = ["process", "process_busy", "thread", "thread_gil", "bundled"]


@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
@pytest.mark.parametrize("kind", _INTERRUPT_KINDS)
def test_ctrl_c_during_iteration_stops_it(tmp_path, kind):
    """An epoch of 100,000 samples at 50 ms each: only the interrupt can end it in time. Worker
    processes ignore the interrupt (no second traceback) and are gone when the child exits."""
    child = _child(tmp_path, '''
        loader = loader_for(sys.argv[1], make(sys.argv[1], 0.05), batch_size=2, num_workers=2)
        try:
            for i, batch in enumerate(loader):
                if i == 2:
                    print("iterating", flush=True)
        except KeyboardInterrupt:
            print("caught", flush=True)
        else:
            print("finished the epoch", flush=True)
    ''', kind)
    child.expect("iterating")
    child.interrupt()
    code, out, err = child.finish()
    assert_no_crash(err)
    assert code == 0, err[-4000:]
    assert "caught" in out.splitlines()
    assert "KeyboardInterrupt" not in err, err[-4000:]
    _assert_no_worker_left(out, kind)


@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
@pytest.mark.parametrize("kind", _INTERRUPT_KINDS)
@pytest.mark.parametrize("handled", [True, False], ids=["caught", "uncaught"])
def test_ctrl_c_while_waiting_in_next(tmp_path, kind, handled):
    """The first batch needs two 3-second samples; SIGINT comes while next() waits for it.
    The interrupt must end the wait, not be noticed once the batch arrives: no batch is
    delivered. Uncaught, Python exits as killed by SIGINT, with one traceback (the workers
    print none)."""
    child = _child(tmp_path, '''
        data = make(sys.argv[1], 3.0)
        loader = loader_for(sys.argv[1], data, batch_size=2, num_workers=2)
        it = iter(loader)
        wait_inside(data)
        announce_when_main_waits_in_gpufeed("waiting")
        if sys.argv[2] == "caught":
            try:
                next(it)
                print("got a batch", flush=True)
            except KeyboardInterrupt:
                print("caught, batches delivered:", loader.stats()["batches"], flush=True)
        else:
            next(it)
            print("got a batch", flush=True)
    ''', kind, "caught" if handled else "uncaught")
    child.expect("waiting")
    child.interrupt()
    code, out, err = child.finish()
    assert_no_crash(err)
    assert "got a batch" not in out
    if handled:
        assert code == 0, err[-4000:]
        assert "caught, batches delivered: 0" in out.splitlines()
        assert "KeyboardInterrupt" not in err, err[-4000:]
    else:
        assert code == -signal.SIGINT, err[-4000:]
        assert err.count("KeyboardInterrupt") == 1, err[-4000:]
    _assert_no_worker_left(out, kind)


# ---- interpreter exit ----------------------------------------------------------------------------

# Each case leaves loaders alive when the script ends; sys.argv[1] is the loader's kind.
_EXIT_CASES = {
    # A loader in a global, its workers inside __getitem__ (sleeping, or running Python: on a
    # thread, wanting the GIL while the interpreter exits).
    "workers_reading": '''
        data = make(sys.argv[1], 0.2)
        loader = loader_for(sys.argv[1], data, batch_size=2, num_workers=3)
        it = iter(loader)
        next(it)
        wait_inside(data)
    ''',
    # Reachable only through a reference cycle: collected during finalization, if at all.
    "cycle": '''
        data = make(sys.argv[1], 0.2)
        loader = loader_for(sys.argv[1], data, batch_size=2, num_workers=3)
        loader.cycle = loader
        next(iter(loader))
        wait_inside(data)
        del loader
    ''',
    # Held by a saved exception's traceback (its frames keep the loader's variables).
    "traceback": '''
        def train():
            data = make(sys.argv[1], 0.2)
            loader = loader_for(sys.argv[1], data, batch_size=2, num_workers=3)
            for batch in loader:
                wait_inside(data)
                raise ValueError("kept")

        try:
            train()
        except ValueError as e:
            saved = e
    ''',
    # Tensors of a closed loader alive at exit, in torch and numpy.
    "tensors": '''
        import torch
        data = make(sys.argv[1], 0.01)
        loader = loader_for(sys.argv[1], data, batch_size=2, num_workers=2)
        kept = [b for _, b in zip(range(3), loader)]
        arrays = [b for _, b in zip(range(3), loader_for(sys.argv[1], data, batch_size=2,
                                                         output="numpy"))]
        loader.close()
        if sys.argv[1] != "bundled":
            assert float(kept[2][1, 0]) == 5.0
            assert float(arrays[2][1, 0]) == 5.0
    ''',
    # A daemon thread waiting in next() when the main thread ends: it must not take the GIL
    # back once the interpreter finalizes (Python ends such threads by an unwind that C++
    # frames turn into std::terminate), nor die on "the loader is closed".
    "daemon_thread": '''
        loader = loader_for(sys.argv[1], make(sys.argv[1], 0.01), batch_size=2, num_workers=2)
        running = threading.Event()

        def consume():
            for batch in loader:
                running.set()

        threading.Thread(target=consume, daemon=True).start()
        assert running.wait(60)
    ''',
}
_EXIT_RUNS = [("workers_reading", "process"), ("workers_reading", "process_busy"),
              ("workers_reading", "thread"), ("workers_reading", "thread_gil"),
              ("cycle", "process"), ("cycle", "thread"),
              ("traceback", "process"), ("traceback", "thread"), ("traceback", "bundled"),
              ("tensors", "process"), ("tensors", "thread"), ("tensors", "bundled"),
              ("daemon_thread", "process"), ("daemon_thread", "thread"),
              ("daemon_thread", "bundled")]


@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
@pytest.mark.parametrize("case,kind", _EXIT_RUNS, ids=[f"{c}-{k}" for c, k in _EXIT_RUNS])
def test_exit_with_a_loader_alive(tmp_path, case, kind):
    body = textwrap.dedent(_EXIT_CASES[case]) + 'print("exiting", flush=True)\n'
    code, out, err = _child(tmp_path, body, kind).finish()
    assert_no_crash(err)
    assert "Traceback" not in err, err[-4000:]
    assert code == 0, err[-4000:]
    assert out.splitlines()[-1:] == ["exiting"]
    _assert_no_worker_left(out, kind)


@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
@pytest.mark.parametrize("kind", ["process", "thread"])
def test_an_atexit_hook_that_runs_after_gpufeeds(tmp_path, kind):
    """gpufeed's own atexit hook closes every loader first; a hook of the user's that runs
    later and asks for a batch gets ValueError, and the exit neither hangs nor crashes."""
    child = _child(tmp_path, '''
        import atexit
        data = make(sys.argv[1], 0.01)
        it = iter(loader_for(sys.argv[1], data, batch_size=2, num_workers=2))
        next(it)

        def late_hook():
            try:
                next(it)
            except ValueError as e:
                print("late hook:", e, flush=True)

        # Hooks run last registered first: this one after gpufeed's.
        atexit.unregister(gpufeed._gpufeed._at_exit)
        atexit.register(late_hook)
        atexit.register(gpufeed._gpufeed._at_exit)
    ''', kind)
    code, out, err = child.finish()
    assert_no_crash(err)
    assert code == 0, err[-4000:]
    assert "late hook: the loader is closed" in out.splitlines()
    _assert_no_worker_left(out, kind)


# How the loop ends, and the exit code that must follow.
_LOOP_ENDINGS = {
    "sys_exit": ("sys.exit(3)", 3),
    "exception": ('raise RuntimeError("the training step failed")', 1),
}


@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
@pytest.mark.parametrize("ending", list(_LOOP_ENDINGS))
@pytest.mark.parametrize("kind", _INTERRUPT_KINDS)
def test_leaving_the_loop_by_sys_exit_or_an_exception(tmp_path, ending, kind):
    statement, expected_code = _LOOP_ENDINGS[ending]
    child = _child(tmp_path, '''
        data = make(sys.argv[1], 0.1)
        for i, batch in enumerate(loader_for(sys.argv[1], data, batch_size=2, num_workers=3)):
            if i == 1:
                wait_inside(data)
                exec(sys.argv[2])
    ''', kind, statement)
    code, out, err = child.finish()
    assert_no_crash(err)
    assert code == expected_code, err[-4000:]
    if ending == "exception":
        assert "RuntimeError: the training step failed" in err
    _assert_no_worker_left(out, kind)


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
