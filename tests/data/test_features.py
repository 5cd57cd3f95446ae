"""`sate features`: the ark/scp store, CMVN from train, resuming, parallel shards, speed perturbation."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

import sate.data.features as features
from sate.data.audio import num_frames, read_segment
from sate.data.feature_index import FeatureIndex
from sate.data.features import check_stored_files, compute_fbank, load_cmvn
from sate.data.manifest import read_manifest
from sate.errors import SateError


@pytest.fixture
def prepped(run_sate, corpus: Path, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    assert run_sate("prep", "--mustc-root", corpus, "--out", data)[0] == 0
    return data


def test_store_holds_one_matrix_per_row(prepared: Path) -> None:
    for split, count in (("train", 15), ("dev", 4), ("tst-COMMON", 6)):
        rows = read_manifest(prepared / f"{split}.jsonl")
        store = FeatureIndex(prepared / "fbank" / f"{split}.scp")
        assert list(store) == [r["id"] for r in rows] and len(rows) == count
        for row in rows:
            feats = store[row["id"]]
            assert feats.dtype == np.float32 and feats.shape == (row["n_frames"], 80)
        row = rows[-1]
        expected = compute_fbank(read_segment(row["audio"], row["offset"], row["duration"]))
        np.testing.assert_array_equal(store[row["id"]], expected)
    assert not list(prepared.glob("fbank/**/*.wav")) and not list(prepared.glob("fbank/**/.*tmp*"))


def test_features_are_undithered_kaldi_fbank(prepared: Path) -> None:
    import torch
    import torchaudio.compliance.kaldi as kaldi

    row = read_manifest(prepared / "dev.jsonl")[0]
    wave = torch.from_numpy(read_segment(row["audio"], row["offset"], row["duration"])).unsqueeze(0) * 32768
    reference = kaldi.fbank(wave, num_mel_bins=80, frame_length=25, frame_shift=10, dither=0.0,
                            sample_frequency=16000).numpy()
    stored = FeatureIndex(prepared / "fbank" / "dev.scp")[row["id"]]
    np.testing.assert_allclose(stored, reference, rtol=1e-5, atol=1e-4)


def test_cmvn_is_global_mean_and_std_of_train(prepared: Path) -> None:
    store = FeatureIndex(prepared / "fbank" / "train.scp")
    frames = np.concatenate([store[k] for k in store]).astype(np.float64)
    mean, std = load_cmvn(prepared / "cmvn.json")
    np.testing.assert_allclose(mean, frames.mean(0), rtol=1e-5)
    np.testing.assert_allclose(std, frames.std(0), rtol=1e-4)
    assert json.loads((prepared / "cmvn.json").read_text())["frames"] == len(frames)


def test_rerun_skips_finished_work(run_sate, prepared: Path) -> None:
    arks = {p: p.stat().st_mtime_ns for p in prepared.glob("fbank/*/*.ark")}
    rc, out, _ = run_sate("features", "--data", prepared, "--jobs", "1")
    assert rc == 0 and out.count("up to date") == 3 and "wrote" not in out
    assert {p: p.stat().st_mtime_ns for p in prepared.glob("fbank/*/*.ark")} == arks


def test_resume_recomputes_only_unfinished_shards(run_sate, prepped: Path, monkeypatch) -> None:
    monkeypatch.setattr(features, "SHARD_SIZE", 4)
    assert run_sate("features", "--data", prepped, "--splits", "train", "--jobs", "1")[0] == 0
    shards = sorted((prepped / "fbank" / "train").glob("*.ark"))
    assert len(shards) == 4
    before = {p: p.stat().st_mtime_ns for p in shards}
    complete = (prepped / "fbank" / "train.scp").read_text()
    cmvn = (prepped / "cmvn.json").read_text()
    # as if killed while writing shard 2: its index and the split index were never written
    shards[2].with_suffix(".scp").unlink()
    (prepped / "fbank" / "train.scp").unlink()
    (prepped / "cmvn.json").unlink()
    rc, out, _ = run_sate("features", "--data", prepped, "--splits", "train", "--jobs", "1")
    assert rc == 0 and "train: 15 utterances, 1 of 4 shards to compute (3 done before)" in out
    after = {p: p.stat().st_mtime_ns for p in shards}
    assert [before[p] == after[p] for p in shards] == [True, True, False, True]
    assert (prepped / "fbank" / "train.scp").read_text() == complete
    assert (prepped / "cmvn.json").read_text() == cmvn


def test_changed_manifest_recomputes_the_split(run_sate, prepped: Path) -> None:
    assert run_sate("features", "--data", prepped, "--splits", "dev", "--jobs", "1")[0] == 0
    path = prepped / "dev.jsonl"
    rows = read_manifest(path)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:2]))
    rc, out, _ = run_sate("features", "--data", prepped, "--splits", "dev", "--jobs", "1")
    assert rc == 0 and "dev: 2 utterances, 1 of 1 shards to compute" in out
    assert list(FeatureIndex(prepped / "fbank" / "dev.scp")) == [r["id"] for r in rows[:2]]
    assert "note: " in out and not (prepped / "cmvn.json").exists()  # no train split processed


def test_the_note_of_no_cmvn_shows_the_name_escaped(run_sate, prepped: Path, tmp_path: Path) -> None:
    # Eighteenth hostile pass: a line break or a terminal escape in the data directory's name was printed as it is.
    data = tmp_path / "d\n\x1b[31m"
    prepped.rename(data)
    rc, out, _ = run_sate("features", "--data", data, "--splits", "dev", "--jobs", "1")
    assert rc == 0 and out.splitlines()[-1] == (f"note: {tmp_path}/d\\n\\x1b[31m/cmvn.json not written: the train "
                                                "split was not processed")
    scp = data / "fbank" / "dev.scp"
    lines = scp.read_text().splitlines()
    scp.write_text("\n".join([lines[1], lines[0], *lines[2:]]) + "\n")  # edited: written again, saying so
    rc, out, _ = run_sate("features", "--data", data, "--splits", "dev", "--jobs", "1")
    assert rc == 0 and f"dev: its index {tmp_path}/d\\n\\x1b[31m/fbank/dev.scp is not the one" in out, out


def test_a_split_whose_shard_index_is_gone_is_computed_again(run_sate, prepped: Path) -> None:
    # Nineteenth hostile pass: with fbank/dev/00000.scp deleted, the split's index could not be compared with it, and
    # `sate features` called dev up to date, while the readers said to run it (or read a swapped index).
    assert run_sate("features", "--data", prepped, "--splits", "dev", "--jobs", "1")[0] == 0
    scp, shard = prepped / "fbank" / "dev.scp", prepped / "fbank" / "dev" / "00000.scp"
    lines = scp.read_text().splitlines()
    (a, at), (b, bt) = (line.split(" ") for line in lines[:2])
    scp.write_text("\n".join([f"{a} {bt}", f"{b} {at}", *lines[2:]]) + "\n")
    shard.unlink()
    rc, out, _ = run_sate("features", "--data", prepped, "--splits", "dev", "--jobs", "1")
    assert rc == 0 and f"dev: 1 shard index(es) missing ({shard}), against which its index {scp} is checked" in out
    assert "dev: 4 utterances, 1 of 1 shards to compute" in out and scp.read_text().splitlines() == lines


def test_a_shard_folder_holding_files_sate_did_not_write_is_not_emptied(run_sate, prepped: Path) -> None:
    # Twelfth hostile pass: DATA/fbank/dev/ holding the user's files (another tool's features) was emptied with
    # its old shards, without a word.
    assert run_sate("features", "--data", prepped, "--splits", "dev", "--jobs", "1")[0] == 0
    shards = prepped / "fbank" / "dev"
    (shards / "feats.ark").write_bytes(b"another tool's")
    path = prepped / "dev.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in read_manifest(path)[:2]))  # the split is computed again
    rc, _, err = run_sate("features", "--data", prepped, "--splits", "dev", "--jobs", "1")
    assert rc == 2 and f"{shards}: holds feats.ark, which sate features did not write" in err
    assert (shards / "feats.ark").read_bytes() == b"another tool's" and (shards / "00000.ark").is_file()
    (shards / "feats.ark").unlink()
    # seventeenth hostile pass: a hidden name was taken for one of sate's temporary files and deleted
    (shards / ".gitignore").write_text("*\n")
    rc, _, err = run_sate("features", "--data", prepped, "--splits", "dev", "--jobs", "1")
    assert rc == 2 and f"{shards}: holds .gitignore, which sate features did not write" in err
    (shards / ".gitignore").unlink()
    # eighteenth hostile pass: a folder of the user's under a temporary name, and a name in other digits than 0-9,
    # were taken for sate's own and deleted with what they held
    (shards / ".00000.ark.tmp").mkdir()
    (shards / ".00000.ark.tmp" / "notes.txt").write_text("mine")
    (shards / "\u0660\u0660\u0660\u0660\u0661.ark").write_text("mine")  # Arabic-Indic 00001.ark
    rc, _, err = run_sate("features", "--data", prepped, "--splits", "dev", "--jobs", "1")
    assert rc == 2 and f"{shards}: holds .00000.ark.tmp and 1 more, which sate features did not write" in err, err
    assert (shards / ".00000.ark.tmp" / "notes.txt").read_text() == "mine"
    shutil.rmtree(shards / ".00000.ark.tmp")
    (shards / "\u0660\u0660\u0660\u0660\u0661.ark").unlink()
    for leftover in (".00000.ark.tmp", ".00000.stats.npz.tmp.npz", ".plan.json.ab3d_f9x.tmp"):  # killed runs'
        (shards / leftover).write_bytes(b"half")
    assert run_sate("features", "--data", prepped, "--splits", "dev", "--jobs", "1")[0] == 0
    assert sorted(p.name for p in shards.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("how", ["hard-link", "symlink"])
def test_a_link_at_a_shards_temporary_name_is_not_written_through(run_sate, prepped: Path, tmp_path: Path,
                                                                  how: str) -> None:
    """A shard's fixed temporary names (its ark's, its sums') another name of a user's file: the shard computed
    again replaced the file with features (and the ark renamed into place kept it as another name), exit 0
    (eighteenth hostile pass). Each is made anew."""
    assert run_sate("features", "--data", prepped, "--splits", "train", "--jobs", "1")[0] == 0
    shards = prepped / "fbank" / "train"
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    for name in (".00000.ark.tmp", ".00000.stats.npz.tmp.npz"):
        os.link(notes, shards / name) if how == "hard-link" else (shards / name).symlink_to(notes)
    (shards / "00000.scp").unlink()  # the shard is computed again
    (prepped / "fbank" / "train.scp").unlink()
    assert run_sate("features", "--data", prepped, "--splits", "train", "--jobs", "1")[0] == 0
    assert notes.read_text() == "my notes\n" and os.stat(notes).st_nlink == 1
    assert not os.path.samefile(notes, shards / "00000.ark") and len(FeatureIndex(prepped / "fbank" / "train.scp"))


@pytest.mark.parametrize("name", ["sizes.json", "00000.crc.json"])
def test_a_link_or_a_directory_in_place_of_a_stored_file_is_refused_before_any_work(
        run_sate, prepped: Path, tmp_path: Path, name: str) -> None:
    # Fourteenth hostile pass: DATA/fbank/dev/sizes.json (or a shard's crc.json) linked to a pack's model.pt was
    # written through when the shard was computed again, replacing the model with the record, exit 0; a directory
    # there (or at fbank/dev.scp) failed after the work, naming a temporary file.
    assert run_sate("features", "--data", prepped, "--splits", "dev", "--jobs", "1")[0] == 0
    shards = prepped / "fbank" / "dev"
    model = tmp_path / "model.pt"
    model.write_bytes(b"PK\x03\x04 the weights")
    (shards / name).unlink()
    (shards / name).symlink_to(model)
    (shards / "00000.ark").unlink()  # the shard is computed again
    rc, _, err = run_sate("features", "--data", prepped, "--splits", "dev", "--jobs", "1")
    assert rc == 2 and err.strip().endswith(f"error: {shards / name}: a symlink (to {model}), where `sate features` "
                                            "keeps a file of its own (written anew at each run); remove it"), err
    assert model.read_bytes() == b"PK\x03\x04 the weights"
    (shards / name).unlink()
    (prepped / "fbank" / "dev.scp").unlink()
    (prepped / "fbank" / "dev.scp").mkdir()
    rc, _, err = run_sate("features", "--data", prepped, "--splits", "dev", "--jobs", "1")
    assert rc == 2 and f"{prepped / 'fbank' / 'dev.scp'}: a directory, where `sate features` keeps" in err, err
    (prepped / "fbank" / "dev.scp").rmdir()
    assert run_sate("features", "--data", prepped, "--splits", "dev", "--jobs", "1")[0] == 0


def test_features_whose_audio_is_gone_are_kept_when_the_manifest_changed(run_sate, prepped: Path,
                                                                        tmp_path: Path) -> None:
    # Thirteenth hostile pass: a data directory received with its features and without its audio, its manifests'
    # paths edited to this machine: every split's features were deleted, then 'audio file is missing'.
    assert run_sate("features", "--data", prepped, "--jobs", "1")[0] == 0
    before = {p: p.read_bytes() for p in (prepped / "fbank").rglob("*") if p.is_file()}
    gone = tmp_path / "alice" / "talk.wav"
    path = prepped / "dev.jsonl"
    path.write_text("".join(json.dumps({**r, "audio": str(gone)}) + "\n" for r in read_manifest(path)))
    path = prepped / "train.jsonl"  # its audio is there: it comes first, and is not emptied before dev is refused
    path.write_text("".join(json.dumps(r) + "\n" for r in read_manifest(path)[:-1]))
    rc, _, err = run_sate("features", "--data", prepped, "--jobs", "1")
    assert rc == 2 and err.strip() == (f"sate features: error: {gone}: audio file is missing, and "
                                       f"{prepped / 'dev.jsonl'} changed since its features were computed: they "
                                       "would be deleted before the audio is read again; put the audio where the "
                                       "manifest says, or undo the manifest's change")
    assert {p: p.read_bytes() for p in (prepped / "fbank").rglob("*") if p.is_file()} == before
    gone.mkdir(parents=True)  # a folder where the audio was is named as one: it was "audio file is missing"
    rc, _, err = run_sate("features", "--data", prepped, "--jobs", "1")
    assert rc == 2 and err.startswith(f"sate features: error: {gone}: a directory, not an audio file, and ")


@pytest.mark.slow
def test_parallel_jobs_give_the_same_store(run_sate, prepared: Path, prepped: Path, monkeypatch) -> None:
    monkeypatch.setattr(features, "SHARD_SIZE", 3)
    assert run_sate("features", "--data", prepped, "--jobs", "2")[0] == 0
    assert len(list((prepped / "fbank" / "train").glob("*.ark"))) == 5
    for split in ("train", "dev", "tst-COMMON"):
        serial = FeatureIndex(prepared / "fbank" / f"{split}.scp")
        parallel = FeatureIndex(prepped / "fbank" / f"{split}.scp")
        assert list(serial) == list(parallel)
        for key in serial:
            np.testing.assert_array_equal(serial[key], parallel[key])
    np.testing.assert_allclose(load_cmvn(prepped / "cmvn.json")[0], load_cmvn(prepared / "cmvn.json")[0], rtol=1e-6)


@pytest.mark.slow
def test_speed_perturbation_adds_train_sp(run_sate, prepped: Path) -> None:
    rc, out, _ = run_sate("features", "--data", prepped, "--jobs", "1", "--speed-perturb")
    assert rc == 0
    train = read_manifest(prepped / "train.jsonl")
    sp = read_manifest(prepped / "train_sp.jsonl")
    assert len(sp) == 3 * len(train)
    assert [r["id"] for r in sp] == [r["id"] for r in train] + [f"sp{s}-{r['id']}" for s in (0.9, 1.1) for r in train]
    slow, fast = sp[len(train)], sp[2 * len(train)]
    assert slow["speed"] == 0.9 and fast["speed"] == 1.1 and slow["speaker"] == "sp0.9-" + train[0]["speaker"]
    assert fast["n_frames"] < train[0]["n_frames"] < slow["n_frames"]
    assert slow["offset"] == train[0]["offset"] and slow["duration"] == train[0]["duration"]
    store = FeatureIndex(prepped / "fbank" / "train_sp.scp")
    assert list(store) == [r["id"] for r in sp]
    assert all(store[r["id"]].shape == (r["n_frames"], 80) for r in sp)
    original = FeatureIndex(prepped / "fbank" / "train.scp")
    np.testing.assert_array_equal(store[train[0]["id"]], original[train[0]["id"]])
    assert not (prepped / "fbank" / "train_sp" / "00000.stats.npz").exists()  # CMVN stays train-only
    rc, out, _ = run_sate("features", "--data", prepped, "--jobs", "1")
    # the count is the split's rows, train's among them (it was the speed copies', 2/3 of them: 28th hostile pass)
    assert rc == 0 and f"train_sp: {3 * len(train)} utterances ({len(train)} with train's features, " \
        f"{2 * len(train)} speed copies), up to date" in out and "written again" not in out
    # its index, train's lines and then its own shards', is compared with them as any split's is: two lines swapped
    # gave each id the other's features, without a word where their frame counts were equal (eighteenth pass)
    index = prepped / "fbank" / "train_sp.scp"
    lines = index.read_text().splitlines()
    for k in (0, len(train)):  # a line of train's, a line of its own
        (a, at), (b, bt) = lines[k].split(" "), lines[k + 1].split(" ")
        index.write_text("\n".join([*lines[:k], f"{a} {bt}", f"{b} {at}", *lines[k + 2:]]) + "\n")
        assert features.stale_features(prepped, "train_sp", sp) == f"{index} is not the index its shards make (edited?)"
    assert run_sate("features", "--data", prepped, "--jobs", "1")[0] == 0 and index.read_text().splitlines() == lines


@pytest.mark.slow
def test_train_sp_follows_a_changed_train_split(run_sate, prepped: Path) -> None:
    """train_sp.jsonl was written once, by --speed-perturb: after train.jsonl changed (a row removed, a translation
    corrected) training on train_sp said "run sate features", which left train_sp alone ("up to date"), and a
    corrected translation was trained on in its old form without a word (eleventh hostile pass). A reader refuses a
    stale copy; `sate features` writes it again from train and computes its features."""
    from sate.data.dataset import speech_dataset

    assert run_sate("features", "--data", prepped, "--jobs", "1", "--speed-perturb")[0] == 0
    train = read_manifest(prepped / "train.jsonl")
    train[0]["tgt"] = "corrected"
    (prepped / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in train[:-1]))
    with pytest.raises(SateError, match=r"train_sp\.jsonl:1: not the speed-perturbed copy of train\.jsonl's rows "
                                        r"\(train\.jsonl changed since `sate features --speed-perturb` wrote it\); "
                                        r"run `sate features --data .*` to write it again"):
        speech_dataset(prepped, "train_sp", None, None)  # type: ignore[arg-type] - refused before a vocabulary is read
    rc, out, _ = run_sate("features", "--data", prepped, "--jobs", "1")
    assert rc == 0 and "train_sp.jsonl: written again: train.jsonl changed since" in out
    sp = read_manifest(prepped / "train_sp.jsonl")
    assert len(sp) == 3 * (len(train) - 1) and sp[len(train) - 1]["tgt"] == "corrected"
    features.check_speed_split(prepped)
    assert list(FeatureIndex(prepped / "fbank" / "train_sp.scp")) == [r["id"] for r in sp]


def test_a_train_split_speed_perturbed_already_is_named(run_sate, prepped: Path) -> None:
    """A Kaldi train_sp directory prepared as train holds ids `sp0.9-X` beside `X`: --speed-perturb wrote a
    train_sp.jsonl repeating them and then refused its own file ("train_sp.jsonl:N: id ... is also the id of line
    M") (twelfth hostile pass). The train row is named before anything is written."""
    train = read_manifest(prepped / "train.jsonl")
    copy = {**train[0], "id": "sp1.1-" + train[0]["id"]}
    (prepped / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [*train, copy]))
    rc, _, err = run_sate("features", "--data", prepped, "--jobs", "1", "--speed-perturb")
    assert rc == 2 and err.strip() == (
        f"sate features: error: {prepped}/train.jsonl:{len(train) + 1}: the id 'sp1.1-{train[0]['id']}' is the one "
        "--speed-perturb gives the 1.1 copy of line 1: is the split speed-perturbed already (a Kaldi train_sp "
        "directory)? Prepare it without its copies, or train on it without --speed-perturb")
    assert not (prepped / "train_sp.jsonl").exists()


