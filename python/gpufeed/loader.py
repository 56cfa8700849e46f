"""gpufeed.DataLoader: torch.utils.data.DataLoader's interface over gpufeed's C++ loader.

Workers read samples straight into a ring of batch slots: worker processes for a Python dataset
(they write into the ring, which they share with this process), threads for gpufeed's own
datasets; batches reach torch and numpy by DLPack, without a copy. See docs/python.md for the
migration table.
"""

from __future__ import annotations

import math
import os
import weakref
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

import numpy as np

from . import _gpufeed
from ._arguments import (check_batching, check_collate, check_device, check_iterable,
                         check_num_workers, check_on_error, check_output, check_prefetch_factor,
                         check_timeout)
from ._batches import BatchReader
from ._diagnosis import Diagnosis
from ._iterator import Epoch, LoaderIterator, PromisedLength
from ._native_dataset import make_native_dataset
from ._notes import note_arguments_taken_otherwise, say_once
from ._options import core_options, worker_plan
from ._samplers import ShardBatchSampler, ShardSampler
from ._shard import agreed_seed, expect_sharding_sampler, shard_now
from ._worker_info import get_worker_info
from .errors import WorkerError

try:  # torch is optional: without it, batches are numpy arrays
    import torch
    import torch.utils.data as _torch_data
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None  # type: ignore[assignment]
    _torch_data = None  # type: ignore[assignment]

if TYPE_CHECKING:
    import multiprocessing.context
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

    import typing_extensions
    from typing_extensions import Self

    from ._assemble import StepInfo

__all__ = ["DataLoader", "Diagnosis", "get_worker_info"]

# The dataset's sample type; Any for gpufeed.datasets (for type checkers only: Python before
# 3.13 has no TypeVar default, and typing_extensions is not a requirement).
if TYPE_CHECKING:
    T_co = typing_extensions.TypeVar("T_co", covariant=True, default=Any)
else:
    T_co = TypeVar("T_co", covariant=True)


class MapStyleDataset(Protocol[T_co]):
    """A map-style dataset as DataLoader reads one: ``__getitem__`` by index (torch's
    ``Dataset``); the loader also asks its ``len()``."""

    def __getitem__(self, index: int, /) -> T_co: ...


