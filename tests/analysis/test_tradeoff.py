"""`sate latency-plot`: BLEU against LAAL from `sate evaluate` results files, one line per policy and latency kind."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from sate.analysis.tradeoff import check_same_sentences, label_options, plot, read_run
from sate.cli import main
from sate.errors import SateError
from sate.files import real_path


def _results(path: Path, bleu: float, policy: str | None = None, laal: float = 0.0, laal_ca: float = 0.0,
             talks: bool = False) -> Path:
    results: dict = {"bleu": bleu, "chrf": 50.0}
    if policy is not None:
        results["stream"] = {"policy": policy, "chunk": 0.5,
                             "latency": {"sentences": 3, "al": laal - 0.1, "laal": laal, "al_ca": laal_ca - 0.1,
                                         "laal_ca": laal_ca}}
        if talks:
            results["stream"]["talks"] = 2
    path.mkdir(parents=True)
    (path / "results.json").write_text(json.dumps(results))
    return path


@pytest.mark.slow
def test_points_come_from_the_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = [_results(tmp_path / "a4", 20.0, "alignatt=4", 1.5, 1.9), _results(tmp_path / "a2", 15.0, "alignatt=2",
                                                                                 1.0, 1.3),
             _results(tmp_path / "w3", 12.0, "wait-k=3", 2.0, 2.6),
             _results(tmp_path / "t2", 14.0, "alignatt=2", 1.8, 2.4, talks=True),
             _results(tmp_path / "offline", 22.5)]
    offline = json.loads((tmp_path / "offline" / "results.json").read_text())
    (tmp_path / "offline" / "results.json").write_text(json.dumps({**offline, "bleu_ci": 1.5, "chrf_ci": 2.0}))
    png = tmp_path / "plots" / "tradeoff.png"
    assert main(["latency-plot", *map(str, paths), "--out", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    table = capsys.readouterr().out
    assert "| alignatt=2 | 0.5 | 15.0 | 50.0 | 0.90 | 1.00 | 1.20 | 1.30 |" in table
    assert "| offline (offline) | | 22.5 ± 1.5 | 50.0 ± 2.0 | | | | |" in table
    assert "| alignatt=2, whole talks | 0.5 | 14.0 | 50.0 |" in table

    lines = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
             for line in plot([read_run(p) for p in paths], tmp_path / "again.png").axes[0].get_lines()}
    assert lines["alignatt (0.5 s): LAAL"] == ([1.0, 1.5], [15.0, 20.0])  # in the order of latency
    assert lines["alignatt (0.5 s): computation-aware"] == ([1.3, 1.9], [15.0, 20.0])
    assert lines["wait-k (0.5 s): LAAL"] == ([2.0], [12.0])
    assert lines["alignatt (0.5 s, whole talks): LAAL"] == ([1.8], [14.0])
    assert lines["offline (offline)"][1] == [22.5, 22.5]


def test_bad_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    offline = _results(tmp_path / "offline", 22.5)
    assert main(["latency-plot", str(offline), "--out", str(tmp_path / "x.png")]) == 2
    # the file named (sixteenth hostile pass: a streaming run's results.json without its `stream` key was not)
    assert f"{offline}/results.json: no streaming run among them" in capsys.readouterr().err
    assert main(["latency-plot", str(tmp_path / "missing"), "--out", str(tmp_path / "x.png")]) == 2
    assert "missing: no results.json" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text('{"bleu": 3, "stream": {"policy": "alignatt"}}')
    assert main(["latency-plot", str(tmp_path / "bad.json"), "--out", str(tmp_path / "x.png")]) == 2
    assert "bad.json: 'stream' lacks" in capsys.readouterr().err
    os.mkfifo(tmp_path / "pipe")  # was "no results.json there", though something was
    assert main(["latency-plot", str(tmp_path / "pipe"), "--out", str(tmp_path / "x.png")]) == 2
    assert capsys.readouterr().err.strip().endswith("pipe: a named pipe, not a results file of `sate evaluate`")
    assert not (tmp_path / "x.png").exists()


@pytest.mark.parametrize(("raw", "message"), [
    (b'{"bleu": 1, "note": "caf\xe9"}', "not valid JSON ('utf-8' codec can't decode"),
    (b"[1, 2]", "expected a JSON object, got list"),
    (b'{"bleu": 1, "x": "' + b"a" * (1 << 20) + b'"}',  # fourteenth pass: read and parsed whole, whatever its size
     "1,048,596 bytes, far more than sate evaluate writes there: not its file"),
])
def test_a_results_file_that_is_not_utf8_json_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          raw: bytes, message: str) -> None:
    """A results.json in Latin-1 was a UnicodeDecodeError traceback."""
    (tmp_path / "results.json").write_bytes(raw)
    assert main(["latency-plot", str(tmp_path / "results.json"), "--out", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"results.json: {message}" in err, err


def test_the_plot_never_replaces_an_input_a_checkpoint_or_a_file_of_another_kind(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--out` was not checked at all: `--out RUN/results.json` replaced an input with a PNG, and so would
    `--out EXP/checkpoints/last.ckpt` the resume point; exit 0 both."""
    run = _results(tmp_path / "a4", 20.0, "alignatt=4", 1.5, 1.9)
    (tmp_path / "exp" / "checkpoints").mkdir(parents=True)
    (tmp_path / "exp" / "config.yaml").write_text("task: st\n")
    (tmp_path / "exp" / "checkpoints" / "last.ckpt").write_bytes(b"PK\x03\x04 a checkpoint")
    (tmp_path / "notes.txt").write_text("mine\n")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    for out, says in [(run / "results.json", "it is not a PNG image"),
                      (tmp_path / "exp" / "checkpoints" / "last.ckpt", "is a checkpoint folder"),
                      (tmp_path / "notes.txt", "it is not a PNG image"), (tmp_path, "is a directory")]:
        assert main(["latency-plot", str(run), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and f"--out {out}: " in err and says in err, err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize(("edit", "message"), [
    ({"bleu": float("nan")}, "bleu must be a finite number, got nan"),
    ({"bleu": True}, "no 'bleu'"),
    ({"latency": {"al": 1.0, "laal": float("inf"), "al_ca": 1.0, "laal_ca": 1.0}},
     "stream.latency.laal must be a finite number, got inf"),
    ({"bleu": -5}, "bleu must be from 0 to 100, got -5"),  # hand-edited, these were drawn and tabled as given
    ({"chrf": 1e308}, "chrf must be from 0 to 100, got 1e+308"),
    ({"stream": {"policy": "foo=3"}}, "unknown streaming policy 'foo'"),
    ({"stream": {"policy": "wait-k=-4"}}, "streaming policy 'wait-k=-4': the value must be at least 1"),
    ({"stream": {"chunk": -1}}, "stream chunk must be at least 0.05 and at most 120 seconds, got -1"),
    ({"stream": {"chunk": 1e9}}, "stream chunk must be at least 0.05 and at most 120 seconds, got 1e+09"),
    ({"stream": {"chunk": float("nan")}}, "stream.chunk must be a finite number, got nan"),
    # eleventh hostile pass: a text where a number goes was float()'s error holding all of it, `true` a latency of
    # 1.0, a `chrf` of "x" a blank cell; a long policy name was written out whole
    ({"stream": {"chunk": "x" * 100_000}}, "stream.chunk must be a finite number, got 'xxxxx"),
    ({"latency": {"al": True, "laal": 1.0, "al_ca": 1.0, "laal_ca": 1.0}}, "stream.latency.al must be a finite "
                                                                            "number, got True"),
    ({"latency": [1, 2]}, "'stream' lacks its latency"),
    # what `sate evaluate` writes when no sentence showed a word: it was "stream.latency.al must be a finite number,
    # got nan", a damaged file, which it was not (twenty-fifth hostile pass)
    ({"latency": {"sentences": 0, **dict.fromkeys(("al", "laal", "al_ca", "laal_ca"), float("nan"))}},
     "results.json: no sentence of this run showed a word (stream.latency.sentences is 0): it has no latency"),
    ({"latency": {"sentences": 0, **dict.fromkeys(("al", "laal", "al_ca", "laal_ca"), None)}},  # since the 33rd
     "results.json: no sentence of this run showed a word (stream.latency.sentences is 0): it has no latency"),
    ({"chrf": "x"}, "chrf must be a finite number or null, got 'x'"),
    ({"stream": {"policy": "f" * 100_000 + "=3"}}, "unknown streaming policy 'fffff"),
])
def test_a_point_that_cannot_be_drawn_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: dict,
                                                 message: str) -> None:
    """NaN or Infinity (which Python's JSON reads) gave a point drawn nowhere, and `true` a BLEU of 1, without a
    word."""
    run = _results(tmp_path / "a4", 20.0, "alignatt=4", 1.5, 1.9)
    results = json.loads((run / "results.json").read_text())
    if "latency" in edit:
        results["stream"]["latency"] = edit["latency"]
    elif "stream" in edit:
        results["stream"].update(edit["stream"])
    else:
        results.update(edit)
    (run / "results.json").write_text(json.dumps(results))
    assert main(["latency-plot", str(run), "--out", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and message in err and len(err) < 500, err


def test_runs_of_different_splits_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A wait-k run on dev and one on tst-COMMON were joined into one policy's line, and an offline run of another
    split drawn as its ceiling: BLEU of different sentences compared, exit 0 (eleventh hostile pass). A results
    file that names no split (written by hand) is not compared."""
    paths = {name: _results(tmp_path / name, 10.0, policy, 1.0, 1.2)
             for name, policy in (("dev2", "wait-k=2"), ("tst3", "wait-k=3"), ("offline", None), ("bare", "wait-k=4"))}
    for name, split in (("dev2", "dev"), ("tst3", "tst-COMMON"), ("offline", "tst-COMMON")):
        results = json.loads((paths[name] / "results.json").read_text())
        (paths[name] / "results.json").write_text(json.dumps({**results, "split": split}))
    png = tmp_path / "tradeoff.png"
    for given in (("dev2", "tst3"), ("tst3", "offline", "dev2")):
        assert main(["latency-plot", *(str(paths[name]) for name in given), "--out", str(png)]) == 2
        err = capsys.readouterr().err
        assert f"{paths['dev2'] / 'results.json'}" in err and "runs of different splits cannot share one plot" in err
        assert not png.exists()
    assert main(["latency-plot", *(str(paths[name]) for name in ("tst3", "offline", "bare")), "--out", str(png)]) == 0
    # a split that is no name (5, "") was taken for none: the runs went unchecked (fourteenth hostile pass)
    for split, says in ((5, "5"), ("", "''"), (["dev"], "['dev']")):
        results = json.loads((paths["bare"] / "results.json").read_text())
        (paths["bare"] / "results.json").write_text(json.dumps({**results, "split": split}))
        assert main(["latency-plot", str(paths["tst3"]), str(paths["bare"]), "--out", str(tmp_path / "y.png")]) == 2
        assert capsys.readouterr().err.strip().endswith(f"results.json: split must be the name of a split, got {says}")


@pytest.mark.slow
def test_runs_of_several_models_are_a_line_each(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two packs' wait-k runs on one split were joined into one line, as if one model's points (eleventh hostile
    pass): with runs of several models, each line and table row names its model; a '|' in a name is escaped."""
    paths = []
    for name, model, policy, laal in (("a2", "exp/st/pack", "wait-k=2", 1.0), ("a4", "exp/st/pack", "wait-k=4", 2.0),
                                      ("b2", "exp/e2e|x/pack", "wait-k=2", 1.5)):
        path = _results(tmp_path / name, 10.0 + laal, policy, laal, laal + 0.2)
        results = json.loads((path / "results.json").read_text())
        (path / "results.json").write_text(json.dumps({**results, "model": model}))
        paths.append(path)
    png = tmp_path / "tradeoff.png"
    assert main(["latency-plot", *map(str, paths), "--out", str(png)]) == 0
    table = capsys.readouterr().out
    assert "| exp/st/pack: wait-k=2 | 0.5 | 11.0 |" in table and "| exp/e2e\\|x/pack: wait-k=2 | 0.5 | 11.5 |" in table
    runs = [replace(read_run(p), named=True) for p in paths]
    drawn = plot(runs, tmp_path / "again.png").axes[0].get_lines()
    lines = {line.get_label(): list(line.get_xdata()) for line in drawn}
    assert lines["exp/st/pack: wait-k (0.5 s): LAAL"] == [1.0, 2.0]
    assert lines["exp/e2e|x/pack: wait-k (0.5 s): LAAL"] == [1.5]
    assert main(["latency-plot", *map(str, paths[:2]), "--out", str(png)]) == 0  # one model: named as before
    assert "| wait-k=2 | 0.5 | 11.0 |" in capsys.readouterr().out


def test_a_run_given_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Thirteenth hostile pass: one run given as its folder and as its results.json (or through a link to its
    folder) was two rows of the table and two points, exit 0."""
    run = _results(tmp_path / "w2", 10.0, "wait-k=2", 1.0, 1.2)
    other = _results(tmp_path / "w3", 11.0, "wait-k=3", 1.5, 1.7)
    (tmp_path / "link").symlink_to(run)
    png = tmp_path / "tradeoff.png"
    for given in ((run, run / "results.json"), (run, other, tmp_path / "link")):
        assert main(["latency-plot", *map(str, given), "--out", str(png)]) == 2
        err = capsys.readouterr().err
        assert f"{given[-1]}" in err and f"the results file {run / 'results.json'} is given already" in err, err
        assert not png.exists()
    assert main(["latency-plot", str(run), str(other), "--out", str(png)]) == 0


def test_runs_of_other_sentences_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty-third hostile pass: tst-COMMON of two data directories (or of a manifest cut since) was one split name,
    so a wait-k run of each was joined into one line, BLEU of different sentences compared, exit 0. The references
    `sate evaluate` writes beside each run tell; a results file alone (no ref.txt) is not compared."""
    paths = {name: _results(tmp_path / name, 10.0, policy, 1.0, 1.2)
             for name, policy in (("w1", "wait-k=1"), ("w2", "wait-k=2"), ("offline", None), ("bare", "wait-k=3"))}
    for name, refs in (("w1", "Guten Tag.\nDanke.\n"), ("w2", "Guten Tag.\n"), ("offline", "Guten Tag.\nDanke.\n")):
        (paths[name] / "ref.txt").write_text(refs)
        results = json.loads((paths[name] / "results.json").read_text())
        (paths[name] / "results.json").write_text(json.dumps({**results, "split": "tst-COMMON"}))
    png = tmp_path / "tradeoff.png"
    for given in (("w1", "w2"), ("offline", "bare", "w2")):
        assert main(["latency-plot", *(str(paths[name]) for name in given), "--out", str(png)]) == 2
        err = capsys.readouterr().err
        assert f"{paths['w2'] / 'ref.txt'} differs from {paths[given[0]] / 'ref.txt'}: the runs decoded different " \
               "sentences" in err, err
        assert not png.exists()
    assert main(["latency-plot", *(str(paths[name]) for name in ("w1", "offline", "bare")), "--out", str(png)]) == 0


@pytest.mark.slow
def test_runs_of_other_decoding_options_are_told_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty-third hostile pass: a policy decoded with `--beam 1` and with the pack's beam 5 (the two kinds of rows of
    docs/inference.md's table) was one line through two points labelled 1, and two table rows 'wait-k=1' that nothing
    told apart, exit 0. The options that differ now name the lines and rows; options alike are not named."""
    paths = []
    for name, policy, beam, laal in (("g1", "wait-k=1", 1, 1.0), ("b1", "wait-k=1", 5, 1.1),
                                     ("b2", "wait-k=2", 5, 1.6)):
        path = _results(tmp_path / name, 10.0 + laal, policy, laal, laal + 0.2)
        results = json.loads((path / "results.json").read_text())
        (path / "results.json").write_text(json.dumps({**results, "decode": {"beam": beam, "lenpen": 1.0}}))
        paths.append(path)
    assert main(["latency-plot", *map(str, paths), "--out", str(tmp_path / "tradeoff.png")]) == 0
    table = capsys.readouterr().out
    assert "| wait-k=1, beam 1 | 0.5 | 11.0 |" in table and "| wait-k=1, beam 5 | 0.5 | 11.1 |" in table, table
    assert "| wait-k=2, beam 5 | 0.5 | 11.6 |" in table and "lenpen" not in table
    runs = label_options([read_run(p) for p in paths])
    drawn = plot(runs, tmp_path / "again.png").axes[0].get_lines()
    lines = {line.get_label(): list(line.get_xdata()) for line in drawn}
    assert lines["wait-k (0.5 s, beam 1): LAAL"] == [1.0]
    assert lines["wait-k (0.5 s, beam 5): LAAL"] == [1.1, 1.6]
    assert main(["latency-plot", *map(str, paths[1:]), "--out", str(tmp_path / "same.png")]) == 0
    assert "| wait-k=1 | 0.5 | 11.1 |" in capsys.readouterr().out  # one beam among them: named as before


@pytest.mark.slow
def test_an_offline_run_of_another_model_is_named_by_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Twenty-third hostile pass: the offline run of one pack beside the streamed runs of another was drawn as their
    ceiling, 'offline (offline)' beside 'wait-k=1', nothing saying it was another model's BLEU, exit 0."""
    paths = []
    for name, model, policy in (("offline", "packs/big", None), ("w1", "packs/st", "wait-k=1")):
        path = _results(tmp_path / name, 20.0, policy, 1.0, 1.2)
        results = json.loads((path / "results.json").read_text())
        (path / "results.json").write_text(json.dumps({**results, "model": model}))
        paths.append(path)
    assert main(["latency-plot", *map(str, paths), "--out", str(tmp_path / "tradeoff.png")]) == 0
    table = capsys.readouterr().out
    assert "| offline (packs/big: offline) | | 20.0 |" in table and "| packs/st: wait-k=1 | 0.5 | 20.0 |" in table
    labels = [line.get_label() for line in plot([replace(read_run(p), named=True) for p in paths],
                                                  tmp_path / "again.png").axes[0].get_lines()]
    assert "offline (packs/big: offline)" in labels
    results = json.loads((paths[0] / "results.json").read_text())
    (paths[0] / "results.json").write_text(json.dumps({**results, "model": "packs/st"}))
    assert main(["latency-plot", *map(str, paths), "--out", str(tmp_path / "tradeoff.png")]) == 0
    assert "| offline (offline) | | 20.0 |" in capsys.readouterr().out  # one model: named as before
    # one pack named two ways (evaluated from the project's root and from elsewhere) is one model (the review)
    (tmp_path / "packs" / "st").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    (paths[0] / "results.json").write_text(json.dumps({**results, "model": str(tmp_path / "packs" / "st")}))
    assert main(["latency-plot", *map(str, paths), "--out", str(tmp_path / "tradeoff.png")]) == 0
    table = capsys.readouterr().out
    assert "| offline (offline) | | 20.0 |" in table and "| wait-k=1 | 0.5 | 20.0 |" in table, table


def test_an_offline_run_of_whole_talks_is_named_as_such(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`evaluate --talks` without --stream (whole talks, VAD segments re-segmented) and an offline run of the
    reference's sentences were both `offline (FOLDER)`, told apart by their folders' names alone (twenty-fourth
    hostile pass): the whole-talk one says so, as a streamed run over whole talks does."""
    talks = _results(tmp_path / "a", 18.0)
    results = json.loads((talks / "results.json").read_text())
    (talks / "results.json").write_text(json.dumps({**results, "talks": 8}))
    _results(tmp_path / "b", 20.0)
    _results(tmp_path / "w", 15.0, "wait-k=1", 1.0, 1.2)
    assert main(["latency-plot", str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path / "w"),
                 "--out", str(tmp_path / "p.png")]) == 0
    table = capsys.readouterr().out
    assert "| offline (a, whole talks) | | 18.0 |" in table and "| offline (b) | | 20.0 |" in table, table


@pytest.mark.slow
def test_a_model_named_at_great_length_leaves_the_plot_its_room(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A results.json naming a model of 100,000 characters (the wide run of the reads harness, twenty-seventh pass):
    its legend label left the axes no room and matplotlib warned that the layout collapsed. A label keeps its two
    ends around "…", 80 characters in all; the table keeps the name as it is."""
    import warnings

    paths = []
    for name, model in (("a", "exp/st/pack"), ("b", "m" * 50 + "x" * 100_000 + "z" * 50)):
        path = _results(tmp_path / name, 10.0, "wait-k=2", 1.0, 1.2)
        results = json.loads((path / "results.json").read_text())
        (path / "results.json").write_text(json.dumps({**results, "model": model}))
        paths.append(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert main(["latency-plot", *map(str, paths), "--out", str(tmp_path / "t.png")]) == 0
    assert "x" * 100_000 in capsys.readouterr().out
    labels = [line.get_label() for line in plot([replace(read_run(p), named=True) for p in paths],
                                                  tmp_path / "again.png").axes[0].get_lines()]
    long = next(label for label in labels if label.startswith("m") and label.endswith(": LAAL"))
    assert long.startswith(f"{'m' * 39}…") and long.endswith("z: wait-k (0.5 s): LAAL") and len(long) == 79 + 6


@pytest.mark.slow
def test_runs_on_other_devices_or_repeated_are_told_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty-eighth hostile pass: a policy streamed on a GPU and on the CPU (the computation-aware latency is the
    device's) was one line, its dashed half zigzagging between the devices' points, and two rows 'alignatt=4' that
    nothing told apart, exit 0; so was one run repeated into two folders. The device now names lines and rows where
    it differs, and runs alike in everything by their folders."""
    paths = {}
    for name, policy, device, laal_ca in (("gpu4", "alignatt=4", "cuda:0", 1.7), ("cpu4", "alignatt=4", "cpu", 3.9),
                                          ("gpu2", "alignatt=2", "cuda", 1.2), ("cpu2", "alignatt=2", "cpu", 2.8)):
        paths[name] = _results(tmp_path / name, 15.0 if policy.endswith("2") else 20.0, policy,
                               1.0 if policy.endswith("2") else 1.5, laal_ca)
        results = json.loads((paths[name] / "results.json").read_text())
        (paths[name] / "results.json").write_text(json.dumps({**results, "device": device}))
    runs = label_options([read_run(paths[name]) for name in ("gpu4", "cpu4", "gpu2", "cpu2")])
    lines = {line.get_label(): list(line.get_xdata()) for line in plot(runs, tmp_path / "p.png").axes[0].get_lines()}
    assert lines["alignatt (0.5 s, device cuda:0): computation-aware"] == [1.2, 1.7], lines
    assert lines["alignatt (0.5 s, device cpu): computation-aware"] == [2.8, 3.9], lines  # the default GPU is cuda:0
    (tmp_path / "again4").mkdir()
    (tmp_path / "again4" / "results.json").write_bytes((paths["gpu4"] / "results.json").read_bytes())
    assert main(["latency-plot", str(paths["gpu4"]), str(tmp_path / "again4"), str(paths["gpu2"]),
                 "--out", str(tmp_path / "again.png")]) == 0
    table = capsys.readouterr().out
    assert f"| alignatt=4, run {paths['gpu4']} |" in table and f"| alignatt=4, run {tmp_path / 'again4'} |" in table
    assert "| alignatt=2 | 0.5 |" in table, table  # alone of its name: named as before


@pytest.mark.slow
def test_a_chunk_size_sweep_is_a_line_per_chunk(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/inference.md's two streaming.sh runs (`--chunk 1.0`, then `--chunk 0.5`, one model, one policy, one
    device) are a line per chunk size with a point per value, rows named as before: the twenty-eighth pass's naming
    of repeated runs by their folders had split them into one-point lines named 'run eval/wait-k=1-0.5s'."""
    paths = []
    for chunk in (0.5, 1.0):
        for value in (1, 2, 3):
            path = _results(tmp_path / f"wait-k={value}-{chunk:g}s", 10.0 + value, f"wait-k={value}", value * chunk,
                            value * chunk + 0.3)
            results = json.loads((path / "results.json").read_text())
            results["stream"]["chunk"] = chunk
            (path / "results.json").write_text(json.dumps({**results, "device": "cpu"}))
            paths.append(path)
    lines = {line.get_label(): list(line.get_xdata())
             for line in plot(label_options([read_run(p) for p in paths]), tmp_path / "p.png").axes[0].get_lines()}
    assert lines["wait-k (0.5 s): LAAL"] == [0.5, 1.0, 1.5], lines
    assert lines["wait-k (1 s): LAAL"] == [1.0, 2.0, 3.0], lines
    assert main(["latency-plot", *map(str, paths), "--out", str(tmp_path / "again.png")]) == 0
    table = capsys.readouterr().out
    assert "| wait-k=2 | 0.5 |" in table and "| wait-k=2 | 1 |" in table and ", run " not in table, table


def test_a_results_file_without_a_device_is_not_device_unknown(tmp_path: Path) -> None:
    """A results file that records no device (written by hand) beside ones that do was 'wait-k=1, device ?': it
    differs from no device; beside runs of two devices it is 'device not recorded'."""
    paths = {}
    for name, value, device in (("old1", 1, None), ("new2", 2, "cuda:0"), ("cpu2", 2, "cpu")):
        paths[name] = _results(tmp_path / name, 10.0 + value, f"wait-k={value}", value, value + 0.3)
        if device is not None:
            results = json.loads((paths[name] / "results.json").read_text())
            (paths[name] / "results.json").write_text(json.dumps({**results, "device": device}))
    one = label_options([read_run(paths[name]) for name in ("old1", "new2")])
    assert [run.name for run in one] == ["wait-k=1", "wait-k=2"]
    two = label_options([read_run(paths[name]) for name in ("old1", "new2", "cpu2")])
    assert [run.name for run in two] == ["wait-k=1, device not recorded", "wait-k=2, device cuda:0",
                                         "wait-k=2, device cpu"]


def _sweep(tmp_path: Path) -> list[Path]:
    """Two packs, each swept over three policies at two chunk sizes: twelve lines of two points each."""
    paths = []
    for m, model in enumerate(("packs/st", "packs/shrink")):
        for p, policy in enumerate(("wait-k", "alignatt", "local-agreement")):
            for chunk in (0.5, 1.0):
                for value in (2, 4):
                    laal = 1.0 + 0.3 * value + chunk + 0.1 * p + 0.2 * m
                    path = _results(tmp_path / f"{m}{policy}{value}-{chunk:g}", 10.0 + value - m,
                                    f"{policy}={value}", laal, laal + 0.3)
                    results = json.loads((path / "results.json").read_text())
                    results["stream"]["chunk"] = chunk
                    (path / "results.json").write_text(json.dumps({**results, "model": model}))
                    paths.append(path)
    return paths


@pytest.mark.slow
def test_more_lines_than_the_colour_cycle_have_a_colour_each(tmp_path: Path) -> None:
    """Matplotlib's cycle has ten colours and C10 is C0: two packs swept over three policies at two chunk sizes
    (twelve lines) drew 'packs/st: alignatt (0.5 s)' and 'packs/shrink: wait-k (0.5 s)' in one colour and one style,
    exit 0 (thirtieth hostile pass). Every line has its own colour; ten or fewer keep the cycle's."""
    from matplotlib.colors import to_rgba

    from sate.analysis.palette import series_colours

    runs = [replace(read_run(p), named=True) for p in _sweep(tmp_path)]
    laal = [line for line in plot(runs, tmp_path / "p.png").axes[0].get_lines()
            if line.get_label().endswith(": LAAL")]
    assert len(laal) == 12 and len({to_rgba(line.get_color()) for line in laal}) == 12
    for count in (3, 10, 11, 20, 21, 40):
        assert len({to_rgba(colour) for colour in series_colours(count)}) == count
    assert series_colours(3) == ["C0", "C1", "C2"]


@pytest.mark.slow
def test_a_long_legend_is_beside_the_lines_and_whole(tmp_path: Path) -> None:
    """Twelve lines are 24 legend entries: drawn over the axes, the legend hid the lines and the x axis, and at a
    few more it ran off the figure, lines drawn that it did not name (thirtieth hostile pass). It is drawn beside the
    axes, the figure grown to hold it; a short one stays inside."""
    runs = [replace(read_run(p), named=True) for p in _sweep(tmp_path)]
    for kept in (runs, runs[:4]):
        fig = plot(kept, tmp_path / "p.png")
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ax = fig.axes[0]
        legend = ax.get_legend().get_window_extent(renderer)
        inside = fig.bbox.x0 <= legend.x0 and legend.x1 <= fig.bbox.x1 and fig.bbox.y0 <= legend.y0 \
            and legend.y1 <= fig.bbox.y1
        assert inside, (legend, fig.bbox)
        assert (legend.x0 >= ax.get_window_extent(renderer).x1) == (len(kept) > 4)


@pytest.mark.slow
def test_two_offline_ceilings_are_named_on_the_plot(tmp_path: Path) -> None:
    """Two packs' offline runs beside their streamed runs (docs/inference.md: two models' trade-offs compared) were two
    grey dotted lines alike, which the legend could not tell apart: nothing said which ceiling was whose, exit 0
    (thirtieth hostile pass). Each is named at its right end; a lone ceiling is as before."""
    paths = []
    for name, model, bleu, policy in (("st", "packs/st", 22.0, None), ("shrink", "packs/shrink", 18.0, None),
                                      ("w2", "packs/st", 15.0, "wait-k=2"), ("s2", "packs/shrink", 12.0, "wait-k=2")):
        path = _results(tmp_path / name, bleu, policy, 1.0, 1.2)
        results = json.loads((path / "results.json").read_text())
        (path / "results.json").write_text(json.dumps({**results, "model": model}))
        paths.append(path)
    runs = [replace(read_run(p), named=True) for p in paths]
    texts = {(text.get_text(), text.xy[1]) for text in plot(runs, tmp_path / "p.png").axes[0].texts}
    assert {("packs/st: st", 22.0), ("packs/shrink: shrink", 18.0)} <= texts, texts
    alone = {text.get_text() for text in plot(runs[:1] + runs[2:], tmp_path / "q.png").axes[0].texts}
    assert "packs/st: st" not in alone


def test_links_to_runs_gathered_in_one_folder_are_compared_and_named_apart(tmp_path: Path) -> None:
    """Thirty-first hostile pass: links to runs' results gathered in one folder (plots/w2.json -> ev/w2/results.json)
    had no ref.txt beside them, so an en-de and an en-zh run of split dev were drawn as one plot, exit 0, and two
    runs alike were both rows 'wait-k=2, run plots'. The references beside each link's file are compared, and a file
    not called results.json names its run."""
    paths = {name: _results(tmp_path / name, 10.0, "wait-k=2", 1.0, 1.2) for name in ("de", "zh", "de_again")}
    for name, refs in (("de", "Guten Tag.\n"), ("zh", "你好。\n"), ("de_again", "Guten Tag.\n")):
        (paths[name] / "ref.txt").write_text(refs, encoding="utf-8")
    plots = tmp_path / "plots"
    plots.mkdir()
    for name in paths:
        (plots / f"{name}.json").symlink_to(paths[name] / "results.json")
    with pytest.raises(SateError, match=f"{real_path(paths['zh'])}/ref.txt differs from {real_path(paths['de'])}/"):
        check_same_sentences([read_run(plots / f"{name}.json") for name in ("de", "zh")])
    runs = [read_run(plots / f"{name}.json") for name in ("de", "de_again")]
    check_same_sentences(runs)
    assert [run.name for run in label_options(runs)] == [f"wait-k=2, run {plots / 'de'}",
                                                         f"wait-k=2, run {plots / 'de_again'}"]
