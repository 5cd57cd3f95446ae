"""Collect evaluation results of an experiment into one markdown table: `sate report --exp EXP`.

Every system directory under EXP that holds `decode_<split>/results.json` (written by `sate evaluate`)
becomes a row, with its training time from `train_time.json` (written by `sate train`) where it has one.
BLEU and chrF carry their 95% bootstrap confidence interval; each system's difference to the baseline
system (`--baseline`, SATE's `st` by default) gets a paired bootstrap p-value (sacreBLEU's test), so the
table says which differences are real. `--curves PNG` also draws the learning curves of every trained
system from its CSV logs.
"""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path

from sate import layout
from sate.analysis.palette import series_colours
from sate.data.manifest import check_split_names, csv_rows, is_split_name
from sate.errors import SateError, one_line, plot_text, shell_word, shown, table_cell
from sate.files import (
    check_journal_place,
    given_twice,
    is_stream,
    not_a_directory,
    not_a_file,
    read_json,
    replace_together,
    what_is_there,
)
from sate.numbers import is_int64, is_number
from sate.scoring.degeneration import length_ratio, length_unit, share_text
from sate.scoring.score import normalize_words, read_lines
from sate.scoring.significance import paired_bootstrap, seed_note
from sate.targets import (
    TEXT_NAMES,
    check_named_kind,
    check_not_input,
    check_output,
    check_own_files,
    evaluate_results,
    file_name,
    metric_logs,
    read_name,
    same_file,
    trained_task,
    unused_folder,
)
from sate.train.train_time import MAX_TRAIN_SECONDS


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


# The scores a row shows: each a finite number or null in results.json (`sate evaluate` writes them).
DEFAULT_BASELINE = "st"  # SATE's own system, in the recipes
SCORES = ("bleu", "bleu_ci", "chrf", "chrf_ci", "ter", "wer", "length_ratio", "loop_share")
# Where each score can lie (None: unbounded): TER and WER pass 100 on long outputs, a share is a fraction.
SCORE_RANGES = {"bleu": (0, 100), "bleu_ci": (0, 100), "chrf": (0, 100), "chrf_ci": (0, 100), "ter": (0, None),
                "wer": (0, None), "length_ratio": (0, None), "loop_share": (0, 1)}


SCORE_SLACK = 1e-9


def check_score_range(path: Path, key: str, value: float) -> None:
    """Refuse a score (a number) outside where `SCORE_RANGES` says it can lie, naming the file and the key: a
    hand-edited BLEU of -5 was tabled and drawn as given."""
    low, high = SCORE_RANGES[key]
    # within float rounding of a bound: sacreBLEU's BLEU of a perfect match is 100.00000000000004, and a results.json
    # `sate evaluate` wrote for it was refused by `sate report` and `latency-plot` (twenty-fourth hostile pass)
    if not (low - SCORE_SLACK <= value and (high is None or value <= high + SCORE_SLACK)):
        where = f"at least {low}" if high is None else f"from {low} to {high}"
        raise SateError(f"{path}: {key} must be {where}, got {shown(value)}")


def read_results(path: Path) -> dict:
    """A `sate evaluate` results.json, checked: a list, a string or a score that is not a number was a traceback
    (TypeError, or a format error while the table was written)."""
    result = read_json(path, (layout.RESULTS_MAX_BYTES, "sate evaluate"))
    if not any(key in result for key in SCORES):  # another JSON record copied as results.json (a vocab.json, a
        # cmvn.json) was tabled as a row of dashes, exit 0 (twenty-second hostile pass)
        raise SateError(f"{path}: none of sate evaluate's scores ({', '.join(SCORES[:3])} ...): another JSON record, "
                        f"not an evaluation's {layout.RESULTS}")
    for key in SCORES:
        if result.get(key) is None:
            continue
        if not is_number(result[key]):
            raise SateError(f"{path}: {key} must be a number or null, got {shown(result[key])}")
        check_score_range(path, key, result[key])
    signature = result.get("signature")
    if signature is not None and not (isinstance(signature, dict) and isinstance(signature.get("bleu"), str)):
        raise SateError(f"{path}: signature must be an object with the BLEU signature under bleu")
    if signature is not None and not (signature["bleu"].isprintable() and "`" not in signature["bleu"]):
        # the table quotes it on one line of code: a line break wrote lines of its own into results.md
        raise SateError(f"{path}: signature.bleu must be sacreBLEU's one-line signature, got "
                        f"{shown(signature['bleu'])}")
    return result




def train_minutes(system: Path) -> float | None:
    """The training time `sate train` recorded in SYSTEM/train_time.json, in minutes, or None without a record."""
    path = system / layout.TRAIN_TIME
    not_a_file(path, "the training time `sate train` records")  # a named pipe, a folder: tabled without it, exit 0
    if not path.is_file():
        return None
    seconds = read_json(path, (1 << 16, "sate train")).get("seconds")
    if not is_number(seconds) or not 0 <= seconds <= MAX_TRAIN_SECONDS:  # 1e300 was a 300-digit cell, exit 0
        raise SateError(f"{path}: seconds must be a number from 0 to {MAX_TRAIN_SECONDS:.0e}, got {shown(seconds)} "
                        "(delete the file to report the system without its training time)")
    return seconds / 60


