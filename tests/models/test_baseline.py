"""The E2E ST baseline: adaptor.type none + textual.layers 0, the acoustic encoder (with CTC) feeding the decoder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from sate.errors import SateError
from sate.models import STModel, model_from_file, resolve_config, save_model_file
from sate.models.decoder import teacher_forced
from sate.models.pretrained import initialize, load_teachers

Build = Callable[..., Any]
BASELINE = {"adaptor": {"type": "none"}, "textual": {"layers": 0}}
QUIET = {"log": lambda _line: None}


def _baseline(build: Build, seed: int = 0, **changes: Any) -> STModel:
    return build("st", seed=seed, **{**BASELINE, **changes})


def _check_step(model: STModel, batch: dict[str, Any]) -> dict[str, Any]:
    """One training step: finite loss, and a finite gradient on every parameter (DDP needs no unused ones)."""
    model.train()
    out = model(batch)
    assert torch.isfinite(out["loss"])
    out["loss"].backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    return out


def test_encode_gives_the_acoustic_states_and_owns_only_what_it_uses(build: Build, batch: dict[str, Any]) -> None:
    model = _baseline(build).eval()
    assert model.adaptor is None and model.src_embed is None and model.textual is None
    assert {k.split(".")[0] for k in model.state_dict()} == {"acoustic", "ctc", "decoder"}
    with torch.no_grad():
        enc = model.encode(batch["feats"], batch["feats_lengths"])
        h, lengths = model.acoustic(batch["feats"], batch["feats_lengths"])
    frames = ((48 - 1) // 2 - 1) // 2  # ESPnet's conv2d: 4x
    assert enc.memory.shape == (3, frames, 16)
    assert enc.ctc_logits.shape == (3, frames, model.src_vocab_size)
    assert enc.memory_lengths.tolist() == enc.ctc_lengths.tolist() == [((n - 1) // 2 - 1) // 2 for n in (48, 40, 33)]
    assert torch.equal(enc.memory, h) and torch.equal(enc.memory_lengths, lengths)  # unchanged: no positions re-added


def test_step_with_ctc(build: Build, batch: dict[str, Any]) -> None:
    out = _check_step(_baseline(build, loss={"ctc_weight": 0.25}), batch)
    assert set(out) == {"loss", "loss_ce", "loss_ctc", "acc"}
    assert out["loss"].item() == pytest.approx(0.75 * out["loss_ce"] + 0.25 * out["loss_ctc"], rel=1e-5)


def test_asr_initialised_baseline_equals_the_asr_encoder_and_distils_from_both_teachers(
        files: dict[str, Any], build: Build, batch: dict[str, Any], src_tokens: list[str],
        tgt_tokens: list[str]) -> None:
    kd = {"asr_weight": 0.5, "mt_weight": 0.5, "asr_teacher": files["asr_path"],
          "mt_teacher": files["mt_path"]}
    model = _baseline(build, seed=3, loss={"kd": kd})
    init = {"acoustic": {"path": files["asr_path"]}, "ctc": {"path": files["asr_path"]},
            "decoder": {"path": files["mt_path"]}}
    rows = initialize(model, init, src_tokens, tgt_tokens, **QUIET)
    assert [(r.component, r.ok, r.missing, r.unexpected) for r in rows] == [
        ("acoustic", True, 0, 0), ("ctc", True, 0, 0), ("decoder", True, 0, 0)]
    model.eval()
    with torch.no_grad():
        ours = model.encode(batch["feats"], batch["feats_lengths"])
        asr = files["asr"].encode(batch["feats"], batch["feats_lengths"])
        torch.testing.assert_close(ours.memory, asr.memory, atol=1e-6, rtol=0)
        torch.testing.assert_close(ours.ctc_logits, asr.ctc_logits, atol=1e-6, rtol=0)
        assert torch.equal(ours.memory_lengths, asr.memory_lengths)
        memory, lengths = files["mt"].encode_text(batch["src"], batch["src_lengths"])
        prefix = (batch["tgt"], batch["tgt_lengths"])
        torch.testing.assert_close(teacher_forced(model.decoder, memory, lengths, *prefix)[0],
                                   teacher_forced(files["mt"].decoder, memory, lengths, *prefix)[0],
                                   atol=1e-6, rtol=0)
        # The student's CTC side is the ASR teacher: full-distribution KD is zero.
        load_teachers(model, src_tokens, tgt_tokens, **QUIET)
        assert model(batch)["loss_kd_asr"] == pytest.approx(0.0, abs=1e-5)
    out = _check_step(model, batch)
    assert {"loss_kd_asr", "loss_kd_mt"} <= set(out)
    assert not any("teacher" in k for k in model.state_dict())


@pytest.mark.parametrize(("component", "reason"), [
    ("src_embed", "adaptor.type is none"), ("adaptor", "adaptor.type is none"), ("textual", "textual.layers is 0")])
def test_init_of_absent_components_is_refused(files: dict[str, Any], build: Build, src_tokens: list[str],
                                              tgt_tokens: list[str], component: str, reason: str) -> None:
    model = _baseline(build)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    init = {"acoustic": {"path": files["asr_path"]}, component: {"path": files["mt_path"]}}
    with pytest.raises(SateError, match=rf"init.{component}: this st model has no {component} \({reason}\)"):
        initialize(model, init, src_tokens, tgt_tokens, **QUIET)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())  # acoustic not loaded either


@pytest.mark.parametrize(("conf", "message"), [
    ({"adaptor": {"type": "none"}}, r"adaptor.type none \(the E2E ST baseline\) needs textual.layers 0, got 6"),
    ({"textual": {"layers": 0}}, r"textual.layers 0 \(no textual encoder\) needs adaptor.type none, got 'league'"),
    ({"adaptor": {"type": "shrink"}, "textual": {"layers": 0}}, "needs adaptor.type none, got 'shrink'"),
    ({"adaptor": {"type": "linear"}, "textual": {"layers": 0}}, "needs adaptor.type none, got 'linear'"),
    ({"textual": {"layers": -1}}, r"textual.layers must be 0 \(no textual encoder, with adaptor.type none\) or more"),
    ({**BASELINE, "adaptor": {"type": "none", "temperature": 2.0}},
     "adaptor.temperature is set but does nothing: adaptor.type none has no adaptor"),
    ({**BASELINE, "adaptor": {"type": "none", "dropout": 0.2}}, "adaptor.dropout is set but does nothing"),
    ({**BASELINE, "adaptor": {"type": "none", "shrink_mode": "soft"}}, "adaptor.shrink_mode is set but does nothing"),
    ({**BASELINE, "adaptor": {"type": "none", "keep_blank": True}}, "adaptor.keep_blank is set but does nothing"),
    ({**BASELINE, "textual": {"layers": 0, "heads": 2}},
     r"textual.heads is set but does nothing: the ST model has no textual encoder \(textual.layers is 0\)"),
    ({**BASELINE, "textual": {"layers": 0, "ffn": 512}}, "textual.ffn is set but does nothing"),
    ({**BASELINE, "textual": {"layers": 0, "dropout": 0.2}}, "textual.dropout is set but does nothing"),
])
def test_invalid_combinations_are_refused(conf: dict[str, Any], message: str) -> None:
    with pytest.raises(SateError, match=message):
        resolve_config("st", conf)


def test_valid_baseline_configs() -> None:
    resolved = resolve_config("st", BASELINE)
    assert resolve_config("st", resolved.to_dict()) == resolved  # what model files store (every key) resolves again
    # textual.heads 4 does not divide d_model 30, but there is no textual encoder to care
    odd = resolve_config("st", {**BASELINE, "d_model": 30, "acoustic": {"heads": 2}, "decoder": {"heads": 2}})
    assert odd.to_dict()["textual"]["heads"] == 4
    with pytest.raises(SateError, match="textual.layers must be at least 1"):
        resolve_config("mt", {"textual": {"layers": 0}})  # MT has nothing but its textual encoder


def test_model_file_round_trip(tmp_path: Path, build: Build, batch: dict[str, Any], src_tokens: list[str],
                               tgt_tokens: list[str]) -> None:
    model = _baseline(build).eval()
    path = tmp_path / "baseline.pt"
    save_model_file(path, model, src_tokens, tgt_tokens)
    again, data = model_from_file(path)
    assert data["config"] == model.conf.to_dict() and again.conf == model.conf
    assert again.textual is None and again.src_embed is None
    continued = _baseline(build, seed=5)
    rows = initialize(continued, {"model": {"path": str(path)}}, src_tokens, tgt_tokens, **QUIET)
    assert rows[0].matched == len(model.state_dict())
    with torch.no_grad():
        expected = model.encode(batch["feats"], batch["feats_lengths"]).memory
        assert torch.equal(again.encode(batch["feats"], batch["feats_lengths"]).memory, expected)
        assert torch.equal(continued.eval().encode(batch["feats"], batch["feats_lengths"]).memory, expected)
