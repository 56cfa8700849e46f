"""str and bytes in samples: returned as torch's default collate returns them, aligned with the
batch's other fields through skips, shuffles and worker threads, refused with the sample and
field named where a field changes type, and bounded in what gpufeed keeps."""

import threading

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader as TorchLoader

import gpufeed
from samples import WORKER_TYPES, TextSamples, assert_same


class Captioned(torch.utils.data.Dataset):
    """Sample i: its number, its file name and a label; some indices fail to read."""

    def __init__(self, n, bad=()):
        self.n, self.bad = n, set(bad)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if i in self.bad:
            raise OSError(f"cannot read record {i}")
        return {"x": np.array([i], dtype=np.int64), "path": f"/data/{i:05d}.jpg",
                "label": ("cat", "dog")[i % 2].encode()}


def check_aligned(batch):
    for x, path, label in zip(batch["x"][:, 0].tolist(), batch["path"], batch["label"]):
        assert path == f"/data/{x:05d}.jpg"
        assert label == (b"cat", b"dog")[x % 2]


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_text_follows_its_sample_through_shuffles_skips_and_workers(worker_type):
    data = Captioned(600, bad=[5, 77, 78, 599])
    loader = gpufeed.DataLoader(data, batch_size=16, shuffle=True, num_workers=4,
                                on_error="skip", seed=3, worker_type=worker_type)
    for epoch in range(2):
        seen = []
        for batch in loader:
            assert isinstance(batch["path"], list) and isinstance(batch["label"], list)
            assert len(batch["path"]) == len(batch["x"])
            check_aligned(batch)
            seen += batch["x"][:, 0].tolist()
        assert sorted(seen) == [i for i in range(600) if i not in data.bad], f"epoch {epoch}"
    # One entry per distinct value, kept across epochs: 596 paths and 2 labels.
    assert loader._native_dataset.texts_kept == 596 + 2


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_the_same_batches_as_torch_with_a_shuffled_sampler(worker_type):
    data = TextSamples(40)
    sampler = torch.utils.data.RandomSampler(data, generator=torch.Generator().manual_seed(5))
    ours = list(gpufeed.DataLoader(data, batch_size=6, sampler=sampler, num_workers=3,
                                   worker_type=worker_type))
    sampler = torch.utils.data.RandomSampler(data, generator=torch.Generator().manual_seed(5))
    theirs = list(TorchLoader(data, batch_size=6, sampler=sampler))
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_same(a, b, f"batch {i}")


def test_a_bare_text_sample_gives_a_list():
    class Names(torch.utils.data.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return np.str_(f"n{i}") if i % 2 else f"n{i}"

    got = list(gpufeed.DataLoader(Names(), batch_size=2))
    assert got == [["n0", "n1"], ["n2", "n3"], ["n4"]]
    assert all(type(v) is str for b in got for v in b)


def test_the_log_names_the_text_fields(capfd):
    gpufeed.set_log_level("info")
    next(iter(gpufeed.DataLoader(Captioned(8), batch_size=4)))  # the layout is learned
    err = capfd.readouterr().err
    assert "text fields 'path', 'label'" in err
    assert "path:int64[]" in err  # what the batch holds in their place


def test_text_values_outlive_the_loader():
    loader = gpufeed.DataLoader(Captioned(8), batch_size=4)
    batch = next(iter(loader))
    loader.close()
    del loader
    assert batch["path"] == [f"/data/{i:05d}.jpg" for i in range(4)]


@pytest.mark.parametrize("first, later, said", [
    ("a", b"b", r"sample 3, field 'v' is bytes but the first sample's was str"),
    (b"a", "b", r"sample 3, field 'v' is str but the first sample's was bytes"),
    ("a", 7, r"sample 3, field 'v' is int but the first sample's was str"),
    (7, "b", r"sample 3, field 'v' is a str where the first sample had a number or an array"),
])
@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_a_field_that_changes_type_names_the_sample_and_field(first, later, said, worker_type):
    class Changes(torch.utils.data.Dataset):
        def __len__(self):
            return 6

        def __getitem__(self, i):
            return {"v": later if i == 3 else first}

    it = iter(gpufeed.DataLoader(Changes(), batch_size=3, num_workers=1,
                                 worker_type=worker_type))
    next(it)
    with pytest.raises(gpufeed.SampleError, match=said) as caught:
        next(it)
    assert caught.value.index == 3


def test_text_that_never_repeats_is_refused_past_its_bound():
    # A text field keeps at most len(dataset) + 65536 distinct values: a dataset making new text
    # on every read (70000 samples, new strings each epoch) fills that in its second epoch.
    class Fresh(torch.utils.data.Dataset):
        def __init__(self):
            self.reads = 0
            self.lock = threading.Lock()

        def __len__(self):
            return 70000

        def __getitem__(self, i):
            with self.lock:
                self.reads += 1
                return f"caption {self.reads}"

    # Threads: the reads' counter is the dataset's, shared by the workers.
    loader = gpufeed.DataLoader(Fresh(), batch_size=2000, num_workers=2, worker_type="thread")
    assert sum(len(b) for b in loader) == 70000
    with pytest.raises(gpufeed.SampleError, match=r"field 'sample': more than 135536 distinct str values"):
        for _ in loader:
            pass
    assert loader._native_dataset.texts_kept == 135536


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the GPU path is "
                    "checked on a GPU machine (scripts/device-check)")
def test_text_comes_with_batches_on_the_gpu():
    loader = gpufeed.DataLoader(Captioned(64, bad=[9]), batch_size=8, device="cuda",
                                on_error="skip", num_workers=2)
    count = 0
    for batch in loader:
        assert batch["x"].is_cuda
        check_aligned({"x": batch["x"].cpu(), "path": batch["path"], "label": batch["label"]})
        count += len(batch["path"])
    assert count == 63
