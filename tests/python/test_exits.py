"""Ctrl-C and interpreter exit with gpufeed.DataLoader alive, for each kind of worker: worker
processes and worker threads reading a Python dataset, and threads reading a bundled one; and a
loader collected on its own worker thread.

What can go wrong here does not raise in the test's own process: a wait that ignores Ctrl-C, an
exit that hangs or aborts, a thread that joins itself (std::terminate), a worker process left
running or unreaped after its loader's process exits. So each case runs in a child interpreter
whose exit code and stderr are read, with a generous hang guard around it. No assertion depends
on how fast anything runs.
"""

import signal
import textwrap

import pytest

from processes import CHILD_TIMEOUT_S, Child, assert_no_crash, still_running

# The child scripts import psutil, and torch where their batches are tensors.
pytest.importorskip("torch")
pytest.importorskip("psutil")


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
from processes import announce_when_main_waits_in_gpufeed

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
    if loader._workers is not None:
        loader._workers.start()  # as iter() would: the processes to look for afterwards
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


# ---- a loader collected on its own worker thread -------------------------------------------------

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
