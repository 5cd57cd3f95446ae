"""The LightningModule shared by the three tasks: loss, fault handling, validation metrics, optimizer.

Lightning owns the loop, devices, precision, accumulation and checkpoint files. This module adds what
speech translation needs: SpecAugment on train batches only (optionally from a given step on), batches
with a NaN/inf loss or a CUDA out-of-memory error in the forward pass skipped and counted (DDP-safe),
CTC greedy WER and greedy BLEU at validation, and RNG states saved in checkpoints so a resumed
run draws the same random numbers as an uninterrupted one.
"""

from __future__ import annotations

import logging
import random

import editdistance
import lightning as L
import numpy as np
import torch
from torch import nn

from sate.data.specaug import SpecAugment
from sate.data.vocab import Vocabulary
from sate.errors import SateError
from sate.models import ctc_greedy
from sate.train.schedule import inverse_sqrt_schedule

log = logging.getLogger("sate.train")


class FaultCounter:
    """Counts skipped batches; too many non-finite losses in a row means the run has diverged."""

    def __init__(self, max_in_row: int) -> None:
        self.max_in_row = max_in_row
        self.nonfinite = self.oom = self.in_row = 0

    def ok(self) -> None:
        self.in_row = 0

    def nonfinite_loss(self, ids: list[str]) -> None:
        self.nonfinite += 1
        self.in_row += 1
        log.warning("non-finite loss: batch skipped (%d so far, %d in a row); ids %s",
                    self.nonfinite, self.in_row, ", ".join(ids[:4]))
        if self.in_row >= self.max_in_row:
            raise SateError(f"{self.in_row} batches in a row had a non-finite loss (trainer.nan_patience="
                            f"{self.max_in_row}): training diverged; lower optim.lr or check the data")

    def out_of_memory(self, shapes: dict[str, tuple[int, ...]]) -> None:
        self.oom += 1
        log.warning("CUDA out of memory: batch skipped (%d so far); shapes %s", self.oom, shapes)


