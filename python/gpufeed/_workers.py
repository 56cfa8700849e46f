"""Worker processes for Python datasets.

Each process runs gpufeed's worker loop (C++, ``_gpufeed._worker_loop``): it waits for the
loader's tasks in shared memory, calls the dataset's ``__getitem__`` and writes each sample's
arrays straight into its batch slot, in the ring the loader's process shares with it. No sample
is pickled, and the loader's process runs none of the dataset's Python code, so its GIL stays
with the training loop.

Inside a worker, torch's worker contract holds: ``worker_init_fn(worker_id)`` runs there,
``torch.utils.data.get_worker_info()`` and ``gpufeed.get_worker_info()`` describe it, and
``random``, numpy's global generator and torch are seeded per worker as torch seeds them.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.reduction
import os
import pickle
import random
import signal
import struct
import traceback
import warnings
from typing import Any

from . import _gpufeed

__all__ = ["WorkerInfo", "WorkerProcesses", "current_worker_info", "rebuild_exception"]

_info: WorkerInfo | None = None  # this process's WorkerInfo, in a worker process


class WorkerInfo:
    """What a worker is, as gpufeed.get_worker_info() gives it (torch's WorkerInfo fields).

    Args:
        id: The worker's number, 0 to ``num_workers - 1``.
        num_workers: The loader's workers.
        seed: The worker's seed (a worker process's, as torch seeds workers; a worker thread's
            for the sample it reads).
        dataset: The dataset the worker reads (a worker process's own copy).
    """

    __slots__ = ("id", "num_workers", "seed", "dataset")

    def __init__(self, id: int, num_workers: int, seed: int,  # noqa: A002 - torch's name
                 dataset: Any) -> None:
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.dataset = dataset

    def __repr__(self) -> str:
        return (f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed}, "
                f"dataset={type(self.dataset).__name__})")


def current_worker_info() -> WorkerInfo | None:
    """This process's WorkerInfo when it is a gpufeed worker process, else None."""
    return _info


class _Descriptor:
    """A file descriptor that reaches the worker whatever the start method: as itself under
    fork, duplicated into the child by multiprocessing under spawn and forkserver."""

    def __init__(self, fd):
        self.fd = fd

    def __reduce__(self):
        return _Descriptor._rebuild, (multiprocessing.reduction.DupFd(self.fd),)

    @staticmethod
    def _rebuild(duplicate):
        return _Descriptor(duplicate.detach())


class _KeyErrorMessage(str):
    """KeyError's str() shows repr(message); this message shows as itself (as torch does)."""

    def __repr__(self):
        return self


def rebuild_exception(pickled, context):
    """The dataset's exception, raised in a worker, as an instance of its own type: its message
    is the worker's traceback, then ``context`` (gpufeed's: the samples, epoch and worker). An
    exception type that cannot be made from one message becomes a RuntimeError."""
    try:
        exc_type, text = pickle.loads(pickled)
    except Exception:  # noqa: BLE001 - the type is not importable here
        exc_type, text = RuntimeError, ""
    message = f"{text}\n{context}" if text else context
    if exc_type is KeyError:
        message = _KeyErrorMessage(message)
    try:
        exc = exc_type(message)
    except Exception:  # noqa: BLE001 - a constructor that wants other arguments
        exc = RuntimeError(message)
    return exc


def _describe(worker_id, exc, where):
    """(a line saying what was raised, pickled (type, the worker's whole account with its
    traceback)) of an exception raised in worker `worker_id`."""
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    text = (f"Caught {type(exc).__name__} in gpufeed worker process {worker_id} {where}.\n"
            f"Original {trace}").rstrip("\n")
    try:
        pickled = pickle.dumps((type(exc), text))
    except Exception:  # noqa: BLE001 - a type pickle cannot name
        pickled = pickle.dumps((RuntimeError, text))
    try:
        line = f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001 - an unprintable exception
        line = type(exc).__name__
    return line, pickled


def _seed(base_seed, worker_id):
    """Seeds random, numpy's global generator and torch as torch's workers are seeded."""
    seed = base_seed + worker_id
    random.seed(seed)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.manual_seed(seed)
    try:
        import numpy
    except ImportError:
        return seed
    state = None
    if torch is not None:
        try:
            from torch.utils.data._utils.worker import _generate_state

            state = _generate_state(base_seed, worker_id)
        except ImportError:
            state = None
    if state is None:  # without torch: numpy's own mixing of the same two numbers
        state = numpy.random.SeedSequence([worker_id, base_seed % 2**64]).generate_state(4)
    numpy.random.seed(state)
    return seed


def default_collate(samples):
    """torch's default_collate (numpy's stack without torch): an iterable dataset's batches."""
    try:
        from torch.utils.data import default_collate as collate
    except ImportError:
        import numpy

        return numpy.stack(samples)
    return collate(samples)


def convert_one(samples):
    """The one sample of a batch of one as torch's default_convert gives it (batch_size=None)."""
    try:
        from torch.utils.data import default_convert as convert
    except ImportError:
        return samples[0]
    return convert(samples[0])


def _worker_main(dataset, worker_id, num_workers, base_seed, worker_init_fn, files,
                 arena_reserve, main_pid, collate_fn, iterable, drop_last):
    global _info
    # Ctrl-C reaches the whole process group: the loader's process handles it and stops the
    # workers; a worker interrupted in __getitem__ would only print a second traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # SIGTERM ends a worker (multiprocessing's exit handler and clusters end processes with
    # it), whatever handler it inherited: a Python handler, such as the one a trainer installs
    # in its own process, would run only between tasks, and a worker waiting for one would
    # never end.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    seed = _seed(base_seed, worker_id)
    _info = WorkerInfo(worker_id, num_workers, seed, dataset)
    try:
        import torch
        from torch.utils.data._utils import worker as torch_worker
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(1)  # as torch's workers: one thread each, the cores are shared
        torch_worker._worker_info = torch_worker.WorkerInfo(
            id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    init_error = None
    if worker_init_fn is not None:
        try:
            worker_init_fn(worker_id)
        except BaseException as e:  # noqa: BLE001 - raised again in the loader's process
            init_error = _describe(worker_id, e, "in worker_init_fn")

    def describe(exc, index, epoch):
        return _describe(worker_id, exc, f"reading sample {index} of epoch {epoch}")

    _gpufeed._worker_loop(dataset, worker_id, num_workers, tuple(f.fd for f in files),
                          arena_reserve, main_pid, describe, init_error, collate_fn, pack, write,
                          iterable, drop_last)


def _context(multiprocessing_context):
    """The context of a start method (the loader has checked the argument)."""
    if multiprocessing_context is None:
        return multiprocessing.get_context()
    if isinstance(multiprocessing_context, str):
        return multiprocessing.get_context(multiprocessing_context)
    return multiprocessing_context


def _exit_hook_before_multiprocessings():
    """atexit runs the hooks registered last first. multiprocessing's (registered when its util
    module is first imported, after gpufeed's) terminates daemonic processes: run before
    gpufeed's, it would end the workers under loaders still open, and a thread waiting in next()
    would see them die. gpufeed's moves after it, so every loader is closed (and threads waiting
    in next() are parked) before multiprocessing ends the workers."""
    import atexit
    import multiprocessing.util  # noqa: F401 - registers multiprocessing's hook if not yet

    atexit.unregister(_gpufeed._at_exit)
    atexit.register(_gpufeed._at_exit)


class WorkerProcesses:
    """The worker processes of one loader: started by start(), when the loader is first
    iterated (as torch starts its workers, so that they copy the dataset as it is then), and
    stopped by close()."""

    def __init__(self, native, dataset, num_workers, multiprocessing_context, worker_init_fn,
                 base_seed, collate_fn=None, iterable=False, drop_last=False):
        self._native = native
        self._owner = os.getpid()
        self.processes = []
        self._exit_codes = {}  # pid: exit code, of the workers reaped
        self._context = _context(multiprocessing_context)
        self.start_method = self._context.get_start_method()
        self._arguments = (dataset, num_workers, base_seed, worker_init_fn, collate_fn, iterable,
                           drop_last)
        self._started = False

    def start(self):
        """Starts the workers, once. The loader's own threads already wait for them (their
        tasks are posted): they hold no lock a worker needs, so forking now is safe, which is
        why Python's warning about forking a process with threads is silenced here."""
        if self._started:
            return
        self._started = True
        dataset, num_workers, base_seed, worker_init_fn, collate_fn, iterable, drop_last = (
            self._arguments)
        self._arguments = None  # the workers hold the dataset from now on
        _exit_hook_before_multiprocessings()
        try:
            for worker_id in range(num_workers):
                files = tuple(_Descriptor(fd) for fd in self._native.files(worker_id))
                process = self._context.Process(
                    target=_worker_main, name=f"gpufeed-worker-{worker_id}", daemon=True,
                    args=(dataset, worker_id, num_workers, base_seed, worker_init_fn, files,
                          self._native.arena_reserve, os.getpid(), collate_fn, iterable,
                          drop_last))
                try:
                    with warnings.catch_warnings():
                        warnings.filterwarnings("ignore", category=DeprecationWarning,
                                                message=r".*use of fork\(\) may lead to "
                                                "deadlocks")
                        process.start()
                except (pickle.PicklingError, AttributeError, TypeError) as e:
                    # torch's words first, so that warning filters and tests written for its
                    # DataLoader match; stacklevel: the caller's iter().
                    warnings.warn("Got pickle error when attempting to start a worker Process: "
                                  f"{e}", UserWarning, stacklevel=4)
                    raise ValueError(
                        f"multiprocessing_context={self.start_method!r} starts each worker "
                        "process by pickling the dataset, worker_init_fn and collate_fn, as "
                        "torch's "
                        f"DataLoader does, and this one does not pickle: {e}. Define them at "
                        "module level, use the 'fork' start method, or worker_type='thread'"
                    ) from e
                self._native.attach(worker_id, process.pid)
                self.processes.append(process)
        except BaseException:
            self._stop_processes()
            raise

    def explain(self, error, within_s=5.0):
        """Fills in how a dead worker process ended (``error``: a WorkerError) where the core
        could not tell: a forkserver's workers are the server's children, so only
        multiprocessing, which hears from the server, knows their exit status."""
        if error.pid is None or error.exit_status is not None or error.signal is not None:
            return
        code = self._exit_codes.get(error.pid)
        if code is None:
            for p in self.processes:
                if p.pid == error.pid:
                    p.join(within_s)  # it is dead: the server reports its status at once
                    code = self._exit_codes[error.pid] = p.exitcode
        if code is not None:
            error.ended_with(code)

    def close(self, timeout=1.0):
        """Asks every worker to stop after the task in hand; ends (SIGTERM, then SIGKILL) the
        ones still running after `timeout` seconds, whose work nobody waits for any more, reaps
        them all, and closes the files they shared with this process (the ring's memory stays
        mapped for the batches alive)."""
        if os.getpid() != self._owner:
            return  # a process forked from the loader's: these workers are its parent's
        self._arguments = None
        self._stop_processes(timeout)
        self._native.release_workers()

    def _stop_processes(self, timeout=1.0):
        if self.processes:
            self._native.stop_workers()
            for p in self.processes:
                p.join(timeout)
            for p in self.processes:
                if p.exitcode is None:
                    p.terminate()
                    p.join(1.0)
                if p.exitcode is None:
                    p.kill()
                    p.join()
                self._exit_codes.setdefault(p.pid, p.exitcode)
                p.close()  # its pipe to the process
            self.processes = []


# ---- a collate_fn's batches ----------------------------------------------------------------------
#
# A batch a collate_fn made lies in one block of the shared ring: at offset 0 two little-endian
# 64-bit numbers (where its header starts, and the header's length), then each array's bytes at a
# 64-byte-aligned offset, then the header: the pickled output with each array replaced by
# ("array" or "tensor", index, dtype, shape) and the arrays' offsets. The loader's process reads
# the arrays in place.

_ALIGN = 64
_PREFIX = struct.Struct("<QQ")


def _aligned(n):
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def pack(output):
    """(bytes, header, arrays) of a collate_fn's output: what write() lays out in a block."""
    import numpy as np

    try:
        import torch
    except ImportError:
        torch = None
    arrays = []

    def leaf(kind, array, dtype):
        arrays.append(np.ascontiguousarray(array).reshape(-1).view(np.uint8))
        return (kind, len(arrays) - 1, dtype, tuple(array.shape))

    def walk(x):
        if torch is not None and isinstance(x, torch.Tensor):
            if x.device.type != "cpu":
                raise TypeError(f"collate_fn returned a tensor on {x.device}: return CPU tensors "
                                "from worker processes (gpufeed copies batches to the GPU: "
                                "device=)")
            t = x.detach().contiguous()
            raw = t.view(torch.int16) if t.dtype == torch.bfloat16 else t
            return leaf("tensor", raw.numpy(), str(t.dtype).split(".")[-1])
        if isinstance(x, np.ndarray):
            return leaf("array", x, x.dtype.str)
        if isinstance(x, tuple) and hasattr(x, "_fields"):
            return ("namedtuple", type(x), [walk(v) for v in x])
        if isinstance(x, (tuple, list)):
            return ("tuple" if isinstance(x, tuple) else "list", [walk(v) for v in x])
        if isinstance(x, dict):
            return ("dict", type(x), list(x.keys()), [walk(v) for v in x.values()])
        return ("object", x)  # numbers, str, None, ...: pickled as they are

    structure = walk(output)
    offsets = []
    at = _ALIGN
    for a in arrays:
        offsets.append(at)
        at = _aligned(at + a.nbytes)
    header = pickle.dumps((structure, offsets))
    return at + len(header), (at, header, offsets), arrays


def write(view, header, arrays):
    """Lays out pack()'s output in `view` (a writable memoryview of a block)."""
    import numpy as np

    at, blob, offsets = header
    block = np.frombuffer(view, dtype=np.uint8)
    _PREFIX.pack_into(view, 0, at, len(blob))
    for array, offset in zip(arrays, offsets):
        block[offset:offset + array.nbytes] = array
    block[at:at + len(blob)] = np.frombuffer(blob, dtype=np.uint8)


def unpack(collated, device=None):
    """The output a collate_fn made, its arrays read in place from `collated` (a uint8 exporter
    of the block, which keeps the batch leased as long as any array made from it lives)."""
    import numpy as np

    block = np.asarray(collated)
    at, length = _PREFIX.unpack_from(block[:_PREFIX.size].tobytes())
    structure, offsets = pickle.loads(block[at:at + length].tobytes())

    def build(node):
        kind = node[0]
        if kind in ("array", "tensor"):
            _, k, dtype, shape = node
            count = 1
            for d in shape:
                count *= d
            if kind == "array":
                dt = np.dtype(dtype)
                return block[offsets[k]:offsets[k] + count * dt.itemsize].view(dt).reshape(shape)
            import torch

            t = getattr(torch, dtype)
            size = torch.empty((), dtype=t).element_size()
            raw = block[offsets[k]:offsets[k] + count * size]
            if t == torch.bfloat16:
                tensor = torch.from_numpy(raw.view(np.int16)).view(torch.bfloat16)
            else:
                tensor = torch.from_numpy(raw).view(t)
            tensor = tensor.reshape(shape)
            return tensor if device is None else tensor.to(device, non_blocking=True)
        if kind == "object":
            return node[1]
        if kind == "namedtuple":
            return node[1](*(build(c) for c in node[2]))
        if kind in ("tuple", "list"):
            items = [build(c) for c in node[1]]
            return tuple(items) if kind == "tuple" else items
        if kind == "dict":
            values = {key: build(c) for key, c in zip(node[2], node[3])}
            return values if node[1] is dict else node[1](values)
        raise ValueError(f"unknown node {kind!r} in a collated batch")

    return build(structure)
