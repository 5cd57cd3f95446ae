"""Initialisation from checkpoints: exact copies when it works, a named error when it cannot."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from sate.errors import SateError
from sate.models import model_meta, save_model_file
from sate.models.acoustic import espnet_encoder_kwargs
from sate.models.config import CTCConfig, DecoderConfig, TextualConfig, resolve_config
from sate.models.ctc import build_ctc
from sate.models.decoder import espnet_decoder_kwargs, teacher_forced
from sate.models.espnet_blocks import ConformerEncoder, PositionalEncoding, TransformerDecoder, TransformerEncoder
from sate.models.pretrained import initialize, load_teachers
from sate.models.textual import espnet_textual_kwargs

Build = Callable[..., Any]
ESPNET_ACOUSTIC = {"layers": 1, "heads": 2, "ffn": 32, "kernel": 3, "frontend_channels": None}


def _sate_init(files: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {"acoustic": {"path": files["asr_path"]}, "ctc": {"path": files["asr_path"]},
            "src_embed": {"path": files["mt_path"]}, "textual": {"path": files["mt_path"]},
            "decoder": {"path": files["mt_path"]}}


def test_st_from_asr_and_mt_reproduces_both(files: dict[str, Any], build: Build, batch: dict[str, Any],
                                            src_tokens: list[str], tgt_tokens: list[str]) -> None:
    st = build("st", seed=3)
    lines: list[str] = []
    rows = initialize(st, _sate_init(files), src_tokens, tgt_tokens, log=lines.append)
    assert [r.component for r in rows] == ["acoustic", "ctc", "src_embed", "textual", "decoder"]
    assert all(r.ok and r.matched > 0 and r.missing == r.unexpected == 0 for r in rows)
    assert "acoustic" in lines[0] and "acoustic.encoder." in lines[0] and "FAILED" not in lines[0]
    st.eval()
    with torch.no_grad():
        ours = st.acoustic(batch["feats"], batch["feats_lengths"])
        asr = files["asr"].encode(batch["feats"], batch["feats_lengths"])
        assert torch.allclose(ours[0], asr.memory, atol=1e-6)
        assert torch.allclose(st.ctc.ctc_lo(ours[0]), asr.ctc_logits, atol=1e-6)
        memory, lengths = files["mt"].encode_text(batch["src"], batch["src_lengths"])
        prefix = (batch["tgt"], batch["tgt_lengths"])
        ours_logits, _ = teacher_forced(st.decoder, memory, lengths, *prefix)
        mt_logits, _ = teacher_forced(files["mt"].decoder, memory, lengths, *prefix)
        assert torch.allclose(ours_logits, mt_logits, atol=1e-6)
        x = torch.randn(2, 5, 16)
        assert torch.allclose(st.textual(x, torch.tensor([5, 3]))[0],
                              files["mt"].textual(x, torch.tensor([5, 3]))[0], atol=1e-6)
    assert torch.equal(st.src_embed.weight, files["mt"].src_embed.weight)


def _espnet_asr_experiment(directory: Path, src_tokens: list[str], token_list_as_file: bool = False,
                           **conf_changes: Any) -> tuple[ConformerEncoder, torch.nn.Module, Path]:
    """A tiny ESPnet2 ASR experiment in ESPnet's layout: config.yaml + valid.acc.ave.pth."""
    directory.mkdir(parents=True, exist_ok=True)
    acoustic = resolve_config("asr", {"d_model": 16, "acoustic": ESPNET_ACOUSTIC}).acoustic
    _, kwargs = espnet_encoder_kwargs(acoustic, 16)
    torch.manual_seed(7)
    encoder = ConformerEncoder(80, **kwargs).eval()
    ctc = build_ctc(len(src_tokens), 16, CTCConfig())
    state = {f"encoder.{k}": v for k, v in encoder.state_dict().items()}
    state |= {f"ctc.{k}": v for k, v in ctc.state_dict().items()}
    state |= {"normalize.mean": torch.zeros(80), "normalize.std": torch.ones(80)}
    torch.save(state, directory / "valid.acc.ave.pth")
    token_list: Any = src_tokens
    if token_list_as_file:
        (directory / "tokens.txt").write_text("\n".join(src_tokens) + "\n")
        token_list = "tokens.txt"
    config = {"encoder": "conformer", "encoder_conf": {**kwargs, **conf_changes}, "token_list": token_list,
              "ctc_conf": {"dropout_rate": 0.0}, "model_conf": {"ctc_weight": 0.3}}
    (directory / "config.yaml").write_text(yaml.safe_dump(config))
    return encoder, ctc, directory / "valid.acc.ave.pth"


@pytest.mark.parametrize("token_list_as_file", [False, True])
def test_st_acoustic_from_an_espnet2_asr_experiment(tmp_path: Path, build: Build, batch: dict[str, Any],
                                                    src_tokens: list[str], tgt_tokens: list[str],
                                                    token_list_as_file: bool) -> None:
    encoder, ctc, pth = _espnet_asr_experiment(tmp_path / "exp", src_tokens, token_list_as_file)
    st = build("st", acoustic=ESPNET_ACOUSTIC)
    rows = initialize(st, {"acoustic": {"path": str(pth)}, "ctc": {"path": str(pth)}}, src_tokens, tgt_tokens,
                      log=lambda _line: None)
    assert [(r.prefix, r.missing, r.unexpected) for r in rows] == [("encoder.", 0, 0), ("ctc.", 0, 0)]
    st.eval()
    # One unpadded utterance at a time: on a padded batch ESPnet's own encoder gives padded utterances
    # extra frames (see sate.models.acoustic), which ours deliberately does not.
    with torch.no_grad():
        for b, n in enumerate(batch["feats_lengths"].tolist()):
            feats, lengths = batch["feats"][b : b + 1, :n], batch["feats_lengths"][b : b + 1]
            ours = st.encode(feats, lengths)
            theirs, theirs_lengths, _ = encoder(feats, lengths)
            assert torch.equal(ours.ctc_lengths, theirs_lengths)
            assert torch.allclose(st.acoustic(feats, lengths)[0], theirs, atol=1e-6)
            assert torch.allclose(ours.ctc_logits, ctc.ctc_lo(theirs), atol=1e-6)


