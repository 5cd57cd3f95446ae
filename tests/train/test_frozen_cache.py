"""data.frozen_cache: Whisper's frozen part computed once per utterance; training on it equals training on audio."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from sate.data.dataset import collate
from sate.data.vocab import Vocabulary
from sate.data.waveform import WaveformDataset
from sate.errors import SateError
from sate.models import build_model
from sate.models.hub.load import load_hub_parts
from sate.train.frozen_cache import (
    CACHE_DIR,
    FrozenStates,
    cache_key,
    check_teacher_cache,
    compute_split,
    problem,
)
from sate.train.schema import check_feature_mode
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
    assert problem(tmp_path, "dev", manifest) is None
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
    # the two settings named, and what to do: "the same weights and acoustic.freeze" named neither
    with pytest.raises(SateError, match="the ASR teacher's acoustic encoder must be the same frozen Whisper .*: it "
                                        "freezes 1, this model all; set model.acoustic.freeze 1 as the teacher's, or "
                                        "set data.frozen_cache false$"):
        check_teacher_cache(student)
    student.set_teachers(asr=built("asr", "none"))
    with pytest.raises(SateError, match=": it freezes none, this model all; set data.frozen_cache false$"):
        check_teacher_cache(student)


def _cached_model(whisper_hub_dir: Path) -> torch.nn.Module:
    """A tiny ASR model on the hub's Whisper, frozen whole."""
    model = build_model("asr", {"d_model": 12, "acoustic": {"type": "whisper", "path": str(whisper_hub_dir),
                                                            "freeze": "all"}}, 50, 50).eval()
    load_hub_parts(model, [], [], log=lambda _: None)
    return model


def _cached_dev(whisper_hub_dir: Path, prepared_data: Path, out: Path) -> WaveformDataset:
    """The dev split's frozen states (freeze all) computed into ``out``; the split's audio dataset."""
    model = _cached_model(whisper_hub_dir)
    audio = WaveformDataset(prepared_data / "dev.jsonl", Vocabulary.load(prepared_data, "src"), None)
    compute_split(model.acoustic, audio, prepared_data / "dev.jsonl", out, "dev", log=False)
    return audio


def test_a_damaged_cache_is_computed_again_or_refused_in_one_line(whisper_hub_dir: Path, prepared_data: Path,
                                                                  tmp_path: Path) -> None:
    """The cache had no check: a cut, replaced or changed file was trained on. Now what changes a size, a header
    or the index makes the split stale (computed again before training, or one line when read); a byte changed in
    place fails the CRC of the one utterance that holds it."""
    audio = _cached_dev(whisper_hub_dir, prepared_data, tmp_path / "good")
    good = {name: (tmp_path / "good" / name).read_bytes() for name in ("dev.npy", "dev.index.npy", "dev.json")}
    cached = FrozenStates(audio, tmp_path / "good", "dev")
    header = len(good["dev.npy"]) - cached.states.nbytes
    offsets = np.load(tmp_path / "good" / "dev.index.npy")
    flip = header + int(offsets[3]) * cached.states.shape[1] * 2 + 5  # inside the fourth utterance's states
    states = np.load(tmp_path / "good" / "dev.npy")
    shifted = offsets.copy()
    shifted[1] += 1
    record = json.loads(good["dev.json"])
    damages: dict[str, tuple[str, Callable[[Path], None]]] = {
        "cut": ("dev.npy has .* bytes, .* when it was written: cut short or replaced",
                lambda d: (d / "dev.npy").write_bytes(good["dev.npy"][:-100])),
        "deleted": ("dev.npy is missing", lambda d: (d / "dev.npy").unlink()),
        "another array": ("dev.npy has .* bytes", lambda d: np.save(d / "dev.npy", states[:-1])),
        "int16, same size": ("holds int16 .*not float16 .*replaced",
                             lambda d: np.save(d / "dev.npy", states.view(np.int16))),
        "index changed": ("dev.index.npy does not match its record", lambda d: np.save(d / "dev.index.npy", shifted)),
        "not npy": ("cannot be read", lambda d: (d / "dev.npy").write_bytes(b"x" * len(good["dev.npy"]))),
        "earlier format": ("dev.json is missing or of an earlier format",
                           lambda d: (d / "dev.json").write_text(json.dumps({"manifest": record["manifest"],
                                                                              "utterances": 5}))),
    }
    for name, (says, damage) in damages.items():
        where = tmp_path / name / "good"  # the folder's name is the cache's key
        where.mkdir(parents=True)
        for file, data in good.items():
            (where / file).write_bytes(data)
        damage(where)
        why = problem(where, "dev", prepared_data / "dev.jsonl")
        assert why is not None and re.search(says, why), (name, why)
        assert problem(where, "dev", prepared_data / "dev.jsonl") is not None
        with pytest.raises(SateError, match=f"{says}.*delete .*{name}.* and train again") as err:
            FrozenStates(audio, where, "dev")
        assert "\n" not in str(err.value)
    in_place = tmp_path / "flipped" / "good"
    in_place.mkdir(parents=True)
    for file, data in good.items():
        (in_place / file).write_bytes(data)
    with (in_place / "dev.npy").open("r+b") as f:
        f.seek(flip)
        byte = f.read(1)
        f.seek(flip)
        f.write(bytes([byte[0] ^ 0x10]))
    assert problem(in_place, "dev", prepared_data / "dev.jsonl") is None  # every size holds: only the CRC tells
    damaged = FrozenStates(audio, in_place, "dev")
    for i in (0, 1, 2, 4):
        assert torch.equal(damaged[i]["feats"], cached[i]["feats"])
    utt = audio.rows[3]["id"]
    with pytest.raises(SateError, match=f"flipped/good/dev.npy: the states of {utt} .* do not match their checksum"):
        damaged[3]


