"""Which share of each epoch this process reads, and the seed of the order every rank shares.

The rule (the core's ``resolve_distributed`` holds its environment part, for C++ and libtorch
programs too): ``rank``/``world_size`` given to the DataLoader first; then a sampler that shards
(it decides: gpufeed reads the indices it gives); then torch.distributed's default process group
when it is initialized, read again when each epoch starts (a loader made before
``init_process_group`` still reads its own share); then the launcher's environment (torchrun's
RANK and WORLD_SIZE, or LOCAL_RANK with GROUP_RANK or NODE_RANK and LOCAL_WORLD_SIZE). A world
of more than one process is never rank 0 by default: an error says what to pass.

The order's seed is the same on every rank: ``seed`` when given; in one process, drawn from
``generator`` or torch's global generator (as torch's RandomSampler draws it); with more ranks
and a process group, rank 0's ``initial_seed()`` of ``generator`` or of torch's global generator
(what ``torch.manual_seed`` set, however many numbers were drawn since: a restarted run that
seeds torch alike gets the same order, which resuming by skipping batches needs), sent to every
rank once, as the first epoch starts; without a process group, that of ``generator`` when given
(seed it alike on every rank), else ``DISTRIBUTED_SEED`` (DistributedSampler's default).
"""

from . import _gpufeed
from ._options import seed_from

try:  # torch is optional: without it, there is no process group
    import torch
    import torch.distributed as _dist
except ImportError:  # pragma: no cover - exercised where torch is absent
    torch = None  # type: ignore[assignment]
    _dist = None  # type: ignore[assignment]

__all__ = ["DISTRIBUTED_SEED", "Shard", "agreed_seed", "expect_sharding_sampler", "shard_now"]

# The seed of the order of several ranks that nothing else agrees on (DistributedSampler's).
DISTRIBUTED_SEED = 0


class Shard:
    """This process's rank among ``world_size``, and where that came from: ``"arguments"``,
    ``"process group"`` or ``"environment"``."""

    __slots__ = ("rank", "world_size", "source")

    def __init__(self, rank, world_size, source):
        self.rank = rank
        self.world_size = world_size
        self.source = source

    def __eq__(self, other):
        return (self.rank, self.world_size) == (other.rank, other.world_size)

    def __repr__(self):
        if self.world_size == 1 and self.source == "environment":
            return "rank 0 of 1 (a single process)"
        return f"rank {self.rank} of {self.world_size} (from the {self.source})"


def process_group():
    """(rank, world_size) of torch.distributed's default process group, or None when there is
    none (not initialized, or torch.distributed unavailable)."""
    if _dist is None or not _dist.is_available() or not _dist.is_initialized():
        return None
    return _dist.get_rank(), _dist.get_world_size()


def shard_now(rank, world_size, given):
    """The Shard this process reads now, from the DataLoader's ``rank`` and ``world_size``
    arguments (None where not given); ``given``: a sampler gives the order (its rank then only
    names the process in messages). Raises ValueError when the world has more than one process
    and nothing says which one this is."""
    source = "arguments"
    if rank is None or world_size is None:
        group = process_group()
        if group is not None and (world_size is None or world_size == group[1]):
            source = "process group"
            if world_size is None:
                world_size = group[1]
            if rank is None:
                rank = group[0]
        elif rank is None and world_size != 1:
            source = "environment"
    rank, world_size = _gpufeed.resolve_shard(rank, world_size, given)
    return Shard(rank, world_size, source)


def _initial_seed(generator):
    return (generator if generator is not None else torch.default_generator).initial_seed()


def agreed_seed(generator, shard, agree, current=None):
    """(seed, settled): the order's seed for ``shard`` when the DataLoader was given no
    ``seed`` (see the module's docstring), and whether it is final. ``agree``: the first epoch
    is starting, so ranks in a process group take rank 0's (a collective every rank makes at
    that moment); before, a rank-independent stand-in is used. ``current``: the seed in use for
    the same shard, kept where nothing is to agree on."""
    if shard.world_size == 1:
        return (seed_from(generator) if current is None else current), True
    if agree and shard.source == "process group" and process_group() is not None:
        box = [_initial_seed(generator)]
        _dist.broadcast_object_list(box, src=0)
        return int(box[0]), True
    if current is not None:
        return current, agree
    return (_initial_seed(generator) if generator is not None else DISTRIBUTED_SEED), agree


def _shards(sampler, world_size):
    """Whether `sampler` (or a batch sampler's) says it gives each of `world_size` ranks its
    own share: torch's DistributedSampler and its kind have num_replicas."""
    seen = set()
    while sampler is not None and id(sampler) not in seen:
        seen.add(id(sampler))
        replicas = getattr(sampler, "num_replicas", None)
        if replicas is not None:
            return replicas == world_size
        sampler = getattr(sampler, "sampler", None)
    return False


def expect_sharding_sampler(sampler, batch_sampler, shard):
    """Raises ValueError when the order comes from a sampler that does not shard while this
    process is one of several: every rank would read the sampler's whole order."""
    if shard.world_size == 1 or shard.source == "arguments":
        return
    given = batch_sampler if batch_sampler is not None else sampler
    if _shards(given, shard.world_size):
        return
    name = "batch_sampler" if batch_sampler is not None else "sampler"
    raise ValueError(
        f"{name}={type(given).__name__} gives the same order to each of the "
        f"{shard.world_size} processes ({shard.world_size} ranks, from the {shard.source}), so "
        "each would read every sample of it. Use a sampler that gives each rank its own share "
        "(torch's DistributedSampler; or yours, with a num_replicas attribute saying that it "
        "does), let gpufeed shard its own order (no sampler; shuffle=True), or pass "
        "rank=0, world_size=1 to read the sampler's whole order in every process")
