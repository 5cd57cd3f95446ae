"""What CTC and the soft adaptor cost over a Marian vocabulary: `python -m sate.bench --parts ctc-vocab`.

With a Marian textual side, CTC runs over Marian pieces and the soft branch multiplies the CTC posteriors by
Marian's embedding: two (frames x V) products, a (frames x V) softmax and its CTC loss, and the shrink
adaptor's pooling of (frames x V) logits, all in the forward and the backward pass. Over every Marian id
(58,101 for opus-mt-en-de) V is large, and most of it is the target language's pieces, which speech never holds;
`sate vocab --marian` keeps the source pieces of the train transcripts instead (`sate.data.marian_vocab`).

This part times one training step (forward, backward) of a wav2vec2-base-sized acoustic encoder (our
`HubAcousticEncoder` with wav2vec2-base's settings and random weights: speed does not depend on what a model
has learnt; frozen feature extractor, as the recipe trains it) with its projection to d_model 512, alone and
followed by CTC (loss) and the shrink adaptor (league: pooling, P·E, linear branch) at each vocabulary size,
on a fixed batch of random audio; the fastest of --repeat runs counts (with --threads 1 on the thread's CPU
clock, which a busy machine does not advance), and the peak resident memory rise of the step is the
activations' cost. The sizes are given (--vocab-sizes), first the full vocabulary; a data
directory's own subset is `sate vocab --marian`'s printed count.
"""

from __future__ import annotations

from typing import Any, TypedDict

import torch

from sate.bench.measure import fastest, stopwatch
from sate.bench.train import thread_stopwatch
from sate.models.config import AcousticConfig, AdaptorConfig, CTCConfig
from sate.models.hub.settings import SpeechHub

D_MODEL = 512  # opus-mt's width
FULL_VOCAB = 58101  # opus-mt-en-de's vocab.json
DEFAULT_SIZES = (FULL_VOCAB, 24000, 12000)
# above any Marian vocabulary (and NLLB's 256,206): each piece costs the step about 8 KB of parameters and their
# gradients and 8 KB of activations (471 MiB at 58,101, BENCHMARKS.md), so 10^9 was terabytes (28th hostile pass)
MAX_SIZE = 2**18
BATCH, SECONDS = 1, 10.0  # utterances of the timed batch, and their length
TOKENS_PER_SECOND = 4.0  # CTC targets per second of speech (an assumption: TED speech in subword pieces)
# wav2vec2-base (facebook/wav2vec2-base's config.json) in the form of an acoustic.hub dict.
WAV2VEC2_BASE: SpeechHub = {"model_type": "wav2vec2", "extractor_mode": "group_norm",
                 "conv_layers": [[512, 10, 5]] + [[512, 3, 2]] * 4 + [[512, 2, 2]] * 2, "feat_proj_layer_norm": True,
                 "conv_bias": False, "hidden_size": 768, "pos_conv_kernel": 128, "pos_conv_groups": 16, "layers": 12,
                 "heads": 12, "ffn": 3072, "layer_norm_first": False, "projection_dropout": 0.1,
                 "attention_dropout": 0.1, "ff_interm_dropout": 0.0, "dropout": 0.1, "layer_drop": 0.0,
                 "layer_norm_eps": 1e-5, "do_normalize": True}


class VocabRow(TypedDict):
    """A training step with CTC and the adaptor over `vocab` pieces."""

    vocab: int
    seconds: float
    overhead: float  # over the encoder alone
    rss_rise_mib: int
    extra_rise_mib: int  # over the encoder alone
    logits_mib: float


class StepCost(TypedDict):
    seconds: float
    rss_rise_mib: int


class CtcVocabResult(TypedDict):
    """The ctc-vocab part's figures."""

    batch: int
    seconds_per_utterance: float
    frames_per_utterance: int
    d_model: int
    encoder: str
    encoder_alone: StepCost
    clock: str
    repeat: int
    rows: list[VocabRow]  # per --vocab-sizes