def test_an_espnet_token_list_is_read_as_pyyaml_wrote_it(tmp_path: Path, build: Build, src_tokens: list[str],
                                                         tgt_tokens: list[str]) -> None:
    """ESPnet dumps its config.yaml with PyYAML, whose YAML 1.1 leaves the token `08` plain: sate's loader read it
    as YAML 1.2 does, as the number 8, and refused the list ("token_list must be a list or a path, got list")."""
    tokens = [*src_tokens[:4], "08", "09", *src_tokens[6:]]
    _, _, pth = _espnet_asr_experiment(tmp_path / "exp", tokens)
    assert "\n- 08\n" in (tmp_path / "exp" / "config.yaml").read_text()  # plain, as ESPnet writes it
    st = build("st", acoustic=ESPNET_ACOUSTIC)
    rows = initialize(st, {"acoustic": {"path": str(pth)}, "ctc": {"path": str(pth)}}, tokens, tgt_tokens,
                      log=lambda _line: None)
    assert all(row.ok for row in rows)
    config = tmp_path / "exp" / "config.yaml"
    config.write_text(config.read_text().replace("- 08\n", "- 8\n"))  # a number where a token goes
    with pytest.raises(SateError, match=rf"^init.acoustic.path \(or --init-from asr=\): {config}: token_list\[4\] is "
                                        r"8, not a token \(text\)$"):
        initialize(build("st", acoustic=ESPNET_ACOUSTIC), {"acoustic": {"path": str(pth)}}, tokens, tgt_tokens,
                   log=lambda _line: None)


def test_mt_from_an_espnet2_mt_experiment(tmp_path: Path, build: Build, batch: dict[str, Any],
                                          src_tokens: list[str], tgt_tokens: list[str]) -> None:
    """ESPnet2 MT: source embedding in frontend.embed.0, encoder without input layer, decoder."""
    textual, decoder_conf = TextualConfig(layers=1, heads=2, ffn=32), DecoderConfig(layers=1, heads=2, ffn=32)
    torch.manual_seed(5)
    embed = torch.nn.Embedding(len(src_tokens), 16)
    encoder = TransformerEncoder(16, **espnet_textual_kwargs(textual, 16)).eval()
    decoder = TransformerDecoder(len(tgt_tokens), 16, **espnet_decoder_kwargs(decoder_conf)).eval()
    state = {"frontend.embed.0.weight": embed.weight.detach()}
    state |= {f"encoder.{k}": v for k, v in encoder.state_dict().items()}
    state |= {f"decoder.{k}": v for k, v in decoder.state_dict().items()}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({
        "frontend": "embed", "frontend_conf": {"embed_dim": 16}, "encoder": "transformer",
        "encoder_conf": espnet_textual_kwargs(textual, 16), "decoder": "transformer",
        "decoder_conf": espnet_decoder_kwargs(decoder_conf), "src_token_list": src_tokens, "token_list": tgt_tokens}))
    torch.save(state, tmp_path / "valid.acc.ave.pth")
    mt = build("mt")
    path = str(tmp_path / "valid.acc.ave.pth")
    initialize(mt, {"src_embed": {"path": path}, "textual": {"path": path}, "decoder": {"path": path}},
               src_tokens, tgt_tokens, log=lambda _line: None)
    mt.eval()
    with torch.no_grad():
        ours, lengths = mt.encode_text(batch["src"], batch["src_lengths"])
        theirs, _, _ = encoder(PositionalEncoding(16, 0.0)(embed(batch["src"].clamp(min=0))), batch["src_lengths"])
        assert torch.allclose(ours, theirs, atol=1e-6)
        a, _ = teacher_forced(mt.decoder, ours, lengths, batch["tgt"], batch["tgt_lengths"])
        b, _ = teacher_forced(decoder, ours, lengths, batch["tgt"], batch["tgt_lengths"])
        assert torch.allclose(a, b, atol=1e-6)


def test_whole_model_from_a_lightning_checkpoint(tmp_path: Path, build: Build, src_tokens: list[str],
                                                 tgt_tokens: list[str]) -> None:
    source = build("st", seed=4)
    path = tmp_path / "last.ckpt"
    torch.save({"epoch": 3, "state_dict": {f"model.{k}": v for k, v in source.state_dict().items()},
                "sate": model_meta(source, src_tokens, tgt_tokens)}, path)
    target = build("st", seed=5)
    rows = initialize(target, {"model": {"path": str(path)}}, src_tokens, tgt_tokens, log=lambda _line: None)
    assert rows[0].prefix == "model." and rows[0].matched == len(source.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(source.state_dict().values(), target.state_dict().values(),
                                                  strict=True))


def _mt_file(tmp_path: Path, build: Build, src_tokens: list[str], tgt_tokens: list[str],
             edit: Callable[[dict[str, torch.Tensor]], None] | None = None, **changes: Any) -> str:
    model = build("mt", seed=2, **changes)
    state = model.state_dict()
    if edit is not None:
        edit(state)
    path = tmp_path / "mt_bad.pt"
    save_model_file(path, model, src_tokens, tgt_tokens, state_dict=state)
    return str(path)


@pytest.mark.parametrize(("case", "message"), [
    ("missing file", "checkpoint not found"),
    ("wrong prefix", r"zero keys matched under prefix 'textual.layers.' \(the checkpoint has decoder.after_norm."),
    # a setting that differs is said alone: it came after every key and shape it changed (twenty-first hostile pass)
    ("shape", r"mt_bad.pt: textual.ffn: checkpoint 64, ours 32$"),
    ("shape edited", r"shape mismatch \(checkpoint vs ours\): encoders.0.feed_forward.w_1.bias \(64,\) vs \(32,\)"),
    ("heads", r"textual.heads: checkpoint 4, ours 2"),
    ("target tokens", r"target token list differs .* first at index 2: checkpoint 't0', ours 'x0'"),
    ("leftover", r"unexpected in checkpoint: extra.weight"),
    ("missing key", r"missing from checkpoint: after_norm.bias"),
    ("pickled object", "refusing to load"),
])
def test_bad_checkpoints_fail_loudly_and_load_nothing(tmp_path: Path, build: Build, src_tokens: list[str],
                                                      tgt_tokens: list[str], case: str, message: str) -> None:
    ours_tgt = list(tgt_tokens)
    init: dict[str, Any] = {}
    if case == "missing file":
        init["textual"] = {"path": str(tmp_path / "nope.pt")}
    elif case == "wrong prefix":
        init["textual"] = {"path": _mt_file(tmp_path, build, src_tokens, tgt_tokens), "prefix": "textual.layers."}
    elif case == "shape":
        textual = {"layers": 1, "heads": 2, "ffn": 64}
        init["textual"] = {"path": _mt_file(tmp_path, build, src_tokens, tgt_tokens, textual=textual)}
    elif case == "shape edited":  # the settings agree, a tensor does not: the keys are named
        edit = lambda s: s.update({"textual.encoder.encoders.0.feed_forward.w_1.bias": torch.zeros(64)})  # noqa: E731
        init["textual"] = {"path": _mt_file(tmp_path, build, src_tokens, tgt_tokens, edit=edit)}
    elif case == "heads":
        textual = {"layers": 1, "heads": 4, "ffn": 32}
        init["textual"] = {"path": _mt_file(tmp_path, build, src_tokens, tgt_tokens, textual=textual)}
    elif case == "target tokens":
        ours_tgt[2] = "x0"
        init["decoder"] = {"path": _mt_file(tmp_path, build, src_tokens, tgt_tokens)}
    elif case == "leftover":
        path = _mt_file(tmp_path, build, src_tokens, tgt_tokens,
                        edit=lambda s: s.update({"decoder.extra.weight": torch.zeros(2)}))
        init["decoder"] = {"path": path}
    elif case == "missing key":
        init["decoder"] = {"path": _mt_file(tmp_path, build, src_tokens, tgt_tokens,
                                            edit=lambda s: s.pop("decoder.after_norm.bias"))}
    elif case == "pickled object":
        path = tmp_path / "evil.pt"
        torch.save({"format": "sate-model", "model": {}, "x": Path("/")}, path)
        init["decoder"] = {"path": str(path)}
    (tmp_path / "good").mkdir()
    good = _mt_file(tmp_path / "good", build, src_tokens, tgt_tokens)
    init = {"src_embed": {"path": good}, **init}
    model = build("mt", seed=9)
    before = model.src_embed.weight.clone()
    lines: list[str] = []
    with pytest.raises(SateError, match=message) as caught:
        initialize(model, init, src_tokens, ours_tgt, log=lines.append)
    assert "\n" not in str(caught.value)  # one line: the CLI escapes a newline, printed as a literal \n
    assert torch.equal(model.src_embed.weight, before)  # the good component was not loaded either
    if lines:
        assert "FAILED" in lines[0]


