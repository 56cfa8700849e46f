"""gpufeed.DataLoader: torch.utils.data.DataLoader's interface over gpufeed's C++ loader.

Workers read samples straight into a ring of batch slots: worker processes for a Python dataset
(they write into the ring, which they share with this process), threads for gpufeed's own
datasets; batches reach torch and numpy by DLPack, without a copy. See docs/python.md for the
migration table.
"""

import math
import multiprocessing
import multiprocessing.context
import os
import pickle
import sys
import threading
import types
import warnings
import weakref

import numpy as np

from . import _gpufeed, _workers
from ._assemble import StepInfo, build, text_fields, unbatched
from .errors import LoaderTimeoutError, WorkerError

try:  # torch is optional: without it, batches are numpy arrays
    import torch
    import torch.utils.data as _torch_data
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None
    _torch_data = None

__all__ = ["DataLoader", "Diagnosis", "get_worker_info"]

# Once per process, each note about an argument that means something else here.
_said = set()
_said_lock = threading.Lock()


def _say_once(key, message):
    with _said_lock:
        if key in _said:
            return
        _said.add(key)
    _gpufeed.log("info", message)


def get_worker_info():
    """Inside a worker, a ``WorkerInfo`` (``id``, ``num_workers``, ``seed``, ``dataset``, as
    torch.utils.data.get_worker_info() gives them; ``info["id"]`` works too): in a worker
    process, its own (``seed`` as torch seeds workers); in a worker thread's call to a Python
    dataset, that thread's (``seed``: this sample's, a function of the loader's seed, the epoch
    and the index). None elsewhere."""
    info = _workers.current_worker_info()
    if info is not None:
        return info
    thread = _gpufeed.get_worker_info()
    if thread is None:
        return None
    return _workers.WorkerInfo(thread["id"], thread["num_workers"], thread["seed"],
                               thread["dataset"])


def _free_threaded():
    return hasattr(sys, "_is_gil_enabled") and not sys._is_gil_enabled()


def _worker_kind(worker_type, python_dataset, num_workers):
    """("process" or "thread", why)."""
    if worker_type not in ("auto", "process", "thread"):
        raise ValueError(f"worker_type: expected 'auto', 'process' or 'thread', got {worker_type!r}")
    if not python_dataset:
        if worker_type == "process":
            raise ValueError("worker_type='process': gpufeed.datasets read in C++ without the "
                             "GIL, on threads; use worker_type='thread' or 'auto'")
        return "thread", "gpufeed.datasets read in C++, without the GIL"
    if worker_type != "auto":
        return worker_type, f"worker_type={worker_type!r}"
    if _free_threaded():
        return "thread", "this interpreter has no GIL (free-threaded), so threads run in parallel"
    if num_workers == 0:
        return "thread", ("num_workers=0: one worker thread (torch would read in the main "
                          "process); set num_workers for worker processes")
    return "process", ("the dataset runs Python code, and threads running it would take the GIL "
                       "from the training loop")


class Diagnosis(tuple):
    """The bottleneck: ``kind`` ("gpu_bound", "input_bound", "gil_bound", ...) and ``sentence``
    (the evidence and the fix)."""

    __slots__ = ()

    def __new__(cls, kind, sentence):
        return super().__new__(cls, (kind, sentence))

    kind = property(lambda self: self[0])
    sentence = property(lambda self: self[1])

    def __repr__(self):
        return f"Diagnosis(kind={self.kind!r}, sentence={self.sentence!r})"

    def __str__(self):
        return self.sentence


def _check_context(multiprocessing_context, num_workers, worker_type):
    """torch's checks of multiprocessing_context, with the phrases of its messages. gpufeed
    reads in one worker process with num_workers=0 when worker_type='process' asks for it."""
    if multiprocessing_context is None:
        return
    if num_workers == 0 and worker_type != "process":
        raise ValueError("multiprocessing_context chooses how worker processes start, so it "
                         "needs multi-process loading (num_workers > 0), but got num_workers=0 "
                         "(or pass worker_type='process': one worker process)")
    if isinstance(multiprocessing_context, str):
        methods = multiprocessing.get_all_start_methods()
        if multiprocessing_context not in methods:
            raise ValueError(f"multiprocessing_context option should specify a valid start "
                             f"method in {methods!r}, but got {multiprocessing_context!r}")
    elif not isinstance(multiprocessing_context, multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or a "
                        "string naming a start method, but got "
                        f"{type(multiprocessing_context).__name__} {multiprocessing_context!r}")


