"""Training step: our SATE model against ESPnet's `ESPnetSTModel` with a `hier_encoder`, on the CPU.

ESPnet-ST-v2's hierarchical encoder is SATE without the adaptor: an ASR encoder with CTC on its output,
then a second encoder stacked on it, then the decoder. The ESPnet model is built from ESPnet's own
modules with our model's dimensions: its ``encoder`` is our acoustic encoder's ESPnet class and arguments
(with our narrower conv2d front-end when the config sets ``frontend_channels``, so the work is the same),
``hier_encoder`` a `TransformerEncoder` with our textual encoder's arguments, ``decoder`` and ``ctc`` the
same classes as ours, and every weight is copied from our model. Its loss is ours without distillation:
``asr_weight`` = our ``ctc_weight`` with ``mtlalpha`` 1 (CTC on the first encoder's output), label
smoothing ours. Our model runs with distillation off (teachers would add forward passes ESPnet does not
make); what it does beyond ESPnet is the adaptor and the positions before the textual encoder.

Both run in train mode (dropout as configured, no SpecAugment) on the same batches: the first batches of
our bucketed sampler over the data dir's train split, or, with --tiny, synthetic fbank of MuST-C-like
lengths. A step is zero_grad + forward + backward (no optimizer update). Repetitions alternate the two
models (ABAB, BABA, ...), so that load on a shared machine hits both alike; each batch counts its fastest
of `repeat` steps per model, and the spread is the range of the per-repetition ratios. With one torch
thread (``--threads 1``) steps are timed on the thread's CPU clock, which time spent waiting for a busy
core does not advance; with more threads, on the wall clock. Frames/s counts real (unpadded) input
frames; ratio = our frames/s over ESPnet's (above 1: ours is faster). What our model computes beyond
ESPnet's, the adaptor and the positions, is also timed alone, and ``ratio_without_adaptor`` takes it out
of our time. Peak memory (`sate.bench.measure`) is taken in one more step per batch and model after the
timed ones: the garbage collection and heap trim it starts with would add page faults to a timed step.

Two checks go with the figures: a profile of one of our steps (the operators with the largest share of
its CPU time), and the loss of both models in eval mode on utterances of the first batch, each alone,
ESPnet's computed through our adaptor and positions so that both are the same function (alone, because
our acoustic encoder is deliberately independent of padding where ESPnet's is not).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import NotRequired, TypedDict

import numpy as np
import torch

from sate import layout
from sate.bench.data import mustc_like_durations
from sate.bench.measure import Peak, peak_memory, stopwatch
from sate.bench.subject import Subject
from sate.config import read_yaml
from sate.data.dataset import Batch, Item, collate
from sate.data.sampler import BucketBatchSampler, pack_batches, padding_ratio
from sate.errors import SateError, shown
from sate.models import build_model
from sate.models.acoustic import FEATURE_DIM, espnet_encoder_kwargs, narrow_frontend
from sate.models.base import SateModel
from sate.models.build import MODEL_CLASSES
from sate.models.config import resolve_config
from sate.models.decoder import espnet_decoder_kwargs
from sate.models.espnet_blocks import CTC, ConformerEncoder, TransformerDecoder, TransformerEncoder
from sate.models.textual import espnet_textual_kwargs
from sate.numbers import is_int64

DEFAULT_MAX_FRAMES = 20000
MUSTC_TRAIN_SIZE = 229_700
GOAL_RATIO = 1.25
LOSS_TOLERANCE = 1e-4
NO_DISTILLATION = {"asr_weight": 0.0, "mt_weight": 0.0, "topk": 0, "asr_teacher": None, "mt_teacher": None}


def default_max_frames(model_path: Path) -> int:
    """The batch cap the model was trained with (``batch.per_device`` of config.yaml beside it), else 20000. The
    file is read as every config is (bounded, its errors one line): a hand-edited one (`per_device: abc`, `batch:
    [1]`, not YAML) was a ValueError, AttributeError or ScannerError traceback."""
    config = model_path.parent / layout.CONFIG
    if not config.is_file():
        return DEFAULT_MAX_FRAMES
    batch = read_yaml(config).get("batch", {})
    if not isinstance(batch, dict):
        raise SateError(f"{config}: batch must be a mapping of keys, got {shown(batch)} (or give --max-frames)")
    per_device = batch.get("per_device")
    if per_device is None:
        return DEFAULT_MAX_FRAMES
    if not is_int64(per_device) or per_device < 1:
        raise SateError(f"{config}: batch.per_device must be a whole number of at least 1, got {shown(per_device)} "
                        "(or give --max-frames)")
    return int(per_device)


def ours_for_training(model: SateModel, fast_modules: bool = True) -> SateModel:
    """A copy of the model with distillation off, in train mode; with `fast_modules` False, with ESPnet's
    dropout, Swish and attention modules as ESPnet builds them (the row that shows what
    `sate.models.fast_modules` gains)."""
    conf = model.conf.to_dict()
    conf["loss"]["kd"] = dict(NO_DISTILLATION)
    if fast_modules:
        ours = build_model("st", conf, model.src_vocab_size, model.tgt_vocab_size)
    else:
        ours = MODEL_CLASSES["st"](resolve_config("st", conf), model.src_vocab_size, model.tgt_vocab_size)
    ours.load_state_dict(model.state_dict())
    return ours.train()


def espnet_counterpart(model: SateModel, src_tokens: list[str], tgt_tokens: list[str]) -> torch.nn.Module:
    """ESPnet's ST model with a hier_encoder, our dimensions and our weights (module docstring)."""
    from espnet2.st.espnet_model import ESPnetSTModel  # heavy: ESPnet

    conf, d_model = model.conf, model.conf.d_model
    name, kwargs = espnet_encoder_kwargs(conf.acoustic, d_model)
    encoder = (ConformerEncoder if name == "conformer" else TransformerEncoder)(FEATURE_DIM, **kwargs)
    channels = conf.acoustic.frontend_channels
    if channels is not None and channels != d_model:
        narrow_frontend(encoder.embed, FEATURE_DIM, channels, d_model)
    encoder.load_state_dict(model.acoustic.encoder.state_dict())
    hier = None
    if model.textual is not None:
        hier = TransformerEncoder(d_model, **espnet_textual_kwargs(conf.textual, d_model))
        hier.load_state_dict(model.textual.encoder.state_dict())
    decoder = TransformerDecoder(model.tgt_vocab_size, d_model, **espnet_decoder_kwargs(conf.decoder))
    decoder.load_state_dict(model.decoder.state_dict())
    ctc = CTC(odim=model.src_vocab_size, encoder_output_size=d_model, dropout_rate=0.0, zero_infinity=True)
    ctc.load_state_dict(model.ctc.state_dict())
    return ESPnetSTModel(
        vocab_size=model.tgt_vocab_size, token_list=list(tgt_tokens), frontend=None, specaug=None, normalize=None,
        preencoder=None, encoder=encoder, hier_encoder=hier, md_encoder=None, extra_mt_encoder=None,
        postencoder=None, decoder=decoder, extra_asr_decoder=None, extra_mt_decoder=None, ctc=ctc, st_ctc=None,
        st_joint_network=None, src_vocab_size=model.src_vocab_size, src_token_list=list(src_tokens),
        asr_weight=conf.loss.ctc_weight, mt_weight=0.0, mtlalpha=1.0, st_mtlalpha=0.0,
        lsm_weight=conf.loss.label_smoothing, report_cer=False, report_wer=False, report_bleu=False,
    ).train()