def test_espnet_experiment_problems(tmp_path: Path, build: Build, src_tokens: list[str],
                                    tgt_tokens: list[str]) -> None:
    st = build("st", acoustic=ESPNET_ACOUSTIC)
    quiet = {"log": lambda _line: None}
    _, _, pth = _espnet_asr_experiment(tmp_path / "legacy", src_tokens, rel_pos_type="legacy",
                                       pos_enc_layer_type="legacy_rel_pos",
                                       selfattention_layer_type="legacy_rel_selfattn")
    with pytest.raises(SateError, match="encoder_conf.rel_pos_type: experiment 'legacy', ours 'latest'"):
        initialize(st, {"acoustic": {"path": str(pth)}}, src_tokens, tgt_tokens, **quiet)
    _, _, pth = _espnet_asr_experiment(tmp_path / "other_tokens", src_tokens[:-2] + ["zz", "<sos/eos>"])
    with pytest.raises(SateError, match="source token list differs"):
        initialize(st, {"ctc": {"path": str(pth)}}, src_tokens, tgt_tokens, **quiet)
    with pytest.raises(SateError, match="has no SATE adaptor"):
        initialize(st, {"adaptor": {"path": str(pth)}}, src_tokens, tgt_tokens, **quiet)
    config = tmp_path / "other_tokens" / "config.yaml"  # written by another tool in Latin-1: a UnicodeDecodeError
    config.write_bytes(config.read_bytes() + "# Kölsch\n".encode("latin-1"))
    with pytest.raises(SateError, match=r"config.yaml: not UTF-8 text \(byte \d+\)"):
        initialize(st, {"ctc": {"path": str(pth)}}, src_tokens, tgt_tokens, **quiet)
    config.write_text("token_list: [a, b\nencoder: x\n")  # PyYAML's message spans four lines
    with pytest.raises(SateError, match=r"config.yaml line \d+: invalid YAML \(") as err:
        initialize(st, {"ctc": {"path": str(pth)}}, src_tokens, tgt_tokens, **quiet)
    assert "\n" not in str(err.value)
    config.unlink()
    with pytest.raises(SateError, match="config.yaml is missing"):
        initialize(st, {"ctc": {"path": str(pth)}}, src_tokens, tgt_tokens, **quiet)
    narrow = build("st")  # 4 front-end channels: ESPnet's layout has d_model channels
    _, _, pth = _espnet_asr_experiment(tmp_path / "ok", src_tokens)
    with pytest.raises(SateError, match=r"shape mismatch .*embed.conv.0.weight"):
        initialize(narrow, {"acoustic": {"path": str(pth)}}, src_tokens, tgt_tokens, **quiet)
    initialize(st, {"acoustic": {"path": str(pth), "config": str(tmp_path / "ok" / "config.yaml")}},
               src_tokens, tgt_tokens, **quiet)


@pytest.mark.parametrize(("init", "message"), [
    ({"encoder": {"path": "x"}}, "unknown component"),
    ({"model": {"path": "x"}, "decoder": {"path": "x"}}, "cannot be combined"),
    ({"decoder": "x.pt"}, "must be a mapping with a 'path'"),
    ({"decoder": {"path": "x", "strict": False}}, "unknown key"),
    ({"decoder": {"path": "x", "prefix": 3}}, "prefix must be a string"),
    ({"src_embed": {"path": "x"}}, "has no src_embed"),
])
@pytest.mark.slow
def test_init_section_errors(build: Build, src_tokens: list[str], tgt_tokens: list[str], init: dict,
                             message: str) -> None:
    with pytest.raises(SateError, match=message):
        initialize(build("st", adaptor={"type": "linear"}), init, src_tokens, tgt_tokens)


def test_lightning_checkpoint_needs_our_header(tmp_path: Path, build: Build, src_tokens: list[str],
                                               tgt_tokens: list[str]) -> None:
    path = tmp_path / "x.ckpt"
    torch.save({"state_dict": {f"model.{k}": v for k, v in build("mt").state_dict().items()}}, path)
    with pytest.raises(SateError, match="without our 'sate' header"):
        initialize(build("mt"), {"model": {"path": str(path)}}, src_tokens, tgt_tokens)


def test_an_asr_teacher_trained_on_other_cmvn_statistics_is_refused(tmp_path: Path, files: dict[str, Any],
                                                                     build: Build, src_tokens: list[str],
                                                                     tgt_tokens: list[str]) -> None:
    """The frozen ASR teacher reads the run's features: one trained before `sate features` was run again (other
    global statistics) distilled from wrongly normalised features without a word (tenth hostile pass). A resume,
    an average and a pack refused such statistics already."""
    import json

    ours = {"mean": [float(i) for i in range(80)], "std": [1.0] * 80}
    (tmp_path / "cmvn.json").write_text(json.dumps({"split": "train", "frames": 100, **ours}))
    asr = tmp_path / "asr_old.pt"
    save_model_file(asr, files["asr"], src_tokens, tgt_tokens, cmvn={**ours, "mean": [0.0] * 80})
    kd = {"asr_weight": 0.5, "asr_teacher": str(asr)}
    with pytest.raises(SateError, match=r"^.*cmvn\.json: not the CMVN statistics .*asr_old\.pt was trained with "
                                        r"\(mean\[1\] 0 then, 1 now\): the frozen model\.loss\.kd\.asr_teacher would "
                                        r"read "):
        load_teachers(build("st", loss={"kd": kd}), src_tokens, tgt_tokens, log=lambda _line: None,
                      cmvn=tmp_path / "cmvn.json")
    save_model_file(asr, files["asr"], src_tokens, tgt_tokens, cmvn=ours)
    load_teachers(build("st", loss={"kd": kd}), src_tokens, tgt_tokens, log=lambda _line: None,
                  cmvn=tmp_path / "cmvn.json")


