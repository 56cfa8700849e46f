"""The options of gpufeed's C++ loader (``_gpufeed.Loader``), from gpufeed.DataLoader's
checked arguments: torch's meaning of num_workers and prefetch_factor as the ring's workers and
depth, seeds drawn as torch draws them, and the other options in the C++ loader's terms."""

import os

from ._notes import say_once

try:  # torch is optional: without it, seeds come from the operating system
    import torch
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None  # type: ignore[assignment]

__all__ = ["core_options", "quarter_of_memory", "ring_shape", "seed_from", "signed_64"]


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


def ring_shape(num_workers, prefetch_factor, prefetch_depth, autotune):
    """(workers, prefetch_depth) of the C++ loader: "auto" for both with autotune."""
    if autotune:
        workers = "auto"
    elif num_workers == 0:
        workers = 1
        say_once("num_workers0", "num_workers=0: gpufeed reads on one worker thread (torch "
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
            say_once(("prefetch", factor, num_workers),
                     f"prefetch_factor={factor} x {max(1, num_workers)} workers + the batch "
                     f"in use: a ring of {prefetch_depth} batches (set prefetch_depth to "
                     "choose it directly)")
    return workers, prefetch_depth


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
