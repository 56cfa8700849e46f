"""The options of gpufeed's C++ loader (``_gpufeed.Loader``), from gpufeed.DataLoader's
checked arguments: how many workers read and the ring's depth (worker_plan, the one place that
decides them), seeds drawn as torch draws them, and the other options in the C++ loader's terms."""

from __future__ import annotations

import os
from typing import Literal, NamedTuple

from . import _gpufeed
from ._arguments import worker_kind
from ._notes import say_once

try:  # torch is optional: without it, seeds come from the operating system
    import torch
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None  # type: ignore[assignment]

__all__ = ["WorkerPlan", "core_options", "quarter_of_memory", "seed_from", "signed_64",
           "worker_plan"]


def seed_from(generator):
    """A 64-bit seed drawn as torch's RandomSampler draws one: from `generator`, or from torch's
    global generator (so torch.manual_seed makes the order reproducible)."""
    if torch is None:
        return int.from_bytes(os.urandom(8), "little") >> 1
    return int(torch.empty((), dtype=torch.int64).random_(generator=generator).item())


def signed_64(seed):
    """`seed` as the signed 64-bit number with the same bits (the C++ loader's seed is 64 bits;
    torch.initial_seed() and saved states give unsigned ones)."""
    seed %= 1 << 64
    return seed - (1 << 64) if seed >= 1 << 63 else seed


def quarter_of_memory():
    """A quarter of the machine's memory (the default budget of held or collated batches)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 4
    except (ValueError, OSError):
        return 1 << 30


def transforms_of(transforms):
    if transforms is None:
        return []
    if isinstance(transforms, dict):
        return [dict(field=name, **spec) for name, spec in transforms.items()]
    return list(transforms)


def largest_batch(batch_sampler):
    return max((len(b) for b in batch_sampler), default=1)


class WorkerPlan(NamedTuple):
    """Who reads for a loader, and the ring they fill.

    Args:
        kind: ``"process"`` or ``"thread"``.
        why: Why that kind, for the log.
        processes: The worker processes to start; None where threads read.
        workers: The C++ loader's worker threads: a number (one drives each worker process), or
            ``"auto"``: its autotuner chooses, up to ``_gpufeed.auto_worker_threads()``.
        prefetch_depth: The ring's slots, or ``"auto"`` (the autotuner sizes the ring).
    """

    kind: Literal["process", "thread"]
    why: str
    processes: int | None
    workers: int | str
    prefetch_depth: int | str


def worker_plan(*, num_workers: int, worker_type: str, python_dataset: bool, autotune: bool,
                prefetch_factor: int | None, prefetch_depth: int | str | None) -> WorkerPlan:
    """The one rule for how many workers read and how deep the ring is (a WorkerPlan).

    - Kind: gpufeed.datasets read on threads; a Python dataset as ``worker_type`` says, its
      ``"auto"`` being processes, or threads where there is no GIL or ``num_workers=0``.
    - Threads: ``num_workers`` of them (one for 0, where torch reads in the main process), or
      ``"auto"`` with ``autotune``.
    - Processes: ``num_workers`` (one for 0); with ``autotune`` and ``num_workers=0``, as many
      as gpufeed would start threads (the usable cores, at most 64): a process's count is fixed
      when it starts, so the tuner cannot add any later.
    - Depth: ``prefetch_depth`` where given; ``"auto"`` with ``autotune``; else torch's
      ``prefetch_factor`` (2) batches per worker in flight, plus the batch the training loop
      still holds while it asks for the next one.
    """
    kind, why = worker_kind(worker_type, python_dataset, num_workers)
    processes: int | None = None
    workers: int | str
    if kind == "process":
        processes = num_workers or (_gpufeed.auto_worker_threads() if autotune else 1)
        workers = processes  # one worker thread drives each process
    else:
        if autotune:
            workers = "auto"
        else:
            workers = max(1, num_workers)
            if num_workers == 0:
                say_once("num_workers0", "num_workers=0: gpufeed reads on one worker thread "
                         "(torch would read in the main process); set num_workers for more")
    if prefetch_depth is None:
        if autotune:
            prefetch_depth = "auto"
        else:
            factor = 2 if prefetch_factor is None else prefetch_factor
            prefetch_depth = factor * max(1, num_workers) + 1
            say_once(("prefetch", factor, num_workers),
                     f"prefetch_factor={factor} x {max(1, num_workers)} workers + the batch "
                     f"in use: a ring of {prefetch_depth} batches (set prefetch_depth to "
                     "choose it directly)")
    return WorkerPlan(kind, why, processes, workers, prefetch_depth)


def core_options(*, batch_size, batch_sampler, workers, prefetch_depth, accumulation_steps,
                 shuffle, seed, order, chunk_window, drop_last, drop_last_step, on_error,
                 timeout, stall_warning, rank, world_size, held_batches_budget, trace_events,
                 transforms, device_index, collate):
    """The keyword arguments of ``_gpufeed.Loader``. ``order``: "builtin" (gpufeed's own,
    sequential or shuffled from ``seed``) or "given" (each epoch's order from the sampler); a
    collate_fn's batches stay where the workers put them (no ``device``)."""
    return dict(
        batch_size=batch_size if batch_sampler is None else max(
            1, getattr(batch_sampler, "batch_size", 0) or largest_batch(batch_sampler)),
        workers=workers, prefetch_depth=prefetch_depth,
        accumulation_steps=accumulation_steps, shuffle=bool(shuffle) and order == "builtin",
        seed=signed_64(seed), order=order, chunk_window=chunk_window, drop_last=bool(drop_last),
        drop_last_step=bool(drop_last_step), on_error=on_error, timeout=float(timeout),
        stall_warning=float(stall_warning), rank=rank, world_size=world_size,
        held_batches_budget=held_batches_budget, trace_events=trace_events,
        transforms=transforms_of(transforms),
        device=None if device_index is None or collate else (
            device_index if device_index >= 0 else "cuda"),
    )