def test_teachers_distil_and_stay_out_of_the_checkpoint(files: dict[str, Any], build: Build,
                                                         batch: dict[str, Any], src_tokens: list[str],
                                                         tgt_tokens: list[str]) -> None:
    kd = {"asr_weight": 0.5, "mt_weight": 0.5, "topk": 4, "asr_teacher": files["asr_path"],
          "mt_teacher": files["mt_path"]}
    st = build("st", seed=3, loss={"kd": kd})
    with pytest.raises(SateError, match="no ASR teacher is attached"):
        st(batch)
    initialize(st, _sate_init(files), src_tokens, tgt_tokens, log=lambda _line: None)
    lines: list[str] = []
    load_teachers(st, src_tokens, tgt_tokens, log=lines.append)
    assert len(lines) == 2 and "topk 4" in lines[0]
    names = set(st.state_dict())
    assert not any("teacher" in n for n in names)
    assert sum(p.numel() for p in st.parameters()) == sum(v.numel() for k, v in st.state_dict().items()
                                                          if "running" not in k and "num_batches" not in k)
    st.train()
    assert not st.teachers["asr"].model.training and not st.teachers["mt"].model.training
    out = st(batch)
    out["loss"].backward()
    assert {"loss_kd_asr", "loss_kd_mt"} <= set(out) and torch.isfinite(out["loss"])
    assert all(p.grad is None for p in st.teachers["mt"].model.parameters())
    st.eval()
    with torch.no_grad():
        out = st(batch)
    # The student's acoustic side is the ASR teacher: only top-k truncation separates them.
    assert out["loss_kd_asr"] < 0.5 * out["loss_ctc"]
    kd["topk"] = 0
    exact = build("st", seed=3, loss={"kd": kd})  # fresh: training mode above moved BatchNorm statistics
    initialize(exact, _sate_init(files), src_tokens, tgt_tokens, log=lambda _line: None)
    load_teachers(exact, src_tokens, tgt_tokens, log=lambda _line: None)
    with torch.no_grad():
        assert exact.eval()(batch)["loss_kd_asr"] == pytest.approx(0.0, abs=1e-5)


def test_teacher_files_are_checked(files: dict[str, Any], build: Build, src_tokens: list[str],
                                   tgt_tokens: list[str]) -> None:
    kd = {"mt_weight": 0.5, "mt_teacher": files["asr_path"]}
    with pytest.raises(SateError, match="is an asr model, not mt"):
        load_teachers(build("st", loss={"kd": kd}), src_tokens, tgt_tokens)
    kd = {"mt_weight": 0.5, "mt_teacher": files["mt_path"]}
    with pytest.raises(SateError, match="target token list differs"):
        load_teachers(build("st", loss={"kd": kd}), src_tokens, tgt_tokens[:-1])
    # a file the model-file reader refuses names the key too: `--init-from asr=EXP/checkpoints/epoch000.ckpt` loaded
    # the init table "ok", then the checkpoint's line named no teacher (32nd hostile pass)
    source = files["asr"]
    ckpt = Path(files["asr_path"]).parent / "epoch000.ckpt"
    torch.save({"epoch": 0, "state_dict": {f"model.{k}": v for k, v in source.state_dict().items()},
                "sate": model_meta(source, src_tokens, tgt_tokens)}, ckpt)
    with pytest.raises(SateError, match=rf"^model\.loss\.kd\.asr_teacher \(or --init-from asr=\): {ckpt}: a `sate "
                                        r"train` checkpoint, not a model file; "):
        load_teachers(build("st", loss={"kd": {"asr_weight": 0.5, "asr_teacher": str(ckpt)}}), src_tokens, tgt_tokens)


def test_an_espnet_experiment_as_teacher_says_what_to_do(tmp_path: Path, build: Build, src_tokens: list[str],
                                                         tgt_tokens: list[str], files: dict[str, Any]) -> None:
    """`--init-from asr=EXP/valid.acc.ave.pth` under a distilling config (the recipes' st.yaml) makes the ESPnet
    experiment the teacher too: it was "not a sate model file (format None)" after the init table had loaded it
    (30th hostile pass). The line says what a teacher is and how to go on; the file still starts the model."""
    _, _, pth = _espnet_asr_experiment(tmp_path / "exp", src_tokens)
    st = build("st", acoustic=ESPNET_ACOUSTIC, loss={"kd": {"asr_weight": 0.5, "asr_teacher": str(pth)}})
    initialize(st, {"acoustic": {"path": str(pth)}, "ctc": {"path": str(pth)}}, src_tokens, tgt_tokens,
               log=lambda _line: None)
    with pytest.raises(SateError, match=rf"^model\.loss\.kd\.asr_teacher {pth} is an ESPnet experiment's weights: .* "
                                        r"set "
                                        r"model\.loss\.kd\.asr_weight=0, or name such a file as model\.loss\.kd\."
                                        r"asr_teacher and, if --init-from asr= named the experiment .*, give the "
                                        r"experiment as init: entries \(init\.acoustic\.path, init\.ctc\.path\) in "
                                        r"its place$"):
        load_teachers(st, src_tokens, tgt_tokens)
    # followed: the experiment starts the model (init: entries), a sate model file is the teacher
    followed = build("st", acoustic=ESPNET_ACOUSTIC, loss={"kd": {"asr_weight": 0.5, "asr_teacher": files["asr_path"]}})
    initialize(followed, {"acoustic": {"path": str(pth)}, "ctc": {"path": str(pth)}}, src_tokens, tgt_tokens,
               log=lambda _line: None)
    load_teachers(followed, src_tokens, tgt_tokens, log=lambda _line: None)
    (tmp_path / "exp" / "config.yaml").unlink()  # a plain state dict alone: the model file reader's own line
    with pytest.raises(SateError, match=r"not a sate model file \(format None\)$"):
        load_teachers(st, src_tokens, tgt_tokens)


