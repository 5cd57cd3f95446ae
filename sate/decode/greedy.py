"""Batched greedy decoding with the decoder's incremental cache: one argmax per step for a whole batch.

Used for validation BLEU during training, and as beam search's `--beam 1` fast path. Each utterance
stops at its own eos or at `max_len_ratio x` its encoder length, whichever comes first.
"""

from __future__ import annotations

import math

import torch
from espnet.nets.pytorch_backend.transformer.mask import subsequent_mask

from sate.models.base import SateModel


def encode_for_decoding(model: SateModel, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """memory (B, T, D) and memory_lengths (B,) of an MT batch (src) or a speech batch (feats)."""
    if model.task == "mt":
        return model.encode_text(batch["src"], batch["src_lengths"])
    enc = model.encode(batch["feats"], batch["feats_lengths"])
    return enc.memory, enc.memory_lengths


@torch.no_grad()
def greedy_decode(model: SateModel, batch: dict, max_len_ratio: float = 1.5) -> list[list[int]]:
    """Target token ids (without sos/eos) for every utterance of `batch`."""
    was_training = model.training
    model.eval()
    try:
        memory, lengths = encode_for_decoding(model, batch)
        return greedy_from_memory(model.decoder, memory, lengths, model.eos, max_len_ratio)
    finally:
        model.train(was_training)


def greedy_from_memory(decoder: torch.nn.Module, memory: torch.Tensor, lengths: torch.Tensor, eos: int,
                       max_len_ratio: float) -> list[list[int]]:
    batch, frames, _ = memory.shape
    device = memory.device
    memory_mask = (torch.arange(frames, device=device)[None, :] < lengths[:, None]).unsqueeze(1)
    limits = [max(1, math.ceil(max_len_ratio * int(n))) for n in lengths]
    ys = torch.full((batch, 1), eos, dtype=torch.long, device=device)
    finished = torch.zeros(batch, dtype=torch.bool, device=device)
    out: list[list[int]] = [[] for _ in range(batch)]
    cache = None
    for step in range(max(limits)):
        tgt_mask = subsequent_mask(ys.size(1), device=device).unsqueeze(0)
        logp, cache = decoder.forward_one_step(ys, tgt_mask, memory, memory_mask, cache=cache)
        best = logp.argmax(-1)
        for b in range(batch):
            if not finished[b]:
                token = int(best[b])
                if token == eos or step + 1 >= limits[b]:
                    finished[b] = True
                if token != eos:
                    out[b].append(token)
        best = best.masked_fill(finished, eos)
        ys = torch.cat([ys, best[:, None]], dim=1)
        if bool(finished.all()):
            break
    return out
