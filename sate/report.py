"""Collect evaluation results of an experiment into one markdown table: `sate report --exp EXP`.

Every system directory under EXP that holds `decode_<split>/results.json` (written by `sate evaluate`)
becomes a row, with its training time from `train_time.json` (written by `sate train`) where it has one.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from sate.errors import SateError


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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--exp", type=Path, required=True, help="experiment root holding one dir per system")
    parser.add_argument("--splits", nargs="+", default=["tst-COMMON"], help="evaluated splits to report")
    parser.add_argument("--out", type=Path, default=None, help="markdown file to write (default: EXP/results.md)")


def run(args: argparse.Namespace) -> int:
    if not args.exp.is_dir():
        raise SateError(f"--exp {args.exp}: no such directory")
    rows = collect(args.exp, args.splits)
    if not rows:
        raise SateError(f"{args.exp}: no decode_<split>/results.json for splits {' '.join(args.splits)} "
                        f"(run `sate evaluate` first)")
    out = args.out or args.exp / "results.md"
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(markdown(rows), encoding="utf-8")
    os.replace(tmp, out)
    print(out.read_text(encoding="utf-8"), end="")
    return 0
