"""Our model file: round trip, atomic write, and refusal of anything but plain tensors."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from sate.errors import SateError
from sate.models import load_model_file, model_from_file, save_model_file
from sate.models.model_file import load_exact

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
    with pytest.raises(SateError, match="refusing to load"):
        load_model_file(path)
    assert RAN == []


@pytest.mark.parametrize(("payload", "message"), [
    ([torch.zeros(1)], "not a sate model file"),
    ({"format": "other"}, "not a sate model file"),
    ({"format": "sate-model", "version": 2}, "version 2"),
    ({"format": "sate-model", "version": 1, "task": "mt"}, "lacks config"),
])
def test_foreign_files_are_refused(tmp_path: Path, payload: Any, message: str) -> None:
    path = tmp_path / "x.pt"
    torch.save(payload, path)
    with pytest.raises(SateError, match=message):
        load_model_file(path)


def test_missing_file_and_wrong_vocabulary(tmp_path: Path, build: Callable[..., Any], src_tokens: list[str],
                                           tgt_tokens: list[str]) -> None:
    with pytest.raises(SateError, match="checkpoint not found"):
        load_model_file(tmp_path / "nope.pt")
    with pytest.raises(SateError, match="source token list has 3 entries"):
        save_model_file(tmp_path / "m.pt", build("mt"), src_tokens[:3], tgt_tokens)


def test_load_exact_names_the_keys(build: Callable[..., Any]) -> None:
    model = build("mt")
    state = model.state_dict()
    state["extra.weight"] = torch.zeros(1)
    del state["decoder.after_norm.bias"]
    state["src_embed.weight"] = torch.zeros(3, 3)
    with pytest.raises(SateError, match=r"missing: decoder.after_norm.bias.*unexpected: extra.weight.*"
                                        r"src_embed.weight \(3, 3\) vs \(13, 16\)"):
        load_exact(model, state, "test")


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
