"""`sate synth`: the offline corpus has MuST-C's layout, fixed splits and clean audio."""

from __future__ import annotations

import hashlib
import random
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from sate.cli import main
from sate.data import synth
from sate.errors import SateError

YAML_LINE = re.compile(r"^- \{duration: (\d+\.\d{6}), offset: (\d+\.\d{6}), speaker_id: (spk\.\d+), "
                       r"wav: (ted_\d+\.wav)\}$")


def read_split(root: Path, split: str) -> tuple[list[str], list[str], list[str]]:
    txt = root / "en-de" / "data" / split / "txt"
    return [(txt / f"{split}.{ext}").read_text(encoding="utf-8").splitlines() for ext in ("yaml", "en", "de")]


def test_parse_aligns_sub_entries_and_strips_annotations() -> None:
    line = ("Haus {n} | Das Haus {n} ist sehr alt. | Er baut (gerade) ein neues Haus. :: "
            "house | The house is very old. | He is building a new house [Br.].\n")
    assert synth.parse_ding_line(line) == [("The house is very old.", "Das Haus ist sehr alt."),
                                           ("He is building a new house.", "Er baut ein neues Haus.")]


@pytest.mark.parametrize("line", [
    "Das ist gut. | Wir gehen heute. :: That is good.\n",  # sub-entry counts differ: cannot align
    "Das ist gut so. :: this is good so.\n",  # English not capitalised
    "Das ist gut so :: This is good so.\n",  # German lacks final punctuation
    "Gut so. :: Good so.\n",  # fewer than 4 words
    "Er kam und/oder ging. :: He came and/or went.\n",  # slash
    "Er ging … dann kam er. :: He went … then he came.\n",  # ellipsis
    "# Version :: devel\n",
])
def test_parse_rejects_non_sentences(line: str) -> None:
    assert synth.parse_ding_line(line) == []


def test_parse_takes_first_sentence_variant_and_normalises_quotes() -> None:
    line = "Das ist\u2019s gut so!; Gut so! :: It\u2019s \u201cgood\u201d like that!; Good!\n"
    assert synth.parse_ding_line(line) == [("It's \"good\" like that!", "Das ist's gut so!")]


def test_split_rule_is_the_documented_hash() -> None:
    for en in ("The house is very old.", "He kept glancing toward the entrance.", "You have the floor!"):
        h = int(hashlib.sha1(en.encode("utf-8")).hexdigest(), 16) % 100
        assert synth.split_of(en) == ("tst-COMMON" if h < 4 else "dev" if h < 8 else "train")


def test_splits_are_stable_and_disjoint(ding_pairs: list[tuple[str, str]]) -> None:
    assert 15000 < len(ding_pairs) < 17000
    splits = synth.split_pairs(ding_pairs)
    shuffled = list(ding_pairs)
    random.Random(1).shuffle(shuffled)
    again = synth.split_pairs(shuffled)
    assert {k: sorted(v) for k, v in splits.items()} == {k: sorted(v) for k, v in again.items()}
    for side in (0, 1):
        sets = {name: {pair[side] for pair in pairs} for name, pairs in splits.items()}
        assert not sets["train"] & sets["dev"] and not sets["train"] & sets["tst-COMMON"]
        assert not sets["dev"] & sets["tst-COMMON"]
    assert len(splits["train"]) > 10 * len(splits["tst-COMMON"]) > 0


def test_corpus_layout_counts_and_mt_text(synth_corpus: Path, fixture_pairs: list[tuple[str, str]],
                                         fixture_sizes: dict[str, int]) -> None:
    root = synth_corpus / "en-de"
    for split, size in fixture_sizes.items():
        yaml_lines, en, de = read_split(synth_corpus, split)
        assert len(yaml_lines) == len(en) == len(de) == size
        assert all(YAML_LINE.match(line) for line in yaml_lines), yaml_lines[0]
        assert set(zip(en, de, strict=True)) <= set(fixture_pairs)
    mt_en = (root / "mt" / "train.en").read_text(encoding="utf-8").splitlines()
    mt_de = (root / "mt" / "train.de").read_text(encoding="utf-8").splitlines()
    assert len(mt_en) == len(mt_de) == fixture_sizes["train"]