# The texts beside a results.json that the report reads (`inputs`): the scores checked, the paired tests
EVALUATED_TEXTS = ("hyp.txt", "ref.txt", "transcript_ref.txt")


def _not_a_text(path: Path) -> None:
    """Refuse what is not a regular file at a text beside a tabled results.json (`not_a_file`). A broken link is a
    file gone to its user (its target removed to save room), which the report tables untested: its line says to
    remove the link, where it named the link alone (review33r)."""
    kind = what_is_there(path)
    if kind is None:
        return
    untested = "its WER not compared" if path.name == "transcript_ref.txt" else "untested"
    way = (f": remove the link to table the system as one whose text is gone ({untested}), or restore the file it "
           "leads to") if kind.startswith("a broken symlink") else ""
    raise SateError(f"{path}: {kind}, not a text `sate evaluate` writes{way}")


def collect(exp: Path, splits: list[str]) -> list[dict]:
    found = []
    for system in sorted(p for p in exp.iterdir() if p.is_dir()):
        for split in splits:
            path = system / f"decode_{split}" / layout.RESULTS
            not_a_file(path, "a results file of `sate evaluate`")  # a named pipe was skipped as missing
            if path.is_file():
                for name in EVALUATED_TEXTS:  # a named pipe there was opened and waited on for ever (33rd pass)
                    _not_a_text(path.parent / name)
                found.append((system, split, path))
    twice = given_twice(path for _, _, path in found)  # a system linked in twice was two rows, the one p = 1.000
    if twice is not None:
        raise SateError(f"{twice[1]}: the same results file as {twice[0]} (through a link); a system's results are "
                        "tabled once: remove the second link")
    # the folder names the system and the split, whatever the file holds; p-values are the report's own (a p_bleu
    # in the file was tabled as one, 'abc' a ValueError traceback)
    rows = []
    for system, split, path in found:
        result = read_results(path)
        # `sate evaluate --split dev --out EXP/st/decode_tst-COMMON` (the --split changed, the --out copied) was
        # tabled as tst-COMMON, exit 0 (twenty-second hostile pass): a folder named for another split of the data
        # must hold that split (a label of one's own, decode_dev-beam1, is no split)
        data = result.get("data")
        if isinstance(result.get("split"), str) and result["split"] != split and isinstance(data, str) \
                and os.path.isfile(Path(data) / f"{split}.jsonl"):  # False where it may not be looked in
            raise SateError(f"{path}: an evaluation of split {shown(result['split'])} in a folder named for "
                            f"{split}; evaluate {split} into it again, or move it to decode_{result['split']}")
        _of_the_experiment(system, path, result, split)
        evaluated = result.get("split") if isinstance(result.get("split"), str) else None  # the folder's label aside
        rows.append({**result, "system": system.name, "split": split, "train_minutes": train_minutes(system),
                     "p_bleu": None, "p_chrf": None, "evaluated_split": evaluated})
    return rows


def _of_the_experiment(system: Path, path: Path, result: dict, split: str) -> None:
    """Refuse the results of a model of another kind in an experiment's decode folder (its config.yaml's task): a
    cascade in exp/st/decode_tst-COMMON (written before `sate evaluate` refused it, or copied there) was tabled as
    st's, the baseline, and an ST pack's in exp/asr as an asr row with BLEU (31st hostile pass). An ASR or MT
    experiment may hold the cascade its pack is part of; results that name no mode (written by hand) are tabled."""
    task, mode = trained_task(system), result.get("mode")
    if task is None or not isinstance(mode, str):
        return
    if mode != task and not (mode == "cascade" and task != "st"):
        # the advice was exp/MODE/decode_<split>, another experiment's own folder: a move nested it in that one's
        # results (or tabled it as that one's), and exp/cascade is the recipes' (review31r)
        own = unused_folder(system.parent, mode)
        raise SateError(f"{path}: the results of {shown(mode)} (its mode) in the {task} experiment "
                        f"{one_line(str(system))}: the table would show them as {table_cell(system.name)}'s own; "
                        f"evaluate {table_cell(system.name)}'s pack into it again, or move them to a folder of their "
                        f"own (mkdir {shell_word(str(own))} && mv {shell_word(str(path.parent))} "
                        f"{shell_word(str(own))}/)")


