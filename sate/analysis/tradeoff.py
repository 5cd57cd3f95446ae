"""Quality against latency of streaming runs: `sate latency-plot RESULTS... --out tradeoff.png`.

Each RESULTS is the ``results.json`` of a `sate evaluate` run, or the directory holding it. Runs with
``--stream POLICY`` become points at (LAAL, BLEU), one line per policy and chunk size through its parameter values
in the order of their latency, each point labelled with its parameter: solid for the ideal LAAL (audio read), dashed
for the computation-aware one (decoding time included), in the line's colour. Runs over whole talks (``--talks``)
are their own lines (StreamLAAL). An offline run (no ``--stream``) is a horizontal line at its BLEU, the ceiling the
policies approach. Runs of several models are a line per model and policy, named by the model, and runs of other
decoding options (`--beam 1` beside the pack's beam) are lines named by those options. The same figures
are printed as a markdown table, with chrF and the confidence intervals.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from sate.analysis.fonts import drawn
from sate.analysis.palette import place_legend, series_colours
from sate.decode.options import check_chunk, parse_policy
from sate.errors import SateError, one_line, plot_text, shown, table_cell
from sate.files import atomic_open, file_sha256, given_twice, not_a_file, read_json, real_path
from sate.layout import RESULTS, RESULTS_MAX_BYTES
from sate.numbers import is_number
from sate.scoring.report import check_score_range
from sate.targets import check_output, file_name, read_name

if TYPE_CHECKING:  # matplotlib: imported when a plot is drawn
    from matplotlib.figure import Figure

PLOT_INCHES = (7.0, 4.5)
PLOT_DPI = 100


@dataclass(frozen=True)
class Run:
    """One evaluated run: its BLEU and, when streamed, the policy, its parameter and the corpus latencies (s)."""

    path: Path
    bleu: float
    split: str | None = None  # the split `sate evaluate` decoded, where the file says
    bleu_ci: float | None = None  # half the 95% bootstrap interval, when `sate evaluate` computed it
    chrf: float | None = None
    chrf_ci: float | None = None
    policy: str | None = None  # e.g. "alignatt"; None for an offline run
    value: int | None = None
    chunk: float | None = None  # seconds
    talks: bool = False  # streamed as whole talks: StreamLAAL
    al: float | None = None
    laal: float | None = None
    al_ca: float | None = None
    laal_ca: float | None = None
    model: str | None = None  # the pack `sate evaluate` decoded with, where the file says
    named: bool = False  # runs of several models are drawn: the model is part of each line's name
    references: str | None = None  # the digest of the ref.txt beside the results file, where there is one
    decode: tuple[tuple[str, str], ...] = ()  # the decoding options the file records, as (name, value)
    device: str | None = None  # where it decoded: the computation-aware latencies are that device's
    options: str = ""  # those that differ among the streamed runs drawn ("beam 1"): part of each line's name

    @property
    def series(self) -> str:
        """The line of a streamed run: its policy over one chunk size, per utterance or over whole talks, and its
        model where runs of several models are drawn (their points were joined into one line)."""
        if self.policy is None:
            return "offline"
        return f"{self._of}{self.policy} ({self.chunk:g} s{', whole talks' if self.talks else ''}{self._with})"

    @property
    def name(self) -> str:
        return f"{self._of}{self.policy}={self.value}{', whole talks' if self.talks else ''}{self._with}"

    @property
    def _with(self) -> str:
        return f", {self.options}" if self.options else ""

    @property
    def folder(self) -> Path:
        """What names the run: its folder, or the file given where it is not called results.json (links to runs'
        results gathered in one folder, `plots/w2.json`: each was named by that folder alone, rows alike)."""
        return self.path.parent if self.path.name == RESULTS else self.path.with_suffix("")

    @property
    def references_file(self) -> Path:
        return references_file(self.path)

    @property
    def offline_name(self) -> str:
        """An offline run's name: its folder, its model where runs of several models are drawn, and whether it
        translated whole talks (`evaluate --talks`: VAD segments re-segmented, not the reference's sentences; two
        offline runs were told apart by their folders' names alone: twenty-fourth hostile pass)."""
        return f"{self._of}{self.folder.name}{', whole talks' if self.talks else ''}"

    @property
    def _of(self) -> str:
        return f"{self.model}: " if self.named else ""


def read_run(path: Path) -> Run:
    """A `sate evaluate` results file (or its directory); bad input names the file and the key."""
    file = path / RESULTS if path.is_dir() else path
    not_a_file(file, "a results file of `sate evaluate`")  # a named pipe was "no results.json there"
    if not file.is_file():
        raise SateError(f"{path}: no {RESULTS} there (run `sate evaluate --out DIR`)")
    # not UTF-8, not JSON, too deep, not an object, far too large: one line naming the file
    results = read_json(file, (RESULTS_MAX_BYTES, "sate evaluate"))
    if not isinstance(results.get("bleu"), int | float) or isinstance(results["bleu"], bool):
        raise SateError(f"{file}: no 'bleu': not the results of a translation run of `sate evaluate`")
    if not is_number(results["bleu"]):  # JSON as Python writes it takes NaN and Infinity; 1e400 written whole too
        raise SateError(f"{file}: bleu must be a finite number, got {shown(results['bleu'])}")
    for key in ("bleu_ci", "chrf", "chrf_ci"):  # absent or null where not computed; 'x' was a blank cell, exit 0
        if results.get(key) is not None and not is_number(results[key]):
            raise SateError(f"{file}: {key} must be a finite number or null, got {shown(results[key])}")
    split = results.get("split")
    if split is not None and not (isinstance(split, str) and split):  # 5 or [] was no split: runs went unchecked
        raise SateError(f"{file}: split must be the name of a split, got {shown(split)}")
    decode = results.get("decode")
    quality = Run(file, float(results["bleu"]), split, *(float(results[key]) if is_number(results.get(key)) else
                                                         None for key in ("bleu_ci", "chrf", "chrf_ci")),
                  talks=bool(results.get("talks")),
                  model=one_line(results["model"]) if isinstance(results.get("model"), str) else None,
                  # beside the file a link points to: links gathered in one folder (plots/w2.json) had none beside
                  # them, and en-de and en-zh runs of split dev were drawn as one (thirty-first hostile pass)
                  references=_references(references_file(file)),
                  decode=tuple((one_line(str(k)), one_line(shown(v))) for k, v in decode.items())
                  if isinstance(decode, dict) else (),
                  device=_device(results.get("device")))
    for key in ("bleu", "bleu_ci", "chrf", "chrf_ci"):
        if getattr(quality, key) is not None:
            check_score_range(file, key, results[key])
    stream = results.get("stream")
    if stream is None:
        return quality
    policy = stream.get("policy") if isinstance(stream, dict) else None
    if not isinstance(policy, str) or "=" not in policy:
        raise SateError(f"{file}: 'stream' lacks a policy=value or its latency")
    try:  # a policy `sate evaluate` would refuse (foo=3, wait-k=-4) was drawn as a line of its own
        parsed = parse_policy(policy)
    except SateError as err:
        raise SateError(f"{file}: {err}") from None
    latency = stream.get("latency")
    if not isinstance(latency, dict):
        raise SateError(f"{file}: 'stream' lacks its latency (a mapping of al, laal, al_ca and laal_ca)")
    if latency.get("sentences") == 0:  # what `sate evaluate` writes then (null latencies; NaN before the 33rd
        # pass): "must be a finite number" called its own file damaged (twenty-fifth hostile pass)
        raise SateError(f"{file}: no sentence of this run showed a word (stream.latency.sentences is 0): it has no "
                        "latency to draw; leave it out")
    given = {"stream.chunk": stream.get("chunk"), **{f"stream.latency.{key}": latency.get(key)
                                                     for key in ("al", "laal", "al_ca", "laal_ca")}}
    bad = next((key for key, value in given.items() if not is_number(value)), None)
    if bad is not None:  # NaN or inf was a point drawn nowhere, 'x' float()'s error with all of it, true 1.0
        raise SateError(f"{file}: {bad} must be a finite number, got {shown(given[bad])}")
    streamed = replace(quality, policy=parsed.name, value=parsed.value, chunk=float(stream["chunk"]),
                       talks="talks" in stream, **{key: float(latency[key]) for key in ("al", "laal", "al_ca",
                                                                                       "laal_ca")})
    check_chunk(streamed.chunk, f"{file}: stream chunk")  # the chunks `sate evaluate --stream` takes
    return streamed


def _device(device: object) -> str | None:
    """The device a results file names, a GPU's index made explicit: `sate evaluate` records the device as chosen, so
    the default GPU is "cuda" and `--device cuda:0` the same card as "cuda:0"."""
    if not isinstance(device, str):
        return None
    kind, colon, _ = device.partition(":")
    return one_line(device if colon or kind == "cpu" else f"{device}:0")


def references_file(results: Path) -> Path:
    """The ``ref.txt`` `sate evaluate` wrote beside a results file; beside the file it points to, where it is a link."""
    return (real_path(results) if results.is_symlink() else results).parent / "ref.txt"


def _references(path: Path) -> str | None:
    """The SHA-256 of the references `sate evaluate` wrote beside its results (``ref.txt``), read a block at a time,
    or None where no regular file is there (a results file copied alone)."""
    return file_sha256(path) if path.is_file() else None


def one_name_per_model(runs: list[Run]) -> list[Run]:
    """Runs whose results name one pack two ways (`packs/st`, and its absolute path where `sate evaluate` ran from
    elsewhere) name it as the first of them does: they were two models, two lines, and an offline run of the pack
    labelled with the other name (the review of the twenty-third hostile pass). A path not there now is taken as
    written."""
    first: dict[str, str] = {}
    named = []
    for run in runs:
        if run.model is not None:
            key = str(real_path(run.model)) if os.path.exists(run.model) else run.model
            run = replace(run, model=first.setdefault(key, run.model))
        named.append(run)
    return named


def label_options(runs: list[Run]) -> list[Run]:
    """Streamed runs whose decoding options differ (a policy decoded with `--beam 1` and with the pack's beam) name
    the options that differ in their lines and rows: they were joined into one line, two points labelled with the
    same parameter, and two table rows that nothing told apart, exit 0 (twenty-third hostile pass).

    The device counts as an option, its computation-aware latencies being that device's; and runs alike in all of
    these (one run repeated: the same point of the same line, its chunk size included) are named by their folders:
    runs on a GPU and on the CPU were one line whose dashed computation-aware half zigzagged between the two devices'
    points, two rows 'alignatt=4' that nothing told apart (twenty-eighth hostile pass). A file that records no
    device (written by hand) differs from none: it is "device not recorded" only beside runs of two devices."""
    def options(run: Run) -> dict[str, str]:
        return {**dict(run.decode), **({"device": run.device} if run.device is not None else {})}

    streamed = [options(run) for run in runs if run.policy is not None]
    keys = dict.fromkeys(key for option in streamed for key in option)
    differ = [key for key in keys
              if len({option.get(key) for option in streamed if key != "device" or "device" in option}) > 1]
    unknown = {"device": "not recorded"}
    if differ:
        runs = [run if run.policy is None else
                replace(run, options=", ".join(f"{key} {options(run).get(key, unknown.get(key, '?'))}"
                                               for key in differ))
                for run in runs]
    # alike: one point of one line (a chunk-size sweep is the same name at several chunks, each on its own line)
    points = [(run.series, run.value) for run in runs if run.policy is not None]
    return [run if run.policy is None or points.count((run.series, run.value)) == 1 else
            replace(run, options=", ".join(filter(None, (run.options, f"run {one_line(str(run.folder))}"))))
            for run in runs]


def check_each_once(runs: list[Run]) -> None:
    """Every results file once: a run given twice (its folder and its results.json, or a link to its folder) was
    a second row of the table and a second point on its own, exit 0."""
    twice = given_twice(run.path for run in runs)
    if twice is not None:
        raise SateError(f"{twice[1]}: the results file {twice[0]} is given already; give each run once")


def check_same_sentences(runs: list[Run]) -> None:
    """Every run decoded the same sentences, by its split and the references beside it: runs of dev and tst-COMMON
    were joined into one policy's line (and an offline run of another split drawn as its ceiling), BLEU of different
    sentences compared, exit 0."""
    first = next((run for run in runs if run.split is not None), None)
    other = next((run for run in runs if run.split is not None and run.split != first.split), None) if first else None
    if first is not None and other is not None:
        raise SateError(f"{other.path}: split {shown(other.split)}, but {first.path} is split {shown(first.split)}: "
                        "runs of different splits cannot share one plot")
    # one split name in two data directories (tst-COMMON of two corpora, or of a manifest cut since) was joined into
    # one line, BLEU of different sentences compared, exit 0 (twenty-third hostile pass): their references tell
    first = next((run for run in runs if run.references is not None), None)
    other = next((run for run in runs if run.references not in (None, first.references)), None) if first else None
    if first is not None and other is not None:
        raise SateError(f"{other.references_file} differs from {first.references_file}: the runs "
                        "decoded different sentences (another data directory, or another manifest of the split), so "
                        "they cannot share one plot")


def _score(value: float | None, ci: float | None) -> str:
    return "" if value is None else f"{value:.1f}" + ("" if ci is None else f" ± {ci:.1f}")


def markdown(runs: list[Run]) -> str:
    """The figures as a table: offline runs first (named by their directory), then each policy by latency."""
    lines = ["| run | chunk (s) | BLEU | chrF | AL (s) | LAAL (s) | AL, computation-aware (s) | "
             "LAAL, computation-aware (s) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for run in sorted(runs, key=lambda r: (r.policy is not None, r.series, r.laal or 0.0)):
        quality = f"{_score(run.bleu, run.bleu_ci)} | {_score(run.chrf, run.chrf_ci)}"
        if run.policy is None:
            lines.append(f"| offline ({table_cell(run.offline_name)}) | | {quality} | | | | |")
        else:
            lines.append(f"| {table_cell(run.name)} | {run.chunk:g} | {quality} | {run.al:.2f} | {run.laal:.2f} | "
                         f"{run.al_ca:.2f} | {run.laal_ca:.2f} |")
    return "\n".join(lines) + "\n"


def plot(runs: list[Run], path: Path) -> Figure:
    """Draw the runs into a PNG at `path`; the figure is returned (its lines hold the points drawn). Models named in
    Chinese are drawn with an installed CJK font."""
    return drawn(lambda: _plot(runs, path), str(path))


def _plot(runs: list[Run], path: Path) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # heavy: matplotlib, for plots only
    from matplotlib.figure import Figure  # heavy: matplotlib, for plots only

    streamed = [r for r in runs if r.policy is not None]
    if not streamed:  # the files named: a streaming run's results.json without its `stream` policy reads as offline
        given = ", ".join(str(r.path) for r in runs[:3]) + (f" and {len(runs) - 3} more" if len(runs) > 3 else "")
        raise SateError(f"{given}: no streaming run among them (each says it is an offline run: no `stream` policy): "
                        "give some of `sate evaluate --stream POLICY`")
    fig = Figure(figsize=PLOT_INCHES, dpi=PLOT_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    lines = list(dict.fromkeys(r.series for r in streamed))
    for series, colour in zip(lines, series_colours(len(lines)), strict=True):
        points = sorted((r for r in streamed if r.series == series), key=lambda r: (r.laal, r.value))
        bleu = [r.bleu for r in points]
        ax.plot([r.laal for r in points], bleu, marker="o", color=colour, label=f"{plot_text(series)}: LAAL")
        ax.plot([r.laal_ca for r in points], bleu, marker="x", linestyle="--", color=colour,
                label=f"{plot_text(series)}: computation-aware")
        for r in points:
            ax.annotate(str(r.value), (r.laal, r.bleu), textcoords="offset points", xytext=(4, 4), fontsize=8)
    offline = [r for r in runs if r.policy is None]
    for run in offline:
        ax.axhline(run.bleu, color="grey", linestyle=":", label=f"offline ({plot_text(run.offline_name)})")
        if len(offline) > 1:  # alike grey lines: two models' ceilings were told apart by nothing (thirtieth pass)
            ax.annotate(plot_text(run.offline_name), (1.0, run.bleu), xycoords=("axes fraction", "data"),
                        textcoords="offset points", xytext=(-4, 2), ha="right", fontsize=8, color="dimgrey")
    ax.set_xlabel("lagging (s): LAAL, or StreamLAAL over whole talks")
    ax.set_ylabel("BLEU")
    ax.set_title("Quality against latency (labels: the policy's parameter)")
    ax.grid(alpha=0.3)
    place_legend(fig, ax, 8)
    with atomic_open(path, "wb") as f:
        fig.savefig(f, format="png")
    return fig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="+", type=read_name, metavar="RESULTS",
                        help="results.json files of `sate evaluate` (or their directories): --stream runs, and "
                             "offline ones for the ceiling")
    parser.add_argument("--out", type=file_name, required=True, help="the PNG to write")


def run(args: argparse.Namespace) -> int:
    out = check_output(args.out, "image")  # once unchecked: `--out RUN/results.json` replaced an input with a PNG
    runs = [read_run(path) for path in args.results]
    check_each_once(runs)
    check_same_sentences(runs)
    runs = one_name_per_model(runs)
    # one line per model and policy; an offline run of another model than the policies' was drawn as their ceiling
    # without a word (twenty-third hostile pass)
    if len({run.model for run in runs if run.model is not None}) > 1:  # a run that names none is of either
        runs = [replace(run, named=True) for run in runs]
    runs = label_options(runs)
    plot(runs, out)
    print(markdown(runs), end="")
    print(f"wrote {one_line(str(args.out))}")
    return 0
