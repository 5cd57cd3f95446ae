"""wav2vec2, HuBERT and WavLM directories as the acoustic encoder: transformers' outputs, batch independence."""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from sate.errors import SateError
from sate.models import build_model
from sate.models.hub.load import load_hub_parts
from sate.models.hub.settings import speech_settings

transformers = pytest.importorskip("transformers")

KINDS = [("hf_wav2vec2", "group"), ("hf_wav2vec2", "layer"), ("hf_hubert", "group"), ("hf_wavlm", "group")]
LENGTHS = (4000, 2600, 1500)  # samples: 0.25, 0.16 and 0.09 s


def hub_asr(kind: str, directory: Path) -> Any:
    """A CTC model whose acoustic encoder is the directory's, loaded, with the projection set to the identity
    (d_model = hidden size) so that its output is the hub model's own."""
    model = build_model("asr", {"d_model": 16, "acoustic": {"type": kind, "path": str(directory)}}, 10, 10)
    load_hub_parts(model, [], [], log=lambda _: None)
    with torch.no_grad():
        model.acoustic.encoder.proj.weight.copy_(torch.eye(16))
        model.acoustic.encoder.proj.bias.zero_()
    return model.eval()


def waves(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor(LENGTHS)
    x = torch.zeros(len(LENGTHS), max(LENGTHS))
    for i, n in enumerate(LENGTHS):
        x[i, :n] = 0.1 * torch.randn(n, generator=g) + 0.05  # an offset, so that normalising matters
    return x, lengths


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "norm"), KINDS)
def test_outputs_equal_transformers(kind: str, norm: str, speech_hub_dir: Callable[[str, str], Path]) -> None:
    """Each utterance of a padded batch gives what transformers gives it alone, its feature extractor's
    normalisation included."""
    directory = speech_hub_dir(kind, norm)
    ours = hub_asr(kind, directory)
    theirs = transformers.AutoModel.from_pretrained(directory).eval()
    extractor = transformers.Wav2Vec2FeatureExtractor.from_pretrained(directory)
    x, lengths = waves()
    with torch.no_grad():
        out, out_lengths = ours.acoustic(x, lengths)
        for i, n in enumerate(LENGTHS):
            inputs = extractor(x[i, :n].numpy(), sampling_rate=16000, return_tensors="pt")
            want = theirs(inputs["input_values"]).last_hidden_state[0]
            assert int(out_lengths[i]) == want.size(0)
            torch.testing.assert_close(out[i, :want.size(0)], want, atol=1e-4, rtol=1e-4)
    assert float(out.abs().max()) > 0.5


def test_transformers_group_norm_model_depends_on_padding(speech_hub_dir: Callable[[str, str], Path]) -> None:
    """Why the masked group norm exists: transformers' own output for a padded utterance differs from its output
    alone (its group norm counts the padding); ours does not (tests/models/test_padding.py)."""
    directory = speech_hub_dir("hf_wav2vec2", "group")
    theirs = transformers.AutoModel.from_pretrained(directory).eval()
    x, lengths = waves()
    n = LENGTHS[2]
    with torch.no_grad():
        alone = theirs(x[2:3, :n]).last_hidden_state[0]
        padded = theirs(x[2:3]).last_hidden_state[0, :alone.size(0)]
    assert float((alone - padded).abs().max()) > 1e-2


def test_the_frozen_feature_extractor_gets_no_gradient(speech_hub_dir: Callable[[str, str], Path]) -> None:
    directory = speech_hub_dir("hf_wav2vec2", "group")
    model = build_model("asr", {"d_model": 16, "acoustic": {"type": "hf_wav2vec2", "path": str(directory)}}, 10, 10)
    x, lengths = waves()
    batch = {"feats": x, "feats_lengths": lengths, "src": torch.tensor([[2, 3], [4, -1], [5, -1]]),
             "src_lengths": torch.tensor([2, 1, 1])}
    model(batch)["loss"].backward()
    extractor = model.acoustic.encoder.model.feature_extractor
    assert all(p.grad is None for p in extractor.parameters())
    assert model.acoustic.encoder.proj.weight.grad is not None


