"""``loader.sampler`` and ``loader.batch_sampler`` of a gpufeed.DataLoader that makes its own
order (no sampler given): what frameworks look for on a torch DataLoader. Lightning and
transformers' Trainer call ``set_epoch`` on a loader's sampler each epoch, as on torch's
DistributedSampler; it reaches the loader. Iterating them gives this process's share of the
epoch in the loader's order (gpufeed itself never iterates them: its workers compute the order).
"""

from __future__ import annotations

import warnings
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

    import numpy as np
    import numpy.typing as npt
    from torch.utils.data import Sampler as _Base

    from .loader import DataLoader
else:
    try:  # torch is optional: the samplers are torch's kind when it is there
        from torch.utils.data import Sampler as _Base
    except ImportError:  # pragma: no cover - exercised where torch is absent
        _Base = object

__all__ = ["ShardBatchSampler", "ShardSampler"]


class _OfLoader(_Base):
    """Holds its loader weakly: a loader and its samplers form no reference cycle, so that
    ``del loader`` stops its workers at once."""

    def __init__(self, loader: DataLoader[Any]) -> None:
        self._loader = weakref.ref(loader)

    def _owner(self) -> DataLoader[Any]:
        loader = self._loader()
        if loader is None:
            raise RuntimeError("the gpufeed.DataLoader of this sampler no longer exists")
        return loader

    def _epoch_order(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """(indices, batch sizes) of the epoch the loader reads now, or next. Between epochs,
        the loader first settles what the epoch's start settles (its share, the seed the ranks
        agree on: a collective each rank makes as it iterates this, in step)."""
        loader = self._owner()
        loader._follow_changes_between_epochs(agree=True)
        return loader._core.builtin_order(loader._current_or_next_epoch())

    def set_epoch(self, epoch: int) -> None:
        """The loader's ``set_epoch``: the next ``iter(loader)`` starts ``epoch``."""
        self._owner().set_epoch(epoch)

    @property
    def num_replicas(self) -> int:
        """The processes the epoch is shared by (DistributedSampler's name)."""
        return self._owner()._shard.world_size

    @property
    def rank(self) -> int:
        """This process's rank among them."""
        return self._owner()._shard.rank

    @property
    def seed(self) -> int:
        """The order's seed (the same on every rank)."""
        return self._owner().seed


class ShardSampler(_OfLoader):
    """The dataset indices this process reads in the loader's current epoch (the next one
    between epochs), in order: ``loader.sampler`` when the loader makes its own order.

    Args:
        loader: The loader whose order it gives (held weakly).
    """

    @property
    def shuffle(self) -> bool:
        """Whether the loader shuffles."""
        return self._owner()._shuffled

    def __iter__(self) -> Iterator[int]:
        indices, _ = self._epoch_order()
        return iter(indices.tolist())

    def __len__(self) -> int:
        loader = self._owner()
        loader._follow_changes_between_epochs()
        return int(loader._core.samples_per_epoch)


class ShardBatchSampler(_OfLoader):
    """The batches of dataset indices this process reads in the loader's current epoch (the
    next one between epochs): ``loader.batch_sampler`` when the loader makes its own order.

    Args:
        loader: The loader whose batches it gives (held weakly).
        sampler: The loader's ShardSampler (``batch_sampler.sampler``, as torch's
            BatchSampler has it).
    """

    _warned = False

    def __init__(self, loader: DataLoader[Any], sampler: ShardSampler) -> None:
        super().__init__(loader)
        self.sampler = sampler

    @property
    def batch_size(self) -> int | None:
        """The loader's batch size."""
        return self._owner().batch_size

    @property
    def drop_last(self) -> bool:
        """Whether the loader drops a short last batch."""
        return self._owner().drop_last

    def __iter__(self) -> Iterator[list[int]]:
        if not ShardBatchSampler._warned:
            ShardBatchSampler._warned = True
            # A warning, not an error: the batches are right (this process's share, in
            # gpufeed's order), but whoever reads them reads the samples its own way.
            warnings.warn("gpufeed.DataLoader.batch_sampler is being iterated outside the loader "
                          "(accelerate's skip_first_batches, for one, makes a torch DataLoader "
                          "of it): that loader reads this process's share in gpufeed's order, "
                          "but without gpufeed. To resume mid-epoch with gpufeed itself, save "
                          "loader.state_dict() and give it to loader.load_state_dict()",
                          UserWarning, stacklevel=2)
        indices, sizes = self._epoch_order()
        at = 0
        for size in sizes.tolist():
            yield indices[at:at + size].tolist()
            at += size

    def __len__(self) -> int:
        return len(self._owner())
