"""Deciding how `sate train` continues an experiment directory: which checkpoint, under which rules.

- Checkpoints are read with `weights_only=True`: tensors, numbers, strings, lists and dicts only, plus the
  types in SAFE_GLOBALS. Lightning 2.6 puts nothing else in our checkpoints (loops, callbacks, optimizer,
  scheduler and precision states are plain), so the list is empty; a test fails the day that changes. A file
  holding any other pickled object is refused with one line and never run.
- The furthest readable checkpoint (most updates; last.ckpt among equals) wins: last.ckpt, or when it is
  missing, damaged or behind (a run stopped between writing an epoch's checkpoint and last.ckpt) the furthest
  other one, with a message. Damaged files it passed over are renamed `NAME.unreadable`. A directory whose
  checkpoints are all unreadable is an error: training never silently starts afresh beside an old run.
- A resume must use the config of the run it continues, except SAFE_KEYS (budgets, patience, checkpoint
  policy and the monitor's mode, logging, workers, init, and batch.per_device at an epoch end when batch.global is
  unchanged; a specaug section where neither run applies SpecAugment within its max_steps).
  Anything else is refused, naming the keys.
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from sate import files, layout
from sate.config import read_yaml
from sate.data.cmvn_record import require_cmvn
from sate.errors import SateError, shown
from sate.files import UnsafeCheckpoint
from sate.models.config import resolve_config
from sate.models.model_file import FORMAT, VERSION, token_sides
from sate.numbers import is_int64
from sate.settings import merge
from sate.train.schema import TrainingConfig, specaug_applies

# Globals a checkpoint may hold beyond torch's weights-only defaults (none needed by Lightning 2.6; see above).
SAFE_GLOBALS: list[Any] = []
# Keys a resume may change: how long and how it trains, what it keeps and logs, never what it learns.
SAFE_KEYS = (
    "trainer.max_epochs", "trainer.max_steps", "trainer.max_minutes", "trainer.patience", "trainer.keep_last",
    "trainer.keep_best", "trainer.checkpoint_every_minutes", "trainer.checkpoint_every_steps",
    "trainer.valid_bleu_utts", "trainer.valid_max_len_ratio", "trainer.nan_patience", "trainer.oom_patience",
    "trainer.log_every_n_steps", "data.num_workers",
    "init",  # the weights come from the checkpoint; the init section only applies to a fresh start
    # which checkpoints are kept and when to stop, as keep_best is: a run of an older sate that monitored valid/bleu
    # with monitor_mode min, which `sate train` now refuses, is resumed with max (MovableCheckpoint refits its record)
    "trainer.monitor_mode",
)
UNREADABLE_SUFFIX = ".unreadable"


def read_checkpoint(path: Path) -> dict[str, Any]:
    """A training checkpoint read by the one safe reader (`sate.files.read_checkpoint`: weights only, checksums
    verified); `SateError` (one line) for a damaged file, `UnsafeCheckpoint` for one holding pickled code."""
    try:
        with torch.serialization.safe_globals(SAFE_GLOBALS):
            ckpt = files.read_checkpoint(path)
    except UnsafeCheckpoint as err:
        raise UnsafeCheckpoint(f"{path}: refused: it holds pickled objects ({err.names}) that would run code when "
                               f"loaded; `sate train` writes none. Remove it if you did not put it there",
                               err.names) from None
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("sate"), dict) or "state_dict" not in ckpt:
        raise SateError(f"{path}: not a `sate train` checkpoint (no 'sate' header)")
    header = ckpt["sate"]
    if not (_plainly(header.get("format", FORMAT), FORMAT) and _plainly(header.get("version", VERSION), VERSION)):
        # resumed as if this sate's, while `sate average` refused it; a damaged file it is not (hand27t). A header
        # that says neither (the tests' own, written by hand) makes no claim of another sate
        raise OtherVersion(f"{path}: a checkpoint of another sate (format {shown(header.get('format'))} version "
                           f"{shown(header.get('version'))}; this sate reads {FORMAT} version {VERSION}): resume it "
                           "with the sate that wrote it, or train into a new --exp")
    return ckpt


def check_progress(path: Path, ckpt: dict[str, Any]) -> None:
    """The step and epoch a resume starts from: whole numbers of at least 0, as Lightning writes them. Checked where
    a resume reads a checkpoint, not by `read_checkpoint` itself, whose callers need only the header and weights
    ('x' was a TypeError traceback in Lightning: hand27t)."""
    if not (is_int64(ckpt.get("global_step")) and is_int64(ckpt.get("epoch"))
            and ckpt["global_step"] >= 0 and ckpt["epoch"] >= 0):
        raise SateError(f"{path}: its step {shown(ckpt.get('global_step'))} or epoch {shown(ckpt.get('epoch'))} is "
                        "not a whole number of at least 0 (a damaged or edited file)")


def _plainly(value: object, want: object) -> bool:
    """`value == want` for a plain number or text alone: a tensor there (an edited header) made `==` a tensor, and
    its truth a RuntimeError traceback (review of hand27t)."""
    return isinstance(value, (int, float, str)) and not isinstance(value, bool) and value == want


class OtherVersion(SateError):
    """A checkpoint whose header another sate wrote: refused, never set aside as damaged."""


@dataclass
class ResumePoint:
    """Where a run starts: `path` None is a fresh start; `notes` are printed by the primary process."""

    path: Path | None = None
    checkpoint: dict[str, Any] | None = None
    run_id: str = ""
    notes: list[str] = field(default_factory=list)
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    passed_over: list[Path] = field(default_factory=list)


EPOCH_CHECKPOINT = re.compile(r"epoch\d+\.ckpt")  # the epoch callback's files (sate.train.trainer)
UNREAD = (-1, -1)  # the progress of a checkpoint that does not read without its weights


def candidates(ckpt_dir: Path) -> list[Path]:
    """Checkpoints furthest first: by the updates they record (`progress`), last.ckpt first among equals, then by
    modification time. By time alone, an experiment copied (`cp -r`, which gives each file the time of its copy)
    resumed from whichever file was copied last: an epoch checkpoint thousands of updates behind last.ckpt, whose
    progress the resumed run then overwrote."""
    if not ckpt_dir.is_dir():
        return []
    # listed, not globbed: `Path.glob` found nothing in a checkpoint folder of mode 0300, and the run would have
    # started again over the checkpoints it could not see (nineteenth hostile pass); os.listdir names it
    paths = [ckpt_dir / name for name in os.listdir(ckpt_dir)
             if name.endswith(".ckpt") and not name.startswith(".") and (ckpt_dir / name).is_file()]
    # a file whose progress does not read comes first, to be judged by the full read: refused when it holds
    # pickled code, set aside with a note when damaged
    done = {p: progress(p) for p in paths}
    # among equals an epoch checkpoint before a best-* one: written after it at the same epoch's end, it holds the
    # later record of the epoch checkpoints. A copy (`cp -r`) gives file times by the order of copying, and one that
    # resumed from best-*.ckpt kept every checkpoint past keep_last and keep_best (29th hostile pass, review29c)
    return sorted(paths, key=lambda p: (done[p] == UNREAD, done[p], p.name == layout.LAST_CHECKPOINT,
                                        EPOCH_CHECKPOINT.fullmatch(p.name) is not None, p.stat().st_mtime, p.name),
                  reverse=True)


def progress(path: Path) -> tuple[int, int]:
    """(updates, epoch) a checkpoint records, read without its weights (mapped, not loaded); UNREAD for a file that
    does not read so, which the full read then judges."""
    try:
        with torch.serialization.safe_globals(SAFE_GLOBALS):
            ckpt = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # torch raises many kinds; a damaged or unsafe file is named by the full read
        return UNREAD
    step, epoch = (ckpt.get("global_step"), ckpt.get("epoch")) if isinstance(ckpt, dict) else (None, None)
    return (int(step), int(epoch)) if is_int64(step) and is_int64(epoch) else UNREAD


def find_resume_point(ckpt_dir: Path) -> ResumePoint:
    """The newest readable checkpoint (module docstring); a fresh start when the directory has none."""
    paths = candidates(ckpt_dir)
    if not paths:
        return ResumePoint(run_id=new_run_id())
    last = ckpt_dir / layout.LAST_CHECKPOINT
    problems: list[str] = []
    for path in paths:
        try:
            ckpt = read_checkpoint(path)
            check_progress(path, ckpt)
        except (UnsafeCheckpoint, OtherVersion):
            raise
        except SateError as err:
            problems.append(str(err))
            continue
        point = ResumePoint(path=path, checkpoint=ckpt, run_id=str(ckpt["sate"].get("run_id") or new_run_id()))
        point.passed_over = [p for p in paths[: paths.index(path)]]
        where = f"step {ckpt.get('global_step')}, epoch {ckpt.get('epoch')}"
        if path != last:
            # last.ckpt behind another checkpoint: the run was stopped between writing that one and last.ckpt
            why = ("is missing" if not last.exists() else "is unreadable" if last in point.passed_over
                   else "is older")
            point.notes.append(f"{last} {why}; resuming from {path.name} ({where}), the newest readable checkpoint")
        else:
            point.notes.append(f"resuming from {path} ({where})")
        point.notes += [f"passed over: {p}" for p in problems]
        return point
    raise SateError(f"{ckpt_dir}: no readable checkpoint to resume from ({'; '.join(problems)[:600]}); "
                    f"train into a new --exp, or move {ckpt_dir.parent} aside and train into it afresh (its logs are "
                    "the old run's)")


def set_aside(paths: list[Path]) -> list[Path]:
    """Rename damaged checkpoints to NAME.unreadable, so that neither Lightning nor `sate average` trips on them.
    A name already taken (a checkpoint of that name set aside at an earlier resume, or anything the user put
    there) is kept: the next free NAME.unreadable.N is used (train.lock is held, so nothing else takes it)."""
    moved = []
    for path in paths:
        target, n = path.with_name(path.name + UNREADABLE_SUFFIX), 2
        while os.path.lexists(target):
            target, n = path.with_name(f"{path.name}{UNREADABLE_SUFFIX}.{n}"), n + 1
        path.replace(target)
        moved.append(target)
    return moved


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def _flat(config: dict[str, object], prefix: str = "") -> dict[str, object]:
    flat: dict[str, object] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value and name != "init":
            flat.update(_flat(value, name + "."))
        else:
            flat[name] = value
    return flat


def _comparable(config: dict[str, object]) -> dict[str, object]:
    """Flat keys with the model section resolved, so `{}` and the same defaults written out compare equal."""
    config = dict(config)
    try:
        config["model"] = resolve_config(config["task"], config.get("model")).to_dict()
    except SateError:
        pass  # an old checkpoint's model section that no longer resolves is compared as written
    data = config.get("data")
    if isinstance(data, dict) and isinstance(data.get("train"), list) and len(data["train"]) == 1:
        # a one-split list is read as the name alone, batch for batch: "data.train 'train' -> ['train']" refused the
        # same run's resume (29th hostile pass)
        config["data"] = {**data, "train": data["train"][0]}
    return _flat(config)


def _resolves(config: dict[str, object]) -> bool:
    try:
        resolve_config(config["task"], config.get("model"))
    except SateError:
        return False
    return True


def _hub_paths_of(old: dict[str, object], new: dict[str, object]) -> dict[str, object]:
    """`old` with its model's hub directories (``acoustic.path``, ``textual.path``) taken from `new`, where they
    differ: a run's directory moved or gone (a Whisper directory of another venv) left its model section
    unresolved, and every default compared as a change (``acoustic.dropout None -> 0.1`` ... "and 18 more"),
    hiding the path, the one change (29th hostile pass). The paths are put back by `config_changes`."""
    model, other = old.get("model"), new.get("model")
    if not isinstance(model, dict) or not isinstance(other, dict):
        return old
    model = dict(model)
    for part in ("acoustic", "textual"):
        mine, theirs = model.get(part), other.get(part)
        if isinstance(mine, dict) and isinstance(theirs, dict) and "path" in mine:
            model[part] = {**mine, "path": theirs.get("path")}
    return {**old, "model": model}


def config_changes(old: dict[str, object], new: dict[str, object]) -> dict[str, tuple[object, object]]:
    """dotted key -> (old, new) for every key that differs."""
    a, b = _comparable(old), _comparable(new)
    moved = _hub_paths_of(old, new)
    if moved != old and not _resolves(old) and _resolves(moved):
        a = _comparable(moved) | {k: v for k, v in _flat({"model": old["model"]}).items() if k.endswith(".path")}
    return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


def check_config_change(point: ResumePoint, config: TrainingConfig, exp: Path) -> None:
    """Refuse a resume whose config differs from the run's in anything but SAFE_KEYS; record the safe changes."""
    assert point.checkpoint is not None
    old = point.checkpoint["sate"].get("train_config")
    if old is None:
        snapshot = exp / layout.CONFIG
        if not snapshot.is_file():
            return
        old = read_yaml(snapshot)
    try:  # a key newer than the run (data.features) compares at its default
        old = merge(TrainingConfig, old)
    except SateError:
        pass  # a key sate no longer knows: it shows as a change
    resolve_config(config.task, config.model)  # a value out of range is named as such, not as changes (below)
    new = config.to_dict()
    changes = config_changes(old, new)
    unsafe = {k: v for k, v in changes.items() if not _safe(k, changes, point.checkpoint)}
    if not _specaug_used(old) and not _specaug_used(new):
        # two specaug settings neither of which applies SpecAugment in its run are one training: a recipe config
        # that said start_step 1000 of 460 updates, now enabled false, refused its runs' resume (review30c)
        unsafe = {k: v for k, v in unsafe.items() if not k.startswith("specaug.")}
    if unsafe:
        # the outer keys first: `task` mt -> st changes every model key, and was cut off behind six of them
        outer_first = sorted(unsafe.items(), key=lambda item: item[0].count("."))
        shown = ", ".join(f"{k} {_short(a)} -> {_short(b)}" for k, (a, b) in outer_first[:6])
        more = f" and {len(unsafe) - 6} more" if len(unsafe) > 6 else ""
        # the checkpoint itself where it is not last.ckpt: one copied in from another run is the newest, and its
        # config, not the user's, is what changed
        where = exp if point.path is None or point.path.name == layout.LAST_CHECKPOINT else point.path
        raise SateError(f"{where}: cannot resume with a changed config: {shown}{more} (a resume may only change "
                        f"budgets, patience, checkpoint and logging settings, the monitor's mode, data.num_workers and "
                        f"init; undo the change or train into a new --exp)")
    point.changed = changes


