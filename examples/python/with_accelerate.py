"""Hugging Face accelerate with gpufeed.DataLoader. ``accelerator.prepare`` passes a gpufeed
loader through as it is (it rebuilds only torch's DataLoader): gpufeed gives each process its
own share of every epoch from torch.distributed's process group, which the Accelerator starts,
and delivers batches on ``device=accelerator.device`` itself. The loader's position goes into
``accelerator.save_state`` through ``register_for_checkpointing``, so a run stopped mid-epoch
goes on with the batch that followed.

    python with_accelerate.py                                    # one process
    torchrun --nproc_per_node 2 with_accelerate.py --cpu         # two, on the CPU
    python with_accelerate.py --stop-after 5 --state state/      # stop mid-epoch, saved
    python with_accelerate.py --resume state/                    # go on from there

``--record DIR`` writes, for each process, which samples each epoch read (the tests read it).
"""

import torch
from accelerate import Accelerator
from points import Points, example_arguments, write_record

import gpufeed


class Progress:
    """The epoch a run stands in, saved with the loader's position."""

    def __init__(self):
        self.epoch = 0

    def state_dict(self):
        return {"epoch": self.epoch}

    def load_state_dict(self, state):
        self.epoch = state["epoch"]


def main():
    parser = example_arguments(__doc__.split("\n")[0],
                               "save --state after this many batches, and stop")
    parser.add_argument("--state", default="state")
    parser.add_argument("--resume", help="a folder accelerator.save_state wrote")
    parser.add_argument("--cpu", action="store_true",
                        help="train on the CPU (several processes: accelerate's MULTI_CPU)")
    args = parser.parse_args()

    torch.set_num_threads(1)
    accelerator = Accelerator(cpu=args.cpu)
    # Was: torch.utils.data.DataLoader(Points(...), batch_size=..., shuffle=True, num_workers=...)
    loader = gpufeed.DataLoader(
        Points(args.samples), batch_size=args.batch_size, shuffle=True,
        num_workers=args.workers,
        device=accelerator.device if accelerator.device.type == "cuda" else None)
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    progress = Progress()
    accelerator.register_for_checkpointing(loader, progress)
    if args.resume:
        accelerator.load_state(args.resume)

    seen = {}
    steps = 0
    for epoch in range(progress.epoch, args.epochs):
        progress.epoch = epoch
        loader.set_epoch(epoch)  # a resumed position takes precedence in its own epoch
        for x, y, index in loader:
            seen.setdefault(epoch, []).extend(index.tolist())
            loss = torch.nn.functional.mse_loss(model(x).squeeze(-1), y)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
            steps += 1
            if steps == args.stop_after:
                accelerator.save_state(args.state)
                break
        if steps == args.stop_after:
            break
    if args.record:
        write_record(args.record, accelerator.process_index, accelerator.num_processes,
                     {"train": seen})
    accelerator.end_training()


if __name__ == "__main__":
    main()