def test_a_directory_without_train_is_told_so(run_sate, prepped: Path, tmp_path: Path) -> None:
    """An ASR directory of LibriSpeech's train-clean-100 alone was told "--speed-perturb needs the train split in
    --splits", where no --splits was given; given, it was "train.jsonl: manifest is missing" (30th hostile pass)."""
    data = tmp_path / "asr"
    data.mkdir()
    shutil.copy(prepped / "dev.jsonl", data / "train-clean-5.jsonl")
    for given in ([], ["--splits", "train-clean-5"]):  # given, it was "needs the train split in --splits" as before
        rc, _, err = run_sate("features", "--data", data, *given, "--speed-perturb")
        assert rc == 2 and err.strip() == (
            f"sate features: error: --speed-perturb: {data} holds no train.jsonl (its splits: train-clean-5), and "
            "speed copies are made of the split named train alone (the translated corpus's training split, `sate "
            "prep`'s default); leave --speed-perturb out for these splits"), given
    assert sorted(p.name for p in data.iterdir()) == ["train-clean-5.jsonl"]
    # without --speed-perturb: its features, and a note that says why no CMVN ("the train split was not processed"
    # sent the user to process a split the directory does not hold)
    rc, out, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 0 and out.splitlines()[-1] == (f"note: {data}/cmvn.json not written: {data} holds no train split, the "
                                                "one its statistics come from"), err


