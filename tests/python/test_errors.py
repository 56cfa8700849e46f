"""Bad arguments, failing samples, skips, layouts gpufeed cannot batch, and timeouts."""

import os
import pickle
import time
import traceback

import numpy as np
import pytest
import torch

import gpufeed
from samples import WORKER_TYPES, Indices


@pytest.mark.parametrize("kwargs, words", [
    (dict(batch_size=0), "batch_size"),
    (dict(batch_size=None, drop_last=True), "batch_size=None"),
    (dict(num_workers=-1), "num_workers"),
    (dict(timeout=-1), "timeout"),
    (dict(shuffle=True, sampler=torch.utils.data.SequentialSampler(range(10))), "shuffle"),
    (dict(batch_size=4, batch_sampler=[[0, 1]]), "batch_sampler"),
    (dict(collate_fn=lambda b: b, worker_type="thread"), "collate_fn runs in worker processes"),
    (dict(prefetch_depth=0), "prefetch_depth"),
    (dict(prefetch_factor=0), "prefetch_factor"),
    (dict(on_error="ignore"), "on_error"),
    (dict(output="jax"), "output"),
    (dict(device="tpu"), "device"),
    (dict(accumulation_steps=0), "accumulation_steps"),
])
def test_bad_arguments_raise_value_error_naming_them(kwargs, words):
    with pytest.raises(ValueError, match=words):
        gpufeed.DataLoader(Indices(10), **kwargs)


@pytest.mark.skipif(gpufeed._gpufeed.cuda_devices()[0] > 0,
                    reason="this machine has a CUDA device: the refusal is for machines without")
def test_cuda_without_a_usable_device_is_refused_in_python_terms():
    with pytest.raises(ValueError, match=r"device='cuda': this machine has no usable CUDA "
                                         r"device .*pass device=None") as caught:
        gpufeed.DataLoader(Indices(10), device="cuda")
    assert "loader_options" not in str(caught.value) and "placement" not in str(caught.value)


def test_the_default_collate_is_accepted():
    loader = gpufeed.DataLoader(Indices(4), batch_size=2,
                                collate_fn=torch.utils.data.default_collate)
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3]]


class Holds(torch.utils.data.Dataset):
    def __init__(self, leaf):
        self.leaf = leaf

    def __len__(self):
        return 3

    def __getitem__(self, i):
        return {"what": self.leaf, "x": i}


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
@pytest.mark.parametrize("leaf, named", [(None, "None"),
                                         (bytearray(b"ab"), "bytearray.*return bytes"),
                                         (object(), "object")], ids=["None", "bytearray", "object"])
def test_unbatchable_leaves_are_refused_with_the_reason(worker_type, leaf, named):
    # The layout comes from the first sample a worker reads: nothing is read before iterating.
    loader = gpufeed.DataLoader(Holds(leaf), num_workers=2, worker_type=worker_type)
    with pytest.raises(gpufeed.SampleError, match=f"field 'what' is .*{named}"):
        next(iter(loader))


class FailsAt(torch.utils.data.Dataset):
    def __init__(self, n, bad):
        self.n, self.bad = n, set(bad)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return self.load(i)

    def load(self, i):
        if i in self.bad:
            raise KeyError(f"no record for {i}")
        return np.full(3, i, dtype=np.int32)


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_a_failing_sample_raises_the_datasets_own_exception_with_gpufeeds_account(worker_type):
    loader = gpufeed.DataLoader(FailsAt(20, [7]), batch_size=4, num_workers=2,
                                worker_type=worker_type)
    it = iter(loader)
    assert next(it)[:, 0].tolist() == [0, 1, 2, 3]
    with pytest.raises(KeyError) as caught:  # as an `except KeyError` written for torch
        next(it)
    e = caught.value
    account = e.sample_error
    assert isinstance(account, gpufeed.SampleError)
    assert account.index == 7 and account.epoch == 0 and account.file is None
    text = "".join(traceback.format_exception(e)) + str(e)
    assert "in load" in text and "no record for 7" in text  # the dataset's own traceback
    assert "sample 7 (epoch 0, worker" in text  # and gpufeed's context
    # The failed batch is consumed; iteration goes on with the next one.
    assert next(it)[:, 0].tolist() == [8, 9, 10, 11]


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_the_skip_policy_counts_and_lists_skips(worker_type):
    loader = gpufeed.DataLoader(FailsAt(30, [3, 17, 18]), batch_size=5, num_workers=3,
                                on_error="skip", worker_type=worker_type)
    got = [int(x) for b in loader for x in b[:, 0]]
    assert got == [i for i in range(30) if i not in (3, 17, 18)]
    stats = loader.stats()
    assert stats["skipped"] == 3 and sorted(stats["skipped_indices"]) == [3, 17, 18]


