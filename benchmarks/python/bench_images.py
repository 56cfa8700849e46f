#!/usr/bin/env python3
"""Image folder, same augmentations: torchvision's ImageFolder + transforms in torch's
DataLoader (worker processes) vs gpufeed.datasets.ImageFolder in gpufeed.DataLoader (worker
threads), same JPEGs, batch size and worker count, interleaved paired repeats. Goal: gpufeed at
least 3x torch (median of the per-repeat ratios), in both cases:

  train: RandomResizedCrop(224) + RandomHorizontalFlip() + ColorJitter(0.4, 0.4, 0.4)
  eval:  Resize(256) + CenterCrop(224)

torch's side ends with PILToTensor (uint8 CHW, what gpufeed delivers as uint8 HWC; ToTensor
would add a float conversion gpufeed does on the GPU). A third peer, gpufeed_full_decode, turns
gpufeed's decode shortcuts off (full_decoding=True: every JPEG decoded whole, at full size, to
RGB, as PIL does), to show how much of the ratio comes from them (the pair
gpufeed/gpufeed_full_decode says it directly; at 224 on these images DCT scaling hardly ever
applies, at --size 112 it does for most crops). --size S makes
the output S x S (torch: RandomResizedCrop(S), Resize(round(S * 256 / 224)) + CenterCrop(S));
the goal is judged at 224 only. With --size other than 224 the report is named images-S.json.

The JPEGs (photograph-sized, 400-500 px, seeded textures) are made once into --data/images.

  PYTHONPATH=build/python /usr/bin/python3 benchmarks/python/bench_images.py [--repeats 5]
"""

import os
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paired  # noqa: E402
from workloads import make_images  # noqa: E402


def resize_side(size):
    """Resize's side for a centre crop of `size`: 256 for 224, as gpufeed's default resize_to."""
    return round(size * 256 / 224)


def torch_loader(root, case, batch_size, workers, size=224):
    import torch
    import torchvision.datasets as tvd
    import torchvision.transforms as T

    if case == "train":
        steps = [T.RandomResizedCrop(size), T.RandomHorizontalFlip(),
                 T.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4)]
    else:
        steps = [T.Resize(resize_side(size)), T.CenterCrop(size)]
    data = tvd.ImageFolder(root, transform=T.Compose(steps + [T.PILToTensor()]))
    # pin_memory as a CUDA user sets it: True with a GPU; this machine has none.
    return torch.utils.data.DataLoader(data, batch_size=batch_size, shuffle=True,
                                       num_workers=workers, persistent_workers=True,
                                       pin_memory=torch.cuda.is_available(), drop_last=True)


def gpufeed_loader(root, case, batch_size, workers, full_decoding=False, size=224):
    import gpufeed

    if case == "train":
        options = dict(resize="random_resized_crop", horizontal_flip=True,
                       jitter={"brightness": 0.4, "contrast": 0.4, "saturation": 0.4})
    else:
        options = dict(resize="center_crop", resize_to=resize_side(size))
    data = gpufeed.datasets.ImageFolder(root, height=size, width=size,
                                        full_decoding=full_decoding, **options)
    return gpufeed.DataLoader(data, batch_size=batch_size, shuffle=True, num_workers=workers,
                              persistent_workers=True, drop_last=True)


def main():
    p = paired.loader_parser(__doc__, batch_size=32)
    p.add_argument("--images", type=int, default=512)
    p.add_argument("--classes", type=int, default=8)
    p.add_argument("--torch-batches", type=int, default=8, help="timed batches of torch")
    p.add_argument("--gpufeed-batches", type=int, default=16, help="timed batches of gpufeed")
    p.add_argument("--cases", default="train,eval")
    p.add_argument("--size", type=int, default=224,
                   help="output side (112: DCT scaling applies to most crops; the goal is at 224)")
    a = paired.parse(p)

    root = os.path.join(a.data, "images")
    make_images(root, a.images, a.classes)
    results, goals = {}, []
    for case in a.cases.split(","):
        print(f"== {case}")
        # torch's worker processes first: they fork before gpufeed's threads exist.
        loaders = {"torch": torch_loader(root, case, a.batch_size, a.workers, a.size)}
        streams = {"torch": paired.start(loaders["torch"], a.warmup)}
        loaders["gpufeed"] = gpufeed_loader(root, case, a.batch_size, a.workers, size=a.size)
        loaders["gpufeed_full_decode"] = gpufeed_loader(root, case, a.batch_size, a.workers,
                                                        full_decoding=True, size=a.size)
        for n in ("gpufeed", "gpufeed_full_decode"):
            streams[n] = paired.start(loaders[n], a.warmup)
        counts = {"gpufeed": a.gpufeed_batches, "gpufeed_full_decode": a.gpufeed_batches,
                  "torch": a.torch_batches}
        runners = {n: (lambda n=n: paired.timed(streams[n], a.warmup, counts[n]))
                   for n in streams}
        r = paired.paired(runners, a.repeats, [("gpufeed", "torch"),
                                               ("gpufeed_full_decode", "torch"),
                                               ("gpufeed", "gpufeed_full_decode")])
        for loader in loaders.values():
            if hasattr(loader, "close"):
                loader.close()
        results[case] = r
        if a.size == 224:  # the goal is stated for 224
            goals.append(paired.goal(f"{case}: gpufeed >= 3x torch",
                                     r["median_ratio"]["gpufeed/torch"], 3.0,
                                     "median of paired ratios"))
    config = {k: v for k, v in vars(a).items() if k not in ("out", "data")}
    config.update(image_sizes="400-500 x 375-450 JPEG q90", output=[a.size, a.size], torch_output="PILToTensor uint8 CHW",
                  gpufeed_output="uint8 NHWC", shuffle=True, persistent_workers=True,
                  pin_memory=False, jitter="brightness 0.4, contrast 0.4, saturation 0.4")
    paired.report("images" if a.size == 224 else f"images-{a.size}", config, results, goals,
                  a.out)


if __name__ == "__main__":
    main()