def test_errors(run_sate, prepped: Path, tmp_path: Path) -> None:
    rc, _, err = run_sate("features", "--data", tmp_path / "empty")
    assert rc == 2 and "no manifests" in err
    rc, _, err = run_sate("features", "--data", prepped, "--jobs", "0")
    assert rc == 2 and "--jobs must be >= 1" in err
    rc, _, err = run_sate("features", "--data", prepped, "--jobs", "1000000")
    assert rc == 2 and "--jobs 1,000,000: at most " in err and "worker processes" in err
    rc, _, err = run_sate("features", "--data", prepped, "--splits", "dev", "--speed-perturb")
    assert rc == 2 and "--speed-perturb needs the train split" in err
    rows = read_manifest(prepped / "dev.jsonl")
    rows[1]["n_frames"] += 1
    (prepped / "dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    rc, _, err = run_sate("features", "--data", prepped, "--splits", "dev", "--jobs", "1")
    # the manifest named too: the id alone named no file (seventeenth hostile pass)
    assert rc == 2 and f"{prepped / 'dev.jsonl'}: {rows[1]['id']}: manifest says {rows[1]['n_frames']} frames" in err
    assert not (prepped / "fbank" / "dev.scp").exists() and not (prepped / "fbank" / "dev" / "00000.scp").exists()
    Path(rows[0]["audio"]).unlink()
    rc, _, err = run_sate("features", "--data", prepped, "--splits", "dev", "--jobs", "1")
    assert rc == 2 and f"{prepped / 'dev.jsonl'}: 1 audio file(s) its rows name are not there (first: " \
        f"{rows[0]['audio']}); the corpus moved or was removed since `sate prep`? run `sate prep` again" in err, err
    with pytest.raises(SateError, match="CMVN statistics are missing"):
        load_cmvn(prepped / "cmvn.json")


def test_non_finite_samples_stop_features_naming_the_row(run_sate, prepped: Path) -> None:
    row = read_manifest(prepped / "dev.jsonl")[1]
    wave, rate = sf.read(row["audio"], dtype="float32")
    wave[round((row["offset"] + row["duration"] / 2) * rate)] = np.nan  # one bad sample inside the segment
    sf.write(row["audio"], wave, rate, subtype="FLOAT")
    rc, _, err = run_sate("features", "--data", prepped, "--splits", "dev", "--jobs", "1")
    errors = [line for line in err.splitlines() if "error:" in line]
    assert rc == 2 and len(errors) == 1 and f"{row['id']}: {row['audio']}: 1 samples are not finite" in errors[0]
    assert not (prepped / "fbank" / "dev.scp").exists()


def test_a_long_row_is_computed_block_by_block_into_the_same_frames(prepared: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Kaldi's fbank holds about ten times its input at once, and a row was computed whole: a 20-minute row (a Kaldi
    directory without `segments`) took 1.5 GB, an hour 3.5 GB. Now no call takes more than a block of frames (here
    37, the last one shorter), and the frames are those of the whole row (1.1 GB for the hour; BENCHMARKS.md)."""
    import torchaudio.compliance.kaldi as kaldi

    row = read_manifest(prepared / "train.jsonl")[0]
    wave = np.concatenate([read_segment(row["audio"], row["offset"], row["duration"])] * 3)
    whole = compute_fbank(wave)
    seen: list[int] = []
    fbank = kaldi.fbank

    def recorded(x, **kwargs):  # noqa: ANN001, ANN003, ANN202 - torchaudio's signature
        seen.append(x.shape[-1])
        return fbank(x, **kwargs)

    monkeypatch.setattr(kaldi, "fbank", recorded)
    monkeypatch.setattr(features, "FBANK_BLOCK_FRAMES", 37)
    blocked = compute_fbank(wave)
    assert len(seen) == -(-len(whole) // 37) > 3 and max(seen) == 36 * 160 + 400 and seen[-1] < max(seen)
    assert blocked.shape == whole.shape and blocked.dtype == np.float32
    np.testing.assert_allclose(blocked, whole, rtol=0, atol=1e-5)  # equal here; a BLAS may round a block otherwise
    seen.clear()
    assert compute_fbank(wave[:1000]).shape == (num_frames(1000), 80) and seen == [1600]  # padded, one call


def test_a_train_sp_split_of_the_users_is_not_replaced(run_sate, prepped: Path) -> None:
    """DATA/train_sp.jsonl that `--speed-perturb` did not write (a Kaldi train_sp directory prepared under its name,
    before `sate prep` refused the name) was replaced by train's speed copies at the next `sate features`, exit 0
    (thirteenth hostile pass). Refused, with --speed-perturb or without, naming it; the file stays."""
    dev = (prepped / "dev.jsonl").read_bytes()
    (prepped / "train_sp.jsonl").write_bytes(dev)
    for extra in ([], ["--speed-perturb"]):
        rc, _, err = run_sate("features", "--data", prepped, "--jobs", "1", *extra)
        assert rc == 2 and err.strip() == (
            f"sate features: error: {prepped}/train_sp.jsonl: refusing to replace it: `sate features` writes train's "
            "speed copies there (--speed-perturb), and no row of it is one (a split of yours, a Kaldi train_sp "
            "prepared under its name?); prepare it under another name and move this file away")
        assert (prepped / "train_sp.jsonl").read_bytes() == dev


@pytest.mark.slow
def test_a_damaged_or_edited_cmvn_json_is_written_again(run_sate, prepped: Path) -> None:
    """cmvn.json cut, emptied to {} or edited (a std of -1) was let be by `sate features` ("up to date"), while its
    readers refused it and said to run `sate features` (thirteenth hostile pass). It is written again from train's
    sums; statistics that read (shared by a link, say) are let be."""
    assert run_sate("features", "--data", prepped, "--jobs", "1")[0] == 0
    cmvn = prepped / "cmvn.json"
    good = cmvn.read_bytes()
    edited = json.loads(good)
    edited["std"][3] = -1.0
    for damage in ("{}", json.dumps(edited), good.decode()[:100]):
        cmvn.write_text(damage)
        rc, out, _ = run_sate("features", "--data", prepped, "--jobs", "1")
        assert rc == 0 and f"{cmvn}: written again: it was no CMVN file its readers take (edited or damaged?)" in out
        assert cmvn.read_bytes() == good
    edited["std"][3] = 2.0  # statistics that read: the user's to choose
    cmvn.write_text(json.dumps(edited))
    rc, out, _ = run_sate("features", "--data", prepped, "--jobs", "1")
    assert rc == 0 and "written again" not in out and "cmvn" not in out
    assert json.loads(cmvn.read_text())["std"][3] == 2.0


@pytest.mark.slow
def test_splits_train_sp_alone_takes_train_with_it(run_sate, prepped: Path) -> None:
    """`--splits train_sp` computed its shards, then stopped at "fbank/train.scp: No such file or directory" when
    train's features were not there (its index joins train's); without a train_sp.jsonl it said to run `sate prep`,
    which refuses that split (thirteenth hostile pass). Train is processed with it; the missing manifest is named
    with the option that writes it."""
    rc, _, err = run_sate("features", "--data", prepped, "--jobs", "1", "--splits", "train_sp")
    assert rc == 2 and err.strip() == (f"sate features: error: --splits train_sp: {prepped}/train_sp.jsonl is not "
                                       "there; --speed-perturb writes it from train.jsonl")
    assert run_sate("features", "--data", prepped, "--jobs", "1", "--speed-perturb")[0] == 0
    shutil.rmtree(prepped / "fbank" / "train")
    (prepped / "fbank" / "train.scp").unlink()
    rc, out, err = run_sate("features", "--data", prepped, "--jobs", "1", "--splits", "train_sp")
    assert rc == 0, err
    assert "train: 15 utterances, 1 of 1 shards to compute" in out and f"wrote {prepped}/cmvn.json" in out
    sp = read_manifest(prepped / "train_sp.jsonl")
    assert list(FeatureIndex(prepped / "fbank" / "train_sp.scp")) == [r["id"] for r in sp]


def test_an_emptied_train_manifest_is_refused(run_sate, prepared: Path, tmp_path: Path) -> None:
    """A train.jsonl emptied since `sate features` (`sate prep` writes none) was "train: 0 utterances, up to date",
    exit 0, with cmvn.json left from rows no longer there (fourteenth hostile pass): named, nothing changed."""
    data = tmp_path / "data"
    shutil.copytree(prepared, data)
    (data / "train.jsonl").write_text("")
    before = {p: p.read_bytes() for p in data.rglob("*") if p.is_file()}
    rc, _, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 2 and err.strip() == (f"sate features: error: {data / 'train.jsonl'}: holds no rows, and the CMVN "
                                       "statistics come from train; prepare it again (`sate prep`)")
    assert {p: p.read_bytes() for p in data.rglob("*") if p.is_file()} == before


@pytest.mark.slow  # a process each
@pytest.mark.parametrize("name", ["dev/plan.json", "dev/00000.crc.json", "dev/sizes.json"])
def test_a_record_that_is_no_file_is_named_by_the_readers(prepared: Path, tmp_path: Path, name: str) -> None:
    """A named pipe in place of a split's plan, sizes or a shard's checksums blocked every reader of the features
    (`sate evaluate`, training) for ever, and a link to /dev/zero was read until memory ran out (fourteenth hostile
    pass): named, nothing read from it. Run as a process: the old code never returned."""
    import os
    import subprocess
    import sys

    data = tmp_path / "data"
    shutil.copytree(prepared, data)
    (data / "fbank" / name).unlink()
    os.mkfifo(data / "fbank" / name)
    read = ("from pathlib import Path; from sate.data.dataset import SpeechDataset; from sate.data.vocab import "
            f"Vocabulary; d = Path({str(data)!r}); SpeechDataset.from_data_dir(d, 'dev', Vocabulary.load(d, 'src'), "
            "None)")
    path = os.pathsep.join([*filter(None, [os.environ.get("PYTHONPATH")]), str(Path.cwd())])
    done = subprocess.run([sys.executable, "-c", read], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": path})
    assert done.returncode == 1 and done.stderr.strip().splitlines()[-1] == (
        f"sate.errors.SateError: {data / 'fbank' / name}: a named pipe, where sate keeps a record of its own; remove "
        "it (`sate features` writes it again)"), done.stderr[-2000:]




def test_an_append_only_fbank_folder_is_refused_before_any_work(tmp_path: Path, prepared_data: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """DATA/fbank append-only (`chattr +a`): a split was computed, then its index could not be renamed into place,
    and the temporary index stayed there for good (nineteenth hostile pass)."""
    import subprocess  # chattr, the only way to make a folder append-only

    from sate.cli import main

    data = tmp_path / "data"
    data.mkdir()
    for path in prepared_data.glob("*.jsonl"):
        shutil.copyfile(path, data / path.name)
    (data / "fbank").mkdir()
    if subprocess.run(["chattr", "+a", str(data / "fbank")], capture_output=True).returncode != 0:
        pytest.skip("chattr +a needs root and a file system with attributes")
    try:
        assert main(["features", "--data", str(data), "--jobs", "1"]) == 2
    finally:
        subprocess.run(["chattr", "-a", str(data / "fbank")], check=True)
    assert capsys.readouterr().err == (f"sate features: error: --data {data}: {data / 'fbank'} is append-only "
                                       "(chattr +a), where `sate features` renames its feature indexes into place; "
                                       "lift that (chattr -a), or use another data directory\n")
    assert list((data / "fbank").iterdir()) == []


@pytest.mark.slow  # a forked `sate features` (about a second)
@pytest.mark.parametrize("folder", ["fbank", "fbank/dev"])
def test_a_read_only_fbank_or_split_folder_is_refused_before_any_work(folder: str, tmp_path: Path,
                                                                       prepared_data: Path) -> None:
    """DATA/fbank (or DATA/fbank/dev) read-only for a user, the indexes gone: the splits before it were computed
    again, then its index (or shards) could not be written, a Permission denied after the work (twentieth hostile
    pass, tests/hostile/test_folders.py). Refused before any work, naming it."""
    from tests.test_os_errors import as_a_user  # a child that file modes bind: root passes them

    data = shutil.copytree(prepared_data, tmp_path / "data")
    for index in (data / "fbank").rglob("*.scp"):
        index.unlink()
    arks = {p: p.stat().st_mtime_ns for p in (data / "fbank").rglob("*.ark")}
    (data / folder).chmod(0o500)
    try:
        status, err = as_a_user(["features", "--data", str(data), "--jobs", "1"])
    finally:
        (data / folder).chmod(0o755)
    assert (status, err) == (2, f"sate features: error: --data {data}: {data / folder} is not writable (no "
                                "permission, or read-only), where `sate features` writes its features and their "
                                "indexes; lift that, or use another data directory\n")
    assert {p: p.stat().st_mtime_ns for p in (data / "fbank").rglob("*.ark")} == arks
    assert not list((data / "fbank").rglob("*.scp"))


def test_a_stored_file_append_only_or_immutable_is_refused_before_any_work(tmp_path: Path) -> None:
    """A split's index, a shard's file or a split folder of DATA/fbank append-only or immutable (`chattr +a`, `+i`):
    `sate features` computed the split, then failed to replace its index, "Operation not permitted" said of a
    special or protected file system (twentieth hostile pass)."""
    import subprocess  # chattr, the only way to make a file append-only

    fbank = tmp_path / "fbank"
    (fbank / "train").mkdir(parents=True)
    (fbank / "train.scp").write_text("a train/00000.ark:5\n")
    (fbank / "train" / "00000.scp").write_text("a train/00000.ark:5\n")
    cases = ((fbank / "train.scp", "+a", "append-only"), (fbank / "train" / "00000.scp", "+i", "immutable"),
             (fbank / "train", "+a", "append-only"))
    for path, flag, how in cases:
        if subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode != 0:
            pytest.skip("chattr needs root and a file system with attributes")
        try:
            with pytest.raises(SateError, match=f"^{path}: {how} \\(chattr \\{flag}\\), where `sate features` "
                                                "replaces its own files"):
                check_stored_files(fbank)
        finally:
            subprocess.run(["chattr", flag.replace("+", "-"), str(path)], check=True)
    check_stored_files(fbank)


def test_a_shard_folder_that_is_a_mount_point_is_emptied_in_place(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A disk mounted at DATA/fbank/train: once its manifest changed, `sate features` deleted the split's features,
    then failed to remove the folder itself, "Device or resource busy", at every run (twentieth hostile pass). The
    folder is emptied, not removed; here its removal fails as the kernel fails it at a mount point."""
    import errno  # the kernel's error for removing a mount point

    shards = tmp_path / "fbank" / "train"
    shards.mkdir(parents=True)
    for name in ("00000.ark", "00000.scp", "plan.json"):
        (shards / name).write_text("x\n")
    rmtree = shutil.rmtree

    def busy(path: str | Path, *args: object, **kwargs: object) -> None:
        if Path(path) == shards:
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), str(path))
        rmtree(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", busy)
    features._empty(shards)
    assert shards.is_dir() and list(shards.iterdir()) == []


def test_cmvn_of_another_data_directory_copied_in_is_said(run_sate, prepped: Path) -> None:
    """Another data directory's cmvn.json copied in (`cp -r other/* DATA/`) was "up to date" and normalised every
    training without a word (24th hostile pass): a note says its frame count is not this train split's, and keeps
    it; deleted, the advice followed, `sate features` writes this split's. Its own statistics say nothing."""
    assert run_sate("features", "--data", prepped, "--jobs", "1")[0] == 0
    own = (prepped / "cmvn.json").read_bytes()
    rc, _, err = run_sate("features", "--data", prepped, "--jobs", "1")
    assert rc == 0 and "note:" not in err
    record = json.loads(own)
    other = {**record, "frames": record["frames"] + 103, "mean": [v + 1 for v in record["mean"]]}
    (prepped / "cmvn.json").write_text(json.dumps(other) + "\n")  # another directory's, of another train split
    rc, _, err = run_sate("features", "--data", prepped, "--jobs", "1")
    assert rc == 0 and (f"note: {prepped / 'cmvn.json'} counts {record['frames'] + 103:,} frames, and this train "
                        f"split's features {record['frames']:,}: it was not computed from them") in err
    assert json.loads((prepped / "cmvn.json").read_text())["frames"] == record["frames"] + 103  # kept
    (prepped / "cmvn.json").unlink()
    assert run_sate("features", "--data", prepped, "--jobs", "1")[0] == 0
    assert (prepped / "cmvn.json").read_bytes() == own


@pytest.mark.slow
def test_a_store_a_copy_shares_through_its_link_is_not_replaced(run_sate, prepped: Path, tmp_path: Path,
                                                                 corpus: Path) -> None:
    """A data directory copied with its fbank/ linked to a scratch disk shares the store: `sate prep` into the copy
    (fewer train rows), then `sate features`, deleted the original's features, exit 0, without a word (24th hostile
    pass). Refused, naming the original; the copy reads the shared store while its manifests are the same; its own
    fbank/ made (the advice followed), it computes; a data directory moved takes its store over."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (prepped / "fbank").symlink_to(scratch)
    assert run_sate("features", "--data", prepped, "--jobs", "1")[0] == 0
    copy = tmp_path / "copy"
    shutil.copytree(prepped, copy, symlinks=True)
    rc, out, _ = run_sate("features", "--data", copy, "--jobs", "1")
    assert rc == 0 and "to compute" not in out
    train_ark = (scratch / "train" / "00000.ark").read_bytes()
    assert run_sate("prep", "--mustc-root", corpus, "--out", copy, "--max-duration", "1.1")[0] == 0
    rc, _, err = run_sate("features", "--data", copy, "--jobs", "1")
    assert rc == 2 and err.strip() == (
        f"sate features: error: --data {copy}: {copy / 'fbank' / 'train'} is also the feature store of {prepped} (its "
        f"fbank leads to the same folder, {scratch / 'train'}: a data directory copied with its link?), whose train "
        "features computing this train would replace; give this data directory a fbank/ of its own (remove the "
        "link: `sate features` makes one)"), err
    assert (scratch / "train" / "00000.ark").read_bytes() == train_ark
    assert all(line.endswith("up to date") for line in run_sate("features", "--data", prepped, "--jobs", "1")[1]
               .splitlines())
    (copy / "fbank").unlink()
    assert run_sate("features", "--data", copy, "--jobs", "1")[0] == 0 and (copy / "fbank").is_dir()
    moved = tmp_path / "moved"
    prepped.rename(moved)
    assert run_sate("prep", "--mustc-root", corpus, "--out", moved, "--max-duration", "1.1")[0] == 0
    assert run_sate("features", "--data", moved, "--jobs", "1")[0] == 0


def test_a_copy_reading_a_store_of_an_earlier_sate_is_not_recorded_its_owner(run_sate, prepped: Path, tmp_path: Path,
                                                                            corpus: Path) -> None:
    """A shared store whose plan.json an earlier sate wrote (no record of the data directory that computed it): the
    first directory to read it, a copy (`cp -a` keeps the link), was recorded as its owner, and the original, prepared
    again, was refused its own store as the copy's (24th hostile pass, review). Reading records no owner."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (prepped / "fbank").symlink_to(scratch)
    assert run_sate("features", "--data", prepped, "--jobs", "1")[0] == 0
    for plan in scratch.glob("*/plan.json"):  # as an earlier sate wrote it
        record = json.loads(plan.read_text())
        record.pop("data_dir")
        plan.write_text(json.dumps(record) + "\n")
    copy = tmp_path / "copy"
    shutil.copytree(prepped, copy, symlinks=True)
    rc, out, _ = run_sate("features", "--data", copy, "--jobs", "1")
    assert rc == 0 and "to compute" not in out
    assert all("data_dir" not in json.loads(plan.read_text()) for plan in scratch.glob("*/plan.json"))
    assert run_sate("prep", "--mustc-root", corpus, "--out", prepped, "--max-duration", "1.1")[0] == 0
    rc, _, err = run_sate("features", "--data", prepped, "--jobs", "1")
    assert rc == 0 and "also the feature store" not in err, err
    # who else reads a linked store an earlier sate computed cannot be told: the recompute says so
    assert f"note: {prepped / 'fbank' / 'train'} leads to {scratch / 'train'}, whose plan names no data directory" \
        in err and "if another data directory reads it" in err
    assert json.loads((scratch / "train" / "plan.json").read_text())["data_dir"] == os.path.realpath(prepped)


def test_a_copy_reading_a_moved_originals_store_does_not_take_it_over(run_sate, prepped: Path, tmp_path: Path,
                                                                      corpus: Path) -> None:
    """The data directory that computed a linked store, moved, and a copy of it (`cp -a`) that read the store
    first: the copy was recorded as the owner (the one named was gone), and the original, prepared again, was refused
    its own store as the copy's (24th hostile pass, review). A reader never takes a store over."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (prepped / "fbank").symlink_to(scratch)
    assert run_sate("features", "--data", prepped, "--jobs", "1")[0] == 0
    moved, copy = tmp_path / "moved", tmp_path / "copy"
    prepped.rename(moved)
    shutil.copytree(moved, copy, symlinks=True)
    rc, out, _ = run_sate("features", "--data", copy, "--jobs", "1")
    assert rc == 0 and "to compute" not in out
    assert json.loads((scratch / "train" / "plan.json").read_text())["data_dir"] == os.path.realpath(prepped)
    assert run_sate("prep", "--mustc-root", corpus, "--out", moved, "--max-duration", "1.1")[0] == 0
    rc, _, err = run_sate("features", "--data", moved, "--jobs", "1")
    assert rc == 0 and "also the feature store" not in err, err
    assert f"whose plan names {os.path.realpath(prepped)}, gone: if another data directory reads it" in err
    assert json.loads((scratch / "train" / "plan.json").read_text())["data_dir"] == os.path.realpath(moved)


@pytest.mark.slow  # two sate commands in a process of their own
def test_a_data_directory_named_through_a_bind_mount_is_its_own(run_sate, prepped: Path, tmp_path: Path,
                                                                corpus: Path) -> None:
    """The data directory that computed a linked store, named another way that no link resolves (a bind mount, an
    NFS path and its automount path), was refused as a copy sharing its own store once its manifests changed
    (fix24d, a false positive of the 24th hostile pass's rule): prepared and computed again, exit 0. The mount is
    made in a mount namespace of the test's own (`unshare -m`)."""
    import subprocess  # only here: a bind mount, made by a process of its own
    import sys

    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) here to make a bind mount in a namespace of its own")
    scratch, alias = tmp_path / "scratch", tmp_path / "alias"
    scratch.mkdir()
    alias.mkdir()
    (prepped / "fbank").symlink_to(scratch)
    assert run_sate("features", "--data", prepped, "--jobs", "1")[0] == 0
    script = ('mount --bind "$1" "$2" && "$3" -m sate.cli prep --mustc-root "$4" --out "$2" --max-duration 1.1 '
              '>/dev/null && exec "$3" -m sate.cli features --data "$2" --jobs 1')
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(prepped), str(alias), sys.executable,
                           str(corpus)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [*filter(None, [os.environ.get("PYTHONPATH")]), root])})
    if done.returncode != 0 and "mount" in done.stderr and "sate" not in done.stderr:
        pytest.skip(f"no bind mount here: {done.stderr.strip()}")
    assert done.returncode == 0 and "also the feature store" not in done.stderr, done.stderr
    assert len(read_manifest(prepped / "train.jsonl")) < 15  # prepared again through the other name


