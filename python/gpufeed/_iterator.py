"""The iterator of a gpufeed.DataLoader: one per loader, started again by each ``iter()``."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from .errors import LoaderTimeoutError, WorkerError

if TYPE_CHECKING:
    from typing_extensions import Self

    from .loader import DataLoader

__all__ = ["LoaderIterator"]


class LoaderIterator:
    """The one iterator of a loader (torch's persistent_workers behaviour): ``iter(loader)``
    resets it to the next epoch."""

    def __init__(self, loader: DataLoader[Any]) -> None:
        self._loader = loader
        self._ended = False  # the epoch's end was met: StopIteration until iter(loader)
        self._lock = threading.Lock()

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> Any:
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
            self._loader._unread_epoch = None
            if self._loader._iterable:
                self._loader._count_yielded()
        return batch

    def __len__(self) -> int:
        return len(self._loader)
