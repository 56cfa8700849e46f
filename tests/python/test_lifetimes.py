"""Lifetimes, interrupts and exits of gpufeed.DataLoader.

What can go wrong here does not raise in the test's own process: a worker that outlives its
loader, a thread that joins itself (std::terminate), a wait that ignores Ctrl-C, an exit that
hangs or aborts. So the checks count threads (/proc/self/task) and open files (/proc/self/fd),
hold weak references to what should be gone, and run the interrupt and exit cases in a child
interpreter whose exit code and stderr are read, with a generous hang guard around each.
No assertion depends on how fast anything runs.
"""

import collections
import gc
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
import weakref

import numpy as np
import pytest

import gpufeed
from gpufeed import datasets

torch = pytest.importorskip("torch")
psutil = pytest.importorskip("psutil")

# Generous bound for a child interpreter to get through its script: it guards against hangs
# only; on a loaded 2-core machine the scripts take a few seconds.
CHILD_TIMEOUT_S = 120
# What a child's stderr must never show: a crash (faulthandler's "Fatal Python error", abort,
# segfault), std::terminate, a thread ended by an exception, or an exception swallowed at
# collection time.
CRASH_WORDS = ("Fatal Python error", "terminate called", "Segmentation fault", "Aborted",
               "Exception in thread",
               "core dumped", "Exception ignored")


# ---- in-process helpers --------------------------------------------------------------------------

def _threads():
    """The process's threads by id (Python's and the loaders' C++ workers alike)."""
    return set(os.listdir("/proc/self/task"))


def _open_files():
    return len(os.listdir("/proc/self/fd"))


def _rss():
    return psutil.Process().memory_info().rss


def _still_running(threads):
    return _threads() & threads


def _settles_to(measure, expected, within_s=20.0):
    """Polls until measure() == expected (a joined thread leaves /proc a moment after join
    returns); returns the last value. A bound against hangs, not a timing check."""
    deadline = time.monotonic() + within_s
    value = measure()
    while value != expected and time.monotonic() < deadline:
        time.sleep(0.01)
        value = measure()
    return value


class Indexed:
    """A Python dataset whose sample i is a float32 row of 4096 copies of i, and i itself."""

    def __init__(self, n=64, sleep_s=0.0):
        self.n = n
        self.sleep_s = sleep_s
        self.inside = threading.Event()  # set when a worker thread is inside __getitem__

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if threading.current_thread() is not threading.main_thread():
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


# ---- child-interpreter helpers -------------------------------------------------------------------

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(gpufeed.__file__)))

# Shared by every child script: datasets whose workers can be told apart from the main thread.
_PRELUDE = '''
import gc, os, signal, sys, threading, time, traceback
import numpy as np
import gpufeed
from gpufeed import datasets

gpufeed.set_log_level("warn")


def in_worker():
    return threading.current_thread() is not threading.main_thread()


class Sleeps:
    """Sleeps in __getitem__ (the GIL released) on worker threads."""

    def __init__(self, seconds, n=100000):
        self.seconds, self.n = seconds, n
        self.inside = threading.Event()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if in_worker():
            self.inside.set()
            time.sleep(self.seconds)
        return np.full(4, i, np.float32)


class Spins(Sleeps):
    """Runs Python in __getitem__ on worker threads, holding the GIL (but for switches)."""

    def __getitem__(self, i):
        if in_worker():
            self.inside.set()
            end = time.perf_counter() + self.seconds
            while time.perf_counter() < end:
                pass
        return np.full(4, i, np.float32)


def make(kind, seconds):
    if kind == "python":
        return Sleeps(seconds)
    if kind == "python_gil":
        return Spins(seconds)
    return datasets.Synthetic(100000, [("x", "float32", (4,))], sleep_us=seconds * 1e6)


def announce_when_main_waits_in_gpufeed(marker):
    """Prints `marker` from a helper thread once the main thread's innermost Python frame is
    gpufeed's (it is then inside next(), in Python or in the C++ wait under it)."""
    package = os.path.dirname(gpufeed.__file__)
    main = threading.main_thread().ident

    def watch():
        while True:
            frame = sys._current_frames().get(main)
            if frame is not None and frame.f_code.co_filename.startswith(package):
                print(marker, flush=True)
                return
            time.sleep(0.01)

    threading.Thread(target=watch, daemon=True).start()


def wait_inside(data):
    """Until a worker is inside the dataset's __getitem__ (bundled ones: a moment)."""
    if isinstance(data, Sleeps):
        assert data.inside.wait(60), "no worker entered __getitem__"
    else:
        time.sleep(0.2)
'''