def test_an_asr_teacher_normalised_otherwise_than_the_run_is_refused(files: dict[str, Any], build: Build,
                                                                     src_tokens: list[str], tgt_tokens: list[str],
                                                                     tmp_path: Path) -> None:
    """A teacher trained on per-utterance CMVN distilled into a global-CMVN run (and the other way round) without a
    word: only the global statistics were compared (eleventh hostile pass)."""
    utterance = tmp_path / "asr_utt.pt"
    save_model_file(utterance, files["asr"], src_tokens, tgt_tokens, cmvn_kind="utterance")
    kd = {"asr_weight": 0.5, "asr_teacher": str(utterance)}
    with pytest.raises(SateError, match=rf"loss.kd.asr_teacher {utterance} was trained with utterance CMVN .* this "
                                        "run normalises with data.cmvn global"):
        load_teachers(build("st", loss={"kd": kd}), src_tokens, tgt_tokens, cmvn_kind="global")
    load_teachers(build("st", loss={"kd": kd}), src_tokens, tgt_tokens, cmvn_kind="utterance")
    stats = tmp_path / "asr_global.pt"  # a file written before cmvn_kind, with global statistics
    save_model_file(stats, files["asr"], src_tokens, tgt_tokens, cmvn={"mean": [0.0] * 80, "std": [1.0] * 80})
    with pytest.raises(SateError, match="was trained with global CMVN"):
        load_teachers(build("st", loss={"kd": {"asr_weight": 0.5, "asr_teacher": str(stats)}}), src_tokens,
                      tgt_tokens, cmvn_kind="none")
    load_teachers(build("st", loss={"kd": {"asr_weight": 0.5, "asr_teacher": files["asr_path"]}}), src_tokens,
                  tgt_tokens, cmvn_kind="none")  # a file that records neither is let be


@pytest.mark.slow
def test_an_asr_teacher_reading_other_input_than_the_student_is_refused(
        tmp_path: Path, files: dict[str, Any], build: Build, speech_hub_dir: Callable[[str, str], Path],
        src_tokens: list[str], tgt_tokens: list[str]) -> None:
    """The frozen ASR teacher reads the student's batches: a hub teacher (waveforms) in an fbank run was refused only
    at the first batch, telling the user to "set data.features waveform" (the run's were right); an fbank teacher
    in a waveform run was a conv2d RuntimeError traceback."""
    pytest.importorskip("transformers")
    from sate.models import build_model

    acoustic = {"type": "hf_wav2vec2", "path": str(speech_hub_dir("hf_wav2vec2", "group"))}
    hub_asr = build_model("asr", {"d_model": 16, "acoustic": acoustic}, len(src_tokens), len(tgt_tokens))
    save_model_file(tmp_path / "hub_asr.pt", hub_asr, src_tokens, tgt_tokens)
    kd = {"asr_weight": 0.5, "asr_teacher": str(tmp_path / "hub_asr.pt")}
    with pytest.raises(SateError, match=r"^model\.loss\.kd\.asr_teacher .*hub_asr\.pt reads waveforms \(acoustic\.type "
                                        r"hf_wav2vec2\), this run's model fbank \(acoustic\.type conformer\): the "
                                        r"frozen teacher reads the run's batches"):
        load_teachers(build("st", loss={"kd": kd}), src_tokens, tgt_tokens, log=lambda _line: None)
    kd = {"asr_weight": 0.5, "asr_teacher": files["asr_path"]}
    small = {"layers": 1, "heads": 2, "ffn": 32}
    student = build_model("st", {"d_model": 16, "acoustic": acoustic, "textual": small, "decoder": small,
                                 "loss": {"kd": kd}}, len(src_tokens), len(tgt_tokens))
    with pytest.raises(SateError, match=r"asr\.pt reads fbank \(acoustic\.type conformer\), this run's model "
                                        r"waveforms \(acoustic\.type hf_wav2vec2\)"):
        load_teachers(student, src_tokens, tgt_tokens, log=lambda _line: None)
    load_teachers(build("st", loss={"kd": kd}), src_tokens, tgt_tokens, log=lambda _line: None)  # fbank, both


def test_an_acoustic_encoder_trained_on_other_features_is_noted(tmp_path: Path, prepared_data: Path) -> None:
    """`--init-from asr=exp/asr/model.pt` after `sate features` was run again (or from another data directory's ASR
    run, or one of per-utterance CMVN into a global run) started SATE from an encoder that had never read such
    features, without a word (24th hostile pass). A frozen teacher is refused for it; an encoder to fine-tune may
    come from another corpus, so it is said, and training goes on. The same statistics, or a file that records
    none (written before sate kept them, an ESPnet model), say nothing."""
    import json

    from sate.data.cmvn_record import cmvn_record
    from sate.models.pretrained import Checkpoint, _cmvn_note

    record = cmvn_record(prepared_data / "cmvn.json")
    ckpt = lambda **meta: Checkpoint(tmp_path / "asr.pt", "sate", {}, {}, "asr", [], [], meta)  # noqa: E731
    assert _cmvn_note(ckpt(cmvn=record, cmvn_kind="global"), prepared_data / "cmvn.json", "global") is None
    assert _cmvn_note(ckpt(), prepared_data / "cmvn.json", "global") is None
    other = json.loads((prepared_data / "cmvn.json").read_text())
    other["mean"] = [m + 1 for m in other["mean"]]
    (tmp_path / "cmvn.json").write_text(json.dumps(other))
    note = _cmvn_note(ckpt(cmvn=record, cmvn_kind="global"), tmp_path / "cmvn.json", "global")
    assert note is not None and note.startswith(f"note: init acoustic <- {tmp_path / 'asr.pt'}: trained on other "
                                                f"CMVN statistics than {tmp_path / 'cmvn.json'} (mean[0] ")
    assert _cmvn_note(ckpt(cmvn=record, cmvn_kind="global"), None, "utterance") == (
        f"note: init acoustic <- {tmp_path / 'asr.pt'}: trained with global CMVN (it records the statistics), this "
        "run normalises with data.cmvn utterance: fine-tuning starts from features it never read")


