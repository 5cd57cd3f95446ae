"""Weights one part shares with another: the tied decoder embedding, and one joint vocabulary.

``decoder.tie_embeddings`` makes the decoder's output projection and input embedding one tensor;
``adaptor.embedding: decoder`` has the soft adaptor multiply CTC posteriors (source ids) by the
decoder's embedding (target ids). Both are the authors' choices (fairseq's
``share-decoder-input-output-embed`` and a shared dictionary). Each brings a condition that no
weight shape shows, checked here so that it fails loudly.
"""

from __future__ import annotations

import torch

from sate.errors import SateError
from sate.models.config import ModelConfig, STConfig


def tied_problems(module: torch.nn.Module, theirs: dict[str, torch.Tensor]) -> list[str]:
    """Weights that are one tensor in `module` but differ in a checkpoint's state `theirs`.

    load_state_dict would copy both into the one tensor, the last silently winning.
    """
    names: dict[int, list[str]] = {}
    for name, param in module.named_parameters(remove_duplicate=False):
        names.setdefault(id(param), []).append(name)
    problems = []
    for group in names.values():
        present = [n for n in group if n in theirs]
        if len(present) > 1 and not all(torch.equal(theirs[present[0]], theirs[n]) for n in present[1:]):
            problems.append(f"{' and '.join(present)} are one tensor here (decoder.tie_embeddings) "
                            "but differ in the checkpoint")
    return problems


def check_joint_vocabulary(conf: ModelConfig, src_tokens: list[str], tgt_tokens: list[str]) -> None:
    """With adaptor.embedding decoder, CTC's ids index the decoder's embedding: the token lists must be one."""
    if not isinstance(conf, STConfig) or src_tokens == tgt_tokens:
        return
    if not conf.adaptor.kind.soft or conf.adaptor.embedding != "decoder":
        return
    if conf.textual.type == "hf_marian":
        return  # CTC ids reach Marian's embedding through the model's marian_ids (sate.models.hub.load)
    first = next((i for i, (a, b) in enumerate(zip(src_tokens, tgt_tokens, strict=False)) if a != b),
                 min(len(src_tokens), len(tgt_tokens)))
    raise SateError(f"adaptor.embedding decoder needs one joint vocabulary (sate vocab --joint SIZE), but the "
                    f"source ({len(src_tokens)} tokens) and target ({len(tgt_tokens)}) token lists differ, "
                    f"first at index {first}")
