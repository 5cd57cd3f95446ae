"""Localness of encoder self-attention per layer, the SATE paper's analysis (`sate analyze locality`).

Definition. Take one utterance with T real positions (padding is never counted) and a window
ratio r (``--window``, default 0.1: the SATE paper's window of 10% of the sequence length, read as
the window's full width, centred on the query). The window half-width is

    w = floor(r·T / 2)    (the largest integer w with 2w <= r·T; so T < 20 gives w = 0 at r = 0.1)

and the localness of query position i in one head is the attention mass it puts on keys j with
|i − j| <= w, that is on positions max(0, i − w) .. min(T − 1, i + w). At the ends of the
utterance the window is cut, not shifted. A layer's localness for the utterance is the mean over
its heads and its T query positions; the reported value is the mean over utterances, each
utterance weighing the same. 1.0 means every position attends only within its window (the
identity, for instance); uniform attention over all T keys scores about (2w + 1)/T, a bit less
because of the cut windows at the ends.

Batches give the values of one utterance at a time (``--batch-size 1``, the default), speech too: the
acoustic encoder masks padding exactly (docs/models.md), and text batches always did.

The paper finds ASR encoders growing more local with depth and MT encoders more global, and an
E2E ST encoder trained with CTC behaving like ASR. Outputs, in ``--out``:

- ``locality.csv``: model, task, encoder, layer, localness, utterances (one row per layer);
- ``locality.md``: the same as a table, one column per model encoder, one row per layer;
- ``locality.png``: one line per model encoder, layer on the x axis, localness on the y axis.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import torch
from torch.utils.data import Dataset

from sate.analysis.capture import AttentionKey, capture_attention, encoder_attention
from sate.analysis.fonts import drawn
from sate.analysis.palette import place_legend, series_colours
from sate.data.dataset import collate
from sate.errors import plot_text, table_cell
from sate.models.base import SateModel

# r·T/2 is computed in floating point: 0.58·100/2 gives 28.999999999999996, whose floor would lose a key.
WINDOW_EPS = 1e-9
PLOT_INCHES = (7.0, 4.5)
PLOT_DPI = 100  # with PLOT_INCHES: a 700 x 450 pixel PNG
ENCODER_STYLE = {"acoustic": "-", "textual": "--"}


def window_size(length: int, ratio: float) -> int:
    """The half-width w = floor(ratio·length / 2) of a window `ratio`·length wide (see the module docstring)."""
    return math.floor(ratio * length / 2 + WINDOW_EPS)


def localness(attn: torch.Tensor, lengths: torch.Tensor, ratio: float) -> torch.Tensor:
    """Per-utterance localness of one layer: attn (B, H, T, T), lengths (B,) -> (B,).

    Each utterance uses only its first ``lengths[b]`` queries and keys; the mean runs over heads
    and those queries.
    """
    batch, _, size, _ = attn.shape
    pos = torch.arange(size, device=attn.device)
    distance = (pos[:, None] - pos[None, :]).abs()  # (T, T)
    half = torch.tensor([window_size(int(n), ratio) for n in lengths.tolist()], device=attn.device)
    valid = pos[None, :] < lengths.to(attn.device)[:, None]  # (B, T)
    inside = (distance[None] <= half[:, None, None]) & valid[:, None, :]  # (B, T query, T key)
    mass = (attn.float() * inside[:, None]).sum(-1).mean(1)  # (B, T): summed over keys, averaged over heads
    return (mass * valid).sum(-1) / lengths.to(attn.device).clamp(min=1)


class LocalnessTotals:
    """A capture sink that sums per-utterance localness per layer, so no attention map is kept."""

    def __init__(self, ratio: float) -> None:
        self.ratio = ratio
        self.sums: dict[AttentionKey, float] = {}
        self.counts: dict[AttentionKey, int] = {}

    def __call__(self, key: AttentionKey, attn: torch.Tensor, key_mask: torch.Tensor) -> None:
        lengths = key_mask.sum(-1)  # self-attention: queries and keys are the same positions
        values = localness(attn, lengths, self.ratio)[lengths > 0]
        self.sums[key] = self.sums.get(key, 0.0) + float(values.sum())
        self.counts[key] = self.counts.get(key, 0) + len(values)

    def means(self) -> dict[AttentionKey, tuple[float, int]]:
        """(mean localness, utterances) per (encoder, layer), in encoder then layer order."""
        return {key: (self.sums[key] / self.counts[key], self.counts[key])
                for key in sorted(self.sums) if self.counts[key]}


def length_sorted_batches(dataset: Dataset, sizes: Sequence[int], batch_size: int) -> Iterator[dict]:
    """Collated batches, longest items first, so a batch pads little and memory peaks early."""
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    for start in range(0, len(order), batch_size):
        yield collate([dataset[i] for i in order[start:start + batch_size]])


@torch.inference_mode()
def model_localness(model: SateModel, batches: Iterable[dict], ratio: float,
                    device: torch.device) -> dict[AttentionKey, tuple[float, int]]:
    """Mean localness per (encoder, layer) of every encoder the model has, in eval mode.

    Speech models (asr, st) read ``feats``; an MT model reads ``src``. The decoder is not run.
    """
    model.eval().to(device)
    totals = LocalnessTotals(ratio)
    with capture_attention(encoder_attention(model), totals):
        for batch in batches:
            if model.task == "mt":
                model.encode_text(batch["src"].to(device), batch["src_lengths"].to(device))
            else:
                model.encode(batch["feats"].to(device), batch["feats_lengths"].to(device))
    return totals.means()


@dataclass(frozen=True)
class LayerLocalness:
    """One row of locality.csv."""

    model: str
    task: str
    encoder: str
    layer: int
    localness: float
    utterances: int
    ctc: bool = False  # the layer the model's CTC reads (Fig. 1(b) compares its depth); not a CSV column

    @property
    def series(self) -> str:
        """The plot line and table column this row belongs to, e.g. "st acoustic"."""
        return f"{self.model} {self.encoder}"


def csv_text(rows: Sequence[LayerLocalness]) -> str:
    """The table as CSV, one row per model encoder layer."""
    text = io.StringIO()
    writer = csv.writer(text)
    writer.writerow(["model", "task", "encoder", "layer", "localness", "utterances"])
    for r in rows:
        writer.writerow([r.model, r.task, r.encoder, r.layer, f"{r.localness:.6f}", r.utterances])
    return text.getvalue()


def markdown_table(rows: Sequence[LayerLocalness], caption: str) -> str:
    """One column per model encoder, one row per layer; encoders with fewer layers leave cells blank."""
    series = list(dict.fromkeys(r.series for r in rows))
    cell = {(r.series, r.layer): f"{r.localness:.3f}" for r in rows}
    depth = max(r.layer for r in rows)
    header = " | ".join(map(table_cell, series))  # a '|' in a model's name ended its column
    lines = [caption, "", f"| layer | {header} |", "|---:|" + "---:|" * len(series)]
    lines += [f"| {layer} | " + " | ".join(cell.get((s, layer), "") for s in series) + " |"
              for layer in range(1, depth + 1)]
    return "\n".join(lines) + "\n"


def plot_locality(rows: Sequence[LayerLocalness], ratio: float) -> bytes:
    """The paper-style line plot as a PNG: a colour per model, solid for acoustic and dashed for textual
    encoders, a star on the layer each model's CTC reads; names in Chinese drawn with an installed CJK font."""
    return drawn(lambda: _plot_locality(rows, ratio), "locality.png")


