"""Attention heatmaps of one utterance (`sate analyze attention`).

The main picture is the decoder's cross-attention: one row per target token of the greedy
translation (`sate.decode.greedy.greedy_decode`), one column per position of the memory it
attends to (the textual encoder's output; the acoustic encoder's for a hybrid ASR model and for
the E2E ST baseline, which has no textual encoder). Row k is the attention while the decoder
predicts token k; a last row ``</s>`` shows the attention when it decides to stop. The weights
come from one teacher-forced decoder pass over the greedy output, which in eval mode computes
exactly what each decoding step computed.

Column labels say which source token a position stands for:

- MT: the source token itself;
- speech, one position per frame (every adaptor but shrink): greedy CTC labels the frame where it
  emits a token, the first frame of each run of a non-blank label; blank frames and the rest of a
  run stay unlabelled;
- speech with the ``shrink`` adaptor: one position per CTC segment, labelled with its token
  (a blank segment, kept by ``keep_blank``, or the all-blank fallback segment stays unlabelled).

Rows and columns are summed attention weights of the chosen layer and head, or their mean
(``--layer mean``/``--head mean``). Each row sums to 1: brightness is where the decoder looks.
``--encoder-layers`` adds the self-attention maps (position against position) of those layers of
every encoder the model has, written beside the main PNG as ``<stem>.<encoder>-layer<l>.png``.
Figure sizes grow with the number of rows and columns (`figure_inches`), at 100 dpi.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from sate.analysis.capture import ENCODERS, AttentionStore, capture_attention, cross_attention, encoder_attention
from sate.analysis.fonts import drawn
from sate.data.dataset import Batch
from sate.data.tokens import BLANK as BLANK_PIECE
from sate.data.tokens import SOS_EOS
from sate.decode.greedy import greedy_decode
from sate.errors import SateError, plot_text
from sate.files import replace_together
from sate.models.base import SateModel
from sate.models.ctc import BLANK, ctc_greedy
from sate.models.model_file import ModelMeta
from sate.numbers import is_digits

HEATMAP_DPI = 100
EOS_LABEL = "</s>"


def ctc_frame_labels(ctc_logits: torch.Tensor) -> list[int | None]:
    """Per frame (T, V) -> the token greedy CTC emits there: the first frame of a non-blank run, else None."""
    path = ctc_logits.argmax(-1).tolist()
    return [label if label != BLANK and (t == 0 or path[t - 1] != label) else None for t, label in enumerate(path)]


def shrink_segment_labels(ctc_logits: torch.Tensor, keep_blank: bool) -> list[int | None]:
    """Per segment of `sate.models.shrink.ctc_shrink` on these (T, V) logits: its token, None for blank.

    Segments are runs of equal greedy labels; blank runs count only with ``keep_blank``. With no
    non-blank frame at all, shrink keeps one segment of every frame, which no token names.
    """
    path = ctc_logits.argmax(-1).tolist()
    runs = [label for t, label in enumerate(path) if t == 0 or path[t - 1] != label]
    labels = [label if label != BLANK else None for label in runs if keep_blank or label != BLANK]
    return labels or [None]


def figure_inches(rows: int, cols: int) -> tuple[float, float]:
    """Figure size for a rows x cols map: 0.12 in per column and 0.22 in per row plus room for labels,
    within 6..30 by 4..20 inches, rounded to quarter inches (exact in binary, so the PNG has exactly
    100 times as many pixels)."""
    def quarter(x: float) -> float:
        return round(x * 4) / 4

    return (min(max(quarter(3.0 + 0.12 * cols), 6.0), 30.0), min(max(quarter(2.5 + 0.22 * rows), 4.0), 20.0))


def pieces_text(pieces: Sequence[str]) -> str:
    """SentencePiece pieces as text (``▁`` starts a word). ``<blank>`` and ``<sos/eos>`` are no text, as
    `Vocabulary.decode` skips them: a hybrid ASR's decoder may write ``<blank>`` (its output layer covers the CTC
    token list), and the printed output showed it (the twenty-sixth pass's note)."""
    return "".join(p for p in pieces if p not in (BLANK_PIECE, SOS_EOS)).replace("\u2581", " ").strip()


@dataclass
class UtteranceAttention:
    """Everything drawn for one utterance; maps are (H, T1, T2) cut to the real lengths."""

    utt: str
    task: str
    targets: list[str]  # cross-attention row labels: greedy output pieces, then EOS_LABEL if it stopped there
    positions: dict[str, list[str | None]]  # encoder -> label per position (None: unlabelled)
    memory: str  # the encoder the decoder attends to: "textual", or "acoustic" without a textual encoder
    maps: dict[tuple[str, int], torch.Tensor]
    transcript: str  # the source: CTC greedy transcript (speech) or the input text (MT)
    translation: str  # the greedy output as text

    def depth(self, kind: str) -> int:
        """Number of layers of an encoder or of the decoder ("cross")."""
        return max((layer for k, layer in self.maps if k == kind), default=0)


@torch.inference_mode()
def utterance_attention(model: SateModel, meta: ModelMeta, batch: Batch,
                        device: torch.device) -> UtteranceAttention:
    """Greedy-decode the single utterance of ``batch``, then capture every attention map in one pass.

    ``meta`` is the model file's dict (its token lists label the axes). The model needs a decoder.
    """
    if getattr(model, "decoder", None) is None:
        raise SateError("a CTC-only ASR model has no decoder, hence no cross-attention to draw")
    model.eval().to(device)
    batch = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
    hyp = greedy_decode(model, batch)[0]
    src_tokens = meta["src_tokens"]
    out_tokens = src_tokens if model.task == "asr" else meta["tgt_tokens"]  # an ASR decoder writes source tokens
    store = AttentionStore()
    with capture_attention({**encoder_attention(model), **cross_attention(model)}, store):
        if model.task == "mt":
            n_src = int(batch["src_lengths"][0])
            memory, memory_lengths = model.encode_text(batch["src"], batch["src_lengths"])
            source_ids = batch["src"][0, :n_src].tolist()
            positions: dict[str, list[int | None]] = {"textual": source_ids}
            transcript = pieces_text([src_tokens[i] for i in source_ids])
        else:
            enc = model.encode(batch["feats"], batch["feats_lengths"])
            memory, memory_lengths = enc.memory, enc.memory_lengths
            frames = enc.ctc_logits[0, : int(enc.ctc_lengths[0])]
            positions = {"acoustic": ctc_frame_labels(frames)}
            if getattr(model, "textual", None) is not None:  # ST, unless it is the E2E baseline
                adaptor = model.conf.adaptor
                positions["textual"] = (shrink_segment_labels(frames, adaptor.keep_blank)
                                        if adaptor.kind.shrinks else positions["acoustic"])
            transcript = pieces_text([src_tokens[i] for i in ctc_greedy(enc.ctc_logits, enc.ctc_lengths)[0]])
        ys_in = torch.tensor([[model.sos, *hyp]], device=device)
        logits, _ = model.decoder(memory, memory_lengths, ys_in, torch.tensor([len(hyp) + 1], device=device))
    stops = int(logits[0, -1].argmax()) == model.eos
    targets = [out_tokens[i] for i in hyp] + ([EOS_LABEL] if stops else [])
    memory_name = "textual" if getattr(model, "textual", None) is not None else "acoustic"
    sizes = {name: len(labels) for name, labels in positions.items()}
    if sizes[memory_name] != int(memory_lengths[0]):
        raise RuntimeError(f"{memory_name} labels cover {sizes[memory_name]} positions, the memory has "
                           f"{int(memory_lengths[0])}")
    maps = {}
    for (kind, layer), attn in store.maps.items():
        rows, cols = (len(targets), sizes[memory_name]) if kind == "cross" else (sizes[kind], sizes[kind])
        maps[(kind, layer)] = attn[0, :, :rows, :cols].float().cpu()
    return UtteranceAttention(
        utt=batch["ids"][0], task=model.task, targets=targets,
        positions={name: [None if i is None else src_tokens[i] for i in ids] for name, ids in positions.items()},
        memory=memory_name, maps=maps, transcript=transcript, translation=pieces_text(targets[: len(hyp)]))


def parse_choice(value: str) -> int | None:
    """``--layer``/``--head`` values: a 1-based number in digits 0-9, or "mean" (returned as None). `int()` alone
    took '١' (an Arabic-Indic one), ' 2 ' and '1_0' (as layer 10), which every other whole-number option refuses
    (`sate.numbers.whole_number`; nineteenth hostile pass)."""
    if value == "mean":
        return None
    number = int(value) if is_digits(value) else 0
    if number < 1:
        raise ValueError(f"expected 'mean' or a number >= 1, got {value!r}")
    return number


def select(view: UtteranceAttention, kind: str, layer: int | None, head: int | None) -> torch.Tensor:
    """The (T1, T2) map of one layer (None: mean of all) and head (None: mean of all) of ``kind``."""
    depth = view.depth(kind)
    if layer is not None and layer > depth:
        raise SateError(f"--layer {layer}: the {'decoder' if kind == 'cross' else kind + ' encoder'} "
                        f"has {depth} layers")
    stack = torch.stack([view.maps[(kind, k)] for k in range(1, depth + 1)])  # (L, H, T1, T2)
    heads = stack.size(1)
    if head is not None and head > heads:
        raise SateError(f"--head {head}: the {'decoder' if kind == 'cross' else kind + ' encoder'} has {heads} heads")
    chosen = stack.mean(0) if layer is None else stack[layer - 1]
    return chosen.mean(0) if head is None else chosen[head - 1]


def plot_attention(matrix: torch.Tensor, row_labels: Sequence[str | None], col_labels: Sequence[str | None],
                   title: str, xlabel: str, ylabel: str) -> bytes:
    """A heatmap PNG of ``matrix`` (rows, cols); only labelled positions get a tick. Chinese or Japanese tokens (an
    en-zh model's rows) are drawn with an installed CJK font."""
    return drawn(lambda: _plot_attention(matrix, row_labels, col_labels, title, xlabel, ylabel), title)


def _plot_attention(matrix: torch.Tensor, row_labels: Sequence[str | None], col_labels: Sequence[str | None],
                    title: str, xlabel: str, ylabel: str) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # heavy: matplotlib, for plots only
    from matplotlib.figure import Figure  # heavy: matplotlib, for plots only

    rows, cols = matrix.shape
    width, height = figure_inches(rows, cols)
    fig = Figure(figsize=(width, height), dpi=HEATMAP_DPI, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    image = ax.imshow(matrix.numpy(), aspect="auto", interpolation="nearest", cmap="viridis", vmin=0.0)
    for set_ticks, labels in ((ax.set_xticks, col_labels), (ax.set_yticks, row_labels)):
        ticked = [(k, label) for k, label in enumerate(labels) if label is not None]
        set_ticks([k for k, _ in ticked], [plot_text(label) for _, label in ticked], fontsize=7)
    ax.tick_params(axis="x", labelrotation=90)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(plot_text(title), fontsize=9)  # the model's and the audio's names
    fig.colorbar(image, ax=ax, label="attention weight", aspect=max(10.0, height / 0.2))  # a bar 0.2 in wide
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=HEATMAP_DPI)
    return png.getvalue()


def _choice_name(layer: int | None, head: int | None) -> str:
    return f"layer {'mean' if layer is None else layer}, head {'mean' if head is None else head}"


def layer_path(out: Path, encoder: str, layer: int) -> Path:
    """Where the self-attention map of ``layer`` of ``encoder`` goes: ``<stem>.<encoder>-layer<l>.png`` beside
    ``out``."""
    return out.with_name(f"{out.stem}.{encoder}-layer{layer}{out.suffix}")


def output_paths(out: Path, encoder_layers: Sequence[int]) -> list[Path]:
    """Every file `write_heatmaps` may write for ``--out`` and ``--encoder-layers`` (each encoder a model may have),
    for checking them all before any work."""
    return [out, *(layer_path(out, encoder, k) for encoder in ENCODERS for k in dict.fromkeys(encoder_layers))]


def earlier_maps(out: Path) -> list[Path]:
    """The self-attention maps an earlier run wrote beside ``out`` (``<stem>.<encoder>-layer<l>.png``, regular
    files or links), where ``out`` itself is there: they go with it when it is replaced."""
    if not out.is_file() or not out.parent.is_dir():
        return []
    names = {f"{out.stem}.{encoder}-layer": encoder for encoder in ENCODERS}
    found = []
    for path in out.parent.iterdir():
        head, _, rest = path.name.rpartition("-layer")
        layer = rest[: len(rest) - len(out.suffix)] if out.suffix and rest.endswith(out.suffix) else ""
        if f"{head}-layer" in names and is_digits(layer) and (path.is_symlink() or path.is_file()):
            found.append(path)
    return sorted(found)


def write_heatmaps(view: UtteranceAttention, out: Path, name: str, layer: int | None, head: int | None,
                   encoder_layers: Sequence[int]) -> list[Path]:
    """The cross-attention PNG at ``out`` plus one self-attention PNG per encoder and requested layer, replaced
    together once all are drawn: a full disk or a kill at a layer's map left the new cross-attention map beside
    the old maps of another utterance or model. The maps of an earlier run there that this one does not draw
    (other layers, an encoder this model lacks) are removed with them: they stayed beside the new map, a textual
    encoder's map of an ST model beside an ASR model's cross-attention, exit 0 (twenty-third hostile pass)."""
    deepest = max(view.depth(e) for e in ENCODERS)
    too_deep = [k for k in encoder_layers if not 1 <= k <= deepest]
    if too_deep:
        raise SateError(f"--encoder-layers {too_deep[0]}: the encoders of {name} have 1..{deepest} layers")
    unit = "source token" if view.task == "mt" else f"{view.memory} position (CTC token)"
    written = {out: plot_attention(select(view, "cross", layer, head), view.targets, view.positions[view.memory],
                                   f"{name} · {view.utt} · cross-attention, {_choice_name(layer, head)}", unit,
                                   "output token (greedy)")}
    for encoder in (e for e in ENCODERS if e in view.positions):
        labels = view.positions[encoder]
        unit = "source token" if view.task == "mt" else f"{encoder} position (CTC token)"
        for k in encoder_layers:
            if k > view.depth(encoder):
                print(f"{encoder} encoder has {view.depth(encoder)} layers: no map for layer {k}")
                continue
            written[layer_path(out, encoder, k)] = plot_attention(
                select(view, encoder, k, head), labels, labels,
                f"{name} · {view.utt} · {encoder} self-attention, {_choice_name(k, head)}", f"key: {unit}",
                f"query: {unit}")
    replace_together(written, remove=[path for path in earlier_maps(out) if path not in written])
    return list(written)
