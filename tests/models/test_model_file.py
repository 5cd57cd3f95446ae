"""Our model file: round trip, atomic write, and refusal of anything but plain tensors."""

from __future__ import annotations

import argparse
import hashlib
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pytest
import torch

from sate.errors import SateError
from sate.models import build_model, load_model_file, model_from_file, save_model_file
from sate.models.model_file import load_exact
from sate.models.tiny import tiny_config

RAN: list[str] = []


class Smuggler:
    """Unpickling this would run code; weights_only loading must refuse before that."""

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (RAN.append, ("code ran",))


def test_round_trip_rebuilds_the_same_model(tmp_path: Path, build: Callable[..., Any], batch: dict[str, Any],
                                            src_tokens: list[str], tgt_tokens: list[str]) -> None:
    model = build("st", adaptor={"type": "shrink"}).eval()
    path = tmp_path / "exp" / "model.pt"
    save_model_file(path, model, src_tokens, tgt_tokens)
    assert [p.name for p in path.parent.iterdir()] == ["model.pt"]  # no temp file left behind
    data = load_model_file(path)
    assert data["format"] == "sate-model" and data["version"] == 1 and data["task"] == "st"
    assert data["src_tokens"] == src_tokens and data["config"] == model.conf.to_dict()
    again, _ = model_from_file(path)
    assert not again.training
    with torch.no_grad():
        a = model.encode(batch["feats"], batch["feats_lengths"]).memory
        b = again.encode(batch["feats"], batch["feats_lengths"]).memory
    assert torch.equal(a, b)


def test_pickled_object_is_refused_without_running_it(tmp_path: Path) -> None:
    path = tmp_path / "evil.pt"
    torch.save({"format": "sate-model", "model": {"w": torch.zeros(1)}, "payload": Smuggler()}, path)
    with pytest.raises(SateError, match=r"evil.pt: not a sate model file: it holds pickled objects \(.+\) "
                                        "that would run code when loaded"):
        load_model_file(path)
    assert RAN == []


def test_a_pickled_module_is_named_as_such_not_with_torchs_advice(tmp_path: Path) -> None:
    """`torch.save(model)` of a module, given as a model file, was "not a plain-tensor checkpoint (Weights only load
    failed. This file can still be loaded, to do so you have two options, \x1b[1mdo those steps ...": torch's first
    line, its options never shown, a terminal's escape codes in it (twenty-eighth hostile pass)."""
    path = tmp_path / "mine.pt"
    torch.save(torch.nn.Linear(2, 2), path)
    with pytest.raises(SateError) as err:
        model_from_file(path)
    assert str(err.value) == (f"{path}: not a sate model file: it holds pickled objects "
                              "(torch.nn.modules.linear.Linear) that would run code when loaded, as a module saved "
                              "whole (`torch.save(model)`), another toolkit's checkpoint (fairseq's, Lightning's) or "
                              "numpy arrays hold; sate reads the model files `sate average` writes (or "
                              "sate.models.save_model_file, of a sate model)")


@pytest.mark.parametrize(("payload", "names"), [
    ({"args": argparse.Namespace(arch="x"), "model": {"w": torch.zeros(1)}}, "argparse.Namespace"),  # fairseq's
    ({"state_dict": {"w": torch.zeros(1)}, "hyper_parameters": {"data": PurePosixPath("/x")}}, "PurePosixPath"),
    ({"model": {"w": torch.zeros(1)}, "cmvn": np.zeros(3)}, "numpy"),
])
def test_any_pickled_file_is_named_as_pickled_not_as_a_saved_module(tmp_path: Path, payload: dict,
                                                                     names: str) -> None:
    """A fairseq checkpoint, another toolkit's Lightning checkpoint or numpy arrays were each told they were what
    `torch.save(model)` of a module writes (review28a, fix28a)."""
    path = tmp_path / "other.pt"
    torch.save(payload, path)
    with pytest.raises(SateError) as err:
        load_model_file(path)
    assert names in str(err.value) and "another toolkit's checkpoint (fairseq's, Lightning's) or numpy arrays hold" \
        in str(err.value) and "of a module writes" not in str(err.value)


