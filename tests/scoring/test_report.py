"""`sate report`: one row per system and split, with confidence intervals and p-values against the baseline."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from sate.cli import main
from sate.scoring.degeneration import length_ratio, loop_share
from sate.scoring.score import sacrebleu_scores
from sate.scoring.significance import confidence, paired_bootstrap

REFS = ["Der Zug fährt um 7 Uhr ab.", "Ich möchte einen Kaffee.", "Wo ist der Bahnhof?", "Es regnet heute.",
        "Das Zimmer kostet 80 Euro.", "Biegen Sie an der Ampel links ab."]
SYSTEMS = {"st": ["Der Zug fährt ab.", "Ich möchte einen Tee.", "Wo ist der Bahnhof?", "Es regnet.",
                  "Das Zimmer kostet 80 Euro.", "Biegen Sie links ab."],
           "cascade": ["Der Bus.", "Ich möchte Kaffee.", "Wo Bahnhof?", "Heute.", "Zimmer Zimmer Zimmer Zimmer.",
                       "Links."]}


def write_system(exp: Path, name: str, hyps: list[str], refs: list[str]) -> None:
    """A decode folder as `sate evaluate` leaves it (the fields the report reads)."""
    folder = exp / name / "decode_tst-COMMON"
    folder.mkdir(parents=True)
    (folder / "hyp.txt").write_text("\n".join(hyps) + "\n", encoding="utf-8")
    (folder / "ref.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    scores, ci = sacrebleu_scores(hyps, refs), confidence(hyps, refs)
    results = {"bleu": scores["BLEU"].score, "chrf": scores["chrF"].score, "ter": scores["TER"].score,
               "signature": {"bleu": scores["BLEU"].signature}, "bleu_ci": ci["bleu"]["ci"],
               "chrf_ci": ci["chrf"]["ci"], "length_ratio": length_ratio(hyps, refs), "loop_share": loop_share(hyps)}
    (folder / "results.json").write_text(json.dumps(results), encoding="utf-8")


@pytest.mark.slow
def test_report_gives_intervals_and_p_values_against_the_baseline(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    for name, hyps in SYSTEMS.items():
        write_system(tmp_path, name, hyps, REFS)
    assert main(["report", "--exp", str(tmp_path)]) == 0
    table = (tmp_path / "results.md").read_text(encoding="utf-8")
    assert table == capsys.readouterr().out
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
            for line in table.splitlines() if line.startswith("| ") and "tst-COMMON" in line}
    tested = paired_bootstrap([("st", SYSTEMS["st"]), ("cascade", SYSTEMS["cascade"])], REFS)
    p_bleu, p_chrf = tested["cascade"]["bleu"]["p"], tested["cascade"]["chrf"]["p"]
    assert rows["st"][8] == "-" and rows["cascade"][8].startswith(f"{p_bleu:.3f}") and f"/ {p_chrf:.3f}" in rows[
        "cascade"][8]
    ci = confidence(SYSTEMS["st"], REFS)["bleu"]["ci"]
    assert rows["st"][2].endswith(f" ± {ci:.1f}") and rows["cascade"][7] == "17%"  # one of six outputs loops
    assert "p vs st (BLEU / chrF)" in table


@pytest.mark.slow
def test_a_baseline_given_that_is_no_system_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--baseline sta` (a typo) was ignored without a word: a table without p-values, exit 0."""
    for name, hyps in SYSTEMS.items():
        write_system(tmp_path, name, hyps, REFS)
    assert main(["report", "--exp", str(tmp_path), "--baseline", "sta"]) == 2
    assert capsys.readouterr().err.strip() == (f"sate report: error: --baseline sta: no such system in {tmp_path} "
                                               "(systems: cascade, st)")
    assert not (tmp_path / "results.md").exists()
    assert main(["report", "--exp", str(tmp_path), "--baseline", "cascade"]) == 0
    assert "p vs cascade (BLEU / chrF)" in capsys.readouterr().out


def test_the_default_tables_place_is_refused_by_the_option_given(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`sate report --exp EXP` with a folder (or a socket) at EXP/results.md was refused as "--out EXP/results.md",
    an option never given (nineteenth hostile pass)."""
    for name, hyps in SYSTEMS.items():
        write_system(tmp_path, name, hyps, REFS)
    (tmp_path / "results.md").mkdir()
    assert main(["report", "--exp", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"sate report: error: --exp {tmp_path / 'results.md'}: is a directory")


@pytest.mark.slow
def test_a_split_given_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--splits tst-COMMON tst-COMMON` wrote every row twice, exit 0, and the baseline's second row was tested
    against the first (p = 1.000 beside the system the table compares with)."""
    for name, hyps in SYSTEMS.items():
        write_system(tmp_path, name, hyps, REFS)
    assert main(["report", "--exp", str(tmp_path), "--splits", "tst-COMMON", "dev", "tst-COMMON"]) == 2
    assert capsys.readouterr().err.strip() == "sate report: error: --splits: tst-COMMON given twice"
    assert not (tmp_path / "results.md").exists()


@pytest.mark.parametrize(("exp", "split", "says"), [
    ("exp/st", "tst-COMMON", "--exp {tmp}/exp/st: one system's experiment (its decode_<split> folders are here); "
                             "--exp takes the folder that holds one experiment per system ({tmp}/exp)"),
    ("exp/st/decode_tst-COMMON", "tst-COMMON", "--exp {tmp}/exp/st/decode_tst-COMMON: one decoding's folder (`sate "
     "evaluate --out`); --exp takes the folder that holds one experiment per system ({tmp}/exp)"),
    ("exp", "tst-common", "{tmp}/exp: no decode_<split>/results.json for splits tst-common (its systems decoded: "
                          "tst-COMMON)"),
    (".", "tst-COMMON", "{tmp}: no decode_<split>/results.json for splits tst-COMMON (run `sate evaluate` first)"),
    # twenty-first hostile pass: the decoding's results.json was "no such directory", though it is there
    ("exp/st/decode_tst-COMMON/results.json", "tst-COMMON", "--exp {tmp}/exp/st/decode_tst-COMMON/results.json: a "
     "decoding's results.json; --exp takes the folder that holds one experiment per system ({tmp}/exp)"),
    ("exp/st/decode_tst-COMMON/hyp.txt", "tst-COMMON", "--exp {tmp}/exp/st/decode_tst-COMMON/hyp.txt: a file, not a "
     "directory"),
])
def test_an_experiment_given_for_the_folder_of_systems_is_named_as_such(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], exp: str, split: str, says: str) -> None:
    """Twentieth hostile pass: `sate report --exp exp/st` (one system's), or a decoding's folder, was told "no
    decode_<split>/results.json ... (run `sate evaluate` first)" beside its results; a split spelt another way too."""
    for name, hyps in SYSTEMS.items():
        write_system(tmp_path / "exp", name, hyps, REFS)
    assert main(["report", "--exp", str(tmp_path / exp), "--splits", split, "--out", str(tmp_path / "r.md")]) == 2
    assert capsys.readouterr().err == f"sate report: error: {says.format(tmp=tmp_path)}\n"
    assert not (tmp_path / "r.md").exists()