class Ragged(torch.utils.data.Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, i):
        length = 4 if i == 9 else 3
        kind = np.float64 if i == 5 else np.float32
        return {"x": np.zeros(length, dtype=np.float32), "y": np.zeros(2, dtype=kind)}


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_a_sample_of_another_shape_or_dtype_names_its_index_and_field(worker_type):
    loader = gpufeed.DataLoader(Ragged(), batch_size=3, on_error="raise", num_workers=1,
                                worker_type=worker_type)
    it = iter(loader)
    next(it)
    with pytest.raises(gpufeed.SampleError, match=r"sample 5, field 'y'.*float64") as caught:
        next(it)
    assert caught.value.index == 5
    next(it)
    with pytest.raises(gpufeed.SampleError, match=r"sample 9, field 'x'.*shape \[4\]"):
        next(it)


class Complex(torch.utils.data.Dataset):
    def __init__(self, make):
        self.make = make

    def __len__(self):
        return 8

    def __getitem__(self, i):
        return self.make(i)


@pytest.mark.parametrize("make", [lambda i: torch.full((2,), i + 1j, dtype=torch.complex64),
                                  lambda i: np.full(2, i - 1j)], ids=["torch", "numpy"])
@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_a_complex_field_is_refused_with_the_way_round(worker_type, make):
    """The first sample read (index 3 here) gives the layout: its refusal names that sample
    once, says the field is complex and how to pass it, and every failure of the batch is
    listed, in Python's words."""
    loader = gpufeed.DataLoader(Complex(make), batch_size=2, sampler=[3, 4], num_workers=1,
                                worker_type=worker_type)
    with pytest.raises(gpufeed.SampleError) as caught:
        next(iter(loader))
    message = str(caught.value)
    assert "sample 3: field 'sample' is" in message and "sample 0" not in message
    assert "complex" in message and "torch.view_as_real(x)" in message
    assert "SampleError.failures has each" in message and "::" not in message


def test_a_corrupt_image_names_its_file(tmp_path):
    if not gpufeed._gpufeed.has_images:
        pytest.skip("built without the image datasets (libjpeg and libpng)")
    from PIL import Image

    for c in ("a", "b"):
        (tmp_path / c).mkdir()
        for k in range(2):
            Image.new("RGB", (40, 30), (k * 90, 20, 200)).save(tmp_path / c / f"{k}.jpg")
    broken = tmp_path / "b" / "1.jpg"
    broken.write_bytes(b"\xff\xd8 not a jpeg")
    loader = gpufeed.DataLoader(gpufeed.datasets.ImageFolder(tmp_path, height=16, width=16),
                                batch_size=4)
    with pytest.raises(gpufeed.SampleError) as caught:
        list(loader)
    assert caught.value.file == str(broken) and caught.value.index == 3


