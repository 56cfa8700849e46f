"""What gpufeed.DataLoader's worker processes (worker_type="process") leave behind: nothing after
many loaders are made and dropped, nothing after Ctrl-C, and nothing under /dev/shm (the ring they
share is an anonymous memfd).

Cases that count processes, files and memory over many cycles, or that interrupt, run in a child
interpreter whose output, exit code and stderr are read. No assertion depends on how fast anything
runs: pytest's timeout and a child's CHILD_TIMEOUT_S bound each wait generously.
"""

import shutil
import signal
import subprocess

import numpy as np
import pytest

import gpufeed
from processes import (CHILD_TIMEOUT_S, Child, assert_no_crash, gpufeed_memfds, mappings,
                       open_files, still_running)

torch = pytest.importorskip("torch")
psutil = pytest.importorskip("psutil")


# ---- many loaders --------------------------------------------------------------------------------

# Each cycle forks two workers from the process that makes the loader. With torch imported,
# fork's copy of that process's page tables dominates a cycle (tenths of a second on 2 loaded
# cores); the cycles run in a child interpreter without torch (gpufeed's numpy output), where
# gpufeed's own resources are most of what a cycle makes. test_lifetimes.py's 1,000 cycles run
# with torch, in this process.
_CYCLES_TIMEOUT_S = 600


@pytest.mark.timeout(_CYCLES_TIMEOUT_S + 30)
def test_a_thousand_loaders_leave_no_process_file_memfd_or_memory_behind(tmp_path):
    """1,000 create / iterate a batch / break / del cycles with 2 worker processes each.
    Afterwards: no child process (nor zombie), the same open files, no memfd or mapping of
    gpufeed's, the same threads, and RSS within 32 MiB: each cycle maps a ring of 5 slots of
    64 B (a page each) and 2 mailboxes, and leaks of either would show as files and mappings
    exactly; RSS catches a leak of 32 KiB per cycle, and glibc's caching of freed chunks moves it
    by a few MiB (measured: +0.0 MiB after 1,000, 2,000 and 3,000 cycles)."""
    child = Child(tmp_path, '''
        import gc, os, sys, time
        sys.modules["torch"] = None  # not importable: see the comment above the test
        import numpy as np
        import psutil
        import gpufeed

        gpufeed.set_log_level("warn")


        class Tiny:
            def __len__(self):
                return 16

            def __getitem__(self, i):
                return np.full(4, i, np.float32)


        def cycle():
            loader = gpufeed.DataLoader(Tiny(), batch_size=4, num_workers=2,
                                        worker_type="process")
            for batch in loader:
                assert batch[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0]
                assert len(loader._workers.processes) == 2
                break
            del loader, batch


        def children():
            return sorted(p.pid for p in psutil.Process().children(recursive=True))


        def files():
            out = []
            for name in os.listdir("/proc/self/fd"):
                try:
                    out.append(os.readlink(f"/proc/self/fd/{name}"))
                except OSError:  # listdir's own descriptor, closed meanwhile
                    pass
            return sorted(out)


        def gpufeed_maps():
            with open("/proc/self/maps") as f:
                return [line for line in f if "memfd:gpufeed" in line]


        def threads():
            return set(os.listdir("/proc/self/task"))


        def settled(measure, expected):
            deadline = time.monotonic() + 20  # a bound against hangs, not a timing check
            while measure() != expected and time.monotonic() < deadline:
                time.sleep(0.01)
            return measure()


        assert gpufeed.loader.torch is None  # numpy batches; the workers import no torch either
        for _ in range(20):  # warm-up: one-time allocations of the first loaders
            cycle()
        gc.collect()
        before = (children(), files(), threads())
        rss = psutil.Process().memory_info().rss
        assert [f for f in before[1] if "gpufeed" in f] == [] and gpufeed_maps() == []
        for _ in range(1000):
            cycle()
        print("children", settled(children, before[0]) == before[0], children(), flush=True)
        print("files", files() == before[1], sorted(set(files()) ^ set(before[1])), flush=True)
        print("maps", gpufeed_maps(), flush=True)
        print("threads", settled(threads, before[2]) == before[2], flush=True)
        print("rss", psutil.Process().memory_info().rss - rss, flush=True)
    ''')
    code, out, err = child.finish(timeout_s=_CYCLES_TIMEOUT_S)
    assert_no_crash(err)
    assert code == 0, err[-4000:]
    report = {line.split(" ", 1)[0]: line for line in out.splitlines()}
    assert report["children"].startswith("children True"), out
    assert report["files"].startswith("files True"), out
    assert report["maps"] == "maps []", out
    assert report["threads"] == "threads True", out
    grown = int(report["rss"].split()[1])
    assert grown < 32 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 1,000 cycles"


# ---- Ctrl-C --------------------------------------------------------------------------------------