class DataLoader(Generic[T_co]):
    """A drop-in for ``torch.utils.data.DataLoader``: same arguments, same batches.

    Arguments torch has keep torch's meaning and its positional order where gpufeed has one;
    the others are accepted and explained once in the log, or refused with a ValueError saying
    what to do instead. gpufeed's own arguments are keyword only. ``DataLoader[T]`` works in
    annotations, as torch's DataLoader is generic.

    Args:
        dataset: A map-style dataset (``__len__`` and ``__getitem__``; a change of its length
            is followed between epochs), an ``IterableDataset`` (each worker process iterates
            its own copy, sharded through ``get_worker_info()``), or a ``gpufeed.datasets`` one
            (read in C++, no Python at all).
        batch_size: Samples per batch. None: the samples one at a time, without a batch axis.
        shuffle: Reshuffle every epoch; the order is a function of (``seed``, epoch, rank,
            world size), the same for any worker count.
        sampler: The indices of each epoch, drawn at its start (``DistributedSampler`` and its
            ``set_epoch`` work); exclusive with ``shuffle``.
        batch_sampler: The batches of indices of each epoch, drawn at its start; exclusive
            with ``batch_size``, ``shuffle``, ``sampler`` and ``drop_last``.
        num_workers: Worker processes for a Python dataset, worker threads for
            ``gpufeed.datasets``; 0 (torch: load in the main process) is one worker thread.
        collate_fn: None or torch's ``default_collate``: each sample is written straight into
            its batch. Any other runs in the worker processes on each batch's samples, and its
            output comes back as it made it.
        pin_memory: Host batches are not pinned; pass ``device="cuda"`` instead (gpufeed then
            copies each batch from page-locked memory itself).
        drop_last: Drop the last batch of an epoch when it is short.
        timeout: Seconds to wait for a batch, the first included (0: forever); a late batch
            raises ``gpufeed.LoaderTimeoutError`` naming the late sample.
        worker_init_fn: Called once in each worker, with its id, before its first read (not
            for ``gpufeed.datasets``, whose workers run no Python).
        multiprocessing_context: How worker processes start: ``"fork"``, ``"spawn"``,
            ``"forkserver"`` or a multiprocessing context.
        generator: Seeds the shuffle and the workers' base seed (default: torch's global
            generator, so ``torch.manual_seed`` makes runs reproducible).
        prefetch_factor: The ring holds ``prefetch_factor x max(1, num_workers) + 1`` batches
            (default 2), unless ``prefetch_depth`` says otherwise.
        persistent_workers: Accepted; gpufeed's workers always persist across epochs.
        pin_memory_device: Accepted and ignored; use ``device``.
        in_order: Accepted; batches always come in order.
        prefetch_depth: The ring's slots (batches prepared ahead), or ``"auto"``; overrides
            ``prefetch_factor``.
        accumulation_steps: Micro-batches per optimizer step (gradient accumulation); each
            batch's ``step_info`` says where it stands.
        device: Where batches are delivered: None or ``"cpu"`` for host memory, ``"cuda"``
            (``LOCAL_RANK``'s device, else 0), ``"cuda:N"``, N, or a ``torch.device``.
        transforms: Per-field conversions on the GPU, by field name: ``{"image": {"dtype":
            "float32", "layout": "chw", "scale": 1/255, "mean": [...], "std": [...]}}`` (or a
            list of such dicts, each with its ``"field"``).
        seed: The order's and the augmentations' seed (default: drawn from ``generator``, the
            same on every rank).
        on_error: ``"raise"``: a failing sample raises; ``"skip"``: it is left out, counted
            and listed in ``stats()``.
        rank: This process's rank (default: torch.distributed's process group, then torchrun's
            environment).
        world_size: The processes that share each epoch (default: as ``rank``).
        autotune: Let gpufeed choose the workers and the ring's depth (docs/tuning.md).
        output: ``"torch"`` (the default where torch imports) or ``"numpy"`` batches.
        held_batches_budget: Bytes the ring may grow to while batches are held past the next
            step (default: a quarter of the machine's memory; 0: never grows); also the budget
            of a ``collate_fn``'s batches.
        drop_last_step: Drop the last optimizer step of an epoch when it has fewer than
            ``accumulation_steps`` micro-batches.
        trace_events: Stage spans to keep for ``write_trace`` (0: none recorded).
        stall_warning: Seconds a wait for a batch lasts before the log names the sample it
            waits for.
        chunk_window: With ``shuffle``, draw each stretch of the order from this many chunks
            of a chunked HDF5 dataset, so that a chunk is decompressed once, not once per
            sample (0: a plain shuffle; docs/datasets-hdf5.md).
        worker_type: ``"auto"``: worker processes for a Python dataset on an interpreter with
            a GIL, threads for ``gpufeed.datasets`` and on a free-threaded interpreter;
            ``"process"``; ``"thread"``.

    Raises:
        ValueError: An argument is out of range or conflicts with another (torch's message
            where torch checks the same); TypeError for a ``multiprocessing_context`` of
            another type.
    """

    dataset: MapStyleDataset[T_co] | Iterable[T_co] | _gpufeed.Dataset
    # None with a batch_sampler, and with batch_size=None (samples one at a time).
    batch_size: int | None
    drop_last: bool
    # The sampler given, or the loader's own ShardSampler when it makes the order.
    sampler: Iterable[int] | None
    # The batch sampler given, or the loader's own ShardBatchSampler when it makes the order.
    batch_sampler: Iterable[Sequence[int]] | None
    persistent_workers: bool
    num_workers: int
    timeout: float
    generator: torch.Generator | None
    # "process" or "thread": who reads the samples.
    worker_type: Literal["process", "thread"]
    # The order's seed (the same on every rank).
    seed: int
    # The C++ loader: None only while __init__ has not made it (close() and __del__ allow it).
    _core: _gpufeed.Loader

    def __init__(self, dataset: MapStyleDataset[T_co] | Iterable[T_co] | _gpufeed.Dataset,
                 batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler: Iterable[int] | None = None,
                 batch_sampler: Iterable[Sequence[int]] | None = None, num_workers: int = 0,
                 collate_fn: Callable[[list[Any]], Any] | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], object] | None = None,
                 multiprocessing_context: str | multiprocessing.context.BaseContext | None = None,
                 generator: torch.Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True,
                 prefetch_depth: int | Literal["auto"] | None = None,
                 accumulation_steps: int = 1, device: str | int | torch.device | None = None,
                 transforms: (Mapping[str, Mapping[str, Any]] | Sequence[Mapping[str, Any]]
                              | None) = None,
                 seed: int | None = None, on_error: Literal["raise", "skip"] = "raise",
                 rank: int | None = None, world_size: int | None = None, autotune: bool = False,
                 output: Literal["torch", "numpy"] | None = None,
                 held_batches_budget: int | None = None, drop_last_step: bool = False,
                 trace_events: int = 0, stall_warning: float = 30.0, chunk_window: int = 0,
                 worker_type: Literal["auto", "process", "thread"] = "auto") -> None:
        # Kept to make the loader again for a map-style dataset whose length changes, or when
        # this process's share of the epoch does.
        arguments = {name: value for name, value in locals().items() if name != "self"}
        decided = self.__dict__.pop("_decided", None)  # (shard, seed, settled), when made again
        self._core = None  # type: ignore[assignment]  # close() and __del__ work meanwhile
        self._workers = None

        # The arguments, checked before anything starts: the first that is wrong raises.
        self._unbatched, batch_size = check_batching(batch_size, shuffle, sampler,
                                                     batch_sampler, drop_last)
        check_num_workers(num_workers, multiprocessing_context, worker_type)
        check_timeout(timeout)
        check_prefetch_factor(prefetch_factor)
        self._iterable, collate_fn = check_iterable(dataset, shuffle, sampler, batch_sampler,
                                                    worker_type, collate_fn, self._unbatched)
        self._collate, worker_type = check_collate(dataset, collate_fn, self._iterable,
                                                   self._unbatched, worker_type, on_error,
                                                   transforms)
        output = check_output(output)
        check_on_error(on_error)
        device_index = check_device(device, output)

        self.dataset = dataset
        self.batch_size = None if batch_sampler is not None or self._unbatched else batch_size
        self.drop_last = drop_last
        self.sampler = sampler  # the loader's own when it makes the order (below)
        self.batch_sampler = batch_sampler
        self.persistent_workers = persistent_workers
        self.num_workers = num_workers
        self.timeout = timeout
        self.generator = generator
        self._output = output
        self._device_index = device_index

        # Who reads: threads, or worker processes writing into a ring this process shares.
        python_dataset = not isinstance(dataset, _gpufeed.Dataset)
        self._plan = worker_plan(num_workers=num_workers, worker_type=worker_type,
                                 python_dataset=python_dataset, autotune=autotune,
                                 prefetch_factor=prefetch_factor, prefetch_depth=prefetch_depth)
        self.worker_type = self._plan.kind
        self._native_dataset, self._structure, self._workers = make_native_dataset(
            dataset, plan=self._plan, iterable=self._iterable, collate=self._collate,
            collate_fn=collate_fn, worker_init_fn=worker_init_fn,
            multiprocessing_context=multiprocessing_context, generator=generator,
            drop_last=drop_last, held_batches_budget=held_batches_budget)

        # Which share of each epoch this process reads, and the order's seed (_shard.py).
        order = self._choose_order(sampler, batch_sampler)
        self._shard_arguments = (rank, world_size)
        self._draws_seed = seed is None and bool(shuffle) and order == "builtin"
        if decided is not None:
            self._shard, seed, self._seed_settled = decided
        else:
            self._shard = shard_now(rank, world_size, given=order == "given")
            if order == "given":
                expect_sharding_sampler(sampler, batch_sampler, self._shard)
            self._seed_settled = True
            if self._draws_seed:
                seed, self._seed_settled = agreed_seed(generator, self._shard, agree=False)
            elif seed is None:
                seed = 0
        self.seed = seed
        self._shuffled = bool(shuffle) and order == "builtin"
        if order == "builtin" and sampler is None and not self._iterable:
            # What frameworks look for on a loader (set_epoch, len, this rank's indices).
            self.sampler = ShardSampler(self)
            if not self._unbatched:
                self.batch_sampler = ShardBatchSampler(self, self.sampler)

        # Workers and the ring.
        note_arguments_taken_otherwise(
            pin_memory=pin_memory, device_index=device_index,
            pin_memory_device=pin_memory_device, multiprocessing_context=multiprocessing_context,
            worker_type=self.worker_type, persistent_workers=persistent_workers,
            num_workers=num_workers, in_order=in_order)
        options = core_options(
            batch_size=batch_size, batch_sampler=batch_sampler, workers=self._plan.workers,
            prefetch_depth=self._plan.prefetch_depth, accumulation_steps=accumulation_steps,
            shuffle=shuffle, seed=seed, order=order, chunk_window=chunk_window,
            drop_last=drop_last, drop_last_step=drop_last_step, on_error=on_error,
            timeout=timeout, stall_warning=stall_warning, rank=self._shard.rank,
            world_size=self._shard.world_size,
            held_batches_budget=held_batches_budget, trace_events=trace_events,
            transforms=transforms, device_index=device_index, collate=self._collate)
        self._start_core(options)
        self._reader = BatchReader(self._core, self._native_dataset, self._structure,
                                   self._workers, output=output, device_index=device_index,
                                   unbatched=self._unbatched, timeout=timeout)
        # A batch of one is a sample, for torch's warning about an IterableDataset's length.
        self._promise = (PromisedLength("samples" if self._unbatched or self.batch_size == 1
                                        else "batches") if self._iterable else None)

        self._next_epoch = 0
        self._epoch_now: Epoch | None = None  # the one iter() started last
        self._resume: dict[str, Any] | None = None
        self._iterator: weakref.ref[LoaderIterator] | None = None
        # A map-style Python dataset's length the workers and the plan are made for.
        self._made_length = (len(dataset)  # type: ignore[arg-type]  # map-style: sized
                             if python_dataset and not self._iterable else None)
        self._arguments = arguments
        self._initialized = True

    def _choose_order(self, sampler, batch_sampler):
        """"builtin" (gpufeed's own order: sequential, or shuffled from a seed) or "given" (each
        epoch's from the sampler or the batch sampler, named by ``_given``)."""
        order = "builtin"
        self._given = None
        sequential = _torch_data is not None and type(sampler) is _torch_data.SequentialSampler
        if batch_sampler is not None:
            order, self._given = "given", "batch_sampler"
        elif sampler is not None and not sequential:
            order, self._given = "given", "sampler"
        return order

    def _start_core(self, options):
        """Makes the C++ loader, which starts its worker threads (worker processes start at the
        first iter()); closes the loader if it cannot."""
        try:
            self._core = _gpufeed.Loader(self._native_dataset, **options)
        except BaseException:
            self.close()
            raise

    # As torch's DataLoader: the arguments that shape the batches cannot change afterwards (the
    # workers, the ring and the plan were made from them).
    _fixed_after_init = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                         "persistent_workers")

    def __setattr__(self, name, value):
        if name in self._fixed_after_init and self.__dict__.get("_initialized", False):
            raise ValueError(f"{name} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(name, value)

    # ---- the torch interface ----

    def __len__(self) -> int:
        if self._iterable:  # as torch: from the dataset's own __len__, when it has one
            # A dataset without __len__ raises TypeError, as torch's loader does.
            n = len(self.dataset)  # type: ignore[arg-type]
            self._promise.asked = n  # type: ignore[union-attr]  # made for an iterable one
            if self.batch_size is not None:  # None: unbatched, a batch_sampler cannot be given
                n = n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
            return n
        self._follow_changes_between_epochs()
        if self._given == "batch_sampler":
            return len(self.batch_sampler)  # type: ignore[arg-type]  # as torch: a sized one
        if self._given == "sampler":
            n = len(self.sampler)  # type: ignore[arg-type]
            if self.batch_size is None:  # unbatched
                return n
            return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
        return self._core.batches_per_epoch

    def __iter__(self) -> Iterator[Any]:
        try:
            self._follow_changes(agree=True)
            if not self._epoch_still_unread():
                self._start_epoch()
        except WorkerError as e:
            self._reader.explain(e)
            raise
        iterator = self._iterator() if self._iterator is not None else None
        if iterator is None:
            iterator = LoaderIterator(self, self._promise)
            # Weakly: the iterator holds the loader, and a cycle would keep the workers and the
            # ring alive after `del loader` until Python's garbage collector runs.
            self._iterator = weakref.ref(iterator)
        iterator.begin(self._epoch_now, self._reader)  # type: ignore[arg-type]  # started
        return iterator

    @property
    def step_info(self) -> StepInfo | None:
        """Where the batch last yielded stands in gradient accumulation (None before the
        epoch's first batch)."""
        return self._epoch_now.step_info if self._epoch_now is not None else None

    def set_epoch(self, epoch: int) -> None:
        """Makes the next ``iter()`` start ``epoch`` (the shuffle and the augmentations depend
        on it; a DistributedSampler passed as sampler keeps its own set_epoch)."""
        epoch = int(epoch)
        pending = self._pending_epoch()
        if pending is not None:
            if epoch == pending.number:  # that epoch is started already, and not read yet
                self._next_epoch = epoch + 1
                return
            pending.pending = False  # the next iter() starts `epoch` instead
        self._next_epoch = epoch

    def state_dict(self) -> dict[str, Any]:
        """Where iteration stands: ``load_state_dict`` of it on a loader made with the same
        arguments resumes with the batch that would have come next (torchdata's
        StatefulDataLoader semantics)."""
        if self._iterable:
            raise ValueError("state_dict: a loader over an IterableDataset cannot say where its "
                             "workers' iterators stand; resume by epoch (set_epoch) instead")
        state = {"version": 1, "core": self._core.state(), "next_epoch": self._next_epoch}
        if self._given is not None and self._epoch_now is not None:
            state["order"] = self._order
            state["order_epoch"] = self._epoch_now.number
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resumes at ``state`` with the next ``iter()``."""
        if not isinstance(state, dict) or state.get("version") != 1:
            raise ValueError("load_state_dict: not a gpufeed DataLoader state")
        self._resume = state
        pending = self._pending_epoch()
        if pending is not None:
            pending.pending = False  # the next iter() resumes instead

    def stats(self) -> dict[str, Any]:
        """The loader's counters since it started (a dict; see docs/python.md)."""
        import json

        counters = json.loads(self._core.stats_json())
        counters["skipped_indices"] = self._core.skipped_indices()
        return counters

    def diagnose(self, gpu_percent: float | None = None) -> Diagnosis:
        """Where the bottleneck is, with the evidence and the fix (``gpu_percent``: the GPU's
        mean utilization over the run, if known)."""
        return Diagnosis(*self._core.diagnose(gpu_percent))

    def describe(self) -> str:
        """What the loader was made to do, as text (what it logs at ``info``, which
        ``gpufeed.set_log_level("info")`` shows): this process's share of each epoch and where
        it came from, the order's seed, the workers, and, once the first batch's layout is known,
        the ring and the batches per epoch."""
        if self._given is not None:
            order = f"the order of each epoch is the {self._given}'s"
        elif self._shuffled:
            order = f"shuffled, seed {self.seed}" + (
                ", the same on every rank" if self._shard.world_size > 1 else "")
        else:
            order = "in dataset order"
        kind = "processes" if self.worker_type == "process" else "threads"
        workers = (f"{self._plan.workers} worker {kind}" if self._plan.workers != "auto" else
                   f"up to {_gpufeed.auto_worker_threads()} worker {kind} (autotune)")
        lines = [f"{self._shard}: {order}", workers]
        plan = self._core.plan
        lines.append(plan.rstrip("\n") if plan else
                     "the ring and the epoch's plan: once the first sample has been read")
        return "\n".join(lines)

    def write_trace(self, path: str | os.PathLike[str]) -> None:
        """Writes the spans recorded (``trace_events``) for chrome://tracing or Perfetto."""
        self._core.write_trace(os.fspath(path))

    def close(self) -> None:
        """Stops the workers now (the loader is unusable afterwards; batches stay valid)."""
        if self._core is not None:
            self._core.close()
        if self._workers is not None:
            self._workers.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
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

    def _pending_epoch(self):
        """The epoch iter() started whose first batch is not read yet, if the next iter() may
        still take it."""
        epoch = self._epoch_now
        return epoch if epoch is not None and epoch.pending else None

    def _current_or_next_epoch(self):
        """The epoch being read, or started by iter() and not read yet; else the next one."""
        if self._pending_epoch() is not None or self._in_epoch():
            return self._epoch_now.number  # type: ignore[union-attr]  # started
        return self._next_epoch

    def _in_epoch(self):
        """Whether an epoch's iterator is alive and not yet at its end."""
        iterator = self._iterator() if self._iterator is not None else None
        return iterator is not None and iterator.reading()

    def _epoch_still_unread(self):
        """Whether an epoch that iter() started has not given its first batch, and nothing asked
        for another since: a framework that calls iter() to check that a loader iterates (and
        drops the iterator) leaves that epoch to the next iter(), so no epoch is lost to it."""
        pending = self._pending_epoch()
        return (pending is not None and self._resume is None
                and self._next_epoch == pending.number + 1)

    def _follow_changes_between_epochs(self, agree: bool = False) -> None:
        """_follow_changes() unless an epoch is under way, which keeps what it started with."""
        if not self._in_epoch():
            self._follow_changes(agree)

    def _follow_changes(self, agree):
        """Makes the loader again, between epochs, when what it was made for changed:
        - a map-style dataset that grew or shrank (as torch's DataLoader follows it): the
          workers, which copy the dataset as it is now, the ring and the plan are made for its
          new length;
        - this process's share of the epoch: torch.distributed's process group initialized (or
          changed) since, or the order's seed to agree on across ranks as the first epoch
          starts (``agree``; _shard.py).
        The epoch count, a pending load_state_dict and the iterator carry over."""
        if self._core is None or self._core.closed:
            return  # a closed loader stays closed
        length = self._made_length
        if self._made_length is not None:
            try:
                length = len(self.dataset)
            except TypeError:
                pass
        shard = shard_now(*self._shard_arguments, given=self._given is not None)
        if self._given is not None:
            expect_sharding_sampler(self.sampler, self.batch_sampler, shard)
        seed, settled = self.seed, self._seed_settled
        if self._draws_seed and self._resume is not None:
            # A state to resume from names its order's seed: the loader adopts it, as a resumed
            # run's sampler adopts its saved generator state.
            seed, settled = _gpufeed.state_fields(self._resume["core"])["seed"], True
        elif self._draws_seed and (shard != self._shard or (agree and not settled)):
            seed, settled = agreed_seed(self.generator, shard, agree,
                                        current=None if shard != self._shard else self.seed)
        same_seed = seed % (1 << 64) == self.seed % (1 << 64)  # a saved seed is unsigned
        if length == self._made_length and shard == self._shard and same_seed:
            self._seed_settled = settled
            return
        if length != self._made_length:
            _gpufeed.log("info", f"the dataset has {length} samples now, {self._made_length} "
                         f"when the loader was made: its workers and plan are made again for "
                         f"{length}")
        if shard != self._shard:
            _gpufeed.log("info", f"this process reads {shard} now, {self._shard} when the "
                         "loader was made: its workers and plan are made again for it")
        self._remake(shard, seed, settled)

    def _remake(self, shard, seed, settled):
        """Closes the loader and makes it again from the same arguments, for `shard` and
        `seed`; the epoch count, a pending load_state_dict and the iterator carry over (an
        epoch started but not read is started again)."""
        pending = self._pending_epoch()
        next_epoch = self._next_epoch if pending is None else pending.number
        if self._epoch_now is not None:
            self._epoch_now.ended = True  # read from the loader made again, after iter()
        kept = (next_epoch, self._resume, self._iterator)
        arguments = self._arguments
        self.close()
        self.__dict__["_initialized"] = False
        self.__dict__["_decided"] = (shard, seed, settled)
        DataLoader.__init__(self, **arguments)
        self._next_epoch, self._resume, self._iterator = kept

    def _start_epoch(self):
        if self._workers is not None:
            try:
                self._workers.start()
            except BaseException:
                self.close()  # the loader's threads wait for workers that will never come
                raise
        if self._resume is not None:
            state, self._resume = self._resume, None
            fields = _gpufeed.state_fields(state["core"])
            epoch = fields["epoch"]
            # Every rank has the same batches, so a position saved by one rank is every rank's:
            # a framework that saves rank 0's state (Lightning) gives it to every rank.
            saved_here = fields["rank"] == self._shard.rank
            if fields["world_size"] == self._shard.world_size:
                fields["rank"] = self._shard.rank
            if self._given is not None:
                # The epoch's own order when the state is inside it and was saved here; a fresh
                # draw from the sampler otherwise (a sampler that shards gives this rank's).
                same = state.get("order_epoch") == epoch and saved_here
                self._order = state["order"] if same else self._draw_order()
                self._core.set_epoch_order(epoch, *self._order)
            self._core.restore(_gpufeed.state_text(fields))
            self._next_epoch = max(int(state["next_epoch"]), epoch + 1)
            self._epoch_now = Epoch(epoch)
            return
        epoch = self._next_epoch
        if self._given is not None:
            self._order = self._draw_order()
            self._core.set_epoch_order(epoch, *self._order)
        else:
            self._core.set_epoch(epoch)
        self._epoch_now = Epoch(epoch)
        self._next_epoch = epoch + 1

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing to report to at collection time
            pass
