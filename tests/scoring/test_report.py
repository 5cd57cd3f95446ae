"""`sate report`: one row per system and split, with confidence intervals and p-values against the baseline."""

from __future__ import annotations

import json
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


def test_systems_on_other_references_are_not_compared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_system(tmp_path, "st", SYSTEMS["st"], REFS)
    write_system(tmp_path, "cascade", SYSTEMS["cascade"], REFS[::-1])
    assert main(["report", "--exp", str(tmp_path)]) == 2
    assert "were not evaluated on the same references" in capsys.readouterr().err


@pytest.mark.parametrize(("name", "text", "message"), [
    ("results", "[1]", "results.json: expected a JSON object, got list"),
    ("results", '{"bleu": "high"}', "results.json: bleu must be a number or null, got 'high'"),
    ("results", '{"bleu": 1, "signature": "x"}', "results.json: signature must be an object"),
    ("time", "garbage", "train_time.json: not valid JSON"),
    ("time", "{}", "train_time.json: seconds must be a number >= 0, got None"),
    ("time", '{"seconds": "x"}', "train_time.json: seconds must be a number >= 0, got 'x'"),
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


def test_results_cannot_rename_their_system(tmp_path: Path) -> None:
    """A "system" key in results.json replaced the folder's name in the table without a word."""
    folder = tmp_path / "exp" / "st" / "decode_tst-COMMON"
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps({"bleu": 2.0, "system": "other", "split": "dev"}))
    assert main(["report", "--exp", str(tmp_path / "exp")]) == 0
    assert "| st | tst-COMMON | 2.0 |" in (tmp_path / "exp" / "results.md").read_text()
