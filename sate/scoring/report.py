"""Collect evaluation results of an experiment into one markdown table: `sate report --exp EXP`.

Every system directory under EXP that holds `decode_<split>/results.json` (written by `sate evaluate`)
becomes a row, with its training time from `train_time.json` (written by `sate train`) where it has one.
`--curves PNG` also draws the learning curves of every trained system from its CSV logs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sate.errors import SateError
from sate.files import atomic_open, atomic_write_text


def _fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def collect(exp: Path, splits: list[str]) -> list[dict]:
    rows = []
    for system in sorted(p for p in exp.iterdir() if p.is_dir()):
        for split in splits:
            path = system / f"decode_{split}" / "results.json"
            if not path.is_file():
                continue
            try:
                result = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError as err:
                raise SateError(f"{path}: not valid JSON ({err.msg}, line {err.lineno})") from None
            timing = system / "train_time.json"
            minutes = json.loads(timing.read_text())["seconds"] / 60 if timing.is_file() else None
            rows.append({"system": system.name, "split": split, **result, "train_minutes": minutes})
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["| system | split | BLEU | chrF | TER | CTC WER | training (min) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['system']} | {r['split']} | {_fmt(r.get('bleu'))} | {_fmt(r.get('chrf'))} | "
                     f"{_fmt(r.get('ter'))} | {_fmt(r.get('wer'))} | {_fmt(r.get('train_minutes'))} |")
    signatures = sorted({r["signature"]["bleu"] for r in rows if r.get("signature")})
    if signatures:
        lines += ["", "sacreBLEU: " + "; ".join(f"`{s}`" for s in signatures)]
    return "\n".join(lines) + "\n"


CURVES = (("train/loss", "training loss (moving average of 5 logged steps)"), ("valid/loss", "validation loss"),
          ("valid/wer", "validation CTC WER (%)"), ("valid/bleu", "validation BLEU"))


def read_curves(system: Path) -> dict[str, list[tuple[int, float]]]:
    """metric -> [(step, value)] over every log version (one per run or resume) of a `sate train` dir."""
    import csv

    curves: dict[str, list[tuple[int, float]]] = {}
    for path in sorted((system / "logs").glob("version_*/metrics.csv"), key=lambda p: int(p.parent.name[8:])):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                for key, _ in CURVES:
                    if row.get(key):
                        curves.setdefault(key, []).append((int(row["step"]), float(row[key])))
    return curves


def plot_curves(exp: Path, out: Path) -> list[str]:
    """One panel per metric, one line per system; returns the systems drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = {p.name: read_curves(p) for p in sorted(exp.iterdir()) if (p / "logs").is_dir()}
    systems = {name: c for name, c in systems.items() if c}
    if not systems:
        raise SateError(f"{exp}: no training logs (EXP/<system>/logs/version_*/metrics.csv)")
    fig, axes = plt.subplots(1, len(CURVES), figsize=(4.5 * len(CURVES), 3.6), dpi=100)
    for ax, (key, label) in zip(axes, CURVES, strict=True):
        for index, (name, curves) in enumerate(systems.items()):
            if key in curves:
                steps, values = zip(*curves[key], strict=True)
                if key == "train/loss":  # one batch per point: noisy, so smoothed
                    values = [sum(values[max(0, i - 4): i + 1]) / len(values[max(0, i - 4): i + 1])
                              for i in range(len(values))]
                ax.plot(steps, values, label=name, color=f"C{index % 10}", marker="" if key == "train/loss" else "o",
                        markersize=3)
        ax.set_xlabel("optimizer step")
        ax.set_title(label)
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8)
    axes[0].set_yscale("log")
    axes[1].set_yscale("log")
    fig.tight_layout()
    with atomic_open(out, "wb") as f:
        fig.savefig(f, format="png")
    plt.close(fig)
    return list(systems)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--exp", type=Path, required=True, help="experiment root holding one dir per system")
    parser.add_argument("--splits", nargs="+", default=["tst-COMMON"], help="evaluated splits to report")
    parser.add_argument("--out", type=Path, default=None, help="markdown file to write (default: EXP/results.md)")
    parser.add_argument("--curves", type=Path, default=None, help="also draw the learning curves into this PNG")


def run(args: argparse.Namespace) -> int:
    if not args.exp.is_dir():
        raise SateError(f"--exp {args.exp}: no such directory")
    rows = collect(args.exp, args.splits)
    if not rows:
        raise SateError(f"{args.exp}: no decode_<split>/results.json for splits {' '.join(args.splits)} "
                        f"(run `sate evaluate` first)")
    out = args.out or args.exp / "results.md"
    atomic_write_text(out, markdown(rows))
    print(out.read_text(encoding="utf-8"), end="")
    if args.curves is not None:
        drawn = plot_curves(args.exp, args.curves)
        print(f"learning curves of {', '.join(drawn)} in {args.curves}")
    return 0