@pytest.mark.parametrize(("payload", "message"), [
    ([torch.zeros(1)], "not a sate model file"),
    ({"format": "other"}, "not a sate model file"),
    ({"format": "sate-model", "version": 2}, "version 2"),
    ({"format": "sate-model", "version": 1, "task": "mt"}, "lacks config"),
    # a checkpoint where a model file goes (`sate pack --model EXP/checkpoints/last.ckpt`): was "format None"
    ({"sate": {"format": "sate-model"}, "state_dict": {}, "epoch": 2},
     r"x.pt: a `sate train` checkpoint, not a model file; write a model file .* `sate average --exp EXP --last N`"),
])
def test_foreign_files_are_refused(tmp_path: Path, payload: Any, message: str) -> None:
    path = tmp_path / "x.pt"
    torch.save(payload, path)
    with pytest.raises(SateError, match=message):
        load_model_file(path)


def test_a_checkpoint_in_an_experiment_names_the_experiment_to_average(tmp_path: Path) -> None:
    """`sate pack --model EXP/checkpoints/last.ckpt` was told to run `sate average --exp EXP`; the experiment it
    names is the one the checkpoint lies in (twenty-first hostile pass)."""
    path = tmp_path / "my exp" / "checkpoints" / "last.ckpt"
    path.parent.mkdir(parents=True)
    torch.save({"sate": {"format": "sate-model"}, "state_dict": {}, "epoch": 2}, path)
    with pytest.raises(SateError, match=f"with `sate average --exp {tmp_path / 'my exp'} --last N`"):
        load_model_file(path)


@pytest.mark.parametrize(("change", "message"), [
    ({"src_vocab_size": -1}, "src_vocab_size is -1 but src_tokens holds"),  # torch: "negative dimension -1"
    ({"tgt_vocab_size": 10**12}, "tgt_vocab_size is 1000000000000 but tgt_tokens holds"),  # 64 TB asked for
    ({"src_tokens": "abc"}, "src_tokens is not a list of tokens"),
    # another value was taken for none recorded: packed with global statistics whatever it was trained with
    # (nineteenth hostile pass)
    ({"cmvn_kind": "none\n"}, r"cmvn_kind is 'none\\n', not one of global, utterance, none \(a damaged or foreign"),
    ({"cmvn_kind": None}, "cmvn_kind is None, not one of"),
    # a TypeError traceback ('unhashable type'), and a config of None was packed, exit 0 (twentieth hostile pass)
    ({"task": ["mt"]}, r"task is \['mt'\], not one of asr, mt, st \(a damaged or foreign header\)"),
    ({"config": None}, r"config is None, not the mapping of model settings `sate train` records \(a damaged"),
])
def test_a_header_whose_sizes_disagree_with_its_token_lists(tmp_path: Path, build: Callable[..., Any],
                                                            src_tokens: list[str], tgt_tokens: list[str],
                                                            change: dict[str, Any], message: str) -> None:
    """`model_meta` writes each vocabulary size as its token list's length; a header edited or written by another
    tool reached torch with its size (a RuntimeError traceback, or the allocator) before anything compared them."""
    path = tmp_path / "m.pt"
    save_model_file(path, build("mt"), src_tokens, tgt_tokens)
    torch.save({**torch.load(path, weights_only=True), **change}, path)
    with pytest.raises(SateError, match=f"m.pt: {message}"):
        model_from_file(path)


@pytest.mark.parametrize(("change", "message"), [
    (lambda w, k: {**w, k: [1.0, 2.0]}, "hold {key} as list, not a tensor"),
    (lambda w, k: {**w, k: None}, "hold {key} as NoneType, not a tensor"),
    (lambda w, k: {**w, 3: w[k]}, "hold the key 3, not a parameter's name"),
    (lambda w, k: {**w, k: w[k].to_sparse()}, "hold {key} as a sparse_coo tensor, not a dense one"),
])
def test_weights_that_are_no_tensors_are_named(tmp_path: Path, build: Callable[..., Any], src_tokens: list[str],
                                               tgt_tokens: list[str], change: Callable[..., dict],
                                               message: str) -> None:
    """A list or None among the weights was an AttributeError traceback, a sparse tensor torch's RuntimeError of
    several lines, an int key a TypeError (thirtieth hostile pass)."""
    path = tmp_path / "m.pt"
    save_model_file(path, build("mt"), src_tokens, tgt_tokens)
    data = torch.load(path, weights_only=True)
    key = "src_embed.weight"
    torch.save({**data, "model": change(data["model"], key)}, path)
    with pytest.raises(SateError, match=re.escape(f"{path}: its weights (under 'model') {message.format(key=key)} "
                                                  "(a damaged or foreign file)")):
        model_from_file(path)