def test_a_link_at_a_name_of_the_cache_is_refused_not_written_through(whisper_hub_dir: Path, prepared_data: Path,
                                                                      tmp_path: Path) -> None:
    """DATA/frozen/KEY/dev.npy (or its index or record) a symlink to a user's file: the split, stale, was computed
    again through it, the file replaced with the states (eighteenth hostile pass). Refused naming it; a hard link
    there is only renamed over."""
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    for name in ("dev.npy", "dev.index.npy", "dev.json"):
        out = tmp_path / name / "key"
        audio = _cached_dev(whisper_hub_dir, prepared_data, out)
        (out / name).unlink()
        (out / name).symlink_to(notes)
        with pytest.raises(SateError, match=f"{re.escape(str(out / name))}: a symlink \\(to {re.escape(str(notes))}"):
            compute_split(_cached_model(whisper_hub_dir).acoustic, audio, prepared_data / "dev.jsonl", out, "dev",
                          log=False)
        assert notes.read_text() == "my notes\n"
    out = tmp_path / "hard" / "key"
    _cached_dev(whisper_hub_dir, prepared_data, out)
    (out / "dev.npy").unlink()
    os.link(notes, out / "dev.npy")
    _cached_dev(whisper_hub_dir, prepared_data, out)
    assert notes.read_text() == "my notes\n" and problem(out, "dev", prepared_data / "dev.jsonl") is None


def test_another_models_cache_in_this_ones_place_is_computed_again(whisper_hub_dir: Path, prepared_data: Path,
                                                                   tmp_path: Path) -> None:
    """A cache folder copied or renamed to another key (another model's frozen states where this model's go) keeps
    every size and checksum: it was trained on without a word. Its record names the key it was computed for."""
    audio = _cached_dev(whisper_hub_dir, prepared_data, tmp_path / "0123456789abcdef")
    assert problem(tmp_path / "0123456789abcdef", "dev", prepared_data / "dev.jsonl") is None
    shutil.copytree(tmp_path / "0123456789abcdef", tmp_path / "fedcba9876543210")
    why = problem(tmp_path / "fedcba9876543210", "dev", prepared_data / "dev.jsonl")
    assert why is not None and re.search(r"fedcba9876543210/dev.npy holds the frozen states of the cache "
                                         r"'0123456789abcdef', not of fedcba9876543210 \(another model's", why), why
    with pytest.raises(SateError, match=r"not of fedcba9876543210 .*; delete .*fedcba9876543210 and train again"):
        FrozenStates(audio, tmp_path / "fedcba9876543210", "dev")