def test_speech_directory_errors(speech_hub_dir: Callable[[str, str], Path], tmp_path: Path) -> None:
    from sate.models.config import resolve_config

    with pytest.raises(SateError, match="needs acoustic.path"):
        build_model("asr", {"acoustic": {"type": "hf_wavlm"}}, 10, 10)
    bad = tmp_path / "bad"
    shutil.copytree(speech_hub_dir("hf_hubert", "group"), bad)
    with pytest.raises(SateError, match="model_type is 'hubert'"):
        resolve_config("asr", {"acoustic": {"type": "hf_wav2vec2", "path": str(bad)}})
    with pytest.raises(SateError, match="acoustic.kernel is set but does nothing"):
        resolve_config("asr", {"acoustic": {"type": "hf_hubert", "path": str(bad), "kernel": 7}})
    with pytest.raises(SateError, match="acoustic.layers is 3"):
        resolve_config("asr", {"acoustic": {"type": "hf_hubert", "path": str(bad), "layers": 3}})
    config = json.loads((bad / "config.json").read_text())
    (bad / "config.json").write_text(json.dumps({**config, "feat_extract_activation": "relu"}))
    with pytest.raises(SateError, match="feat_extract_activation"):
        resolve_config("asr", {"acoustic": {"type": "hf_hubert", "path": str(bad)}})
    (bad / "config.json").write_text(json.dumps(config))
    (bad / "preprocessor_config.json").unlink()
    with pytest.raises(SateError, match="preprocessor_config.json is missing"):
        resolve_config("asr", {"acoustic": {"type": "hf_hubert", "path": str(bad)}})


