"""Filling a freshly built model from the hub directories its config names: loudly, and all or nothing.

`sate train` calls this before the ``init:`` section, for the parts ``init:`` does not fill (a SATE model
whose acoustic encoder comes from our ASR model does not read the wav2vec2 weights again). As with ``init:``,
a table says what went where, and any tensor that fits nowhere, any part left unfilled, any shape or token
mismatch stops the run before anything is loaded.

What each part gets:
- ``textual`` and ``decoder`` (hf_marian): the encoder and decoder blocks, the shared embedding (also the
  MT model's source embedding: one tensor), ``final_logits_bias`` as the output bias;
- ``src_embed`` of a SATE model: the Marian embedding's rows of its CTC tokens, after ``marian_ids`` is
  filled from the token lists;
- ``acoustic`` (hf_*): the whole torchaudio model; the projection to d_model is new, so it keeps its
  random initialisation (the table says so).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import torch

from sate.errors import SateError
from sate.models.base import SateModel
from sate.models.hub.files import hub_directory, read_weights
from sate.models.hub.marian import marian_name, split_marian_state
from sate.models.hub.settings import require_hub
from sate.models.hub.speech import hf_key_map, unused_key
from sate.models.hub.whisper_files import whisper_weights
from sate.models.model_file import fit_problems, name_list
from sate.models.pretrained import InitRow, format_table


def marian_ids(src_tokens: list[str], marian_tokens: list[str], pad_id: int) -> torch.Tensor:
    """Each CTC token's Marian id (``<blank>`` -> pad); a token Marian does not have is a `SateError`."""
    from sate.data.vocab import BLANK

    index = {piece: i for i, piece in enumerate(marian_tokens)}
    unknown = [t for t in src_tokens if t != BLANK and t not in index]
    if unknown:
        raise SateError(f"the source token list has {len(unknown)} tokens that the Marian vocabulary lacks, e.g. "
                        f"{', '.join(map(repr, unknown[:5]))}: write it with sate vocab --marian DIR")
    return torch.tensor([pad_id if t == BLANK else index[t] for t in src_tokens], dtype=torch.long)


def _fill(module: torch.nn.Module, state: dict[str, torch.Tensor], what: str, source: Path,
          name: Callable[[str], str]) -> tuple[int, list[str]]:
    """How many keys of `state` fit `module`, and the problems loading it exactly (missing, unexpected, shapes), each
    naming the file and its keys as `name` gives them (the file's own names where it has them): "textual: missing
    from the directory: encoders.0.feed_forward.w_1.bias" named neither the file nor a key it holds (30th hostile
    pass)."""
    labels = ("missing", "unexpected", "shape mismatch (file vs ours)")
    problems = [f"{source}: {what}: {p}" for p in fit_problems(module, state, labels, name)]
    return len(set(module.state_dict()) & set(state)), problems


def _marian_parts(model: SateModel, src_tokens: list[str], tgt_tokens: list[str], skip: Collection[str],
                  rows: list[InitRow], loads: list, notes: list[str]) -> list[str]:
    from sate.data.marian_vocab import marian_pieces

    conf = model.conf.textual
    hub, directory = require_hub(conf, "textual"), hub_directory(conf.path, "textual.path")
    pieces = marian_pieces(directory)
    problems = []
    if tgt_tokens != pieces:
        problems.append(f"the target token list ({len(tgt_tokens)} tokens) is not {directory}'s vocab.json "
                        f"({len(pieces)}): write the data's vocabulary with sate vocab --marian {directory}")
    if model.task == "mt" and src_tokens != pieces:
        problems.append(f"an MT model's source token list must be {directory}'s vocab.json")
    state, path = read_weights(directory)
    weights = split_marian_state(state, hub, str(path))
    notes += weights.notes
    base = "model." if any(key.startswith("model.") for key in state) else ""  # a MarianModel file's keys have none
    for component, module, part, prefix in (("textual", model.textual.encoder, weights.encoder, "encoder."),
                                            ("decoder", model.decoder, weights.decoder, "decoder.")):
        if component in skip:
            continue
        matched, found = _fill(module, part, component, path,
                               lambda key: marian_name(key, base, hub["tie_word_embeddings"]))
        problems += found
        rows.append(InitRow(component, str(path), base + prefix, matched, 0, 0, not found))
        loads.append(lambda module=module, part=part: module.load_state_dict(part))
    if model.task == "mt":
        notes.append("src_embed: the decoder's embedding (one tensor, as in Marian)")
    if model.task == "st":
        ids = marian_ids(src_tokens, pieces, hub["pad_token_id"]) if not problems else None
        loads.append(lambda: model.marian_ids.copy_(ids))
        if model.src_embed is not None and "src_embed" not in skip and ids is not None:
            rows.append(InitRow("src_embed", str(path), f"{base}shared.", 1, 0, 0, True))
            loads.append(lambda: model.src_embed.weight.copy_(weights.embedding[ids]))
            notes.append(f"src_embed: Marian's embedding rows of the {len(ids)} CTC tokens (<blank>: pad's row)")
    return problems


