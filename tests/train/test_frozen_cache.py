"""data.frozen_cache: Whisper's frozen part computed once per utterance; training on it equals training on audio."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from sate.data.dataset import collate
from sate.data.vocab import Vocabulary
from sate.data.waveform import WaveformDataset
from sate.errors import SateError
from sate.models import build_model
from sate.models.hub.load import load_hub_parts
from sate.train.data import check_feature_mode
from sate.train.frozen_cache import (
    CACHE_DIR,
    FrozenStates,
    cache_key,
    check_teacher_cache,
    compute_split,
    is_current,
)
from sate.train.trainer import load_training_config, train


@pytest.mark.parametrize("freeze", ["all", 1, 0])
def test_the_model_on_cached_states_equals_the_model_on_audio(whisper_hub_dir: Path, prepared_data: Path,
                                                              tmp_path: Path, freeze: str | int) -> None:
    model = build_model("asr", {"d_model": 12, "acoustic": {"type": "whisper", "path": str(whisper_hub_dir),
                                                            "freeze": freeze}}, 50, 50).eval()
    load_hub_parts(model, [], [], log=lambda _: None)
    vocab = Vocabulary.load(prepared_data, "src")
    manifest = prepared_data / "dev.jsonl"
    audio = WaveformDataset(manifest, vocab, None)
    compute_split(model.acoustic, audio, manifest, tmp_path, "dev", log=False)
    assert is_current(tmp_path, "dev", manifest)
    cached = FrozenStates(audio, tmp_path, "dev")
    assert len(cached) == len(audio) == 5
    states, waves = collate([cached[i] for i in range(5)]), collate([audio[i] for i in range(5)])
    with torch.no_grad():
        from_states, state_lengths = model.acoustic(states["feats"], states["feats_lengths"])
        from_audio, audio_lengths = model.acoustic(waves["feats"], waves["feats_lengths"])
    assert torch.equal(state_lengths, audio_lengths)
    assert [n * 320 for n in state_lengths.tolist()] == cached.lengths  # batch sizes stay in samples
    scale = from_audio.abs().max()
    assert (from_states - from_audio).abs().max() <= 4e-3 * scale  # float16 storage of the states: 2^-11 relative
    assert (from_states - from_audio).abs().max() > 0  # it did read the cache, rounded


def test_the_key_follows_the_frozen_weights_only(whisper_hub_dir: Path) -> None:
    def model(freeze: str | int, seed: int) -> torch.nn.Module:
        torch.manual_seed(seed)
        m = build_model("asr", {"d_model": 12, "acoustic": {"type": "whisper", "path": str(whisper_hub_dir),
                                                            "freeze": freeze}}, 50, 50)
        load_hub_parts(m, [], [], log=lambda _: None)
        return m

    one = model(1, 0)
    assert cache_key(one.acoustic) == cache_key(model(1, 1).acoustic)  # proj and CTC differ: not frozen
    with torch.no_grad():
        one.acoustic.encoder.model.layers[1].fc1.weight.add_(1.0)  # above the frozen part
    assert cache_key(one.acoustic) == cache_key(model(1, 0).acoustic)
    with torch.no_grad():
        one.acoustic.encoder.model.layers[0].fc1.weight.add_(1.0)  # inside it
    assert cache_key(one.acoustic) != cache_key(model(1, 0).acoustic)
    assert cache_key(model("all", 0).acoustic) != cache_key(model(1, 0).acoustic)
    signed = model(1, 0)  # equal values, other bits: -0.0 where the file has 0.0 (what averaging may write)
    with torch.no_grad():
        bias = signed.acoustic.encoder.model.layers[0].qkv.bias
        bias[bias == 0] = -0.0
    assert cache_key(signed.acoustic) == cache_key(model(1, 0).acoustic)
    with pytest.raises(SateError, match="acoustic.freeze all or N"):
        cache_key(model("none", 0).acoustic)


def whisper_config(make_config: Callable[..., Path], tmp_path: Path, task: str, data: Path, acoustic: dict,
                   **sections: dict) -> Path:
    return make_config(tmp_path, task, data, model={"acoustic": acoustic, **sections.pop("model", {})},
                       data={"features": "waveform", "cmvn": "none", "frozen_cache": True},
                       batch={"per_device": 2_000_000, "global": 2_000_000}, **sections)


def test_a_cache_needs_a_frozen_whisper(make_config: Callable[..., Path], tmp_path: Path, prepared_data: Path,
                                       whisper_hub_dir: Path) -> None:
    for acoustic, wrong in (({"type": "whisper", "path": str(whisper_hub_dir)}, "freeze none"),
                            ({"type": "hf_wav2vec2", "path": str(whisper_hub_dir)}, "type hf_wav2vec2")):
        with pytest.raises(SateError, match=f"data.frozen_cache needs .*got .*{wrong}"):
            check_feature_mode(load_training_config(whisper_config(make_config, tmp_path, "asr", prepared_data,
                                                                   acoustic), []))


@pytest.mark.slow
def test_asr_then_sate_share_one_cache(make_config: Callable[..., Path], tmp_path: Path, prepared_data: Path,
                                       whisper_hub_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    shutil.copytree(prepared_data, data)
    acoustic = {"type": "whisper", "path": str(whisper_hub_dir), "freeze": "all"}
    asr = tmp_path / "asr"
    train(load_training_config(whisper_config(make_config, tmp_path, "asr", data, acoustic,
                                              trainer={"max_epochs": 2}), []), asr)
    out = capsys.readouterr().out
    assert out.count("frozen Whisper states:") == 2  # train and dev, once
    (key,) = [p.name for p in (data / CACHE_DIR).iterdir()]
    assert sorted(p.name for p in (data / CACHE_DIR / key).iterdir()) == [
        "dev.index.npy", "dev.json", "dev.npy", "train.index.npy", "train.json", "train.npy"]
    from sate.train.average import average

    average(asr / "checkpoints", asr / "model.pt", last=1)
    init = {"acoustic": {"path": str(asr / "model.pt")}, "ctc": {"path": str(asr / "model.pt")}}
    st = tmp_path / "st"
    train(load_training_config(whisper_config(make_config, tmp_path, "st", data, acoustic, init=init,
                                              model={"adaptor": {"type": "league"}}), []), st)
    assert "frozen Whisper states:" not in capsys.readouterr().out  # the same frozen weights: the same cache
    # A resume (one more epoch) keys the cache by the checkpoint's weights: no new cache either.
    train(load_training_config(whisper_config(make_config, tmp_path, "st", data, acoustic, init=init,
                                              model={"adaptor": {"type": "league"}}),
                               ["trainer.max_epochs=2"]), st)
    assert "frozen Whisper states:" not in capsys.readouterr().out
    assert [p.name for p in (data / CACHE_DIR).iterdir()] == [key]


def test_an_asr_teacher_must_share_the_frozen_part(whisper_hub_dir: Path) -> None:
    def built(task: str, freeze: str | int) -> torch.nn.Module:
        model = build_model(task, {"d_model": 12, "acoustic": {"type": "whisper", "path": str(whisper_hub_dir),
                                                               "freeze": freeze}}, 50, 50)
        load_hub_parts(model, [], [], log=lambda _: None)
        return model

    student = built("st", "all")
    student.set_teachers(asr=built("asr", "all"))
    check_teacher_cache(student)
    student.set_teachers(asr=built("asr", 1))
    with pytest.raises(SateError, match="the ASR teacher's acoustic encoder must be the same frozen Whisper"):
        check_teacher_cache(student)