def _specaug_used(config: dict[str, object]) -> bool:
    """Does a run of `config` (a training config as a mapping) apply SpecAugment within its trainer.max_steps?"""
    spec, trainer = config.get("specaug"), config.get("trainer")
    if not isinstance(spec, dict) or not isinstance(trainer, dict):
        return True  # a section of another shape is compared key by key, as before
    return specaug_applies(spec.get("enabled", True), spec.get("start_step", 0), trainer.get("max_steps", -1))


def check_vocabularies(point: ResumePoint, src_tokens: list[str], tgt_tokens: list[str], data_dir: Path) -> None:
    """Refuse a resume on other vocabularies than the run's: re-running `sate vocab` (same sizes, another token
    order) would make the embeddings, CTC and output layers index other tokens without a word. Checkpoints carry
    their token lists whole (the strongest fingerprint); one without them (none `sate train` writes) is let be. An
    ASR run reads no target list (`token_sides`)."""
    assert point.checkpoint is not None
    for side, tokens in (("src", src_tokens), ("tgt", tgt_tokens)):
        old = point.checkpoint["sate"].get(f"{side}_tokens")
        if side not in token_sides(point.checkpoint["sate"].get("task")) or old is None or list(old) == list(tokens):
            continue
        line = next((i for i, (a, b) in enumerate(zip(old, tokens, strict=False)) if a != b),
                    min(len(old), len(tokens)))
        raise SateError(f"{point.path}: trained on another {side} vocabulary than {data_dir} holds now ({len(old)} "
                        f"tokens, {len(tokens)} now; first difference at line {line + 1} of "
                        f"{layout.token_list(side)}): was `sate vocab` run again? Resume with the vocabulary the run "
                        f"began with, or train into a new --exp")