class _Child:
    """A child interpreter running _PRELUDE + body; stdout lines arrive on a queue."""

    def __init__(self, tmp_path, body, *args):
        body = textwrap.dedent(body).lstrip("\n")
        assert not body[:1].isspace(), "the child's body must dedent to module level"
        script = tmp_path / "child.py"
        script.write_text(_PRELUDE + "\n" + body)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        env["PYTHONFAULTHANDLER"] = "1"  # a crash prints "Fatal Python error" and the stacks
        self.proc = subprocess.Popen([sys.executable, str(script), *map(str, args)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env)
        self._lines = queue.Queue()
        self._out, self._err = [], []
        self._readers = [threading.Thread(target=self._read, args=(self.proc.stdout, self._out,
                                                                   self._lines), daemon=True),
                         threading.Thread(target=self._read, args=(self.proc.stderr, self._err,
                                                                   None), daemon=True)]
        for r in self._readers:
            r.start()

    @staticmethod
    def _read(stream, into, lines):
        for line in stream:
            into.append(line)
            if lines is not None:
                lines.put(line.rstrip("\n"))
        if lines is not None:
            lines.put(None)

    def _fail(self, why):
        self.proc.kill()
        self.proc.wait()
        for r in self._readers:
            r.join(10)
        pytest.fail(f"{why}\n--- stdout:\n{''.join(self._out)}\n--- stderr:\n"
                    f"{''.join(self._err)[-4000:]}")

    def expect(self, marker):
        """Waits for the stdout line `marker`."""
        deadline = time.monotonic() + CHILD_TIMEOUT_S
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self._fail(f"the child did not print {marker!r} in {CHILD_TIMEOUT_S} s")
            if line is None:
                self.proc.wait()
                self._fail(f"the child ended (code {self.proc.returncode}) before "
                           f"printing {marker!r}")
            if line == marker:
                return

    def finish(self):
        """(returncode, stdout, stderr) once the child exits; fails if it hangs."""
        try:
            self.proc.wait(timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._fail(f"the child did not exit within {CHILD_TIMEOUT_S} s (hang)")
        for r in self._readers:
            r.join(10)
        return self.proc.returncode, "".join(self._out), "".join(self._err)


def _assert_no_crash(err):
    for word in CRASH_WORDS:
        assert word not in err, f"{word!r} in the child's stderr:\n{err[-4000:]}"


# ---- create / iterate / drop ---------------------------------------------------------------------

def _one_cycle(i, refs):
    """Cycle i: dataset kind i % 3, workers 1 or 2, output torch or numpy, and 0, 1 or 3
    batches read before the loop breaks; the loader is then simply dropped."""
    kind = i % 3
    data = _in_memory() if kind == 0 else _synthetic() if kind == 1 else Indexed()
    loader = gpufeed.DataLoader(data, batch_size=4, num_workers=(i // 3) % 2 * 2,
                                output="torch" if i % 2 else "numpy")
    refs.append(weakref.ref(loader))
    refs.append(weakref.ref(data))
    take = (0, 1, 3)[(i // 6) % 3]
    if take == 0:
        iter(loader)  # an epoch started and not read at all
    else:
        for n, batch in enumerate(loader):
            if kind != 1:  # synthetic bytes are pseudo-random
                assert int(batch["i"][0]) == 4 * n
            if n + 1 == take:
                break


@pytest.mark.timeout(900)
def test_a_thousand_loaders_leave_no_threads_files_or_memory_behind():
    """1,000 create / iterate / break cycles, mixed. Tolerance on memory: each loader's ring
    is 3 or 5 slots of 4 x 16 KiB, so leaking one ring per cycle would add 190 to 320 MiB over
    the run; glibc's caching of freed chunks and per-thread arenas moves RSS by a few MiB once
    warm (measured with the module at c07d4d2: +0.2 to +1.2 MiB after 1,000, 2,000 and 3,000
    cycles, flat). 32 MiB catches a leak of one ring every 6 cycles (or of 32 KiB per cycle)
    and stays clear of allocator noise. Threads and files must come back exactly."""
    refs = []
    for i in range(36):  # warm-up: every variant, torch's and numpy's one-time allocations
        _one_cycle(i, refs)
    gc.collect()
    threads, files, rss = _threads(), _open_files(), _rss()
    refs.clear()
    for i in range(1000):
        _one_cycle(i, refs)
    # Dropping a loader stops its workers at once (no cycle waits for the collector).
    assert _settles_to(lambda: _threads() - threads, set()) == set()
    gc.collect()
    alive = [r() for r in refs if r() is not None]
    assert not alive, f"{len(alive)} loaders or datasets of 2,000 outlived their cycle: {alive[:3]}"
    assert _open_files() == files
    grown = _rss() - rss
    assert grown < 32 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 1,000 cycles"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["python", "bundled"])
def test_del_stops_the_workers_without_the_garbage_collector(kind):
    """Reference counting alone stops a dropped loader's workers (the collector may not run
    for a long time; meanwhile the workers and the ring would stay)."""
    data = Indexed() if kind == "python" else _in_memory()
    before = _threads()
    gc.disable()
    try:
        loader = gpufeed.DataLoader(data, batch_size=4, num_workers=3, output="numpy")
        batch = next(iter(loader))
        workers = _threads() - before
        assert len(workers) == 3
        del loader
        assert _settles_to(lambda: _still_running(workers), set()) == set()
        assert batch["x"][0, 0] == 0  # a batch alive keeps its memory, not the workers
    finally:
        gc.enable()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["python", "bundled"])
def test_a_loader_dropped_mid_epoch_while_its_workers_read(kind):
    data = Indexed(n=10000, sleep_s=0.02) if kind == "python" else _synthetic(10000, 20000)
    before = _threads()
    loader = gpufeed.DataLoader(data, batch_size=4, num_workers=3, output="numpy")
    it = iter(loader)
    for _ in range(2):
        next(it)
    workers = _threads() - before
    assert len(workers) == 3
    if kind == "python":
        assert data.inside.wait(60)
    alive = weakref.ref(loader)
    del loader, it
    gc.collect()
    assert alive() is None
    assert _settles_to(lambda: _still_running(workers), set()) == set()


@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
def test_a_loader_collected_on_its_own_worker_thread(tmp_path):
    """Python's collector runs wherever Python allocates, so it can drop a loader kept in a
    reference cycle inside that loader's own __getitem__; the loader's close must not join
    the thread it runs on (it did: std::terminate, 'Resource deadlock avoided')."""
    child = _Child(tmp_path, '''
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
            loader = gpufeed.DataLoader(data, batch_size=2, num_workers=2, prefetch_depth=64)
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
    _assert_no_crash(err)
    assert code == 0, err[-4000:]
    # The case was exercised: the collector ran on a worker thread (not the main one) at least once.
    collected = [line for line in out.splitlines() if line.startswith("collected on a worker")]
    assert collected and int(collected[0].split()[-1]) >= 1, out


# ---- Ctrl-C --------------------------------------------------------------------------------------

@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
@pytest.mark.parametrize("kind", ["python", "python_gil", "bundled"])
def test_ctrl_c_during_iteration_stops_it(tmp_path, kind):
    """An epoch of 100,000 samples at 50 ms each: only the interrupt can end it in time."""
    child = _Child(tmp_path, '''
        loader = gpufeed.DataLoader(make(sys.argv[1], 0.05), batch_size=2, num_workers=2)
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
    child.proc.send_signal(signal.SIGINT)
    code, out, err = child.finish()
    _assert_no_crash(err)
    assert code == 0, err[-4000:]
    assert "caught" in out.splitlines()


@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
@pytest.mark.parametrize("kind", ["python", "python_gil", "bundled"])
@pytest.mark.parametrize("handled", [True, False], ids=["caught", "uncaught"])
def test_ctrl_c_while_waiting_in_next(tmp_path, kind, handled):
    """The first batch needs two 3-second samples; SIGINT comes while next() waits for it.
    The interrupt must end the wait, not be noticed once the batch arrives: no batch is
    delivered. Uncaught, Python exits as killed by SIGINT."""
    child = _Child(tmp_path, '''
        data = make(sys.argv[1], 3.0)
        loader = gpufeed.DataLoader(data, batch_size=2, num_workers=2)
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
    child.proc.send_signal(signal.SIGINT)
    code, out, err = child.finish()
    _assert_no_crash(err)
    assert "got a batch" not in out
    if handled:
        assert code == 0, err[-4000:]
        assert "caught, batches delivered: 0" in out.splitlines()
    else:
        assert code == -signal.SIGINT, err[-4000:]
        assert "KeyboardInterrupt" in err


# ---- interpreter exit ----------------------------------------------------------------------------

# Each case leaves loaders alive when the script ends; sys.argv[1] is the dataset's kind.
_EXIT_CASES = {
    # A loader in a global, its workers inside __getitem__ (sleeping with the GIL released, or
    # running Python and wanting the GIL while the interpreter exits).
    "workers_reading": '''
        data = make(sys.argv[1], 0.2)
        loader = gpufeed.DataLoader(data, batch_size=2, num_workers=3)
        it = iter(loader)
        next(it)
        wait_inside(data)
    ''',
    # Reachable only through a reference cycle: collected during finalization, if at all.
    "cycle": '''
        data = make(sys.argv[1], 0.2)
        loader = gpufeed.DataLoader(data, batch_size=2, num_workers=3)
        loader.cycle = loader
        next(iter(loader))
        wait_inside(data)
        del loader
    ''',
    # Held by a saved exception's traceback (its frames keep the loader's variables).
    "traceback": '''
        def train():
            data = make(sys.argv[1], 0.2)
            loader = gpufeed.DataLoader(data, batch_size=2, num_workers=3)
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
        loader = gpufeed.DataLoader(data, batch_size=2, num_workers=2)
        kept = [b for _, b in zip(range(3), loader)]
        arrays = [b for _, b in zip(range(3), gpufeed.DataLoader(data, batch_size=2,
                                                                output="numpy"))]
        loader.close()
        if sys.argv[1] == "python":
            assert float(kept[2][1, 0]) == 5.0
    ''',
    # A daemon thread waiting in next() when the main thread ends: it must not take the GIL
    # back once the interpreter finalizes (Python ends such threads by an unwind that C++
    # frames turn into std::terminate), nor die on "the loader is closed".
    "daemon_thread": '''
        loader = gpufeed.DataLoader(make(sys.argv[1], 0.01), batch_size=2, num_workers=2)
        running = threading.Event()

        def consume():
            for batch in loader:
                running.set()

        threading.Thread(target=consume, daemon=True).start()
        assert running.wait(60)
    ''',
}
_EXIT_RUNS = [("workers_reading", "python"), ("workers_reading", "python_gil"),
              ("cycle", "python"), ("traceback", "python"), ("traceback", "bundled"),
              ("tensors", "python"), ("tensors", "bundled"), ("daemon_thread", "python"),
              ("daemon_thread", "bundled")]


@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
@pytest.mark.parametrize("case,kind", _EXIT_RUNS, ids=[f"{c}-{k}" for c, k in _EXIT_RUNS])
def test_exit_with_a_loader_alive(tmp_path, case, kind):
    body = textwrap.dedent(_EXIT_CASES[case]) + 'print("exiting", flush=True)\n'
    code, out, err = _Child(tmp_path, body, kind).finish()
    _assert_no_crash(err)
    assert "Traceback" not in err, err[-4000:]
    assert code == 0, err[-4000:]
    assert out.splitlines()[-1:] == ["exiting"]


@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
def test_an_atexit_hook_that_runs_after_gpufeeds(tmp_path):
    """gpufeed's own atexit hook closes every loader first; a hook of the user's that runs
    later and asks for a batch gets ValueError, and the exit neither hangs nor crashes."""
    child = _Child(tmp_path, '''
        import atexit
        data = make("python", 0.01)
        it = iter(gpufeed.DataLoader(data, batch_size=2, num_workers=2))
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
    ''')
    code, out, err = child.finish()
    _assert_no_crash(err)
    assert code == 0, err[-4000:]
    assert "late hook: the loader is closed" in out.splitlines()


# How the loop ends, and the exit code that must follow.
_LOOP_ENDINGS = {
    "sys_exit": ("sys.exit(3)", 3),
    "exception": ('raise RuntimeError("the training step failed")', 1),
}


@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
@pytest.mark.parametrize("ending", list(_LOOP_ENDINGS))
@pytest.mark.parametrize("kind", ["python", "python_gil", "bundled"])
def test_leaving_the_loop_by_sys_exit_or_an_exception(tmp_path, ending, kind):
    statement, expected_code = _LOOP_ENDINGS[ending]
    child = _Child(tmp_path, '''
        data = make(sys.argv[1], 0.1)
        for i, batch in enumerate(gpufeed.DataLoader(data, batch_size=2, num_workers=3)):
            if i == 1:
                wait_inside(data)
                exec(sys.argv[2])
    ''', kind, statement)
    code, _, err = child.finish()
    _assert_no_crash(err)
    assert code == expected_code, err[-4000:]
    if ending == "exception":
        assert "RuntimeError: the training step failed" in err


# ---- tensors and their slots ---------------------------------------------------------------------

@pytest.mark.timeout(120)
@pytest.mark.parametrize("output", ["torch", "numpy"])
@pytest.mark.parametrize("kind", ["python", "bundled"])
def test_tensors_outlive_their_loader(output, kind):
    data = Indexed() if kind == "python" else _in_memory()
    loader = gpufeed.DataLoader(data, batch_size=4, num_workers=2, output=output)
    kept = [batch for _, batch in zip(range(6), loader)]
    del loader
    gc.collect()
    # Another loader's ring now takes memory, and writes other values into it.
    for _ in gpufeed.DataLoader(_in_memory(offset=-1000), batch_size=4, num_workers=2,
                                output=output):
        pass
    gc.collect()
    for n, batch in enumerate(kept):
        expected = np.repeat(np.arange(4 * n, 4 * n + 4, dtype=np.float32)[:, None], 4096, 1)
        assert np.array_equal(np.asarray(batch["x"]), expected)
        assert np.array_equal(np.asarray(batch["i"]), np.arange(4 * n, 4 * n + 4))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("output", ["torch", "numpy"])
def test_tensors_hold_their_slot_until_they_die(output):
    """The slot goes back when the last tensor of the batch dies (not the batch's dict): the
    ring (5 slots) grows only while tensors are held, and their slots are reused once they die."""
    loader = gpufeed.DataLoader(_in_memory(n=256), batch_size=4, num_workers=2, output=output)
    assert loader.stats()["ring_slots"] == 5
    for batch in loader:  # 64 batches, each dropped by the next step
        pass
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
@pytest.mark.parametrize("kind", ["python", "bundled"])
def test_two_threads_share_one_epoch(kind):
    """Two threads draw from one iterator: every batch of the epoch reaches exactly one of
    them, and both stop at the epoch's end (neither reads on into the next epoch)."""
    n = 400
    data = Indexed(n=n) if kind == "python" else _in_memory(n=n)
    loader = gpufeed.DataLoader(data, batch_size=4, num_workers=2, output="numpy")
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
def test_close_ends_a_wait_in_another_thread():
    """close() while another thread waits in next(): that thread gets ValueError, no hang."""
    # 4 samples of 4 s on 2 workers: no batch can be ready before close(), even on a machine
    # so loaded that the main thread runs seconds late.
    data = Indexed(n=10000, sleep_s=4.0)
    loader = gpufeed.DataLoader(data, batch_size=4, num_workers=2, output="numpy")
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


# ---- close() -------------------------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_close_then_iterate_raises_and_close_twice_is_fine():
    before = _threads()
    loader = gpufeed.DataLoader(_in_memory(), batch_size=4, num_workers=2, output="numpy")
    it = iter(loader)
    batch = next(it)
    workers = _threads() - before
    assert len(workers) == 2
    loader.close()
    assert _settles_to(lambda: _still_running(workers), set()) == set()
    with pytest.raises(ValueError, match="closed"):
        iter(loader)
    with pytest.raises(ValueError, match="closed"):
        next(it)
    loader.close()
    assert batch["i"].tolist() == [0, 1, 2, 3]  # batches stay valid after close

    with gpufeed.DataLoader(_in_memory(), batch_size=4, output="numpy") as scoped:
        next(iter(scoped))
    with pytest.raises(ValueError, match="closed"):
        next(iter(scoped))
    scoped.close()