def real_batches(subject: Subject, max_frames: int, count: int) -> tuple[list[Batch], np.ndarray]:
    """The first `count` batches of epoch 0 of our sampler over the train split, and the split's lengths."""
    dataset = subject.dataset("train")
    sampler = BucketBatchSampler(dataset.lengths, max_frames=max_frames, seed=0)
    return [collate([dataset[i] for i in b]) for b in list(sampler)[:count]], np.asarray(dataset.lengths)


class PaddingWaste(TypedDict):
    bucketed: float  # our sampler
    random: float  # random batches under the same cap


class Padding(TypedDict):
    measured_batches: float
    synthetic_lengths: NotRequired[PaddingWaste]  # --tiny
    train_split: NotRequired[PaddingWaste]  # a model's data
    mustc_like_229k: PaddingWaste


class StepFigures(TypedDict):
    """One model's training steps over the batches (fastest per batch)."""

    seconds: float
    frames_per_s: int
    peak_rss_mib: int
    rss_rise_mib: int
    ratio: NotRequired[float]  # ours: frames/s over ESPnet's
    adaptor_seconds: NotRequired[float]  # sate: of which the adaptor and positions


class ModelSummary(TypedDict):
    d_model: int
    acoustic: str
    adaptor: str
    textual_layers: int
    decoder_layers: int
    parameters_sate: int
    parameters_espnet: int