def _positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value!r}")
    return value


def _device_index(device):
    """None for host memory, else the CUDA device number (-1: the default, LOCAL_RANK)."""
    if device is None:
        return None
    if torch is not None and isinstance(device, torch.device):
        if device.type == "cpu":
            return None
        if device.type != "cuda":
            raise ValueError(f"device: gpufeed delivers to 'cuda' or host memory, not {device}")
        return -1 if device.index is None else device.index
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if isinstance(device, str):
        if device == "cpu":
            return None
        if device == "cuda":
            return -1
        if device.startswith("cuda:") and device[5:].isdigit():
            return int(device[5:])
    raise ValueError(f"device: expected None, 'cpu', 'cuda', 'cuda:N' or a torch.device, got {device!r}")


def _is_default_collate(fn):
    if fn is None or _torch_data is None:
        return fn is None
    defaults = [getattr(_torch_data, "default_collate", None)]
    try:
        from torch.utils.data._utils import collate as _collate

        defaults.append(_collate.default_collate)
    except ImportError:  # pragma: no cover
        pass
    return any(fn is d for d in defaults if d is not None)


def _seed_from(generator):
    """A 64-bit seed drawn as torch's RandomSampler draws one: from `generator`, or from torch's
    global generator (so torch.manual_seed makes the order reproducible)."""
    if torch is None:
        return int.from_bytes(os.urandom(8), "little") >> 1
    return int(torch.empty((), dtype=torch.int64).random_(generator=generator).item())


# The places of an iterable dataset's epoch, for the loader's plan: more than any epoch takes
# (its end is when every worker's iterator ends), a number only (nothing is sized by it).
_ITERABLE_PLACES = 1 << 40


