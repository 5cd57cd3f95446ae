"""The training config: one frozen dataclass per section, each key with its default, its comment and its range.

`model` is the YAML ``model:`` section as written, resolved by `sate.models.config` when the model is built, and
`init` is checked by `sate.models.pretrained`; every other section is read here by `sate.settings.read`: a key
the defaults do not know, a value of the wrong type or out of range is one `SateError` naming the file and the
key, so a typo or a `--set trainer.max_epochs=ten` never reaches Lightning.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import NamedTuple

from sate.data.features import SPEED_SPLIT
from sate.data.manifest import TRAIN_SPLIT, is_split_name
from sate.decode.options import MAX_LEN_RATIO
from sate.errors import SateError
from sate.models.config import TASKS, ASRLoss
from sate.models.registry import HUB_ACOUSTIC_TYPES
from sate.numbers import is_number, max_jobs
from sate.settings import FRACTION, PATH, POSITIVE, Invalid, Section, at_least, nameable, one_of, section, setting

# The largest `seed` (numpy's seeds are 32-bit: Lightning's seed_everything raised a ValueError past it) and
# `trainer.max_minutes` (Lightning's timer is a timedelta, which overflowed at 1e300 minutes).
MAX_SEED = 2**32 - 1
MAX_MINUTES = 1e9
# SpecAugment's masks per utterance: far beyond any policy (the paper's LD has 2 of each; adaptive ones some tens).
# Each mask is a row of the batch's length (B x masks x frames of booleans): 10^9 time masks asked for terabytes.
MAX_MASKS = 100
MASKS = (lambda v: 0 <= v <= MAX_MASKS, f"from 0 to {MAX_MASKS}")
# Lightning precision strings `trainer.precision` may name ("auto" is resolved by sate.train.trainer).
PRECISIONS = ("auto", "32-true", "bf16-mixed", "16-mixed", "bf16-true", "16-true", "64-true")


def train_splits(value: str | list[str]) -> list[str]:
    """`data.train` as a list: one split name, or several (e.g. MuST-C's train and extra ASR corpora)."""
    return [value] if isinstance(value, str) else list(value)


def trained_twice(value: str | list[str]) -> str | None:
    """What is wrong with a `data.train` listing train beside train_sp, which holds every train row besides its
    speed copies: train's rows were trained on twice an epoch, without a word (hand27t). `sate train` refuses it for
    a fresh run; a run started so before that is resumed with a note, as a resume may not change its data, and
    `sate config` of its snapshot notes it (review of hand27t: the refusal was a loop for such a run)."""
    splits = train_splits(value)
    if TRAIN_SPLIT in splits and SPEED_SPLIT in splits:
        return (f"data.train lists {TRAIN_SPLIT} and {SPEED_SPLIT}: {SPEED_SPLIT} (`sate features --speed-perturb`) "
                f"holds every row of {TRAIN_SPLIT} besides its speed copies, so those rows are trained on twice")
    return None


def _ctc_weight(model: dict) -> object:
    """`model.loss.ctc_weight` of a raw model section, its default where the section leaves it out."""
    loss = model.get("loss")
    return loss.get("ctc_weight", ASRLoss().ctc_weight) if isinstance(loss, dict) else ASRLoss().ctc_weight


def untrained_wer_monitor(task: str, model: dict, monitor: str) -> str | None:
    """What is wrong with `trainer.monitor` valid/wer where `model.loss.ctc_weight` is 0 (asr with a decoder, st):
    valid/wer is the CTC head's greedy WER, and no loss trains that head towards the transcripts (with SATE's soft
    adaptor the translation loss trains it, but for the translation), so its WER (near 100 throughout) chose the best
    checkpoints and the early stop, exit 0 (twenty-eighth hostile pass). `sate train`
    refuses it for a fresh run and resumes a run begun so (a resume may not change its monitor), with a note; `sate
    config` notes it, as `trained_twice`. `model` is the raw section, resolved already (a CTC-only ASR model refuses
    a ctc_weight)."""
    weight = _ctc_weight(model)
    if task != "st" or monitor != "valid/wer" or not is_number(weight) or weight != 0:
        return None  # asr: `untrained_output` says more
    return ("trainer.monitor valid/wer is the CTC head's greedy WER, and with model.loss.ctc_weight 0 no loss trains "
            "that head towards the transcripts: the best checkpoints and the early stop would follow a WER the "
            "training does not lower")


class Untrained(NamedTuple):
    """What `untrained_output` says: why the model's output would be an untrained part's, and what to give instead."""

    why: str
    advice: str


def _ctc_only_st(task: str, model: dict) -> bool:
    """Is this an ST model whose losses train its speech side alone: ctc_weight 1 (the decoder's loss weighted 0) and
    no MT text batches (`model.loss.mt_text_weight` > 0 trains the textual side on text, which a soft adaptor may
    mean)?"""
    weight = _ctc_weight(model)
    return task == "st" and is_number(weight) and weight == 1 and mt_text_weight(model) == 0


def _decoder_filled(model: dict, init: dict) -> bool:
    """Does an ST model's decoder start from trained weights: an `init:` entry for it (`--init-from mt=` writes one)
    or for the whole model, or a pre-trained Marian decoder?"""
    decoder = model.get("decoder")
    marian = isinstance(decoder, dict) and decoder.get("type") == "hf_marian"
    return marian or "decoder" in init or "model" in init


def speech_side_only(task: str, model: dict, init: dict) -> str | None:
    """What `sate train` and `sate config` note of an ST model of ctc_weight 1 whose decoder starts from a trained MT
    or Marian model: a cascade-like choice (the speech side trained under a fixed MT; sate has no freeze key), so it
    trains, told that the rest keeps the weights it starts from (review30c: refusing it was a false positive)."""
    if not _ctc_only_st(task, model) or not _decoder_filled(model, init):
        return None
    return ("model.loss.ctc_weight 1 and no MT text batches: only the speech side (acoustic encoder, CTC) is trained; "
            "the adaptor, textual encoder and decoder keep the weights they start from")


def untrained_output(task: str, model: dict, init: dict | None) -> Untrained | None:
    """What is wrong with a model whose output comes from a part no loss trains, by `model.loss.ctc_weight`:

    - an ASR model (with a decoder: a CTC-only one refuses the key) of ctc_weight 0: sate transcribes by the CTC head
      alone (`sate evaluate`, `translate`, the cascade's first step) and SATE's `--init-from asr` starts its CTC head
      from it; the run ended exit 0 and its WER was an untrained head's (182% on the tests' fixture; twenty-eighth
      hostile pass, hand28m);
    - an ST model of ctc_weight 1 without MT text batches and with a decoder nothing initialises: the decoder's
      cross-entropy (and its distillation) is weighted 1 - ctc_weight, so nothing trains the decoder that
      translates, nor the adaptor and textual encoder before it; the run ended exit 0, its translations a randomly
      initialised decoder's (thirtieth hostile pass). One filled by `init:` or Marian is `speech_side_only`.

    Refused for a new run, noted on resume, as `untrained_wer_monitor`. `init` None is one not known (a resume from a
    checkpoint that does not record the init: its run began with): nothing is said of the decoder then."""
    weight = _ctc_weight(model)
    if not is_number(weight):
        return None
    if task == "asr" and weight == 0:
        return Untrained("an ASR model's transcripts are its CTC head's (sate evaluate, translate, the cascade, and "
                         "SATE's --init-from asr read it), and with model.loss.ctc_weight 0 no loss trains that head",
                         "give model.loss.ctc_weight above 0 (its decoder's loss then trains beside it)")
    if _ctc_only_st(task, model) and init is not None and not _decoder_filled(model, init):
        return Untrained("an ST model translates with its decoder, and with model.loss.ctc_weight 1 (the decoder's "
                         "loss weighted 0), no MT text batches (model.loss.mt_text_weight 0) and no init: entry for "
                         "the decoder, no loss trains it from its random start",
                         "give model.loss.ctc_weight below 1, or start the decoder from a trained MT model with "
                         "--init-from mt=PATH; a CTC-only stage is a task asr run, which SATE starts from with "
                         "--init-from asr=PATH")
    return None


# What `untrained_wer_monitor`'s refusal and notes advise: valid/acc rises, so its mode is max; the advice "monitor
# valid/loss (or valid/acc)" followed for valid/acc was refused again for the mode min valid/wer had (review28c).
WER_MONITOR_ADVICE = "monitor valid/loss, or valid/acc with trainer.monitor_mode max"


def short_warmup(config: TrainingConfig, steps: int | None = None, budget: str | None = None) -> str | None:
    """What a run whose `optim.warmup_steps` outlasts its `trainer.max_steps` should be told: `optim.lr` is the peak
    reached at the warm-up's end, and such a run stops on the way up, at max_steps / warmup_steps of it (`--set
    trainer.max_steps=2000` over the default 10,000-update warm-up trained at a fifth of the lr it named, without a
    word; twenty-eighth hostile pass). A note, not a refusal: a run of a few updates (a smoke test) means it.
    `steps` and `budget`: another bound on the updates and how to name it (the data module's, for trainer.max_epochs:
    `sate.train.datamodule`)."""
    steps = config.trainer.max_steps if steps is None else steps
    warmup = config.optim.warmup_steps
    if steps == -1 or warmup <= steps:
        return None
    budget = budget or f"trainer.max_steps {steps:,}"
    share = 100 * steps / warmup  # rounded down, and a fraction below 1%: one decimal said 0.0% and 100.0% (review)
    part = f"{math.floor(share * 10) / 10:g}%" if share >= 1 else f"{steps:,}/{warmup:,}"
    return (f"optim.warmup_steps {warmup:,} is more than {budget}: the learning rate is still "
            f"rising at the last update, at {part} of optim.lr {config.optim.lr:g}, which update {warmup:,} would "
            "reach")


def specaug_applies(enabled: object, start_step: object, max_steps: object) -> bool:
    """Does a run apply SpecAugment at some update: on, and starting before its last update (`global_step >=
    start_step`; a budget of epochs, max_steps -1, may reach any start)? Values of a config as written (an old
    snapshot's may be of another type: then it may apply)."""
    if enabled is False:
        return False
    if not (is_number(start_step) and is_number(max_steps)) or max_steps == -1:
        return True
    return start_step < max_steps  # type: ignore[operator]  # numbers, checked above


def late_specaug(config: TrainingConfig, steps: int | None = None, budget: str | None = None) -> str | None:
    """What a run whose `specaug.start_step` is not below its `trainer.max_steps` should be told: SpecAugment applies
    from that update on (`global_step >= start_step`), so it never applies at all. conf/synth_ding/asr.yaml started
    it at update 1,000 of a 460-update budget, and its comment said SpecAugment was switched on later (thirtieth
    hostile pass). A note, not a refusal, as `short_warmup`: a smoke run of a few updates over a recipe's config
    means it. `steps` and `budget` as `short_warmup`'s."""
    spec = config.specaug
    steps = config.trainer.max_steps if steps is None else steps
    if config.task == "mt" or not spec.enabled or specaug_applies(spec.enabled, spec.start_step, steps):
        return None
    budget = budget or f"trainer.max_steps {steps:,}"
    return (f"specaug.start_step {spec.start_step:,} is not below {budget}: SpecAugment never "
            "applies in this run (specaug.enabled false says so)")


def budget_notes(config: TrainingConfig) -> list[str]:
    """What `sate train` and `sate config` note of a config whose step budget ends before a part of its schedule."""
    return [note for note in (short_warmup(config), late_specaug(config)) if note is not None]


def _split_names(value: str | list) -> bool:
    """One non-empty split name, or a non-empty list of distinct ones."""
    names = train_splits(value)
    return bool(names) and all(is_split_name(n) for n in names) and len(set(names)) == len(names)


def _file_pairs(value: list) -> bool:
    """Pairs of paths the file system can name (`nameable`): a NUL byte or a lone surrogate in one was a traceback
    once the model was built, a 256-byte name the OS's "File name too long" (sixteenth hostile pass)."""
    return len(value) > 0 and all(isinstance(pair, list) and len(pair) == 2 and all(nameable(p) for p in pair)
                                  for pair in value)


def _betas(value: list) -> bool:
    return len(value) == 2 and all(isinstance(b, int | float) and not isinstance(b, bool) and 0.0 <= b < 1.0
                                   for b in value)


@dataclass(frozen=True)
class DataConfig(Section):
    dir: str | None = setting(None, "a `sate prep` output dir with fbank/, cmvn.json, spm_*.model, tokens_*.txt",
                              PATH)
    train: str | list[str] = setting(
        "train", "training split (a manifest DATA/<split>.jsonl), or a list of splits read as one "
        "(e.g. [train, train-clean-100]: extra ASR corpora)",
        (_split_names, "a split name or a non-empty list of distinct split names (letters, digits, '.', '_' and '-'; "
         "at most 200)"))
    valid: str = setting("dev", "validation split",
                         (is_split_name, "a split name (letters, digits, '.', '_' and '-'; at most 200)"))
    mt_text: list[list[str]] | None = setting(
        None, "[[EN_FILE, TGT_FILE], ...] parallel text (plain or gzip, any size, streamed into DATA/mt_bin once): "
        "mt trains on it instead of the train manifest; st with model.loss.mt_text_weight > 0 takes its text "
        "batches from it instead of the train splits' transcripts and translations",
        (_file_pairs, f"null or a list of file pairs [[EN, TGT], ...], each {PATH[1]}"))
    mt_max_tokens: int = setting(256, "mt_text: pairs with a side longer than this many tokens are dropped",
                                 at_least(1))
    mt_max_ratio: float = setting(9.0, "mt_text: pairs with one side more than this many times longer (in tokens) "
                                  "are dropped", at_least(1))
    mt_dedup: bool = setting(True, "mt_text: a pair seen before (the same two lines) is dropped")
    features: str = setting("fbank", "asr, st: fbank (stored by sate features) | waveform (16 kHz samples read on "
                            "the fly, for acoustic.type hf_* and whisper; lengths and batch sizes in samples)",
                            one_of(("fbank", "waveform")))
    cmvn: str = setting("global", "fbank normalisation: global (train statistics) | utterance | none "
                        "(waveform: none)", one_of(("global", "utterance", "none")))
    frozen_cache: bool = setting(False, "acoustic.type whisper with acoustic.freeze all or N: the frozen part's "
                                 "output is computed once per utterance into DATA/frozen/ and training reads it "
                                 "(docs/whisper.md); decoding always runs the whole model")
    num_workers: int = setting(2, "data loader processes (0 loads in the training process)",
                               (lambda v: 0 <= v <= max_jobs(), f"from 0 to {max_jobs()} (four processes per CPU of "
                                f"this machine's {os.cpu_count() or 1}, at least 16, as --jobs)"))


@dataclass(frozen=True)
class BatchConfig(Section):
    per_device: int = setting(20000, "what one device holds in one forward pass", POSITIVE)
    # `global` is a Python keyword: the field is `global_`, its key `global`.
    global_: int = setting(20000, "what one update sees over all devices; accumulation = global / "
                           "(per_device x devices)", POSITIVE, key="global")
    mt_tokens: int = setting(2000, "st with model.loss.mt_text_weight > 0: the MT text batch that goes with each "
                             "speech batch, in tokens (padded size, as batch.per_device of task mt)", POSITIVE)


@dataclass(frozen=True)
class SpecAugConfig(Section):
    enabled: bool = setting(True, "false switches it off")
    start_step: int = setting(0, "the update from which it applies (an untrained CTC model learns faster "
                              "without it)", at_least(0))
    freq_mask_width: int = setting(27, "F: the widest frequency mask, in mel bins", at_least(0))
    num_freq_masks: int = setting(1, "frequency masks per utterance", MASKS)
    time_mask_width: int = setting(100, "T: the widest time mask, in frames", at_least(0))
    num_time_masks: int = setting(1, "time masks per utterance", MASKS)
    max_time_ratio: float = setting(0.2, "a time mask covers at most this share of its utterance", FRACTION)


@dataclass(frozen=True)
class OptimConfig(Section):
    lr: float = setting(2e-3, "peak learning rate, reached at the end of the warm-up", POSITIVE)
    warmup_steps: int = setting(10000, "updates of linear warm-up", at_least(0))
    betas: list[float] = setting([0.9, 0.98], "Adam's beta1 and beta2",
                                 (_betas, "two numbers in [0, 1), e.g. [0.9, 0.98]"))
    weight_decay: float = setting(0.0, "L2 penalty added to the gradients by Adam (not decoupled)", FRACTION)
    clip_norm: float = setting(10.0, "gradient norm clipping (0: none)", at_least(0))


@dataclass(frozen=True)
class TrainerConfig(Section):
    max_epochs: int = setting(50, "stop after this many epochs", at_least(1))
    max_steps: int = setting(-1, "stop after this many updates (-1: no limit)",
                             (lambda v: v == -1 or v >= 1, "-1 (no limit) or at least 1"))
    max_minutes: float | None = setting(None, "stop after this much wall-clock time (null: no limit)",
                                        (lambda v: 0 < v <= MAX_MINUTES,
                                         f"null or positive and at most {MAX_MINUTES:,.0f} (about 1,900 years)"))
    patience: int = setting(0, "stop after this many validations without improving `monitor` (0: never)",
                            at_least(0))
    monitor: str = setting("valid/loss", "the validation metric for best-N checkpoints and early stopping",
                           (lambda v: v != "", "a metric name such as valid/loss"))
    monitor_mode: str = setting("min", "min or max: which way `monitor` improves", one_of(("min", "max")))
    keep_last: int = setting(10, "the last N epoch checkpoints kept (sate average --last N)", at_least(1))
    keep_best: int = setting(10, "the best N checkpoints by `monitor` kept (sate average --best N)", at_least(0))
    checkpoint_every_minutes: float | None = setting(
        None, "also write last.ckpt inside an epoch this often (null: at epoch ends only); a resumed run continues "
        "from the exact batch", (lambda v: v > 0, "null or positive"))
    checkpoint_every_steps: int = setting(0, "also write last.ckpt inside an epoch every N updates (0: never)",
                                          at_least(0))
    valid_bleu_utts: int = setting(
        200, "validation utterances decoded greedily for BLEU (mt, st): the first N in the order the validation "
        "batches come, bucketed by length (the shortest), a fixed subset, not a random one", at_least(0))
    valid_max_len_ratio: float = setting(1.5, "greedy validation decoding stops at this ratio of the source length",
                                         (lambda v: 0 < v <= MAX_LEN_RATIO,
                                          f"positive and at most {MAX_LEN_RATIO:g}, as decoding's max_len_ratio"))
    nan_patience: int = setting(20, "stop after this many batches in a row with a non-finite loss (each is "
                                "skipped)", at_least(1))
    oom_patience: int = setting(5, "stop after this many updates in a row with an out-of-memory error (each is "
                                "skipped)", at_least(1))
    precision: str = setting("auto", "auto (bf16-mixed on GPUs with bf16, 16-mixed on other GPUs, 32 on the CPU) | "
                             "32-true | bf16-mixed | 16-mixed | bf16-true | 16-true | 64-true", one_of(PRECISIONS))
    log_every_n_steps: int = setting(50, "how often training losses go to logs/ and tensorboard/", at_least(1))


@dataclass(frozen=True)
class TrainingConfig(Section):
    """Every key a training config may have; `sate config --task TASK` prints them with their comments."""

    task: str = setting("st", "asr (acoustic encoder + CTC) | mt (textual encoder + decoder) | st (SATE or the E2E "
                        "baseline)", one_of(TASKS))
    seed: int = setting(0, "seeds weights, batch order, SpecAugment and dropout",
                        (lambda v: 0 <= v <= MAX_SEED, f"from 0 to {MAX_SEED} (numpy's seeds)"))
    data: DataConfig = section(DataConfig, "the prepared data")
    batch: BatchConfig = section(BatchConfig, "batch size, in frames (asr, st; samples with data.features "
                                 "waveform) or target tokens (mt)")
    specaug: SpecAugConfig = section(SpecAugConfig, "SpecAugment on the features (asr, st)")
    model: dict = setting({}, "the architecture and the loss: see the model keys below (sate config --task TASK)")
    init: dict = setting({}, "components loaded from checkpoints, e.g. {acoustic: {path: exp/asr/model.pt}}; "
                         "or sate train --init-from asr=PATH --init-from mt=PATH")
    optim: OptimConfig = section(OptimConfig, "Adam with a linear warm-up and inverse square-root decay")
    trainer: TrainerConfig = section(TrainerConfig, "the training loop")

    @property
    def text_batches(self) -> bool:
        """Whether each speech batch has an MT text batch beside it (task st, model.loss.mt_text_weight > 0)."""
        return self.task == "st" and (mt_text_weight(self.model) or 0) > 0

    def validate(self) -> None:
        if self.task == "asr" and self.data.mt_text is not None:
            raise Invalid("data.mt_text", "applies to task mt only, or st with model.loss.mt_text_weight > 0 "
                          "(task is asr)")
        if mt_text_weight(self.model) is None:
            return  # the model's resolution names the bad weight; the keys that follow it are not judged by it
        text_batches = self.text_batches
        if self.task == "st" and not text_batches and self.data.mt_text is not None:
            raise Invalid("data.mt_text", "is set but model.loss.mt_text_weight is 0: with task st the text only "
                          "feeds the MT text batches")
        if not text_batches and self.batch.mt_tokens != BatchConfig().mt_tokens:
            raise Invalid("batch.mt_tokens", "is set but does nothing: it sizes the MT text batches of task st "
                          "with model.loss.mt_text_weight > 0")


def mt_text_weight(model: dict) -> float | None:
    """`model.loss.mt_text_weight` of a raw ``model:`` section: 0 when absent, None when not a finite number >= 0
    (NaN, -1, yes: the model's own resolution names it)."""
    loss = model.get("loss")
    weight = loss.get("mt_text_weight", 0) if isinstance(loss, dict) else 0
    if not is_number(weight) or weight < 0:
        return None
    return float(weight)


def check_feature_mode(config: TrainingConfig) -> None:
    """A hub acoustic encoder (acoustic.type hf_*) reads data.features waveform, ours fbank; waveforms take no
    CMVN and no SpecAugment (fbank's), so those must be off rather than silently ignored. Of the config alone: `sate
    config` and `sate train` make it with the other checks, naming the file and the --set (`sate config` passed
    `--set data.features=waveform` on a Conformer, and `sate train` refused it naming neither; 25th hostile pass)."""
    if config.task == "mt":
        return
    kind = (config.model.get("acoustic") or {}).get("type", "conformer")
    features = config.data.features
    wanted = "waveform" if kind in HUB_ACOUSTIC_TYPES else "fbank"
    if features != wanted:
        raise SateError(f"data.features is {features} but model.acoustic.type {kind} reads {wanted}")
    if config.data.frozen_cache:
        freeze = (config.model.get("acoustic") or {}).get("freeze", "none")
        if kind != "whisper" or freeze == "none":
            raise SateError("data.frozen_cache needs model.acoustic.type whisper with model.acoustic.freeze all or N "
                            f"(got type {kind}, freeze {freeze}): only a frozen part can be computed once")
    if features == "waveform":
        if config.data.cmvn != "none":
            raise SateError(f"data.cmvn {config.data.cmvn} normalises fbank; with data.features waveform set "
                            "it to none (the hub model's own normalisation is applied inside the model)")
        if config.specaug.enabled:
            raise SateError("specaug masks fbank bins and frames; with data.features waveform set specaug.enabled "
                            "false")