class Spread(TypedDict):
    ratios_per_repeat: list[float]
    min: float
    max: float


class LossCheck(TypedDict):
    utterances_alone: int
    max_abs_difference: float
    tolerance: float
    equal: bool


class ProfileRow(TypedDict):
    op: str
    share: float  # of the step's self CPU time
    calls: int


class TrainGoal(TypedDict):
    ratio_at_least: float
    met: bool


class TrainResult(TypedDict):
    """The train part's figures."""

    batches_from: str
    max_frames: int
    batches: int
    utterances: int
    frames: int
    repeat: int
    clock: str
    peak_method: str
    model: ModelSummary
    sate: StepFigures
    espnet: StepFigures
    sate_espnet_modules: StepFigures
    ratio: float
    ratio_without_adaptor: float
    spread: Spread
    loss_check: LossCheck
    profile_sate_step: list[ProfileRow]
    goal: TrainGoal
    padding: Padding


def synthetic_batches(subject: Subject, max_frames: int, count: int) -> tuple[list[Batch], np.ndarray]:
    """Random fbank of MuST-C-like lengths, with token counts at the train split's tokens per second."""
    dataset = subject.dataset("train")
    seconds = sum(float(r["duration"]) for r in dataset.rows)
    src_rate = sum(len(s) for s in dataset.src) / seconds
    tgt_rate = sum(len(t) for t in dataset.tgt) / seconds
    rng = np.random.default_rng(0)
    durations = mustc_like_durations(rng, 2000)
    lengths = np.round(durations * 100).astype(int)  # 100 fbank frames a second
    sampler = BucketBatchSampler(lengths, max_frames=max_frames, seed=0)
    gen = torch.Generator().manual_seed(0)

    def tokens(rate: float, duration: float, vocab: int) -> torch.Tensor:
        # ids 1 .. vocab-2: never <blank> (0) nor <sos/eos> (last)
        return torch.randint(1, vocab - 1, (max(1, round(rate * duration)),), generator=gen)

    def item(i: int) -> Item:
        return Item(id=f"synthetic_{i}", feats=torch.randn(int(lengths[i]), FEATURE_DIM, generator=gen),
                    src=tokens(src_rate, durations[i], subject.model.src_vocab_size),
                    tgt=tokens(tgt_rate, durations[i], subject.model.tgt_vocab_size))

    return [collate([item(i) for i in batch]) for batch in list(sampler)[:count]], lengths


def padding_waste(lengths: np.ndarray, max_frames: int) -> PaddingWaste:
    """Share of the padded batch tensors that is padding: our bucketed sampler against random batches."""
    order = np.random.default_rng(0).permutation(len(lengths))
    return PaddingWaste(bucketed=round(BucketBatchSampler(lengths, max_frames=max_frames, seed=0).padding_ratio(), 4),
                        random=round(padding_ratio(pack_batches(order, lengths, max_frames), lengths), 4))


def thread_stopwatch() -> Callable[[], float]:
    """CPU seconds of this thread since the call: all of a one-thread step's work, none of its waiting."""
    start = time.thread_time()
    return lambda: time.thread_time() - start


