"""The ways frameworks and clusters end a process that holds a gpufeed.DataLoader with worker
processes: a trainer object (or a reference cycle) holding the loader at exit, after an iter()
whose iterator was dropped before its first batch (Lightning checks that a loader iterates so),
a loader never iterated, an epoch left mid-way; a SIGTERM handler of the trainer's, inherited
by the workers; SIGTERM to the loader's process, as a cluster sends it; SIGKILL of it.

Each case runs in a child interpreter, whose exit code and stderr are read, and whose worker
processes must all be gone once it has exited (or been killed). The bounds are hang guards,
never timing checks: a process that hangs would wait forever.
"""

import os
import signal
import textwrap
import time

import pytest

from processes import CHILD_TIMEOUT_S, Child, assert_no_crash, still_running

pytest.importorskip("torch")
pytest.importorskip("psutil")

_PRELUDE = '''
import os, signal, sys, time
import numpy as np
import psutil
import gpufeed

gpufeed.set_log_level("warn")


class Sleeps:
    """Sleeps `seconds` in __getitem__."""

    def __init__(self, seconds, n=100000):
        self.seconds, self.n = seconds, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.seconds)
        return np.full(4, i, np.float32)


def loader_of(data, **kwargs):
    loader = gpufeed.DataLoader(data, batch_size=2, num_workers=2,
                                multiprocessing_context="fork", **kwargs)
    return loader


def say(line):
    """One line on stdout in one write: the loader's process and its workers share the pipe,
    and print() may write a line in pieces that another process's line then splits."""
    os.write(1, (line + "\\n").encode())


def print_workers(loader):
    workers = loader._workers.processes if loader._workers is not None else []
    say(" ".join(["workers", *(f"{p.pid}:{psutil.Process(p.pid).create_time()!r}"
                               for p in workers)]))
'''


# A child body's end: reads on, after printing the workers, until the test ends the child
# (indented as the bodies are, which _child dedents).
_READ_ON = '''
        it = iter(loader)
        next(it)
        print_workers(loader)
        for batch in it:
            pass
'''


def _child(tmp_path, body, *args):
    return Child(tmp_path, _PRELUDE + "\n" + textwrap.dedent(body).lstrip("\n"), *args)


def _workers(line):
    """[(pid, create_time)] of a "workers pid:start ..." line."""
    return [(int(pid), float(start)) for pid, start in
            (item.split(":") for item in line.split()[1:])]


def _running(workers):
    """Those of `workers` that still run: a zombie has ended (after its parent was killed, only
    the init process can reap it, and some containers' never does)."""
    import psutil

    left = []
    for pid in still_running(workers):
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                left.append(pid)
        except psutil.NoSuchProcess:
            pass
    return left


def _gone_within(workers, seconds):
    """Polls until none of `workers` runs (a bound against hangs); returns those left."""
    deadline = time.monotonic() + seconds
    left = _running(workers)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _running(workers)
    return left


# How the program holds its loader when it ends (Lightning: its trainer holds the loaders; it
# called iter() once to check that the loader iterates, and dropped the iterator).
_HOLDINGS = {
    "dropped_iterator": "iter(loader)",
    "never_iterated": "loader._workers.start()  # as iter() would, so that there are workers",
    "mid_epoch": "it = iter(loader); next(it)",
    "cycle": "it = iter(loader); next(it); trainer.me = trainer",
}


@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
@pytest.mark.parametrize("holding", list(_HOLDINGS))
@pytest.mark.parametrize("handler", [False, True], ids=["default_sigterm", "trainer_sigterm"])
def test_a_held_loader_lets_the_program_exit(tmp_path, holding, handler):
    """A SIGTERM handler of the trainer's (Lightning installs one) is inherited by forked
    workers; multiprocessing's exit ends its daemonic children with SIGTERM and joins them:
    a worker that kept the handler would never end, and neither would the program."""
    child = _child(tmp_path, '''
        if sys.argv[2] == "True":
            signal.signal(signal.SIGTERM, lambda number, frame: say("SIGTERM seen"))

        class Trainer:
            pass

        trainer = Trainer()
        trainer.loader = loader = loader_of(Sleeps(0.001))
        exec(sys.argv[1])
        print_workers(loader)
        say("exiting")
    ''', _HOLDINGS[holding], handler)
    code, out, err = child.finish()
    assert_no_crash(err)
    assert code == 0, err[-4000:]
    lines = out.splitlines()
    assert lines[-1:] == ["exiting"], out
    workers = _workers(next(line for line in lines if line.startswith("workers")))
    assert len(workers) == 2
    assert _gone_within(workers, 30) == []


@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
@pytest.mark.parametrize("handler", ["none", "sys_exit"])
def test_sigterm_to_the_loaders_process_ends_it_and_its_workers(tmp_path, handler):
    """A cluster ends a job with SIGTERM to its main process: the process ends (at once by
    default, or through a handler that calls sys.exit), and so do its workers, busy or not."""
    child = _child(tmp_path, '''
        if sys.argv[1] == "sys_exit":
            signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(143))
        loader = loader_of(Sleeps(0.2))
    ''' + _READ_ON, handler)
    workers = _workers(child.expect("workers"))
    os.kill(child.proc.pid, signal.SIGTERM)
    code, out, err = child.finish()
    assert_no_crash(err)
    assert code == (-signal.SIGTERM if handler == "none" else 143), err[-4000:]
    assert _gone_within(workers, 30) == []


@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
def test_sigkill_of_the_loaders_process_ends_its_busy_workers(tmp_path):
    """SIGKILL runs no cleanup in the loader's process: its workers, each inside a 60 s
    __getitem__, end anyway (they watch the loader's process), and no orphan keeps reading."""
    child = _child(tmp_path, '''
        class Slow(Sleeps):
            def __getitem__(self, i):
                if i >= 2:
                    say("inside")
                return super().__getitem__(i) if i >= 2 else np.full(4, i, np.float32)

        loader = loader_of(Slow(60))
    ''' + _READ_ON)
    workers = _workers(child.expect("workers"))
    child.expect("inside")
    os.kill(child.proc.pid, signal.SIGKILL)
    code, _, _ = child.finish()
    assert code == -signal.SIGKILL
    assert _gone_within(workers, 30) == [], "worker processes outlived their killed parent"
