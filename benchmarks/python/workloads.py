"""The datasets and loaders the Python benchmarks compare (bench_*.py), made one way for all.

Datasets (map-style, as users write them; each made once and given to every loader):
  numpy       NumpyDataset: rows of one uint8 array [N, 3, S, S] and an int label
  crop        RandomCropDataset: a random-offset crop of a larger uint8 array, and a label
  h5py        H5Dataset: the user's own class reading rows of an h5py file (opened lazily,
              once per worker process, as h5py handles do not survive fork)
  folder      torchvision's ImageFolder, unchanged, with RandomResizedCrop + RandomHorizontalFlip
              + ToTensor + Normalize (float32 CHW), or + PILToTensor (uint8, what
              gpufeed.datasets.ImageFolder gives) with `uint8=True`
and gpufeed's own, read in C++ on threads: gpufeed.datasets.HDF5 and gpufeed.datasets.ImageFolder.

Loaders (make_loader(name, ...), all shuffling, drop_last, the same batch size and workers):
  gpufeed          gpufeed.DataLoader, worker_type "auto" (processes for a Python dataset)
  gpufeed_thread   gpufeed.DataLoader(worker_type="thread")
  torch            torch.utils.data.DataLoader(persistent_workers=True)
  torchdata        torchdata.stateful_dataloader.StatefulDataLoader, the same arguments
  nodes            torchdata.nodes: SamplerWrapper -> Batcher -> ParallelMapper(getitems +
                   default_collate, method="process") -> [PinMemory] -> Prefetcher -> Loader
                   (the recipe of torchdata's "migrating from DataLoader" page)
  spdl             spdl.dataloader.get_pytorch_dataloader (SPDL's drop-in for map-style
                   datasets: a process pool fed by SPDL's pipeline; no persistent workers, so
                   it starts its pool on every epoch)
"""

import os

import numpy as np

LOADERS = ("gpufeed", "gpufeed_thread", "torch", "torchdata", "nodes", "spdl")
# Loaders that start processes when they are made or first iterated: made before the others
# start threads, so that no fork copies a thread's held lock.
FORKING = ("torch", "torchdata", "gpufeed", "nodes", "spdl")


class NumpyDataset:
    """Images held in one numpy array, as many users hold a preprocessed dataset. `length`
    (default: the samples) > samples goes round them again (index % samples): a long epoch
    without the memory of one, for loaders that start their workers on every epoch."""

    def __init__(self, samples, side, seed=3, length=None):
        rng = np.random.default_rng(seed)
        self.images = rng.integers(0, 256, (samples, 3, side, side), dtype=np.uint8)
        self.labels = rng.integers(0, 1000, samples)
        self.length = length or samples

    def __len__(self):
        return self.length

    def __getitem__(self, index):
        index %= len(self.images)
        return self.images[index], int(self.labels[index])


class RandomCropDataset(NumpyDataset):
    """A `crop` x `crop` window at a random offset of a `side` x `side` uint8 image (CHW), and
    its label: numpy's global generator picks the offset (torch and gpufeed seed it per worker)."""

    def __init__(self, samples, side, crop, seed=4, length=None):
        super().__init__(samples, side, seed, length)
        self.crop = crop

    def __getitem__(self, index):
        index %= len(self.images)
        y, x = np.random.randint(0, self.images.shape[2] - self.crop + 1, 2)
        return self.images[index, :, y:y + self.crop, x:x + self.crop], int(self.labels[index] % 10)


class H5Dataset:
    """What PyTorch users write: the file opened on first use in each worker process (an h5py
    handle does not survive fork), one sample per __getitem__."""

    def __init__(self, path):
        import h5py

        self.path = path
        self.file = None
        with h5py.File(path, "r") as f:
            self.length = len(f["labels"])

    def __len__(self):
        return self.length

    def __getstate__(self):  # an opened handle does not pickle (spawn, spdl's shared copy)
        return {**self.__dict__, "file": None}

    def __getitem__(self, index):
        opened = self.file
        if opened is None:
            import h5py

            # One tuple, assigned last: worker threads that open the file at once each see a
            # whole one (images set, labels not yet, would fail another thread's read).
            f = h5py.File(self.path, "r")
            opened = self.file = (f, f["images"], f["labels"])
        _, images, labels = opened
        return images[index], labels[index]