@pytest.mark.parametrize(("change", "message"), [
    ({"hidden_size": 16.5}, r"hidden_size is 16.5; a size must be a whole number of at least 1"),  # TypeError
    ({"hidden_size": -16}, r"hidden_size is -16; a size must be"),  # torch's "negative dimension"
    ({"conv_dim": [0] * 7}, r"conv_dim is \[0, 0, 0, 0, ...\]; each layer's size must be at least 1"),  # 1/0
    ({"conv_stride": [0] * 7}, r"conv_stride is .*; each layer's size must be at least 1"),  # at the first batch
    ({"num_attention_heads": 3}, r"hidden_size 16 is not divisible by num_attention_heads 3"),  # ValueError
    ({"hidden_dropout": 2.0}, r"hidden_dropout is 2.0; a dropout must be a number from 0 to 1"),  # ValueError
    ({"layer_norm_eps": float("nan")}, r"layer_norm_eps is nan; it must be a positive number"),  # NaN losses
    # sizes that disagree with the weights: torch's loader listed every tensor that did not fit
    ({"hidden_size": 32}, r"says hidden_size 32, the weights have 16 "
                          r"\(feature_projection.projection.weight\)"),
    ({"num_hidden_layers": 1}, r"says num_hidden_layers 1, the weights have 2 \(encoder.layers\)"),
    ({"intermediate_size": 64}, r"says intermediate_size 64, the weights have 32 \(encoder.layers.0.feed_forward"),
    ({"conv_kernel": [10, 3, 3, 3, 3, 2, 3]}, r"says conv_kernel\[6\] 3, the weights have 2 "
                                              r"\(feature_extractor.conv_layers.6.conv.weight\)"),
    ({"conv_dim": [16] * 8, "conv_kernel": [10, 3, 3, 3, 3, 2, 2, 2], "conv_stride": [5, 2, 2, 2, 2, 2, 2, 2]},
     r"says 8 convolutions \(conv_dim\), the weights have 7"),
])
def test_a_speech_config_that_cannot_build_its_weights_is_one_line(change: dict[str, Any], message: str,
                                                                    speech_hub_dir: Callable[[str, str], Path],
                                                                    tmp_path: Path) -> None:
    """Hostile or mistaken sizes in a wav2vec2 config.json were tracebacks, a silent NaN or a list of every tensor;
    each is one line naming the key, when the config is resolved, before anything is built."""
    from sate.models.config import resolve_config

    bad = tmp_path / "bad"
    shutil.copytree(speech_hub_dir("hf_wav2vec2", "group"), bad)
    config = json.loads((bad / "config.json").read_text())
    (bad / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(SateError, match=rf"^{bad}/config.json:? {message}") as err:
        resolve_config("asr", {"acoustic": {"type": "hf_wav2vec2", "path": str(bad)}})
    assert len(str(err.value)) < 300


def test_a_nan_in_a_tensor_sate_drops_does_not_refuse_the_model(speech_hub_dir: Callable[[str, str], Path],
                                                               tmp_path: Path) -> None:
    """The weights' check covers the tensors sate reads: a NaN in a CTC model's lm_head (another head, dropped)
    refused the directory as damaged (28th hostile pass, review); one in the encoder still is."""
    from safetensors.torch import load_file, save_file

    directory = tmp_path / "ctc"
    shutil.copytree(speech_hub_dir("hf_wav2vec2", "group"), directory)
    state = load_file(directory / "model.safetensors")
    state["lm_head.weight"] = torch.full((12, 16), float("nan"))
    state["lm_head.bias"] = torch.zeros(12, dtype=torch.int64)  # not float either: dropped all the same
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    model = hub_asr("hf_wav2vec2", directory)
    assert all(bool(torch.isfinite(p).all()) for p in model.parameters())
    state["encoder.layers.0.feed_forward.output_dense.weight"][0, 0] = float("inf")
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(SateError, match=rf"^{directory}/model.safetensors: encoder.layers.0.feed_forward.output_dense"
                                        r".weight holds NaN or infinite values"):
        hub_asr("hf_wav2vec2", directory)


@pytest.mark.slow  # two models built and loaded: 0.45 s
def test_a_tensor_missing_or_too_many_names_the_file_and_its_own_name(speech_hub_dir: Callable[[str, str], Path],
                                                                       tmp_path: Path) -> None:
    """A tensor too many was named "acoustic: unexpected in the directory: encoder.transformer.layers.0.adapter.weight",
    neither the file nor its own name for it (30th hostile pass): now both, the model's prefix of a model with a head
    (wav2vec2.) kept; a missing one is named in sate's names, said to be so."""
    from safetensors.torch import load_file, save_file

    directory = tmp_path / "ctc"
    shutil.copytree(speech_hub_dir("hf_wav2vec2", "group"), directory)
    state = {f"wav2vec2.{k}": v for k, v in load_file(directory / "model.safetensors").items()}
    state["wav2vec2.encoder.layers.0.adapter.weight"] = torch.zeros(3)
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(SateError, match=rf"nothing was loaded: {directory}/model.safetensors: acoustic: unexpected: "
                                        r"wav2vec2\.encoder\.layers\.0\.adapter\.weight$"):
        hub_asr("hf_wav2vec2", directory)
    del state["wav2vec2.encoder.layers.0.adapter.weight"], state["wav2vec2.encoder.layer_norm.weight"]
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(SateError, match=rf"{directory}/model.safetensors: acoustic: missing: "
                                        r"encoder\.transformer\.layer_norm\.weight \(sate's name\)$"):
        hub_asr("hf_wav2vec2", directory)
    # a head's tensors that no rename matches are the file's own names: they were called sate's (fix30h)
    state.update({"wav2vec2.encoder.layer_norm.weight": torch.ones(state["wav2vec2.encoder.layer_norm.bias"].shape),
                  "projector.weight": torch.zeros(3, 4), "classifier.weight": torch.zeros(2, 3)})
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(SateError, match=rf"{directory}/model.safetensors: acoustic: unexpected: classifier\.weight, "
                                        r"projector\.weight$"):
        hub_asr("hf_wav2vec2", directory)


def test_a_whisper_at_a_speech_path_is_said_to_be_one(whisper_hub_dir: Path, tmp_path: Path) -> None:
    """A Whisper directory named with acoustic.type hf_wav2vec2 was "model_type is None" (CTranslate2's, the one
    `sate fetch-whisper` prints) or "model_type is 'whisper'", not saying which type reads it (33rd hostile pass)."""
    ct2 = tmp_path / "ct2"
    ct2.mkdir()
    name = b"WhisperSpec\0"
    (ct2 / "model.bin").write_bytes(struct.pack("<IH", 6, len(name)) + name + struct.pack("<I", 3))
    (ct2 / "config.json").write_text('{"suppress_ids": [], "suppress_ids_begin": []}')
    for directory, was in ((whisper_hub_dir, "'whisper'"), (ct2, "None")):
        with pytest.raises(SateError, match=rf"config.json: model_type is {was}, acoustic.type hf_wav2vec2 needs "
                                            r"'wav2vec2'; it is a Whisper, which acoustic.type whisper reads$"):
            speech_settings(directory, "hf_wav2vec2")


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64])
def test_a_speech_model_in_another_dtype_reads_float32_waveforms(speech_hub_dir: Callable[[str, str], Path],
                                                                 dtype: torch.dtype) -> None:
    """A pack whose model a notebook cast (`st.model.to(torch.bfloat16)`) is given float32 waveforms, as the Whisper
    encoder is: torch's "expected scalar type Float but found BFloat16" (review33a)."""
    ours = hub_asr("hf_wav2vec2", speech_hub_dir("hf_wav2vec2", "group"))
    x, lengths = waves()
    with torch.no_grad():
        want, want_lengths = ours.acoustic(x, lengths)
        got, got_lengths = ours.to(dtype).acoustic(x, lengths)
    assert got.dtype == dtype and torch.equal(got_lengths, want_lengths)
    assert torch.allclose(got.float(), want, atol=0.15 if dtype == torch.bfloat16 else 1e-5)