def test_a_corpus_moved_after_prep_is_said_before_any_work(run_sate, corpus: Path, prepped: Path) -> None:
    """A corpus moved after `sate prep` (the manifests hold absolute paths) stopped in a worker on "ROW: PATH: audio
    file is missing", saying neither how many nor what to do (25th hostile pass): it is said before any shard is
    computed, and the advice, followed, computes the features."""
    moved = corpus.with_name("moved")
    corpus.rename(moved)
    rc, _, err = run_sate("features", "--data", prepped, "--jobs", "1")
    assert rc == 2 and f"sate features: error: {prepped / 'train.jsonl'}: " in err and " audio file(s) its rows name " \
        "are not there (first: " in err and "run `sate prep` again over the corpus where it is now" in err, err
    assert not list(prepped.glob("fbank/*/*.ark"))
    assert run_sate("prep", "--mustc-root", moved, "--out", prepped)[0] == 0
    assert run_sate("features", "--data", prepped, "--jobs", "1")[0] == 0


def test_a_link_farm_whose_corpus_moved_is_said_too(tmp_path: Path) -> None:
    """A broken link counted as there (os.path.lexists): a link farm whose corpus moved still stopped in a worker on
    the bare "audio file is missing" (review of the 25th hostile pass). Each file is looked at once."""
    from types import SimpleNamespace

    from sate.data.features import check_audio_there

    (tmp_path / "talk.wav").symlink_to(tmp_path / "moved" / "talk.wav")
    (tmp_path / "here.wav").write_bytes(b"")
    rows = [("a", str(tmp_path / "here.wav")), ("b", str(tmp_path / "talk.wav")), ("c", str(tmp_path / "talk.wav"))]
    with pytest.raises(SateError, match=r"^m.jsonl: 1 audio file\(s\) its rows name are not there \(first: "
                                        r".*talk.wav\)"):
        check_audio_there([SimpleNamespace(manifest="m.jsonl", rows=rows)])  # type: ignore[list-item]
    check_audio_there([SimpleNamespace(manifest="m.jsonl", rows=rows[:1])])  # type: ignore[list-item]