def _nothing_to_report(exp: Path, splits: list[str], given: Path | None = None) -> str:
    """Why --exp gave no row (GIVEN: the --exp given, where EXP is the folder of the results.json it names). One
    system's experiment, or one decoding's folder, given for the folder of systems was told to "run `sate evaluate`
    first" beside its results; a split spelt another way, the same."""
    def decoded(system: Path) -> set[str]:  # for the message alone: an unlistable folder decoded nothing here
        return {folder.name.removeprefix("decode_") for folder in system.glob("decode_*")
                if (folder / layout.RESULTS).is_file()}

    if decoded(exp):
        return (f"--exp {exp}: one system's experiment (its decode_<split> folders are here); --exp takes the folder "
                f"that holds one experiment per system ({exp.parent})")
    if (exp / layout.RESULTS).is_file() and exp.name.startswith("decode_"):
        return (f"--exp {exp}: one decoding's folder (`sate evaluate --out`); --exp takes the folder that holds one "
                f"experiment per system ({exp.parent.parent})")
    splits_there = sorted(set().union(*(decoded(system) for system in exp.iterdir() if system.is_dir())))
    runs = _evaluate_folders(exp)
    if runs and not splits_there:  # eval/NAME/SPLIT (evaluate's default --out) or eval/offline (one's own --out)
        return f"--exp {given or exp}: " + _move_advice(runs, splits)
    return (f"{exp}: no decode_<split>/results.json for splits {' '.join(splits)} " +
            (f"(its systems decoded: {', '.join(splits_there)})" if splits_there else "(run `sate evaluate` first)"))


def _move_advice(runs: list[Path], splits: list[str]) -> str:
    """The mkdir and mv that make one of RUNS (`sate evaluate` folders) a system's decode_<split>, and the report
    of them, as commands that work as printed: the system is named from the folder's absolute path (a relative
    --exp of one part, `tst-COMMON` or `.`, gave `ROOT/` and `mv .`), paths are quoted (`my exp` was split in two),
    a run that holds the current directory is named by its absolute path with ROOT beside it, and --splits is kept
    (the report of a dev run said "no ... for splits tst-COMMON"; twenty-seventh hostile pass)."""
    def split_of(run: Path) -> str:
        split = read_json(run / layout.RESULTS).get("split")
        return split if isinstance(split, str) and is_split_name(split) else run.name

    run = next((run for run in runs if split_of(run) in splits), runs[0])  # an example of a split asked for
    split, absolute = split_of(run), Path(os.path.abspath(run))
    system = absolute.parent.name if absolute.name == split else absolute.name
    if absolute.name.startswith(f"{split}-stream-") or absolute.name == f"{split}-talks":  # evaluate's name for a
        # streamed or whole-talk run: the system named tst-COMMON-talks read as a split; whose run it is, said
        system = f"{absolute.parent.name}-{absolute.name.removeprefix(f'{split}-')}"
    root = Path("ROOT")
    if Path.cwd() == absolute or absolute in Path.cwd().parents:  # `mv .` is refused, ROOT/ would be in the run
        run, root = absolute, absolute.parent / "ROOT"
    report_splits = splits if split in splits else [split]
    report = f"sate report --exp {shell_word(str(root))}" + (
        "" if report_splits == ["tst-COMMON"] else f" --splits {' '.join(map(shell_word, report_splits))}")
    runs_there = f"{len(runs)} `sate evaluate` folders (such as {run})" if len(runs) > 1 else \
        f"a `sate evaluate` folder ({run})"
    return (f"{runs_there}, not decode_<split> folders of systems, which the report tables: put each in its system's "
            f"folder under one root (mkdir -p {shell_word(str(root / system))} && mv {shell_word(str(run))} "
            f"{shell_word(str(root / system / f'decode_{split}'))}), then {report}")


def _evaluate_folders(exp: Path) -> list[Path]:
    """The folders of `sate evaluate` runs at EXP, in it or a level below that are not named decode_<split>: its
    default --out, eval/NAME/SPLIT. `sate report --exp eval` of them was told to "run `sate evaluate` first", and
    --exp eval/NAME/SPLIT to take eval as the folder of systems, which gave that line again (27th hostile pass)."""
    folders = [exp, *sorted(exp.glob("*")), *sorted(exp.glob("*/*"))]
    return [folder for folder in folders if not folder.name.startswith("decode_")
            and evaluate_results(folder / layout.RESULTS)]


def inputs(exp: Path, rows: list[dict]) -> list[Path]:
    """Every file the report reads: each row's results, hypotheses, references and training time, and the logs."""
    systems = sorted({exp / r["system"] for r in rows} | {p for p in exp.iterdir() if (p / "logs").is_dir()})
    found = [exp / r["system"] / f"decode_{r['split']}" / name for r in rows
             for name in (layout.RESULTS, *EVALUATED_TEXTS)]
    return found + [p for s in systems for p in (s / layout.TRAIN_TIME, *metric_logs(s))]


def _hypotheses(folder: Path, refs: list[str]) -> list[str]:
    """FOLDER/hyp.txt, one line per reference of FOLDER/ref.txt, or a `SateError` naming both."""
    hyps = read_lines(folder / "hyp.txt")
    if len(hyps) != len(refs):
        raise SateError(f"{folder / 'hyp.txt'}: {len(hyps)} lines for the {len(refs)} of {folder / 'ref.txt'}")
    return hyps


def _unversioned(signature: str) -> str:
    """A sacreBLEU signature without its version field: 2.x versions score 13a BLEU alike."""
    return "|".join(field for field in signature.split("|") if not field.startswith("version:"))


BLEU_DRIFT = 0.05  # below the table's precision: another sacreBLEU 2.x scores the same files the same