@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
@pytest.mark.parametrize("handled", [True, False], ids=["caught", "uncaught"])
def test_ctrl_c_while_waiting_in_next_stops_the_worker_processes(tmp_path, handled):
    """Ctrl-C (SIGINT to the child's whole session, workers included) while next() waits for
    samples that take an hour: the interrupt ends the wait; the workers ignore it (no traceback
    of theirs); caught, the loader's close() ends them mid-sample and reaps them; uncaught,
    Python exits as killed by SIGINT and leaves no worker behind."""
    child = Child(tmp_path, '''
        import os, sys, threading, time
        import numpy as np
        import gpufeed
        from processes import announce_when_main_waits_in_gpufeed, worker_children

        gpufeed.set_log_level("warn")


        class Hour:
            def __init__(self):
                import multiprocessing
                self.inside = multiprocessing.Event()

            def __len__(self):
                return 100

            def __getitem__(self, i):
                self.inside.set()
                time.sleep(3600)
                return np.full(4, i, np.float32)


        data = Hour()
        loader = gpufeed.DataLoader(data, batch_size=2, num_workers=2, worker_type="process",
                                    multiprocessing_context="fork")
        it = iter(loader)  # starts the worker processes
        print("workers", *(f"{p.pid}:{p.create_time()!r}" for p in worker_children()),
              flush=True)
        assert data.inside.wait(60)
        announce_when_main_waits_in_gpufeed("waiting")
        if sys.argv[1] == "caught":
            try:
                next(it)
                print("got a batch", flush=True)
            except KeyboardInterrupt:
                print("caught", flush=True)
            print("children before close", len(worker_children()), flush=True)
            loader.close()
            print("children after close", len(worker_children()), flush=True)
        else:
            next(it)
            print("got a batch", flush=True)
    ''', "caught" if handled else "uncaught")
    workers = [(int(p), float(s)) for p, s in
               (item.split(":") for item in child.expect("workers").split()[1:])]
    assert len(workers) == 2
    child.expect("waiting")
    child.interrupt()
    code, out, err = child.finish()
    assert_no_crash(err)
    assert "got a batch" not in out
    if handled:
        assert code == 0, err[-4000:]
        lines = out.splitlines()
        assert "caught" in lines and "children after close 0" in lines, out
        assert "KeyboardInterrupt" not in err, err[-4000:]
    else:
        assert code == -signal.SIGINT, err[-4000:]
        assert err.count("KeyboardInterrupt") == 1, err[-4000:]
    assert still_running(workers) == [], "worker processes outlived the interrupted child"


# ---- the shared ring -----------------------------------------------------------------------------

class _Large(torch.utils.data.Dataset):
    """Sample i: 256 KiB of float32 i."""

    def __len__(self):
        return 64

    def __getitem__(self, i):
        return np.full(65536, i, np.float32)


def _shm_uses(pid):
    """The descriptors and mappings of `pid` under /dev/shm."""
    return ([t for t in open_files(pid).values() if t.startswith("/dev/shm")]
            + mappings(pid, " /dev/shm/"))


@pytest.mark.timeout(120)
def test_the_ring_is_an_anonymous_memfd_not_dev_shm():
    """The loader's process and each worker map the ring from an anonymous memfd
    ("memfd:gpufeed-ring"); neither holds nor maps anything new under /dev/shm (where torch's
    workers put their batches, and where a container's 64 MB runs out). What this process
    had there before (multiprocessing's heap, which Barriers of other tests use) a forked
    worker inherits."""
    before = set(_shm_uses("self"))
    loader = gpufeed.DataLoader(_Large(), batch_size=4, num_workers=2, worker_type="process")
    try:
        held = [batch for _, batch in zip(range(4), loader)]  # 4 MiB of batches alive
        assert [float(b[0, 0]) for b in held] == [0.0, 4.0, 8.0, 12.0]
        assert "/memfd:gpufeed-ring (deleted)" in gpufeed_memfds()
        assert mappings(containing="/memfd:gpufeed-ring")
        assert set(_shm_uses("self")) == before
        for p in loader._workers.processes:
            assert mappings(p.pid, "/memfd:gpufeed-ring"), f"worker {p.pid} maps no ring"
            assert set(_shm_uses(p.pid)) <= before, f"worker {p.pid} uses /dev/shm"
    finally:
        loader.close()


@pytest.mark.timeout(CHILD_TIMEOUT_S + 30)
def test_a_64_kib_dev_shm_does_not_matter(tmp_path):
    """In a mount namespace of its own (as in a container), the child's /dev/shm is a 64 KiB
    tmpfs; worker processes still move 16 MiB of batches (4 MiB alive at once), and /dev/shm
    stays empty."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) to give the child a small /dev/shm")
    probe = subprocess.run(["unshare", "-m", "sh", "-c",
                            "mount -t tmpfs -o size=64k tmpfs /dev/shm"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("cannot mount a small /dev/shm in a mount namespace here (needs "
                    f"CAP_SYS_ADMIN): {probe.stderr.decode().strip()}")
    wrap = ["unshare", "-m", "sh", "-c",
            'mount -t tmpfs -o size=64k tmpfs /dev/shm && exec "$0" "$@"']
    child = Child(tmp_path, '''
        import os
        import numpy as np
        import gpufeed

        gpufeed.set_log_level("warn")


        class Large:
            """Sample i: 256 KiB of float32 i."""

            def __len__(self):
                return 64

            def __getitem__(self, i):
                return np.full(65536, i, np.float32)


        shm = os.statvfs("/dev/shm")
        print("dev/shm bytes", shm.f_blocks * shm.f_frsize, flush=True)
        loader = gpufeed.DataLoader(Large(), batch_size=4, num_workers=2, worker_type="process",
                                    multiprocessing_context="fork", prefetch_depth=4)
        kept = []
        for n, batch in enumerate(loader):
            assert batch.shape == (4, 65536)
            assert batch[:, 0].tolist() == [float(4 * n + k) for k in range(4)]
            assert batch[:, -1].tolist() == batch[:, 0].tolist()
            kept = (kept + [batch])[-4:]
        print("batches", n + 1, flush=True)
        print("dev/shm entries", len(os.listdir("/dev/shm")), flush=True)
    ''', wrap=wrap)
    code, out, err = child.finish()
    assert_no_crash(err)
    assert code == 0, err[-4000:]
    lines = out.splitlines()
    assert "dev/shm bytes 65536" in lines, out  # the premise: the small /dev/shm is in place
    assert "batches 16" in lines and "dev/shm entries 0" in lines, out
