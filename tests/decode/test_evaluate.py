"""`sate evaluate` writes aligned hyp/ref files and scores them exactly as `sate score` and the sacrebleu CLI do."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from sate.cli import main
from sate.data.audio import read_segment
from sate.data.dataset import SpeechDataset
from sate.data.manifest import read_manifest, write_manifest
from sate.data.vocab import Vocabulary
from sate.decode.api import SpeechTranslator
from sate.decode.evaluate import _transcribe_whisper, evaluate
from sate.decode.pack import pack
from sate.errors import SateError, one_line
from sate.models import build_model, save_model_file
from sate.models.tiny import tiny_config
from sate.scoring.degeneration import length_ratio, loop_share
from sate.scoring.score import read_lines, sacrebleu_scores, word_error_rate
from sate.scoring.significance import confidence

# ----------------------------------------------------------------------------------------------- evaluate

@pytest.fixture(scope="module")
def eval_packs(tmp_path_factory: pytest.TempPathFactory, prepared_data: Path, trained_st_file: Path,
               trained_mt_file: Path) -> dict[str, Path]:
    """The decoding tests' trained ST and MT models (peaked, not scored: see conftest.py), and an untrained ASR."""
    root = tmp_path_factory.mktemp("eval_packs")
    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    torch.manual_seed(0)
    asr = build_model("asr", tiny_config("asr", 16, kernel=3), len(src), len(tgt))
    save_model_file(root / "asr.pt", asr, src.tokens, tgt.tokens)
    for name, model_file in (("st", trained_st_file), ("mt", trained_mt_file), ("asr", root / "asr.pt")):
        # Speech memory has 25 positions a second: 0.5 of it is ample for a translation, and fast.
        pack(model_file, prepared_data, root / name, {"max_len_ratio": 0.5} if name != "mt" else {})
    return {name: root / name for name in ("st", "mt", "asr")}


def evaluate_cli(capsys: pytest.CaptureFixture[str], out: Path, data: Path, *args: str | Path) -> dict:
    assert main(["evaluate", "--data", str(data), "--out", str(out), *map(str, args)]) == 0
    printed = capsys.readouterr().out
    assert printed.splitlines()[-1].startswith(f"wrote {one_line(str(out))}/results.json") and "\x1b" not in printed
    results = json.loads((out / "results.json").read_text())
    for name in ("bleu", "chrf", "ter"):
        if name in results:
            assert results["signature"][name] in printed
    if "bleu" in results:
        # the score ± the half width, as `sate report` shows it (the line gave the bootstrap mean alone)
        assert f"BLEU {results['bleu']:.1f} ± {results['bleu_ci']:.1f} (μ " in printed
        assert f"chrF {results['chrf']:.1f} ± {results['chrf_ci']:.1f} (μ " in printed
        assert f"length ratio (hypothesis / reference) {results['length_ratio']:.3f}" in printed
    return results


def test_evaluate_st_writes_aligned_files_and_scores_them_like_sacrebleu(
        tmp_path: Path, eval_packs: dict[str, Path], prepared_data: Path, capsys: pytest.CaptureFixture[str],
        sacrebleu_cli: Callable[..., str]) -> None:
    rows = read_manifest(prepared_data / "train.jsonl")
    out = tmp_path / "st"
    results = evaluate_cli(capsys, out, prepared_data, "--model", eval_packs["st"], "--split", "train",
                           "--batch-size", "5")
    for name in ("hyp.txt", "ref.txt", "transcript.txt", "transcript_ref.txt"):
        assert len(read_lines(out / name)) == len(rows), name
    assert read_lines(out / "ref.txt") == [r["tgt"] for r in rows]
    assert read_lines(out / "transcript_ref.txt") == [r["src_norm"] for r in rows]
    assert results["mode"] == "st" and results["utterances"] == len(rows) and results["decode"]["beam"] == 5
    for key in ("bleu", "chrf", "ter", "wer"):
        assert isinstance(results[key], float)
    # In manifest order: line i is what the pack says for utterance i decoded alone (evaluate batches by length,
    # 5 at a time). A trained model's BLEU is no check of this: how well it learns differs between machines.
    translator = SpeechTranslator.load(eval_packs["st"])
    dataset = SpeechDataset.from_data_dir(prepared_data, "train", translator.src_vocab, translator.tgt_vocab,
                                          cmvn=prepared_data / "cmvn.json")
    alone = [translator.decode_features([dataset[i]["feats"].numpy()])[0] for i in range(len(rows))]
    assert read_lines(out / "transcript.txt") == [transcript for transcript, _ in alone]
    assert read_lines(out / "hyp.txt") == [translation.rstrip() for _, translation in alone]
    assert len(set(read_lines(out / "hyp.txt"))) > 1  # not one output for every input: the decoder hears the audio
    cli = {m["name"]: m for m in json.loads(sacrebleu_cli(out / "ref.txt", out / "hyp.txt"))}
    assert round(results["bleu"], 1) == cli["BLEU"]["score"] and round(results["ter"], 1) == cli["TER"]["score"]
    assert results["signature"]["bleu"] == cli["BLEU"]["signature"]
    assert results["wer"] == pytest.approx(word_error_rate(read_lines(out / "transcript.txt"),
                                                           [r["src_norm"] for r in rows]).wer)
    hyps, refs = read_lines(out / "hyp.txt"), read_lines(out / "ref.txt")
    assert results["bleu_ci"] == confidence(hyps, refs)["bleu"]["ci"] > 0 and results["chrf_ci"] > 0
    assert results["length_ratio"] == length_ratio(hyps, refs) and results["loop_share"] == loop_share(hyps)
    assert results["length_unit"] == "13a tokens"  # "characters" for Chinese, Japanese (review29r)