@pytest.mark.slow
def test_a_talk_that_cannot_seek_is_read_once_not_from_its_start_for_every_row(run_sate, corpus: Path,
                                                                                tmp_path: Path,
                                                                                decoded_frames: list[int]) -> None:
    """A GSM 6.10 talk cannot seek: each row reopened it and decoded it from its start, so `sate features` of a
    two-hour talk decoded an hour of audio per row (about 90 minutes for 2,000 rows, where PCM takes 40 s; twenty-
    seventh hostile pass). A shard now reads such a talk on from the row before: each frame about once. The stored
    features are those of each row read alone."""
    for wav in corpus.glob("en-de/data/*/wav/*.wav"):
        samples, rate = sf.read(wav, dtype="float32")
        sf.write(wav, samples, rate, format="WAV", subtype="GSM610")
    data = tmp_path / "data"
    assert run_sate("prep", "--mustc-root", corpus, "--out", data)[0] == 0
    decoded_frames[0] = 0  # prep's reads not counted
    assert run_sate("features", "--data", data, "--jobs", "1")[0] == 0
    total = sum(sf.info(wav).frames for wav in corpus.glob("en-de/data/*/wav/*.wav"))
    assert decoded_frames[0] <= total
    rows = read_manifest(data / "train.jsonl")
    store = FeatureIndex(data / "fbank" / "train.scp")
    for row in (rows[1], rows[-1]):
        expected = compute_fbank(read_segment(row["audio"], row["offset"], row["duration"]))
        np.testing.assert_array_equal(store[row["id"]], expected)