def check_scored_files(exp: Path, rows: list[dict]) -> None:
    """Each translating row's hyp.txt and ref.txt are still the files its results.json scored (their BLEU is its
    ``bleu``): the table's BLEU comes from the results, its p-values and the references' check from the files, so a
    file edited after the run (hypotheses post-processed, references swapped for another version) gave a row whose
    BLEU and p-value are of two texts, exit 0: a system's BLEU of 7.2 was "p = 1.000" against the baseline whose
    outputs its hyp.txt now held (twenty-fifth hostile pass). Rows without the two files (older runs) are tabled
    as before. The length ratio of a Chinese or Japanese row made before it counted characters is counted again
    from them, as newer rows count it."""
    from sacrebleu.metrics import BLEU  # slow: sacrebleu (0.3 s)

    for r in rows:
        folder = exp / r["system"] / f"decode_{r['split']}"
        if r.get("bleu") is None or not all((folder / name).is_file() for name in ("hyp.txt", "ref.txt")):
            continue
        hyps, refs = read_lines(folder / "hyp.txt"), read_lines(folder / "ref.txt")
        if not refs or len(hyps) != len(refs):  # named where the files are compared (`_hypotheses`)
            continue
        metric = BLEU()
        now = metric.corpus_score(hyps, [refs]).score
        if r.get("signature") and _unversioned(r["signature"]["bleu"]) != _unversioned(
                metric.get_signature().format()):  # a BLEU of another kind, not scored again as the default: the
            continue  # table's signature line names its rows
        if abs(now - r["bleu"]) > BLEU_DRIFT:
            raise SateError(f"{folder / 'hyp.txt'} or {folder / 'ref.txt'} changed since `sate evaluate` scored them: "
                            f"their BLEU is {now:.2f}, {folder / layout.RESULTS} says {r['bleu']:.2f}; evaluate the "
                            "system again (or put back the files it scored)")
        if r.get("length_ratio") is not None and r.get("length_unit") != "characters" \
                and length_unit(refs) == "characters":
            # a Chinese or Japanese row evaluated before its ratio counted characters: its 13a tokens (about 1.0 for
            # any output) were tabled beside newer rows' characters, nothing telling them apart (review29r)
            r["length_ratio"], r["length_unit"] = length_ratio(hyps, refs), "characters"


def _as_scored(name: str, path: Path) -> list[str] | list[list[str]]:
    """PATH's lines as its score reads them: a translations' reference as it stands (BLEU tokenises it), the
    transcripts' in WER's words (`normalize_words`). A manifest's src_norm written by another tool, cased and
    punctuated, gave the very same WER as sate's own and was refused as "not the same references" (pass 27)."""
    lines = read_lines(path)
    return [normalize_words(line) for line in lines] if name == "transcript_ref.txt" else lines


# The texts a split's rows must share to be tabled side by side: the translations' references (BLEU, chrF, TER) and
# the transcripts' (WER), each by the score that was computed against it and as that score reads it (`_as_scored`)
SHARED_REFERENCES = (("bleu", "ref.txt", "the systems were not evaluated on the same references"),
                     ("wer", "transcript_ref.txt", "the systems' transcripts (their WER) were not scored against the "
                                                   "same references"))


def check_same_references(exp: Path, rows: list[dict], baseline: str) -> None:
    """The translating systems of a split were evaluated on the same references (their ref.txt, where each has one),
    baseline or not: without one (no `st`, no --baseline) systems of other test sets under one split name were
    tabled side by side as comparable, exit 0, where with one they were refused (twenty-fourth hostile pass). So were
    the transcribing systems' WER (transcript_ref.txt): an ASR system evaluated on another test set was tabled
    beside SATE's CTC WER, exit 0 (twenty-seventh hostile pass)."""
    for split in sorted({r["split"] for r in rows}):
        for score, name, how in SHARED_REFERENCES:
            systems = sorted((r for r in rows if r["split"] == split and r.get(score) is not None),
                             key=lambda r: (r["system"] != baseline, r["system"]))
            found = [(exp / r["system"] / f"decode_{split}", r) for r in systems]
            found = [(folder, r) for folder, r in found if (folder / name).is_file()]
            if len(found) < 2:
                continue
            (first, first_row), refs = found[0], _as_scored(name, found[0][0] / name)
            for other, row in found[1:]:
                if _as_scored(name, other / name) != refs:
                    raise SateError(f"{other / name} differs from {first / name}: {how}, so they cannot be compared "
                                    f"in one table of {split}: " + _other_data(first_row, row, split))