def test_segments_lie_inside_their_wav_and_are_speech(synth_corpus: Path) -> None:
    for split in synth.SPLITS:
        yaml_lines, _, _ = read_split(synth_corpus, split)
        for line in yaml_lines:
            duration, offset, _, wav = YAML_LINE.match(line).groups()
            path = synth_corpus / "en-de" / "data" / split / "wav" / wav
            info = sf.info(path)
            assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
            assert float(offset) >= 0 and float(offset) + float(duration) <= info.duration + 1e-6
            start = round(float(offset) * 16000)
            audio, _ = sf.read(path, start=start, stop=start + round(float(duration) * 16000))
            assert float(duration) > 0.5
            assert np.sqrt(np.mean(audio**2)) > 0.01, f"silent segment in {wav} at {offset}"


def test_deterministic_for_a_seed_and_reuses_finished_talks(
        tmp_path: Path, synth_corpus: Path, fixture_pairs: list[tuple[str, str]],
        fixture_sizes: dict[str, int]) -> None:
    synth.build_corpus(tmp_path, fixture_pairs, fixture_sizes["train"], seed=0, jobs=1, progress=False)
    for split in synth.SPLITS:
        assert read_split(tmp_path, split) == read_split(synth_corpus, split)
        for wav in (tmp_path / "en-de" / "data" / split / "wav").iterdir():
            assert wav.read_bytes() == (synth_corpus / "en-de" / "data" / split / "wav" / wav.name).read_bytes()
    wavs = sorted((tmp_path / "en-de" / "data").glob("*/wav/*.wav"))
    mtimes = [w.stat().st_mtime_ns for w in wavs]
    synth.build_corpus(tmp_path, fixture_pairs, fixture_sizes["train"], seed=0, jobs=1, progress=False)
    assert [w.stat().st_mtime_ns for w in wavs] == mtimes
    other = tmp_path / "seed1"
    synth.build_corpus(other, fixture_pairs, fixture_sizes["train"], seed=1, jobs=1, progress=False)
    assert read_split(other, "dev")[0] != read_split(tmp_path, "dev")[0]


def test_reserved_voices_are_never_selected(ding_pairs: list[tuple[str, str]]) -> None:
    pool = {v.key for v in synth.voice_pool()}
    assert "flite:rms" in synth.RESERVED_VOICES and not pool & synth.RESERVED_VOICES
    assert {"flite:awb", "flite:slt", "flite:kal16", "espeak:en-us+m1", "espeak:en-029+f4"} <= pool
    splits = synth.split_pairs(ding_pairs)
    used = {t.voice.key for seed in range(3) for t in synth.plan_talks(splits, len(splits["train"]), seed)}
    assert not used & synth.RESERVED_VOICES
    assert len(used) > 30  # the whole pool is in play, not a few voices
    with pytest.raises(ValueError, match="reserved"):
        synth.speak("A test sentence here.", synth.Voice("flite", "rms"), 1.0, 0.5, Path("."))


def test_larger_train_size_keeps_earlier_talks(ding_pairs: list[tuple[str, str]]) -> None:
    splits = synth.split_pairs(ding_pairs)
    small = [t for t in synth.plan_talks(splits, 500, 0) if t.split == "train"]
    large = [t for t in synth.plan_talks(splits, 2000, 0) if t.split == "train"]
    assert sum(len(t.pairs) for t in small) == 500 and sum(len(t.pairs) for t in large) == 2000
    assert [t.fingerprint() for t in small[:-1]] == [t.fingerprint() for t in large[:len(small) - 1]]
    assert all(20 <= len(t.pairs) <= 60 for t in large[:-1])


def test_missing_engine_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(synth.shutil, "which", lambda tool: None if tool == "flite" else "/usr/bin/" + tool)
    with pytest.raises(SateError, match="apt-get install flite"):
        synth.check_engines(synth.voice_pool())


def test_cli_reports_a_missing_dictionary_file(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["synth", "--out", str(tmp_path), "--ding", str(tmp_path / "nope")]) == 2
    assert f"--ding {tmp_path / 'nope'}: no such file" in capsys.readouterr().err