@pytest.mark.slow
def test_a_ctc_head_trained_on_another_acoustic_layer_loads_and_the_table_says_so(
        tmp_path: Path, build: Build, src_tokens: list[str], tgt_tokens: list[str]) -> None:
    """A hybrid ASR model whose CTC reads layer 1 of 2 gave its head to a SATE model whose CTC reads the top layer
    under the table's bare "ok" (28th hostile pass). It loads, as docs/models.md says (fine-tuning trains the head at
    its new layer), and the table's line says where it was trained; a layer written as the top's number is the top
    (null) and says nothing."""
    acoustic = {"layers": 2, "heads": 2, "ffn": 32, "type": "conformer", "frontend_channels": 4, "kernel": 3}
    decoder = {"layers": 1, "heads": 2, "ffn": 32}
    asr = tmp_path / "asr.pt"
    init = {"acoustic": {"path": str(asr)}, "ctc": {"path": str(asr)}}
    hybrid = build("asr", seed=1, acoustic=acoustic, ctc={"layer": 1}, decoder=decoder)
    save_model_file(asr, hybrid, src_tokens, tgt_tokens)
    lines: list[str] = []
    st = build("st", acoustic=acoustic)
    rows = initialize(st, init, src_tokens, tgt_tokens, log=lines.append)
    assert [(r.component, r.ok, r.note) for r in rows] == [
        ("acoustic", True, ""),
        ("ctc", True, "trained over acoustic layer 1 of its model, reads layer 2 (the top) here")]
    assert lines[0].splitlines()[2].endswith(
        "ok; trained over acoustic layer 1 of its model, reads layer 2 (the top) here")
    assert torch.equal(st.ctc.ctc_lo.weight, hybrid.ctc.ctc_lo.weight)
    # the same layer: nothing to say
    rows = initialize(build("asr", acoustic=acoustic, ctc={"layer": 1}, decoder=decoder), init, src_tokens,
                      tgt_tokens, log=lambda _: None)
    assert [(r.component, r.ok, r.note) for r in rows] == [("acoustic", True, ""), ("ctc", True, "")]
    save_model_file(asr, build("asr", seed=1, acoustic=acoustic, ctc={"layer": 2}, decoder=decoder),
                    src_tokens, tgt_tokens)
    rows = initialize(build("st", acoustic=acoustic), init, src_tokens, tgt_tokens, log=lambda _: None)
    assert [(r.component, r.ok, r.note) for r in rows] == [("acoustic", True, ""), ("ctc", True, "")]
    # the other way: a head trained on top, read below it (the E2E baseline of Fig. 1(b))
    rows = initialize(build("asr", acoustic=acoustic, ctc={"layer": 1}, decoder=decoder), init, src_tokens,
                      tgt_tokens, log=lambda _: None)
    assert rows[1].note == "trained over acoustic layer 2 (the top) of its model, reads layer 1 here"


def test_an_espnet_ctc_head_over_another_layer_than_its_encoders_top_loads_and_the_table_says_so(
        tmp_path: Path, build: Build, src_tokens: list[str], tgt_tokens: list[str]) -> None:
    """An ESPnet2 CTC head reads its encoder's top block: put over the top of a deeper encoder of ours it was
    loaded under the table's bare "ok" (28th hostile pass); it loads, and the line says so."""
    _, _, pth = _espnet_asr_experiment(tmp_path / "exp", src_tokens)
    deeper = {**ESPNET_ACOUSTIC, "layers": 2}
    rows = initialize(build("st", acoustic=deeper), {"ctc": {"path": str(pth)}}, src_tokens, tgt_tokens,
                      log=lambda _: None)
    assert [(r.component, r.ok, r.note) for r in rows] == [
        ("ctc", True, "trained over acoustic layer 1 (its encoder's top) of its experiment, reads layer 2 (the top) "
                      "here")]
    rows = initialize(build("st", acoustic=ESPNET_ACOUSTIC), {"ctc": {"path": str(pth)}}, src_tokens, tgt_tokens,
                      log=lambda _: None)
    assert [(r.component, r.ok, r.note) for r in rows] == [("ctc", True, "")]


def test_a_downloaded_models_pytorch_model_bin_says_where_it_goes(
        tmp_path: Path, build: Build, src_tokens: list[str], tgt_tokens: list[str]) -> None:
    """`init: textual: {path: opus-mt-en-de/pytorch_model.bin}` (a plain state dict, as an ESPnet .pth is) was told
    to "set init.<component>.config", advice that could not be followed (28th hostile pass); an ESPnet experiment's
    .pth without its config.yaml is still asked for it."""
    marian = tmp_path / "opus-mt-en-de"
    marian.mkdir()
    (marian / "config.json").write_text('{"model_type": "marian"}')
    torch.save({"model.shared.weight": torch.zeros(2, 2)}, marian / "pytorch_model.bin")
    with pytest.raises(SateError, match=rf"^init.textual.path: {marian}/pytorch_model.bin: a downloaded model's "
                                        rf"weights, not a checkpoint of ours or an ESPnet experiment \({marian} is a "
                                        "downloaded model: name it in the model config, as textual.path with "
                                        "textual.type hf_marian"):
        initialize(build("mt"), {"textual": {"path": str(marian / "pytorch_model.bin")}}, src_tokens, tgt_tokens,
                   log=lambda _: None)
    (marian / "config.json").unlink()
    with pytest.raises(SateError, match="is an ESPnet-style state dict but .*config.yaml is missing"):
        initialize(build("mt"), {"textual": {"path": str(marian / "pytorch_model.bin")}}, src_tokens, tgt_tokens,
                   log=lambda _: None)
    (marian / "config.json").write_text('{"model_type": "marian"}')
    # a teacher: it was told to be named in the model config, which makes it part of the student (hand32h)
    kd = {"mt_weight": 0.5, "mt_teacher": str(marian / "pytorch_model.bin")}
    with pytest.raises(SateError, match=rf"^model.loss.kd.mt_teacher {marian}/pytorch_model.bin is a downloaded model "
                                        rf"\({marian}/config.json\), not a sate model file .*: a downloaded model is "
                                        "no MT teacher"):
        load_teachers(build("st", loss={"kd": kd}), src_tokens, tgt_tokens)


@pytest.mark.parametrize(("asr_channels", "st_channels"), [(None, 16), (16, None)])
def test_a_front_end_of_d_model_channels_is_one_front_end_however_written(
        tmp_path: Path, build: Build, tiny_conf: Callable[..., Any], src_tokens: list[str], tgt_tokens: list[str],
        asr_channels: int | None, st_channels: int | None) -> None:
    """``frontend_channels: null`` means d_model (16 here): an ASR model of one spelling into a SATE config of the
    other was refused as `acoustic.frontend_channels: checkpoint None, ours 16`, though the two front-ends are one
    (28th hostile pass); it loads, as a whole-model init does, and a front-end of other channels is still named."""
    acoustic = lambda channels: {**tiny_conf("asr")["acoustic"], "frontend_channels": channels}  # noqa: E731
    asr = build("asr", seed=3, acoustic=acoustic(asr_channels))
    save_model_file(tmp_path / "asr.pt", asr, src_tokens, tgt_tokens)
    init = {"acoustic": {"path": str(tmp_path / "asr.pt")}, "ctc": {"path": str(tmp_path / "asr.pt")}}
    st = build("st", acoustic=acoustic(st_channels))
    initialize(st, init, src_tokens, tgt_tokens, log=lambda _line: None)
    assert all(torch.equal(a, b) for a, b in zip(st.acoustic.state_dict().values(),
                                                 asr.acoustic.state_dict().values(), strict=True))
    whole = build("asr", acoustic=acoustic(st_channels))
    initialize(whole, {"model": {"path": str(tmp_path / "asr.pt")}}, src_tokens, tgt_tokens, log=lambda _line: None)
    with pytest.raises(SateError, match=rf"acoustic.frontend_channels: checkpoint {asr_channels}, ours 8$"):
        initialize(build("st", acoustic=acoustic(8)), init, src_tokens, tgt_tokens, log=lambda _line: None)
    if asr_channels is None:  # the file's null is 16 channels, as ours: another d_model is named alone (review)
        with pytest.raises(SateError, match=r"asr.pt: d_model: checkpoint 16, ours 32") as refused:
            initialize(build("st", d_model=32, acoustic=acoustic(16)), init, src_tokens, tgt_tokens,
                       log=lambda _line: None)
        assert "frontend_channels" not in str(refused.value)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.int64, torch.bool, torch.complex64])