@pytest.mark.parametrize("change", [{"task": "asr"}, {"config": {"d_model": "x"}}])
def test_a_header_recording_a_config_sate_refuses_names_the_file(tmp_path: Path, build: Callable[..., Any],
                                                                 src_tokens: list[str], tgt_tokens: list[str],
                                                                 change: dict[str, Any]) -> None:
    """A model file (or a checkpoint, for `sate average`) whose header records a task or model config sate refuses
    was "model config: d_model must be an integer", naming no file (eighteenth hostile pass)."""
    path = tmp_path / "m.pt"
    save_model_file(path, build("mt"), src_tokens, tgt_tokens)
    data = torch.load(path, weights_only=True)
    if "config" in change:
        change = {"config": {**data["config"], **change["config"]}}
    torch.save({**data, **change}, path)
    with pytest.raises(SateError, match=f"^{path}: the model it records: model config: "):
        model_from_file(path)


def test_missing_file_and_wrong_vocabulary(tmp_path: Path, build: Callable[..., Any], src_tokens: list[str],
                                           tgt_tokens: list[str]) -> None:
    with pytest.raises(SateError, match="checkpoint not found"):
        load_model_file(tmp_path / "nope.pt")
    with pytest.raises(SateError, match="source token list has 3 entries"):
        save_model_file(tmp_path / "m.pt", build("mt"), src_tokens[:3], tgt_tokens)


def test_an_experiment_without_its_model_file_names_sate_average(tmp_path: Path) -> None:
    """Twenty-first hostile pass: `sate pack --model EXP` (not averaged yet) or `--model EXP/checkpoints` was asked
    "did you mean EXP/checkpoints/last.ckpt?", a checkpoint that a model file's reader then refused."""
    exp = tmp_path / "exp"
    (exp / "checkpoints").mkdir(parents=True)
    (exp / "checkpoints" / "last.ckpt").write_bytes(b"x")
    for given in (exp, exp / "checkpoints"):
        with pytest.raises(SateError, match=f"^{given}: is a directory, not a model file: the experiment {exp} holds "
                                            f"checkpoints but no model.pt yet; write it with `sate average --exp "
                                            f"{exp} --last N` \\(or --best N\\)$"):
            load_model_file(given)
    # EXP/model.pt itself, not there yet (an average that failed, a recipe's stage run by hand): it was "checkpoint
    # not found", the name of what it is not (twenty-second hostile pass)
    with pytest.raises(SateError, match=f"^{exp / 'model.pt'}: no such file: the experiment {exp} holds checkpoints "
                                        f"but no model.pt yet; write it with `sate average --exp {exp} --last N` "
                                        "\\(or --best N\\)$"):
        load_model_file(exp / "model.pt")
    # the same, named as an --init-from model or a loss.kd teacher (a recipe's stage 5 run by hand before stage 3's
    # average): "checkpoint not found", with no word of how it is made (24th hostile pass)
    from sate.models.pretrained import read_source  # the reader of init: and teachers, beside the model file's

    with pytest.raises(SateError, match=f"^{exp / 'model.pt'}: no such file: the experiment {exp} holds checkpoints "
                                        f"but no model.pt yet; write it with `sate average --exp {exp} --last N` "):
        read_source(exp / "model.pt")
    with pytest.raises(SateError, match="^checkpoint not found: "):  # anywhere else, as before
        read_source(tmp_path / "model.pt")
    (exp / "model.pt").write_bytes(b"x")
    with pytest.raises(SateError, match=f"^{exp / 'checkpoints'}: is a directory, not a model file \\(did you mean "
                                        f"{exp / 'model.pt'}\\?\\)$"):
        load_model_file(exp / "checkpoints")
    with pytest.raises(SateError, match=r"\(did you mean .*model.pt\?\)$"):
        load_model_file(exp)


def test_load_exact_names_the_keys(build: Callable[..., Any]) -> None:
    model = build("mt")
    state = model.state_dict()
    state["extra.weight"] = torch.zeros(1)
    del state["decoder.after_norm.bias"]
    state["src_embed.weight"] = torch.zeros(3, 3)
    with pytest.raises(SateError, match=r"missing: decoder.after_norm.bias.*unexpected: extra.weight.*"
                                        r"src_embed.weight \(3, 3\) vs \(13, 16\)"):
        load_exact(model, state, "test")


