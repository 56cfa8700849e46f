"""The two data loaders as the training loop sees them: batches of normalised float32 images
[N, 3, H, W] and int64 labels on the training device, the same augmentations on both sides
(torchvision's semantics), and the time the loop spent waiting inside the loader's next().

- TorchFeed: torchvision.datasets.ImageFolder + transforms, torch.utils.data.DataLoader.
- GpufeedFeed: gpufeed.datasets.ImageFolder with the same options, gpufeed.DataLoader. Its
  batches are uint8 [N, H, W, 3]; they become float [N, 3, H, W] after the loader: on the GPU
  inside the loader (transforms=) with --device cuda, else on the CPU in the training loop.
"""

import time

import torch

import gpufeed

MEAN = (0.5, 0.5, 0.5)  # per-channel normalisation of pixels in [0, 1], both loaders
STD = (0.25, 0.25, 0.25)


class Augmentation:
    """RandomResizedCrop(size, scale, ratio) + RandomHorizontalFlip + ColorJitter(b, c, s) for
    training; Resize(size * 256 / 224) + CenterCrop(size) for evaluation."""

    def __init__(self, size, scale_min=0.25, jitter=0.4):
        self.size = size
        self.scale = (scale_min, 1.0)
        self.ratio = (3 / 4, 4 / 3)
        self.jitter = jitter


class Feed:
    """One loader's batches, epoch by epoch, with the loop's wait for them timed."""

    name = ""

    def __init__(self):
        self.wait_s = 0.0     # in the loader's next(), all epochs
        self.convert_s = 0.0  # turning its batches into the model's input, after next()

    def epoch(self, epoch):
        """Yields (images, labels) of `epoch`, ready for the model."""
        iterator = iter(self._batches(epoch))
        while True:
            start = time.perf_counter()
            try:
                images, labels = next(iterator)
            except StopIteration:
                self.wait_s += time.perf_counter() - start
                break
            self.wait_s += time.perf_counter() - start
            start = time.perf_counter()
            images, labels = self._model_input(images), labels.to(self.device, non_blocking=True)
            self.convert_s += time.perf_counter() - start
            yield images, labels

    def _batches(self, epoch):
        raise NotImplementedError

    def _model_input(self, images):
        return images.to(self.device, non_blocking=True)


class TorchFeed(Feed):
    """torchvision's ImageFolder read by torch's DataLoader (worker processes)."""

    name = "torch"

    def __init__(self, folder, train, augment, batch_size, workers, seed, device):
        super().__init__()
        import torchvision.datasets as tvd
        import torchvision.transforms as T

        a = augment
        if train:
            steps = [T.RandomResizedCrop(a.size, scale=a.scale, ratio=a.ratio),
                     T.RandomHorizontalFlip(),
                     T.ColorJitter(brightness=a.jitter, contrast=a.jitter, saturation=a.jitter)]
        else:
            steps = [T.Resize(round(a.size * 256 / 224)), T.CenterCrop(a.size)]
        steps += [T.ToTensor(), T.Normalize(MEAN, STD)]
        self.dataset = tvd.ImageFolder(str(folder), transform=T.Compose(steps))
        self.device = device
        # persistent_workers: the workers are forked once, not at each epoch, as gpufeed's
        # threads are made once; between epochs they wait without reading ahead.
        self.loader = torch.utils.data.DataLoader(
            self.dataset, batch_size=batch_size, shuffle=train, num_workers=workers,
            persistent_workers=workers > 0, pin_memory=device.type == "cuda",
            generator=torch.Generator().manual_seed(seed))

    def _batches(self, epoch):
        return self.loader

    def close(self):
        self.loader = None  # its worker processes end with its last iterator

    def diagnosis(self):
        return None


class GpufeedFeed(Feed):
    """gpufeed's ImageFolder read by gpufeed's DataLoader (worker threads, no GIL)."""

    name = "gpufeed"

    def __init__(self, folder, train, augment, batch_size, workers, seed, device,
                 full_decoding=False, show_progress=False):
        super().__init__()
        a = augment
        options = dict(height=a.size, width=a.size, full_decoding=full_decoding)
        if train:
            options.update(resize="random_resized_crop", scale=a.scale, ratio=a.ratio,
                           horizontal_flip=True,
                           jitter=dict(brightness=a.jitter, contrast=a.jitter,
                                       saturation=a.jitter))
        # Evaluation: center_crop, resize_to 0 = round(size * 256 / 224), as torchvision's.
        self.dataset = gpufeed.datasets.ImageFolder(folder, **options)
        self.device = device
        self.train = train
        self.batch_size = batch_size
        self.workers = workers
        self.seed = seed
        self.show_progress = show_progress
        self.loader = None
        self.last_stats = None
        self.last_diagnosis = None
        self.epoch_diagnoses = []
        self.gpu_transform = device.type == "cuda"
        mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
        std = torch.tensor(STD, device=device).view(1, 3, 1, 1)
        self._scale, self._shift = 1 / (255 * std), -mean / std

    def _batches(self, epoch):
        # A fresh loader per epoch, closed at its end: gpufeed prepares the next epoch's first
        # batches as soon as one ends, which side by side would be done on the other loader's
        # time. In your own training keep one loader for every epoch (and call set_epoch).
        self.loader = gpufeed.DataLoader(
            self.dataset, batch_size=self.batch_size, shuffle=self.train,
            num_workers=self.workers, seed=self.seed, persistent_workers=True,
            device="cuda" if self.gpu_transform else None,
            transforms=self._transforms() if self.gpu_transform else None)
        self.loader.set_epoch(epoch)
        return gpufeed.progress(self.loader) if self.show_progress else self.loader

    def _transforms(self):
        # uint8 HWC -> float32 CHW, / 255, mean and std, in one kernel after the copy: 4x fewer
        # bytes cross PCIe than float32 would.
        return {"image": {"dtype": "float32", "layout": "chw", "scale": 1 / 255,
                          "mean": list(MEAN), "std": list(STD)}}

    def _model_input(self, images):
        if self.gpu_transform:
            return images
        # uint8 [N, H, W, 3] -> normalised float32 [N, 3, H, W], in the training loop's thread.
        x = images.to(self.device).permute(0, 3, 1, 2).float()
        return x.mul_(self._scale).add_(self._shift).contiguous()

    def epoch(self, epoch):
        yield from super().epoch(epoch)
        self.last_stats = self.loader.stats()
        self.last_diagnosis = self.loader.diagnose()
        self.epoch_diagnoses.append(self.last_diagnosis)
        self.loader.close()

    def close(self):
        if self.loader is not None:
            self.loader.close()

    def diagnosis(self):
        return self.last_diagnosis
