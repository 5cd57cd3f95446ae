"""decoder.tie_embeddings and adaptor.embedding decoder: one tensor, trained, saved, loaded; one vocabulary."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from sate.errors import SateError
from sate.models import build_model, model_from_file, save_model_file
from sate.models.init_from import fill_init
from sate.models.pretrained import initialize, load_teachers
from sate.models.sharing import check_joint_vocabulary, tied_problems
from sate.models.tiny import tiny_config

Build = Callable[..., Any]
TIED = {"layers": 1, "heads": 2, "ffn": 32, "tie_embeddings": True}
SOFT_FROM_DECODER = {"type": "league", "embedding": "decoder"}


@pytest.fixture
def joint_tokens(src_tokens: list[str]) -> list[str]:
    """One token list for both sides, as `sate vocab --joint` writes it."""
    return list(src_tokens)


def joint_model(task: str, tokens: list[str], seed: int = 0, **changes: Any) -> Any:
    torch.manual_seed(seed)
    conf = tiny_config(task, 16, kernel=3) | {"decoder": TIED} | changes
    return build_model(task, conf, len(tokens), len(tokens))


def test_tied_weights_are_one_tensor_and_train(build: Build, batch: dict[str, Any]) -> None:
    model = build("mt", decoder=TIED)
    embedding, projection = model.decoder.embed[0].weight, model.decoder.output_layer.weight
    assert projection is embedding
    assert embedding.std().item() == pytest.approx(16**-0.5, rel=0.2)  # fairseq's start, not N(0, 1)
    untied = build("mt")
    assert sum(p.numel() for p in untied.parameters()) - sum(p.numel() for p in model.parameters()) == \
        embedding.numel()
    model(batch)["loss"].backward()
    assert embedding.grad is not None and torch.isfinite(embedding.grad).all()


def test_a_model_file_keeps_the_tie(tmp_path: Path, build: Build, src_tokens: list[str],
                                    tgt_tokens: list[str]) -> None:
    model = build("mt", decoder=TIED)
    save_model_file(tmp_path / "mt.pt", model, src_tokens, tgt_tokens)
    loaded, _ = model_from_file(tmp_path / "mt.pt")
    assert loaded.decoder.output_layer.weight is loaded.decoder.embed[0].weight
    assert torch.equal(loaded.decoder.embed[0].weight, model.decoder.embed[0].weight)


def test_soft_adaptor_multiplies_by_the_decoders_embedding(batch: dict[str, Any], joint_tokens: list[str]) -> None:
    model = joint_model("st", joint_tokens, adaptor=SOFT_FROM_DECODER)
    assert model.src_embed is None and model._soft_embedding() is model.decoder.embed[0].weight
    batch = {**batch, "tgt": batch["tgt"].clamp(max=len(joint_tokens) - 2)}
    model(batch)["loss"].backward()
    assert torch.isfinite(model.decoder.embed[0].weight.grad).all()


def test_init_from_a_tied_mt_model(tmp_path: Path, batch: dict[str, Any], joint_tokens: list[str]) -> None:
    mt = joint_model("mt", joint_tokens, seed=2).eval()
    save_model_file(tmp_path / "mt.pt", mt, joint_tokens, joint_tokens)
    st = joint_model("st", joint_tokens, seed=3, adaptor=SOFT_FROM_DECODER)
    _, init = fill_init("st", st.conf.to_dict(), {}, {"mt": str(tmp_path / "mt.pt")})
    assert set(init) == {"textual", "decoder"}  # no source embedding: the decoder's serves the adaptor
    initialize(st, init, joint_tokens, joint_tokens, log=lambda _line: None)
    assert st.decoder.output_layer.weight is st.decoder.embed[0].weight
    assert torch.equal(st.decoder.embed[0].weight, mt.decoder.embed[0].weight)
    load_teachers(st, joint_tokens, joint_tokens)  # the joint vocabulary check passes


def test_a_tied_model_refuses_an_untied_checkpoint(tmp_path: Path, build: Build, src_tokens: list[str],
                                                   tgt_tokens: list[str]) -> None:
    save_model_file(tmp_path / "mt.pt", build("mt"), src_tokens, tgt_tokens)
    with pytest.raises(SateError, match="decoder.tie_embeddings: checkpoint False, ours True"):
        initialize(build("mt", decoder=TIED), {"decoder": {"path": str(tmp_path / "mt.pt")}}, src_tokens,
                   tgt_tokens, log=lambda _line: None)


def test_tied_problems_names_the_keys_that_differ(build: Build) -> None:
    decoder = build("mt", decoder=TIED).decoder
    state = {k: v.clone() for k, v in decoder.state_dict().items()}
    assert tied_problems(decoder, state) == []
    state["output_layer.weight"] += 1.0  # an untied checkpoint, e.g. an ESPnet decoder
    assert tied_problems(decoder, state) == ["embed.0.weight and output_layer.weight are one tensor here "
                                             "(decoder.tie_embeddings) but differ in the checkpoint"]


def test_the_decoders_embedding_needs_one_vocabulary(build: Build, src_tokens: list[str],
                                                     tgt_tokens: list[str]) -> None:
    with pytest.raises(SateError, match="needs one joint vocabulary"):
        build("st", adaptor=SOFT_FROM_DECODER)  # 13 source tokens, 15 target tokens
    other = [t.upper() for t in src_tokens]  # the same size, other tokens: only the lists tell
    model = joint_model("st", src_tokens, adaptor=SOFT_FROM_DECODER)
    with pytest.raises(SateError, match="source .* and target .* token lists differ, first at index 0"):
        load_teachers(model, src_tokens, other)
    check_joint_vocabulary(tiny_config("st"), src_tokens, other)  # the source embedding needs nothing


@pytest.mark.parametrize(("task", "conf", "message"), [
    ("st", {"adaptor": {"type": "linear", "embedding": "decoder"}}, "embedding is set but does nothing"),
    ("st", {"adaptor": {"type": "soft", "embedding": "target"}}, "adaptor.embedding must be one of"),
    ("asr", {"decoder": {"tie_embeddings": True}}, "tie_embeddings is set but does nothing"),
])
def test_sharing_refusals(task: str, conf: dict, message: str) -> None:
    from sate.models.config import resolve_config

    with pytest.raises(SateError, match=message):
        resolve_config(task, conf)