@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.complex64])
def test_load_exact_names_weights_of_another_kind_of_number(build: Callable[..., Any], dtype: torch.dtype) -> None:
    """Integer, boolean or complex values where the model keeps floats were cast without a word (complex ones with
    torch's warning): no weights of this model (thirtieth hostile pass). Another precision of floats loads."""
    model = build("mt")
    state = model.state_dict()
    load_exact(model, {**state, "src_embed.weight": state["src_embed.weight"].half()}, "test")
    with pytest.raises(SateError, match=rf"^test does not fit the model: type mismatch \(file vs model\): "
                                        rf"src_embed.weight {str(dtype).removeprefix('torch.')} vs float32$"):
        load_exact(model, {**state, "src_embed.weight": state["src_embed.weight"].to(dtype)}, "test")


COUNTER = "acoustic.encoder.encoders.0.conv_module.norm.num_batches_tracked"  # the tiny ST model's int64 buffer


@pytest.mark.parametrize("cast", [torch.float16, torch.bfloat16, torch.float64])
def test_a_model_file_cast_whole_loads_as_it_did(tmp_path: Path, build: Callable[..., Any], src_tokens: list[str],
                                                 tgt_tokens: list[str], cast: torch.dtype) -> None:
    """A model file shrunk or widened whole (`{k: v.half() for k, v in sd.items()}`, `.double()`) makes BatchNorm's
    int64 num_batches_tracked a float too; it was refused as a type mismatch (review of the thirtieth hostile pass).
    Whole numbers there load as they always did (a counter past float16's range is inf, as it was), and the model
    equals the one whose floats alone were cast."""
    path = tmp_path / "m.pt"
    model = build("st")
    save_model_file(path, model, src_tokens, tgt_tokens)
    data = torch.load(path, weights_only=True)
    weights = {k: v.to(cast) if v.is_floating_point() else v for k, v in data["model"].items()}
    for counter in (weights[COUNTER], torch.tensor(70000)):
        torch.save({**data, "model": {k: v.to(cast) for k, v in {**weights, COUNTER: counter}.items()}}, path)
        whole = model_from_file(path)[0].state_dict()
        assert whole[COUNTER].dtype == torch.int64
        for key, value in model.state_dict().items():
            assert torch.equal(whole[key], weights[key].to(value.dtype)) or key == COUNTER, key


def test_a_fraction_or_nan_where_the_model_keeps_an_integer_buffer_is_refused(build: Callable[..., Any]) -> None:
    """An integer buffer given a float that is no whole number is no value of it; whole numbers load."""
    model = build("st")
    state = model.state_dict()
    load_exact(model, {**state, COUNTER: torch.tensor(3.0)}, "test")
    for value in (2.5, float("nan")):
        with pytest.raises(SateError, match=rf"^test does not fit the model: type mismatch \(file vs model\): "
                                            rf"{COUNTER} float32 vs int64 \(not whole numbers\)$"):
            load_exact(model, {**state, COUNTER: torch.tensor(value)}, "test")


