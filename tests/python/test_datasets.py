"""gpufeed's bundled datasets through gpufeed.DataLoader against their torch, h5py and torchvision
equivalents, and the fields each says it has."""

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader as TorchLoader

import gpufeed
from samples import assert_same


def test_in_memory_arrays_give_what_a_tensor_dataset_gives():
    x = np.random.default_rng(1).standard_normal((50, 4)).astype(np.float32)
    y = np.arange(50, dtype=np.int64)
    ours = list(gpufeed.DataLoader(gpufeed.datasets.InMemory([x, torch.from_numpy(y)]),
                                   batch_size=8, num_workers=2))
    theirs = list(TorchLoader(torch.utils.data.TensorDataset(torch.from_numpy(x),
                                                             torch.from_numpy(y)), batch_size=8))
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_same(a, b, f"batch {i}")
    as_dict = next(iter(gpufeed.DataLoader(gpufeed.datasets.InMemory({"x": x, "y": y}),
                                           batch_size=8)))
    assert list(as_dict) == ["x", "y"] and torch.equal(as_dict["x"], torch.from_numpy(x[:8]))


def test_hdf5_rows_as_an_h5py_dataset_gives_them(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "data.h5"
    rng = np.random.default_rng(2)
    images = rng.integers(0, 255, (40, 5, 6, 3), dtype=np.uint8)
    labels = rng.integers(0, 10, 40).astype(np.int64)
    with h5py.File(path, "w") as f:
        f.create_dataset("images", data=images, chunks=(8, 5, 6, 3), compression="gzip")
        f.create_dataset("labels", data=labels)

    class H5(torch.utils.data.Dataset):
        def __len__(self):
            return 40

        def __getitem__(self, i):
            with h5py.File(path, "r") as f:
                return {"images": f["images"][i], "labels": f["labels"][i]}

    ours = list(gpufeed.DataLoader(gpufeed.datasets.HDF5(path), batch_size=16, num_workers=2))
    theirs = list(TorchLoader(H5(), batch_size=16))
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert_same(a, b, f"batch {i}")


def test_every_bundled_dataset_says_its_fields(tmp_path):
    assert gpufeed.datasets.Synthetic(5, [("x", "float32", [2]), ("y", "int64", [])]).fields == \
        [("x", "float32", (2,)), ("y", "int64", ())]
    memory = gpufeed.datasets.InMemory({"a": np.zeros((4, 3), np.uint8), "b": np.ones(4, bool)})
    assert memory.fields == [("a", "uint8", (3,)), ("b", "bool", ())] and len(memory) == 4
    h5py = pytest.importorskip("h5py")
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f.create_dataset("images", data=np.zeros((6, 2, 2), np.float16))
        f.create_dataset("labels", data=np.arange(6))
    assert gpufeed.datasets.HDF5(tmp_path / "f.h5").fields == \
        [("images", "float16", (2, 2)), ("labels", "int64", ())]


def test_image_folder_gives_torchvisions_samples_in_its_order(tmp_path):
    if not gpufeed._gpufeed.has_images:
        pytest.skip("built without the image datasets (libjpeg and libpng)")
    torchvision = pytest.importorskip("torchvision")
    from PIL import Image

    rng = np.random.default_rng(3)
    for c, name in enumerate(["cat", "dog", "emu"]):
        (tmp_path / name).mkdir()
        for k in range(3 + c):
            pixels = rng.integers(0, 255, (40 + 4 * k, 56, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(tmp_path / name / f"{k:02d}.png")
    ours = gpufeed.datasets.ImageFolder(tmp_path, height=32, width=32, resize="center_crop",
                                        resize_to=32)
    theirs = torchvision.datasets.ImageFolder(str(tmp_path))
    assert ours.classes == theirs.classes
    assert [(p, l) for p, l in ours.samples] == [(p, l) for p, l in theirs.samples]
    got = list(gpufeed.DataLoader(ours, batch_size=4, num_workers=2))
    want = list(TorchLoader(theirs, batch_size=4, collate_fn=lambda b: [t for _, t in b]))
    assert [b[1].tolist() for b in got] == want
    first = got[0][0][0]  # uint8 HWC, the centre of the first image scaled to 32 px
    assert first.shape == (32, 32, 3) and first.dtype == torch.uint8