class _Head(torch.nn.Module):
    """CTC over `vocab` and the shrink (league) adaptor reading its posteriors and an embedding (vocab, D)."""

    def __init__(self, vocab: int) -> None:
        from sate.models.adaptor import build_adaptor  # heavy: ESPnet
        from sate.models.ctc import build_ctc  # heavy: ESPnet

        super().__init__()
        self.ctc = build_ctc(vocab, D_MODEL, CTCConfig())
        self.adaptor = build_adaptor(AdaptorConfig(type="shrink"), D_MODEL)
        self.embedding = torch.nn.Parameter(torch.randn(vocab, D_MODEL) * D_MODEL**-0.5)

    def forward(self, h: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor,
                target_lengths: torch.Tensor) -> torch.Tensor:
        from sate.models.ctc import ctc_logits  # heavy: ESPnet
        from sate.models.losses import ctc_loss  # heavy: ESPnet

        logits = ctc_logits(self.ctc, h)
        adapted, _ = self.adaptor(h, lengths, logits, self.embedding)
        return ctc_loss(self.ctc, logits, lengths, targets, target_lengths) + adapted.square().mean()


def _step(encoder: torch.nn.Module, head: _Head | None, batch: dict[str, torch.Tensor],
          clock: Any = stopwatch) -> float:
    lap = clock()
    h, lengths = encoder(batch["wave"], batch["lengths"])
    loss = h.square().mean() if head is None else head(h, lengths, batch["targets"], batch["target_lengths"])
    loss.backward()
    seconds = lap()
    encoder.zero_grad(set_to_none=True)
    if head is not None:
        head.zero_grad(set_to_none=True)
    return seconds


def run(sizes: list[int], repeat: int) -> CtcVocabResult:
    """Step seconds and peak memory rise of the encoder alone and with CTC + adaptor at each size."""
    from sate.models.hub.speech import HubAcousticEncoder  # heavy: torch

    torch.manual_seed(0)
    conf = AcousticConfig(type="hf_wav2vec2", hub=WAV2VEC2_BASE, freeze_feature_extractor=True)
    encoder = HubAcousticEncoder(conf, D_MODEL).train()
    samples = int(SECONDS * 16000)
    tokens = int(SECONDS * TOKENS_PER_SECOND)
    batch = {"wave": 0.1 * torch.randn(BATCH, samples), "lengths": torch.full((BATCH,), samples),
             "targets": torch.randint(1, min(sizes), (BATCH, tokens)), "target_lengths": torch.full((BATCH,), tokens)}
    frames = int(encoder(batch["wave"][:1], batch["lengths"][:1])[1][0])
    clock, clock_name = ((thread_stopwatch, "thread CPU time (one torch thread)") if torch.get_num_threads() == 1
                         else (stopwatch, f"wall clock ({torch.get_num_threads()} torch threads)"))
    alone, alone_peak = fastest(lambda: _step(encoder, None, batch, clock), repeat, float)
    rows = []
    for vocab in sizes:
        head = _Head(vocab).train()
        seconds, peak = fastest(lambda head=head: _step(encoder, head, batch, clock), repeat, float)
        rows.append(VocabRow(vocab=vocab, seconds=round(seconds, 3), overhead=round(seconds / alone - 1, 3),
                             rss_rise_mib=round(peak.rise_mib),
                             extra_rise_mib=round(peak.rise_mib - alone_peak.rise_mib),
                             logits_mib=round(BATCH * frames * vocab * 4 / 2**20, 1)))
        del head
    return CtcVocabResult(batch=BATCH, seconds_per_utterance=SECONDS, frames_per_utterance=frames, d_model=D_MODEL,
                          encoder="wav2vec2-base (random weights), frozen feature extractor",
                          encoder_alone=StepCost(seconds=round(alone, 3), rss_rise_mib=round(alone_peak.rise_mib)),
                          clock=clock_name, repeat=repeat, rows=rows)


def table(result: CtcVocabResult) -> str:
    head = (f"training step, {result['batch']} x {result['seconds_per_utterance']:g} s "
            f"({result['frames_per_utterance']} frames each), {result['encoder']}, fastest of {result['repeat']} on "
            f"the {result['clock']}: encoder alone {result['encoder_alone']['seconds']} s, peak rise "
            f"{result['encoder_alone']['rss_rise_mib']} MiB")
    lines = [head, "| CTC vocabulary | step s | added to the step | peak rise MiB (added) | logits MiB |",
             "|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['vocab']} | {r['seconds']} | {r['overhead']:+.0%} | {r['rss_rise_mib']} "
                     f"({r['extra_rise_mib']:+d}) | {r['logits_mib']} |")
    return "\n".join(lines)


def summary_line(result: CtcVocabResult) -> str:
    rows = result["rows"]
    return "  CTC + soft adaptor over a Marian vocabulary: " + ", ".join(
        f"{r['vocab']} pieces {r['overhead']:+.0%} ({r['extra_rise_mib']:+d} MiB)" for r in rows) + \
        " of a wav2vec2-base step"