def image_folder(root, size=224, uint8=False):
    """torchvision's ImageFolder with RandomResizedCrop(size) and RandomHorizontalFlip, then
    ToTensor + Normalize (ImageNet's mean and std), or PILToTensor with `uint8`."""
    import torchvision.datasets as tvd
    import torchvision.transforms as T

    tail = [T.PILToTensor()] if uint8 else [
        T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]
    return tvd.ImageFolder(root, transform=T.Compose(
        [T.RandomResizedCrop(size), T.RandomHorizontalFlip()] + tail))


def make_h5_files(folder, samples, side=64, chunk=64, seed=5):
    """contiguous.h5 and chunked.h5 (images uint8 [N, side, side, 3], labels int64 [N]; chunked:
    `chunk` rows per chunk, gzip 4): smooth colour fields plus noise (gzip compresses them about
    as it compresses photographs' pixels; random bytes would not compress). Made once."""
    import h5py

    done = os.path.join(folder, f".done-{samples}-{side}-{chunk}-{seed}")
    if os.path.exists(done):
        return
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:side, 0:side].astype(np.float32) / side
    images = np.empty((samples, side, side, 3), np.uint8)
    for i in range(samples):
        a, b, c = rng.random(3)
        base = np.stack([a * x + b * y, np.sin((i % 10 + 1) * 3.1 * x) * 0.5 + 0.5, c * (1 - y)],
                        axis=-1)
        noise = rng.normal(0.0, 0.03, base.shape)
        images[i] = np.clip((base + noise) * 255.0, 0, 255).astype(np.uint8)
    labels = rng.integers(0, 10, samples).astype(np.int64)
    with h5py.File(os.path.join(folder, "contiguous.h5"), "w") as f:
        f.create_dataset("images", data=images)
        f.create_dataset("labels", data=labels)
    with h5py.File(os.path.join(folder, "chunked.h5"), "w") as f:
        f.create_dataset("images", data=images, chunks=(chunk, side, side, 3),
                         compression="gzip", compression_opts=4)
        f.create_dataset("labels", data=labels, chunks=(chunk,), compression="gzip",
                         compression_opts=4)
    open(done, "w").close()


def make_images(root, count, classes, seed=11):
    """`count` JPEGs of 400-500 x 375-450 px in `classes` folders: low-frequency colour fields
    (upsampled random grids) plus stripes and fine noise, so that they decode and compress like
    photographs (about 10:1 at quality 90). Made once, with PIL."""
    from PIL import Image

    done = os.path.join(root, f".done-{count}-{classes}-{seed}")
    if os.path.exists(done):
        return
    rng = np.random.default_rng(seed)
    for i in range(count):
        folder = os.path.join(root, f"class{i % classes:02d}")
        os.makedirs(folder, exist_ok=True)
        w, h = int(rng.integers(400, 501)), int(rng.integers(375, 451))
        coarse = rng.integers(0, 256, (int(rng.integers(6, 16)), int(rng.integers(6, 16)), 3),
                              dtype=np.uint8)
        field = np.asarray(Image.fromarray(coarse).resize((w, h), Image.BICUBIC), np.float32)
        y, x = np.mgrid[0:h, 0:w].astype(np.float32)
        k = 0.02 + 0.2 * rng.random()
        stripes = 30.0 * np.sin(k * (x * np.cos(i) + y * np.sin(i)))[..., None]
        noise = rng.normal(0.0, 10.0, (h, w, 3)).astype(np.float32)
        pixels = np.clip(field + stripes + noise, 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(os.path.join(folder, f"{i:05d}.jpg"), quality=90)
    open(done, "w").close()


class _Getitems:
    """torchdata.nodes' map function: one batch of indices -> default_collate of the samples
    (a class, not a lambda, so that it pickles into worker processes)."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __call__(self, indices):
        from torch.utils.data import default_collate

        return default_collate([self.dataset[i] for i in indices])


def make_loader(name, dataset, batch_size, workers, device=None, **gpufeed_options):
    """Loader `name` (see LOADERS) over `dataset`. `device` "cuda": gpufeed delivers there, the
    others pin their batches as their users do (to_device then copies them)."""
    import torch

    cuda = device is not None and device != "cpu"
    common = dict(batch_size=batch_size, shuffle=True, num_workers=workers, drop_last=True)
    if name in ("gpufeed", "gpufeed_thread"):
        import gpufeed

        if name == "gpufeed_thread":
            gpufeed_options["worker_type"] = "thread"
        return gpufeed.DataLoader(dataset, persistent_workers=True, device=device, **common,
                                  **gpufeed_options)
    if name == "torch":
        return torch.utils.data.DataLoader(dataset, persistent_workers=True, pin_memory=cuda,
                                           **common)
    if name == "torchdata":
        from torchdata.stateful_dataloader import StatefulDataLoader

        return StatefulDataLoader(dataset, persistent_workers=True, pin_memory=cuda, **common)
    if name == "spdl":
        from spdl.dataloader import get_pytorch_dataloader

        loader = get_pytorch_dataloader(dataset, pin_memory=cuda, **common)
        # It copies the dataset into a shared-memory segment that nothing unlinks (Python's
        # resource tracker warns of it at exit); the benchmark unlinks it when it is done.
        loader.close = lambda: (loader._shmem.close(), loader._shmem.unlink())
        return loader
    if name == "nodes":
        import torchdata.nodes as tn

        node = tn.Batcher(tn.SamplerWrapper(torch.utils.data.RandomSampler(dataset)),
                          batch_size=batch_size, drop_last=True)
        node = tn.ParallelMapper(node, map_fn=_Getitems(dataset), num_workers=workers,
                                 method="process", in_order=True)
        if cuda:
            node = tn.PinMemory(node)
        return tn.Loader(tn.Prefetcher(node, prefetch_factor=2 * workers))
    raise ValueError(f"unknown loader {name!r}; one of {', '.join(LOADERS)}")


def to_device(batch, device):
    """The batch's tensors on `device` (non_blocking: the peers' batches are pinned); gpufeed's
    are there already, and tensors already there are returned as they are."""
    if device is None or device == "cpu":
        return batch
    if isinstance(batch, (list, tuple)):
        return [to_device(b, device) for b in batch]
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    return batch.to(device, non_blocking=True) if hasattr(batch, "to") else batch


def close(loader):
    """Stops a loader's workers where it can say so (gpufeed's close(); torch's persistent
    workers end with the process)."""
    if hasattr(loader, "close"):
        loader.close()


def add_dataset_arguments(p):
    """The sizes of make_dataset()'s datasets, as options of parser `p`."""
    p.add_argument("--numpy-samples", type=int, default=2048)
    p.add_argument("--numpy-side", type=int, default=128, help="numpy: uint8 [3, SIDE, SIDE]")
    p.add_argument("--crop-samples", type=int, default=1024)
    p.add_argument("--crop-side", type=int, default=160)
    p.add_argument("--crop", type=int, default=128)
    p.add_argument("--length", type=int, default=32768,
                   help="numpy and crop: samples per epoch (going round the arrays)")
    p.add_argument("--images", type=int, default=1024, help="JPEGs of folder and images")
    p.add_argument("--image-size", type=int, default=224)
    p.add_argument("--h5-samples", type=int, default=32768)