def _other_data(first: dict, other: dict, split: str) -> str:
    """What to do about two rows of a split evaluated on other references: where their results name two data
    directories (another language pair, another corpus), each data directory's systems reported on their own. "Evaluate
    them again on one data directory's tst-COMMON" was the advice for an en-de and an en-fr system under one --exp,
    which cannot be followed (twenty-ninth hostile pass)."""
    data = first.get("data"), other.get("data")
    evaluated = [row.get("evaluated_split") or split for row in (first, other)]
    if evaluated[0] != evaluated[1]:  # a label of one's own over two splits: "evaluate them again on one data
        # directory's tst-COMMON-beam1", a split no data directory has (31st hostile pass)
        return (f"{table_cell(first['system'])} is an evaluation of split {table_cell(evaluated[0])}, "
                f"{table_cell(other['system'])} of {table_cell(evaluated[1])} ({layout.RESULTS} beside each): give "
                f"each a folder named for its split (decode_{evaluated[0]}-LABEL, decode_{evaluated[1]}-LABEL)")
    if all(isinstance(d, str) for d in data) and data[0] != data[1]:
        return (f"{table_cell(first['system'])} was evaluated on {table_cell(data[0])}, {table_cell(other['system'])} "
                f"on {table_cell(data[1])}: evaluate them again on one data directory's {split}, or, for data of "
                "another language pair or corpus, report each data directory's systems under an --exp of their own")
    return f"evaluate them again on one data directory's {split}"


def _missing_texts(folder: Path) -> str | None:
    """The name of FOLDER's hyp.txt or ref.txt where it is not there (a paired test reads both), else None."""
    return next((name for name in ("hyp.txt", "ref.txt") if not (folder / name).exists()), None)


# The fewest sentences a paired test is made on: an exact paired randomisation test of n sentences (each sentence's
# two outputs swapped or not) gives a two-sided p-value of at least 2 / 2**n, which reaches 0.05 from 6 sentences;
# sacreBLEU's bootstrap gave 0.001 to a system better on each of 2, 3, 4 or 5 sentences, marked "beyond noise"
MIN_TESTED_SENTENCES = 6


def add_paired_tests(exp: Path, rows: list[dict], baseline: str) -> None:
    """Give every translating row of a split with a `baseline` row its paired-bootstrap p-values against it."""
    for split in sorted({r["split"] for r in rows}):
        systems = [r for r in rows if r["split"] == split and r.get("bleu") is not None]
        base = next((r for r in systems if r["system"] == baseline), None)
        others = [r for r in systems if r is not base]
        if base is None or not others:
            continue
        folder = exp / baseline / f"decode_{split}"
        gone = _missing_texts(folder)
        if gone is not None:  # "file is missing" alone said neither why it was read nor what to do
            raise SateError(f"{folder / gone}: file is missing: the systems of {split} are tested against the "
                            f"baseline's outputs; evaluate {baseline} again, or name another --baseline")
        refs = read_lines(folder / "ref.txt")
        if not refs:  # an empty split: nothing to resample (sacreBLEU's test was an IndexError traceback)
            continue
        if len(refs) == 1:  # every resample is the one sentence: its p-values of 0.001 were marked * (a difference
            # "beyond noise") and its intervals "± 0.0", from a split too small to tell noise (twenty-ninth pass)
            for r in systems:
                r["untested"], r["bleu_ci"], r["chrf_ci"] = "one sentence: nothing to resample", None, None
            continue
        if len(refs) < MIN_TESTED_SENTENCES:  # sacreBLEU's bootstrap gave 0.001, marked *, to a system better on
            # each of two sentences (33rd hostile pass): no paired test of so few can reach p < 0.05 (`MIN_TESTED_...`)
            for r in systems:
                r["untested"] = f"{len(refs)} sentences: too few to test"
            continue
        named = [(baseline, _hypotheses(folder, refs))]
        for r in list(others):
            other = exp / r["system"] / f"decode_{split}"
            missing = _missing_texts(other)
            if missing is not None:  # an older run's, or removed: tabled, said untested (it stopped the report)
                r["untested"] = f"no {missing}"
                others.remove(r)
                continue
            if read_lines(other / "ref.txt") != refs:
                raise SateError(f"{other / 'ref.txt'} differs from {folder / 'ref.txt'}: the systems were not "
                                f"evaluated on the same references, so they cannot be compared pairwise")
            named.append((r["system"], _hypotheses(other, refs)))
        if not others:
            continue
        tested = paired_bootstrap(named, refs)
        for r in others:
            r["p_bleu"], r["p_chrf"] = tested[r["system"]]["bleu"]["p"], tested[r["system"]]["chrf"]["p"]


def _with_ci(row: dict, key: str) -> str:
    ci = row.get(f"{key}_ci")
    return _fmt(row.get(key)) + ("" if ci is None or row.get(key) is None else f" ± {ci:.1f}")


def _p(value: float | None) -> str:
    """A p-value to 3 decimals, * where it is under 0.05; to as many as tell it from 0.05 where 3 round it up to that:
    sacreBLEU's 50/1001 was tabled "0.050*", a p the legend's "* marks p < 0.05" does not mark (33rd hostile pass)."""
    if value is None:
        return "-"
    shown_value = f"{value:.3f}"
    if value < 0.05 <= float(shown_value):
        shown_value = f"{value:.4g}"
    return shown_value + ("*" if value < 0.05 else "")


