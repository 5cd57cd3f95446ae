"""Manifests and stored features are checked where they are read: rows (types, ranges, unique ids), segments within
their audio, feature indexes relative to the data directory (a copy reads its own), arks against their index, CMVN
never from zero frames."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from sate.data.audio import read_segment
from sate.data.dataset import SpeechDataset
from sate.data.feature_index import FeatureIndex
from sate.data.features import load_cmvn
from sate.data.manifest import read_manifest
from sate.data.vocab import Vocabulary
from sate.errors import SateError

DAMAGED_SHARD = "dev: 1 shard(s) whose ark or index is missing, damaged or another data directory's: recomputed"


def copy_data(prepared: Path, to: Path) -> Path:
    shutil.copytree(prepared, to)
    return to


def rewrite(path: Path, edit) -> None:  # noqa: ANN001 - a function of the row list
    rows = read_manifest(path)
    edit(rows)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.mark.parametrize(("key", "value", "message"), [
    ("offset", -1.5, "offset must be a number of seconds from 0 to 10,000,000, got -1.5"),
    ("offset", "2.0", "offset must be a number of seconds from 0 to 10,000,000, got '2.0'"),
    ("duration", float("nan"), "duration must be a number of seconds"),
    # finite, but seconds times a sample rate is not: an OverflowError in a feature worker
    ("offset", 1e308, "offset must be a number of seconds from 0 to 10,000,000, got 1e[+]308"),
    ("duration", 1e300, "duration must be a number of seconds from 0 to 10,000,000, got 1e[+]300"),
    ("n_frames", 0, "n_frames must be a whole number >= 1"),
    ("id", "two words", "id must be a non-empty string without spaces or invisible characters, got 'two words'"),
    ("id", "tab\there", "id must be a non-empty string without spaces or invisible characters, got .tab"),
    ("id", "", "id must be a non-empty string without spaces or invisible characters, got .."),
    # invisible: a NUL, a zero-width space; both passed `sate features`
    ("id", "ted\x00_1", "id must be a non-empty string without spaces or invisible characters, got 'ted\\\\x00_1'"),
    ("id", "ted\u200b_1", "id must be a non-empty string without spaces or invisible characters"),
    ("audio", None, "audio must be a string"),
    ("tgt", 7, "tgt must be a string or null"),
    ("speed", 0, "speed must be a number from 0.1 to 10, got 0"),
    ("speed", 1e-300, "speed must be a number from 0.1 to 10, got 1e-300"),  # 10^304 samples
    # tenth hostile pass: os.stat's ValueError tracebacks in `sate features`; SentencePiece's "Not a string"
    ("audio", "/tmp/a\x00.wav", r"audio is no file path the system can open \(a NUL byte or a lone surrogate\), got "
                                 r"'/tmp/a\\x00.wav'"),
    ("audio", "/tmp/a\ud800.wav", "audio is no file path the system can open"),
    # eleventh hostile pass: resolved against the manifest's folder, "" was named as the data directory, no line
    ("audio", "", "audio must name an audio file, got ''"),
    ("src_norm", "ab\ud800c", r"src_norm holds a lone surrogate \(JSON's \\ud800 to \\udfff\), not text: 'ab\\ud800c'"),
    ("tgt", "x\udc80y", "tgt holds a lone surrogate"),
])
def test_a_bad_manifest_row_is_refused_where_read_naming_the_line(tmp_path: Path, prepared: Path, key: str,
                                                                  value: object, message: str) -> None:
    path = tmp_path / "dev.jsonl"
    shutil.copyfile(prepared / "dev.jsonl", path)
    rewrite(path, lambda rows: rows[1].update({key: value}))
    with pytest.raises(SateError, match=rf"^{path}:2: {message}"):
        read_manifest(path)


def test_duplicate_ids_are_refused(tmp_path: Path, prepared: Path) -> None:
    path = tmp_path / "dev.jsonl"
    shutil.copyfile(prepared / "dev.jsonl", path)
    rewrite(path, lambda rows: rows[2].update(id=rows[0]["id"]))
    with pytest.raises(SateError, match=rf"^{path}:3: id '.*' is also the id of line 1; ids must be unique"):
        read_manifest(path)


def test_a_segment_outside_its_audio_is_refused(prepared: Path, run_sate) -> None:  # noqa: ANN001
    row = read_manifest(prepared / "dev.jsonl")[0]
    with pytest.raises(SateError, match="offset -1 and duration .* must be from 0 to 10,000,000 seconds"):
        read_segment(row["audio"], -1.0, row["duration"])
    for offset, duration in ((1e308, row["duration"]), (row["offset"], 1e308)):
        with pytest.raises(SateError, match="must be from 0 to 10,000,000 seconds"):
            read_segment(row["audio"], offset, duration)
    with pytest.raises(SateError, match="runs past the end of the audio"):
        read_segment(row["audio"], 10_000.0, row["duration"])
    with pytest.raises(SateError, match="runs past the end of the audio"):
        read_segment(row["audio"], 0.0, 10_000.0)
    assert len(read_segment(row["audio"], row["offset"], row["duration"])) == round(row["duration"] * 16000)


def test_features_refuse_an_offset_past_the_end_naming_the_row(tmp_path: Path, prepared: Path, run_sate) -> None:  # noqa: ANN001
    """The manifest is named with the row (eighteenth hostile pass: the id and the audio alone were), and is the
    data directory's where its fbank/ is a link to another disk (the frame count's line named DISK/dev.jsonl)."""
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "disk" / "fbank").mkdir(parents=True)
    (data / "fbank").symlink_to(tmp_path / "disk" / "fbank")
    shutil.copyfile(prepared / "dev.jsonl", data / "dev.jsonl")
    rewrite(data / "dev.jsonl", lambda rows: rows[1].update(offset=rows[1]["offset"] + 10_000))
    rc, _, err = run_sate("features", "--data", data, "--jobs", "1")
    row = read_manifest(data / "dev.jsonl")[1]
    assert rc == 2 and f"{data / 'dev.jsonl'}: {row['id']}: " in err and "runs past the end of the audio" in err, err
    rewrite(data / "dev.jsonl", lambda rows: rows[1].update(offset=rows[1]["offset"] - 10_000, n_frames=1))
    rc, _, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 2 and f"{data / 'dev.jsonl'}: {row['id']}: manifest says 1 frames" in err, err
    assert not (data / "fbank" / "dev.scp").exists()


def test_a_relative_audio_path_is_the_manifest_directorys(tmp_path: Path, prepared: Path, run_sate,  # noqa: ANN001
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A hand-written manifest naming its audio relative to itself reads the same segments from any directory."""
    data = tmp_path / "data"
    data.mkdir()
    row = read_manifest(prepared / "dev.jsonl")[0]
    (data / "audio").mkdir()
    shutil.copyfile(row["audio"], data / "audio" / "talk.wav")
    (data / "dev.jsonl").write_text(json.dumps({**row, "audio": "audio/talk.wav"}) + "\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert read_manifest(data / "dev.jsonl")[0]["audio"] == str(data / "audio" / "talk.wav")
    assert read_manifest(Path("../data/dev.jsonl"))[0]["audio"] == str(data / "audio" / "talk.wav")
    rc, _, err = run_sate("features", "--data", "../data", "--splits", "dev", "--jobs", "1")
    assert rc == 0, err
    assert (data / "fbank" / "dev.scp").read_text().startswith(row["id"] + " ")


def test_a_copied_data_dir_reads_its_own_features(tmp_path: Path, prepared: Path) -> None:
    original = copy_data(prepared, tmp_path / "original")
    copy = copy_data(original, tmp_path / "copy")
    index = (copy / "fbank" / "dev.scp").read_text()
    assert str(tmp_path) not in index and str(prepared) not in index  # relative: dev/00000.ark:OFFSET
    for ark in (original / "fbank").rglob("*.ark"):
        ark.write_bytes(b"")  # the original's features are gone: the copy must not notice
    vocab = Vocabulary.load(copy, "src")
    dataset = SpeechDataset.from_data_dir(copy, "dev", vocab, None)
    assert dataset[0]["feats"].shape[1] == 80
    with pytest.raises(SateError, match=r"dev.scp: .*00000.ark has 0 bytes, \d+ when it was written"):
        SpeechDataset.from_data_dir(original, "dev", vocab, None)


def test_an_index_with_absolute_paths_still_reads(tmp_path: Path, prepared: Path) -> None:
    data = copy_data(prepared, tmp_path / "data")
    scp = data / "fbank" / "dev.scp"
    lines = [f"{u} {data / 'fbank' / w}" for u, w in (line.split(" ", 1) for line in scp.read_text().splitlines())]
    scp.write_text("\n".join(lines) + "\n")  # as sate features wrote it before relative paths
    relative = FeatureIndex(prepared / "fbank" / "dev.scp")
    absolute = FeatureIndex(scp)
    assert list(absolute) == list(relative)
    for utt in relative:
        np.testing.assert_array_equal(absolute[utt], relative[utt])


def test_a_copied_data_dir_with_an_old_absolute_index_gets_its_own(tmp_path: Path, prepared: Path,
                                                                   run_sate) -> None:  # noqa: ANN001
    original = copy_data(prepared, tmp_path / "original")
    for scp in (original / "fbank").rglob("*.scp"):  # as sate features wrote indexes before relative paths
        base = original / "fbank"
        lines = [f"{u} {base / w}" for u, w in (x.split(" ", 1) for x in scp.read_text().splitlines())]
        scp.write_text("\n".join(lines) + "\n")
    copy = copy_data(original, tmp_path / "copy")
    rc, out, _ = run_sate("features", "--data", copy, "--jobs", "1")
    assert rc == 0 and DAMAGED_SHARD in out
    assert str(original) not in (copy / "fbank" / "dev.scp").read_text()
    rc, out, _ = run_sate("features", "--data", original, "--jobs", "1")  # its own arks: kept as they are
    assert rc == 0 and "recomputed" not in out and str(original) in (original / "fbank" / "dev.scp").read_text()


def _refused_then_recomputed(data: Path, refusal: str, run_sate) -> Vocabulary:  # noqa: ANN001
    """The dev split of ``data`` refused when read for training (``refusal``, a pattern of its line), then `sate
    features` recomputing the damaged shard; the source vocabulary, to read the split again."""
    vocab = Vocabulary.load(data, "src")
    with pytest.raises(SateError, match=refusal):
        SpeechDataset.from_data_dir(data, "dev", vocab, None)
    rc, out, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 0 and DAMAGED_SHARD in out, out + err
    return vocab


@pytest.mark.parametrize("damage", ["truncate", "delete"])
def test_a_damaged_ark_is_not_up_to_date(tmp_path: Path, prepared: Path, run_sate, damage: str) -> None:  # noqa: ANN001
    data = copy_data(prepared, tmp_path / "data")
    ark = data / "fbank" / "dev" / "00000.ark"
    before = ark.read_bytes()
    if damage == "truncate":
        os.truncate(ark, len(before) // 2)
    else:
        ark.unlink()
    vocab = _refused_then_recomputed(data, r"fbank/dev.scp: .*00000.ark (has|is missing).*run `sate features` again",
                                     run_sate)
    assert ark.read_bytes() == before
    assert SpeechDataset.from_data_dir(data, "dev", vocab, None)[0]["feats"].shape[1] == 80


def test_cmvn_from_zero_frames_is_refused(tmp_path: Path, run_sate) -> None:  # noqa: ANN001
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.jsonl").write_text("")
    rc, _, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 2 and "train.jsonl: holds no rows, and the CMVN statistics come from train" in err
    assert not (data / "cmvn.json").exists()
    (data / "cmvn.json").write_text(json.dumps({"mean": [float("nan")] * 80, "std": [1.0] * 80}))
    with pytest.raises(SateError, match="mean and std must be finite"):
        load_cmvn(data / "cmvn.json")
    # a string or a boolean among the numbers: numpy read "1.0" and true as 1, and training went on with them
    # (seventeenth hostile pass)
    for odd, said in (("1.0", "'1.0'"), (True, "True")):
        (data / "cmvn.json").write_text(json.dumps({"mean": [0.0] * 80, "std": [1.0] * 79 + [odd]}))
        with pytest.raises(SateError, match=rf"cmvn.json: std holds {said}, not a number$"):
            load_cmvn(data / "cmvn.json")
    # a key given twice kept the last without a word (seventeenth hostile pass)
    mean, std = json.dumps([0.0] * 80), json.dumps([1.0] * 80)
    (data / "cmvn.json").write_text(f'{{"mean": {mean}, "std": {std}, "std": {std}}}')
    with pytest.raises(SateError, match=r"cmvn.json: the key 'std' is given twice$"):
        load_cmvn(data / "cmvn.json")


def test_features_changed_in_place_are_refused_naming_the_ark(tmp_path: Path, prepared: Path,
                                                              run_sate) -> None:  # noqa: ANN001
    """Same size, other bytes (a disk error, zeros after a crash): the matrix's checksum tells, one line naming the
    ark; deleted as the line says, the ark is recomputed."""
    data = copy_data(prepared, tmp_path / "data")
    ark = data / "fbank" / "dev" / "00000.ark"
    index = FeatureIndex(data / "fbank" / "dev.scp")
    utt_id, (_, offset) = next(iter(index.entries.items()))
    before = ark.read_bytes()
    damaged = bytearray(before)
    damaged[offset + 200:offset + 264] = bytes(64)  # inside the first matrix's values: kaldiio reads it happily
    ark.write_bytes(bytes(damaged))
    with pytest.raises(SateError) as caught:
        FeatureIndex(data / "fbank" / "dev.scp")[utt_id]
    assert str(caught.value) == (f"{ark}: the features of {utt_id} at byte {offset} do not match their checksum (the "
                                 "file is damaged); delete it and run `sate features` again")
    ark.unlink()
    rc, out, _ = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 0 and "recomputed" in out and ark.read_bytes() == before
    assert FeatureIndex(data / "fbank" / "dev.scp")[utt_id].shape[1] == 80


def test_features_replaced_while_a_command_reads_them_are_named_as_replaced(tmp_path: Path, prepared: Path,
                                                                          run_sate) -> None:  # noqa: ANN001
    """`sate features` run again on a split (a row removed) while a training reads it: the index the training holds
    names offsets of the old ark. That was "the file is damaged; delete it", which was wrong advice (thirteenth
    hostile pass); the ark is now named as replaced since the index was read."""
    data = copy_data(prepared, tmp_path / "data")
    index = FeatureIndex(data / "fbank" / "dev.scp")
    ids = list(index.entries)
    manifest = data / "dev.jsonl"
    rows = manifest.read_text().splitlines(keepends=True)
    manifest.write_text("".join(rows[1:]))
    rc, out, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 0, err
    ark, offset = index.entries[ids[-1]]
    with pytest.raises(SateError) as caught:
        index[ids[-1]]
    assert str(caught.value) == (f"{ark}: replaced or removed since this command read {data / 'fbank' / 'dev.scp'} "
                                 f"(`sate features` run again meanwhile?), so the features of {ids[-1]} at byte "
                                 f"{offset} are not there any more; run the command again")
    assert FeatureIndex(data / "fbank" / "dev.scp")[ids[-1]].shape[1] == 80  # read again: the new features


def test_a_rows_audio_that_is_not_a_file(tmp_path: Path) -> None:
    """A directory or a named pipe as a manifest row's audio was "audio file is missing"; now each is named for what
    it is (a pipe cannot be read at an offset)."""
    import os
    import re

    from sate.data.audio import read_segment, wav_info

    fifo = tmp_path / "talk.wav"
    os.mkfifo(fifo)
    for path, says in ((tmp_path, "is a directory, not an audio file"),
                       (fifo, "is a pipe or a device, not an audio file"),
                       (tmp_path / "gone.wav", "audio file is missing")):
        with pytest.raises(SateError, match=f"^{re.escape(str(path))}: {says}"):
            wav_info(path)
        with pytest.raises(SateError, match=says):
            read_segment(path, 0.0, 1.0)


@pytest.mark.parametrize("plan", ["", "[1]", '{"fingerprint": ', "null"])
def test_a_damaged_plan_recomputes_its_split(tmp_path: Path, prepared: Path, run_sate, plan: str) -> None:  # noqa: ANN001
    """fbank/<split>/plan.json, cut or edited, was a JSONDecodeError or AttributeError traceback in `sate
    features`; like every record sate writes itself, it is now read as damaged and the split recomputed."""
    data = copy_data(prepared, tmp_path / "data")
    ark = data / "fbank" / "dev" / "00000.ark"
    before = ark.read_bytes()
    (data / "fbank" / "dev" / "plan.json").write_text(plan)
    rc, out, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 0, err
    assert "1 of 1 shards to compute" in out.splitlines()[1] and out.splitlines()[2].endswith("up to date")
    assert ark.read_bytes() == before
    assert json.loads((data / "fbank" / "dev" / "plan.json").read_text())["utterances"] == len(
        read_manifest(data / "dev.jsonl"))


def test_a_key_given_twice_in_a_manifest_row_is_refused(tmp_path: Path, prepared: Path) -> None:
    """JSON keeps the last of a repeated key without a word: a row edited by appending `"offset": 0.0` read another
    segment of the talk (YAML files refuse a repeated key already)."""
    path = tmp_path / "dev.jsonl"
    lines = (prepared / "dev.jsonl").read_text().splitlines()
    lines[1] = lines[1][:-1] + ', "offset": 0.0}'
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SateError, match=rf"^{path}:2: the key 'offset' is given twice \(JSON readers keep the last"):
        read_manifest(path)


def test_a_split_folder_linked_to_another_disk_stays_up_to_date(tmp_path: Path, prepared: Path,
                                                                 run_sate) -> None:  # noqa: ANN001
    """DATA/fbank/dev linked to a folder on another disk: its arks resolve outside DATA/fbank, and the index was
    taken for another data directory's, its shard recomputed at every `sate features`."""
    data = copy_data(prepared, tmp_path / "data")
    (data / "fbank" / "dev").rename(tmp_path / "big-disk-dev")
    (data / "fbank" / "dev").symlink_to(tmp_path / "big-disk-dev")
    rc, out, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 0 and "dev: 4 utterances, up to date" in out and "recomputed" not in out, out + err
    dataset = SpeechDataset.from_data_dir(data, "dev", Vocabulary.load(data, "src"), None)
    assert dataset[0]["feats"].shape[1] == 80


def test_a_split_folder_linked_to_another_disk_is_computed_into_and_one_of_another_data_directory_refused(
        tmp_path: Path, prepared: Path, run_sate) -> None:  # noqa: ANN001
    """DATA/fbank/dev linked to an empty folder on another disk (or one whose manifest changed since) was "File
    exists", status 1: the old shards were removed with rmtree, which refuses a link, and the folder made again
    (eleventh hostile pass). One linked into another data directory's fbank/ would have that directory's shards
    replaced: refused before any work."""
    data = copy_data(prepared, tmp_path / "data")
    shutil.rmtree(data / "fbank" / "dev")
    (tmp_path / "big-disk-dev").mkdir()
    (tmp_path / "big-disk-dev" / "00009.ark").write_bytes(b"an old shard")  # a name of sate's (twelfth pass: the
    (data / "fbank" / "dev").symlink_to(tmp_path / "big-disk-dev")  # user's files are refused, test_features.py)
    rc, out, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 0 and "dev: 4 utterances, 1 of 1 shards to compute" in out, out + err
    assert (data / "fbank" / "dev").is_symlink() and not (tmp_path / "big-disk-dev" / "00009.ark").exists()
    assert SpeechDataset.from_data_dir(data, "dev", Vocabulary.load(data, "src"), None)[0]["feats"].shape[1] == 80
    other = copy_data(prepared, tmp_path / "other")
    before = sorted((p.name, p.stat().st_mtime_ns) for p in (other / "fbank" / "dev").iterdir())
    (data / "fbank" / "dev").unlink()
    (data / "fbank" / "dev").symlink_to(other / "fbank" / "dev")
    rc, out, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 2 and err.strip() == (
        f"sate features: error: --data {data}: {data / 'fbank' / 'dev'} is a symlink to {other / 'fbank' / 'dev'}, "
        f"the fbank/dev/ of another data directory ({other}), whose files this run would replace; remove the link")
    assert sorted((p.name, p.stat().st_mtime_ns) for p in (other / "fbank" / "dev").iterdir()) == before


@pytest.mark.parametrize("ark", ["../../original/fbank/dev/00000.ark", "/etc/passwd", "../../original/fbank/"])
def test_an_index_naming_files_of_no_split_of_its_own_is_refused_by_a_reader(tmp_path: Path, prepared: Path,
                                                                             run_sate, ark: str) -> None:  # noqa: ANN001
    """An index line edited to name another data directory's ark was read without a word; one naming /etc/passwd
    got the advice to delete it. A reader refuses both; `sate features` recomputes the index."""
    copy_data(prepared, tmp_path / "original")
    data = copy_data(prepared, tmp_path / "data")
    scp = data / "fbank" / "dev.scp"
    lines = scp.read_text().splitlines()
    lines[0] = lines[0].split(" ")[0] + f" {ark}:0"
    scp.write_text("\n".join(lines) + "\n")
    vocab = Vocabulary.load(data, "src")
    with pytest.raises(SateError, match=r"dev.scp: it names .*, which is not one of .*fbank's feature files \(an "
                                        r"index of another data directory, copied\?\); run `sate features`"):
        SpeechDataset.from_data_dir(data, "dev", vocab, None)
    rc, out, err = run_sate("features", "--data", data, "--jobs", "1")
    # its shards are whole: it said "0 shard(s) whose ark or index is missing ...: recomputed" (twentieth pass)
    assert rc == 0 and f"dev: its index {scp} names an ark that is missing, damaged or another data directory's " \
        "(copied from one?): written again from its shards' indexes" in out and "recomputed" not in out, out + err
    assert SpeechDataset.from_data_dir(data, "dev", vocab, None)[0]["feats"].shape[1] == 80


def test_a_split_that_is_a_path_is_refused_by_every_command_that_takes_one(tmp_path: Path, prepared: Path,
                                                                            capsys: pytest.CaptureFixture) -> None:
    """A split names DATA/<split>.jsonl and what is computed of it: `sate features --splits ../other/dev` read
    another data directory's manifest and wrote its features into this one (DATA/other/dev/), exit 0. Every
    command that takes a split name checks it as `sate prep` does, before any work."""
    from sate.cli import main

    data = copy_data(prepared, tmp_path / "data")
    shutil.copy(prepared / "dev.jsonl", tmp_path / "dev.jsonl")  # what ../dev names from inside the copy
    before = sorted(p.relative_to(data) for p in data.rglob("*"))
    message = "'../dev' is not a split name (letters, digits, '.', '_' and '-'; at most 200)"
    for argv, where in [(["features", "--data", str(data), "--splits", "../dev"], "--splits"),
                        (["vocab", "--data", str(data), "--src-size", "40", "--tgt-size", "50", "--src-splits",
                          "../dev"], "--src-splits"),
                        (["evaluate", "--model", str(tmp_path), "--data", str(data), "--split", "../dev"], "--split"),
                        (["analyze", "locality", "--model", str(tmp_path), "--data", str(data), "--split", "../dev",
                          "--out", str(tmp_path / "loc")], "--split")]:
        assert main(argv) == 2, argv
        assert capsys.readouterr().err.strip().endswith(f"error: {where}: {message}"), argv
    assert sorted(p.relative_to(data) for p in data.rglob("*")) == before
    config = tmp_path / "asr.yaml"
    config.write_text(f"task: asr\ndata:\n  dir: {data}\n  valid: ../dev\n")
    assert main(["config", "--config", str(config)]) == 2
    assert "data.valid must be a split name" in capsys.readouterr().err
    config.write_text(f"task: asr\ndata:\n  dir: {data}\n  train: [train, .hidden]\n")
    assert main(["config", "--config", str(config)]) == 2
    assert "data.train must be a split name or a non-empty list" in capsys.readouterr().err


def test_features_of_audio_replaced_since_are_recomputed(tmp_path: Path, corpus: Path, run_sate) -> None:  # noqa: ANN001
    """The manifest names the audio files, not what they hold: a talk replaced after `sate features` (copied again,
    re-encoded, at the same length) kept its old features, "up to date". Its shards are recomputed now; audio
    deleted once its features are stored leaves them be."""
    import soundfile as sf

    data = tmp_path / "data"
    assert run_sate("prep", "--mustc-root", corpus, "--out", data)[0] == 0
    assert run_sate("features", "--data", data, "--jobs", "1")[0] == 0
    talk = Path(read_manifest(data / "dev.jsonl")[0]["audio"])
    ark = data / "fbank" / "dev" / "00000.ark"
    before = ark.read_bytes()
    wave, rate = sf.read(talk, dtype="float32")
    sf.write(talk, wave * 0.5, rate, subtype="PCM_16")  # the same size, other samples
    rc, out, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 0, err
    assert out.splitlines()[0] == "dev: 1 shard(s) whose audio files changed since their features were computed: " \
                                  "recomputed at the manifest's segment times (if the corpus was made again since " \
                                  "`sate prep`, run `sate prep` first)"
    assert "dev: " in out and "1 of 1 shards to compute" in out and "train: " in out
    assert ark.read_bytes() != before
    assert all(line.endswith("up to date") for line in run_sate("features", "--data", data, "--jobs", "1")[1]
               .splitlines())
    talk.unlink()  # the features stay: they cannot be recomputed, and raw audio is often deleted after them
    assert all(line.endswith("up to date") for line in run_sate("features", "--data", data, "--jobs", "1")[1]
               .splitlines())


def test_a_corpus_made_again_under_its_manifest_is_told_before_any_work(tmp_path: Path, corpus: Path,
                                                                       run_sate) -> None:  # noqa: ANN001
    """`sate synth --seed 1` over the corpus a data directory was prepared from, then `sate features` without `sate
    prep`: train's shards were computed at the old segment times on the new talks, then dev stopped on "runs past the
    end of the audio ... is the manifest row of another file?" (24th hostile pass). Refused before any work, naming
    `sate prep`, which, followed, mends it."""
    import soundfile as sf

    data = tmp_path / "data"
    assert run_sate("prep", "--mustc-root", corpus, "--out", data)[0] == 0
    assert run_sate("features", "--data", data, "--jobs", "1")[0] == 0
    train_ark = (data / "fbank" / "train" / "00000.ark").read_bytes()
    rows = read_manifest(data / "dev.jsonl")
    talk = Path(rows[-1]["audio"])
    wave, rate = sf.read(talk, dtype="float32")
    end = max(r["offset"] + r["duration"] for r in rows if r["audio"] == str(talk))
    sf.write(talk, wave[: int((end - 0.5) * rate)], rate, subtype="PCM_16")  # voiced again, shorter
    rc, out, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 2 and f"its audio {talk} changed since its features were computed and now ends at" in err
    assert "the manifest is older than the corpus (made or downloaded again?); run `sate prep` again" in err
    assert (data / "fbank" / "train" / "00000.ark").read_bytes() == train_ark and "compute" not in out
    (talk.parent.parent / "txt" / "dev.yaml").write_text("".join(  # the corpus's own segment list, made again too
        line + "\n" for line in (talk.parent.parent / "txt" / "dev.yaml").read_text().splitlines()
        if f"wav: {talk.name}" not in line or float(line.split("offset: ")[1].split(",")[0]) < end - 1.0))
    keep = sum(1 for line in (talk.parent.parent / "txt" / "dev.yaml").read_text().splitlines())
    for ext in ("en", "de"):
        path = talk.parent.parent / "txt" / f"dev.{ext}"
        path.write_text("".join(line + "\n" for line in path.read_text().splitlines()[:keep]))
    assert run_sate("prep", "--mustc-root", corpus, "--out", data)[0] == 0
    assert run_sate("features", "--data", data, "--jobs", "1")[0] == 0


def _edit_index(scp: Path, edit) -> None:  # noqa: ANN001 - a function of the line list
    lines = scp.read_text().splitlines()
    edit(lines)
    scp.write_text("\n".join(lines) + "\n")


def _offset(line: str) -> str:
    return line.rpartition(":")[2]


@pytest.mark.parametrize("edit", ["line removed", "id repeated", "another utterance's matrix"])
@pytest.mark.parametrize("index", ["dev.scp", "dev/00000.scp"])
def test_an_edited_index_is_not_up_to_date(tmp_path: Path, prepared: Path, run_sate, edit: str,  # noqa: ANN001
                                           index: str) -> None:
    """A line removed from a split's index, an id repeated or pointed at another utterance's features: the readers
    said to run `sate features`, which said "up to date". The split index is written again from its shards; a
    shard's own index edited so recomputes the shard."""
    data = copy_data(prepared, tmp_path / "data")
    scp = data / "fbank" / index
    before = (data / "fbank" / "dev.scp").read_text()

    def damage(lines: list[str]) -> None:
        if edit == "line removed":
            del lines[1]
        elif edit == "id repeated":
            lines[1] = lines[0].split(" ")[0] + " " + lines[1].split(" ")[1]
        else:
            lines[0] = lines[0].rpartition(":")[0] + ":" + _offset(lines[1])

    _edit_index(scp, damage)
    vocab = Vocabulary.load(data, "src")
    if index == "dev.scp":  # the readers read the split's index
        with pytest.raises(SateError, match=r"run `sate features"):
            ds = SpeechDataset.from_data_dir(data, "dev", vocab, None)
            [ds[i] for i in range(len(ds))]
    rc, out, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 0, err
    if index == "dev.scp":
        assert f"dev: its index {scp} is not the one its shards make (edited?): written again" in out, out
    else:
        assert DAMAGED_SHARD in out
    assert (data / "fbank" / "dev.scp").read_text() == before
    ds = SpeechDataset.from_data_dir(data, "dev", vocab, None)
    assert all(ds[i]["feats"].shape[1] == 80 for i in range(len(ds)))


@pytest.mark.parametrize("edit", ["digits", "tab", "note", "latin1"])
def test_an_index_line_that_is_no_index_line_is_one_line_and_written_again(tmp_path: Path, prepared: Path,
                                                                           run_sate, edit: str) -> None:  # noqa: ANN001
    """'²' is a digit to str.isdigit but not to int(): a ValueError traceback in `sate features` and the readers
    (tenth hostile pass). Such a line, or one whose fields a tab parts (an editor's), or a note added, was then
    refused by `sate features` too, naming the line and nothing to do, where it writes an index edited any other way
    again from its shards' (twenty-ninth hostile pass): the readers name the line and say so, and it does. The note
    saved in Latin-1 (cp1252) still was, as "not valid UTF-8" with nothing to do (review29m)."""
    data = copy_data(prepared, tmp_path / "data")
    scp = data / "fbank" / "dev.scp"
    before = scp.read_text()
    if edit == "digits":
        _edit_index(scp, lambda lines: lines.__setitem__(0, lines[0].rpartition(":")[0] + ":²"))
    elif edit == "tab":
        scp.write_text(before.replace(" ", "\t", 1))
    elif edit == "note":
        scp.write_text(before + "computed on the cluster\n")
    else:
        scp.write_bytes(before.encode() + "computed on the cluster été\n".encode("latin-1"))
    line = before.count("\n") + 1 if edit in ("note", "latin1") else 1
    what = r"not valid UTF-8 \(invalid continuation byte\)" if edit == "latin1" else \
        r"not an index line \(ID ARK:OFFSET\): .*"
    with pytest.raises(SateError, match=rf"^{scp}:{line}: {what}; run `sate features`, which writes it again$"):
        FeatureIndex(scp)
    rc, out, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 0, err
    assert f"dev: its index {scp} holds a line that is not ID ARK:OFFSET (edited?): written again" in out, out
    assert scp.read_text() == before
    assert len(FeatureIndex(scp)) == before.count("\n")


def test_a_shard_index_not_in_utf8_makes_its_shard_computed_again(tmp_path: Path, prepared: Path,
                                                                  run_sate) -> None:  # noqa: ANN001
    """review29m: a note saved in Latin-1 in a shard's index (`fbank/dev/00000.scp`) was refused by `sate features`
    ("not valid UTF-8") with nothing to do; it is an edit as a tab is: the shard is computed again."""
    data = copy_data(prepared, tmp_path / "data")
    shard = data / "fbank" / "dev" / "00000.scp"
    before, whole = shard.read_bytes(), (data / "fbank" / "dev.scp").read_text()
    shard.write_bytes(before + "calcul\xe9 sur le cluster\n".encode("latin-1"))
    rc, out, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 0, err
    assert DAMAGED_SHARD in out, out
    assert shard.read_bytes() == before and (data / "fbank" / "dev.scp").read_text() == whole


@pytest.mark.parametrize("recorded", ['"RIGHT"', "true", "RIGHT.0"])
def test_a_recorded_size_that_is_no_byte_count_is_named_as_such(tmp_path: Path, prepared: Path,
                                                                run_sate, recorded: str) -> None:  # noqa: ANN001
    """sizes.json edited to hold the right size as a string read "00000.ark has 126176 bytes, 126176 when it was
    written: cut short or replaced" (tenth hostile pass); it is named as the damaged record it is."""
    data = copy_data(prepared, tmp_path / "data")
    sizes = data / "fbank" / "dev" / "sizes.json"
    size = (data / "fbank" / "dev" / "00000.ark").stat().st_size
    sizes.write_text('{"00000.ark": ' + recorded.replace("RIGHT", str(size)) + "}\n")
    vocab = Vocabulary.load(data, "src")
    with pytest.raises(SateError, match=rf"{sizes} records .* for 00000.ark, not a number of bytes: damaged; run "
                                        "`sate features` again"):
        SpeechDataset.from_data_dir(data, "dev", vocab, None)
    rc, _, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 0, err
    assert json.loads(sizes.read_text()) == {"00000.ark": size}


@pytest.mark.parametrize("record", ['{"9": "x"}', "[1]", "garbage", "{}"])
def test_a_damaged_checksum_record_is_not_up_to_date(tmp_path: Path, prepared: Path, run_sate,  # noqa: ANN001
                                                     record: str) -> None:
    """A crc.json edited or cut was read as "no checksums recorded" (a shard written before they were): every
    feature of its ark went unchecked, without a word (tenth hostile pass)."""
    data = copy_data(prepared, tmp_path / "data")
    crc = data / "fbank" / "dev" / "00000.crc.json"
    before = crc.read_text()
    crc.write_text(record + "\n")
    _refused_then_recomputed(data, rf"{crc} does not hold the checksums of 00000.ark's features: damaged; run "
                                   "`sate features` again", run_sate)
    assert crc.read_text() == before


@pytest.mark.parametrize("record", ["00000.crc.json", "sizes.json"])
def test_a_deleted_record_is_not_read_as_an_older_sates_split(tmp_path: Path, prepared: Path, run_sate,  # noqa: ANN001
                                                               record: str) -> None:
    """A shard's crc.json or a finished split's sizes.json deleted read as a split written before sate recorded
    them: bytes changed in place were read as features, and an ark cut in its last matrix was "up to date" for
    `sate features` (left by the twenty-first hostile pass). Either record there says the other was written: the
    one missing is named as damaged, and `sate features` recomputes the shard and writes both again."""
    data = copy_data(prepared, tmp_path / "data")
    ark = data / "fbank" / "dev" / "00000.ark"
    whole = ark.read_bytes()
    records = {name: (data / "fbank" / "dev" / name).read_text() for name in ("00000.crc.json", "sizes.json")}
    (data / "fbank" / "dev" / record).unlink()
    # what the other record does not see: bytes changed in place (the size kept), or an ark cut in its last matrix
    ark.write_bytes(whole[:-100] + bytes(100) if record.endswith(".crc.json") else whole[:-100])
    _refused_then_recomputed(data, rf"{data / 'fbank' / 'dev' / record} is missing \(.*so it was written\): "
                                   "damaged; run `sate features` again", run_sate)
    assert ark.read_bytes() == whole
    assert {name: (data / "fbank" / "dev" / name).read_text() for name in records} == records


@pytest.mark.parametrize("damage", ["delete", "cut", "shape", "frames", "one-array"])
def test_damaged_cmvn_sums_are_recomputed(tmp_path: Path, prepared: Path, run_sate, damage: str) -> None:  # noqa: ANN001
    """A train shard's CMVN sums (NNNNN.stats.npz), which cmvn.json is added up from, were trusted blindly: deleted, a
    FileNotFoundError; cut short, a BadZipFile traceback; of another length, a ValueError traceback; a frame count
    edited to -3, a cmvn.json of nonsense with exit 0 (eleventh hostile pass); one array (.npy) in its place, a
    TypeError traceback (fifteenth). Each is recomputed, as a damaged ark is."""
    data = copy_data(prepared, tmp_path / "data")
    stats = data / "fbank" / "train" / "00000.stats.npz"
    cmvn = load_cmvn(data / "cmvn.json")
    (data / "cmvn.json").unlink()
    if damage == "delete":
        stats.unlink()
    elif damage == "cut":
        stats.write_bytes(stats.read_bytes()[:100])
    elif damage == "shape":
        np.savez(stats, sum=np.zeros(40), sum_sq=np.zeros(40), frames=5)
    elif damage == "one-array":
        with stats.open("wb") as f:
            np.save(f, np.zeros(80))
    else:
        with np.load(stats) as old:
            np.savez(stats, sum=old["sum"], sum_sq=old["sum_sq"], frames=-3)
    rc, out, err = run_sate("features", "--data", data, "--jobs", "1")
    says = "train: 1 shard(s) whose CMVN sums (00000.stats.npz) are missing or damaged: recomputed"
    assert rc == 0 and says in out, out + err
    assert all(np.array_equal(a, b) for a, b in zip(load_cmvn(data / "cmvn.json"), cmvn, strict=True))


@pytest.mark.slow
def test_features_of_rows_changed_since_are_refused_by_a_reader(tmp_path: Path, corpus: Path,
                                                                run_sate) -> None:  # noqa: ANN001
    """A dataset checked ids and frame counts alone: a row's offset edited (the same frame count), or its talk
    replaced, since `sate features` was trained and evaluated on the old slice, exit 0 (twelfth hostile pass). The
    reader now refuses what `sate features` would recompute, and reads once it has."""
    import soundfile as sf

    data = tmp_path / "data"
    assert run_sate("prep", "--mustc-root", corpus, "--out", data)[0] == 0
    assert run_sate("features", "--data", data, "--jobs", "1", "--speed-perturb")[0] == 0
    assert run_sate("vocab", "--data", data, "--src-size", "40", "--tgt-size", "40")[0] == 0
    vocab = Vocabulary.load(data, "src")
    SpeechDataset.from_data_dir(data, "dev", vocab, None)
    SpeechDataset.from_data_dir(data, "train_sp", vocab, None)

    rewrite(data / "dev.jsonl", lambda rows: rows[0].update(offset=rows[0]["offset"] + 0.1))
    with pytest.raises(SateError, match=rf"^{data}/dev.jsonl changed since its features were computed \(a row's "
                                        rf"audio, offset, duration or frames\); run `sate features --data {data}`"):
        SpeechDataset.from_data_dir(data, "dev", vocab, None)
    assert run_sate("features", "--data", data, "--jobs", "1")[0] == 0
    SpeechDataset.from_data_dir(data, "dev", vocab, None)

    talk = Path(read_manifest(data / "train.jsonl")[0]["audio"])
    wave, rate = sf.read(talk, dtype="float32")
    sf.write(talk, wave * 0.5, rate, subtype="PCM_16")  # the same size, other samples
    for split in ("train", "train_sp"):
        with pytest.raises(SateError, match=rf"^an audio file of {data}/train.jsonl's rows 1 to \d+ changed since "
                                            r"their features were computed \(copied again, re-encoded\?\)"):
            SpeechDataset.from_data_dir(data, split, vocab, None)
    assert run_sate("features", "--data", data, "--jobs", "1")[0] == 0
    SpeechDataset.from_data_dir(data, "train_sp", vocab, None)


def test_an_fbank_folder_moved_to_another_disk_under_its_own_name_is_taken(tmp_path: Path, prepared: Path,
                                                                          run_sate) -> None:  # noqa: ANN001
    """DATA/fbank moved to /disk/fbank and linked back (the plainest way to put features on another disk) was refused
    as "the fbank/ of another data directory (/disk)": a folder holding an fbank/ counted as a data directory
    (twelfth hostile pass). One holding stored folders alone is none; another data directory's still is."""
    data = copy_data(prepared, tmp_path / "data")
    disk = tmp_path / "disk"
    disk.mkdir()
    (data / "fbank").rename(disk / "fbank")
    (data / "fbank").symlink_to(disk / "fbank")
    rc, out, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 0 and "dev: 4 utterances, up to date" in out, out + err
    (disk / "dev.jsonl").write_text((data / "dev.jsonl").read_text())  # now the folder is a data directory
    rc, _, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 2 and f"the fbank/ of another data directory ({disk})" in err


def test_an_fbank_folder_on_a_disk_beside_other_json_lines_is_taken(tmp_path: Path, prepared: Path,
                                                                     run_sate) -> None:  # noqa: ANN001
    """DATA/fbank moved to /scratch/feats, where `sate segment`'s lines (or notes) lie beside it in /scratch, was
    refused as "the fbank/ of another data directory (/scratch)": any .jsonl made a folder a data directory (twenty-
    seventh hostile pass). Only manifests do; a manifest there is still refused."""
    data = copy_data(prepared, tmp_path / "data")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (data / "fbank").rename(scratch / "feats")
    (data / "fbank").symlink_to(scratch / "feats")
    (scratch / "talk.jsonl").write_text('{"file": "talk.wav", "segment": 0, "start": 0.2, "end": 4.7}\n')
    (scratch / "notes.jsonl").write_text("not even JSON\n")
    (scratch / "silent.jsonl").write_text("")  # `sate segment` of a talk without speech (review of that pass)
    rc, out, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 0 and "dev: 4 utterances, up to date" in out, out + err
    (scratch / "dev.jsonl").write_text("")  # a split without rows: a manifest
    rc, _, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 2 and f"the fbank/ of another data directory ({scratch})" in err
    (scratch / "dev.jsonl").write_text((data / "dev.jsonl").read_text())
    rc, _, err = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 2 and f"the fbank/ of another data directory ({scratch})" in err


def test_an_ark_cut_behind_a_damaged_size_record_is_recomputed(tmp_path: Path, prepared: Path,
                                                                run_sate) -> None:  # noqa: ANN001
    """A split's sizes.json emptied (or cut) checked no ark's size: an ark cut short since was "up to date" for
    `sate features`, exit 0, while its readers said to delete it (fourteenth hostile pass). The record is damaged,
    the shard recomputed and the record written again."""
    data = copy_data(prepared, tmp_path / "data")
    ark = data / "fbank" / "dev" / "00000.ark"
    whole = ark.read_bytes()
    (data / "fbank" / "dev" / "sizes.json").write_text("")
    ark.write_bytes(whole[:-100])
    rc, out, _ = run_sate("features", "--data", data, "--jobs", "1")
    assert rc == 0 and DAMAGED_SHARD in out
    assert ark.read_bytes() == whole
    assert json.loads((data / "fbank" / "dev" / "sizes.json").read_text()) == {"00000.ark": len(whole)}