def _step(model: torch.nn.Module, batch: Batch, espnet: bool,
          clock: Callable[[], Callable[[], float]] = stopwatch) -> float:
    """One zero_grad + forward + backward; returns the seconds of forward + backward on `clock`."""
    model.zero_grad(set_to_none=True)
    lap = clock()
    if espnet:
        loss = model(speech=batch["feats"], speech_lengths=batch["feats_lengths"], text=batch["tgt"],
                     text_lengths=batch["tgt_lengths"], src_text=batch["src"], src_text_lengths=batch["src_lengths"])[0]
    else:
        loss = model(batch)["loss"]
    loss.backward()
    return lap()


def adaptor_seconds(model: SateModel, batches: list[Batch], repeat: int,
                    clock: Callable[[], Callable[[], float]] = stopwatch) -> float:
    """Forward + backward of the adaptor and the positions alone, on the batches' acoustic states: the work
    SATE adds to ESPnet's hierarchical encoder (fastest of `repeat` passes over the batches), on the steps' own
    `clock`: taken out of a step's thread CPU time, the adaptor's wall time (which waiting for a busy core
    lengthens) made `ratio_without_adaptor` too high on a loaded machine (26th hostile pass)."""
    if model.adaptor is None:
        return 0.0
    with torch.no_grad():
        states = [model.acoustic(b["feats"], b["feats_lengths"]) for b in batches]
        inputs = [(h, lengths, model.ctc.ctc_lo(h)) for h, lengths in states]
    embedding = None if model.src_embed is None else model.src_embed.weight
    best = float("inf")
    for _ in range(repeat):
        total = 0.0
        for h, lengths, logits in inputs:
            h, logits = h.detach().requires_grad_(), logits.detach().requires_grad_()
            lap = clock()
            adapted, _ = model.adaptor(h, lengths, logits, embedding)
            model.textual.positions(adapted).sum().backward()
            total += lap()
        best = min(best, total)
    return best


def profile_step(model: torch.nn.Module, batch: Batch, top: int = 8) -> list[ProfileRow]:
    """The operators with the largest share of one training step's self CPU time."""
    from torch.profiler import ProfilerActivity, profile  # heavy: torch

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _step(model, batch, espnet=False)
    rows = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in rows) or 1.0
    return [ProfileRow(op=e.key, share=round(e.self_cpu_time_total / total, 3), calls=e.count) for e in rows[:top]]


def espnet_loss_through_adaptor(ours: SateModel, espnet: torch.nn.Module, batch: Batch) -> torch.Tensor:
    """ESPnet's ST loss with our adaptor and positions between its two encoders: the function ours computes."""
    feats, lengths = batch["feats"], batch["feats_lengths"]
    asr_out, asr_lengths, _ = espnet.encoder(feats, lengths)
    loss_ctc, _ = espnet._calc_asr_ctc_loss(asr_out, asr_lengths, batch["src"], batch["src_lengths"])
    st_in, st_lengths = asr_out, asr_lengths
    if ours.adaptor is not None:
        st_in, st_lengths = ours.adaptor(asr_out, asr_lengths, ours.ctc.ctc_lo(asr_out), ours._soft_embedding())
        st_in = ours.textual.positions(st_in)
    if espnet.hier_encoder is not None:
        st_in, st_lengths, _ = espnet.hier_encoder(st_in, st_lengths)
    loss_st, _, _ = espnet._calc_mt_att_loss(st_in, st_lengths, batch["tgt"], batch["tgt_lengths"], None, None)
    return (1 - espnet.asr_weight) * loss_st + espnet.asr_weight * loss_ctc