def test_an_init_file_of_integer_boolean_or_complex_weights_is_refused(tmp_path: Path, build: Build,
                                                                       src_tokens: list[str], tgt_tokens: list[str],
                                                                       dtype: torch.dtype) -> None:
    """An `init:` entry's file of integer, boolean or complex values where the model keeps floats was cast without a
    word and its table said ok, where `model_from_file` refuses the same file (review30z). The table names the type;
    floats of another precision and whole-number floats in an integer buffer (num_batches_tracked) load."""
    path = tmp_path / "st.pt"
    st = build("st")
    save_model_file(path, st, src_tokens, tgt_tokens)
    data = torch.load(path, weights_only=True)
    key = "acoustic.encoder.embed.conv.0.weight"
    counter = "acoustic.encoder.encoders.0.conv_module.norm.num_batches_tracked"
    torch.save({**data, "model": {**data["model"], key: data["model"][key].half(),
                                  counter: data["model"][counter].float()}}, path)
    initialize(build("st"), {"acoustic": {"path": str(path)}}, src_tokens, tgt_tokens, log=lambda _line: None)
    torch.save({**data, "model": {**data["model"], key: data["model"][key].to(dtype)}}, path)
    lines: list[str] = []
    with pytest.raises(SateError, match=rf"^init failed, nothing was loaded: acoustic <- {path}: type mismatch "
                                        rf"\(checkpoint vs ours\): {key} "
                                        rf"{str(dtype).removeprefix('torch.')} vs float32$"):
        initialize(build("st"), {"acoustic": {"path": str(path)}}, src_tokens, tgt_tokens, log=lines.append)
    assert "FAILED" in lines[0]


def test_a_missing_init_file_or_teacher_names_its_key(tmp_path: Path, build: Build, src_tokens: list[str],
                                                      tgt_tokens: list[str], files: dict[str, Any]) -> None:
    """"checkpoint not found: exp/asr/model.pt" named the file but not the key that gave it, in a config of five init
    entries and two teachers (hand31t's leftover, 32nd hostile pass). A file that is there through a link loads."""
    gone = str(tmp_path / "exp" / "asr" / "model.pt")
    init = {"acoustic": {"path": gone}, "ctc": {"path": gone}, "decoder": {"path": files["mt_path"]}}
    with pytest.raises(SateError, match=rf"^init\.acoustic\.path and init\.ctc\.path \(or --init-from asr=\): "
                                        rf"checkpoint not found: {gone}$"):
        initialize(build("st"), init, src_tokens, tgt_tokens, log=lambda _line: None)
    with pytest.raises(SateError, match=r"^init\.decoder\.path: checkpoint not found: exp/mt\.pt \(relative to"):
        initialize(build("mt"), {"decoder": {"path": "exp/mt.pt"}}, src_tokens, tgt_tokens, log=lambda _line: None)
    (tmp_path / "exp" / "asr" / "checkpoints").mkdir(parents=True)
    (tmp_path / "exp" / "asr" / "checkpoints" / "last.ckpt").write_bytes(b"")
    with pytest.raises(SateError, match=r"^model\.loss\.kd\.asr_teacher \(or --init-from asr=\): .*model\.pt: no such "
                                        r"file: the experiment .* holds checkpoints but no model\.pt yet; write it"):
        load_teachers(build("st", loss={"kd": {"asr_weight": 0.5, "asr_teacher": gone}}), src_tokens, tgt_tokens)
    (tmp_path / "exp" / "asr" / "model.pt").symlink_to(files["asr_path"])
    initialize(build("st"), init, src_tokens, tgt_tokens, log=lambda _line: None)
    load_teachers(build("st", loss={"kd": {"asr_weight": 0.5, "asr_teacher": gone}}), src_tokens, tgt_tokens,
                  log=lambda _line: None)


def test_a_downloaded_model_as_teacher_says_what_a_teacher_is(tmp_path: Path, build: Build, src_tokens: list[str],
                                                             tgt_tokens: list[str], files: dict[str, Any]) -> None:
    """A Whisper or Marian directory (or its weights file) named as a teacher was told to be named in the model
    config as acoustic.path or textual.path, which makes it a part of the student, not its teacher (32nd hostile
    pass). The line names the key and the way on; a sate model file in a folder of a config.json is still read."""
    whisper, marian = tmp_path / "whisper", tmp_path / "opus-mt"
    for directory, weights in ((whisper, "model.bin"), (marian, "model.safetensors")):
        directory.mkdir()
        (directory / "config.json").write_text("{}")
        (directory / weights).write_bytes(b"\x00" * 64)
    for side, path, how in (("asr", whisper, r"the teacher reads this run's batches, fbank \(acoustic.type "
                                            r"conformer\), so it must be an ASR model file trained on this run's "
                                            r"features and source tokens"),
                            ("asr", whisper / "model.bin", "the teacher reads this run's batches, fbank"),
                            ("mt", marian / "model.safetensors", r"a downloaded model is no MT teacher .*: set "
                                                                 r"model.loss.kd.mt_weight=0, or name an MT model")):
        st = build("st", loss={"kd": {f"{side}_weight": 0.5, f"{side}_teacher": str(path)}})
        with pytest.raises(SateError, match=rf"^model.loss.kd.{side}_teacher {path} is a downloaded model "
                                            rf"\({path if path.is_dir() else path.parent}/config.json\), not a sate "
                                            rf"model file .*: {how}"):
            load_teachers(st, src_tokens, tgt_tokens)
    (marian / "mt.pt").symlink_to(files["mt_path"])
    load_teachers(build("st", loss={"kd": {"mt_weight": 0.5, "mt_teacher": str(marian / "mt.pt")}}), src_tokens,
                  tgt_tokens, log=lambda _line: None)
    # the advice followed: an ASR model file of this run's features and tokens is the teacher
    load_teachers(build("st", loss={"kd": {"asr_weight": 0.5, "asr_teacher": files["asr_path"]}}), src_tokens,
                  tgt_tokens, log=lambda _line: None)
    (marian / "cut.pt").write_bytes(Path(files["mt_path"]).read_bytes()[:-100])  # damaged: the reader's own line
    with pytest.raises(SateError, match=r"cut.pt: (?!.*downloaded)"):
        load_teachers(build("st", loss={"kd": {"mt_weight": 0.5, "mt_teacher": str(marian / "cut.pt")}}), src_tokens,
                      tgt_tokens)