def check_cmvn(point: ResumePoint, cmvn: Path | None) -> None:
    """Refuse a resume whose global CMVN statistics (``cmvn``: the data directory's `cmvn.json`, None when the run
    normalises otherwise) differ from those the run trained with: `sate features` rewrites the file when the train
    split changes, and the resumed model would read differently normalised features. A checkpoint without the
    record (written before sate kept it) is let be."""
    assert point.checkpoint is not None
    if cmvn is not None:
        require_cmvn(point.checkpoint["sate"].get("cmvn"), cmvn, point.path,
                     ": was `sate features` run again on another train split? Resume with the statistics the run "
                     "began with, or train into a new --exp")


def teacher_prints(model: torch.nn.Module) -> dict[str, str]:
    """side -> a SHA-1 of the frozen teacher's weights (names, dtypes, shapes and bytes), for each `loss.kd` teacher
    the model holds. Checkpoints record them: a teacher is read from its model file at every start, resume included,
    and a file retrained or averaged again at the same path had the run distil from another model without a word."""
    import hashlib

    prints = {}
    for side, teacher in sorted(getattr(model, "teachers", {}).items()):
        digest = hashlib.sha1()
        for name, tensor in sorted(teacher.model.state_dict().items()):
            digest.update(f"{name} {tensor.dtype} {tuple(tensor.shape)}\n".encode())
            digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
        prints[side] = digest.hexdigest()
    return prints