def make_dataset(name, a):
    """Dataset `name`, sized by add_dataset_arguments()'s options; inputs made once in a.data.
    Python datasets: numpy, crop, folder (float32, normalized), folder_u8 (uint8), h5py,
    h5py_chunked; gpufeed's, read in C++: gpufeed_hdf5, gpufeed_hdf5_chunked,
    gpufeed_hdf5_chunk_window (the chunked file with a cache of 32 chunks, for chunk_window),
    gpufeed_images (RandomResizedCrop + flip, uint8 HWC, the work of folder_u8)."""
    images = os.path.join(a.data, "images")
    h5 = os.path.join(a.data, f"hdf5-{a.h5_samples}")
    if "folder" in name or "images" in name:
        make_images(images, a.images, 8)
    if "h5" in name:
        make_h5_files(h5, a.h5_samples)
    h5_file = os.path.join(h5, "chunked.h5" if name.endswith("chunked") else "contiguous.h5")
    if name == "numpy":
        return NumpyDataset(a.numpy_samples, a.numpy_side, length=a.length)
    if name == "crop":
        return RandomCropDataset(a.crop_samples, a.crop_side, a.crop, length=a.length)
    if name in ("folder", "folder_u8"):
        return image_folder(images, a.image_size, uint8=name == "folder_u8")
    if name.startswith("h5py"):
        return H5Dataset(h5_file)
    import gpufeed

    if name == "gpufeed_hdf5_chunk_window":
        return gpufeed.datasets.HDF5(os.path.join(h5, "chunked.h5"), ["images", "labels"],
                                     cache_chunks=32)
    if name.startswith("gpufeed_hdf5"):
        return gpufeed.datasets.HDF5(h5_file, ["images", "labels"])
    if name == "gpufeed_images":
        return gpufeed.datasets.ImageFolder(images, height=a.image_size, width=a.image_size,
                                            resize="random_resized_crop", horizontal_flip=True)
    raise ValueError(f"unknown dataset {name!r}")
