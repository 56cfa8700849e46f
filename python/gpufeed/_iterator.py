"""The iterator of a gpufeed.DataLoader and the epoch it reads: one iterator per loader, given
the epoch each ``iter()`` starts."""

from __future__ import annotations

import threading
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import Self

    from ._assemble import StepInfo
    from ._batches import BatchReader
    from .loader import DataLoader

__all__ = ["Epoch", "LoaderIterator", "PromisedLength"]


class Epoch:
    """One epoch, as ``iter()`` starts it. The loader holds the current one: an epoch whose
    iterator is dropped before its first batch (a framework checking that the loader iterates)
    is the next ``iter()``'s, so no epoch is lost to the check.

    Args:
        number: The epoch's number (its shuffle and augmentations depend on it).
    """

    __slots__ = ("ended", "number", "pending", "step_info", "yielded")

    def __init__(self, number: int) -> None:
        self.number = number
        # Started by iter(), next() not called yet, and the next iter() may take it.
        self.pending = True
        self.ended = False  # its end was met: StopIteration until the next iter()
        self.yielded = 0  # batches given
        self.step_info: StepInfo | None = None  # of the batch given last


class PromisedLength:
    """An IterableDataset's ``__len__``, once ``len(loader)`` has asked it: more batches than
    that in an epoch are warned of, as torch does (every worker probably yields the whole
    dataset).

    Args:
        unit: "samples" or "batches", as the loader's batches count (a batch of one is a
            sample).
    """

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.asked: int | None = None

    def check(self, yielded: int) -> None:
        if self.asked is not None and yielded > self.asked:
            # The phrases are torch's, so that filters written for its warning match this one.
            warnings.warn(f"the IterableDataset's __len__ is {self.asked}, but {yielded} "
                          f"{self.unit} have been fetched. For multiprocessing data-loading, "
                          "this usually means that every worker yields the whole dataset: "
                          "shard it in __iter__ with get_worker_info(); else __len__ is too "
                          "small", UserWarning, stacklevel=3)


class LoaderIterator:
    """The one iterator of a loader (torch's persistent_workers behaviour): each ``iter()``
    gives it the epoch to read.

    Args:
        loader: The loader, kept alive while its iterator is (its length is the iterator's).
        promise: An IterableDataset's promised length, or None.
    """

    def __init__(self, loader: DataLoader[Any], promise: PromisedLength | None) -> None:
        self._loader = loader
        self._promise = promise
        # (the epoch, its batches' reader), replaced whole by begin(): a thread inside
        # __next__ reads on from the pair it took.
        self._current: tuple[Epoch, BatchReader] | None = None
        self._lock = threading.Lock()

    def begin(self, epoch: Epoch, reader: BatchReader) -> None:
        """Reads `epoch` from now on, its batches from `reader` (the loader's, which it makes
        again when what it was made for changes between epochs)."""
        self._current = (epoch, reader)

    def reading(self) -> bool:
        """Whether it is inside an epoch, not yet at its end."""
        current = self._current
        return current is not None and not current[0].ended

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> Any:
        # One consumer at a time: once a thread meets the end of the epoch, the others stop
        # too, instead of reading on into the next epoch the loader has started.
        with self._lock:
            if self._current is None:
                raise StopIteration
            epoch, reader = self._current
            if epoch.ended:
                raise StopIteration
            epoch.pending = False  # read from: the next iter() starts another
            read = reader.read()
            if read is None:
                epoch.ended = True
                raise StopIteration
            batch, epoch.step_info = read
            epoch.yielded += 1
            if self._promise is not None:
                self._promise.check(epoch.yielded)
        return batch

    def __len__(self) -> int:
        return len(self._loader)