def test_evaluate_mt_and_the_cascade(tmp_path: Path, eval_packs: dict[str, Path], prepared_data: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    mt = evaluate_cli(capsys, tmp_path / "mt", prepared_data, "--model", eval_packs["mt"], "--split", "train")
    assert mt["mode"] == "mt" and "wer" not in mt
    translator = SpeechTranslator.load(eval_packs["mt"])
    sources = [row["src_norm"] for row in read_manifest(prepared_data / "train.jsonl")]
    # In manifest order: line i is sentence i translated alone (evaluate translates them in length-sorted groups).
    assert read_lines(tmp_path / "mt" / "hyp.txt") == [translator.translate_text([s])[0].rstrip() for s in sources]
    assert not (tmp_path / "mt" / "transcript.txt").exists()

    cascade = evaluate_cli(capsys, tmp_path / "cascade", prepared_data, "--model", eval_packs["asr"],
                           "--mt-model", eval_packs["mt"], "--split", "dev", "--beam", "2")
    assert cascade["mode"] == "cascade" and cascade["decode"]["beam"] == 2
    assert {"bleu", "chrf", "ter", "wer"} <= set(cascade)
    transcripts = read_lines(tmp_path / "cascade" / "transcript.txt")
    assert len(transcripts) == len(read_manifest(prepared_data / "dev.jsonl"))
    # The MT model translated the ASR transcripts, line by line.
    assert read_lines(tmp_path / "cascade" / "hyp.txt") == [
        h.rstrip() for h in translator.translate_text(transcripts, translator.with_options(beam=2))]

    asr = evaluate_cli(capsys, tmp_path / "asr", prepared_data, "--model", eval_packs["asr"], "--split", "dev")
    assert asr["mode"] == "asr" and "bleu" not in asr and asr["wer"] >= 0
    # An ASR pack's transcripts are CTC greedy: no beam search of ours runs, and results.json records none (it
    # recorded the pack's beam 5); --beam or --decode, taken without a word and recorded as used, are refused.
    assert asr["decode"] == {}
    with pytest.raises(SateError, match="is an ASR pack, whose transcripts are CTC greedy"):
        evaluate(eval_packs["asr"], prepared_data, "dev", tmp_path / "x", decode={"beam": 3})
    assert not (tmp_path / "x").exists()
    with pytest.raises(SateError, match="--mt-model is for a cascade"):
        evaluate(eval_packs["st"], prepared_data, "dev", tmp_path / "x", mt_model_dir=eval_packs["mt"])


def test_a_cascade_into_an_mt_pack_that_keeps_an_nbest_decodes(tmp_path: Path, eval_packs: dict[str, Path],
                                                              prepared_data: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A cascade gives the ASR pack the MT pack's options: into an MT pack whose sate.yaml keeps nbest 2 (packed before
    the 24th hostile pass, or edited), it was refused, exit 2, "options: nbest=2: decode_features gives the best
    hypothesis alone", for the ASR pack's CTC greedy transcripts, which search no n-best (fix28a)."""
    shutil.copytree(eval_packs["mt"], tmp_path / "mt")
    doc = tmp_path / "mt" / "sate.yaml"
    doc.write_text(doc.read_text().replace("nbest: 1", "nbest: 2"))
    cascade = evaluate_cli(capsys, tmp_path / "cascade", prepared_data, "--model", eval_packs["asr"],
                           "--mt-model", tmp_path / "mt", "--split", "dev")
    assert cascade["mode"] == "cascade" and cascade["decode"]["nbest"] == 2
    mt = SpeechTranslator.load(tmp_path / "mt")
    assert read_lines(tmp_path / "cascade" / "hyp.txt") == [
        h.rstrip() for h in mt.translate_text(read_lines(tmp_path / "cascade" / "transcript.txt"))]


def test_a_transcript_only_split_scores_asr_and_refuses_translation(
        tmp_path: Path, eval_packs: dict[str, Path], prepared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # dev as a transcript-only corpus (LibriSpeech, a Kaldi dir) writes it: the same rows with tgt null
    data = tmp_path / "data"
    (data / "fbank").mkdir(parents=True)
    rows = read_manifest(prepared_data / "dev.jsonl")
    write_manifest(data / "dev_asr.jsonl", [{**row, "tgt": None} for row in rows])
    # dev's features: its folder linked in (an index naming another data directory's arks is refused)
    (data / "fbank" / "dev").symlink_to(prepared_data / "fbank" / "dev")
    shutil.copyfile(prepared_data / "fbank" / "dev.scp", data / "fbank" / "dev_asr.scp")
    asr = evaluate_cli(capsys, tmp_path / "asr", data, "--model", eval_packs["asr"], "--split", "dev_asr")
    reference = evaluate_cli(capsys, tmp_path / "asr_dev", prepared_data, "--model", eval_packs["asr"], "--split",
                             "dev")
    assert asr["mode"] == "asr" and asr["wer"] == reference["wer"] and "bleu" not in asr
    refusal = (f"{data / 'dev_asr.jsonl'}: {len(rows)} rows have no translation (a transcript-only corpus): it can "
               "train ASR only")
    for models in ([eval_packs["st"]], [eval_packs["mt"]], [eval_packs["asr"], eval_packs["mt"]]):
        with pytest.raises(SateError) as err:
            evaluate(models[0], data, "dev_asr", tmp_path / "x", mt_model_dir=models[1] if len(models) > 1 else None)
        assert str(err.value) == refusal
    assert not (tmp_path / "x" / "results.json").exists()


def test_default_output_folders_differ_per_model_and_stale_files_go(
        tmp_path: Path, eval_packs: dict[str, Path], prepared_data: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The recipe names every pack `pack`: EXP/st/pack and EXP/asr/pack must not share an output folder.
    for task in ("st", "asr"):
        shutil.copytree(eval_packs[task], tmp_path / "exp" / task / "pack")
    monkeypatch.chdir(tmp_path)
    for task in ("st", "asr"):
        assert main(["evaluate", "--model", f"exp/{task}/pack", "--data", str(prepared_data), "--split", "dev"]) == 0
    folders = sorted(p.parent.parent for p in Path("eval").glob("*/dev/results.json"))
    assert len(folders) == 2 and [p.name.split("-")[:2] for p in folders] == [["asr", "pack"], ["st", "pack"]]
    assert {json.loads((p / "dev" / "results.json").read_text())["mode"] for p in folders} == {"asr", "st"}
    assert not (folders[0] / "dev" / "hyp.txt").exists()
    # A pack in folders of long names: the default folder is cut to a name the file system takes (twelfth hostile
    # pass: "File name too long ... choose a shorter one", with no --out given)
    long_pack = tmp_path / ("p" * 150) / ("n" * 150)
    shutil.copytree(eval_packs["asr"], long_pack)
    assert main(["evaluate", "--model", str(long_pack), "--data", str(prepared_data), "--split", "dev"]) == 0
    [results] = Path("eval").glob("ppp*/dev/results.json")
    name = results.parent.parent.name
    assert len(name) == 255 and name.startswith("p" * 150 + "-nnn") and name[-9] == "-"
    # The same folder used again by another model: the earlier model's files are not left beside the new ones.
    out = tmp_path / "shared"
    evaluate_cli(capsys, out, prepared_data, "--model", eval_packs["st"], "--split", "dev")
    (out / "decode.log").write_text("a recipe's log, not ours\n")
    real_replace, seen = os.replace, []

    def replace(src: object, dst: object) -> None:  # what the folder holds as the new results.json goes in
        if Path(str(dst)).name == "results.json":
            seen.append(sorted(p.name for p in out.iterdir() if not p.name.startswith(".")))
        real_replace(src, dst)

    monkeypatch.setattr("sate.files.os.replace", replace)
    evaluate_cli(capsys, out, prepared_data, "--model", eval_packs["asr"], "--split", "dev")
    assert sorted(p.name for p in out.iterdir()) == ["decode.log", "results.json", "transcript.txt",
                                                     "transcript_ref.txt"]
    # the earlier run's hyp.txt went before the new results did: a kill right after them left it beside them
    # (thirteenth hostile pass)
    assert seen == [["decode.log", "transcript.txt", "transcript_ref.txt"]]


def test_an_output_that_is_a_file_is_refused_before_decoding(tmp_path: Path, eval_packs: dict[str, Path],
                                                             prepared_data: Path) -> None:
    (tmp_path / "results").write_text("not a folder\n")
    with pytest.raises(SateError, match=r"--out .*results: not a directory"):
        evaluate(eval_packs["st"], prepared_data, "dev", tmp_path / "results", device="cpu")
    with pytest.raises(SateError, match=r"--out .*dev: cannot write \(.*results is not a directory\)"):
        evaluate(eval_packs["st"], prepared_data, "dev", tmp_path / "results" / "dev", device="cpu")


def test_an_output_named_for_another_split_is_refused_before_decoding(tmp_path: Path, prepared_data: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`--split dev --out EXP/st/decode_tst-COMMON` (the --split changed, the --out copied) wrote dev's results where
    `sate report` reads tst-COMMON's, exit 0 (twenty-second hostile pass). A folder named for another split of the
    data directory is refused before any work; a label of one's own (decode_dev-beam1) is no split."""
    out = tmp_path / "st" / "decode_tst-COMMON"
    assert main(["evaluate", "--model", str(tmp_path / "pack"), "--data", str(prepared_data), "--split", "dev",
                 "--out", str(out)]) == 2
    assert capsys.readouterr().err == (f"sate evaluate: error: --out {out}: a folder named for split tst-COMMON, where "
                                       "`sate report` looks for its results, given --split dev; write it to "
                                       f"{out.with_name('decode_dev')}\n")
    assert not (tmp_path / "st").exists()
    assert main(["evaluate", "--model", str(tmp_path / "pack"), "--data", str(prepared_data), "--split", "dev",
                 "--out", str(out.with_name("decode_dev-beam1"))]) == 2
    assert "pack" in capsys.readouterr().err  # past the rule: the missing pack is what is refused


def test_a_data_directory_that_is_not_there_is_named(tmp_path: Path, eval_packs: dict[str, Path],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A --data typo (or a relative path given from another directory) was told "manifest of split 'dev' is
    missing (run `sate prep`)", though the data were prepared; a file there was read as a directory."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SateError, match=rf"^--data typo: no such directory \(relative to the current directory, "
                                        rf"{tmp_path}\)$"):
        evaluate(eval_packs["st"], Path("typo"), "dev", tmp_path / "out", device="cpu")
    (tmp_path / "file").write_text("x\n")
    with pytest.raises(SateError, match=r"^--data file: a file, not a directory$"):
        evaluate(eval_packs["st"], Path("file"), "dev", tmp_path / "out", device="cpu")
    # a split spelt another way is named with those the data directory holds (twentieth hostile pass)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "tst-COMMON.jsonl").write_text("")
    with pytest.raises(SateError, match=r"^data/tst-common.jsonl: manifest of split 'tst-common' is missing \(run "
                                        r"`sate prep`\); data holds the splits tst-COMMON$"):
        evaluate(eval_packs["st"], Path("data"), "tst-common", tmp_path / "out", device="cpu")
    assert not (tmp_path / "out").exists()



def test_a_pack_or_an_experiment_given_as_the_data_directory_is_named(tmp_path: Path, eval_packs: dict[str, Path],
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`--data PACK` or `--data EXP` (`data.dir` of `sate train` too) was told "run `sate prep`" or "run `sate
    vocab`", commands that refuse to write into either (twelfth hostile pass)."""
    with pytest.raises(SateError, match=rf"^--data {eval_packs['st']}: a packed model \(`sate pack`\), not a data "
                                        r"directory \(`sate prep --out`\)$"):
        evaluate(eval_packs["st"], eval_packs["st"], "dev", tmp_path / "out", device="cpu")
    exp = tmp_path / "exp"
    (exp / "checkpoints").mkdir(parents=True)
    with pytest.raises(SateError, match=r"^--data .*exp: an experiment \(it holds checkpoints\), not a data "):
        evaluate(eval_packs["st"], exp, "dev", tmp_path / "out", device="cpu")
    config = tmp_path / "asr.yaml"
    config.write_text(f"task: asr\ndata: {{dir: {exp}}}\n")
    assert main(["train", "--config", str(config), "--exp", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.strip() == (f"sate train: error: data.dir {exp}: an experiment (it holds "
                                               "checkpoints), not a data directory (`sate prep --out`)")
    assert main(["analyze", "attention", "--model", str(eval_packs["st"]), "--data", str(exp), "--utt", "x",
                 "--out", str(tmp_path / "a.png")]) == 2
    assert "--data" in capsys.readouterr().err
    assert not (tmp_path / "out").exists() and not (tmp_path / "run").exists()


def test_an_empty_split_is_refused_before_decoding(tmp_path: Path, eval_packs: dict[str, Path],
                                                   prepared_data: Path) -> None:
    """A split of zero rows was decoded, and then sacreBLEU's score was an IndexError traceback."""
    data = tmp_path / "data"
    shutil.copytree(prepared_data, data)
    (data / "dev.jsonl").write_text("")
    with pytest.raises(SateError, match=r"dev.jsonl: no rows to evaluate"):
        evaluate(eval_packs["mt"], data, "dev", tmp_path / "out", device="cpu")
    assert not (tmp_path / "out").exists()  # nothing decoded, no folder: it was left empty behind
    with pytest.raises(SateError, match="not a packed model"):
        evaluate(tmp_path, data, "dev", tmp_path / "out2", device="cpu")
    assert not (tmp_path / "out2").exists()
    with pytest.raises(SateError, match="no sentences to score"):
        sacrebleu_scores([], [])


def test_a_split_whose_references_are_all_blank_is_refused_before_decoding(
        tmp_path: Path, eval_packs: dict[str, Path], prepared_data: Path) -> None:
    """33rd hostile pass: a manifest whose tgt is blank in every row was decoded whole, then scored BLEU 0, TER 100
    and recorded, exit 0, without a word."""
    data = tmp_path / "data"
    shutil.copytree(prepared_data, data)
    rows = [json.loads(line) for line in (data / "dev.jsonl").read_text(encoding="utf-8").splitlines()]
    (data / "dev.jsonl").write_text("".join(json.dumps({**row, "tgt": " "}) + "\n" for row in rows), encoding="utf-8")
    with pytest.raises(SateError, match=rf"dev.jsonl: the tgt of every one of its {len(rows)} rows is blank: there is "
                                        r"no text to score against \(BLEU and chrF 0, TER 100 of any hypotheses\); "
                                        r"prepare the split from its translations \(sate prep\)"):
        evaluate(eval_packs["mt"], data, "dev", tmp_path / "out", device="cpu")
    assert not (tmp_path / "out").exists()


def test_the_whisper_cascade(tmp_path: Path, eval_packs: dict[str, Path], prepared_data: Path,
                             whisper_asr_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--model may name a Whisper directory: its own decoder transcribes each row, alone or into --mt-model."""
    from sate.data.audio import read_segment
    from sate.models.hub.whisper_asr import WhisperRecognizer

    rows = read_manifest(prepared_data / "dev.jsonl")
    out = tmp_path / "whisper"
    cascade = evaluate_cli(capsys, out, prepared_data, "--model", whisper_asr_dir, "--mt-model", eval_packs["mt"],
                           "--split", "dev", "--beam", "2", "--batch-size", "2")
    assert cascade["mode"] == "cascade" and cascade["decode"]["beam"] == 2
    assert cascade["whisper"]["window"] == "30s" and cascade["whisper"]["search"] == "greedy"
    assert {"bleu", "chrf", "ter", "wer"} <= set(cascade)
    # Line i is row i transcribed alone (evaluate batches by length), then translated by the MT pack.
    recognizer = WhisperRecognizer.load(whisper_asr_dir)
    alone = [recognizer.transcribe([read_segment(r["audio"], r["offset"], r["duration"])])[0] for r in rows]
    assert read_lines(out / "transcript.txt") == [t.rstrip() for t in alone] and any(alone)
    translator = SpeechTranslator.load(eval_packs["mt"])
    assert read_lines(out / "hyp.txt") == [
        h.rstrip() for h in translator.translate_text(alone, translator.with_options(beam=2))]

    asr = evaluate_cli(capsys, tmp_path / "asr", prepared_data, "--model", whisper_asr_dir, "--split", "dev")
    assert asr["mode"] == "asr" and asr["decode"] == {} and "bleu" not in asr
    assert read_lines(tmp_path / "asr" / "transcript.txt") == read_lines(out / "transcript.txt")
    for kwargs, message in (({"talks": True}, "--talks translates with an ST pack; .* is a Whisper directory"),
                            ({"decode": {"beam": 2}}, "Whisper's decoder here is greedy")):
        with pytest.raises(SateError, match=message):
            evaluate(whisper_asr_dir, prepared_data, "dev", tmp_path / "x", **kwargs)
    with pytest.raises(SateError, match="--mt-model .* is a Whisper directory: give it as --model"):
        evaluate(eval_packs["asr"], prepared_data, "dev", tmp_path / "x", mt_model_dir=whisper_asr_dir)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["config.json", "generation_config.json"])
@pytest.mark.parametrize("kind", ["a directory", "a broken symlink"])
def test_a_whisper_directory_whose_json_is_no_file_is_named(tmp_path: Path, prepared_data: Path,
                                                            whisper_asr_dir: Path, name: str, kind: str) -> None:
    """A config.json that is no file (a folder, a broken link) made a Whisper directory "not a packed model:
    sate.yaml is missing (write one with `sate pack`)", and such a generation_config.json decoded without its
    suppressed tokens, exit 0 (fourteenth hostile pass): each is named."""
    whisper = tmp_path / "whisper"
    shutil.copytree(whisper_asr_dir, whisper)
    (whisper / name).unlink()
    if kind == "a directory":
        (whisper / name).mkdir()
    else:
        (whisper / name).symlink_to(tmp_path / "gone.json")
    with pytest.raises(SateError, match=rf"^{whisper / name}: {kind}( \(to .*gone.json, which is not there\))?, not a "
                                        "JSON file$"):
        evaluate(whisper, prepared_data, "dev", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_row_longer_than_whispers_window_is_refused_before_decoding(tmp_path: Path, prepared_data: Path,
                                                                     whisper_asr_dir: Path) -> None:
    """A row beyond Whisper's 30 s was refused once decoding reached it: streamed, 30 s into the row, after the rows
    before it (twelfth hostile pass). Now before anything is decoded, naming the row and what to do."""
    import numpy as np
    import soundfile as sf

    data = tmp_path / "data"
    data.mkdir()
    sf.write(data / "long.wav", np.random.default_rng(0).normal(0, 0.01, 31 * 16000).astype(np.float32), 16000)
    row = {**read_manifest(prepared_data / "dev.jsonl")[0], "id": "long_0", "audio": str(data / "long.wav"),
           "offset": 0.0, "duration": 31.0, "n_frames": 3100}
    write_manifest(data / "dev.jsonl", [row])
    write_manifest(data / "train.jsonl", [row])
    # `sate prep --max-duration` filters training splits alone: for dev the advice, followed, kept the row (24th
    # hostile pass)
    with pytest.raises(SateError, match=r"dev.jsonl: row long_0 lasts 31.0000 s \(496,000 samples\), more than the "
                                        r"480,159 samples \(3,000 log-mel frames, 30 s\) this model's "
                                        r"acoustic encoder \(Whisper\) takes: evaluate a split whose rows are 30 s "
                                        r"at most \(sate prep --max-duration filters training splits only\)$"):
        evaluate(whisper_asr_dir, data, "dev", tmp_path / "out")
    with pytest.raises(SateError, match=r"train.jsonl: row long_0 .* takes: prepare the split with sate prep "
                                        r"--max-duration$"):
        evaluate(whisper_asr_dir, data, "train", tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_pack_data_directory_and_system_named_with_bytes_that_are_not_utf8(
        tmp_path: Path, prepared_data: Path, st_pack: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SentencePiece takes a model's file name as UTF-8 text: a pack or a data directory whose name is not UTF-8 (a
    Latin-1 name from an old disk) was a `TypeError: not a string` traceback in translate and evaluate, and `sate
    vocab` a UnicodeEncodeError hashing it; evaluate's results.json and report's table, which name them, were
    UnicodeEncodeError tracebacks when written. Now the names are read, and written as JSON's and Python's escapes."""
    import os

    root = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9"))
    data, packed, system = root / "data", root / "pack", root / "exp" / "caf\udce9"
    shutil.copytree(prepared_data, data)
    shutil.copytree(st_pack, packed)
    wav = read_manifest(data / "dev.jsonl")[0]["audio"]
    assert main(["translate", "--model", str(packed), "--vad", "energy", wav]) in (0, 1)
    assert "Traceback" not in capsys.readouterr().err
    out = system / "decode_dev"
    assert main(["evaluate", "--model", str(packed), "--data", str(data), "--split", "dev", "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["data"] == str(data) and results["model"] == str(packed)  # the bytes, read back exactly
    assert main(["report", "--exp", str(root / "exp"), "--splits", "dev"]) == 0
    assert "| caf\\udce9 | dev |" in (root / "exp" / "results.md").read_text(encoding="utf-8")
    assert main(["vocab", "--data", str(data), "--src-size", "48", "--tgt-size", "64"]) == 0


def test_a_run_that_ends_without_results_leaves_the_earlier_run_and_no_new_folder(
        tmp_path: Path, eval_packs: dict[str, Path], prepared_data: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, full_disk: Callable[..., None]) -> None:
    # Twelfth hostile pass: hyp.txt, ref.txt and results.json were replaced one by one, results.json removed first,
    # so a full disk lost the earlier run's scores (and left the new hyp.txt beside the old ref.txt), and a kill
    # while scoring left a new folder holding hyp.txt and ref.txt without results.
    out = tmp_path / "ev"
    evaluate_cli(capsys, out, prepared_data, "--model", eval_packs["asr"], "--split", "dev")
    earlier = {p.name: p.read_bytes() for p in out.iterdir()}
    with monkeypatch.context() as patch:
        full_disk(patch, after=1)  # the second file of the run finds the disk full
        assert main(["evaluate", "--model", str(eval_packs["st"]), "--data", str(prepared_data), "--split", "dev",
                     "--out", str(out)]) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == earlier  # no temporary file either

    def stopped(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("sate.scoring.significance.confidence", stopped)
    for folder in (out, tmp_path / "new" / "dev"):
        assert main(["evaluate", "--model", str(eval_packs["st"]), "--data", str(prepared_data), "--split", "dev",
                     "--out", str(folder)]) == 130
    assert {p.name: p.read_bytes() for p in out.iterdir()} == earlier
    assert not (tmp_path / "new").exists()
    monkeypatch.undo()
    capsys.readouterr()
    named = tmp_path / "a\nb\x1b[2J"  # the "wrote" line escapes a name's control characters
    evaluate_cli(capsys, named, prepared_data, "--model", eval_packs["asr"], "--split", "dev")


def test_the_files_of_an_evaluate_run_are_replaced_only_by_evaluate(
        tmp_path: Path, eval_packs: dict[str, Path], prepared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Twelfth hostile pass: `translate --out EV/hyp.txt` replaced the hypotheses EV/results.json scored (and that
    # `sate report` bootstraps) with another text, exit 0; a named pipe at EV/hyp.txt hung evaluate, which read it
    # back, and one linked to /dev/null was "0 hypotheses but 5 references" after the decode.
    out = tmp_path / "ev"
    evaluate_cli(capsys, out, prepared_data, "--model", eval_packs["st"], "--split", "dev")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    wav = read_manifest(prepared_data / "dev.jsonl")[0]["audio"]
    for name in ("hyp.txt", "ref.txt", "transcript.txt", "results.json"):
        assert main(["translate", "--model", str(eval_packs["st"]), wav, "--out", str(out / name)]) == 2
        assert f"{name}: refusing to replace it: it" in capsys.readouterr().err
    assert main(["segment", wav, "--out", str(out / "hyp.jsonl")]) == 0  # not one of its files: written beside
    (out / "hyp.jsonl").unlink()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    (out / "notes").mkdir()  # a folder of the user's without evaluate's results is text like any other
    assert main(["translate", "--model", str(eval_packs["st"]), wav, "--out", str(out / "notes" / "hyp.txt")]) == 0
    assert (out / "notes" / "hyp.txt").is_file()
    for place in ("pipe", "null"):
        (tmp_path / place).mkdir()
        if place == "pipe":
            os.mkfifo(tmp_path / place / "hyp.txt")
        else:
            (tmp_path / place / "hyp.txt").symlink_to(os.devnull)
        with pytest.raises(SateError, match="refusing to replace it: not a regular file"):
            evaluate(eval_packs["st"], prepared_data, "dev", tmp_path / place, device="cpu")


def test_a_file_of_the_run_linked_to_another_runs_is_refused(
        tmp_path: Path, eval_packs: dict[str, Path], prepared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Fourteenth hostile pass: EV/results.json (or hyp.txt) a symlink to another evaluate run's was written through:
    # that run's scores were replaced by this run's, exit 0. A link to a file of no run is written as before.
    other = tmp_path / "other"
    evaluate_cli(capsys, other, prepared_data, "--model", eval_packs["asr"], "--split", "dev")
    kept = {p.name: p.read_bytes() for p in other.iterdir()}
    out = tmp_path / "ev"
    out.mkdir()
    for name in ("results.json", "transcript.txt"):
        (out / name).symlink_to(other / name)
        assert main(["evaluate", "--model", str(eval_packs["asr"]), "--data", str(prepared_data),
                     "--split", "tst-COMMON", "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.endswith(f"--out {out / name} (leading to {other / name}): refusing to replace it: it is a file of "
                            f"another `sate evaluate` run ({other}), which only a run into that folder rewrites; "
                            "remove the link"), err
        assert {p.name: p.read_bytes() for p in other.iterdir()} == kept
        (out / name).unlink()


def test_a_second_run_into_a_folder_another_run_writes_is_refused_and_leaves_no_lock_file(
        tmp_path: Path, eval_packs: dict[str, Path], prepared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Thirteenth hostile pass: two `sate evaluate` runs into one --out renamed their files into it one by one, in
    # turns, so one run's hyp.txt could end beside the other's results.json. The folder itself is locked (flock),
    # so a killed run leaves no lock file among the results.
    import fcntl

    out = tmp_path / "ev"
    evaluate_cli(capsys, out, prepared_data, "--model", eval_packs["asr"], "--split", "dev")
    earlier = {p.name: p.read_bytes() for p in out.iterdir()}
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)  # the other run, decoding into out
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert main(["evaluate", "--model", str(eval_packs["st"]), "--data", str(prepared_data), "--split", "dev",
                     "--out", str(out)]) == 2
        assert f"{out} is in use by another sate evaluate; wait for it" in capsys.readouterr().err
        assert {p.name: p.read_bytes() for p in out.iterdir()} == earlier
    finally:
        os.close(fd)
    evaluate_cli(capsys, out, prepared_data, "--model", eval_packs["st"], "--split", "dev")
    assert {p.name for p in out.iterdir()} == {"results.json", "hyp.txt", "ref.txt", "transcript.txt",
                                               "transcript_ref.txt"}  # no lock file beside them


def test_a_file_of_a_whisper_directory_is_told_to_give_the_directory(tmp_path: Path, prepared_data: Path,
                                                                     whisper_asr_dir: Path) -> None:
    """`sate evaluate --model WHISPER/model.bin` (and `translate`, the API) was told "a file, not a packed model
    directory (`sate pack --model FILE` makes one)", which `sate pack` then refused as a downloaded model (twenty-fourth
    hostile pass, review): evaluate names the directory to give; the API says what the directory is."""
    config = whisper_asr_dir / "config.json"
    with pytest.raises(SateError, match=rf"^--model {config}: a file of the Whisper model directory {whisper_asr_dir}: "
                                        rf"give the directory itself \(--model {whisper_asr_dir}\)$"):
        evaluate(config, prepared_data, "dev", tmp_path / "out")
    with pytest.raises(SateError, match=rf"^{config}: a file of the downloaded model {whisper_asr_dir}, not a packed "
                                        r"model directory \(a Whisper model directory: `sate evaluate --model` reads"):
        SpeechTranslator.load(config)
    assert not (tmp_path / "out").exists()


def test_a_pack_of_another_task_evaluated_into_an_experiment_is_refused(tmp_path: Path, eval_packs: dict[str, Path],
                                                                        prepared_data: Path) -> None:
    """An ST pack from outside any experiment evaluated with `--out EXP/decode_dev` into an experiment whose
    config.yaml says `task: asr` exited 0, and `sate report` then tabled an asr row with BLEU and a p-value
    (twenty-fourth hostile pass, review; `sate pack --out EXP/pack` refused it since 829ef95). A pack of the
    experiment's own task is evaluated there as before."""
    exp = tmp_path / "asr"
    (exp / "checkpoints").mkdir(parents=True)
    (exp / "config.yaml").write_text("task: asr\n", encoding="utf-8")
    with pytest.raises(SateError, match=rf"^--out {exp / 'decode_dev'}: it lies in the asr experiment {exp}, and "
                                        rf"--model {eval_packs['st']} is an st model"):
        evaluate(eval_packs["st"], prepared_data, "dev", exp / "decode_dev")
    assert not (exp / "decode_dev").exists()
    evaluate(eval_packs["asr"], prepared_data, "dev", exp / "decode_dev")
    assert (exp / "decode_dev" / "results.json").is_file()


@pytest.mark.slow
def test_a_cascade_evaluated_into_an_st_experiment_is_refused(tmp_path: Path, prepared_data: Path) -> None:
    """A cascade of packs from outside any experiment evaluated with `--out EXP/decode_dev` into an ST experiment
    (the ST line copied, --model changed) exited 0, and `sate report` tabled the cascade's BLEU as st's, the
    baseline (31st hostile pass): refused before decoding, with the recipes' place as advice, which takes it. An
    ASR experiment, where the cascade's first part may come from, takes it as before."""
    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    torch.manual_seed(0)
    packs = {}
    for task in ("asr", "mt"):
        model = build_model(task, tiny_config(task, 16, kernel=3), len(src), len(tgt))
        save_model_file(tmp_path / f"{task}.pt", model, src.tokens, tgt.tokens)
        pack(tmp_path / f"{task}.pt", prepared_data, tmp_path / "packs" / task)
        packs[task] = tmp_path / "packs" / task
    for task in ("st", "asr"):  # st without checkpoints/ (deleted after packing): the config.yaml tells (review31r)
        (tmp_path / "exp" / task).mkdir(parents=True)
        (tmp_path / "exp" / task / "config.yaml").write_text(f"task: {task}\n", encoding="utf-8")
    (tmp_path / "exp" / "asr" / "checkpoints").mkdir()
    st, recipes = tmp_path / "exp" / "st", tmp_path / "exp" / "cascade" / "decode_dev"
    evaluate(packs["asr"], prepared_data, "dev", recipes, packs["mt"])  # the recipes' own cascade, already there
    before = {p: p.read_bytes() for p in recipes.iterdir()}
    own = tmp_path / "exp" / "cascade-own" / "decode_dev"  # not the recipes' exp/cascade, replaced so (review31r)
    with pytest.raises(SateError, match=rf"^--out {st / 'decode_dev'}: it lies in the st experiment {st}, and --model "
                                        rf"{packs['asr']} --mt-model {packs['mt']} is a cascade: it would be taken for "
                                        rf"st's own; write it in a folder of its own \(--out {own}\)$"):
        evaluate(packs["asr"], prepared_data, "dev", st / "decode_dev", packs["mt"])
    assert not (st / "decode_dev").exists()
    for out in (own, tmp_path / "exp" / "asr" / "decode_dev"):  # the advice, followed; an ASR experiment takes it
        evaluate(packs["asr"], prepared_data, "dev", out, packs["mt"])
        assert json.loads((out / "results.json").read_text())["mode"] == "cascade"
    assert {p: p.read_bytes() for p in recipes.iterdir()} == before
    assert main(["report", "--exp", str(tmp_path / "exp"), "--splits", "dev", "--out", str(tmp_path / "r.md")]) == 0
    assert "| cascade-own | dev |" in (tmp_path / "r.md").read_text()  # tabled as a row of its own


@pytest.mark.slow
def test_whisper_reads_a_talk_that_cannot_seek_on_from_the_row_before(tmp_path: Path,
                                                                      decoded_frames: list[int]) -> None:
    """A Whisper cascade's transcripts read each row by reopening its talk: a GSM 6.10 talk (which cannot seek) was
    decoded from its start for every row (twenty-seventh hostile pass); its rows in order are read on, each frame
    about once, with the samples each row read alone gives."""
    path = tmp_path / "phone.wav"
    sf.write(path, (0.3 * np.sin(np.arange(20 * 16000) / 7)).astype(np.float32), 16000, format="WAV",
             subtype="GSM610")
    rows = [{"audio": str(path), "offset": 2.0 * k, "duration": 1.5} for k in range(10)]
    alone = [read_segment(path, row["offset"], row["duration"]) for row in rows]
    seen: list = []

    class Recognizer:
        def transcribe(self, waves: list, batch_size: int) -> list[str]:
            seen.extend(waves)
            return ["x"] * len(waves)

    decoded_frames[0] = 0  # the rows read alone not counted
    assert _transcribe_whisper(Recognizer(), rows, 2) == ["x"] * 10
    assert decoded_frames[0] <= 20 * 16000
    for got, want in zip(seen, alone, strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_bootstrap_seed_sacrebleu_cannot_read_is_refused_before_decoding(
        tmp_path: Path, prepared_data: Path, st_pack: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SACREBLEU_SEED=abc was a ValueError traceback from inside sacreBLEU's resampling, once the whole split was
    decoded (twenty-ninth hostile pass); an ASR run, which resamples nothing, is not stopped by it."""
    monkeypatch.setenv("SACREBLEU_SEED", "abc")
    monkeypatch.setattr("sate.decode.api.SpeechTranslator.decode_features", lambda *a, **k: pytest.fail("decoded"))
    with pytest.raises(SateError, match=r"^SACREBLEU_SEED='abc': sacreBLEU's bootstrap seed must be a whole number"):
        evaluate(st_pack, prepared_data, "dev", tmp_path / "out", device="cpu")
    assert not (tmp_path / "out").exists()


def test_a_split_of_one_sentence_gets_no_interval(tmp_path: Path, prepared_data: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Every resample of one sentence is that sentence: its interval was "± 0.0", stored and tabled as a certainty
    (twenty-ninth hostile pass). It is said to be none, and results.json holds none."""
    data = tmp_path / "data"
    shutil.copytree(prepared_data, data)
    (data / "dev.jsonl").write_text((prepared_data / "dev.jsonl").read_text().splitlines(True)[0])
    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    torch.manual_seed(0)
    save_model_file(tmp_path / "mt.pt", build_model("mt", tiny_config("mt", 16), len(src), len(tgt)), src.tokens,
                    tgt.tokens)
    pack(tmp_path / "mt.pt", data, tmp_path / "mt", {"max_len_ratio": 0.5})
    results = evaluate(tmp_path / "mt", data, "dev", tmp_path / "out", device="cpu")
    assert results["utterances"] == 1 and "bleu" in results
    assert not {"bleu_ci", "chrf_ci", "bootstrap_signature"} & set(results)
    assert "95% confidence: none from one sentence" in capsys.readouterr().out
