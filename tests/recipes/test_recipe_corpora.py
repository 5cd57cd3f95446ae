"""The recipes on other corpora: Augmented LibriSpeech En-Fr (recipes/libri_trans) and MuST-C with extra ASR
corpora and extra MT text (recipes/mustc --asr-extra, --mt-extra), on voiced mini corpora and tiny models."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest

from sate.data.manifest import read_manifest
from sate.data.vocab import Vocabulary

pytestmark = pytest.mark.slow  # runs whole recipes


def test_libri_trans_recipe_runs_every_stage(tmp_path: Path, libri_trans_root: Path, tiny_configs, run_recipe) -> None:
    tmp = tmp_path / "a dir with spaces"
    shutil.copytree(libri_trans_root, tmp / "libri_trans")
    tiny_configs(tmp / "conf")
    common = ("--root", tmp / "libri_trans", "--data", tmp / "data", "--exp", tmp / "exp", "--conf-dir",
              tmp / "conf", "--src-vocab-size", "28", "--tgt-vocab-size", "34", "--average-n", "1", "--nj", "1",
              "--ngpu", "0")
    done = run_recipe("libri_trans", *common, "--stop-stage", "2")
    assert done.returncode == 0, done.stderr[-4000:]
    assert [f"stage {n}:" in done.stderr for n in range(4)] == [True, True, True, False]
    train = read_manifest(tmp / "data" / "train.jsonl")
    assert len(train) == 2 * 3 and train[1]["id"] == train[0]["id"] + ".gtranslate"  # both references
    assert [len(read_manifest(tmp / "data" / f"{s}.jsonl")) for s in ("dev", "test")] == [2, 2]
    assert not (tmp / "data" / "train-other.jsonl").exists()  # other/ only when asked for
    assert (tmp / "data" / "fbank" / "test.scp").is_file() and (tmp / "data" / "spm_tgt.model").is_file()

    done = run_recipe("libri_trans", *common, "--stage", "3", timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    exp = tmp / "exp"
    results = (exp / "results.md").read_text()
    for system in ("st", "cascade"):
        for split in ("test", "dev"):
            assert f"| {system} | {split} |" in results
    assert len((exp / "st" / "decode_test" / "hyp.txt").read_text().splitlines()) == 2
    assert "-->" in (exp / "demo_talk.srt").read_text()

    single = run_recipe("libri_trans", *common, "--data", tmp / "data1", "--gtranslate", "false", "--stop-stage", "0")
    assert single.returncode == 0, single.stderr[-3000:]
    assert len(read_manifest(tmp / "data1" / "train.jsonl")) == 3


def test_mustc_recipe_with_extra_asr_corpora_and_mt_text(tmp_path: Path, synth_corpus: Path, librispeech_subset,
                                                         kaldi_corpus, tiny_configs, run_recipe) -> None:
    """--asr-extra: a LibriSpeech subset and a Kaldi dir join ASR training and the source vocabulary;
    --mt-extra: a gzip file pair joins MuST-C's train text for MT (streamed into shards) and the vocabularies."""
    tmp = tmp_path / "a dir with spaces"
    tmp.mkdir()
    tiny_configs(tmp / "conf")
    txt = synth_corpus / "en-de" / "data" / "train" / "txt"
    en_lines = txt.joinpath("train.en").read_text(encoding="utf-8").splitlines()
    de_lines = txt.joinpath("train.de").read_text(encoding="utf-8").splitlines()
    extra_en, extra_de = tmp_path / "news.en.gz", tmp_path / "news.de.gz"
    extra = [("Quizzical zebras jog quickly.", "Quirlige Zebras joggen schnell.")] * 3 + list(
        zip(en_lines, de_lines, strict=True))[:4]  # 2 repeats of a new pair, 4 repeats of MuST-C's own
    extra_en.write_bytes(gzip.compress("".join(e + "\n" for e, _ in extra).encode()))
    extra_de.write_bytes(gzip.compress("".join(d + "\n" for _, d in extra).encode()))
    done = run_recipe("mustc", "--mustc-root", synth_corpus, "--data", tmp / "data", "--exp", tmp / "exp",
                      "--conf-dir", tmp / "conf", "--src-vocab-size", "60", "--tgt-vocab-size", "60",
                      "--average-n", "1", "--nj", "1", "--ngpu", "0", "--stop-stage", "8",
                      "--asr-extra", f"{librispeech_subset[0]} {kaldi_corpus[0]}",
                      "--mt-extra", f"{extra_en} {extra_de}", timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    data, exp = tmp / "data", tmp / "exp"
    assert len(read_manifest(data / "train_extra1.jsonl")) == len(librispeech_subset[1])
    assert len(read_manifest(data / "train_extra2.jsonl")) == len(kaldi_corpus[1])
    assert (data / "fbank" / "train_extra2.scp").is_file()
    asr_log = (exp / "asr" / "train.log").read_text()
    assert re.search(r"training on train \(\d+\), train_extra1 \(8\), train_extra2 \(6\)", asr_log), asr_log[-2000:]
    src = Vocabulary.load(data, "src")
    quirky = next(w for w in read_manifest(data / "train_extra1.jsonl")[0]["src_norm"].split()
                  if set(w) - set("".join(r["src_norm"] for r in read_manifest(data / "train.jsonl"))))
    assert src.unk_id not in src.encode(quirky)  # the source vocabulary saw the extra transcripts
    assert src.unk_id not in src.encode("quizzical zebras")  # ... and the extra MT text
    store = next((data / "mt_bin").iterdir())
    index = json.loads((store / "index.json").read_text())
    n = len(en_lines)
    assert index["pairs"] == n + len(extra) and index["kept"] == n + 1 and index["dropped"]["duplicate"] == 6
    assert f"{n + len(extra)} pairs read, {n + 1} kept" in (exp / "mt" / "train.log").read_text()
    assert "| st | tst-COMMON |" in (exp / "results.md").read_text()