class SateModule(L.LightningModule):
    """Wraps an ASR, MT or SATE model built by `sate.models`."""

    def __init__(self, config: dict, model: nn.Module, src_vocab: Vocabulary, tgt_vocab: Vocabulary) -> None:
        super().__init__()
        self.config = config
        self.task = config["task"]
        self.model = model
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        spec = config["specaug"]
        self.specaug = None if not spec.get("enabled", True) or self.task == "mt" else SpecAugment(
            **{k: v for k, v in spec.items() if k not in ("enabled", "start_step")})
        self.specaug_start = int(spec.get("start_step", 0))
        self.faults = FaultCounter(int(config["trainer"]["nan_patience"]))
        self._update_has_good_batch = False
        self._val: dict[str, list] = {}

    # ------------------------------------------------------------------ training
    def _batch_shapes(self, batch: dict) -> dict[str, tuple[int, ...]]:
        return {k: tuple(v.shape) for k, v in batch.items() if isinstance(v, torch.Tensor)}

    def training_step(self, batch: dict, batch_idx: int) -> torch.Tensor:
        if self.specaug is not None and self.global_step >= self.specaug_start:
            batch = dict(batch)
            batch["feats"], batch["feats_lengths"] = self.specaug(batch["feats"], batch["feats_lengths"])
        out: dict | None = None
        try:
            out = self.model(batch)
        except torch.OutOfMemoryError:
            self.faults.out_of_memory(self._batch_shapes(batch))
            torch.cuda.empty_cache()
        if out is None or not bool(torch.isfinite(out["loss"]).item()):
            if out is not None:
                self.faults.nonfinite_loss(batch["ids"])
            self.log_dict({"train/skipped_nonfinite": float(self.faults.nonfinite),
                           "train/skipped_oom": float(self.faults.oom)})
            return self._zero_loss()
        self.faults.ok()
        self._update_has_good_batch = True
        stats = {f"train/{k}": float(v) for k, v in out.items() if k != "loss" and _is_scalar(v)}
        self.log("train/loss", out["loss"].detach(), prog_bar=True, batch_size=len(batch["ids"]))
        self.log_dict(stats, batch_size=len(batch["ids"]))
        self.log("lr", self.trainer.optimizers[0].param_groups[0]["lr"], prog_bar=True)
        return out["loss"]

    def _zero_loss(self) -> torch.Tensor:
        """A loss whose gradient is exactly zero for every parameter: a skipped batch adds nothing, yet
        every rank still runs backward, so DDP's gradient all-reduce never waits for a missing rank."""
        return sum((p * 0.0).sum() for p in self.model.parameters() if p.requires_grad)

    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None:
        """An update whose every batch was skipped, on every rank, must not move the weights: with zero
        gradients Adam would still step along its momentum, so this update runs at lr 0 (the scheduler
        sets the lr again right after)."""
        all_skipped = self.trainer.strategy.reduce_boolean_decision(not self._update_has_good_batch, all=True)
        if all_skipped:
            for group in optimizer.param_groups:
                group["lr"] = 0.0
        self._update_has_good_batch = False

    # ------------------------------------------------------------------ validation
    def on_validation_epoch_start(self) -> None:
        self._val = {"wer_errors": [], "wer_words": [], "hyps": [], "refs": []}

    def validation_step(self, batch: dict, batch_idx: int) -> None:
        size = len(batch["ids"])
        out = self.model(batch)
        self.log("valid/loss", out["loss"], prog_bar=True, sync_dist=True, batch_size=size)
        self.log_dict({f"valid/{k}": float(v) for k, v in out.items() if k != "loss" and _is_scalar(v)},
                      sync_dist=True, batch_size=size)
        enc = None
        if self.task in ("asr", "st"):
            enc = self.model.encode(batch["feats"], batch["feats_lengths"])
            for ids, ref in zip(ctc_greedy(enc.ctc_logits, enc.ctc_lengths), _unpad(batch["src"]), strict=True):
                hyp_words, ref_words = self.src_vocab.decode(ids).split(), self.src_vocab.decode(ref).split()
                self._val["wer_errors"].append(editdistance.eval(hyp_words, ref_words))
                self._val["wer_words"].append(len(ref_words))
        limit = int(self.config["trainer"]["valid_bleu_utts"])
        if self.task in ("mt", "st") and len(self._val["hyps"]) < limit:
            from sate.decode.beam_search import DecodeOptions, beam_search, decode_memory

            greedy = DecodeOptions(beam=1, max_len_ratio=float(self.config["trainer"]["valid_max_len_ratio"]))
            if enc is not None:  # st: the encoding the WER used, not a second encoder pass
                nbest = decode_memory(self.model.decoder, enc.memory, enc.memory_lengths, self.model.eos, greedy)
            else:
                nbest = beam_search(self.model, batch, greedy)
            for hyps, ref in zip(nbest, _unpad(batch["tgt"]), strict=True):
                self._val["hyps"].append(self.tgt_vocab.decode(hyps[0].tokens))
                self._val["refs"].append(self.tgt_vocab.decode(ref))

    def on_validation_epoch_end(self) -> None:
        if self._val["wer_words"]:
            totals = torch.tensor([sum(self._val["wer_errors"]), sum(self._val["wer_words"])], dtype=torch.float64,
                                  device=self.device)
            totals = self.trainer.strategy.reduce(totals, reduce_op="sum")
            self.log("valid/wer", float(100 * totals[0] / max(totals[1], 1)), prog_bar=True, rank_zero_only=True)
        if self._val["hyps"]:
            import sacrebleu

            limit = int(self.config["trainer"]["valid_bleu_utts"])
            bleu = sacrebleu.corpus_bleu(self._val["hyps"][:limit], [self._val["refs"][:limit]])
            # Every rank scores its own share of the first utterances; the mean is close enough for selection.
            score = self.trainer.strategy.reduce(torch.tensor(bleu.score, device=self.device), reduce_op="mean")
            self.log("valid/bleu", float(score), prog_bar=True)

    # ------------------------------------------------------------------ optimisation
    def configure_optimizers(self) -> dict:
        optim = self.config["optim"]
        params = [p for p in self.model.parameters() if p.requires_grad]
        optimizer = torch.optim.Adam(params, lr=float(optim["lr"]), betas=tuple(optim["betas"]),
                                     weight_decay=float(optim["weight_decay"]))
        scheduler = inverse_sqrt_schedule(optimizer, int(optim["warmup_steps"]))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

    # ------------------------------------------------------------------ checkpoints
    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """The model file header (`model_meta`) plus what `sate average` and resuming need."""
        from sate.models import model_meta

        checkpoint["sate"] = {
            **model_meta(self.model, self.src_vocab.tokens, self.tgt_vocab.tokens),
            "train_config": self.config,
            "epoch": self.current_epoch, "step": self.global_step,
            "metrics": {k: float(v) for k, v in self.trainer.callback_metrics.items() if _is_scalar(v)},
            "faults": {"nonfinite": self.faults.nonfinite, "oom": self.faults.oom},
            "rng": {"torch": torch.get_rng_state(), "numpy": _numpy_state(), "python": _python_state()},
        }

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        saved = checkpoint.get("sate", {})
        faults = saved.get("faults", {})
        self.faults.nonfinite, self.faults.oom = faults.get("nonfinite", 0), faults.get("oom", 0)
        rng = saved.get("rng")
        if rng:
            torch.set_rng_state(rng["torch"])
            np.random.set_state(_numpy_restore(rng["numpy"]))
            random.setstate(_python_restore(rng["python"]))


def _is_scalar(value: object) -> bool:
    return isinstance(value, float | int) or (isinstance(value, torch.Tensor) and value.numel() == 1)


def _unpad(ids: torch.Tensor) -> list[list[int]]:
    return [[int(t) for t in row if t >= 0] for row in ids]


def _numpy_state() -> dict:
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    return {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
            "has_gauss": int(has_gauss), "gauss": float(gauss)}


def _numpy_restore(state: dict) -> tuple:
    return (state["name"], state["keys"].numpy().astype(np.uint32), state["pos"], state["has_gauss"], state["gauss"])


def _python_state() -> dict:
    version, internal, gauss = random.getstate()
    return {"version": version, "internal": torch.tensor(internal, dtype=torch.int64), "gauss": gauss}


def _python_restore(state: dict) -> tuple:
    return (state["version"], tuple(int(x) for x in state["internal"]), state["gauss"])