def test_a_results_file_that_is_a_named_pipe_is_named_as_such(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A named pipe as decode_dev/results.json was skipped as missing: "no decode_<split>/results.json" (twelfth
    hostile pass)."""
    for name, hyps in SYSTEMS.items():
        write_system(tmp_path, name, hyps, REFS)
    pipe = tmp_path / next(iter(SYSTEMS)) / "decode_tst-COMMON" / "results.json"
    pipe.unlink()
    os.mkfifo(pipe)
    assert main(["report", "--exp", str(tmp_path), "--splits", "tst-COMMON"]) == 2
    assert capsys.readouterr().err.strip() == (f"sate report: error: {pipe}: a named pipe, not a results file of "
                                               "`sate evaluate`")


@pytest.mark.parametrize("split", ["", "../x"])
def test_a_split_that_is_no_split_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  split: str) -> None:
    """It was looked for as EXP/SYSTEM/decode_<split> and called "no results.json for splits  (run sate evaluate)"."""
    (tmp_path / "exp" / "st").mkdir(parents=True)
    assert main(["report", "--exp", str(tmp_path / "exp"), "--splits", split]) == 2
    assert f"--splits: {split!r} is not a split name" in capsys.readouterr().err


def test_systems_on_other_references_are_not_compared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_system(tmp_path, "st", SYSTEMS["st"], REFS)
    write_system(tmp_path, "cascade", SYSTEMS["cascade"], REFS[::-1])
    assert main(["report", "--exp", str(tmp_path)]) == 2
    assert "were not evaluated on the same references" in capsys.readouterr().err
    # twenty-ninth hostile pass: systems of two data directories (en-de and en-fr under one --exp) were told to
    # "evaluate them again on one data directory's tst-COMMON", which an en-fr system cannot follow
    for name, data in (("st", "data/en-de"), ("cascade", "data/en-fr")):
        results = tmp_path / name / "decode_tst-COMMON" / "results.json"
        results.write_text(json.dumps({**json.loads(results.read_text()), "data": data}))
    assert main(["report", "--exp", str(tmp_path)]) == 2
    assert capsys.readouterr().err.endswith(
        "cannot be compared in one table of tst-COMMON: st was evaluated on data/en-de, cascade on data/en-fr: "
        "evaluate them again on one data directory's tst-COMMON, or, for data of another language pair or corpus, "
        "report each data directory's systems under an --exp of their own\n")


@pytest.mark.parametrize(("name", "text", "message"), [
    ("results", "[1]", "results.json: expected a JSON object, got list"),
    ("results", '{"bleu": "high"}', "results.json: bleu must be a number or null, got 'high'"),
    ("results", '{"bleu": 1, "signature": "x"}', "results.json: signature must be an object"),
    # eleventh hostile pass: a line break wrote a row of its own into results.md, exit 0
    ("results", '{"bleu": 1, "signature": {"bleu": "x\\n| evil | row |"}}',
     r"results.json: signature.bleu must be sacreBLEU's one-line signature, got 'x\n| evil | row |'"),
    ("results", '{"bleu": -5}', "results.json: bleu must be from 0 to 100, got -5"),  # hand-edited: once shown
    ("results", '{"bleu": 1e308}', "results.json: bleu must be from 0 to 100, got 1e+308"),  # as given, 309 digits
    ("results", '{"loop_share": -3}', "results.json: loop_share must be from 0 to 1, got -3"),  # once "-300%"
    ("results", '{"ter": -1}', "results.json: ter must be at least 0, got -1"),
    # twenty-second hostile pass: another JSON record copied as results.json was a row of dashes, exit 0
    ("results", '{"<unk>": 0, "</s>": 1}', "results.json: none of sate evaluate's scores (bleu, bleu_ci, chrf ...): "
                                           "another JSON record, not an evaluation's results.json"),
    ("results", '{"mean": [0.1], "std": [1.0], "frames": 9}', "results.json: none of sate evaluate's scores"),
    ("time", "garbage", "train_time.json: not valid JSON"),
    ("time", "{}", "train_time.json: seconds must be a number from 0 to 1e+12, got None"),
    ("time", '{"seconds": "x"}', "train_time.json: seconds must be a number from 0 to 1e+12, got 'x'"),
    ("time", '{"seconds": 1e300}', "train_time.json: seconds must be a number from 0 to 1e+12, got 1e+300"),
    # fourteenth pass: read whole and parsed, whatever its size (a 2-GB file took several times that in memory)
    ("results", '{"bleu": 1, "x": "' + "a" * (1 << 20) + '"}',
     "results.json: 1,048,596 bytes, far more than sate evaluate writes there: not its file"),
    ("time", '{"seconds": 1, "x": "' + "a" * (1 << 16) + '"}',
     "train_time.json: 65,559 bytes, far more than sate train writes there: not its file"),
])
def test_a_damaged_results_or_time_file_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              name: str, text: str, message: str) -> None:
    """Each was a TypeError, KeyError or format traceback while the table was written."""
    folder = tmp_path / "exp" / "st" / "decode_tst-COMMON"
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(text if name == "results" else '{"bleu": 1.0}')
    if name == "time":
        (tmp_path / "exp" / "st" / "train_time.json").write_text(text)
    assert main(["report", "--exp", str(tmp_path / "exp")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "exp" / "results.md").exists()


def test_a_missing_score_has_no_interval(tmp_path: Path) -> None:
    """A results.json without its BLEU (hand-edited) gave the cell "- ± 0.0": an interval around nothing."""
    folder = tmp_path / "exp" / "st" / "decode_tst-COMMON"
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps({"bleu_ci": 0.0, "chrf": 3.0, "chrf_ci": 1.0}))
    assert main(["report", "--exp", str(tmp_path / "exp")]) == 0
    row = (tmp_path / "exp" / "results.md").read_text().splitlines()[2]
    assert row.startswith("| st | tst-COMMON | - | 3.0 ± 1.0 |"), row


def test_results_cannot_rename_their_system(tmp_path: Path) -> None:
    """A "system" key in results.json replaced the folder's name in the table without a word. The folder names the
    split too; the split the file says was evaluated, where no data directory tells (no "data"), is said beside it
    (31st hostile pass)."""
    folder = tmp_path / "exp" / "st" / "decode_tst-COMMON"
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps({"bleu": 2.0, "system": "other", "split": "dev"}))
    assert main(["report", "--exp", str(tmp_path / "exp")]) == 0
    assert "| st | tst-COMMON (split dev) | 2.0 |" in (tmp_path / "exp" / "results.md").read_text()


def test_an_evaluation_of_another_split_is_not_tabled_as_its_folders(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`sate evaluate --split dev --out EXP/st/decode_tst-COMMON` (the --split changed, the --out copied) was tabled
    as tst-COMMON, exit 0 (twenty-second hostile pass). A folder named for another split of the evaluated data
    directory is refused naming both; a label of one's own (decode_dev-beam1) is tabled under it."""
    data = tmp_path / "data"
    data.mkdir()
    for split in ("dev", "tst-COMMON"):
        (data / f"{split}.jsonl").write_text("")
    for name in ("decode_tst-COMMON", "decode_dev-beam1"):
        folder = tmp_path / "exp" / "st" / name
        folder.mkdir(parents=True)
        (folder / "results.json").write_text(json.dumps({"bleu": 2.0, "split": "dev", "data": str(data)}))
    assert main(["report", "--exp", str(tmp_path / "exp")]) == 2
    results = tmp_path / "exp" / "st" / "decode_tst-COMMON" / "results.json"
    assert capsys.readouterr().err == (f"sate report: error: {results}: an evaluation of split 'dev' in a folder named "
                                       "for tst-COMMON; evaluate tst-COMMON into it again, or move it to decode_dev\n")
    assert not (tmp_path / "exp" / "results.md").exists()
    assert main(["report", "--exp", str(tmp_path / "exp"), "--splits", "dev-beam1"]) == 0
    assert "| st | dev-beam1 | 2.0 |" in (tmp_path / "exp" / "results.md").read_text()


def test_a_label_of_ones_own_over_another_split_says_the_split(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`sate evaluate --split dev --out EXP/mt/decode_tst-COMMON-beam1` (a label of one's own, not a split of the
    data) was tabled as "tst-COMMON-beam1", nothing saying it was dev; beside an evaluation of tst-COMMON under the
    same label it was refused with "evaluate them again on one data directory's tst-COMMON-beam1", a split no data
    directory has (31st hostile pass). The cell says the split; the refusal names both splits. decode_dev-beam1 of
    dev says it already."""
    for system, split, name in (("mt", "dev", "tst-COMMON-beam1"), ("st", "dev", "dev-beam1"),
                                ("st", "dev", "dev_beam5"), ("mt", "dev", "devtest")):  # devtest: another split
        folder = tmp_path / system / f"decode_{name}"
        folder.mkdir(parents=True)
        (folder / "results.json").write_text(json.dumps({"bleu": 2.0, "split": split, "data": "data"}))
    assert main(["report", "--exp", str(tmp_path), "--splits", "tst-COMMON-beam1", "dev-beam1", "dev_beam5",
                 "devtest"]) == 0
    table = capsys.readouterr().out
    assert "| mt | tst-COMMON-beam1 (split dev) | 2.0 |" in table and "| st | dev-beam1 | 2.0 |" in table
    # a label that begins with its split, whatever the separator, says it already (review31r)
    assert "| st | dev_beam5 | 2.0 |" in table and "| mt | devtest (split dev) | 2.0 |" in table
    for system, split in (("mt", "dev"), ("st", "tst-COMMON")):
        write_system(tmp_path / "two", system, SYSTEMS["st"], REFS if split == "tst-COMMON" else REFS[::-1])
        folder = tmp_path / "two" / system / "decode_tst-COMMON"
        results = json.loads((folder / "results.json").read_text()) | {"split": split, "data": "data"}
        (folder / "results.json").write_text(json.dumps(results))
        folder.rename(folder.with_name("decode_tst-COMMON-beam1"))
    assert main(["report", "--exp", str(tmp_path / "two"), "--splits", "tst-COMMON-beam1"]) == 2
    assert capsys.readouterr().err.endswith(
        "cannot be compared in one table of tst-COMMON-beam1: st is an evaluation of split tst-COMMON, mt of dev "
        "(results.json beside each): give each a folder named for its split (decode_tst-COMMON-LABEL, "
        "decode_dev-LABEL)\n")


def test_results_of_another_kind_in_an_experiment_are_refused(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A cascade's results in exp/st/decode_tst-COMMON (written before `sate evaluate` refused it there, or copied)
    were tabled as st's, the baseline, and an ST pack's in exp/asr as an asr row with BLEU (31st hostile pass): the
    report names the file, the experiment and a folder of their own. An ASR or MT experiment holds its cascade, and
    results that name no mode (written by hand) or lie in no experiment are tabled as before."""
    for task in ("st", "asr"):  # no checkpoints/: deleted after packing, the config.yaml tells (review31r)
        (tmp_path / task).mkdir(parents=True)
        (tmp_path / task / "config.yaml").write_text(f"task: {task}\n", encoding="utf-8")
    (tmp_path / "cascade" / "decode_tst-COMMON").mkdir(parents=True)  # the recipes' own cascade, and a folder
    (tmp_path / "cascade" / "decode_tst-COMMON" / "results.json").write_text(json.dumps({"wer": 20.0,
                                                                                         "mode": "cascade"}))
    (tmp_path / "cascade-own").write_text("notes\n")  # of the same name, taken: the advice names another
    for system, mode, own in (("st", "cascade", "cascade-own-2"), ("asr", "st", "st-own")):
        path = tmp_path / system / "decode_tst-COMMON" / "results.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"wer": 10.0, "mode": mode}))
        assert main(["report", "--exp", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert err == (
            f"sate report: error: {path}: the results of '{mode}' (its mode) in the {system} experiment "
            f"{tmp_path / system}: the table would show them as {system}'s own; evaluate {system}'s pack into it "
            f"again, or move them to a folder of their own (mkdir {tmp_path / own} && mv {path.parent} "
            f"{tmp_path / own}/)\n")
        # the advice, followed: a row of its own (the recipes' exp/cascade or exp/st was advised, where the move
        # nested the folder inside that one's results, or replaced them)
        subprocess.run(err.strip().rsplit("(", 1)[1].rstrip(")"), shell=True, check=True)
        assert main(["report", "--exp", str(tmp_path)]) == 0
        assert f"| {own} | tst-COMMON | - | - | - | 10.0 |" in capsys.readouterr().out
    for system in ("st", "asr"):
        path = tmp_path / system / "decode_tst-COMMON" / "results.json"
        path.parent.mkdir()
        path.write_text(json.dumps({"wer": 20.0, "mode": system}))  # WER alone: no paired test reads texts
    (tmp_path / "asr" / "decode_tst-COMMON" / "results.json").write_text(json.dumps({"wer": 20.0, "mode": "cascade"}))
    (tmp_path / "st" / "decode_tst-COMMON" / "results.json").write_text(json.dumps({"wer": 20.0}))  # no mode
    assert main(["report", "--exp", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    assert all(f"| {system} | tst-COMMON | - | - | - | 20.0 |" in table for system in ("st", "asr", "cascade"))


@pytest.mark.slow
def test_report_never_writes_over_its_inputs_or_a_checkpoint(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`--out EXP/st/decode_tst-COMMON/results.json` exited 0 and replaced the results with the table; `--curves`
    was not checked at all: `--curves EXP/st/checkpoints/last.ckpt` replaced the resume point with a PNG."""
    import torch

    exp = tmp_path / "exp"
    write_system(exp, "st", SYSTEMS["st"], REFS)
    logs = exp / "st" / "logs" / "version_0"
    logs.mkdir(parents=True)
    (logs / "metrics.csv").write_text("step,train/loss,valid/loss\n1,2.0,\n2,1.5,1.8\n")
    (exp / "st" / "config.yaml").write_text("task: st\n")
    (exp / "st" / "checkpoints").mkdir()
    torch.save({"sate": {}, "state_dict": {}}, exp / "st" / "checkpoints" / "last.ckpt")
    (tmp_path / "notes.txt").write_text("mine\n")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    for argv, says in [(["--out", exp / "st" / "decode_tst-COMMON" / "results.json"], "is also an input"),
                       (["--out", exp / "st" / "decode_tst-COMMON" / "ref.txt"], "is also an input"),
                       (["--curves", exp / "st" / "checkpoints" / "last.ckpt"], "is a checkpoint folder"),
                       (["--curves", tmp_path / "notes.txt"], "refusing to replace it: it is not a PNG image"),
                       (["--curves", logs / "metrics.csv"], "holds an experiment's training logs"),
                       (["--curves", tmp_path / "both.png", "--out", tmp_path / "both.png"], "is also the table's"),
                       # the table's default name: refused by its name since the nineteenth hostile pass
                       (["--curves", exp / "results.md"], "the image is written as PNG; name it *.png")]:
        assert main(["report", "--exp", str(exp), *map(str, argv)]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and f"{argv[0]} {argv[1]}: " in err and says in err, err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
    assert main(["report", "--exp", str(exp), "--curves", str(tmp_path / "curves.png")]) == 0
    assert (tmp_path / "curves.png").read_bytes()[:4] == b"\x89PNG"
    # eighteenth hostile pass: the curves' line showed a line break and a terminal escape in the name as they are
    capsys.readouterr()
    assert main(["report", "--exp", str(exp), "--curves", str(tmp_path / "c\n\x1b[31m.png")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"learning curves of st in {tmp_path}/c\\n\\x1b[31m.png"


@pytest.mark.parametrize(("log", "message"), [
    (b"step,train/loss\nabc,2.0\n", r"metrics.csv:2: step 'abc' and train/loss '2.0' must be numbers"),
    *(pytest.param(*case, marks=pytest.mark.slow) for case in [
        (b"train/loss\n2.0\n", "metrics.csv: no step column: not a training log"),
        (b"step,train/loss\n1,2\x00\n", "metrics.csv:2: a NUL byte"),
        (b"step,train/loss\n1,\xff\xfe\n", "metrics.csv:2: not valid UTF-8"),
        # a field past the csv module's 128 KiB: a _csv.Error traceback (seventeenth hostile pass)
        (b"step,train/loss\n0,1\n1," + b"9" * 200_000 + b"\n", "metrics.csv:3: not a row of a CSV log (field larger"),
    ]),
])
@pytest.mark.slow
def test_a_damaged_training_log_is_one_line_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           log: bytes, message: str) -> None:
    """`sate report --curves` on a log that is not Lightning's CSV was a ValueError, KeyError or UnicodeDecodeError
    traceback after the table was written; a folder `logs/version_old` was a ValueError."""
    exp = tmp_path / "exp"
    write_system(exp, "st", SYSTEMS["st"], REFS)
    (exp / "st" / "logs" / "version_0").mkdir(parents=True)
    (exp / "st" / "logs" / "version_0" / "metrics.csv").write_bytes(log)
    assert main(["report", "--exp", str(exp), "--curves", str(tmp_path / "c.png")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and message in err, err
    assert not (exp / "results.md").exists() and not (tmp_path / "c.png").exists()
    (exp / "st" / "logs" / "version_0" / "metrics.csv").write_text("step,train/loss\n1,2.0\n")
    (exp / "st" / "logs" / "version_old").mkdir()
    (exp / "st" / "logs" / "version_old" / "metrics.csv").write_text("step,train/loss\n1,9.0\n")
    (exp / "st" / "logs" / "version_²").mkdir()  # a digit to str.isdigit, not to int(): a ValueError (tenth pass)
    (exp / "st" / "logs" / "version_²" / "metrics.csv").write_text("step,train/loss\n1,9.0\n")
    assert main(["report", "--exp", str(exp), "--curves", str(tmp_path / "c.png")]) == 0


@pytest.mark.slow
def test_an_empty_training_log_draws_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A log of 0 bytes (a run killed as Lightning opened it) stopped the report as "no step column: not a training
    log"; its other logs are drawn (seventeenth hostile pass)."""
    exp = tmp_path / "exp"
    write_system(exp, "st", SYSTEMS["st"], REFS)
    for version, text in [(0, "step,train/loss\n1,2.0\n"), (1, "")]:
        (exp / "st" / "logs" / f"version_{version}").mkdir(parents=True)
        (exp / "st" / "logs" / f"version_{version}" / "metrics.csv").write_text(text)
    assert main(["report", "--exp", str(exp), "--curves", str(tmp_path / "c.png")]) == 0, capsys.readouterr().err
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_a_training_log_saved_with_a_byte_order_mark_is_drawn(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A log saved by an editor that writes a byte-order mark was "no step column: not a training log", the mark
    read as part of the first column's name (eighteenth hostile pass)."""
    exp = tmp_path / "exp"
    write_system(exp, "st", SYSTEMS["st"], REFS)
    (exp / "st" / "logs" / "version_0").mkdir(parents=True)
    (exp / "st" / "logs" / "version_0" / "metrics.csv").write_text("\ufeffstep,train/loss\n1,2.0\n2,1.5\n")
    assert main(["report", "--exp", str(exp), "--curves", str(tmp_path / "c.png")]) == 0, capsys.readouterr().err
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_a_value_beyond_what_training_logs_is_not_drawn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A value near float64's largest (an edited log's `1e308`, beyond the float32 Lightning logs) was an
    OverflowError or ValueError traceback inside matplotlib's axes; it is not drawn, as inf is not (eighteenth
    hostile pass)."""
    exp = tmp_path / "exp"
    write_system(exp, "st", SYSTEMS["st"], REFS)
    (exp / "st" / "logs" / "version_0").mkdir(parents=True)
    (exp / "st" / "logs" / "version_0" / "metrics.csv").write_text(
        "step,train/loss,valid/loss,valid/wer,valid/bleu\n0,1e308,2,-1e308,1e307\n1,2,1e308,1e308,1.7e308\n")
    assert main(["report", "--exp", str(exp), "--curves", str(tmp_path / "c.png")]) == 0, capsys.readouterr().err
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.slow
def test_a_bad_row_of_a_log_is_named_by_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """33rd hostile pass: a row was named by its place among the rows, a line too early for each blank line and
    quoted line break above it: "metrics.csv:4" of a value on line 6."""
    exp = tmp_path / "exp"
    write_system(exp, "st", SYSTEMS["st"], REFS)
    log = exp / "st" / "logs" / "version_0" / "metrics.csv"
    log.parent.mkdir(parents=True)
    log.write_text('epoch,step,train/loss,note\n0,1,2.0,\n\n0,2,1.5,"a\nb"\n0,3,abc,\n')
    assert main(["report", "--exp", str(exp), "--curves", str(tmp_path / "c.png")]) == 2
    assert capsys.readouterr().err.strip() == (f"sate report: error: {log}:6: step '3' and train/loss 'abc' must be "
                                               "numbers")


def test_a_step_beyond_any_count_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An edited log's step of 10**400 was an OverflowError traceback inside matplotlib (nineteenth hostile pass)."""
    exp = tmp_path / "exp"
    write_system(exp, "st", SYSTEMS["st"], REFS)
    log = exp / "st" / "logs" / "version_0" / "metrics.csv"
    log.parent.mkdir(parents=True)
    log.write_text(f"step,train/loss\n1,2.0\n1{'0' * 400},1.5\n")
    assert main(["report", "--exp", str(exp), "--curves", str(tmp_path / "c.png")]) == 2
    assert capsys.readouterr().err.strip() == (f"sate report: error: {log}:3: step '100000000000000000000000000..."
                                               "0000000000000000000000000000' is beyond any step count (at most 2**63"
                                               " - 1)")


@pytest.mark.slow
def test_losses_of_no_positive_value_are_drawn_without_a_warning(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A loss panel whose values are all 0 or below (an edited log, a loss that is not one) printed matplotlib's
    "Data has no positive values, and therefore cannot be log-scaled" on stderr (nineteenth hostile pass)."""
    exp = tmp_path / "exp"
    write_system(exp, "st", SYSTEMS["st"], REFS)
    log = exp / "st" / "logs" / "version_0" / "metrics.csv"
    log.parent.mkdir(parents=True)
    log.write_text("step,train/loss,valid/loss\n1,0,-0.0\n2,-1,0\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["report", "--exp", str(exp), "--curves", str(tmp_path / "c.png")]) == 0
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG" and "Warning" not in capsys.readouterr().err


def test_an_empty_or_uneven_decode_is_reported_without_a_traceback(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Two systems decoded on an empty split: sacreBLEU's paired test over zero sentences was an IndexError
    traceback; a hyp.txt shorter than its ref.txt was named by its system alone."""
    exp = tmp_path / "exp"
    for name in ("st", "cascade"):
        write_system(exp, name, SYSTEMS[name], REFS)
        folder = exp / name / "decode_tst-COMMON"
        (folder / "hyp.txt").write_text("")
        (folder / "ref.txt").write_text("")
    assert main(["report", "--exp", str(exp)]) == 0
    assert "| cascade | tst-COMMON |" in capsys.readouterr().out
    for name in ("st", "cascade"):
        write_system(tmp_path / "two", name, SYSTEMS[name], REFS)
    short = tmp_path / "two" / "cascade" / "decode_tst-COMMON" / "hyp.txt"
    short.write_text("Der Bus.\n")
    assert main(["report", "--exp", str(tmp_path / "two")]) == 2
    assert capsys.readouterr().err.strip() == (f"sate report: error: {short}: 1 lines for the {len(REFS)} of "
                                               f"{short.parent / 'ref.txt'}")


@pytest.mark.slow
def test_the_table_and_the_curves_are_replaced_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str],
                                                        full_disk: Callable[..., None]) -> None:
    """Thirteenth hostile pass: results.md was written, then the curves: a full disk (or a kill) at the PNG left the
    new table beside the old curves. A stream (--out /dev/stdout) is still written in place."""
    exp = tmp_path / "exp"
    write_system(exp, "st", SYSTEMS["st"], REFS)
    (exp / "st" / "logs" / "version_0").mkdir(parents=True)
    (exp / "st" / "logs" / "version_0" / "metrics.csv").write_text("step,train/loss\n1,2.0\n")
    argv = ["report", "--exp", str(exp), "--curves", str(tmp_path / "c.png")]
    assert main(argv) == 0
    earlier = {p: p.read_bytes() for p in (exp / "results.md", tmp_path / "c.png")}
    write_system(exp, "cascade", SYSTEMS["cascade"], REFS)
    with monkeypatch.context() as patch:
        full_disk(patch, after=1)  # the PNG, the second file, finds the disk full
        assert main(argv) == 1
    assert "c.png: No space left on device" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in earlier} == earlier
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.png", "exp"]  # no temporary file
    capsys.readouterr()
    assert main([*argv, "--out", "/dev/stdout"]) == 0
    assert "| cascade | tst-COMMON |" in capsys.readouterr().out


def test_p_values_are_the_reports_own_whatever_a_results_file_holds(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Thirteenth hostile pass: a results.json holding p_bleu or p_chrf (no key `sate evaluate` writes) had them
    tabled as p-values the report never computed, exit 0, and 'abc' was a ValueError traceback."""
    for name, hyps in SYSTEMS.items():
        write_system(tmp_path, name, hyps, REFS)
    path = tmp_path / "cascade" / "decode_tst-COMMON" / "results.json"
    for value in (0.001, "abc"):
        path.write_text(json.dumps({**json.loads(path.read_text()), "p_bleu": value, "p_chrf": value}))
        assert main(["report", "--exp", str(tmp_path), "--baseline", "cascade"]) == 0
        rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| cascade |")]
        assert rows and rows[0].split("|")[9].strip() == "-"


def test_one_system_linked_in_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Thirteenth hostile pass: a system folder, or its decode folder, linked in under a second name was a second
    row of the same results (p 1.000 against itself), exit 0. Links to other systems, as docs gather them, stay."""
    exp = tmp_path / "exp"
    for name, hyps in SYSTEMS.items():
        write_system(tmp_path / "runs", name, hyps, REFS)
        exp.mkdir(exist_ok=True)
        (exp / name).symlink_to(tmp_path / "runs" / name)
    assert main(["report", "--exp", str(exp), "--baseline", "cascade"]) == 0
    (exp / "again" / "decode_tst-COMMON").parent.mkdir()
    (exp / "again" / "decode_tst-COMMON").symlink_to(tmp_path / "runs" / "st" / "decode_tst-COMMON")
    capsys.readouterr()
    assert main(["report", "--exp", str(exp), "--baseline", "cascade"]) == 2
    first, second = (exp / system / "decode_tst-COMMON" / "results.json" for system in ("again", "st"))
    assert capsys.readouterr().err.strip() == (f"sate report: error: {second}: the same results file as {first} "
                                               "(through a link); a system's results are tabled once: remove the "
                                               "second link")


@pytest.mark.slow
def test_a_journal_of_the_table_and_curves_never_outlives_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  full_disk: Callable[..., None]) -> None:
    """Sixteenth hostile pass: with the table and the curves in two folders, a full disk at the second folder's
    journal (`layout.REPLACING`) left the first one's, which listed a table never renamed; and a user's own file of
    that name beside the table was removed by the run. Now the journal written is taken back, and the user's file is
    refused by name before any work."""
    from sate import layout

    exp, plots = tmp_path / "exp", tmp_path / "plots"
    write_system(exp, "st", SYSTEMS["st"], REFS)
    (exp / "st" / "logs" / "version_0").mkdir(parents=True)
    (exp / "st" / "logs" / "version_0" / "metrics.csv").write_text("step,train/loss\n1,2.0\n")
    plots.mkdir()
    argv = ["report", "--exp", str(exp), "--curves", str(plots / "c.png")]
    with monkeypatch.context() as patch:
        full_disk(patch, after=3)  # the table, the curves, the table's journal; then the curves' journal
        assert main(argv) == 1
    assert f"{plots / layout.REPLACING}: No space left on device" in capsys.readouterr().err
    assert not (exp / layout.REPLACING).exists() and list(plots.iterdir()) == []
    assert not (exp / "results.md").exists()
    (exp / layout.REPLACING).write_text("my notes\n")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sate report: error: {exp / layout.REPLACING}: a file sate did not write") and \
        err.count("\n") == 1, err
    assert (exp / layout.REPLACING).read_text() == "my notes\n" and list(plots.iterdir()) == []
    (exp / layout.REPLACING).unlink()
    assert main(argv) == 0
    assert not (exp / layout.REPLACING).exists() and not (plots / layout.REPLACING).exists()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["a$^$b", "sys$_{$x", "caf\udce9"])
def test_curves_of_a_system_whose_name_matplotlib_reads_as_a_formula_are_drawn(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Nineteenth hostile pass: a system folder named `a$^$b` was a ValueError traceback from matplotlib's formula
    parser at the legend, one whose name is not UTF-8 a TypeError from its font code."""
    exp = tmp_path / "exp"
    write_system(exp, name, SYSTEMS["st"], REFS)
    (exp / name / "logs" / "version_0").mkdir(parents=True)
    (exp / name / "logs" / "version_0" / "metrics.csv").write_text("step,train/loss\n1,2.0\n2,1.5\n")
    assert main(["report", "--exp", str(exp), "--curves", str(tmp_path / "c.png")]) == 0
    assert (tmp_path / "c.png").stat().st_size > 0 and "Traceback" not in capsys.readouterr().err


def test_an_out_named_for_another_kind_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sate report --out table.csv` (or .json, .png, .md.gz) wrote the markdown table under that name, exit 0
    (twenty-second hostile pass); .txt is text, as markdown is."""
    exp = tmp_path / "exp"
    write_system(exp, "st", SYSTEMS["st"], REFS)
    for name, kind in (("t.csv", "a CSV table"), ("t.json", "one JSON document"), ("t.png", "an image")):
        assert main(["report", "--exp", str(exp), "--out", str(tmp_path / name)]) == 2
        assert capsys.readouterr().err == (f"sate report: error: --out {tmp_path / name}: a {Path(name).suffix} name "
                                           f"says {kind}, but sate report writes a markdown table: name it "
                                           f"{tmp_path / 't.md'}\n")
    assert main(["report", "--exp", str(exp), "--out", str(tmp_path / "t.md.gz")]) == 2
    assert capsys.readouterr().err.endswith(f"uncompressed: name it {tmp_path / 't.md'} and compress it after\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp"]
    assert main(["report", "--exp", str(exp), "--out", str(tmp_path / "t.txt")]) == 0
    assert (tmp_path / "t.txt").read_text().startswith("| system |")


def test_a_streamed_or_whole_talk_evaluation_is_said_in_its_split_cell(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`sate evaluate --stream wait-k=2 --talks --out EXP/st/decode_tst-COMMON` was tabled as st's BLEU and tested
    against the offline systems, without a word (twenty-fourth hostile pass): the split cell says how it was
    decoded; an offline run's cell is the split alone, as before."""
    for name, hyps in SYSTEMS.items():
        write_system(tmp_path, name, hyps, REFS)
    path = tmp_path / "st" / "decode_tst-COMMON" / "results.json"
    results = json.loads(path.read_text(encoding="utf-8"))
    results |= {"talks": 2, "stream": {"policy": "wait-k=2", "chunk": 0.5, "talks": 2}}
    path.write_text(json.dumps(results), encoding="utf-8")
    assert main(["report", "--exp", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    assert "| st | tst-COMMON (streamed wait-k=2, 0.5-s chunks, whole talks) |" in table
    assert "| cascade | tst-COMMON |" in table
    results.pop("stream")  # offline, whole talks re-segmented
    path.write_text(json.dumps(results), encoding="utf-8")
    assert main(["report", "--exp", str(tmp_path)]) == 0
    assert "| st | tst-COMMON (whole talks) |" in capsys.readouterr().out


def test_a_perfect_bleu_as_sacrebleu_computes_it_is_tabled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """sacreBLEU's BLEU of a perfect match is 100.00000000000004: the results.json `sate evaluate` wrote for it
    was refused by `sate report` and `sate latency-plot` as "bleu must be from 0 to 100" (twenty-fourth hostile
    pass). A score beyond a bound by more than rounding is refused as before."""
    write_system(tmp_path, "st", REFS, REFS)
    path = tmp_path / "st" / "decode_tst-COMMON" / "results.json"
    assert json.loads(path.read_text())["bleu"] > 100
    assert main(["report", "--exp", str(tmp_path)]) == 0
    assert "| st | tst-COMMON | 100.0 ± 0.0 |" in capsys.readouterr().out
    streamed = tmp_path / "streamed" / "results.json"  # a streamed run of the same perfect BLEU beside it
    streamed.parent.mkdir()
    streamed.write_text(json.dumps({**json.loads(path.read_text()), "stream": {
        "policy": "wait-k=2", "chunk": 0.5, "latency": {"sentences": 2, "al": 1.0, "laal": 1.1, "al_ca": 1.2,
                                                        "laal_ca": 1.3}}}))
    assert main(["latency-plot", str(path), str(streamed), "--out", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").stat().st_size > 0
    path.write_text(json.dumps({**json.loads(path.read_text()), "bleu": 100.001}))
    assert main(["report", "--exp", str(tmp_path)]) == 2
    assert "bleu must be from 0 to 100, got 100.001" in capsys.readouterr().err


def test_systems_on_other_references_are_refused_without_a_baseline_too(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Without a baseline (no `st`, no --baseline) nothing was tested pairwise, and systems evaluated on other
    references under one split name were tabled side by side, exit 0 (twenty-fourth hostile pass). Systems of the
    same references, and one without ref.txt (an older run), are tabled as before."""
    write_system(tmp_path, "mt", SYSTEMS["st"], REFS)
    write_system(tmp_path, "cascade", SYSTEMS["cascade"], REFS[::-1])
    assert main(["report", "--exp", str(tmp_path)]) == 2
    assert "were not evaluated on the same references, so they cannot be compared in one table of tst-COMMON" in \
        capsys.readouterr().err
    (tmp_path / "cascade" / "decode_tst-COMMON" / "ref.txt").unlink()
    assert main(["report", "--exp", str(tmp_path)]) == 0
    write_system(tmp_path, "other", SYSTEMS["cascade"], REFS)
    assert main(["report", "--exp", str(tmp_path)]) == 0


def test_files_changed_after_their_evaluation_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The BLEU column comes from results.json, the p-values from hyp.txt and ref.txt: a hyp.txt edited after the
    run (here made the baseline's) was tabled as BLEU 7.2 with p = 1.000, exit 0 (twenty-fifth hostile pass). A
    system whose files are as scored, or that has none (an older run) and no baseline, is tabled."""
    for name, hyps in SYSTEMS.items():
        write_system(tmp_path, name, hyps, REFS)
    assert main(["report", "--exp", str(tmp_path)]) == 0
    capsys.readouterr()
    folder = tmp_path / "cascade" / "decode_tst-COMMON"
    scored = (folder / "hyp.txt").read_text(encoding="utf-8")
    (folder / "hyp.txt").write_text("\n".join(SYSTEMS["st"]) + "\n", encoding="utf-8")
    assert main(["report", "--exp", str(tmp_path), "--out", str(tmp_path / "new.md")]) == 2
    err = capsys.readouterr().err
    assert f"{folder / 'hyp.txt'} or {folder / 'ref.txt'} changed since `sate evaluate` scored them" in err
    assert f"{folder / 'results.json'} says 7.16" in err and not (tmp_path / "new.md").exists()
    (folder / "hyp.txt").write_text(scored, encoding="utf-8")
    (folder / "ref.txt").write_text("\n".join(REFS[::-1]) + "\n", encoding="utf-8")
    assert main(["report", "--exp", str(tmp_path)]) == 2
    assert "changed since `sate evaluate` scored them" in capsys.readouterr().err
    (folder / "ref.txt").write_text("\n".join(REFS) + "\r\n", encoding="utf-8")  # as scored, saved with CRLF
    assert main(["report", "--exp", str(tmp_path)]) == 0
    (tmp_path / "st").rename(tmp_path / "base")  # no baseline: the files of a system are read for nothing else
    for name in ("hyp.txt", "ref.txt"):
        (folder / name).unlink()
    assert main(["report", "--exp", str(tmp_path)]) == 0


def test_each_signature_names_its_rows_and_whispers_wer_is_said(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Two BLEU signatures (another tokenizer recorded, another sacreBLEU version) were listed under the table with
    no word of which row had which, and a Whisper system's WER was tabled in the CTC WER column as a CTC transcript's
    (twenty-fifth hostile pass). A BLEU of another kind is not scored again as the default's; one signature is one
    line as before."""
    for name, hyps in SYSTEMS.items():
        write_system(tmp_path, name, hyps, REFS)
    assert main(["report", "--exp", str(tmp_path)]) == 0
    assert "\nsacreBLEU: `nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" in capsys.readouterr().out
    results = tmp_path / "cascade" / "decode_tst-COMMON" / "results.json"
    record = json.loads(results.read_text(encoding="utf-8"))
    intl = record["signature"]["bleu"].replace("tok:13a", "tok:intl")
    results.write_text(json.dumps({**record, "bleu": record["bleu"] + 1, "signature": {"bleu": intl}}),
                       encoding="utf-8")
    whisper = tmp_path / "whisper" / "decode_tst-COMMON"
    whisper.mkdir(parents=True)
    (whisper / "results.json").write_text(json.dumps({"mode": "asr", "wer": 12.34, "whisper": {"model": "tiny.en"}}))
    assert main(["report", "--exp", str(tmp_path)]) == 0
    table = capsys.readouterr().out
    assert f"`{intl}` (cascade)" in table and "` (st)" in table
    assert "| whisper | tst-COMMON | - | - | - | 12.3 (Whisper) |" in table


def test_a_system_without_its_texts_is_tabled_untested(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A system whose hyp.txt or ref.txt is gone (an older run's, removed to save room) stopped the whole report with
    "file is missing", which said neither why it was read nor what to do (twenty-fifth hostile pass): it is tabled,
    its p cell saying what it lacks; the baseline's missing is refused with what to do, and that advice, followed,
    gives a table."""
    for name, hyps in SYSTEMS.items():
        write_system(tmp_path, name, hyps, REFS)
    (tmp_path / "cascade" / "decode_tst-COMMON" / "hyp.txt").unlink()
    assert main(["report", "--exp", str(tmp_path)]) == 0
    assert "| - (no hyp.txt) |" in capsys.readouterr().out
    write_system(tmp_path, "e2e", SYSTEMS["cascade"], REFS)
    (tmp_path / "st" / "decode_tst-COMMON" / "ref.txt").unlink()
    assert main(["report", "--exp", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"sate report: error: {tmp_path / 'st' / 'decode_tst-COMMON' / 'ref.txt'}: file is missing: the systems of "
        "tst-COMMON are tested against the baseline's outputs; evaluate st again, or name another --baseline")
    assert main(["report", "--exp", str(tmp_path), "--baseline", "e2e"]) == 0
    table = capsys.readouterr().out
    assert "| - (no ref.txt) |" in table and "| - (no hyp.txt) |" in table


def test_a_broken_link_at_a_systems_text_says_to_remove_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review of the 33rd hostile pass: a link whose target was removed at a system's hyp.txt (files removed to save
    room, which the report tables untested) is named, as a broken link, and the line now says what to do; the
    advice, followed, gives the table with the system untested."""
    for name, hyps in SYSTEMS.items():
        write_system(tmp_path, name, hyps, REFS)
    link = tmp_path / "cascade" / "decode_tst-COMMON" / "hyp.txt"
    link.unlink()
    link.symlink_to(tmp_path / "gone" / "hyp.txt")
    assert main(["report", "--exp", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"sate report: error: {link}: a broken symlink (to {tmp_path / 'gone' / 'hyp.txt'}, which is not there), "
        "not a text `sate evaluate` writes: remove the link to table the system as one whose text is gone (untested), "
        "or restore the file it leads to\n")
    link.unlink()
    assert main(["report", "--exp", str(tmp_path)]) == 0
    assert "| - (no hyp.txt) |" in capsys.readouterr().out


def test_transcribing_systems_on_other_references_are_not_compared(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Only the translations' references were compared: an ASR system evaluated on another test set under one split
    name had its WER tabled beside SATE's CTC WER, exit 0 (twenty-seventh hostile pass). Systems scored against the
    same transcripts' references, or without them (an older run), are tabled."""
    sources = ["the train leaves at seven", "i would like a coffee", "where is the station", "it is raining today",
               "the room costs eighty euros", "turn left at the lights"]
    write_system(tmp_path, "st", SYSTEMS["st"], REFS)
    asr = tmp_path / "asr" / "decode_tst-COMMON"
    asr.mkdir(parents=True)
    for system, texts in (("st", sources), ("asr", ["a talk of another test set", "with other words"])):
        folder = tmp_path / system / "decode_tst-COMMON"
        for name in ("transcript.txt", "transcript_ref.txt"):
            (folder / name).write_text("\n".join(texts) + "\n", encoding="utf-8")
        record = json.loads((folder / "results.json").read_text()) if system == "st" else {"mode": "asr"}
        (folder / "results.json").write_text(json.dumps({**record, "wer": 0.0}), encoding="utf-8")
    assert main(["report", "--exp", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"sate report: error: {asr / 'transcript_ref.txt'} differs from "
        f"{tmp_path / 'st' / 'decode_tst-COMMON' / 'transcript_ref.txt'}: the systems' transcripts (their WER) were "
        "not scored against the same references, so they cannot be compared in one table of tst-COMMON: evaluate "
        "them again on one data directory's tst-COMMON")
    (asr / "transcript_ref.txt").write_text("\n".join(sources) + "\n", encoding="utf-8")  # the same test set
    assert main(["report", "--exp", str(tmp_path)]) == 0
    assert "| asr | tst-COMMON | - | - | - | 0.0 |" in capsys.readouterr().out
    (asr / "transcript_ref.txt").unlink()
    assert main(["report", "--exp", str(tmp_path)]) == 0
    # a manifest's src_norm written by another tool, cased and punctuated: WER reads the same words, so its WER is
    # scored against the same references (it was refused as not the same)
    (asr / "transcript_ref.txt").write_text("\n".join(f"{s[0].upper()}{s[1:]}." for s in sources) + "\n",
                                            encoding="utf-8")
    assert main(["report", "--exp", str(tmp_path)]) == 0


@pytest.mark.parametrize("given", ["eval", "eval/st-pack-0a1b2c3d", "eval/st-pack-0a1b2c3d/tst-COMMON",
                                   "eval/st-pack-0a1b2c3d/tst-COMMON/results.json"])
def test_evaluations_in_evaluates_own_folders_are_told_where_the_report_reads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, given: str) -> None:
    """`sate evaluate` without --out writes eval/NAME/SPLIT: `sate report --exp eval` of them was told to "run `sate
    evaluate` first", and --exp eval/NAME/SPLIT to take eval, which said that again (twenty-seventh hostile pass).
    The advice, followed, gives the table."""
    monkeypatch.chdir(tmp_path)
    write_system(Path("eval"), "st-pack-0a1b2c3d", SYSTEMS["st"], REFS)
    run = Path("eval/st-pack-0a1b2c3d/tst-COMMON")
    Path("eval/st-pack-0a1b2c3d/decode_tst-COMMON").rename(run)
    record = json.loads((run / "results.json").read_text(encoding="utf-8"))
    (run / "results.json").write_text(json.dumps({**record, "mode": "st", "split": "tst-COMMON"}), encoding="utf-8")
    assert main(["report", "--exp", given]) == 2
    assert capsys.readouterr().err == (
        f"sate report: error: --exp {given}: a `sate evaluate` folder ({run}), not "
        "decode_<split> folders of systems, which the report tables: put each in its system's folder under one root "
        f"(mkdir -p ROOT/st-pack-0a1b2c3d && mv {run} ROOT/st-pack-0a1b2c3d/decode_tst-COMMON), then sate report "
        "--exp ROOT\n")
    Path("ROOT/st-pack-0a1b2c3d").mkdir(parents=True)
    run.rename("ROOT/st-pack-0a1b2c3d/decode_tst-COMMON")
    assert main(["report", "--exp", "ROOT"]) == 0
    assert "| st-pack-0a1b2c3d | tst-COMMON | 52.7 ± " in capsys.readouterr().out


def _evaluated(folder: Path, split: str) -> None:
    """FOLDER as `sate evaluate --split SPLIT` (without --out) leaves it."""
    write_system(folder.parent / "made", "x", SYSTEMS["st"], REFS)
    folder.parent.mkdir(parents=True, exist_ok=True)
    (folder.parent / "made" / "x" / "decode_tst-COMMON").rename(folder)
    for gone in (folder.parent / "made" / "x", folder.parent / "made"):
        gone.rmdir()
    record = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    (folder / "results.json").write_text(json.dumps({**record, "mode": "st", "split": split}), encoding="utf-8")


def _follow(error: str) -> list[str]:
    """Run the mkdir and mv an error advises, as printed, in a shell; the report command it then names, as args."""
    advice, report = error.rsplit("(mkdir -p ", 1)[1].split("), then sate ", 1)
    subprocess.run(["bash", "-c", f"mkdir -p {advice}"], check=True)
    return shlex.split(report.strip())


@pytest.mark.parametrize(("where", "given"), [("eval/st-pack-0a1b2c3d", "tst-COMMON"),
                                              ("eval/st-pack-0a1b2c3d/tst-COMMON", "."),
                                              ("eval/st-pack-0a1b2c3d/tst-COMMON", "results.json"),
                                              ("eval/st-pack-0a1b2c3d/tst-COMMON", "./results.json"),
                                              (".", "my exp-pack-ff71ecaa/dev"), (".", "eval(1)")])
def test_the_advice_for_evaluates_folders_works_as_printed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, where: str,
        given: str) -> None:
    """The mkdir and mv advised for `sate evaluate`'s folders failed when followed: a relative --exp of one part
    named the system "" (`mkdir -p ROOT/`, `mv .`), a name with a space or a parenthesis was split by the shell
    (stray folders left), and --splits was dropped, so the report advised said "no ... for splits tst-COMMON" of a
    dev run (twenty-seventh hostile pass). Followed literally, each gives the table."""
    split = "dev" if "dev" in given or given == "eval(1)" else "tst-COMMON"
    run = tmp_path / ("eval(1)/my run" if given == "eval(1)" else
                      "my exp-pack-ff71ecaa/dev" if "my exp" in given else "eval/st-pack-0a1b2c3d/tst-COMMON")
    _evaluated(run, split)
    monkeypatch.chdir(tmp_path / where)
    splits = ["--splits", "dev"] if split == "dev" else []
    assert main(["report", "--exp", given, *splits]) == 2
    command = _follow(capsys.readouterr().err)
    assert command[:2] == ["report", "--exp"] and command[3:] == splits
    assert main(command) == 0
    system = "my run" if given == "eval(1)" else run.parent.name
    assert f"| {system} | {split} | 52.7 ± " in capsys.readouterr().out
    assert sorted(os.listdir(tmp_path)) == sorted({"ROOT", run.relative_to(tmp_path).parts[0]}) or where != "."


def test_the_advice_names_a_run_of_a_split_asked_for(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """eval/NAME holding dev and tst-COMMON runs: the example advised was the dev run (sorted first), so the one mv
    shown, then the report shown, said "no ... for splits tst-COMMON" (twenty-seventh hostile pass)."""
    monkeypatch.chdir(tmp_path)
    for split in ("dev", "tst-COMMON"):
        _evaluated(Path("eval/st-pack-0a1b2c3d") / split, split)
    for splits in ([], ["--splits", "dev"]):
        assert main(["report", "--exp", "eval/st-pack-0a1b2c3d", *splits]) == 2
        error = capsys.readouterr().err
        assert f"mv eval/st-pack-0a1b2c3d/{splits[1] if splits else 'tst-COMMON'} " in error
    assert main(_follow(error)) == 0
    assert "| st-pack-0a1b2c3d | dev | 52.7 ± " in capsys.readouterr().out


@pytest.mark.parametrize("name", ["tst-COMMON-talks", "tst-COMMON-stream-wait-k=2-0.5s"])
def test_a_streamed_or_whole_talk_run_is_named_after_its_model(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """`sate evaluate --talks` (or --stream) without --out writes eval/NAME/tst-COMMON-talks: the system advised was
    named tst-COMMON-talks, which read as a split in the table; it is NAME-talks (twenty-seventh hostile pass)."""
    monkeypatch.chdir(tmp_path)
    _evaluated(Path("eval/st-pack-0a1b2c3d") / name, "tst-COMMON")
    assert main(["report", "--exp", "eval"]) == 2
    assert main(_follow(capsys.readouterr().err)) == 0
    assert f"| st-pack-0a1b2c3d-{name.removeprefix('tst-COMMON-')} | tst-COMMON | 52.7 ± " in capsys.readouterr().out


def test_a_baseline_that_translates_nothing_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--baseline asr` (a system with a WER alone) was taken: the table said "p vs asr" over a column of dashes,
    exit 0, nothing tested (twenty-seventh hostile pass). The advice, followed, tests the systems; a baseline that
    translates one split of two is taken."""
    for name, hyps in SYSTEMS.items():
        write_system(tmp_path, name, hyps, REFS)
    asr = tmp_path / "asr" / "decode_tst-COMMON"
    asr.mkdir(parents=True)
    (asr / "results.json").write_text(json.dumps({"mode": "asr", "wer": 20.0}), encoding="utf-8")
    assert main(["report", "--exp", str(tmp_path), "--baseline", "asr"]) == 2
    assert capsys.readouterr().err == ("sate report: error: --baseline asr: it has no translations scored in "
                                       "tst-COMMON (WER only), so no system can be tested against it: name a "
                                       "translating system (cascade, st)\n")
    assert main(["report", "--exp", str(tmp_path), "--baseline", "cascade"]) == 0
    assert "| st | tst-COMMON | 52.7 ± " in capsys.readouterr().out and "| p vs cascade (BLEU / chrF) |" in \
        (tmp_path / "results.md").read_text(encoding="utf-8")
    (tmp_path / "asr" / "decode_dev").mkdir()
    write_system(tmp_path / "other", "asr", SYSTEMS["st"], REFS)
    (tmp_path / "other" / "asr" / "decode_tst-COMMON").rename(tmp_path / "asr" / "decode_dev")
    assert main(["report", "--exp", str(tmp_path), "--splits", "tst-COMMON", "dev", "--baseline", "asr"]) == 0
    capsys.readouterr()
    # a system evaluated in other splits than those reported is one, not "no such system" (twenty-seventh pass)
    assert main(["report", "--exp", str(tmp_path), "--splits", "dev", "--baseline", "cascade"]) == 2
    assert capsys.readouterr().err == ("sate report: error: --baseline cascade: not evaluated in dev (it was in "
                                       "tst-COMMON): name a system of these splits (asr), or report its splits\n")


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "said"), [(None, "(seed 12345)"), ("7", "(seed 7)"),
                                            ("0", "(unseeded: SACREBLEU_SEED=0 has sacreBLEU draw a new seed"),
                                            ("none", "(unseeded: SACREBLEU_SEED=none has")])
def test_the_legend_says_how_the_paired_test_was_seeded(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch, seed: str | None,
                                                        said: str) -> None:
    """sacreBLEU's paired test takes a seed of 0 for none: SACREBLEU_SEED=0 gave other p-values at each run of the
    report, and the table did not say so; SACREBLEU_SEED=abc was a ValueError traceback (twenty-ninth hostile pass)."""
    for name, hyps in SYSTEMS.items():
        write_system(tmp_path, name, hyps, REFS)
    if seed is not None:
        monkeypatch.setenv("SACREBLEU_SEED", seed)
    assert main(["report", "--exp", str(tmp_path)]) == 0
    assert said in capsys.readouterr().out
    monkeypatch.setenv("SACREBLEU_SEED", "abc")
    assert main(["report", "--exp", str(tmp_path), "--out", str(tmp_path / "other.md")]) == 2
    assert "SACREBLEU_SEED='abc': sacreBLEU's bootstrap seed must be" in capsys.readouterr().err
    assert not (tmp_path / "other.md").exists()


def test_a_table_of_one_system_claims_no_paired_test(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One system alone: the legend said "paired bootstrap test against the baseline (seed 12345)" over a column
    of dashes (review29z)."""
    write_system(tmp_path, "st", SYSTEMS["st"], REFS)
    assert main(["report", "--exp", str(tmp_path)]) == 0
    said = capsys.readouterr().out
    assert "p: no paired test was made (a split of one system, or of fewer than 6 sentences)." in said
    assert "paired bootstrap test against" not in said


def test_a_bleu_without_a_signature_is_not_tabled_under_the_others(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A results.json written by hand (a paper's BLEU, no signature) was tabled under the one signature line of the
    table, as if it were a BLEU of that kind (twenty-ninth hostile pass); alone, no signature line is claimed."""
    write_system(tmp_path, "st", SYSTEMS["st"], REFS)
    paper = tmp_path / "paper" / "decode_tst-COMMON"
    paper.mkdir(parents=True)
    (paper / "results.json").write_text(json.dumps({"bleu": 25.3, "chrf": 52.1}), encoding="utf-8")
    assert main(["report", "--exp", str(tmp_path)]) == 0
    said = capsys.readouterr().out
    assert "\nsacreBLEU: `nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:" in said
    assert "` (st); no signature recorded: paper\n" in said
    shutil.rmtree(tmp_path / "st")
    assert main(["report", "--exp", str(tmp_path)]) == 0
    assert "sacreBLEU" not in capsys.readouterr().out


def test_a_split_of_one_sentence_is_not_tested(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every resample of one sentence is that sentence: its p-values of 0.001 were marked * ("a difference beyond
    noise") and its intervals "± 0.0", from a split too small to tell noise (twenty-ninth hostile pass)."""
    write_system(tmp_path, "st", SYSTEMS["st"][:1], REFS[:1])
    write_system(tmp_path, "cascade", SYSTEMS["cascade"][:1], REFS[:1])
    assert main(["report", "--exp", str(tmp_path)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "tst-COMMON" in line]
    assert len(rows) == 2 and all("- (one sentence: nothing to resample)" in row for row in rows)
    assert not any("±" in row or "*" in row for row in rows)


@pytest.mark.parametrize("count", [2, 5])
def test_a_split_of_fewer_than_six_sentences_is_not_tested(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           count: int) -> None:
    """33rd hostile pass: sacreBLEU's bootstrap gave p = 0.001, marked *, to a system better than the baseline on each
    of two sentences, where an exact paired test of n sentences gives no p under 2 / 2**n: not under 0.05 before 6.
    Their intervals are kept (they are wide); six sentences are tested."""
    write_system(tmp_path, "st", SYSTEMS["st"][:count], REFS[:count])
    write_system(tmp_path, "cascade", SYSTEMS["cascade"][:count], REFS[:count])
    assert main(["report", "--exp", str(tmp_path)]) == 0
    said = capsys.readouterr().out
    rows = [line for line in said.splitlines() if "tst-COMMON" in line]
    assert len(rows) == 2 and all(f"- ({count} sentences: too few to test)" in row for row in rows), rows
    assert all("±" in row for row in rows) and not any("*" in row for row in rows)
    assert "p: no paired test was made (a split of one system, or of fewer than 6 sentences)." in said


def test_a_seed_sacrebleu_cannot_read_stops_only_a_report_that_resamples(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Review of the twenty-ninth pass: SACREBLEU_SEED=abc stopped every `sate report`, also those that make no
    paired test (an ASR system alone, one translating system, a split of one sentence), which main wrote; they are
    written now, the legend saying no test was made. A report that tests a pair is still refused (the test above)."""
    asr = tmp_path / "asr_only" / "asr" / "decode_tst-COMMON"
    asr.mkdir(parents=True)
    (asr / "results.json").write_text(json.dumps({"mode": "asr", "wer": 20.0}), encoding="utf-8")
    write_system(tmp_path / "one", "st", SYSTEMS["st"], REFS)
    write_system(tmp_path / "smoke", "st", SYSTEMS["st"][:1], REFS[:1])
    write_system(tmp_path / "smoke", "cascade", SYSTEMS["cascade"][:1], REFS[:1])
    monkeypatch.setenv("SACREBLEU_SEED", "abc")
    for exp in ("asr_only", "one", "smoke"):
        assert main(["report", "--exp", str(tmp_path / exp)]) == 0
        assert (tmp_path / exp / "results.md").is_file()
    assert ("p: no paired test was made (a split of one system, or of fewer than 6 sentences; SACREBLEU_SEED='abc' is "
            "no seed "
            "sacreBLEU reads)") in capsys.readouterr().out


def test_an_old_chinese_length_ratio_is_counted_again_in_characters(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Review of the twenty-ninth pass: Chinese and Japanese length ratios count characters since that pass, but a row
    evaluated before it (13a tokens: 1.00 for an output a third as long) was tabled beside newer ones with nothing
    telling them apart, and results.json recorded no unit. `sate evaluate` records `length_unit` now, and the report
    counts an old row's ratio again from its hyp.txt and ref.txt; other languages' rows are tabled as stored."""
    refs = ["我们今天去公园散步。", "他说，这个问题很难，但是我们可以解决。", "谢谢大家。"]
    write_system(tmp_path, "st", ["我们去", "他说", "谢谢。"], refs)
    write_system(tmp_path, "cascade", ["我们今天去公园散步", "他说这个问题很难但是我们可以解决", "谢谢大家"], refs)
    for name in ("st", "cascade"):  # as sate evaluate wrote them before: 13a tokens, no unit
        results = tmp_path / name / "decode_tst-COMMON" / "results.json"
        results.write_text(json.dumps({**json.loads(results.read_text()), "length_ratio": 1.0}), encoding="utf-8")
    write_system(tmp_path / "de", "st", SYSTEMS["st"], REFS)
    stored = json.loads((tmp_path / "de" / "st" / "decode_tst-COMMON" / "results.json").read_text())["length_ratio"]
    for exp, ratios in ((tmp_path, {"st": "0.24", "cascade": "0.85"}), (tmp_path / "de", {"st": f"{stored:.2f}"})):
        assert main(["report", "--exp", str(exp), "--out", str(tmp_path / f"{exp.name}.md")]) == 0
        rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
                for line in capsys.readouterr().out.splitlines() if line.startswith("| ") and "tst-COMMON" in line}
        assert {name: cells[6] for name, cells in rows.items()} == ratios


def test_the_users_page_of_the_report_says_what_the_table_says() -> None:
    """Review of the twenty-ninth pass: docs/recipes.md's `sate report` section, where docs/inference.md sends its
    readers, said nothing of the wording that pass gave the table and its refusals."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "recipes.md").read_text(encoding="utf-8")
    section = " ".join(page.split("## Results tables and learning curves")[1].split("\n## ")[0].split())
    for said in ("no signature recorded: paper", "- (one sentence: nothing to resample)", "SACREBLEU_SEED",
                 "`length_unit`", "under an `--exp` of their own", "sentences: too few to test)",
                 "replaces the earlier run's points", "and for a split of fewer than 6 sentences"):
        assert said in section, said


@pytest.mark.slow  # matplotlib
def test_curves_of_more_than_ten_systems_get_a_colour_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """`sate report --curves` coloured system k as C{k % 10}: the eleventh run's curves were drawn as the first's,
    nothing telling them apart (thirtieth pass, hand30n's leftover)."""
    from matplotlib.axes import Axes

    from sate.scoring.report import plot_curves

    drawn: list[object] = []
    plot = Axes.plot

    def recording(self: Axes, *args: object, **kwargs: object) -> object:
        drawn.append(kwargs["color"])
        return plot(self, *args, **kwargs)

    monkeypatch.setattr(Axes, "plot", recording)
    systems = {f"st{k:02d}": {"train/loss": [(1, 2.0 + k), (2, 1.5 + k)]} for k in range(12)}
    assert plot_curves(systems).startswith(b"\x89PNG")
    assert len(drawn) == 12 and len({str(c) for c in drawn}) == 12


def test_a_p_value_just_under_the_threshold_is_not_tabled_as_it() -> None:
    """33rd hostile pass: sacreBLEU's p-value of 50/1001 (0.04995) was tabled "0.050*", marked as under 0.05 where it
    read as 0.05; 49/1001 and 51/1001 are tabled to 3 decimals as before."""
    from sate.scoring.report import _p

    assert [_p(k / 1001) for k in (49, 50, 51)] == ["0.049*", "0.04995*", "0.051"]
    assert (_p(None), _p(1.0), _p(1 / 1001)) == ("-", "1.000", "0.001*")


def test_a_run_started_again_in_a_trained_folder_is_drawn_from_its_own_steps(tmp_path: Path) -> None:
    """33rd hostile pass: a fresh run in the folder of a finished one whose checkpoints were removed (`sate train`
    keeps that run's rows) was drawn as one line going back from step 3 to 1 and over it again; a resume's rows, which
    follow the steps of the run it resumes, are drawn after them as before."""
    from sate.scoring.report import read_curves

    logs = tmp_path / "st" / "logs"
    for version, text in (("version_0", "epoch,step,train/loss,valid/loss\n0,1,5.0,\n0,2,4.0,\n0,3,3.0,3.5\n"),
                          ("version_1", "epoch,step,train/loss,valid/loss\n0,4,2.5,\n0,5,2.0,2.2\n"),
                          ("version_2", "epoch,step,train/loss,valid/loss\n0,1,6.0,\n0,2,5.5,5.9\n")):
        (logs / version).mkdir(parents=True)
        (logs / version / "metrics.csv").write_text(text, encoding="utf-8")
    assert read_curves(tmp_path / "st") == {"train/loss": [(1, 6.0), (2, 5.5)], "valid/loss": [(2, 5.9)]}
    shutil.rmtree(logs / "version_2")
    assert read_curves(tmp_path / "st") == {"train/loss": [(1, 5.0), (2, 4.0), (3, 3.0), (4, 2.5), (5, 2.0)],
                                            "valid/loss": [(3, 3.5), (5, 2.2)]}


def test_a_run_started_again_cuts_every_metric_of_the_earlier_run(tmp_path: Path) -> None:
    """review of the 33rd hostile pass: "started again" was decided per metric, so a fresh run not yet validated
    was drawn beside the earlier run's validation curves (valid/bleu 25 at step 5, a step the new run had not
    reached); it is decided once per version, from its first step over every metric."""
    from sate.scoring.report import read_curves

    logs = tmp_path / "st" / "logs"
    for version, text in (("version_0", "epoch,step,train/loss,valid/loss,valid/bleu\n0,1,5.0,,\n0,2,4.0,,\n"
                                        "0,3,3.0,3.5,20\n0,4,2.8,,\n0,5,2.5,2.9,25\n"),
                          ("version_1", "epoch,step,train/loss,valid/loss,valid/bleu\n0,1,6.0,,\n0,2,5.5,,\n")):
        (logs / version).mkdir(parents=True)
        (logs / version / "metrics.csv").write_text(text, encoding="utf-8")
    assert read_curves(tmp_path / "st") == {"train/loss": [(1, 6.0), (2, 5.5)]}
    # validated at other intervals: the earlier run's point at step 2 does not join the new run's line
    (logs / "version_1" / "metrics.csv").write_text("epoch,step,train/loss,valid/loss,valid/bleu\n0,1,6.0,,\n"
                                                   "0,4,5.0,4.4,18\n", encoding="utf-8")
    (logs / "version_0" / "metrics.csv").write_text("epoch,step,train/loss,valid/loss,valid/bleu\n0,1,5.0,,\n"
                                                   "0,2,4.0,3.9,21\n0,4,3.0,3.5,22\n", encoding="utf-8")
    assert read_curves(tmp_path / "st") == {"train/loss": [(1, 6.0), (4, 5.0)], "valid/loss": [(4, 4.4)],
                                            "valid/bleu": [(4, 18.0)]}


@pytest.mark.parametrize("name", ["hyp.txt", "ref.txt", "transcript_ref.txt"])
@pytest.mark.parametrize("system", ["st", "cascade"])
def test_a_text_of_a_run_that_is_a_named_pipe_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                                       system: str) -> None:
    """33rd hostile pass: the baseline's hyp.txt (or a system's ref.txt) a named pipe was opened for the paired test
    and waited on for ever; it is named before any work, as results.json is."""
    for each, hyps in SYSTEMS.items():
        write_system(tmp_path, each, hyps, REFS)
    fifo = tmp_path / system / "decode_tst-COMMON" / name
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    assert main(["report", "--exp", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"sate report: error: {fifo}: a named pipe, not a text `sate evaluate` writes\n"
    assert not (tmp_path / "results.md").exists()