def test_a_truncated_or_damaged_file_is_called_damaged(tmp_path: Path, build: Callable[..., Any],
                                                       src_tokens: list[str], tgt_tokens: list[str]) -> None:
    path = tmp_path / "model.pt"
    save_model_file(path, build("mt"), src_tokens, tgt_tokens)
    whole = path.read_bytes()
    for size in (len(whole) // 2, len(whole) - 10, 3):  # an interrupted copy, a few bytes short, almost nothing
        cut = tmp_path / f"cut{size}.pt"
        cut.write_bytes(whole[:size])
        with pytest.raises(SateError, match=rf"{cut}: the file is damaged or truncated"):
            load_model_file(cut)
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(SateError, match=r"empty.pt: the file is empty \(0 bytes\)"):
        load_model_file(tmp_path / "empty.pt")
    # Bytes changed inside a tensor: torch reads it without a word, the zip checksums do not agree.
    middle = len(whole) // 2
    (tmp_path / "flipped.pt").write_bytes(whole[:middle] + bytes(b ^ 0xFF for b in whole[middle:middle + 64])
                                          + whole[middle + 64:])
    with pytest.raises(SateError, match=r"flipped.pt: the file is damaged: .* fails its checksum"):
        load_model_file(tmp_path / "flipped.pt")


# A model file as sate wrote it before the typed config sections (87adc4d): the resolved config stored as a plain
# dict, the state dict's names and shapes (their digest), and what the model computes from a seeded start.
DICT_ERA_CONFIG = {
    "d_model": 8,
    "acoustic": {"type": "conformer", "layers": 1, "heads": 2, "ffn": 16, "kernel": 15, "frontend_channels": 2,
                 "dropout": 0.1, "path": None, "hub": None, "freeze_feature_extractor": True},
    "ctc": {"layer": None, "dropout": 0.0, "bias": True},
    "adaptor": {"type": "shrink", "temperature": 1.0, "dropout": 0.1, "shrink_mode": "league", "keep_blank": False,
                "embedding": "source"},
    "textual": {"type": "transformer", "layers": 1, "heads": 2, "ffn": 16, "dropout": 0.1, "path": None, "hub": None},
    "decoder": {"type": "transformer", "layers": 1, "heads": 2, "ffn": 16, "dropout": 0.1, "tie_embeddings": False},
    "loss": {"ctc_weight": 0.3, "label_smoothing": 0.1, "normalize": "utterance",
             "kd": {"asr_weight": 0.0, "mt_weight": 0.0, "topk": 0, "asr_teacher": None, "mt_teacher": None}},
}
DICT_ERA_STATE_DIGEST = "f748de5773389c9e32f8823c9c1165071bd9a1c254d744c576d5baa44efce706"
DICT_ERA_MEMORY, DICT_ERA_SEGMENTS, DICT_ERA_CTC = 0.8971322095021605, [1, 3], -33.163375079631805


def test_a_model_file_of_the_dict_era_loads_and_computes_the_same(tmp_path: Path) -> None:
    """The digest and sums were computed by 87adc4d from torch.manual_seed(0) and build_model("st",
    tiny_config("st", 8, adaptor="shrink"), 7, 7): the same seed builds the same weights under the same names, and
    a file holding the dict-era config and those weights loads into a model that computes the same."""
    torch.manual_seed(0)
    state = build_model("st", tiny_config("st", 8, adaptor="shrink"), 7, 7).state_dict()
    names = "\n".join(f"{k} {tuple(v.shape)}" for k, v in state.items())
    assert hashlib.sha256(names.encode()).hexdigest() == DICT_ERA_STATE_DIGEST
    tokens = ["<blank>", "<unk>", *(f"p{i}" for i in range(4)), "<sos/eos>"]
    torch.save({"format": "sate-model", "version": 1, "task": "st", "config": DICT_ERA_CONFIG, "src_vocab_size": 7,
                "tgt_vocab_size": 7, "src_tokens": tokens, "tgt_tokens": tokens, "model": state}, tmp_path / "old.pt")
    model, data = model_from_file(tmp_path / "old.pt")
    assert data["config"] == DICT_ERA_CONFIG
    # It reads back as it was, with the keys added since at their defaults (acoustic.freeze: Whisper's;
    # loss.mt_text_weight: the MT text batches).
    assert model.conf.to_dict() == DICT_ERA_CONFIG | {"acoustic": {**DICT_ERA_CONFIG["acoustic"], "freeze": "none"},
                                                      "loss": {**DICT_ERA_CONFIG["loss"], "mt_text_weight": 0.0}}
    feats = torch.randn(2, 60, 80, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        enc = model.encode(feats, torch.tensor([60, 45]))
    assert enc.memory_lengths.tolist() == DICT_ERA_SEGMENTS
    assert float((enc.memory.double() * torch.arange(8)).sum()) == pytest.approx(DICT_ERA_MEMORY, abs=1e-5)
    assert float(enc.ctc_logits.double().sum()) == pytest.approx(DICT_ERA_CTC, rel=1e-6)


@pytest.mark.parametrize("path", [None, 3, b"model.pt"])
def test_a_path_that_is_no_path_is_named(path: object) -> None:
    """docs/models.md's `model_from_file(PATH)` given None (an unset variable), a number or bytes was a TypeError of
    Path() (25th hostile pass)."""
    with pytest.raises(SateError, match=rf"^model file: expected a path \(str or Path\), got {type(path).__name__}"
                                        r"( \(decode a name of bytes with os.fsdecode\(name\)\))?$"):
        model_from_file(path)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", ["model\0.pt", Path("exp/model\0.pt")])
def test_a_name_holding_a_nul_character_is_named(path: object) -> None:
    """`model_from_file("model\\0.pt")` was a ValueError of os.stat ("embedded null byte"), a traceback (25th hostile
    pass)."""
    with pytest.raises(SateError, match=r"^model file: '.*model\\x00.pt' holds a NUL character, which no name on disk "
                                        r"holds$"):
        model_from_file(path)  # type: ignore[arg-type]