def check_teachers(point: ResumePoint, model: torch.nn.Module, prints: dict[str, str]) -> None:
    """Refuse a resume whose frozen teachers (``prints``: `teacher_prints` of ``model``) are other models than the
    run began with: the path is part of the config, but the file there may have been trained again, or averaged
    over other epochs, since. A checkpoint without the record (written before sate kept it) is let be."""
    assert point.checkpoint is not None
    old = point.checkpoint["sate"].get("teachers")
    if not isinstance(old, dict):
        return
    for side, now in prints.items():
        if old.get(side) not in (None, now):
            path = getattr(model.conf.loss.kd, f"{side}_teacher")  # prints come from an ST model's teachers
            raise SateError(f"{point.path}: the run began with another {side.upper()} teacher than "
                            f"loss.kd.{side}_teacher {path} holds now (its weights differ: was it trained or averaged "
                            "again?); resume with the teacher the run began with, or train into a new --exp")


def check_budget(point: ResumePoint, max_epochs: int, max_steps: int) -> None:
    """Refuse a resume whose `trainer.max_epochs` or `trainer.max_steps` (keys a resume may change) is below where
    the checkpoint is: Lightning refused the epochs with a MisconfigurationException traceback once the model and
    the data were set up, and the updates with "`max_steps` reached", exit 0, nothing trained (twenty-ninth pass,
    hand29c's leftover). A budget the run has just reached (a finished run started again) is not refused. A checkpoint
    inside or at the end of the epoch it records (counted from 0; `epoch_begun`) is beyond a budget that equals it: a
    run of 3 epochs resumed with max_epochs 2 was told it "has trained its trainer.max_epochs 2 epochs", exit 0, and
    raised to 3 the same (review32y)."""
    assert point.checkpoint is not None
    epoch, step = point.checkpoint.get("epoch"), point.checkpoint.get("global_step")
    begun = epoch_begun(point.checkpoint)
    if is_int64(epoch) and (epoch > max_epochs or (epoch == max_epochs and begun)):
        mid = _header(point.checkpoint).get("mid_epoch")
        where = (f"inside epoch {epoch} (counted from 0)" if mid is True else
                 f"at the end of epoch {epoch} (counted from 0: {epoch + 1:,} epochs trained)" if mid is False else
                 f"at epoch {epoch} (counted from 0)")
        raise SateError(f"{point.path}: the run is {where}, beyond trainer.max_epochs {max_epochs:,}: a resume "
                        f"trains on up to its budget; give trainer.max_epochs {epoch + begun:,} or more, or train "
                        "into a new --exp")
    if isinstance(step, int) and max_steps >= 0 and step > max_steps:
        raise SateError(f"{point.path}: the run is at update {step:,}, beyond trainer.max_steps {max_steps:,}: a "
                        "resume trains on up to its budget; raise trainer.max_steps to train more (-1: no limit), "
                        "or train into a new --exp")