def test_check_whole_file_decides_whether_a_file_cut_below_the_crop_fails(tmp_path):
    if not gpufeed._gpufeed.has_images:
        pytest.skip("built without the image datasets (libjpeg and libpng)")
    from PIL import Image

    # A tall noisy picture: the centre crop needs its rows 96 to 160 of 256; the copy that lost
    # the last 15 % of its bytes (and its end marker) still has them.
    (tmp_path / "c").mkdir()
    pixels = np.random.default_rng(5).integers(0, 255, (256, 64, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(tmp_path / "c" / "0-good.jpg", quality=90)
    whole = (tmp_path / "c" / "0-good.jpg").read_bytes()
    cut = tmp_path / "c" / "1-cut.jpg"
    cut.write_bytes(whole[:len(whole) * 85 // 100])
    options = dict(height=32, width=32, resize="center_crop", resize_to=32)

    stopping = gpufeed.datasets.ImageFolder(tmp_path, check_whole_file=False, **options)
    images, labels = next(iter(gpufeed.DataLoader(stopping, batch_size=2)))
    assert labels.tolist() == [0, 0]
    assert torch.equal(images[0], images[1])  # the cut file's crop is the whole file's

    checking = gpufeed.datasets.ImageFolder(tmp_path, **options)  # the default: True
    with pytest.raises(gpufeed.SampleError) as caught:
        list(gpufeed.DataLoader(checking, batch_size=2))
    assert caught.value.file == str(cut) and caught.value.index == 1
    assert "1-cut.jpg" in str(caught.value) and "truncated" in str(caught.value)

@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_sample_zero_failing_raises_the_datasets_own_exception(worker_type):
    loader = gpufeed.DataLoader(FailsAt(5, [0]), num_workers=2, worker_type=worker_type)
    with pytest.raises(KeyError, match="no record for 0"):
        next(iter(loader))


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_a_dataset_whose_every_sample_fails_raises_once_a_batch_and_ends(worker_type):
    # torch's test_error loop: one exception per batch, then StopIteration (never a loop that
    # raises the first batch's error for ever).
    loader = gpufeed.DataLoader(FailsAt(10, range(10)), batch_size=3, num_workers=2,
                                worker_type=worker_type)
    for epoch in range(2):
        it = iter(loader)
        errors = 0
        while True:
            try:
                next(it)
            except KeyError:
                errors += 1
                assert errors <= 4, "more failures than the epoch's 4 batches"
            except StopIteration:
                break
        assert errors == 4, f"epoch {epoch}"


class SlowAtFive(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            time.sleep(3)
        return i


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_a_late_batch_raises_loader_timeout_error_naming_the_sample(worker_type):
    loader = gpufeed.DataLoader(SlowAtFive(), batch_size=2, num_workers=2, timeout=0.5,
                                worker_type=worker_type)
    it = iter(loader)
    next(it), next(it)
    with pytest.raises(gpufeed.LoaderTimeoutError) as caught:
        next(it)
    assert caught.value.index in (4, 5) and isinstance(caught.value, TimeoutError)
    loader.close()


class SlowFirst(torch.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(8)  # every sample: the layout cannot come from another one meanwhile
        return i


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_the_timeout_covers_the_first_batch(worker_type):
    # The first batch is waited for in many short waits (signals are checked between them);
    # the timeout counts from the first.
    loader = gpufeed.DataLoader(SlowFirst(), batch_size=2, num_workers=1, timeout=0.5,
                                worker_type=worker_type)
    with pytest.raises(TimeoutError) as caught:  # without it, the batch would come after 8 s
        next(iter(loader))
    # torch's words first (code matching them keeps working), then gpufeed's account, which
    # names the DataLoader's argument, not the C++ option.
    assert str(caught.value).startswith("DataLoader timed out after 0.5 seconds: ")
    assert "within timeout (500 ms)" in str(caught.value)
    assert "loader_options" not in str(caught.value)
    loader.close()


@pytest.mark.parametrize("error", [
    gpufeed.LoaderTimeoutError("late", 7), gpufeed.FileError("missing", "/data/x.h5"),
    gpufeed.SampleError("bad", 3, 1, "/data/x.h5", 0), gpufeed.WorkerError("worker 1 died"),
    gpufeed.WorkerError.died(1, 4242, signal=9, samples=(3, 4), epoch=2)])
def test_gpufeeds_exceptions_pickle_and_rebuild_from_their_message(error):
    """A process pool or torch.multiprocessing pickles an exception to send it on; code that
    wraps errors rebuilds one with type(e)(str(e)). Both work, attributes kept by pickle."""
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error) and str(again) == str(error)
    assert vars(again) == vars(error)
    assert str(type(error)(str(error))) == str(error)


def test_a_dead_workers_error_says_what_its_fields_say():
    """A dead worker process's WorkerError carries its account as fields, and its message is
    made from them: the worker, its pid, how it ended (a status, a signal by name, with the
    out-of-memory killer's advice for SIGKILL, or only "ended" when unknown) and what it held."""
    killed = gpufeed.WorkerError.died(1, 4242, signal=9, samples=(3, 4), epoch=2)
    assert (killed.worker, killed.pid, killed.exit_status, killed.signal, killed.samples,
            killed.epoch, killed.task) == (1, 4242, None, 9, (3, 4), 2, None)
    assert str(killed) == (
        "gpufeed: worker process 1 (pid 4242) was killed by signal 9 (SIGKILL) while reading "
        "samples 3, 4 of epoch 2; the loader cannot go on (make a new one). The kernel's "
        "out-of-memory killer ends processes with SIGKILL: check dmesg, and lower num_workers "
        "or the memory each sample takes")

    exited = gpufeed.WorkerError.died(0, 7, exit_status=3, samples=[6], epoch=0)
    assert str(exited) == ("gpufeed: worker process 0 (pid 7) exited with status 3 while "
                           "reading sample 6 of epoch 0; the loader cannot go on (make a new "
                           "one)")

    unknown = gpufeed.WorkerError.died(0, 7, task="the batch layout")
    assert (unknown.exit_status, unknown.signal, unknown.samples) == (None, None, ())
    assert str(unknown) == ("gpufeed: worker process 0 (pid 7) ended while reading the batch "
                            "layout; the loader cannot go on (make a new one)")
    unknown.ended_with(-15)  # multiprocessing's exitcode: killed by SIGTERM
    assert (unknown.exit_status, unknown.signal) == (None, 15)
    assert "was killed by signal 15 (SIGTERM) while reading the batch layout" in str(unknown)
    assert "out-of-memory" not in str(unknown)
    unknown.ended_with(0)
    assert (unknown.exit_status, unknown.signal) == (0, None)
    assert "(pid 7) exited with status 0 while" in str(unknown)

    plain = gpufeed.WorkerError("gpufeed: the loader is closed")
    assert (plain.worker, plain.pid, plain.signal, plain.samples) == (None, None, None, ())


def test_errors_from_the_core_name_the_dataloaders_arguments():
    """C++ option names (loader_options::prefetch_depth, gpufeed::auto_depth) and the
    precondition's source location never reach a Python user's message."""
    with pytest.raises(ValueError) as caught:
        gpufeed.DataLoader(Indices(8), prefetch_depth=0, worker_type="thread")
    message = str(caught.value)
    assert "prefetch_depth=0 is out of range" in message and "'auto'" in message
    assert "loader_options" not in message and "::" not in message and "failed at" not in message


def test_log_lines_name_the_dataloaders_arguments(capfd):
    """The core's log lines reach a Python user in the same words as its errors: the warning of
    batches held past the ring names held_batches_budget, not loader_options::."""
    gpufeed.set_log_level("warn")
    loader = gpufeed.DataLoader(Indices(40), batch_size=4, prefetch_depth=2, worker_type="thread")
    held = list(loader)  # every batch alive at once: the ring grows, and says so once
    assert len(held) == 10
    err = capfd.readouterr().err
    assert "ring slots are leased to batches that are still alive" in err
    assert "held_batches_budget)" in err
    assert "loader_options" not in err and "::" not in err


def test_missing_files_raise_file_error():
    with pytest.raises(gpufeed.FileError) as caught:
        gpufeed.datasets.HDF5(os.path.join("/nonexistent", "x.h5"))
    assert "x.h5" in caught.value.path


@pytest.mark.parametrize("worker_type", WORKER_TYPES)
def test_every_failed_sample_of_a_batch_is_listed(worker_type):
    loader = gpufeed.DataLoader(FailsAt(12, [5, 6]), batch_size=4, num_workers=2,
                                worker_type=worker_type)
    it = iter(loader)
    next(it)
    with pytest.raises(KeyError) as caught:
        next(it)
    account = caught.value.sample_error
    failures = account.failures
    assert [f.index for f in failures] == [5, 6] and all(f.epoch == 0 for f in failures)
    assert "no record for 6" in failures[1].message
    assert account.index == 5 and "no record for 5" in str(caught.value)
