"""The DLPack exporter written for gpufeed's batches: the legacy and the versioned capsule, the
stream and device arguments, the array interfaces, and the slot's release by the deleter; and
every consumer on every form iteration yields; for batches in the ring worker processes share
(an anonymous memfd) and in worker threads' host memory alike."""

import ctypes

import numpy as np
import pytest
import torch

import gpufeed
from samples import WORKER_TYPES, Indices

_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]


def raw_fields(data, **kwargs):
    """The Field exporters of the first batch, straight from the extension."""
    loader = gpufeed.DataLoader(data, **kwargs)
    iter(loader)
    batch = loader._core.next(None)
    return loader, batch.fields()


class Mixed(torch.utils.data.Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        return {"f": np.full((2, 3), i, np.float32), "b": i % 2 == 1, "h": np.float16(i)}


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_the_legacy_capsule_is_what_old_consumers_get(worker_type):
    _, fields = raw_fields(Mixed(), batch_size=4, worker_type=worker_type)
    f = fields[0]
    assert f.name == "f" and f.dtype == "float32" and f.shape == (4, 2, 3)
    assert f.__dlpack_device__() == (1, 0)
    assert _capsule_name(f.__dlpack__()) == b"dltensor"
    assert _capsule_name(f.__dlpack__(max_version=(0, 8))) == b"dltensor"
    assert _capsule_name(f.__dlpack__(max_version=(1, 0))) == b"dltensor_versioned"


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_the_versioned_capsule_holds_version_one_and_the_tensor(worker_type):
    _, fields = raw_fields(Mixed(), batch_size=4, worker_type=worker_type)
    capsule = fields[0].__dlpack__(max_version=(1, 3))
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    address = get(capsule, b"dltensor_versioned")
    major, minor = ctypes.cast(address, ctypes.POINTER(ctypes.c_uint32))[0:2]
    assert (major, minor) == (1, 0)
    # dl_tensor at offset 32: data pointer, then device, ndim.
    data = ctypes.cast(address + 32, ctypes.POINTER(ctypes.c_void_p))[0]
    ndim = ctypes.cast(address + 32 + 16, ctypes.POINTER(ctypes.c_int32))[0]
    assert ndim == 3 and data == fields[0].__array_interface__["data"][0]
    del capsule  # never consumed: the capsule's destructor calls the deleter (no leak, no crash)


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_torch_and_numpy_share_the_batch_memory(worker_type):
    _, fields = raw_fields(Mixed(), batch_size=4, worker_type=worker_type)
    f = fields[0]
    t = torch.from_dlpack(f)
    a = np.from_dlpack(f)
    b = np.asarray(f)  # the array interface
    address = f.__array_interface__["data"][0]
    assert t.data_ptr() == address and a.ctypes.data == address and b.ctypes.data == address
    assert t[1, 0, 0].item() == 1.0 and a.dtype == np.float32 and a.shape == (4, 2, 3)
    t[0, 0, 0] = 42
    assert a[0, 0, 0] == 42 and b[0, 0, 0] == 42
    half = torch.from_dlpack(fields[2])
    assert half.dtype == torch.float16 and half.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_copy_and_another_device_are_refused_with_buffer_error(worker_type):
    _, fields = raw_fields(Mixed(), batch_size=4, worker_type=worker_type)
    with pytest.raises(BufferError, match="without copying"):
        fields[0].__dlpack__(copy=True)
    with pytest.raises(BufferError, match="does not copy"):
        fields[0].__dlpack__(dl_device=(2, 0))
    assert _capsule_name(fields[0].__dlpack__(dl_device=(1, 0), copy=False)) == b"dltensor"


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_bool_fields_reach_torch_and_numpy_as_bool(worker_type):
    batch = next(iter(gpufeed.DataLoader(Mixed(), batch_size=4, worker_type=worker_type)))
    assert batch["b"].dtype == torch.bool and batch["b"].tolist() == [False, True, False, True]
    batch = next(iter(gpufeed.DataLoader(Mixed(), batch_size=4, output="numpy",
                                           worker_type=worker_type)))
    assert batch["b"].dtype == np.bool_ and batch["b"].tolist() == [False, True, False, True]


@pytest.mark.parametrize("output", ["torch", "numpy"])
@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_every_consumer_takes_every_form_iteration_yields(output, worker_type):
    batch = next(iter(gpufeed.DataLoader(Mixed(), batch_size=4, output=output,
                                           worker_type=worker_type)))
    for name in ("f", "h"):
        value = batch[name]
        expected = np.asarray(value).copy() if output == "numpy" else value.numpy().copy()
        assert np.array_equal(torch.from_dlpack(value).numpy(), expected)
        assert np.array_equal(torch.as_tensor(value).numpy(), expected)
        assert np.array_equal(np.from_dlpack(value), expected)


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_the_slot_is_released_when_the_last_tensor_dies(worker_type):
    loader = gpufeed.DataLoader(Indices(400), batch_size=4, prefetch_depth=2,
                                worker_type=worker_type)
    kept = []
    for i, batch in enumerate(loader):
        view = batch[1:3]  # a view keeps the capsule's tensor, so the slot, alive
        del batch
        if i < 10:
            kept.append(view)
    grown = loader.stats()["ring_grown"]
    assert grown >= 8  # ten views alive at once needed more than two slots
    assert [int(v[0]) for v in kept] == [4 * i + 1 for i in range(10)]  # still intact
    del kept
    for _ in loader:  # dropped views gave their slots back: no more growth
        pass
    assert loader.stats()["ring_grown"] == grown


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_tensors_outlive_their_loader(worker_type):
    loader = gpufeed.DataLoader(Mixed(), batch_size=4, num_workers=2, worker_type=worker_type)
    batches = list(loader)
    del loader
    import gc

    gc.collect()
    assert [float(b["f"][0, 0, 0]) for b in batches] == [0.0, 4.0, 8.0, 12.0]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the GPU path is "
                    "checked on a GPU machine (scripts/device-check)")
def test_cuda_fields_export_kdlcuda_and_wait_on_the_consumer_stream():
    loader = gpufeed.DataLoader(Mixed(), batch_size=4, device="cuda")
    iter(loader)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        batch = loader._core.next(side.cuda_stream)
        f = batch.fields()[0]
        assert f.__dlpack_device__()[0] == 2
        t = torch.from_dlpack(f)  # torch passes the side stream; no host synchronization
        assert t.is_cuda and t.sum().item() == sum(6 * i for i in range(4))
        other = torch.cuda.Stream()
        u = torch.from_dlpack(f.__dlpack__(stream=other.cuda_stream))  # another stream waits too
        torch.cuda.synchronize()
        assert torch.equal(t, u)
    assert f.__cuda_array_interface__["stream"] == side.cuda_stream


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the GPU path is "
                    "checked on a GPU machine (scripts/device-check)")
def test_cuda_transforms_make_normalized_chw_floats():
    data = gpufeed.datasets.InMemory({"image": np.full((8, 4, 5, 3), 255, np.uint8),
                                      "label": np.arange(8)})
    loader = gpufeed.DataLoader(data, batch_size=4, device="cuda", transforms={
        "image": {"dtype": "float32", "layout": "chw", "scale": 1 / 255,
                  "mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5]}})
    batch = next(iter(loader))
    assert batch["image"].shape == (4, 3, 4, 5) and batch["image"].dtype == torch.float32
    assert torch.allclose(batch["image"], torch.ones_like(batch["image"]))
