"""Processes, files and child interpreters for the suites that check what a loader leaves behind
(test_lifetimes.py, test_exits.py, test_workers.py, test_worker_lifetimes.py): a process's worker
children, open files, gpufeed's memfds and mappings, a bounded wait for a state, a hang guard, and
a child interpreter to run a script in."""

# multiprocessing's own helper processes, started once and kept for the session (a forkserver's
# workers are its children and count as ours; the server itself does not).
_MULTIPROCESSING_HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


def worker_children():
    """This process's descendants (zombies included), but multiprocessing's helpers."""
    import psutil

    me = psutil.Process()
    out = []
    for child in me.children(recursive=True):
        try:
            helper = child.ppid() == me.pid and any(
                name in " ".join(child.cmdline()) for name in _MULTIPROCESSING_HELPERS)
        except psutil.NoSuchProcess:
            continue
        if not helper:
            out.append(child)
    return out


def open_files(pid="self"):
    """{fd: what it refers to} of a process (readlink of /proc/<pid>/fd/*)."""
    import os

    out = {}
    folder = f"/proc/{pid}/fd"
    for name in os.listdir(folder):
        try:
            out[int(name)] = os.readlink(f"{folder}/{name}")
        except OSError:  # closed meanwhile (listdir's own descriptor among them)
            pass
    return out


def gpufeed_memfds(pid="self"):
    """The targets of a process's descriptors that are gpufeed's anonymous memfds (the ring,
    the mailboxes: "/memfd:gpufeed-ring (deleted)")."""
    return sorted(t for t in open_files(pid).values() if "memfd:gpufeed" in t)


def mappings(pid="self", containing=""):
    """The lines of /proc/<pid>/maps that contain `containing`."""
    with open(f"/proc/{pid}/maps") as f:
        return [line.rstrip("\n") for line in f if containing in line]


def settles_to(measure, expected, within_s=20.0):
    """Polls until measure() == expected (a process or thread leaves /proc a moment after it is
    joined); returns the last value. A bound against hangs, not a timing check."""
    import time

    deadline = time.monotonic() + within_s
    value = measure()
    while value != expected and time.monotonic() < deadline:
        time.sleep(0.01)
        value = measure()
    return value


class Hang(Exception):
    """A guarded call did not return within its (generous) bound."""


class hang_guard:
    """Raises Hang in the main thread if the block runs longer than `seconds`: a bound against
    hangs (gpufeed's next() checks for signals while it waits), never a timing check."""

    def __init__(self, seconds, what):
        self.seconds = seconds
        self.what = what

    def __enter__(self):
        import _thread
        import signal
        import threading

        def hang(signum, frame):
            raise Hang(f"{self.what}: still waiting after {self.seconds} s")

        self._previous = signal.signal(signal.SIGUSR1, hang)
        self._timer = threading.Timer(self.seconds, _thread.interrupt_main, (signal.SIGUSR1,))
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, *exc):
        import signal

        self._timer.cancel()
        self._timer.join()
        signal.signal(signal.SIGUSR1, self._previous)
        return False


# Generous bound for a child interpreter to get through its script: it guards against hangs
# only; on a loaded 2-core machine the scripts take a few seconds (spawned workers import torch).
CHILD_TIMEOUT_S = 120
# What a child's stderr must never show: a crash (faulthandler's "Fatal Python error", abort,
# segfault), std::terminate, a thread ended by an exception, or an exception swallowed at
# collection time.
CRASH_WORDS = ("Fatal Python error", "terminate called", "Segmentation fault", "Aborted",
               "Exception in thread", "core dumped", "Exception ignored")


def assert_no_crash(err):
    for word in CRASH_WORDS:
        assert word not in err, f"{word!r} in the child's stderr:\n{err[-4000:]}"


class Child:
    """A child interpreter running `source` (with sys.argv[1:] = args), in a session of its own
    so that interrupt() reaches it and its workers as Ctrl-C reaches a terminal's foreground
    processes. Its stdout lines arrive on a queue; `wrap` prefixes the command (unshare ...)."""

    def __init__(self, tmp_path, source, *args, wrap=()):
        import os
        import queue
        import subprocess
        import sys
        import textwrap
        import threading

        import gpufeed

        script = tmp_path / "child.py"
        # Ctrl-C as in a terminal, whatever this process inherited: a background job's children
        # start with SIGINT ignored, and Python then raises no KeyboardInterrupt.
        script.write_text("import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
                          + textwrap.dedent(source).lstrip("\n"))
        root = os.path.dirname(os.path.dirname(os.path.abspath(gpufeed.__file__)))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (root, os.path.dirname(os.path.abspath(__file__)), env.get("PYTHONPATH"))
            if p)
        env["PYTHONFAULTHANDLER"] = "1"  # a crash prints "Fatal Python error" and the stacks
        self.proc = subprocess.Popen([*wrap, sys.executable, str(script), *map(str, args)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env, start_new_session=True)
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
        import os
        import signal

        import pytest

        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its workers too
        except ProcessLookupError:
            pass
        self.proc.wait()
        for r in self._readers:
            r.join(10)
        pytest.fail(f"{why}\n--- stdout:\n{''.join(self._out)}\n--- stderr:\n"
                    f"{''.join(self._err)[-4000:]}")

    def expect(self, prefix):
        """Waits for a stdout line that starts with `prefix`; returns it."""
        import queue
        import time

        deadline = time.monotonic() + CHILD_TIMEOUT_S
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self._fail(f"the child did not print {prefix!r} in {CHILD_TIMEOUT_S} s")
            if line is None:
                self.proc.wait()
                self._fail(f"the child ended (code {self.proc.returncode}) before "
                           f"printing {prefix!r}")
            if line.startswith(prefix):
                return line

    def interrupt(self):
        """Ctrl-C: SIGINT to every process of the child's session (its workers included)."""
        import os
        import signal

        os.killpg(self.proc.pid, signal.SIGINT)

    def finish(self, timeout_s=CHILD_TIMEOUT_S):
        """(returncode, stdout, stderr) once the child exits; fails if it runs past
        `timeout_s` (a hang)."""
        import subprocess

        try:
            self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._fail(f"the child did not exit within {timeout_s} s (hang)")
        for r in self._readers:
            r.join(10)
        return self.proc.returncode, "".join(self._out), "".join(self._err)


def still_running(pids_and_starts):
    """Those of [(pid, create_time)] that are still the same process (a zombie counts)."""
    import psutil

    out = []
    for pid, started in pids_and_starts:
        try:
            if psutil.Process(pid).create_time() == started:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def announce_when_main_waits_in_gpufeed(marker):
    """Prints `marker` from a helper thread once the main thread's innermost Python frame is
    gpufeed's (it is then inside next(), in Python or in the C++ wait under it)."""
    import os
    import sys
    import threading
    import time

    import gpufeed

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