def decoded_how(result: dict) -> str:
    """What the split cell says of an evaluation that is not the split's sentences decoded one by one offline:
    streamed (`--stream`: the policy and chunk), or whole talks re-segmented (`--talks`); and the split evaluated
    where the folder's label (decode_LABEL) does not begin with it. Such a run written into a
    system's decode_<split> was tabled as the system's BLEU and tested against the others, without a word
    (twenty-fourth hostile pass)."""
    stream = result.get("stream")
    parts = []
    if isinstance(stream, dict):
        chunk, policy = stream.get("chunk"), stream.get("policy")
        parts.append(f"streamed {policy[:40] if isinstance(policy, str) else shown(policy, 40)}"
                     + (f", {chunk:g}-s chunks" if is_number(chunk) else ""))
    if result.get("talks") or (isinstance(stream, dict) and stream.get("talks")):
        parts.append("whole talks")
    evaluated, label = result.get("evaluated_split"), result.get("split")
    if evaluated and isinstance(label, str) and evaluated != label and not (  # tst-COMMON-beam1, tst-COMMON_beam5
            label.startswith(evaluated) and not label[len(evaluated)].isalnum()):
        # decode_tst-COMMON-beam1 holding an evaluation of dev was tabled as "tst-COMMON-beam1", nothing saying it
        # was dev (31st hostile pass); decode_dev-beam1's label says it
        parts.insert(0, f"split {evaluated}")
    return f" ({', '.join(parts)})" if parts else ""


def _wer(row: dict) -> str:
    """The WER cell: the CTC transcript's, or Whisper's, said so, where the system transcribes with Whisper (its
    results.json records how): the column is CTC WER, and a Whisper cascade's WER was tabled as one (25th pass)."""
    return _fmt(row.get("wer")) + (" (Whisper)" if row.get("wer") is not None and row.get("whisper") else "")


def _systems_of(rows: list[dict], signature: str | None) -> str:
    """The rows (system, and split where the table has several) whose BLEU has this signature (None: a BLEU
    without one)."""
    splits = len({r["split"] for r in rows}) > 1
    return ", ".join(table_cell(r["system"] + (f" {r['split']}" if splits else "")) for r in rows
                     if (r["signature"]["bleu"] == signature if r.get("signature") else
                         signature is None and r.get("bleu") is not None))