def _quarter_of_memory():
    """A quarter of the machine's memory (the default budget of held or collated batches)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4
    except (ValueError, OSError):
        return 1 << 30


def _transforms_of(transforms):
    if transforms is None:
        return []
    if isinstance(transforms, dict):
        return [dict(field=name, **spec) for name, spec in transforms.items()]
    return list(transforms)


class DataLoader:
    """A drop-in for ``torch.utils.data.DataLoader``: same arguments, same batches.

    Arguments torch has keep torch's meaning where gpufeed has one; the others are accepted and
    explained once in the log, or refused with a ValueError saying what to do instead. gpufeed's
    own (keyword only): ``prefetch_depth`` (batches prepared ahead; default from
    ``prefetch_factor``), ``accumulation_steps``, ``device`` ("cuda", "cuda:1", a torch.device,
    or None for host memory), ``transforms`` (per-field GPU conversions: {"image": {"dtype":
    "float32", "layout": "chw", "scale": 1/255, "mean": [...], "std": [...]}}), ``seed``,
    ``on_error`` ("raise" or "skip"), ``rank`` / ``world_size`` (torchrun's environment by
    default), ``autotune`` (let gpufeed choose workers and depth), ``output`` ("torch" or
    "numpy"), ``held_batches_budget``, ``drop_last_step``, ``trace_events``, ``stall_warning``,
    ``chunk_window`` (with shuffle: draw each stretch of the order from this many chunks of a
    chunked HDF5 dataset, so that a chunk is decompressed once, not once per sample; 0: off;
    docs/datasets-hdf5.md), ``worker_type`` ("auto": worker processes for a Python dataset on an
    interpreter with a GIL, threads for gpufeed.datasets and on a free-threaded interpreter;
    "process"; "thread").
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True, prefetch_depth=None, accumulation_steps=1, device=None,
                 transforms=None, seed=None, on_error="raise", rank=None, world_size=None,
                 autotune=False, output=None, held_batches_budget=None, drop_last_step=False,
                 trace_events=0, stall_warning=30.0, chunk_window=0, worker_type="auto"):
        # Kept to make the loader again for a map-style dataset whose length changes.
        arguments = {name: value for name, value in locals().items() if name != "self"}
        self._core = None  # so that close() and __del__ work whatever fails below
        self._workers = None
        # batch_size=None: samples one at a time, without a batch dimension (torch's automatic
        # batching off): gpufeed reads batches of one and hands each out without its batch axis.
        self._unbatched = batch_size is None and batch_sampler is None
        if self._unbatched:
            if drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is mutually "
                                 "exclusive with drop_last")
            batch_size = 1
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
        else:
            _positive_int("batch_size", batch_size)
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        _check_context(multiprocessing_context, num_workers, worker_type)
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        if cores and num_workers > cores:
            # The phrase torch's warning has, so that filters written for it match this one.
            warnings.warn(f"This DataLoader will create {num_workers} workers, more than the "
                          f"{cores} CPUs this process may use: excessive worker creation might "
                          f"get DataLoader running slow or even freeze; lower num_workers to "
                          f"{cores} or less (or let autotune=True choose)", UserWarning,
                          stacklevel=2)
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if prefetch_factor is not None and (not isinstance(prefetch_factor, int) or prefetch_factor < 1):
            raise ValueError(f"prefetch_factor should be a positive integer, got {prefetch_factor!r}")
        # An iterable dataset: each worker process iterates its own copy (sharded through
        # get_worker_info(), as torch's workers do) and makes batches of what it takes, with
        # collate_fn (torch's default_collate by default); the epoch ends when every worker's
        # iterator has.
        self._iterable = _torch_data is not None and isinstance(dataset, _torch_data.IterableDataset)
        if self._iterable:
            for name, value in (("shuffle", shuffle or None), ("sampler", sampler),
                                ("batch_sampler", batch_sampler)):
                if value is not None:
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                     f"{name} option, but got {name}={value!r}")
            if worker_type == "thread":
                raise ValueError("an IterableDataset is iterated in worker processes: use "
                                 "worker_type='process' (or 'auto')")
            if _is_default_collate(collate_fn):
                collate_fn = (_workers.convert_one if self._unbatched
                              else _workers.default_collate)
        # A custom collate_fn runs in the worker processes on each batch's samples, as in torch;
        # its output is laid out in the shared ring and read in place.
        self._collate = self._iterable or not _is_default_collate(collate_fn)
        if self._collate:
            if isinstance(dataset, _gpufeed.Dataset):
                raise ValueError("collate_fn: gpufeed.datasets make their batches in C++; do "
                                 "per-batch work after the loader (on the GPU: transforms=)")
            if worker_type == "thread":
                raise ValueError("collate_fn runs in worker processes: use worker_type='process' "
                                 "(or 'auto'); worker threads write samples straight into "
                                 "their batch and run no collate function")
            if on_error != "raise":
                raise ValueError(f"on_error={on_error!r} with a custom collate_fn: a batch is "
                                 "made whole or not at all, so a failing sample fails its "
                                 "batch; use on_error='raise'")
            if self._unbatched and not self._iterable:
                raise ValueError("batch_size=None with a custom collate_fn: gpufeed makes "
                                 "batches with it; give a batch_size")
            if transforms:
                raise ValueError("transforms= with a custom collate_fn: its output is returned "
                                 "as collate_fn made it; convert it in collate_fn or after")
            worker_type = "process"
        if output is None:
            output = "torch" if torch is not None else "numpy"
        if output not in ("torch", "numpy"):
            raise ValueError(f"output: expected 'torch' or 'numpy', got {output!r}")
        if output == "torch" and torch is None:
            raise ValueError("output='torch' but torch cannot be imported; use output='numpy'")
        if on_error not in ("raise", "skip"):
            raise ValueError(f"on_error: expected 'raise' or 'skip', got {on_error!r}")
        device_index = _device_index(device)
        if device_index is not None:
            count, why = _gpufeed.cuda_devices()
            if count == 0:
                raise ValueError(f"device={device!r}: this machine has no usable CUDA device "
                                 f"({why}); pass device=None (or 'cpu') for batches in host "
                                 "memory")
            if device_index >= count:
                raise ValueError(f"device={device!r}: this process sees {count} CUDA device(s), "
                                 f"cuda:0 to cuda:{count - 1}")
        if device_index is not None and output == "numpy":
            raise ValueError("output='numpy' needs host memory: numpy cannot hold CUDA memory; "
                             "use output='torch' or device=None")

        self.dataset = dataset
        self.batch_size = None if batch_sampler is not None or self._unbatched else batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.persistent_workers = persistent_workers
        self.num_workers = num_workers
        self.timeout = timeout
        self.generator = generator
        self._output = output
        self._device_index = device_index

        # Who reads: threads, or worker processes writing into a ring this process shares.
        python_dataset = not isinstance(dataset, _gpufeed.Dataset)
        self.worker_type, why = _worker_kind(worker_type, python_dataset, num_workers)
        if self.worker_type == "process":
            workers_count = max(1, num_workers) if not autotune else (
                num_workers or len(os.sched_getaffinity(0)))
        else:
            workers_count = None

        # The dataset: a bundled one as it is, any other through the Python adapter (read by
        # worker processes, or by threads).
        if self.worker_type == "process":
            native = _gpufeed.ProcessDataset(
                _ITERABLE_PLACES if self._iterable else len(dataset), workers_count,
                collate=self._collate, iterable=self._iterable,
                collate_budget=held_batches_budget if held_batches_budget is not None
                else _quarter_of_memory())
            # Learned from the first sample a worker reads (a collate_fn's batches carry theirs).
            self._structure = "collated" if self._collate else None
            self._workers = _workers.WorkerProcesses(
                native, dataset, workers_count, multiprocessing_context, worker_init_fn,
                _seed_from(generator), collate_fn if self._collate else None,
                iterable=self._iterable, drop_last=bool(drop_last))
            _gpufeed.log("info", f"{workers_count} worker processes "
                         f"({self._workers.start_method}): {why}; they write samples into a "
                         "ring this process shares with them")
        elif isinstance(dataset, _gpufeed.Dataset):
            native = dataset
            self._structure = getattr(dataset, "_gpufeed_structure", None) or (
                "dict", dict, [n for n, _, _ in dataset.fields],
                [("leaf", i) for i in range(len(dataset.fields))])
            if worker_init_fn is not None:
                _say_once("worker_init_fn", "worker_init_fn: not called for gpufeed.datasets, "
                          "whose workers run no Python")
        else:
            native = _gpufeed.PythonDataset(dataset, worker_init_fn)
            self._structure = None  # learned from the first sample a worker reads
            if python_dataset:
                _gpufeed.log("info", f"{max(1, num_workers)} worker threads: {why}")
        self._native_dataset = native
        self._text_fields = set()
        if self._structure is not None and not self._collate:
            self._note_text_fields()

        # The order: gpufeed's own (sequential, or shuffled from a seed), or the sampler's.
        order = "builtin"
        self._given = None
        sequential = _torch_data is not None and type(sampler) is _torch_data.SequentialSampler
        if batch_sampler is not None:
            order, self._given = "given", "batch_sampler"
        elif sampler is not None and not sequential:
            order, self._given = "given", "sampler"
        if seed is None:
            seed = _seed_from(generator) if (shuffle and order == "builtin") else 0
        self.seed = seed

        # Workers and the ring.
        if autotune:
            workers = "auto"
        elif num_workers == 0:
            workers = 1
            _say_once("num_workers0", "num_workers=0: gpufeed reads on one worker thread (torch "
                      "would read in the main process); set num_workers for more")
        else:
            workers = num_workers
        if prefetch_depth is None:
            if autotune:
                prefetch_depth = "auto"
            else:
                # torch keeps prefetch_factor batches per worker in flight; the ring also holds
                # the batch the training loop's variable still refers to while it asks for the
                # next one: one slot more.
                factor = 2 if prefetch_factor is None else prefetch_factor
                prefetch_depth = factor * max(1, num_workers) + 1
                _say_once(("prefetch", factor, num_workers),
                          f"prefetch_factor={factor} x {max(1, num_workers)} workers + the batch "
                          f"in use: a ring of {prefetch_depth} batches (set prefetch_depth to "
                          "choose it directly)")
        if pin_memory and device_index is None:
            _say_once("pin_memory", "pin_memory=True: gpufeed's host batches are not pinned; "
                      "pass device='cuda' and gpufeed copies each batch to the GPU from pinned "
                      "memory itself (one copy per batch, non-blocking)")
        if pin_memory_device:
            _say_once("pin_memory_device", "pin_memory_device: use device= instead")
        if multiprocessing_context is not None and self.worker_type == "thread":
            _say_once("mp", "multiprocessing_context: this loader's workers are threads; ignored")
        if not persistent_workers and num_workers > 0:
            _say_once("persistent", "persistent_workers=False: gpufeed's workers always persist "
                      "across epochs (seeded once, as torch's persistent workers are)")
        if not in_order:
            _say_once("in_order", "in_order=False: gpufeed delivers batches in order; a slow "
                      "sample holds back only its own batch while the others are prepared")

        options = dict(
            batch_size=batch_size if batch_sampler is None else max(
                1, getattr(batch_sampler, "batch_size", 0) or self._largest_batch(batch_sampler)),
            workers=workers, prefetch_depth=prefetch_depth,
            accumulation_steps=accumulation_steps, shuffle=bool(shuffle) and order == "builtin",
            seed=seed, order=order, chunk_window=chunk_window, drop_last=bool(drop_last), drop_last_step=bool(drop_last_step),
            on_error=on_error, timeout=float(timeout), stall_warning=float(stall_warning),
            rank=rank, world_size=world_size, held_batches_budget=held_batches_budget,
            trace_events=trace_events, transforms=_transforms_of(transforms),
            device=None if device_index is None or self._collate else (
                device_index if device_index >= 0 else "cuda"),
        )
        if self.worker_type == "process":
            options["workers"] = workers_count  # one worker thread drives each process
        try:
            self._core = _gpufeed.Loader(native, **options)
        except BaseException:
            self.close()
            raise
        resolved = self._core.resolved
        self._cuda_device = resolved["device"] if resolved["cuda"] else None
        if order == "builtin" and resolved["world_size"] > 1 and rank is None:
            _say_once("rank", f"rank {resolved['rank']} of {resolved['world_size']} from torchrun's "
                      "environment: this rank reads its own share of each epoch (pass a "
                      "DistributedSampler, or rank=0, world_size=1 to read everything)")
        self._next_epoch = 0
        self._resume = None
        self._iterator = None
        self.step_info = None
        # A map-style Python dataset's length the workers and the plan are made for.
        self._made_length = len(dataset) if python_dataset and not self._iterable else None
        # An iterable dataset's len(), once len(loader) has asked it: more batches than that
        # (each holds a sample at least) are warned of.
        self._length_asked = None
        self._yielded = 0
        self._arguments = arguments
        self._initialized = True

    # As torch's DataLoader: the arguments that shape the batches cannot change afterwards (the
    # workers, the ring and the plan were made from them).
    _fixed_after_init = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                         "persistent_workers")

    def __setattr__(self, name, value):
        if name in self._fixed_after_init and self.__dict__.get("_initialized", False):
            raise ValueError(f"{name} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(name, value)

    # DataLoader[T] in type annotations, as torch's DataLoader is generic.
    __class_getitem__ = classmethod(types.GenericAlias)

    def _note_text_fields(self):
        self._text_fields = text_fields(self._structure)
        if self._text_fields:
            names = ", ".join(repr(self._native_dataset.fields[i][0])
                              for i in sorted(self._text_fields))
            _gpufeed.log("info", f"text fields {names}: the batch holds an int64 id per sample "
                         "for each (int64[] below) and gpufeed hands the str or bytes values "
                         "back with it, keeping each distinct value once (at most "
                         f"len(dataset) + {_gpufeed.PythonDataset.text_values_beyond_length} "
                         "per field)")

    def _learn_structure(self):
        """The sample's structure, once a worker has read the first sample (a worker process
        sends it pickled)."""
        structure = self._native_dataset.structure
        self._structure = pickle.loads(structure) if isinstance(structure, bytes) else structure
        self._note_text_fields()

    @staticmethod
    def _largest_batch(batch_sampler):
        return max((len(b) for b in batch_sampler), default=1)

    # ---- the torch interface ----

    def __len__(self):
        if self._iterable:  # as torch: from the dataset's own __len__, when it has one
            n = self._length_asked = len(self.dataset)
            if not self._unbatched:
                n = n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
            return n
        if not self._in_epoch():
            self._follow_length()
        if self._given == "batch_sampler":
            return len(self.batch_sampler)
        if self._given == "sampler":
            n = len(self.sampler)
            if self._unbatched:
                return n
            return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
        return self._core.batches_per_epoch

    def __iter__(self):
        try:
            self._start_epoch()
        except WorkerError as e:
            self._explain(e)
            raise
        iterator = self._iterator() if self._iterator is not None else None
        if iterator is None:
            iterator = _Iterator(self)
            # Weakly: the iterator holds the loader, and a cycle would keep the workers and the
            # ring alive after `del loader` until Python's garbage collector runs.
            self._iterator = weakref.ref(iterator)
        iterator._ended = False
        return iterator

    def set_epoch(self, epoch):
        """Makes the next ``iter()`` start ``epoch`` (the shuffle and the augmentations depend
        on it; a DistributedSampler passed as sampler keeps its own set_epoch)."""
        self._next_epoch = int(epoch)

    def state_dict(self):
        """Where iteration stands: ``load_state_dict`` of it on a loader made with the same
        arguments resumes with the batch that would have come next (torchdata's
        StatefulDataLoader semantics)."""
        if self._iterable:
            raise ValueError("state_dict: a loader over an IterableDataset cannot say where its "
                             "workers' iterators stand; resume by epoch (set_epoch) instead")
        state = {"version": 1, "core": self._core.state(), "next_epoch": self._next_epoch}
        if self._given is not None:
            state["order"] = self._order
            state["order_epoch"] = self._epoch
        return state

    def load_state_dict(self, state):
        """Resumes at ``state`` with the next ``iter()``."""
        if not isinstance(state, dict) or state.get("version") != 1:
            raise ValueError("load_state_dict: not a gpufeed DataLoader state")
        self._resume = state

    def stats(self):
        """The loader's counters since it started (a dict; see docs/python.md)."""
        import json

        counters = json.loads(self._core.stats_json())
        counters["skipped_indices"] = self._core.skipped_indices()
        return counters

    def diagnose(self, gpu_percent=None):
        """Where the bottleneck is, with the evidence and the fix (``gpu_percent``: the GPU's
        mean utilization over the run, if known)."""
        return Diagnosis(*self._core.diagnose(gpu_percent))

    def write_trace(self, path):
        """Writes the spans recorded (``trace_events``) for chrome://tracing or Perfetto."""
        self._core.write_trace(str(path))

    def _explain(self, error):
        """Completes a WorkerError's account of how a worker process ended."""
        if self._workers is not None:
            self._workers.explain(error)

    def close(self):
        """Stops the workers now (the loader is unusable afterwards; batches stay valid)."""
        if self._core is not None:
            self._core.close()
        if self._workers is not None:
            self._workers.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- epochs ----

    def _draw_order(self):
        if self._given == "batch_sampler":
            batches = [list(b) for b in self.batch_sampler]
            indices = np.fromiter((i for b in batches for i in b), dtype=np.int64)
            sizes = np.array([len(b) for b in batches], dtype=np.int64)
            return indices, sizes
        indices = np.fromiter(iter(self.sampler), dtype=np.int64)
        return indices, None

    def _in_epoch(self):
        """Whether an epoch's iterator is alive and not yet at its end."""
        iterator = self._iterator() if self._iterator is not None else None
        return iterator is not None and not iterator._ended

    def _follow_length(self):
        """Follows a map-style dataset that grew or shrank, as torch's DataLoader does: the
        workers (which copy the dataset as it is now), the ring and the plan are made again for
        its new length, between epochs. The epoch count, a pending load_state_dict and the
        iterator carry over."""
        if self._made_length is None or self._core is None or self._core.closed:
            return  # a closed loader stays closed
        try:
            length = len(self.dataset)
        except TypeError:
            return
        if length == self._made_length:
            return
        _gpufeed.log("info", f"the dataset has {length} samples now, {self._made_length} when "
                     "the loader was made: its workers and plan are made again for "
                     f"{length}")
        kept = (self._next_epoch, self._resume, self._iterator)
        self.close()
        self.__dict__["_initialized"] = False
        DataLoader.__init__(self, **self._arguments)
        self._next_epoch, self._resume, self._iterator = kept

    def _start_epoch(self):
        self._follow_length()
        self._yielded = 0
        self.step_info = None
        self._workers_ended = set()  # an iterable dataset's workers whose iterators ended
        if self._resume is not None:
            state, self._resume = self._resume, None
            epoch = _gpufeed.state_epoch(state["core"])
            if self._given is not None:
                # The epoch's own order when the state is inside it; a fresh draw when the
                # state stands at the start of the next one.
                same = state.get("order_epoch") == epoch
                self._order = state["order"] if same else self._draw_order()
                self._core.set_epoch_order(epoch, *self._order)
            self._core.restore(state["core"])
            self._next_epoch = max(int(state["next_epoch"]), epoch + 1)
            self._epoch = epoch
            return
        epoch = self._next_epoch
        if self._given is not None:
            self._order = self._draw_order()
            self._core.set_epoch_order(epoch, *self._order)
        else:
            self._core.set_epoch(epoch)
        self._epoch = epoch
        self._next_epoch = epoch + 1

    # ---- batches ----

    def _stream(self):
        if self._device_index is None or self._collate:
            return None
        s = torch.cuda.current_stream(self._cuda_device).cuda_stream
        return s if s != 0 else 1  # DLPack's number for the legacy default stream

    def _to_tensor(self, field):
        if self._output == "numpy":
            # Through the array interface: numpy marks arrays it imports by DLPack read-only
            # (before 2.0), and such arrays cannot be passed on by DLPack; this one is writable
            # and keeps the field (so the slot) alive as its base.
            return np.asarray(field)
        if field.dtype == "bool":  # torch 1.13 reads no DLPack bool; a uint8 view is free
            return torch.utils.dlpack.from_dlpack(field.as_uint8()).view(torch.bool)
        return torch.utils.dlpack.from_dlpack(field)

    def _next_batch(self):
        raw = self._core.next(self._stream())
        if raw is None:
            return None
        if self._collate:  # collate_fn's output as it made it, read in place
            while True:
                collated, worker = self._native_dataset.collated(raw)
                if collated is not None:
                    break
                # An iterable dataset's worker had no more samples this epoch.
                self._workers_ended.add(worker)
                if len(self._workers_ended) == self._native_dataset.workers:
                    return None
                raw = self._core.next(self._stream())
            self.step_info = StepInfo(*raw.step)
            device = None
            if self._device_index is not None:
                device = f"cuda:{self._device_index}" if self._device_index >= 0 else "cuda"
            return _workers.unpack(collated, device)
        if self._structure is None:
            self._learn_structure()
        step = StepInfo(*raw.step)
        self.step_info = step
        # A text field's memory holds ids: its values come from the dataset's table instead.
        tensors = [None if i in self._text_fields else self._to_tensor(f)
                   for i, f in enumerate(raw.fields())]
        if self._unbatched:  # the one sample, without its batch axis
            return unbatched(self._structure, [t if t is None else t[0] for t in tensors],
                             lambda field: self._native_dataset.texts(raw, field)[0])
        return build(self._structure, tensors, step,
                     lambda field: self._native_dataset.texts(raw, field))

    def _count_yielded(self):
        """Warns, as torch does, when an iterable dataset gives more batches than the samples
        its __len__ promised (len(loader) having asked it): every worker probably yields the
        whole dataset."""
        self._yielded += 1
        if self._length_asked is not None and self._yielded > self._length_asked:
            # A batch of one is a sample. The phrases are torch's, so that filters written for
            # its warning match this one.
            unit = "samples" if self._unbatched or self.batch_size == 1 else "batches"
            warnings.warn(f"the IterableDataset's __len__ is {self._length_asked}, but "
                          f"{self._yielded} {unit} have been fetched. For multiprocessing "
                          "data-loading, this usually means that every worker yields the whole "
                          "dataset: shard it in __iter__ with get_worker_info(); else __len__ "
                          "is too small", UserWarning, stacklevel=3)

    def _timed_out(self, error):
        """A LoaderTimeoutError that says first what torch's says, then which sample is late."""
        detail = str(error)
        if detail.startswith("gpufeed: "):
            detail = detail[len("gpufeed: "):]
        return LoaderTimeoutError(f"DataLoader timed out after {self.timeout:g} seconds: "
                                  f"{detail}", error.index)

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing to report to at collection time
            pass


class _Iterator:
    """The one iterator of a loader (torch's persistent_workers behaviour): ``iter(loader)``
    resets it to the next epoch."""

    def __init__(self, loader):
        self._loader = loader
        self._ended = False  # the epoch's end was met: StopIteration until iter(loader)
        self._lock = threading.Lock()

    def __iter__(self):
        return self

    def __next__(self):
        # One consumer at a time: once a thread meets the end of the epoch, the others stop
        # too, instead of reading on into the next epoch the loader has started.
        with self._lock:
            if self._ended:
                raise StopIteration
            try:
                batch = self._loader._next_batch()
            except WorkerError as e:
                self._loader._explain(e)
                raise
            except LoaderTimeoutError as e:
                raise self._loader._timed_out(e) from None
            if batch is None:
                self._ended = True
                raise StopIteration
            if self._loader._iterable:
                self._loader._count_yielded()
        return batch

    def __len__(self):
        return len(self._loader)