def _speech_part(model: SateModel, rows: list[InitRow], loads: list, notes: list[str]) -> list[str]:
    conf = model.conf.acoustic
    hub, directory = require_hub(conf, "acoustic"), hub_directory(conf.path, "acoustic.path")
    state, path = read_weights(directory, used=lambda name: not unused_key(name, hub))
    mapped, skipped, origin = hf_key_map(state, hub)
    target = model.acoustic.encoder.model
    theirs = {k.removeprefix("model."): v for k, v in mapped.items()}
    # the file's name of each of theirs' keys: one no rename matched is the file's own, with no "model." to strip
    # (it was looked up with one and called sate's name, fix30h)
    files = {key.removeprefix("model."): origin[key] for key in mapped}
    matched, problems = _fill(target, theirs, "acoustic", path, lambda key: files.get(key, f"{key} (sate's name)"))
    rows.append(InitRow("acoustic", str(path), "", matched, 0, len(skipped), not problems))
    if skipped:
        notes.append(f"acoustic: not used (other heads, pre-training): {name_list(skipped)}")
    notes.append(f"acoustic: proj ({hub['hidden_size']} -> {model.conf.d_model}) is new, randomly "
                 "initialised")
    loads.append(lambda: target.load_state_dict(theirs))
    return problems


def _whisper_part(model: SateModel, rows: list[InitRow], loads: list, notes: list[str]) -> list[str]:
    conf = model.conf.acoustic
    state, path = whisper_weights(hub_directory(conf.path, "acoustic.path"))
    target = model.acoustic.encoder.model
    matched, problems = _fill(target, state, "acoustic", path, lambda key: f"{key} (sate's name)")
    rows.append(InitRow("acoustic", str(path), "encoder", matched, 0, 0, not problems))
    notes.append(f"acoustic: Whisper's encoder only (its decoder is not used); proj ({target.sizes.d_model} -> "
                 f"{model.conf.d_model}) is new, randomly initialised; frozen: {conf.freeze}")
    loads.append(lambda: target.load_state_dict(state))
    return problems


def load_hub_parts(model: SateModel, src_tokens: list[str], tgt_tokens: list[str], skip: Collection[str] = (),
                   log: Callable[[str], None] = print) -> list[InitRow]:
    """Load every hub part of `model` (see the module docstring) except the components in `skip`."""
    conf = model.conf
    rows: list[InitRow] = []
    loads: list[Callable[[], Any]] = []  # run only when nothing failed
    notes: list[str] = []
    problems: list[str] = []
    acoustic = getattr(conf, "acoustic", None)
    if acoustic is not None and acoustic.kind.hub and "acoustic" not in skip:
        part = _whisper_part if acoustic.type == "whisper" else _speech_part
        problems += part(model, rows, loads, notes)
    textual = getattr(conf, "textual", None)
    if textual is not None and textual.type == "hf_marian":
        problems += _marian_parts(model, src_tokens, tgt_tokens, skip, rows, loads, notes)
    if not loads:
        return []
    if rows:
        log(format_table(rows))
    for note in notes:
        log(f"  {note}")
    if problems:
        raise SateError("loading the hub model(s) failed, nothing was loaded: " + " | ".join(problems))
    with torch.no_grad():
        for load in loads:
            load()
    return rows
