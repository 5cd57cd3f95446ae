"""The LightningModule shared by the three tasks: loss, fault handling, validation metrics, optimizer.

Lightning owns the loop, devices, precision, accumulation and checkpoint files. This module adds what
speech translation needs: SpecAugment on train batches only (optionally from a given step on); batches
with a NaN/inf loss skipped, and updates that run out of memory anywhere skipped on every rank
(`sate.train.faults`); gradients all-reduced by hand once per update under DDP, after every rank has
finished its backward pass and all have agreed whether to apply it, so no rank can be left waiting in a
collective by a failed backward; CTC greedy WER and greedy BLEU at validation; and per-rank RNG states,
the run id and the model file header in every checkpoint.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from typing import Any

import editdistance
import lightning as L
import torch
from lightning.pytorch.strategies import ParallelStrategy
from torch import nn

from sate.data.sampler import BucketBatchSampler
from sate.data.specaug import SpecAugment
from sate.data.vocab import Vocabulary
from sate.errors import SateError, one_line
from sate.models import ctc_greedy
from sate.train.data import batch_unit
from sate.train.faults import FaultCounter, batch_cost, lower_lr, release_memory
from sate.train.rng import RngState, gather_rng_states, set_rng_state
from sate.train.schedule import SkippableAdam, inverse_sqrt_schedule
from sate.train.schema import TrainingConfig

log = logging.getLogger("sate.train")
SYNC_BUCKET = 2**24  # gradient elements per all-reduce


class SateModule(L.LightningModule):
    """Wraps an ASR, MT or SATE model built by `sate.models`."""

    def __init__(self, config: TrainingConfig, model: nn.Module, src_vocab: Vocabulary, tgt_vocab: Vocabulary,
                 run_id: str = "", cmvn: dict[str, list[float]] | None = None,
                 teachers: dict[str, str] | None = None, per_device: int | None = None,
                 lr_where: str = "the config", began_init: dict | None = None) -> None:
        """`cmvn`: the global CMVN statistics the features are normalised with, `teachers` the fingerprints of
        the frozen `loss.kd` teachers (`sate.train.resume.teacher_prints`), recorded in every checkpoint, and
        `per_device` the batch cap in use when the batch plan lowered batch.per_device (for the OOM advice),
        `lr_where` where a diverged run lowers optim.lr (`sate.train.trainer.lr_where`), `began_init` the init:
        section the run began with (`sate.train.trainer.began_init`), recorded in every checkpoint."""
        super().__init__()
        self.config = config
        self.task = config.task
        self.model = model
        self.run_id = run_id
        self.began_init = began_init
        self.cmvn = cmvn
        self.teachers = teachers or {}
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        spec = config.specaug
        self.specaug = None if not spec.enabled or self.task == "mt" else SpecAugment(
            spec.freq_mask_width, spec.num_freq_masks, spec.time_mask_width, spec.num_time_masks, spec.max_time_ratio)
        self.specaug_start = spec.start_step
        tconf = config.trainer
        self.faults = FaultCounter(tconf.nan_patience, tconf.oom_patience, batch_unit(self.task, config.data.features),
                                   per_device or config.batch.per_device, config.optim.lr, lr_where)
        self._update_has_good_batch = False
        self._update_oom = False
        self._step_oom = False
        self._skipped_update = False
        self._pending_rng: RngState | None = None
        self._resumed = False
        self._validated_step: int | None = None  # the update of the last validation, recorded in checkpoints
        self._update_buffers: list[torch.Tensor] | None = None  # buffers when this update began
        self._val: dict[str, list] = {}
        self._val_places: list[tuple[int, bool]] = []  # this rank's validation batches in the epoch (under DDP)
        self._came_in_finite = True

    # ------------------------------------------------------------------ training
    def _batch_shapes(self, batch: dict) -> dict[str, tuple[int, ...]]:
        return {k: tuple(v.shape) for k, v in batch.items() if isinstance(v, torch.Tensor)}

    def _out_of_memory(self, where: str, batch: dict | None = None) -> None:
        self._update_oom = True
        self.faults.out_of_memory(where, f"shapes {self._batch_shapes(batch)}" if batch else "")

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        if self.specaug is not None and self.global_step >= self.specaug_start:
            batch = dict(batch)
            batch["feats"], batch["feats_lengths"] = self.specaug(batch["feats"], batch["feats_lengths"])
        self.faults.batch(batch_cost(batch, self.task))
        before = [b.detach().clone() for b in self.model.buffers()]  # BatchNorm statistics, before this batch
        if self._update_buffers is None:
            self._update_buffers = before
        out: dict | None = None
        oom = False
        try:
            out = self.model(batch)
        except torch.OutOfMemoryError:
            oom = True
        if oom:
            self._out_of_memory("forward pass", batch)
            release_memory()
        if out is None or not bool(torch.isfinite(out["loss"]).item()):
            self._restore_buffers(before)  # a skipped batch leaves no trace, not even in running statistics
            if out is not None:
                self.faults.nonfinite_loss(batch["ids"])
            self.log_dict({"train/skipped_nonfinite": float(self.faults.nonfinite),
                           "train/skipped_oom": float(self.faults.oom)})
            return self._zero_loss()
        self.faults.ok()
        self._update_has_good_batch = True
        stats = {f"train/{k}": float(v) for k, v in out.items() if k != "loss" and _is_scalar(v)}
        self.log("train/loss", out["loss"].detach().float(), prog_bar=True, batch_size=len(batch["ids"]))
        self.log_dict(stats, batch_size=len(batch["ids"]))
        self.log("lr", self.trainer.optimizers[0].param_groups[0]["lr"], prog_bar=True)
        return out["loss"]

    def _restore_buffers(self, saved: list[torch.Tensor] | None) -> None:
        if saved is not None:
            with torch.no_grad():
                for buffer, value in zip(self.model.buffers(), saved, strict=True):
                    buffer.copy_(value)

    def _zero_loss(self) -> torch.Tensor:
        """A loss whose gradient is exactly zero for every parameter: a skipped batch adds nothing."""
        return sum((p * 0.0).sum() for p in self.model.parameters() if p.requires_grad)

    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        oom = False
        try:
            super().backward(loss, *args, **kwargs)
        except torch.OutOfMemoryError:
            oom = True
        if oom:
            self._out_of_memory("backward pass")
            release_memory()

    def optimizer_step(self, epoch: int, batch_idx: int, optimizer: Any,
                       optimizer_closure: Callable[[], Any] | None = None) -> None:
        """The update, with DDP's own gradient sync off: `on_before_optimizer_step` syncs by hand."""
        strategy = self.trainer.strategy
        no_sync = strategy.block_backward_sync() if isinstance(strategy, ParallelStrategy) else contextlib.nullcontext()
        self._step_oom = False
        with no_sync:
            optimizer.step(closure=optimizer_closure)
        step_oom = self._step_oom
        if self.trainer.world_size > 1 and strategy.reduce_boolean_decision(step_oom, all=False):
            raise SateError("out of memory in the optimizer's update under DDP: the ranks' weights may now differ, "
                            "so the run stops; resume it (from the last checkpoint) with a smaller batch.per_device")
        self.faults.update_done(self._update_oom or step_oom)
        self._update_oom = False
        self._update_buffers = None

    def _optimizer_oom(self) -> None:
        self._step_oom = True
        self._skipped_update = True  # nor does the scheduler step
        self._restore_buffers(self._update_buffers)
        self.faults.out_of_memory("optimizer step", "")
        release_memory()

    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        """Agree on every rank whether this update applies, then (under DDP) average the gradients.

        An update is skipped when any rank ran out of memory in it, or when every batch of it, on every
        rank, was skipped: gradients cleared, no optimizer or scheduler step, Adam's state untouched."""
        world = self.trainer.world_size
        flags = torch.tensor([float(self._update_oom), float(not self._update_has_good_batch),
                              float(self.faults.diverged)], device=self.device)
        if world > 1:
            torch.distributed.all_reduce(flags)
        if flags[2] > 0:
            raise self.faults.diverged_error()
        self._update_oom = bool(flags[0] > 0)
        skip = self._update_oom or bool(flags[1] >= world)
        self._update_has_good_batch = False
        self._skipped_update = skip
        params = [p for p in self.model.parameters() if p.requires_grad]
        if skip:
            self._restore_buffers(self._update_buffers)
            for p in params:
                p.grad = None
            if isinstance(optimizer, SkippableAdam):
                optimizer.skip_update = True
        elif world > 1:
            _all_reduce_mean(params, world)
        if world > 1:  # what DDP does before a forward pass that syncs: every rank takes rank 0's buffers
            for buffer in self.model.buffers():
                torch.distributed.broadcast(buffer, src=0)

    def lr_scheduler_step(self, scheduler: Any, metric: Any = None) -> None:
        if not self._skipped_update:  # a skipped update leaves the schedule where it was, as Adam's state
            scheduler.step()

    # ------------------------------------------------------------------ validation
    def on_validation_epoch_start(self) -> None:
        self._val = {"wer_errors": [], "wer_words": [], "hyps": [], "refs": []}
        # validation batches of a finite loss, in all, and of a NaN loss met while valid/bleu still took utterances
        self._val_batches = [0, 0, 0]
        self._val_places = self._validation_places()
        self._check_weights_finite()

    def _validation_places(self) -> list[tuple[int, bool]]:
        """Where each validation batch of this rank stands in the validation epoch (`rank_places`): the items
        before it, and whether it repeats one another rank validates. None in one process (each batch follows the
        one before), or where the loader is not sate's."""
        trainer = self._trainer
        if trainer is None or trainer.world_size == 1:
            return []
        sampler = getattr(trainer.val_dataloaders, "batch_sampler", None)
        return sampler.rank_places() if isinstance(sampler, BucketBatchSampler) else []

    def _nonfinite_parameter(self) -> str | None:
        return next((name for name, p in self.model.named_parameters() if not bool(torch.isfinite(p).all())), None)

    def _check_weights_finite(self) -> None:
        """Stop a run whose weights are NaN or infinite before validation decodes with them and a checkpoint keeps
        them: decoding then failed with a line about the model, not about the run (optim.lr 1e300 makes them so
        in one update from a finite loss)."""
        bad = self._nonfinite_parameter()
        if bad is None:
            return
        if not self._came_in_finite:  # every update since was skipped on a NaN loss
            raise SateError(f"the weights hold NaN or infinite values ({bad}) since this run began: "
                            f"{self._starting_points()} holds them")
        raise SateError(f"the weights after update {self.global_step:,} hold NaN or infinite values ({bad}): "
                        f"training diverged; {lower_lr(self.config.optim.lr, self.faults.lr_where)}")

    def _check_loss_finite(self) -> tuple[int, int, int]:
        """Stop a run whose validation loss is NaN or infinite on every batch, of every rank: its weights are finite
        but out of range (optim.lr 1e30), so an ASR run trained on, exit 0, every checkpoint of NaN loss, and an
        ST or MT run stopped in validation's greedy decoding on a line about decoding (31st hostile pass). Returns
        the batches of a finite loss, in all, and of a NaN loss before valid/bleu's cap, over every rank."""
        counts = torch.tensor(self._val_batches, dtype=torch.float64, device=self.device)
        counts = self.trainer.strategy.reduce(counts, reduce_op="sum")
        if counts[1] == 0 or counts[0] > 0:
            return int(counts[0]), int(counts[1]), int(counts[2])
        said = f"the validation loss is NaN or infinite on each of its {int(counts[1]):,} batch(es)"
        if not self.global_step:
            raise SateError(f"{said} before any update: {self._starting_points()} gives weights out of range")
        raise SateError(f"{said} after update {self.global_step:,}, though the weights are finite: they grew out of "
                        f"range, training diverged; {lower_lr(self.config.optim.lr, self.faults.lr_where)}")

    def _starting_points(self) -> str:
        """The files this run's weights came from, as the NaN line names them: it said "the checkpoint it started
        from (an init: path, or the one it resumed)", naming none (eighteenth hostile pass)."""
        resumed = getattr(self.trainer, "ckpt_path", None) if self._trainer is not None else None
        if resumed:
            return f"the checkpoint it resumed, {one_line(str(resumed))},"
        paths = [f"init.{name}.path {one_line(str(entry['path']))}" for name, entry in self.config.init.items()
                 if isinstance(entry, dict) and entry.get("path")]
        return f"the checkpoint it started from ({', '.join(paths)})" if paths else "the model it started from"

    def validation_step(self, batch: dict, batch_idx: int) -> None:
        # a repeat (the padding that gives each rank as many batches) runs its forward pass, as DDP's collectives
        # need, and counts for nothing: its items were counted twice in valid/loss, valid/wer and valid/bleu
        place = self._val_places[batch_idx] if batch_idx < len(self._val_places) else None
        repeat = place is not None and place[1]
        # a float: Lightning sums an int batch size in an int tensor, which its mean over ranks truncates, so the
        # ranks' 3 and 2 utterances made a mean of 2 and valid/loss was divided by 4 utterances where 5 were summed
        size = 0.0 if repeat else float(len(batch["ids"]))
        out = self.model(batch)
        self.log("valid/loss", out["loss"], prog_bar=True, sync_dist=True, batch_size=size)
        self.log_dict({f"valid/{k}": float(v) for k, v in out.items() if k != "loss" and _is_scalar(v)},
                      sync_dist=True, batch_size=size)
        if repeat:
            return
        self._val_batches[1] += 1
        # how many of this batch's utterances valid/bleu scores: the first trainer.valid_bleu_utts of the validation
        # epoch, told under DDP by the batch's place in it (each rank scored its own first ones: twice as many over
        # two ranks, the thirty-third hostile pass), in one process by the utterances decoded so far
        bleu = self.config.trainer.valid_bleu_utts - (place[0] if place is not None else len(self._val["hyps"]))
        if not bool(torch.isfinite(out["loss"]).item()):  # nothing to decode: `_check_loss_finite` says why
            self._val_batches[2] += self.task in ("mt", "st") and bleu > 0
            return
        self._val_batches[0] += 1
        enc = None
        if self.task in ("asr", "st"):
            enc = self.model.encode(batch["feats"], batch["feats_lengths"])
            for ids, ref in zip(ctc_greedy(enc.ctc_logits, enc.ctc_lengths), _unpad(batch["src"]), strict=True):
                hyp_words, ref_words = self.src_vocab.decode(ids).split(), self.src_vocab.decode(ref).split()
                self._val["wer_errors"].append(editdistance.eval(hyp_words, ref_words))
                self._val["wer_words"].append(len(ref_words))
        if self.task in ("mt", "st") and bleu > 0:
            from sate.decode.beam_search import DecodeOptions, beam_search, decode_memory

            greedy = DecodeOptions(beam=1, max_len_ratio=self.config.trainer.valid_max_len_ratio)
            if enc is not None:  # st: the encoding the WER used, not a second encoder pass
                nbest = decode_memory(self.model.decoder, enc.memory, enc.memory_lengths, self.model.eos, greedy)
            else:
                nbest = beam_search(self.model, batch, greedy)
            for hyps, ref in list(zip(nbest, _unpad(batch["tgt"]), strict=True))[:bleu]:
                self._val["hyps"].append(self.tgt_vocab.decode(hyps[0].tokens))
                self._val["refs"].append(self.tgt_vocab.decode(ref))

    def on_validation_epoch_end(self) -> None:
        finite, batches, before_bleu = self._check_loss_finite()
        # the batches of a NaN loss are not decoded (nothing to decode): valid/wer and valid/bleu were over the others
        # without a word, and a monitor on them could prefer an epoch whose worst batches diverged (review31t). BLEU
        # scores the first valid_bleu_utts utterances alone: a NaN batch after them leaves it as it was (review32k).
        # Told by the counts of every rank, not rank 0's lists.
        limit = self.config.trainer.valid_bleu_utts
        said = [f"valid/wer is over the other {finite:,} batch(es) alone"] if self.task in ("asr", "st") else []
        if before_bleu:
            said.append(f"valid/bleu scores the first {limit:,} utterance(s) (trainer.valid_bleu_utts) of the other "
                        "batches alone")
        elif said and self.task == "st" and limit > 0:
            said.append(f"valid/bleu is as it would be: the first {limit:,} utterance(s) it scores "
                        "(trainer.valid_bleu_utts) came before them")
        if finite < batches and said and self.trainer.is_global_zero:
            # as the skipped training batches are said (`FaultCounter`): on standard error, not into the progress bar
            log.warning("note: the validation after update %s: the loss is NaN or infinite on %s of its %s batches, "
                        "which are not decoded; %s", f"{self.global_step:,}", f"{batches - finite:,}", f"{batches:,}",
                        "; ".join(said))
        # the metrics a checkpoint records are this validation's until the next: `sate average --best` ranks by them
        # only a checkpoint of this update (max_steps ending a run inside an epoch saved one after it, unvalidated)
        self._validated_step = int(self.global_step)
        if self.task in ("asr", "st"):
            # a collective: every rank sums, one whose batches all had a NaN loss (nothing scored) too; that rank
            # skipped it and the run hung, its BLEU sum paired with the others' WER sum (review32c)
            totals = torch.tensor([sum(self._val["wer_errors"]), sum(self._val["wer_words"]),
                                   len(self._val["wer_words"])], dtype=torch.float64, device=self.device)
            totals = self.trainer.strategy.reduce(totals, reduce_op="sum")
            if totals[2] > 0:
                # the same on every rank (of the sums of all): synced, as valid/bleu, for Lightning's warning
                self.log("valid/wer", float(100 * totals[0] / max(totals[1], 1)), prog_bar=True, sync_dist=True)
        if self.task in ("mt", "st") and limit > 0:
            score = self._corpus_bleu(self._val["hyps"][:limit], self._val["refs"][:limit])
            if score is not None:
                # every rank's score is the one of all their sums, so a mean over them changes nothing: logged
                # without it (valid/wer: rank_zero_only), Lightning warned at each validation of a DDP run to log
                # it with sync_dist=True
                self.log("valid/bleu", score, prog_bar=True, sync_dist=True)

    def _corpus_bleu(self, hyps: list[str], refs: list[str]) -> float | None:
        """sacreBLEU's corpus BLEU of every rank's hypotheses, from the sum of their sufficient statistics (n-gram
        matches and totals, lengths): under DDP it was the mean of each rank's corpus BLEU, which corpus BLEU is
        not (off by up to 1.9 BLEU, review32c). A collective: every rank calls it, one with nothing to score too.
        None where no rank had a hypothesis."""
        from sacrebleu.metrics import BLEU

        stats = [0] * 11  # matches and totals of orders 1 to 4, hypothesis and reference lengths, hypotheses
        if hyps:
            bleu = BLEU().corpus_score(hyps, [refs])
            stats = [*bleu.counts, *bleu.totals, bleu.sys_len, bleu.ref_len, len(hyps)]
        sums = self.trainer.strategy.reduce(torch.tensor(stats, dtype=torch.float64, device=self.device),
                                            reduce_op="sum")
        sums = [int(round(float(v))) for v in sums]
        if not sums[10]:
            return None
        return float(BLEU.compute_bleu(sums[:4], sums[4:8], sums[8], sums[9], smooth_method="exp").score)

    # ------------------------------------------------------------------ optimisation
    def configure_optimizers(self) -> dict:
        optim = self.config.optim
        params = [p for p in self.model.parameters() if p.requires_grad]
        # PyTorch's fused Adam: one kernel for all parameters, 2.7x faster than its loop on the CPU (about 2%
        # of a demo update). Not under mixed precision: Lightning's AMP plugin refuses to clip gradients for
        # an optimizer that would unscale them inside its step, as a fused one does with a GradScaler.
        optimizer = SkippableAdam(params, lr=optim.lr, betas=tuple(optim.betas), weight_decay=optim.weight_decay,
                                  fused=not self.trainer.precision.endswith("-mixed"))
        optimizer.on_oom = self._optimizer_oom
        scheduler = inverse_sqrt_schedule(optimizer, optim.warmup_steps)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    # ------------------------------------------------------------------ checkpoints
    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """The model file header (`model_meta`) plus what `sate average` and resuming need."""
        from sate.models import model_meta

        rng = gather_rng_states()  # a collective: Lightning calls this hook on every rank
        mid_epoch = self.trainer.training and not self.trainer.fit_loop.epoch_loop.batch_progress.is_last_batch
        checkpoint["sate"] = {
            **model_meta(self.model, self.src_vocab.tokens, self.tgt_vocab.tokens, self.cmvn,
                         None if self.task == "mt" else str(self.config.data.cmvn)),
            "train_config": self.config.to_dict(),  # a plain dict: checkpoints load with weights_only
            "run_id": self.run_id,
            "began_init": self.began_init,  # init is a safe key: train_config's is the last resume's, maybe none
            "teachers": dict(self.teachers),
            "epoch": self.current_epoch, "step": self.global_step, "mid_epoch": bool(mid_epoch),
            "metrics": {k: float(v) for k, v in self.trainer.callback_metrics.items() if _is_scalar(v)},
            "validated_step": self._validated_step,  # the update those valid/ metrics were measured at
            "faults": self.faults.state_dict(),
            "rng": rng[0], "rng_ranks": rng,
        }

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        saved = checkpoint.get("sate", {})
        self.faults.load_state_dict(saved.get("faults", {}))
        self._validated_step = saved.get("validated_step")
        ranks = saved.get("rng_ranks") or ([saved["rng"]] if saved.get("rng") else [])
        rank = self.trainer.global_rank if self._trainer is not None else 0
        # Applied when training starts, once Lightning has set everything up: nothing may draw in between.
        self._pending_rng = ranks[rank] if rank < len(ranks) else (ranks[0] if ranks else None)
        self._resumed = True

    def on_train_start(self) -> None:
        self._came_in_finite = self._nonfinite_parameter() is None  # weights loaded, no update yet
        if self._pending_rng is not None:
            set_rng_state(self._pending_rng)
            self._pending_rng = None

    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None:
        if self._resumed:
            # Lightning's count of updates for logging comes back off by one after some resumes (at an
            # epoch end, or with max_steps): a resumed run logs its first update at the step it makes.
            self.trainer.fit_loop.epoch_loop._batches_that_stepped = self.trainer.global_step
            self._resumed = False


def _all_reduce_mean(params: list[nn.Parameter], world: int) -> None:
    """Average gradients over ranks in flat buckets (a parameter without a gradient counts as zero)."""
    grads = []
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        grads.append(p.grad)
    bucket: list[torch.Tensor] = []
    size = 0
    for i, grad in enumerate(grads):
        bucket.append(grad)
        size += grad.numel()
        if size >= SYNC_BUCKET or i == len(grads) - 1:
            flat = torch.cat([g.reshape(-1) for g in bucket])
            torch.distributed.all_reduce(flat)
            flat /= world
            offset = 0
            for g in bucket:
                g.copy_(flat[offset:offset + g.numel()].view_as(g))
                offset += g.numel()
            bucket, size = [], 0


def _is_scalar(value: object) -> bool:
    return isinstance(value, float | int) or (isinstance(value, torch.Tensor) and value.numel() == 1)


def _unpad(ids: torch.Tensor) -> list[list[int]]:
    return [[int(t) for t in row if t >= 0] for row in ids]
