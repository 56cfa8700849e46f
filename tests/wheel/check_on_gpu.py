"""The self-contained wheel's CUDA path on a machine with NVIDIA's driver (scripts/device-check):
the CUDA runtime inside the wheel finds the driver, and batches arrive on the GPU with the values
the host path gives, beside the machine's own torch (and its own CUDA runtime) in one process.

Usage: python check_on_gpu.py      (in a venv with the wheel and torch with CUDA)
"""

import numpy as np
import torch

import gpufeed


def main() -> None:
    info = gpufeed.build_info()
    print("check_on_gpu:", info["cuda"].detail)
    devices, why = gpufeed._gpufeed.cuda_devices()
    if devices == 0:
        raise SystemExit(f"check_on_gpu: FAILED: the wheel's CUDA path sees no device: {why}")
    arrays = {"x": np.arange(4096 * 16, dtype=np.float32).reshape(4096, 16),
              "y": np.arange(4096, dtype=np.int64)}
    host = gpufeed.DataLoader(gpufeed.datasets.InMemory(arrays), batch_size=256)
    gpu = gpufeed.DataLoader(gpufeed.datasets.InMemory(arrays), batch_size=256, device="cuda")
    batches, total = 0, 0.0
    # In step, each batch compared and let go: neither loader holds batches past the next one.
    for h, g in zip(host, gpu, strict=True):
        for name in ("x", "y"):
            if g[name].device.type != "cuda":
                raise SystemExit(f"check_on_gpu: FAILED: {name} on {g[name].device}")
            if not torch.equal(g[name].cpu(), torch.as_tensor(h[name])):
                raise SystemExit(f"check_on_gpu: FAILED: {name} differs on the GPU")
        batches += 1
        total += float(g["x"].sum())
    if batches != 16:
        raise SystemExit(f"check_on_gpu: FAILED: {batches} batches, not 16")
    # torch's own CUDA runtime works in the same process after gpufeed's.
    total += float(torch.ones(3, device="cuda").sum())
    print(f"check_on_gpu: {batches} batches on {torch.cuda.get_device_name()}, "
          f"sum {total:.0f}; passed")


if __name__ == "__main__":
    main()