def epoch_begun(ckpt: dict[str, Any]) -> bool:
    """Had the run begun the epoch its checkpoint records (`epoch`, Lightning's count of epochs completed)? Every
    checkpoint `sate train` writes is saved inside an epoch or at its end, before Lightning counts it completed: its
    loop state (`loops.fit_loop.epoch_progress`) has started one more epoch than completed. A checkpoint without that
    state (not Lightning's, or edited) is taken as written after the count moved on, where `epoch` epochs are done."""
    loops = ckpt.get("loops")
    fit = loops.get("fit_loop") if isinstance(loops, dict) else None
    progress = fit.get("epoch_progress") if isinstance(fit, dict) else None
    current = progress.get("current") if isinstance(progress, dict) else None
    started = current.get("started") if isinstance(current, dict) else None
    return is_int64(started) and is_int64(ckpt.get("epoch")) and started > ckpt["epoch"]


def _header(ckpt: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint's `sate` header, or {} where it holds none (a checkpoint edited, or not `sate train`'s)."""
    header = ckpt.get("sate")
    return header if isinstance(header, dict) else {}


# Lightning's EarlyStoppingReason (stopping_reason in its state) of a run its patience ended, and of one whose monitored
# metric was NaN or infinite at a validation (EarlyStopping's check_finite, whatever the patience)
PATIENCE_EXHAUSTED, NON_FINITE_METRIC = 3, 4


def early_stopping_key(monitor: str, mode: str) -> str:
    """Lightning's key of an EarlyStopping's state in a checkpoint: `ConfiguredPatience` keeps its state there too."""
    return "EarlyStopping" + repr({"monitor": monitor, "mode": mode})


def drop_unused_states(checkpoint: dict[str, Any], kept: str | None, timer: bool) -> None:
    """Remove from a checkpoint about to be resumed the states no callback of this run takes: early stopping's, all
    but ``kept`` (the `early_stopping_key` of this run's, None where trainer.patience is 0), and the Timer's where
    ``timer`` is False (trainer.max_minutes null). Lightning warned of each one after the note that said early
    stopping is off or starts afresh ("Please add the following callbacks: [\"EarlyStopping{...}\"]", advice sate
    has no key for; the thirty-second pass's leftover), and of the Timer (["Timer"]) at a resume with max_minutes
    set to null (thirty-third hostile pass). The next checkpoint held none of them anyway."""
    callbacks = checkpoint.get("callbacks")
    if isinstance(callbacks, dict):
        for key in [key for key in callbacks if isinstance(key, str) and (
                (key.startswith("EarlyStopping{") and key != kept) or (key == "Timer" and not timer))]:
            del callbacks[key]


def early_stop_state(checkpoint: dict[str, Any], monitor: str, mode: str | None = None) -> dict[str, Any] | None:
    """The checkpoint's EarlyStopping state for `monitor` (and `mode`, where given), kept under
    `early_stopping_key`; None where the run kept none (no patience) or another monitor's."""
    callbacks = checkpoint.get("callbacks")
    if not isinstance(callbacks, dict):
        return None
    modes = (mode,) if mode is not None else ("min", "max")
    for each in modes:
        state = callbacks.get(early_stopping_key(monitor, each))
        if isinstance(state, dict):
            return state
    return None


def _early_stopped(state: dict[str, Any] | None, ckpt: dict[str, Any]) -> int | None:
    """Why early stopping ended the run at this checkpoint (PATIENCE_EXHAUSTED or NON_FINITE_METRIC), or None where it
    did not. Lightning records why since 2.5; before, a stopped epoch with the count at the patience it ran with says
    so. Lightning never clears the reason or the stopped epoch: a
    run once stopped, then trained on with a raised patience, kept them in every later checkpoint, and a resume of
    it at its max_epochs, or killed inside an epoch, was taken as stopped (review32e). Only the end of the epoch
    early stopping stopped at is its end."""
    if state is None or _header(ckpt).get("mid_epoch") is not False or not is_int64(ckpt.get("epoch")) \
            or state.get("stopped_epoch") != ckpt.get("epoch"):
        return None
    reason = state.get("stopping_reason")
    if reason is not None:
        return reason if reason in (PATIENCE_EXHAUSTED, NON_FINITE_METRIC) else None
    wait, patience = state.get("wait_count"), state.get("patience")
    ended = bool(state.get("stopped_epoch")) and is_int64(wait) and is_int64(patience) and wait >= patience
    return PATIENCE_EXHAUSTED if ended else None


def finished(point: ResumePoint, trainer: Any) -> str | None:
    """Why the run of `point` has nothing left to train under the resume's `trainer` settings, or None. Lightning
    resumed a run that early stopping had ended with its wait count, which it checks only at the next validation:
    the resume trained one more epoch (writing epochNNN.ckpt, and changing a recipe's average at its `--stage` after
    training) and stopped again (32nd hostile pass, hand32r's leftover); one at its max_minutes trained one more
    update; one at max_epochs or max_steps trained nothing but made log folders and counted a run. A run stopped on
    a monitor that was NaN or infinite (Lightning's check, which no patience changes) trained one more epoch the same
    way (33rd hostile pass): only patience 0 (off) trains on."""
    assert point.checkpoint is not None
    ckpt = point.checkpoint
    state = early_stop_state(ckpt, trainer.monitor, trainer.monitor_mode)
    wait = state.get("wait_count") if state is not None else None
    reason = _early_stopped(state, ckpt) if trainer.patience > 0 else None
    if reason is not None:
        assert state is not None
        epoch = state.get("stopped_epoch")
        at = f" at epoch {epoch} (counted from 0)" if is_int64(epoch) else ""
        if reason == NON_FINITE_METRIC:
            return (f"early stopping ended this run{at}: {trainer.monitor} was NaN or infinite at its validation, "
                    "which ends a run whatever its patience; trainer.patience 0 (off) trains on")
        if is_int64(wait) and wait >= trainer.patience:
            return (f"early stopping ended this run{at}: {trainer.monitor} has not improved for {wait} validation(s), "
                    f"trainer.patience {trainer.patience}; raise trainer.patience (0: off) to train on")
    header = _header(ckpt)
    epoch, step = ckpt.get("epoch"), ckpt.get("global_step")
    if is_int64(step) and trainer.max_steps >= 0 and step >= trainer.max_steps:
        return f"the run has made its trainer.max_steps {trainer.max_steps:,} updates; raise it to train on"
    if header.get("mid_epoch") is False and is_int64(epoch) and epoch + 1 >= trainer.max_epochs:
        epochs = "epoch" if trainer.max_epochs == 1 else "epochs"
        return f"the run has trained its trainer.max_epochs {trainer.max_epochs:,} {epochs}; raise it to train on"
    timer = ckpt.get("callbacks", {}).get("Timer") if isinstance(ckpt.get("callbacks"), dict) else None
    spent = timer.get("time_elapsed", {}).get("train") if isinstance(timer, dict) and isinstance(
        timer.get("time_elapsed"), dict) else None
    if trainer.max_minutes is not None and isinstance(spent, (int, float)) and spent >= trainer.max_minutes * 60:
        # how much it spent, said: "raise it" alone, followed from 1 to 2 by a run that had spent 5, said the same
        return (f"the run has spent its trainer.max_minutes {trainer.max_minutes:g} minutes of training time ("
                f"{spent / 60:.4g} in all); raise it above that to train on")
    return None


def early_stop_note(point: ResumePoint, trainer: Any) -> str | None:
    """What a resume of a run that early stopping ended does instead of ending at once (`finished`), and why: the
    patience raised or off, or the monitor's mode changed (whose early stopping starts afresh)."""
    assert point.checkpoint is not None
    state = early_stop_state(point.checkpoint, trainer.monitor)
    reason = _early_stopped(state, point.checkpoint)
    if reason is None:
        return None
    assert state is not None
    epoch = state.get("stopped_epoch")
    said = f"early stopping ended this run at epoch {epoch} (counted from 0)" if is_int64(epoch) else \
        "early stopping ended this run"
    if trainer.patience == 0:
        return f"{said}; trainer.patience is now 0 (off): it trains on up to its budget"
    if early_stop_state(point.checkpoint, trainer.monitor, trainer.monitor_mode) is None:
        return (f"{said}; trainer.monitor_mode is now {trainer.monitor_mode}: early stopping starts afresh, and it "
                "trains on")
    if reason == NON_FINITE_METRIC:  # `finished` ends the run unless patience is off or the mode another
        return None
    return (f"{said} after {state.get('wait_count')} validation(s) without a gain; trainer.patience is now "
            f"{trainer.patience}: it trains on")


def check_weights(point: ResumePoint, model: torch.nn.Module) -> None:
    """Refuse a resume whose checkpoint's weights do not fit the model the config builds now: the config names a
    hub directory (acoustic.path, textual.path) by its path, and one that now holds another model (downloaded
    again, another size or norm) builds other parameters, which Lightning's load_state_dict refused as a traceback
    listing every key."""
    assert point.checkpoint is not None
    ours = {f"model.{key}": tuple(value.shape) for key, value in model.state_dict().items()}
    theirs = {key: tuple(getattr(value, "shape", ())) for key, value in point.checkpoint["state_dict"].items()}
    lacks, extra = sorted(ours.keys() - theirs.keys()), sorted(theirs.keys() - ours.keys())
    reshaped = [key for key in ours if key in theirs and ours[key] != theirs[key]]
    problems = [f"{len(lacks)} of the model's weights are not in it (first {lacks[0].removeprefix('model.')})"] \
        if lacks else []
    problems += [f"{len(extra)} of its weights are not the model's (first {extra[0].removeprefix('model.')})"] \
        if extra else []
    problems += [f"{key.removeprefix('model.')} is {list(theirs[key])} there, {list(ours[key])} in the model"
                 for key in reshaped[:1]]
    if problems:
        raise SateError(f"{point.path}: its weights do not fit the model the config builds now "
                        f"({'; '.join(problems)}); does a hub directory the config names (acoustic.path, "
                        "textual.path) hold another model than the run began with?")


# Keys that name a file or directory: one named another way is no change. The data directory's vocabularies and
# CMVN statistics, the teachers' weights and the hub models' parameters are checked against the checkpoint anyway.
PLACE_KEYS = ("data.dir", "model.loss.kd.asr_teacher", "model.loss.kd.mt_teacher", "model.acoustic.path",
              "model.textual.path")


def _safe(key: str, changes: dict[str, tuple[object, object]], ckpt: dict[str, Any]) -> bool:
    if key in PLACE_KEYS:
        # one directory or file spelled two ways (`data` and `/home/me/data`, as a recipe run with and without
        # --data gives it; `--init-from asr=exp/asr/model.pt` and `./exp/asr/model.pt` for a teacher); or the run's
        # place gone and the new one there: a data directory moved to another disk, or an experiment taken to
        # another machine, was refused with "undo the change", which nothing could (25th hostile pass). A hub model
        # folder moved (a Whisper directory of another venv) likewise: its weights come from the checkpoint, and
        # `check_weights` refuses a model of another size at the new place (29th hostile pass, fix29w)
        return _same_place(*changes[key]) or _moved(*changes[key])
    if key == "batch.per_device":
        # A new batch cap repacks the epoch's batches: fine at an epoch end, not in the middle of one.
        return "batch.global" not in changes and not ckpt["sate"].get("mid_epoch", False)
    return key in SAFE_KEYS or key.split(".")[0] in SAFE_KEYS


def _same_place(a: object, b: object) -> bool:
    """Do ``a`` and ``b`` (paths as a config gives them, relative ones from the current directory) name one
    existing file or directory?"""
    if not (isinstance(a, str) and isinstance(b, str) and a and b):
        return False
    try:
        return os.path.exists(a) and os.path.samefile(a, b)
    except OSError:
        return False


def _moved(a: object, b: object) -> bool:
    """Is the place ``a`` gone and ``b`` there (a data directory or a teacher moved since the run began)? A relative
    ``a`` is relative to where the run was started, unknown here: gone from this directory is no sign that it moved,
    and stays a change (review)."""
    if not (isinstance(a, str) and isinstance(b, str) and a and b) or not os.path.isabs(a):
        return False
    return not os.path.lexists(a) and os.path.exists(b)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
