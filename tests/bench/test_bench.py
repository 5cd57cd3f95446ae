"""Smoke test of `python -m sate.bench`: every part runs on a tiny model with one repetition and writes every
field of the JSON. No speed is asserted: figures from a tiny model on a shared machine mean nothing."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from sate.bench import corpus as corpus_part
from sate.bench import ctcvocab as ctcvocab_part
from sate.bench import length as length_part
from sate.bench import train as train_part
from sate.bench.cli import main
from sate.bench.subject import TINY_MODEL, fit, load_subject
from sate.data.dataset import SpeechDataset, collate
from sate.data.vocab import Vocabulary
from sate.errors import SateError
from sate.models import build_model
from sate.models.model_file import save_model_file

pytestmark = pytest.mark.slow  # builds and trains models, or runs whole recipes

SPEED = {"seconds", "encode_seconds", "search_seconds", "utts_per_s", "rtf", "peak_rss_mib", "rss_rise_mib", "bleu"}


@pytest.fixture(scope="module")
def tiny_st_file(tmp_path_factory: pytest.TempPathFactory, prepared_data: Path) -> Path:
    """A tiny league ST model fitted to the fixture corpus for a few seconds."""
    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    train = SpeechDataset.from_data_dir(prepared_data, "train", src, tgt, cmvn=prepared_data / "cmvn.json")
    torch.manual_seed(0)
    model = fit(build_model("st", TINY_MODEL, len(src), len(tgt)), collate(list(train)), steps=40, log=False)
    path = tmp_path_factory.mktemp("bench") / "model.pt"
    save_model_file(path, model, src.tokens, tgt.tokens)
    return path


def test_every_part_writes_every_field(tmp_path: Path, tiny_st_file: Path, prepared_data: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    assert main(["--model", str(tiny_st_file), "--data", str(prepared_data), "--out", str(out), "--repeat", "1",
                 "--max-utts", "2", "--batch-sizes", "1,2", "--train-batches", "1", "--max-frames", "2000",
                 "--data-minutes", "0.1", "--jobs", "1"]) == 0
    printed = capsys.readouterr().out
    assert "Summary" in printed and str(out) in printed
    r = json.loads(out.read_text())
    assert r["command"].startswith("python -m sate.bench --model")
    assert r["parts"] == ["decode", "train", "data", "length"]
    assert {"date", "cpu", "cores", "torch_threads", "torch", "espnet", "sacrebleu"} <= set(r["machine"])
    assert r["subject"] == {"model": str(tiny_st_file), "data": str(prepared_data)} and "VmHWM" in r["peak_memory"]

    d = r["decode"]
    assert d["utterances"] == 2 and d["beam"] == 5 and d["audio_seconds"] > 0 and d["split"] == "dev"
    assert SPEED <= set(d["espnet"]) and [row["batch_size"] for row in d["sate"]] == [1, 2]
    assert d["espnet"]["encode_seconds"] + d["espnet"]["search_seconds"] == pytest.approx(d["espnet"]["seconds"],
                                                                                          abs=0.002)
    for row in d["sate"]:
        assert SPEED | {"speedup", "search_speedup", "identical"} <= set(row) and 0 <= row["identical"] <= 2
        assert row["encode_seconds"] + row["search_seconds"] == pytest.approx(row["seconds"], abs=0.002)
        assert 0 <= row["bleu"] <= 100 and row["speedup"] > 0
    assert {"speedup_at_least", "best_batch_size", "speedup", "bleu_equal", "met"} <= set(d["goal"])

    t = r["train"]
    assert t["batches"] == 1 and t["max_frames"] == 2000 and t["frames"] > 0 and t["batches_from"] == "train split"
    for name in ("sate", "espnet", "sate_espnet_modules"):
        assert {"seconds", "frames_per_s", "peak_rss_mib", "rss_rise_mib"} <= set(t[name]) and t[name]["seconds"] > 0
    assert t["ratio"] > 0 and t["ratio_without_adaptor"] > 0 and isinstance(t["goal"]["met"], bool)
    assert t["sate"]["ratio"] == t["ratio"] and t["sate_espnet_modules"]["ratio"] > 0
    assert len(t["spread"]["ratios_per_repeat"]) == 1 and t["spread"]["min"] == t["spread"]["max"]
    # the same function: ESPnet's loss through our adaptor equals ours (eval mode, utterances alone)
    assert t["loss_check"]["equal"] and t["loss_check"]["max_abs_difference"] <= 1e-4, t["loss_check"]
    shares = [row["share"] for row in t["profile_sate_step"]]
    assert shares == sorted(shares, reverse=True) and 0 < sum(shares) <= 1.0, t["profile_sate_step"]
    assert 0 < t["sate"]["adaptor_seconds"] < t["sate"]["seconds"]
    assert t["model"]["parameters_espnet"] > 0 and t["model"]["adaptor"] == "league"
    pad = t["padding"]
    assert 0 <= pad["measured_batches"] < 1
    assert set(pad["train_split"]) == set(pad["mustc_like_229k"]) == {"bucketed", "random"}

    check_data_part(r["data"])
    assert r["data"]["loader_data"] == str(prepared_data) and str(prepared_data) in r["data"]["audio"]

    ln = r["length"]
    assert ln["adaptors"] == ["league", "shrink"] and ln["target_tokens_per_second"] > 0
    assert [row["seconds"] for row in ln["lengths"]] == list(length_part.SECONDS)
    for row in ln["lengths"]:
        assert row["frames"] == 100 * row["seconds"] and row["output_tokens"] >= 1 and row["speedup"] > 0
        for kind in ("league", "shrink"):
            assert {"memory_length", "encode_seconds", "search_seconds", "seconds", "rtf", "peak_rss_mib",
                    "rss_rise_mib"} <= set(row[kind])
        assert row["shrink"]["memory_length"] <= row["league"]["memory_length"]  # one per segment, not frame


def test_a_batch_size_above_the_utterances_is_given_as_the_batch_decoded(tiny_st_file: Path,
                                                                          prepared_data: Path) -> None:
    """`--max-utts 2 --batch-sizes 1,8` said "sate batch 8" for a batch that held 2 (thirtieth hostile pass); `1,4,8`
    gave two rows "sate batch 2", the same decoding timed twice (33rd)."""
    from sate.bench import decode as decode_part

    result = decode_part.run(load_subject(tiny_st_file, prepared_data), "dev", 2, [1, 4, 8], 2, 1)
    assert result["utterances"] == 2 and [row["batch_size"] for row in result["sate"]] == [1, 2]
    assert result["goal"]["best_batch_size"] in (1, 2)


def check_data_part(data: dict) -> None:
    assert data["utterances"] > 0 and data["audio_minutes"] > 0 and [f["jobs"] for f in data["features"]] == [1]
    assert data["features"][0]["x_real_time_per_core"] > 0 and data["features"][0]["seconds"] > 0
    assert [x["workers"] for x in data["loader"]] == [0, 2]
    assert all(x["utts_per_s"] > 0 and x["first_batch_seconds"] > 0 for x in data["loader"])


def test_data_part_alone_needs_no_model(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    assert main(["--parts", "data", "--out", str(out), "--data-minutes", "0.1", "--jobs", "1"]) == 0
    r = json.loads(out.read_text())
    assert r["subject"] is None and list(r)[-1] == "data" and "tones" in r["data"]["audio"]
    check_data_part(r["data"])


@pytest.mark.parametrize("argv", [["--parts", "data"], ["--parts", "corpus"], ["--tiny", "--parts", "data,decode"]])
def test_a_data_dir_no_part_reads_is_refused(argv: list[str], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`--parts data --data D` without --model timed generated tones and said so only in the table, exit 0: a
    figure over another corpus than the one named (28th hostile pass)."""
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--data", str(tmp_path / "mustc"), "--out", str(tmp_path / "b.json")])
    assert exit_.value.code == 2
    assert f"--data {tmp_path / 'mustc'}: read only with --model" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_missing_pack_is_named_before_any_part(tmp_path: Path, whisper_asr_dir: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """`--parts text,asr-real --pack TYPO` named the pack only once the text part had run (28th hostile pass); a
    Whisper directory, which asr-real reads, passes."""
    from sate.bench.cli import check_pack_early, parse_args

    out = tmp_path / "b.json"
    for parts, says in (("corpus,asr-real", "pakc: packed model directory is missing"),
                        ("corpus,asr-long", f"{tmp_path}: not a packed model: sate.yaml is missing")):
        pack = tmp_path / "pakc" if "real" in parts else tmp_path
        assert main(["--parts", parts, "--pack", str(pack), "--out", str(out)]) == 2
        assert says in capsys.readouterr().err and not out.exists()
    check_pack_early(parse_args(["--parts", "asr-real", "--pack", str(whisper_asr_dir)]))
    with pytest.raises(SateError, match="not a packed model"):  # asr-long reads packs only
        check_pack_early(parse_args(["--parts", "asr-long", "--pack", str(whisper_asr_dir)]))


def test_twins_share_weights_and_the_frame_twin_is_the_model(tiny_st_file: Path, prepared_data: Path) -> None:
    subject = load_subject(tiny_st_file, prepared_data)
    twins = length_part.twins(subject.model)
    assert list(twins) == ["league", "shrink"] and twins["shrink"].conf.adaptor.type == "shrink"
    league, shrink = twins["league"].state_dict(), twins["shrink"].state_dict()
    assert [k.replace("adaptor.inner.", "adaptor.") for k in shrink] == list(league)
    feats = subject.dataset("dev")[0]["feats"][None]
    lengths = torch.tensor([feats.size(1)])
    with torch.no_grad():
        assert torch.equal(twins["league"].encode(feats, lengths).memory, subject.model.encode(feats, lengths).memory)
        assert twins["shrink"].encode(feats, lengths).memory.size(1) <= feats.size(1) // 4


def test_synthetic_batches_look_like_mustc(tiny_st_file: Path, prepared_data: Path) -> None:
    subject = load_subject(tiny_st_file, prepared_data, tiny=True)
    batches, lengths = train_part.synthetic_batches(subject, max_frames=20000, count=2)
    assert len(batches) == 2 and 300 < float(sum(lengths)) / len(lengths) < 1000  # about 5 s on average
    for batch in batches:
        assert batch["feats"].shape[0] * batch["feats"].shape[1] <= 20000 and batch["feats"].shape[2] == 80
        for key, vocab in (("src", subject.model.src_vocab_size), ("tgt", subject.model.tgt_vocab_size)):
            real = batch[key][batch[key] >= 0]
            assert real.min() >= 1 and real.max() <= vocab - 2 and batch[f"{key}_lengths"].min() >= 1


def test_bad_arguments_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--tiny", "--parts", "decode,speed"], ["--parts", "decode"], ["--model", "m.pt"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2
    assert "--model needs --data" in capsys.readouterr().err
    for argv in (["--model", "", "--data", "d"], ["--model", "m.pt", "--data", ""], ["--pack", ""]):
        with pytest.raises(SystemExit) as exit_:  # the current directory, `Path('')`, where a variable was unset
            main(argv)
        assert exit_.value.code == 2 and "an empty name (an unset variable?)" in capsys.readouterr().err, argv


@pytest.mark.parametrize(("argv", "says"), [
    (["--batch-sizes", "a"], "--batch-sizes must be comma-separated whole numbers >= 1, got 'a' in 'a'"),  # ValueError
    (["--batch-sizes", "1,0"], "--batch-sizes must be comma-separated whole numbers >= 1, got '0' in '1,0'"),
    (["--vocab-sizes", "8,1"], "--vocab-sizes must be comma-separated whole numbers >= 2, got '1' in '8,1'"),
    (["--gpu-utts", "0"], "--gpu-utts must be at least 1, got 0"),  # once a list of eleven options
    (["--beam", "0"], "--beam must be at least 1, got 0"),
    (["--threads", "0"], "--threads must be from 1 to "),  # 0 was torch's choice, 10^5 a pool that size
    (["--threads", "100000"], "--threads must be from 1 to "),
    (["--data-minutes", "nan"], "--data-minutes must be a positive number of minutes, got nan"),
    (["--max-frames", "-1"], "--max-frames must be at least 1, got -1"),
    (["--beam", "100000"], "--beam must be at most 256 (sate's decoding limit), got 100000"),  # ESPnet's traceback
    (["--segment-seed", "-1"], "--segment-seed must be at least 0, got -1"),  # numpy's ValueError traceback
    # after the part had started: "sate vocab failed on the fake data", the cause on another line
    (["--scale-segments", "250"], "--scale-segments must be at least 1,000 (the fake data's vocabularies are trained"),
    # SentencePiece's "Vocabulary size too high" inside the part, naming a --src-size nobody gave (28th hostile pass)
    (["--text-lines", "50"], "--text-lines must be at least 100 (the text part's vocabularies, 1,000 pieces a side"),
    # an allocation of terabytes once the part began (28th hostile pass)
    (["--vocab-sizes", "58101,1000000000"], "--vocab-sizes must be at most 262,144 pieces (above any Marian "),
    # "train_size 50000 is more than text_size 40000" once the part began, options nobody gave (30th hostile pass)
    (["--corpus-size", "50000"], "--corpus-size must be at most 40,000 (the demo phrasebook's train text pairs"),
    # ran twice, the JSON keeping the second run's figures and listing the part twice (26th hostile pass)
    (["--parts", "data,scale, data"], "--parts: data given more than once in 'data,scale,data'; each part runs once"),
])
def test_each_bad_number_is_named_before_any_work(argv: list[str], says: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`--batch-sizes 0 --tiny` voiced a corpus and trained the tiny model before it failed; `--batch-sizes a` was
    a traceback (eleventh hostile pass)."""
    with pytest.raises(SystemExit) as exit_:
        main(["--tiny", "--parts", "decode", *argv])
    assert exit_.value.code == 2 and says in capsys.readouterr().err


def test_corpus_part_voices_a_fresh_corpus() -> None:
    result = corpus_part.run(3, jobs=1, sizes={"text_size": 20, "dev_size": 2, "test_size": 2})
    voiced = 3 + 2 + 2 * 2  # train, dev, tst-COMMON and the same sentences in held-out voices
    assert result["utterances"] == voiced and result["train_size"] == 3 and result["audio_hours"] > 0
    assert result["utterances_per_second"] == pytest.approx(voiced / result["seconds"], rel=0.25)  # seconds rounded
    assert result["x_real_time"] > 0 and f"{voiced} utterances" in corpus_part.table(result)


def test_the_ctc_vocab_part_writes_every_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On 1 s of audio instead of the part's 10 s (SECONDS): the same fields, and the frames of wav2vec2-base's
    convolutions at that length (50 a second less one: 49, and 499 for 10 s). 10 s took 28 s of the test, 1 s 4 s."""
    monkeypatch.setattr(ctcvocab_part, "SECONDS", 1.0)
    out = tmp_path / "ctc.json"
    assert main(["--parts", "ctc-vocab", "--vocab-sizes", "300,30", "--repeat", "1", "--threads", "1",
                 "--out", str(out)]) == 0
    r = json.loads(out.read_text())["ctc-vocab"]
    assert r["frames_per_utterance"] == 49 and r["clock"].startswith("thread CPU time")
    assert r["seconds_per_utterance"] == 1.0
    assert [row["vocab"] for row in r["rows"]] == [300, 30]
    for row in r["rows"]:
        assert {"seconds", "overhead", "rss_rise_mib", "extra_rise_mib", "logits_mib"} <= set(row)
        assert row["seconds"] > 0


def test_a_full_disk_when_the_json_is_written_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    # Twelfth hostile pass: an OSError writing --out, after every part had run, was a traceback.
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("sate.files.os.fsync", full)
    monkeypatch.setattr(ctcvocab_part, "SECONDS", 1.0)  # the part only has to end: 1 s of audio, not 10
    out = tmp_path / "ctc.json"
    assert main(["--parts", "ctc-vocab", "--vocab-sizes", "30", "--repeat", "1", "--threads", "1",
                 "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"python -m sate.bench: error: {out}: No space left on device (the disk is full: free space " \
                  "there, or write elsewhere)"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_full_disk_inside_a_part_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The scale part writes its data directory first: a full disk there was a traceback through the part, since
    only sate's own errors were caught (twenty-second hostile pass). One line naming the file, status 1, nothing
    written."""
    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("sate.files.os.fsync", full)
    out = tmp_path / "scale.json"
    assert main(["--parts", "scale", "--threads", "1", "--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("python -m sate.bench: error: /") and len(err.splitlines()) == 1, err
    assert err.endswith(": No space left on device (the disk is full: free space there, or write elsewhere)"), err
    assert list(tmp_path.iterdir()) == []


def test_the_json_output_is_checked_before_any_part_runs(tmp_path: Path, tiny_st_file: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`--out` was written unchecked after every part had run (minutes): a model file named by mistake became JSON,
    and a file inside a checkpoint folder was written there. It follows the rule of every command that writes."""
    model = tmp_path / "model.pt"
    model.write_bytes(tiny_st_file.read_bytes())
    (tmp_path / "exp" / "checkpoints").mkdir(parents=True)
    (tmp_path / "exp" / "checkpoints" / "last.ckpt").write_bytes(b"x")
    for out in (model, tmp_path / "exp" / "checkpoints" / "bench.json"):
        assert main(["--parts", "data", "--out", str(out)]) == 2
        err = capsys.readouterr()
        assert err.out == "" and err.err.startswith(f"python -m sate.bench: error: --out {out}: "), err
    # a name of another kind: bench.csv got the JSON document, exit 0 (twenty-second hostile pass, hand22w)
    assert main(["--parts", "data", "--out", str(tmp_path / "bench.csv")]) == 2
    assert capsys.readouterr().err == (f"python -m sate.bench: error: --out {tmp_path / 'bench.csv'}: a .csv name says "
                                       "a CSV table, but python -m sate.bench writes one JSON document: name it "
                                       f"{tmp_path / 'bench.json'}\n")
    assert not (tmp_path / "bench.csv").exists()
    assert model.read_bytes() == tiny_st_file.read_bytes()
    assert not (tmp_path / "exp" / "checkpoints" / "bench.json").exists()


def test_a_beam_beyond_the_target_vocabulary_is_refused_before_any_part(tmp_path: Path, tiny_st_file: Path,
                                                                        prepared_data: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """ESPnet's search takes its first beam from the target vocabulary alone: a beam above its size was "selected
    index k out of range", a traceback (eleventh hostile pass)."""
    size = len(Vocabulary.load(prepared_data, "tgt"))
    out = tmp_path / "bench.json"
    assert main(["--model", str(tiny_st_file), "--data", str(prepared_data), "--parts", "decode", "--beam",
                 str(size + 1), "--out", str(out)]) == 2
    err = capsys.readouterr()
    assert err.out == "" and err.err.strip() == (
        f"python -m sate.bench: error: --beam {size + 1}: the decode part's ESPnet search keeps at most the target "
        f"vocabulary's {size} tokens of {tiny_st_file}")
    assert not out.exists()


@pytest.mark.parametrize("parts", ["train,length", "train,decode"])
def test_a_split_misspelt_is_named_before_any_part(parts: str, tmp_path: Path, tiny_st_file: Path,
                                                   prepared_data: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`--parts train,length --split tst-common` was refused when the length part began, after the train part's
    minutes, naming none of the splits the data directory holds (32nd hostile pass)."""
    def train(*_: object) -> None:
        raise AssertionError("the train part ran")

    monkeypatch.setattr(train_part, "run", train)
    out = tmp_path / "bench.json"
    assert main(["--model", str(tiny_st_file), "--data", str(prepared_data), "--parts", parts, "--split",
                 "tst-common", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{prepared_data / 'tst-common.jsonl'} is missing (--split tst-common); {prepared_data} holds the " \
           "splits train, dev, tst-COMMON" in err and not out.exists()


@pytest.mark.parametrize("split", ["../other/dev", "", ".hidden"])
def test_a_split_that_is_no_name_is_refused(split: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`--split ../other/dev` read another data directory's manifest, which `sate evaluate` refuses (32nd pass)."""
    with pytest.raises(SystemExit) as exit_:
        main(["--parts", "gpu", "--split", split])  # refused as it is parsed, before the part's CUDA check
    assert exit_.value.code == 2 and "is not a split name" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "says"), [
    ("batch: {per_device: abc}\n", "batch.per_device must be a whole number of at least 1, got 'abc'"),
    ("batch: {per_device: 0}\n", "batch.per_device must be a whole number of at least 1, got 0"),
    ("- 1\n", "the top level must be a mapping of keys, not list"),
    ("batch: [1]\n", r"batch must be a mapping of keys, got \[1\]"),
    ("batch: {per_device: [\n", "invalid YAML")])
def test_the_batch_cap_beside_the_model_is_read_as_a_config(tmp_path: Path, text: str, says: str) -> None:
    """`python -m sate.bench --model EXP/model.pt` takes its batch cap from EXP/config.yaml, read with PyYAML and
    int(): a hand-edited file was a ValueError, AttributeError or ScannerError traceback (twelfth hostile pass)."""
    (tmp_path / "config.yaml").write_text(text)
    with pytest.raises(SateError, match=rf"^{tmp_path / 'config.yaml'}.*{says}"):
        train_part.default_max_frames(tmp_path / "model.pt")
    for fine, frames in (("batch: {per_device: 3000}\n", 3000), ("task: asr\n", train_part.DEFAULT_MAX_FRAMES)):
        (tmp_path / "config.yaml").write_text(fine)
        assert train_part.default_max_frames(tmp_path / "model.pt") == frames


@pytest.mark.parametrize("inside", [False, True], ids=["bench", "sate-command"])
@pytest.mark.parametrize(("signum", "status", "says"), [(15, 143, "terminated"), (2, 130, "interrupted")])
def test_a_kill_removes_the_temporary_folder(tmp_path: Path, signum: int, status: int, says: str,
                                             inside: bool) -> None:
    """Thirteenth hostile pass: `kill` (SIGTERM) of `python -m sate.bench --tiny` left its temporary folder, the tiny
    corpus and data (13 MB), in /tmp; Ctrl-C outside a sate command was a KeyboardInterrupt traceback. The kill comes
    while the tiny subject is built, in a child process (its TMPDIR is tmp_path): in the bench's own code, or inside
    a sate command it runs (`sate prep`), whose status 130 or 143 the bench read as a failure: "sate prep failed",
    status 2 (fourteenth pass)."""
    import subprocess
    import sys

    # Ctrl-C as from a terminal: a test run started in the background (`cmd &`) inherits SIGINT ignored, and Python
    # then leaves it ignored (the bench went on past the kill)
    script = ("import os, signal, sys, sate.bench.cli as cli\n"
              "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
              "import sate.data.prep as prep, sate.bench.subject as subject\n"
              "def kill(*_):\n"
              f"    os.kill(os.getpid(), {signum})\n"
              "    for _ in range(10 ** 8): pass\n"
              "prep.run = kill\n"
              "def build(tmp):\n"
              "    (tmp / 'corpus').mkdir()\n"
              f"    subject.sate(['prep', '--mustc-root', str(tmp), '--out', str(tmp / 'd')]) if {inside} else kill()\n"
              "cli.build_tiny = build\n"
              "sys.exit(cli.main(['--tiny', '--parts', 'decode', '--out', sys.argv[1]]))\n")
    work = tmp_path / "tmp"
    work.mkdir()
    run = subprocess.run([sys.executable, "-c", script, str(tmp_path / "b.json")], capture_output=True, text=True,
                         env={**os.environ, "TMPDIR": str(work)}, timeout=300)
    assert run.returncode == status and run.stderr.strip().splitlines()[-1] == f"python -m sate.bench: {says}", run
    assert run.stderr.strip().splitlines()[:-1] == ([f"sate prep: {says}"] if inside else []), run.stderr
    assert [p.name for p in work.iterdir() if p.is_dir() and (p / "corpus").exists()] == []


def test_the_adaptor_is_timed_on_the_steps_clock(tiny_st_file: Path, prepared_data: Path) -> None:
    """`ratio_without_adaptor` takes the adaptor's time out of a step's: with one torch thread the steps ran on the
    thread's CPU clock and the adaptor on the wall clock, which a busy machine lengthens (26th hostile pass)."""
    subject = load_subject(tiny_st_file, prepared_data, tiny=True)
    batches, _ = train_part.synthetic_batches(subject, max_frames=4000, count=2)
    laps: list[int] = []

    def clock() -> Callable[[], float]:
        laps.append(1)
        return lambda: 0.25

    assert train_part.adaptor_seconds(subject.model, batches, 2, clock) == 0.25 * len(batches)
    assert len(laps) == 2 * len(batches)


def test_the_train_part_gives_the_adaptor_its_steps_clock(tiny_st_file: Path, prepared_data: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """At the call site: `run()` with one torch thread times the steps on the thread's CPU clock and must hand the
    adaptor that clock (review of the 26th hostile pass: the test above passed with `run()` back on the wall
    clock, `adaptor_seconds`'s default)."""
    subject = load_subject(tiny_st_file, prepared_data, tiny=True)
    given: list[object] = []
    real = train_part.adaptor_seconds

    def spy(model: object, batches: object, repeat: int, *clock: object) -> float:
        given.append(clock)
        return real(model, batches, repeat, *clock)  # type: ignore[arg-type]

    monkeypatch.setattr(train_part, "adaptor_seconds", spy)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        result = train_part.run(subject, max_frames=2000, batch_count=1, repeat=1)
    finally:
        torch.set_num_threads(threads)
    assert result["clock"] == "thread CPU time (one torch thread)"
    assert given == [(train_part.thread_stopwatch,)]


def test_a_failed_sate_command_of_the_text_part_is_its_last_line(tmp_path: Path) -> None:
    """It was shown as a Python list: "sate vocab failed: ['sate vocab: error: ...']" (28th hostile pass)."""
    from sate.bench.text import _sate

    with pytest.raises(SateError) as err:
        _sate(tmp_path, "vocab", "--data", str(tmp_path / "nowhere"))
    assert str(err.value).startswith("sate vocab failed: sate vocab: error: ") and "['" not in str(err.value)
