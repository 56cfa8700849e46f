"""Which share of each epoch a process reads (docs/python.md, "With your framework"), in one
process: the ranks given as arguments or by a launcher's environment, the refusals, the seed
every rank shares, equal batch counts, what frameworks look for on a loader (sampler,
batch_sampler, set_epoch), an iter() dropped before its first batch, and a quiet log. Several
real processes: test_torchrun.py and test_frameworks.py."""

import subprocess
import sys
import textwrap

import pytest

import gpufeed

torch = pytest.importorskip("torch")

# Every variable the rank rule reads.
LAUNCHER_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                      "NODE_RANK")


@pytest.fixture
def launcher(monkeypatch):
    """A clean launcher environment; the test sets what it needs."""
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


class Indices(torch.utils.data.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


def _epoch(loader):
    return [int(i) for batch in loader for i in batch]


@pytest.mark.parametrize("n", [64, 65, 67, 3])
@pytest.mark.parametrize("drop_last", [False, True])
def test_ranks_are_disjoint_cover_the_dataset_and_have_as_many_batches(launcher, n, drop_last):
    world = 4
    shares, counts = [], []
    for rank in range(world):
        loader = gpufeed.DataLoader(Indices(n), batch_size=4, shuffle=True, seed=7,
                                    rank=rank, world_size=world, drop_last=drop_last,
                                    worker_type="thread")
        batches = list(loader)
        counts.append((len(batches), len(loader)))
        shares.append([int(i) for b in batches for i in b])
    assert len(set(counts)) == 1 and counts[0][0] == counts[0][1], counts
    owned = [set(s) for s in shares]
    for a in range(world):
        for b in range(a + 1, world):
            assert not owned[a] & owned[b] or n < world, (a, b)
    union = set().union(*owned)
    if drop_last:
        assert len(union) == sum(len(s) for s in shares)  # nothing read twice
    else:
        assert union == set(range(n))
        assert sum(len(s) for s in shares) - n < world  # the repeats that even the ranks out


def test_lightnings_environment_places_the_process(launcher):
    """Lightning's launcher sets WORLD_SIZE, LOCAL_RANK and NODE_RANK, not RANK."""
    launcher.setenv("WORLD_SIZE", "2")
    launcher.setenv("LOCAL_RANK", "1")
    launcher.setenv("NODE_RANK", "0")
    loader = gpufeed.DataLoader(Indices(10), batch_size=5, shuffle=True)
    assert (loader.sampler.rank, loader.sampler.num_replicas) == (1, 2)
    assert "rank 1 of 2 (from the environment)" in loader.describe()
    assert len(_epoch(loader)) == 5
    assert "rank 1 reads 5 samples of each epoch: every rank" in loader.describe()


def test_the_plan_says_how_a_rank_is_evened_out(launcher):
    """11 samples on 4 ranks: rank 3 has 2 of its own; it reads its first again (3, as every
    rank), or with drop_last every rank reads 2 and the epoch's last 3 are left out."""
    padded = gpufeed.DataLoader(Indices(11), batch_size=3, rank=3, world_size=4,
                                worker_type="thread")
    assert _epoch(padded) == [3, 7, 3]
    assert "rank 3 reads 3 samples of each epoch: its own 2 and its first again" in (
        padded.describe())
    trimmed = gpufeed.DataLoader(Indices(11), batch_size=2, rank=0, world_size=4,
                                 drop_last=True, worker_type="thread")
    assert _epoch(trimmed) == [0, 4]
    assert "rank 0 reads 2 samples of each epoch of its own 3 (the epoch's last 3 are left " \
        "out" in trimmed.describe()


def test_a_larger_world_without_a_rank_is_refused(launcher):
    launcher.setenv("WORLD_SIZE", "2")
    with pytest.raises(ValueError, match=r"world_size=2 processes.*Pass rank \(and world_size\)"):
        gpufeed.DataLoader(Indices(10), batch_size=5, shuffle=True)
    # Told so, it reads everything, as one process.
    assert sorted(_epoch(gpufeed.DataLoader(Indices(10), batch_size=5, shuffle=True, rank=0,
                                            world_size=1))) == list(range(10))


def test_a_sampler_that_does_not_shard_is_refused_in_a_larger_world(launcher):
    launcher.setenv("WORLD_SIZE", "2")
    launcher.setenv("RANK", "1")
    data = Indices(10)
    with pytest.raises(ValueError, match=r"sampler=RandomSampler gives the same order"):
        gpufeed.DataLoader(data, batch_size=5, sampler=torch.utils.data.RandomSampler(data))
    # A DistributedSampler decides (rank and world from the arguments here, no process group).
    sharded = torch.utils.data.DistributedSampler(data, num_replicas=2, rank=1, shuffle=False)
    assert _epoch(gpufeed.DataLoader(data, batch_size=5, sampler=sharded)) == [1, 3, 5, 7, 9]
    # Asked to read the sampler's whole order in this process, it does.
    whole = gpufeed.DataLoader(data, batch_size=5, sampler=torch.utils.data.RandomSampler(data),
                               rank=0, world_size=1)
    assert sorted(_epoch(whole)) == list(range(10))


def test_ranks_share_the_seed_whatever_their_torch_generators_hold(launcher):
    """Without a process group, ranks seeded differently (manual_seed(seed + rank), as DDP
    scripts do for their augmentations) still read disjoint shares: the order's seed is the
    documented default, not a draw from each rank's generator."""
    shares = []
    for rank in range(2):
        torch.manual_seed(100 + rank)
        loader = gpufeed.DataLoader(Indices(64), batch_size=8, shuffle=True, rank=rank,
                                    world_size=2, worker_type="thread")
        assert loader.seed == gpufeed._shard.DISTRIBUTED_SEED
        shares.append(set(_epoch(loader)))
    assert not shares[0] & shares[1] and len(shares[0] | shares[1]) == 64
    # A generator given applies to every rank alike: its initial seed.
    made = [gpufeed.DataLoader(Indices(64), batch_size=8, shuffle=True, rank=r, world_size=2,
                               generator=torch.Generator().manual_seed(5)) for r in range(2)]
    assert made[0].seed == made[1].seed == 5


def test_the_loaders_sampler_is_what_frameworks_look_for(launcher):
    loader = gpufeed.DataLoader(Indices(20), batch_size=4, shuffle=True, seed=3,
                                worker_type="thread")
    assert isinstance(loader.sampler, torch.utils.data.Sampler)
    assert len(loader.sampler) == 20 and len(loader.batch_sampler) == len(loader) == 5
    loader.sampler.set_epoch(2)  # as Lightning and the Trainer call it each epoch
    planned = list(loader.sampler)
    assert sorted(planned) == list(range(20))
    assert _epoch(loader) == planned  # the epoch it said, in that order
    loader.set_epoch(2)
    assert _epoch(loader) == planned
    with pytest.warns(UserWarning, match="batch_sampler is being iterated outside the loader"):
        batches = list(loader.batch_sampler)
    assert [i for b in batches for i in b] == list(loader.sampler)


def test_an_iterator_dropped_before_its_first_batch_loses_no_epoch(launcher):
    """Lightning calls iter() on a loader to check that it iterates, and drops the iterator."""
    loader = gpufeed.DataLoader(Indices(12), batch_size=4, shuffle=True, seed=1,
                                worker_type="thread")
    reference = gpufeed.DataLoader(Indices(12), batch_size=4, shuffle=True, seed=1,
                                   worker_type="thread")
    iter(loader)
    iter(loader)
    assert _epoch(loader) == _epoch(reference)  # epoch 0, not epoch 2
    assert _epoch(loader) == _epoch(reference)  # then epoch 1


def test_a_state_gives_its_seed_to_the_loader_that_resumes(launcher):
    """A resumed run's loader draws another seed than the stopped one's (nothing seeded torch
    alike): it takes the saved one, so that the rest of the epoch is the rest of that order."""
    first = gpufeed.DataLoader(Indices(40), batch_size=4, shuffle=True, worker_type="thread")
    it = iter(first)
    head = [int(i) for _, b in zip(range(3), it) for i in b]
    state = first.state_dict()
    second = gpufeed.DataLoader(Indices(40), batch_size=4, shuffle=True, worker_type="thread")
    assert second.seed != first.seed
    second.load_state_dict(state)
    tail = _epoch(second)
    assert sorted(head + tail) == list(range(40))


def test_a_loader_says_nothing_at_the_default_level(tmp_path):
    """As torch's loader: nothing on stderr for a loader made, iterated and closed, with worker
    processes and threads, at the default log level (in a child, whose level nobody set)."""
    script = tmp_path / "quiet.py"
    script.write_text(textwrap.dedent('''
        import torch, gpufeed

        class Indices(torch.utils.data.Dataset):
            def __len__(self):
                return 64

            def __getitem__(self, i):
                return i

        for kind in ("process", "thread"):
            loader = gpufeed.DataLoader(Indices(), batch_size=8, shuffle=True, num_workers=1,
                                        worker_type=kind, persistent_workers=False)
            for epoch in range(2):
                for batch in loader:
                    pass
            loader.close()
        print("done")
    '''))
    env = {k: v for k, v in __import__("os").environ.items() if k != "GPUFEED_LOG_LEVEL"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"
    assert done.stderr == ""