def markdown(rows: list[dict], baseline: str | None = None) -> str:
    lines = [f"| system | split | BLEU | chrF | TER | CTC WER | length ratio | loops | p vs {baseline or '-'} "
             "(BLEU / chrF) | training (min) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        loops = r.get("loop_share")
        p = "-" if r.get("p_bleu") is None else f"{_p(r['p_bleu'])} / {_p(r['p_chrf'])}"
        if r.get("untested"):
            p = f"- ({r['untested']})"
        system = table_cell(r["system"])  # a folder name: any bytes, one cell of one line
        split = table_cell(r["split"] + decoded_how(r))
        lines.append(f"| {system} | {split} | {_with_ci(r, 'bleu')} | {_with_ci(r, 'chrf')} | "
                     f"{_fmt(r.get('ter'))} | {_wer(r)} | {_fmt(r.get('length_ratio'), 2)} | "
                     f"{'-' if loops is None else share_text(loops, 0)} | {p} | {_fmt(r.get('train_minutes'))} |")
    signatures = sorted({r["signature"]["bleu"] for r in rows if r.get("signature")})
    # a BLEU without a signature (a results.json written by hand: a paper's score) was tabled under the one signature
    # line as if it were of that kind (twenty-ninth hostile pass): where there is one, each signature names its rows
    unsigned = [r for r in rows if r.get("bleu") is not None and not r.get("signature")]
    if len(signatures) == 1 and not unsigned:
        lines += ["", f"sacreBLEU: `{signatures[0]}`"]
    elif signatures:  # which row is of which: a list alone left a row of another tokenizer or version unnamed
        lines += ["", "sacreBLEU: " + "; ".join(f"`{s}` ({_systems_of(rows, s)})" for s in signatures)
                  + (f"; no signature recorded: {_systems_of(rows, None)}" if unsigned else "")]
    if any(r.get("bleu_ci") is not None for r in rows):
        # a table of one system said "paired bootstrap test against the baseline (seed 12345)" over a column of
        # dashes, no test made (review29z)
        tested, seeded = any(r.get("p_bleu") is not None for r in rows), seed_note()
        unread = "; " + seeded.removeprefix("none made: ") if seeded.startswith("none made: ") else ""
        lines.append("BLEU and chrF: score ± half the 95% bootstrap confidence interval (1,000 resamples). "
                     "loops: outputs with a word (Chinese, Japanese: a unit of 1-8 characters) repeated 4+ times in "
                     + (f"a row. p: sacreBLEU's paired bootstrap test against the baseline ({seeded}); * marks "
                        "p < 0.05, a difference beyond noise." if tested else
                        f"a row. p: no paired test was made (a split of one system, or of fewer than "
                        f"{MIN_TESTED_SENTENCES} sentences{unread})."))
    return "\n".join(lines) + "\n"


CURVES = (("train/loss", "training loss (moving average of 5 logged steps)"), ("valid/loss", "validation loss"),
          ("valid/wer", "validation CTC WER (%)"), ("valid/bleu", "validation BLEU"))
# The largest value Lightning logs (a float32's): a value beyond it (an edited log's 1e308) is not drawn, as inf and
# NaN are not; matplotlib's axes around it were an OverflowError or ValueError traceback (eighteenth hostile pass)
LOGGED_MAX = 3.4028234663852886e38


def read_curves(system: Path) -> dict[str, list[tuple[int, float]]]:
    """metric -> [(step, value)] over every log version of a `sate train` dir; a log that is not the CSV Lightning
    writes (no step column, a value that is not a number, binary data) is one `SateError` naming its line. A version
    whose steps begin at or before those drawn already is a run started again over them (a resume drops the rows
    after its checkpoint, so its steps follow): from its first step over all metrics on, its points replace those of
    every metric drawn, so no earlier run's curve goes on beside it. A fresh run in the folder of a finished one
    whose checkpoints were removed (their rows kept) was drawn as one line going back from the first run's last step
    to 0 and over it again (33rd hostile pass)."""
    curves: dict[str, list[tuple[int, float]]] = {}
    for path in metric_logs(system):
        run: dict[str, list[tuple[int, float]]] = {}
        not_a_file(path, "a training log of `sate train`")  # a named pipe waited for a writer that never came
        # UTF-8, no NUL byte, read block by block; an empty log (a run killed as Lightning began it) draws nothing:
        # it was "no step column: not a training log", which stopped the report
        rows = csv_rows(path)
        if rows and "step" not in rows[0][1]:
            raise SateError(f"{path}: no step column: not a training log")
        for line, row in rows:
            for key, _ in CURVES:
                if row.get(key):
                    try:
                        point = (int(row["step"]), float(row[key]))
                    except (TypeError, ValueError):
                        raise SateError(f"{path}:{line}: step {shown(row['step'])} and {key} {shown(row[key])} must "
                                        "be numbers") from None
                    if not is_int64(point[0]):  # 10**400 was an OverflowError traceback inside matplotlib
                        raise SateError(f"{path}:{line}: step {shown(row['step'])} is beyond any step count (at most "
                                        "2**63 - 1)")
                    if abs(point[1]) > LOGGED_MAX:
                        point = (point[0], float("nan"))
                    run.setdefault(key, []).append(point)
        if not run:
            continue
        # decided once a version, over every metric: per metric, a fresh run not yet validated was drawn beside the
        # earlier run's validation curves, at steps it had not reached (review of the 33rd hostile pass)
        first = min(step for points in run.values() for step, _ in points)
        kept = {key: [point for point in points if point[0] < first] for key, points in curves.items()}
        curves = {key: points for key, points in kept.items() if points}
        for key, points in run.items():
            curves[key] = curves.get(key, []) + points
    return curves


def all_curves(exp: Path) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """system -> its curves (`read_curves`), for every system of ``exp`` with training logs; read before the table
    is written, so that a damaged log stops the report before any work."""
    systems = {p.name: read_curves(p) for p in sorted(exp.iterdir()) if (p / "logs").is_dir()}
    systems = {name: c for name, c in systems.items() if c}
    if not systems:
        raise SateError(f"--curves: {exp} holds no training logs to draw (EXP/<system>/logs/version_*/metrics.csv)")
    return systems


def plot_curves(systems: dict[str, dict[str, list[tuple[int, float]]]]) -> bytes:
    """One panel per metric, one line per system (`all_curves`), as a PNG."""
    import matplotlib  # heavy: matplotlib, for plots only

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # heavy: matplotlib, for plots only

    fig, axes = plt.subplots(1, len(CURVES), figsize=(4.5 * len(CURVES), 3.6), dpi=100)
    # one colour a system, as the analysis plots give: C{index % 10} drew the eleventh run as the first (hand30n)
    colours = series_colours(len(systems))
    for ax, (key, label) in zip(axes, CURVES, strict=True):
        for index, (name, curves) in enumerate(systems.items()):
            if key in curves:
                steps, values = zip(*curves[key], strict=True)
                if key == "train/loss":  # one batch per point: noisy, so smoothed
                    values = [sum(values[max(0, i - 4): i + 1]) / len(values[max(0, i - 4): i + 1])
                              for i in range(len(values))]
                ax.plot(steps, values, label=plot_text(name), color=colours[index],
                        marker="" if key == "train/loss" else "o", markersize=3)
        ax.set_xlabel("optimizer step")
        ax.set_title(label)
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8)
    for ax in axes[:2]:  # losses; a panel of no positive value stays linear (matplotlib warned on stderr)
        if any(value > 0 for line in ax.lines for value in line.get_ydata()):
            ax.set_yscale("log")
    fig.tight_layout()
    png = io.BytesIO()
    fig.savefig(png, format="png")
    plt.close(fig)
    return png.getvalue()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--exp", type=read_name, required=True, help="experiment root holding one dir per system")
    # extended, not replaced, when given again, as every list option (`--splits a --splits b` reported b alone)
    parser.add_argument("--splits", nargs="+", action="extend", default=None,
                        help="evaluated splits to report (default: tst-COMMON)")
    parser.add_argument("--out", type=file_name, default=None, help="markdown file to write (default: EXP/results.md)")
    parser.add_argument("--curves", type=file_name, default=None, help="also draw the learning curves into this PNG")
    parser.add_argument("--baseline", default=None,
                        help="the system every other one is tested against (paired bootstrap p-values; when not "
                             f"given: {DEFAULT_BASELINE}, where the experiment has one)")