@pytest.mark.slow
@pytest.mark.parametrize("hop", [3.0, 2.9371, 2.0])  # back to back, back to back at odd frames, overlapping
def test_a_talk_at_8_khz_that_cannot_seek_is_read_on_with_rows_back_to_back(tmp_path: Path, decoded_frames: list[int],
                                                                            hop: float) -> None:
    """GSM 6.10 is 8 kHz: a row read two frames past its end for the resampler, and `HeldFiles` kept the file
    there, so a next row beginning where this one ended (fixed chunks, Kaldi segments), or inside it, reopened the
    talk and decoded it from its start, as before that fix (review of the twenty-seventh hostile pass: a 10-minute
    talk in 3 s rows back to back took 120 s, with 0.2 s gaps 8 s). The frames read are kept, and read on from."""
    from sate.data.audio import HeldFiles

    talk = tmp_path / "talk.wav"
    noise = 0.1 * np.random.default_rng(0).standard_normal(8000 * 60).astype(np.float32)
    sf.write(talk, noise, 8000, format="WAV", subtype="GSM610")
    rows = [(i * hop, 3.0) for i in range(int((60 - 3) / hop))]
    alone = [read_segment(talk, offset, duration) for offset, duration in rows]
    decoded_frames[0] = 0
    with HeldFiles() as held:
        together = [read_segment(talk, offset, duration, held=held) for offset, duration in rows]
    assert decoded_frames[0] <= sf.info(talk).frames
    assert all(np.array_equal(a, b) for a, b in zip(alone, together, strict=True))


def test_times_rewritten_as_whole_numbers_are_the_same_features(prepared: Path, tmp_path: Path) -> None:
    """`jq -c` (1.6) over a manifest, to correct a translation, writes prep's `"offset": 0.0` as `0`, the same time:
    the split's features were "changed since computed", training refused and `sate features` recomputed the whole
    split (thirty-first hostile pass). A manifest as prep wrote it keeps its recorded fingerprint."""
    data = tmp_path / "data"
    shutil.copytree(prepared, data)
    rows = read_manifest(data / "dev.jsonl")
    plan = json.loads((data / "fbank" / "dev" / "plan.json").read_text())
    assert features._fingerprint(rows) == plan["fingerprint"]
    rows[0]["offset"], rows[0]["duration"] = 2.0, 1.0
    whole = [dict(row) for row in rows]
    whole[0]["offset"], whole[0]["duration"] = 2, 1
    assert features._fingerprint(whole) == features._fingerprint(rows)
    assert features._fingerprint([{**rows[0], "offset": 3}, *rows[1:]]) != features._fingerprint(rows)
