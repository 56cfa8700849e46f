"""transformers' Trainer with gpufeed.DataLoader: a Trainer whose ``get_train_dataloader``
returns gpufeed's loader. The Trainer counts its steps from ``len(loader)``, calls
``loader.set_epoch`` each epoch, and moves each batch (a dict) to its device; gpufeed gives each
process its own share of every epoch from torch.distributed's process group. On a resume from a
mid-epoch checkpoint, the Trainer's ``skip_first_batches`` reads the rest of that epoch through
a torch DataLoader over ``loader.batch_sampler``: this process's share in gpufeed's order, with
a warning that gpufeed does not read that part itself.

    python with_transformers.py                               # one process
    torchrun --nproc_per_node 2 with_transformers.py          # two, on the CPU
    python with_transformers.py --stop-after 5 --output out/  # a checkpoint at step 5, stop
    python with_transformers.py --resume out/checkpoint-5     # go on from there

``--record DIR`` writes, for each process, which samples each epoch read (the tests read it).
"""

import torch
from points import Points, example_arguments, write_record
from transformers import Trainer, TrainerCallback, TrainingArguments

import gpufeed


class Regressor(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(8, 1)
        self.seen = []  # (epoch, sample index) of each sample trained on
        self.epoch = 0

    def forward(self, x, labels, index):
        self.seen.extend((self.epoch, i) for i in index.tolist())
        return {"loss": torch.nn.functional.mse_loss(self.net(x).squeeze(-1), labels)}


class GpufeedTrainer(Trainer):
    def get_train_dataloader(self):
        # Was: the Trainer's own torch DataLoader over self.train_dataset.
        return gpufeed.DataLoader(self.train_dataset, batch_size=self.args.train_batch_size,
                                  shuffle=True, num_workers=self.args.dataloader_num_workers)


class Epochs(TrainerCallback):
    """Tells the model which epoch it trains in (for --record), and stops after --stop-after
    steps once their checkpoint is saved."""

    def __init__(self, model, stop_after):
        self.model, self.stop_after = model, stop_after

    def on_epoch_begin(self, args, state, control, **kwargs):
        self.model.epoch = int(state.epoch or 0)

    def on_step_end(self, args, state, control, **kwargs):
        if self.stop_after and state.global_step == self.stop_after:
            control.should_save = True
            control.should_training_stop = True


def main():
    parser = example_arguments(__doc__.split("\n")[0],
                               "save a checkpoint after this many steps, and stop")
    parser.add_argument("--output", default="trainer-output")
    parser.add_argument("--resume", help="a checkpoint folder to resume from")
    args = parser.parse_args()

    torch.set_num_threads(1)
    model = Regressor()
    training = TrainingArguments(
        output_dir=args.output, per_device_train_batch_size=args.batch_size,
        num_train_epochs=args.epochs, dataloader_num_workers=args.workers, use_cpu=True,
        report_to="none", save_strategy="no", logging_strategy="no", disable_tqdm=True,
        learning_rate=0.01)
    trainer = GpufeedTrainer(model=model, args=training,
                             train_dataset=Points(args.samples, as_dict=True),
                             callbacks=[Epochs(model, args.stop_after)])
    trainer.train(resume_from_checkpoint=args.resume)
    if args.record:
        seen = {}
        for epoch, index in model.seen:
            seen.setdefault(epoch, []).append(index)
        write_record(args.record, training.process_index, training.world_size, {"train": seen})


if __name__ == "__main__":
    main()