def loss_difference(ours: SateModel, espnet: torch.nn.Module, batch: Batch, count: int = 4) -> float:
    """The largest |our loss - ESPnet's| in eval mode over the first `count` utterances of `batch`, each alone."""
    worst = 0.0
    ours.eval(), espnet.eval()
    try:
        with torch.no_grad():
            for i in range(min(count, len(batch["ids"]))):
                alone = {k: v[i:i + 1] for k, v in batch.items() if isinstance(v, torch.Tensor)}
                for key in ("feats", "src", "tgt"):  # cut each to its own length: no padding at all
                    alone[key] = alone[key][:, :int(alone[f"{key}_lengths"][0])]
                diff = ours(alone)["loss"] - espnet_loss_through_adaptor(ours, espnet, alone)
                worst = max(worst, abs(float(diff)))
    finally:
        ours.train(), espnet.train()
    return worst


def run(subject: Subject, max_frames: int, batch_count: int, repeat: int) -> TrainResult:
    """Time forward + backward of both models on the same batches; padding waste of our sampler."""
    make = synthetic_batches if subject.tiny else real_batches
    batches, lengths = make(subject, max_frames, batch_count)
    models = {"sate": ours_for_training(subject.model),
              "espnet": espnet_counterpart(subject.model, subject.meta["src_tokens"], subject.meta["tgt_tokens"]),
              "sate_espnet_modules": ours_for_training(subject.model, fast_modules=False)}
    clock, clock_name = ((thread_stopwatch, "thread CPU time (one torch thread)") if torch.get_num_threads() == 1
                         else (stopwatch, f"wall clock ({torch.get_num_threads()} torch threads)"))
    best = {name: [float("inf")] * len(batches) for name in models}
    per_repeat: list[float] = []
    peaks = {name: Peak() for name in models}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*torch\.cuda\.amp\.autocast", category=FutureWarning)
        # first, while BatchNorm's running statistics are still the same in both (training steps update them
        # from padded batches, which our encoder zeroes and ESPnet's does not)
        difference = loss_difference(models["sate"], models["espnet"], batches[0])
        for name, model in models.items():  # warm-up: first calls allocate
            _step(model, batches[0], name == "espnet")
        for r in range(repeat):
            order = list(models) if r % 2 == 0 else list(models)[::-1]
            spent = dict.fromkeys(models, 0.0)
            for k, batch in enumerate(batches):
                for name in order:
                    seconds = _step(models[name], batch, name == "espnet", clock)
                    spent[name] += seconds
                    best[name][k] = min(best[name][k], seconds)
            per_repeat.append(spent["espnet"] / spent["sate"])
        profile = profile_step(models["sate"], batches[0])
        for name, model in models.items():  # apart: its heap trim would add page faults to the timed steps
            for batch in batches:
                with peak_memory() as peak:
                    _step(model, batch, name == "espnet")
                peaks[name].add(peak)
    frames = sum(int(b["feats_lengths"].sum()) for b in batches)
    padded = sum(b["feats"].shape[0] * b["feats"].shape[1] for b in batches)
    figures = {name: StepFigures(seconds=round(sum(best[name]), 3), frames_per_s=round(frames / sum(best[name])),
                                 peak_rss_mib=round(peaks[name].peak_mib), rss_rise_mib=round(peaks[name].rise_mib))
               for name in models}
    ratio = round(figures["sate"]["frames_per_s"] / figures["espnet"]["frames_per_s"], 3)
    for name in ("sate", "sate_espnet_modules"):
        figures[name]["ratio"] = round(figures[name]["frames_per_s"] / figures["espnet"]["frames_per_s"], 3)
    adaptor = adaptor_seconds(models["sate"], batches, repeat, clock)
    figures["sate"]["adaptor_seconds"] = round(adaptor, 6)
    conf = subject.model.conf
    mustc = np.round(mustc_like_durations(np.random.default_rng(1), MUSTC_TRAIN_SIZE) * 100).astype(int)
    padding: Padding = {"measured_batches": round(1 - frames / padded, 4),
                        ("synthetic_lengths" if subject.tiny else "train_split"): padding_waste(lengths, max_frames),
                        "mustc_like_229k": padding_waste(mustc, max_frames)}
    return TrainResult(
        batches_from="synthetic fbank, MuST-C-like lengths (--tiny)" if subject.tiny else "train split",
        max_frames=max_frames, batches=len(batches), utterances=sum(len(b["ids"]) for b in batches),
        frames=frames, repeat=repeat, clock=clock_name, peak_method=peaks["sate"].method,
        model=ModelSummary(d_model=conf.d_model, acoustic=f"{conf.acoustic.type} x{conf.acoustic.layers}",
                           adaptor=conf.adaptor.type, textual_layers=conf.textual.layers,
                           decoder_layers=conf.decoder.layers,
                           parameters_sate=sum(p.numel() for p in models["sate"].parameters()),
                           parameters_espnet=sum(p.numel() for p in models["espnet"].parameters())),
        sate=figures["sate"], espnet=figures["espnet"], sate_espnet_modules=figures["sate_espnet_modules"],
        ratio=ratio,
        ratio_without_adaptor=round(sum(best["espnet"]) / (sum(best["sate"]) - adaptor), 3),
        spread=Spread(ratios_per_repeat=[round(x, 3) for x in per_repeat], min=round(min(per_repeat), 3),
                      max=round(max(per_repeat), 3)),
        loss_check=LossCheck(utterances_alone=min(4, len(batches[0]["ids"])), max_abs_difference=difference,
                             tolerance=LOSS_TOLERANCE, equal=difference <= LOSS_TOLERANCE),
        profile_sate_step=profile,
        goal=TrainGoal(ratio_at_least=GOAL_RATIO, met=ratio >= GOAL_RATIO and difference <= LOSS_TOLERANCE),
        padding=padding,
    )


