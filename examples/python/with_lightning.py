"""Lightning with gpufeed.DataLoader: each ``*_dataloader`` hook returns gpufeed's loader where
it returned torch's; nothing else changes. One process, or DDP (each rank reads its own share of
every epoch, decided by gpufeed from torch.distributed's process group), on the CPU or on GPUs.
Mid-epoch checkpoints resume at the batch that followed: Lightning saves the loader's
``state_dict()`` in the checkpoint and gives it back.

    python with_lightning.py                                   # fit, validate, test, predict
    python with_lightning.py --devices 2 --strategy ddp        # two ranks (GPUs where there are)
    python with_lightning.py --stop-after 5 --checkpoint c.ckpt   # stop mid-epoch, saved
    python with_lightning.py --resume c.ckpt                   # go on from there

``--record DIR`` writes, for each rank, which samples each stage read (the tests read it).
"""

import lightning as L
import torch
from points import Points, example_arguments, write_record

import gpufeed


class Regressor(L.LightningModule):
    def __init__(self, samples, batch_size, workers):
        super().__init__()
        self.net = torch.nn.Linear(8, 1)
        self.samples, self.batch_size, self.workers = samples, batch_size, workers
        self.seen = {}  # stage: {epoch: [sample indices]}

    def loader(self, shuffle):
        # Was: torch.utils.data.DataLoader(Points(...), batch_size=..., shuffle=...,
        # num_workers=...). On a GPU, gpufeed copies each batch to this rank's device itself
        # (Lightning's own transfer then has nothing to do).
        return gpufeed.DataLoader(Points(self.samples), batch_size=self.batch_size,
                                  shuffle=shuffle, num_workers=self.workers,
                                  device=self.device if self.device.type == "cuda" else None)

    def train_dataloader(self):
        return self.loader(shuffle=True)

    def val_dataloader(self):
        return self.loader(shuffle=False)

    def test_dataloader(self):
        return self.loader(shuffle=False)

    def predict_dataloader(self):
        return self.loader(shuffle=False)

    def _loss(self, batch, stage):
        x, y, index = batch
        if not self.trainer.sanity_checking:
            self.seen.setdefault(stage, {}).setdefault(self.current_epoch, []).extend(
                index.tolist())
        return torch.nn.functional.mse_loss(self.net(x).squeeze(-1), y)

    def training_step(self, batch, batch_idx):
        return self._loss(batch, "train")

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self._loss(batch, "validate"), sync_dist=True)

    def test_step(self, batch, batch_idx):
        self.log("test_loss", self._loss(batch, "test"), sync_dist=True)

    def predict_step(self, batch, batch_idx):
        self._loss(batch, "predict")
        return self.net(batch[0])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


class StopAfter(L.Callback):
    """Saves a checkpoint after `batches` training batches, then stops: a job preempted
    mid-epoch, whose next run resumes from that checkpoint."""

    def __init__(self, batches, path):
        self.batches, self.path = batches, path

    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if trainer.global_step == self.batches:
            trainer.save_checkpoint(self.path)
            trainer.should_stop = True


def main():
    parser = example_arguments(__doc__.split("\n")[0],
                               "save --checkpoint after this many training batches, and stop")
    parser.add_argument("--accelerator", default="auto", help="cpu, gpu or auto")
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--strategy", default="auto")
    parser.add_argument("--limit-train-batches", type=int, default=None)
    parser.add_argument("--limit-val-batches", type=int, default=None)
    parser.add_argument("--checkpoint", default="stopped.ckpt")
    parser.add_argument("--resume", help="a checkpoint to resume fit from")
    args = parser.parse_args()

    torch.set_num_threads(1)
    model = Regressor(args.samples, args.batch_size, args.workers)
    callbacks = [StopAfter(args.stop_after, args.checkpoint)] if args.stop_after else []
    trainer = L.Trainer(accelerator=args.accelerator, devices=args.devices, strategy=args.strategy,
                        max_epochs=args.epochs, limit_train_batches=args.limit_train_batches,
                        limit_val_batches=args.limit_val_batches,
                        callbacks=callbacks, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    trainer.fit(model, ckpt_path=args.resume)
    if not args.stop_after:
        trainer.validate(model, verbose=False)
        trainer.test(model, verbose=False)
        trainer.predict(model)
    if args.record:
        write_record(args.record, trainer.global_rank, trainer.world_size, model.seen)


if __name__ == "__main__":
    main()