def _plot_locality(rows: Sequence[LayerLocalness], ratio: float) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # heavy: matplotlib, for plots only
    from matplotlib.figure import Figure  # heavy: matplotlib, for plots only

    fig = Figure(figsize=PLOT_INCHES, dpi=PLOT_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    models = list(dict.fromkeys(r.model for r in rows))
    colours = dict(zip(models, series_colours(len(models)), strict=True))
    for series in dict.fromkeys(r.series for r in rows):
        points = [r for r in rows if r.series == series]
        ax.plot([r.layer for r in points], [r.localness for r in points], marker="o", label=plot_text(series),
                color=colours[points[0].model], linestyle=ENCODER_STYLE[points[0].encoder])
    marked = [r for r in rows if r.ctc]  # where each model's CTC reads: Fig. 1(b)'s point, named only before
    for k, r in enumerate(marked):
        ax.plot([r.layer], [r.localness], marker="*", markersize=16, linestyle="none", color=colours[r.model],
                markeredgecolor="black", label="the layer CTC reads" if k == 0 else None)
    depth = max(r.layer for r in rows)
    ax.set_xticks(range(1, depth + 1))
    ax.set_xlabel("layer")
    ax.set_ylabel(f"localness (attention mass within a {ratio:g}·T window)")
    ax.set_title("Localness of encoder self-attention")
    ax.grid(alpha=0.3)
    place_legend(fig, ax, 10)
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=PLOT_DPI)
    return png.getvalue()