def table(result: TrainResult) -> str:
    m, pad = result["model"], result["padding"]
    lines = [f"Training step (forward + backward, CPU): {result['batches']} batches ({result['utterances']} "
             f"utterances, {result['frames']} frames, cap {result['max_frames']}) from {result['batches_from']}, "
             f"fastest of {result['repeat']} on the {result['clock']}",
             f"model: d {m['d_model']}, acoustic {m['acoustic']}, adaptor {m['adaptor']}, "
             f"textual x{m['textual_layers']}, decoder x{m['decoder_layers']}; "
             f"parameters sate {m['parameters_sate']:,}, espnet {m['parameters_espnet']:,}",
             "model                         seconds  frames/s  ratio  peak RSS MiB (rise)"]
    for name, label in (("espnet", "espnet ESPnetSTModel+hier"), ("sate_espnet_modules", "sate, ESPnet's modules"),
                        ("sate", "sate STModel")):
        f = result[name]
        ratio = f.get("ratio", 1.0)
        lines.append(f"{label:<28s} {f['seconds']:8.2f} {f['frames_per_s']:9d} {ratio:6.2f} "
                     f"{f['peak_rss_mib']:13d} ({f['rss_rise_mib']:4d})")
    spread, check = result["spread"], result["loss_check"]
    lines.append(f"goal: ratio >= {GOAL_RATIO} with equal losses -> {'met' if result['goal']['met'] else 'NOT met'}; "
                 f"per-repetition ratios {spread['min']:.3f}-{spread['max']:.3f}; SATE's adaptor and positions take "
                 f"{result['sate']['adaptor_seconds']:.3f} s of ours; without them "
                 f"{result['ratio_without_adaptor']:.3f}")
    lines.append(f"loss check (eval mode, {check['utterances_alone']} utterances alone): largest |sate - espnet| "
                 f"{check['max_abs_difference']:.2e} -> {'equal' if check['equal'] else 'NOT equal'} "
                 f"(tolerance {check['tolerance']:g})")
    lines.append("profile of one sate step (self CPU): " + ", ".join(
        f"{row['op']} {row['share']:.0%}" for row in result["profile_sate_step"]))
    waste = ", ".join(f"{k.replace('_', ' ')}: bucketed {v['bucketed']:.1%} vs random {v['random']:.1%}"
                      for k, v in pad.items() if isinstance(v, dict))
    lines.append(f"padding waste: measured batches {pad['measured_batches']:.1%}; {waste}")
    return "\n".join(lines)