def run(args: argparse.Namespace) -> int:
    args.splits = args.splits or ["tst-COMMON"]
    if args.exp.name == layout.RESULTS and args.exp.is_file() and not args.exp.parent.name.startswith("decode_") \
            and _evaluate_folders(args.exp.parent):  # eval/NAME/SPLIT/results.json: "takes eval", which has no row
        raise SateError(_nothing_to_report(args.exp.parent, args.splits, args.exp))
    if not args.exp.is_dir():  # a decoding's results.json was "no such directory", though it is there
        systems = args.exp.parent.parent.parent
        raise SateError(f"--exp {args.exp}: a decoding's {layout.RESULTS}; --exp takes the folder that holds one "
                        f"experiment per system ({systems})" if args.exp.name == layout.RESULTS and args.exp.is_file()
                        else f"--exp {args.exp}: {not_a_directory(args.exp)}")
    repeated = sorted({split for split in args.splits if args.splits.count(split) > 1})
    if repeated:  # every row of it was written twice, the baseline's second one tested against itself
        raise SateError(f"--splits: {', '.join(repeated)} given twice")
    check_split_names(args.splits)  # '' or '../x' was looked for under decode_<split> and called not evaluated
    rows = collect(args.exp, args.splits)
    if not rows:
        raise SateError(_nothing_to_report(args.exp, args.splits))
    # its default name is refused by --exp, the option given: a folder there was "--out EXP/results.md: ..." of an
    # --out never given (nineteenth hostile pass)
    out = check_output(args.out or args.exp / "results.md", "text", "--out" if args.out else "--exp")
    if args.out is None:  # its default name is sate's: a symlink there to a user's notes was written through (pass 18)
        check_own_files(args.exp, ["results.md"], "--exp")
    curves = check_output(args.curves, "image", "--curves") if args.curves is not None else None
    for path, option in ((out, "--out"), (curves, "--curves")):
        if path is not None:
            check_not_input(path, inputs(args.exp, rows), option)
    check_journal_place(path.parent for path in (out, curves) if path is not None and not is_stream(path))
    if curves is not None and same_file(out, curves):  # the PNG replaced the table just written, exit 0
        raise SateError(f"--curves {args.curves}: is also the table's file (--out {out}): give each its own file")
    if args.out is not None:  # `--out table.csv` and `table.json` were written markdown, exit 0 (twenty-second pass)
        check_named_kind(args.out, "sate report writes a markdown table", (".md", ".markdown", *TEXT_NAMES))
    names = sorted({r["system"] for r in rows})
    if args.baseline is not None and args.baseline not in names:  # it was ignored without a word: no p-values
        one_name = Path(args.baseline).name == args.baseline not in ("", "..")  # a folder of EXP, nowhere else
        decoded = sorted(folder.name.removeprefix("decode_") for folder in (args.exp / args.baseline).glob("decode_*")
                         if (folder / layout.RESULTS).is_file()) if one_name else []
        raise SateError(f"--baseline {args.baseline}: " + (  # a system of other splits was "no such system"
            f"not evaluated in {', '.join(args.splits)} (it was in {', '.join(decoded)}): name a system of these "
            f"splits ({', '.join(names)}), or report its splits" if decoded else
            f"no such system in {args.exp} (systems: {', '.join(names)})"))
    translating = sorted({r["system"] for r in rows if r.get("bleu") is not None})
    if args.baseline is not None and args.baseline not in translating:  # an ASR system: nothing to test against it,
        # and the table said "p vs asr" over a column of dashes, exit 0 (twenty-seventh hostile pass)
        raise SateError(f"--baseline {args.baseline}: it has no translations scored in {', '.join(args.splits)} (WER "
                        "only), so no system can be tested against it: "
                        + (f"name a translating system ({', '.join(translating)})" if translating else
                           "leave --baseline out (no system here translates)"))
    baseline = args.baseline or DEFAULT_BASELINE
    systems = all_curves(args.exp) if curves is not None else {}
    check_scored_files(args.exp, rows)
    check_same_references(args.exp, rows, baseline)
    add_paired_tests(args.exp, rows, baseline)
    table = markdown(rows, baseline if baseline in names else None)
    # the table and its curves as one set: a kill or a full disk between them left the new table beside old curves
    replace_together({out: table.encode(), **({curves: plot_curves(systems)} if curves is not None else {})})
    print(table, end="")
    if curves is not None:
        # escaped as the table's cells are: a line break in --curves or a system's folder split the line, and a
        # terminal escape reached the terminal (eighteenth hostile pass)
        print(f"learning curves of {one_line(', '.join(systems))} in {one_line(str(args.curves))}")
    return 0