def test_training_computes_a_damaged_cache_again(make_config: Callable[..., Path], tmp_path: Path,
                                                 prepared_data: Path, whisper_hub_dir: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The data module of `sate train` says why a cache it finds damaged is computed again, then reads it."""
    from sate.data.vocab import load_vocabularies
    from sate.train.datamodule import SateDataModule
    from sate.train.setup import build_for_training

    data = tmp_path / "data"
    shutil.copytree(prepared_data, data)
    acoustic = {"type": "whisper", "path": str(whisper_hub_dir), "freeze": "all"}
    config = load_training_config(whisper_config(make_config, tmp_path, "asr", data, acoustic), [])
    src, tgt = load_vocabularies(data, "asr")
    model = build_for_training(config, src.tokens, tgt.tokens, initialize=True)

    def prepared() -> SateDataModule:
        module = SateDataModule(config, src, tgt, frozen=model.acoustic)
        module.prepare_data()
        module.setup()
        return module

    first = prepared().valid_set[0]["feats"]
    (key,) = (data / CACHE_DIR).iterdir()
    with (key / "dev.npy").open("r+b") as f:
        f.truncate(f.seek(0, 2) - 64)
    capsys.readouterr()
    again = prepared()
    printed = capsys.readouterr().out
    assert "frozen Whisper states: " in printed and "dev.npy has" in printed and "computing them again" in printed
    assert "train.npy" not in printed.split("computing them again")[0]  # the intact split is kept
    assert torch.equal(again.valid_set[0]["feats"], first)


def test_a_cache_of_audio_replaced_since_is_computed_again(whisper_hub_dir: Path, prepared_data: Path,
                                                           tmp_path: Path) -> None:
    """The record named the manifest's digest alone: a talk replaced since the states were computed (recorded again,
    re-encoded, at the same path) was trained on in its old form without a word, where `sate features` recomputes
    its fbank (twelfth hostile pass). The record stamps the audio files as a feature split's plan does."""
    import soundfile as sf

    from sate.data.manifest import read_manifest

    data = tmp_path / "data"
    shutil.copytree(prepared_data, data)
    rows = read_manifest(data / "dev.jsonl")
    talks = tmp_path / "talks"
    talks.mkdir()
    for talk in {row["audio"] for row in rows}:
        shutil.copy(talk, talks / Path(talk).name)
    (data / "dev.jsonl").write_text("".join(json.dumps({**row, "audio": str(talks / Path(row["audio"]).name)}) + "\n"
                                            for row in rows))
    _cached_dev(whisper_hub_dir, data, tmp_path / "cache")
    assert problem(tmp_path / "cache", "dev", data / "dev.jsonl") is None
    talk = talks / Path(rows[0]["audio"]).name
    wave, rate = sf.read(talk, dtype="float32")
    sf.write(talk, wave * 0.5, rate, subtype="PCM_16")  # the same size, other samples
    why = problem(tmp_path / "cache", "dev", data / "dev.jsonl")
    assert why == (f"an audio file of {data}/dev.jsonl changed since {tmp_path}/cache/dev.npy was computed (copied "
                   "again, re-encoded?)"), why


@pytest.mark.slow
def test_a_split_is_written_as_it_is_computed_never_held_whole(whisper_hub_dir: Path, tmp_path: Path) -> None:
    """Every utterance's states were kept until the split's end and then joined into a second copy (twice the
    cache in memory: 38 KB a second of audio for tiny.en, a 400-hour corpus asked for 110 GB; thirteenth hostile
    pass). Each batch now goes to its place in SPLIT.npy as it is computed: what the computation holds stays
    far below the split's states, and each utterance's states are where the index says."""
    import tracemalloc

    model = build_model("asr", {"d_model": 12, "acoustic": {"type": "whisper", "path": str(whisper_hub_dir),
                                                            "freeze": "all"}}, 50, 50).eval()
    load_hub_parts(model, [], [], log=lambda _: None)
    manifest = tmp_path / "train.jsonl"
    manifest.write_text("")

    class Silence:  # 200 rows of 0.5 to 1.5 s; samples from torch, so that what numpy holds is the states alone
        rows = [{"id": f"u{i}", "audio": str(manifest)} for i in range(200)]
        lengths = [8000 + 80 * (i % 101) * 2 for i in range(200)]
        src = tgt = [np.zeros(1, dtype=np.int64)] * 200  # what FrozenStates takes from its base

        def __len__(self) -> int:
            return len(self.rows)

        def __getitem__(self, i: int) -> dict:
            return {"id": f"u{i}", "feats": torch.rand(self.lengths[i], generator=torch.Generator().manual_seed(i)),
                    "src": torch.zeros(1, dtype=torch.long), "tgt": torch.zeros(1, dtype=torch.long)}

    compute_split(model.acoustic, Silence(), manifest, tmp_path / "first", "train", log=False)  # type: ignore[arg-type]
    tracemalloc.start()  # the second time: the first one's lazy imports are not the states
    try:
        compute_split(model.acoustic, Silence(), manifest, tmp_path / "cache", "train", log=False)  # type: ignore[arg-type]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    states = np.load(tmp_path / "cache" / "train.npy")
    assert states.shape[0] == sum((n // 160 - 1) // 2 + 1 for n in Silence.lengths)
    assert peak < states.nbytes / 4  # the states were held whole, then joined: twice their size
    cached = FrozenStates(Silence(), tmp_path / "cache", "train")  # type: ignore[arg-type]
    with torch.no_grad():
        for i in (0, 57, 199):
            item = Silence()[i]
            part, lengths = model.acoustic.encoder.model.frozen_part(
                *model.acoustic.log_mel(item["feats"][None], torch.tensor([len(item["feats"])])))
            alone = part[0, :int(lengths[0])]  # each utterance's states at its place (batched: rounding apart)
            assert (cached[i]["feats"] - alone).abs().max() <= 4e-3 * alone.abs().max()