def test_a_marian_or_speech_directory_as_the_other_sides_teacher(tmp_path: Path, build: Build, src_tokens: list[str],
                                                                  tgt_tokens: list[str]) -> None:
    """A Marian directory named as the ASR teacher (the two keys swapped) was told to train an ASR model from it with
    acoustic.path MARIAN_DIR, refused when followed; a Whisper directory as the MT teacher was told about hf_marian
    (fix32h). A converted OPUS-MT (no model_type) is told by its model.bin's spec."""
    marian, whisper, ct2 = tmp_path / "opus-mt", tmp_path / "whisper", tmp_path / "opus-mt-ct2"
    for directory, config in ((marian, '{"model_type": "marian"}'), (whisper, '{"model_type": "whisper"}'),
                              (ct2, "{}")):
        directory.mkdir()
        (directory / "config.json").write_text(config)
    name = b"TransformerSpec\x00"
    (ct2 / "model.bin").write_bytes(struct.pack("<IH", 6, len(name)) + name + b"\x00" * 32)
    for path in (marian, ct2 / "model.bin"):
        st = build("st", loss={"kd": {"asr_weight": 0.5, "asr_teacher": str(path)}})
        with pytest.raises(SateError, match=rf"^model.loss.kd.asr_teacher {path} is a downloaded model .*: it is a "
                                            r"text \(MT\) model, no ASR teacher: name an ASR model file"):
            load_teachers(st, src_tokens, tgt_tokens)
    st = build("st", loss={"kd": {"mt_weight": 0.5, "mt_teacher": str(whisper)}})
    with pytest.raises(SateError, match=r"a downloaded model is no MT teacher \(it is a speech model\): set "
                                        r"model.loss.kd.mt_weight=0"):
        load_teachers(st, src_tokens, tgt_tokens)


@pytest.mark.slow
def test_a_downloaded_model_as_a_waveform_students_teacher(tmp_path: Path, build: Build, src_tokens: list[str],
                                                          tgt_tokens: list[str], whisper_hub_dir: Path) -> None:
    """A student reading waveforms is told to train an ASR model from the directory, of its own acoustic.type; the
    advice followed (an ASR model file of it) is taken as the teacher (fix32h)."""
    acoustic = {"type": "whisper", "path": str(whisper_hub_dir)}
    st = build("st", acoustic=acoustic, loss={"kd": {"asr_weight": 0.5, "asr_teacher": str(whisper_hub_dir)}})
    with pytest.raises(SateError, match=r"train an ASR model from it \(acoustic.type whisper, acoustic.path "
                                        rf"{whisper_hub_dir}, this run's source tokens"):
        load_teachers(st, src_tokens, tgt_tokens)
    save_model_file(tmp_path / "asr.pt", build("asr", acoustic=acoustic), src_tokens, tgt_tokens)
    st = build("st", acoustic=acoustic, loss={"kd": {"asr_weight": 0.5, "asr_teacher": str(tmp_path / "asr.pt")}})
    load_teachers(st, src_tokens, tgt_tokens, log=lambda _line: None)


def test_an_init_files_other_reader_errors_name_the_key(tmp_path: Path, build: Build, src_tokens: list[str],
                                                        tgt_tokens: list[str], files: dict[str, Any]) -> None:
    """An init: file that is there but unreadable (a broken link, a damaged file) named the path alone, while a
    missing one and every teacher line name the key; an ESPnet entry whose config: is not there was told to "set
    init.<component>.config", which the user had (fix32h)."""
    os.symlink(tmp_path / "averaged_gone.pt", tmp_path / "link.pt")
    link = str(tmp_path / "link.pt")
    with pytest.raises(SateError, match=rf"^init.acoustic.path and init.ctc.path \(or --init-from asr=\): {link}: a "
                                        r"broken symlink"):
        initialize(build("st"), {"acoustic": {"path": link}, "ctc": {"path": link}}, src_tokens, tgt_tokens)
    (tmp_path / "cut.pt").write_bytes(Path(files["mt_path"]).read_bytes()[:-100])
    with pytest.raises(SateError, match=rf"^init.decoder.path \(or --init-from mt=\): {tmp_path / 'cut.pt'}: "):
        initialize(build("st"), {"decoder": {"path": str(tmp_path / "cut.pt")}}, src_tokens, tgt_tokens)
    pth = tmp_path / "valid.acc.ave.pth"
    torch.save(files["asr"].state_dict(), pth)
    gone = tmp_path / "gone.yaml"
    with pytest.raises(SateError, match=rf"^init.acoustic.config: the ESPnet config of {pth} not found: {gone}$"):
        initialize(build("st"), {"acoustic": {"path": str(pth), "config": str(gone)}}, src_tokens, tgt_tokens)


@pytest.mark.slow  # three inits and three analysis loads of tiny models: 1.4 s
def test_an_average_older_than_its_run_is_said_where_it_is_read(tmp_path: Path, build: Build, src_tokens: list[str],
                                                                 tgt_tokens: list[str],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """`--init-from asr=EXP/model.pt` and `sate analyze` took EXP/model.pt averaged before a resume trained on without
    a word, where `sate pack` refuses it (33rd hostile pass): a note on standard error names it and the way to the
    run's latest, and the file is read as before (an earlier average is a use of its own). One of the run's update,
    or of another run, says nothing."""
    from sate.analysis.cli import load_model

    exp = tmp_path / "exp"
    (exp / "checkpoints").mkdir(parents=True)
    save_model_file(exp / "avg.pt", build("asr", seed=1), src_tokens, tgt_tokens,
                    averaged={"run_id": "r1", "epochs": [3, 4], "step": 40})
    said = (f"note: {{}} {exp / 'avg.pt'} is the average of epochs 3, 4 written at update 40, and the run has trained "
            f"on since: {exp / 'checkpoints' / 'last.ckpt'} is at update 90 (a resume?); to use the run's latest, "
            f"average again (sate average --exp {exp} --last N --out {exp / 'avg.pt'}, or --best N)\n")
    init = {"acoustic": {"path": str(exp / "avg.pt")}}
    for run_id, step, note in (("r1", 40, ""), ("r2", 90, ""), ("r1", 90, said)):
        torch.save({"sate": {"epoch": 9, "run_id": run_id, "step": step}, "state_dict": {}},
                   exp / "checkpoints" / "last.ckpt")
        rows = initialize(build("st", seed=3), init, src_tokens, tgt_tokens, log=lambda _: None)
        assert rows[0].ok and capsys.readouterr().err == note.format("init.acoustic.path (or --init-from asr=)")
        assert load_model(exp / "avg.pt").meta["task"] == "asr"
        assert capsys.readouterr().err == note.format("the model")
