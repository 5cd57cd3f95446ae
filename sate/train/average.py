"""Average checkpoints into one model file: `sate average --exp DIR (--last N | --best N)`.

The SATE recipe decodes with the average of the last (or best) 10 epoch checkpoints. Checkpoints
are read with weights_only=True; they must all come from one training run (the run id `sate train`
writes in each) and hold the same architecture (same task, model config, vocabularies and parameter
shapes), otherwise averaging would silently mix models.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sate import layout
from sate.errors import SateError, first_few, one_line, shown
from sate.files import UnsafeCheckpoint, few_paths, held_inside, not_a_directory, read_checkpoint
from sate.numbers import is_int64, is_number, whole_number
from sate.targets import check_named_kind, check_output, check_same_experiment, file_name, read_name

if TYPE_CHECKING:
    import torch

PREFIX = "model."


def find_checkpoints(ckpt_dir: Path) -> list[Path]:
    """Epoch checkpoints of an experiment (every file but last.ckpt), one per epoch."""
    if not ckpt_dir.is_dir():
        exp = ckpt_dir.parent
        if exp.is_dir() and _epoch_files(exp):  # `--exp EXP/checkpoints` was "EXP/checkpoints/checkpoints: no
            # checkpoint directory (train first)", advice for another mistake
            raise SateError(f"--exp {exp}: a checkpoint folder itself; --exp takes the experiment that holds it "
                            f"({exp.parent})")
        raise SateError(f"--exp {exp}: {not_an_experiment(exp)}")
    # An epoch kept both as one of the last N and as one of the best N: the plain epoch file comes first.
    return sorted(_epoch_files(ckpt_dir), key=lambda p: (p.name.startswith("best-"), p.name))


def not_an_experiment(exp: Path, option: str = "--exp") -> str:
    """Why ``exp``, which holds no checkpoints/ folder, is no experiment to average: what it is, or the experiment
    next to it (the folder holding it, a folder inside it). Each was "EXP/checkpoints: no checkpoint directory
    (train first)", a path nobody gave, with advice to train into a pack or a data directory (twenty-first hostile
    pass)."""
    inside = next((folder for folder in exp.parents[:3] if _a_run(folder)), None)
    if inside is not None and os.path.lexists(exp):
        what = "a folder" if exp.is_dir() else "a file"
        return f"{what} inside the experiment {inside}, not one itself: give {inside}"
    if not exp.is_dir():
        return not_a_directory(exp)
    if (exp / layout.PACK_YAML).is_file():
        return (f"a packed model (`sate pack`), not an experiment: {option} takes the experiment its model was trained "
                "in")
    held = held_inside(exp, lambda child: (child / layout.CHECKPOINTS).is_dir())
    if held:
        return (f"no experiment itself; it holds the experiment{'' if len(held) == 1 else 's'} {few_paths(held)}: "
                f"give {'it' if len(held) == 1 else 'one'}")
    if (exp / layout.CONFIG).is_file():
        return f"no {layout.CHECKPOINTS}/ folder yet (train first)"
    return f"no experiment: it holds no {layout.CHECKPOINTS}/ folder (`sate train --exp` makes one)"


def _a_run(folder: Path) -> bool:
    """Is ``folder`` a training run's: its checkpoints/ beside a config snapshot, or holding checkpoints? A
    `checkpoints/` alone is no sign: a home folder's `~/checkpoints` of downloads made every folder below it "inside
    the experiment ~" with the advice to give ~ (24th hostile pass)."""
    ckpts = folder / layout.CHECKPOINTS
    if not ckpts.is_dir():
        return False
    if (folder / layout.CONFIG).is_file():
        return True
    try:
        return any(name.endswith(".ckpt") for name in os.listdir(ckpts))
    except OSError:
        return False


def _epoch_files(folder: Path) -> list[Path]:
    """The epoch checkpoints in ``folder``. Listed, not globbed: `Path.glob` found nothing in a folder of mode 0300
    and the line said "no epoch checkpoints to average" (nineteenth hostile pass); os.listdir names the folder
    with Permission denied."""
    return [folder / name for name in os.listdir(folder) if name.endswith(".ckpt")
            and name != layout.LAST_CHECKPOINT and not name.startswith(".")]


def _header(path: Path) -> dict:
    """A checkpoint whose header holds what averaging reads, of the types `sate train` writes: a header without an
    epoch, or with a model size of -1, was a KeyError, TypeError or RuntimeError traceback. Its tensors are mapped,
    not read: every checkpoint of the folder is read to choose N, and each held the weights and the optimizer's
    states in memory (--last 1 over 8 checkpoints of a 19M-parameter model took 2.3 GB, over one 0.9 GB)."""
    from sate.models.model_file import check_meta  # heavy: torch, imported when a command averages

    ckpt = read_checkpoint(path, mmap=True)
    if not isinstance(ckpt, dict) or not isinstance(ckpt.get("sate"), dict) or "state_dict" not in ckpt:
        raise SateError(f"{path}: not a `sate train` checkpoint (no 'sate' header)")
    meta = ckpt["sate"]
    check_meta(path, meta)
    if not is_int64(meta.get("epoch")) or meta["epoch"] < 0:
        raise SateError(f"{path}: its header's epoch is {shown(meta.get('epoch'))}, not a whole number >= 0 (a "
                        "damaged or foreign checkpoint)")
    if not isinstance(meta.setdefault("metrics", {}), dict) or not isinstance(ckpt["state_dict"], dict):
        raise SateError(f"{path}: its header's metrics or its state_dict is not a mapping (a damaged or foreign "
                        "checkpoint)")
    return ckpt


def _headers(ckpt_dir: Path, tries: int = 5) -> list[dict]:
    """The header of every epoch checkpoint of ``ckpt_dir``, each with its "path". A training run into the experiment
    keeps only its last and best N, so a checkpoint listed can be gone by the time it is read: `sate average` while
    `sate train` ran said "checkpoint not found" of a file the user never named (fourteenth hostile pass). The
    folder is then listed and read again, so the choice is made among the checkpoints there together."""
    for _ in range(tries):
        headers = []
        for path in find_checkpoints(ckpt_dir):
            try:
                ckpt = _header(path)
            except (SateError, OSError) as err:  # an OSError too: removed after torch read it, before its checksums
                # were (twenty-first hostile pass: "epoch001.ckpt: No such file or directory", status 1)
                if (path.exists() or path.is_symlink()) and isinstance(err, SateError) and not isinstance(
                        err, UnsafeCheckpoint):
                    # every file is read to choose: a damaged epoch000.ckpt stopped `--last 1`, which would not take
                    # it, with no way on ("was a copy or a save interrupted?"; 33rd hostile pass)
                    raise SateError(f"{err}; move it out of {one_line(str(ckpt_dir))} to average the other "
                                    "checkpoints") from None
                if path.exists() or path.is_symlink():
                    raise
                break  # removed since the listing
            headers.append({**ckpt, "path": path})
        else:
            return headers
    raise SateError(f"{ckpt_dir}: its checkpoints keep changing while they are read (a training run writing there?); "
                    "average once it has saved its checkpoint, or has ended")


# Which way sate's logged metrics improve (the name after its train/ or valid/), for --best without --mode.
BETTER_HIGH = ("acc", "bleu", "chrf")
BETTER_LOW = ("loss", "wer", "cer", "ter")


def improves(metric: str) -> str | None:
    """"max" or "min": which way a metric of ``metric``'s name improves (loss, WER: min; accuracy, BLEU, chrF: max);
    None for a name that does not say (lr, epoch, a metric of someone else's)."""
    name = metric.rsplit("/", 1)[-1].lower()
    if name.startswith(BETTER_HIGH):
        return "max"
    if name.startswith(BETTER_LOW):
        return "min"
    return None


def _trainer_section(ckpts: list[dict]) -> dict:
    """The `trainer` section of the newest checkpoint's training config, or {} where its header holds none."""
    config = ckpts[-1]["sate"].get("train_config")
    trainer = config.get("trainer") if isinstance(config, dict) else None
    return trainer if isinstance(trainer, dict) else {}


def _keep_last(ckpt: dict) -> int | None:
    """The `trainer.keep_last` a checkpoint was saved under (its header's training config), or None."""
    config = ckpt["sate"].get("train_config")
    trainer = config.get("trainer") if isinstance(config, dict) else None
    kept = trainer.get("keep_last") if isinstance(trainer, dict) else None
    return kept if isinstance(kept, int) and not isinstance(kept, bool) and kept > 0 else None


def _rotated_out_by(ckpts: list[dict], epoch: int) -> dict | None:
    """The newest checkpoint whose saving removed ``epoch`` under the `trainer.keep_last` it records (its epoch at
    least keep_last past it), or None: removed otherwise (by hand?). Each checkpoint's own: a run resumed with
    keep_last raised (3, then 10) removed epoch 1 under the first run's 3, and the note, reading the newest's 10,
    said "removed?" (27th hostile pass, review)."""
    return next((c for c in reversed(ckpts)
                 if (kept := _keep_last(c)) is not None and int(c["sate"]["epoch"]) - kept >= epoch), None)


def _missing_epochs(ckpts: list[dict], count: int) -> list[int]:
    """The epochs among the last ``count`` of the run (up to its newest checkpoint's) that have no checkpoint and
    that no `trainer.keep_last` removed: removed by hand, where the note blamed keep_last (25th hostile pass)."""
    newest = max(int(c["sate"]["epoch"]) for c in ckpts)
    held = {int(c["sate"]["epoch"]) for c in ckpts}
    return [e for e in range(max(0, newest - count + 1), newest + 1)
            if e not in held and _rotated_out_by(ckpts, e) is None]


def _note_older_in_place(ckpt_dir: Path, ckpts: list[dict], chosen: list[dict]) -> None:
    """Say which older epochs `--last N` took in place of epochs of the last N that are not there: `--last 2` with
    epoch001.ckpt removed by hand averaged epochs 0 and 2, and `--last 12` over a run keeping its last 10 took two of
    its best checkpoints from epochs long before, each without a word (27th hostile pass). The note of a folder
    holding fewer than N says it where the folder runs short."""
    newest = int(chosen[-1]["sate"]["epoch"])
    held = {int(c["sate"]["epoch"]) for c in ckpts}
    gone = [e for e in range(max(0, newest - len(chosen) + 1), newest + 1) if e not in held]
    if not gone:
        return
    older = [int(c["sate"]["epoch"]) for c in chosen if int(c["sate"]["epoch"]) < newest - len(chosen) + 1]
    rotated = None if set(_missing_epochs(ckpts, len(chosen))) & set(gone) else _rotated_out_by(ckpts, max(gone))
    if rotated is None:
        why = "removed?"
    elif _keep_last(rotated) == _keep_last(ckpts[-1]):
        why = f"trainer.keep_last keeps {_keep_last(rotated)}"
    else:  # it removed every epoch gone: they are older than the newest of them
        why = f"trainer.keep_last was {_keep_last(rotated)} at epoch {int(rotated['sate']['epoch'])}"
    many = "s" if len(gone) > 1 else ""
    print(f"sate average: note: --last {len(chosen)}: epoch{many} {', '.join(map(str, gone))} of the last "
          f"{len(chosen)} {'are' if many else 'is'} not in {one_line(str(ckpt_dir))} ({why}); averaged the older "
          f"epoch{'s' if len(older) > 1 else ''} {', '.join(map(str, older))} in {'their' if many else 'its'} place",
          file=sys.stderr)


def check_mode(metric: str, mode: str, where: str, instead: str = "") -> None:
    """Refuse a mode against the way ``metric`` improves: `trainer.monitor valid/bleu` with the default
    `monitor_mode min` (a `--set` of the monitor alone) kept the ten worst checkpoints, deleted the best, stopped
    early when BLEU rose, and `sate average --best` averaged the worst, all without a word (twenty-third hostile
    pass). ``where`` names the setting; ``instead`` the option that gives the right mode, where the setting is a
    record the user does not edit (a run's config in its checkpoints)."""
    better = improves(metric)
    if better is not None and better != mode:
        raise SateError(f"{where} {mode} for {shown(metric)}, which is better {'high' if better == 'max' else 'low'}: "
                        f"the best checkpoints would be the worst; give {(instead + ' ') if instead else ''}{better}")


def best_mode(metric: str, monitor: object, monitor_mode: object) -> str:
    """Which way ``metric`` improves when --mode is not given: the run's trainer.monitor_mode for its monitor
    (refused where it contradicts the metric's name: a run of an older sate kept its worst checkpoints so), else
    what its name says. The fixed default of min took the worst checkpoints of a run monitoring valid/bleu (every
    synth_ding config) as its best."""
    if metric == monitor and monitor_mode in ("min", "max"):
        check_mode(metric, str(monitor_mode), "the run's trainer.monitor_mode is", "--mode")
        return str(monitor_mode)
    better = improves(metric)
    if better is None:
        raise SateError(f"--metric {metric}: say whether it is better low or high (--mode min or --mode max)")
    return better


def select(ckpt_dir: Path, last: int | None, best: int | None, metric: str | None,
           mode: str | None = None) -> list[dict]:
    """The checkpoints to average, loaded: the `last` latest epochs, or the `best` by `metric` (better as `mode`
    says; when None, as `best_mode` says)."""
    by_epoch: dict[int, dict] = {}
    for ckpt in _headers(ckpt_dir):
        path = ckpt["path"]
        epoch = int(ckpt["sate"]["epoch"])
        kept = by_epoch.setdefault(epoch, ckpt)
        # the same epoch twice is one checkpoint kept twice (epochNNN and best-...) when run and update agree; else
        # one of them was dropped without a word, and --last 3 averaged 2 (a checkpoint copied in from another run)
        if kept is not ckpt and (kept["sate"].get("run_id"), kept.get("global_step")) != (
                ckpt["sate"].get("run_id"), ckpt.get("global_step")):
            raise SateError(f"{path} and {kept['path']} both hold epoch {epoch}, of different runs or updates (one "
                            "copied in from elsewhere?): move one out of the checkpoint folder")
    if not by_epoch:
        return _last_alone(ckpt_dir, last)
    ckpts = [by_epoch[e] for e in sorted(by_epoch)]
    count = last if last is not None else best
    if count is not None and len(ckpts) < count:  # the recipes' --average-n 10 over a config keeping 5 took 5, said
        # only by the count (twenty-first hostile pass)
        option, keeps = ("--last", "keep_last") if last is not None else ("--best", "keep_best")
        gone = _missing_epochs(ckpts, count) if last is not None else []
        why = (f"epoch{'s' if len(gone) > 1 else ''} {', '.join(map(str, gone))} of the last {count} "
               f"{'are' if len(gone) > 1 else 'is'} not there (removed?)" if gone else
               f"trainer.{keeps} keeps that many, or training ran that few epochs")
        print(f"sate average: note: {option} {count}: {one_line(str(ckpt_dir))} holds {len(ckpts)} epoch "
              f"checkpoint(s) ({why}); averaged those", file=sys.stderr)
    if last is not None:
        chosen = ckpts[-last:]
        if len(chosen) == last:
            _note_older_in_place(ckpt_dir, ckpts, chosen)
        return chosen
    if metric is None:
        try:
            metric = str(ckpts[-1]["sate"]["train_config"]["trainer"]["monitor"])
        except (KeyError, TypeError):
            raise SateError(f"{ckpts[-1]['path']}: records no trainer.monitor; name the metric (--metric)") from None
    # A checkpoint saved after its run's last validation (trainer.max_steps ended the run inside an epoch, and
    # Lightning saved that epoch's checkpoint) records that validation's valid/ metrics: `--best 2 --metric valid/loss`
    # ranked it with the epoch before's score and averaged weights nobody scored, exit 0 (31st hostile pass). `--last`
    # takes it, as the run's last weights; a train/ metric is its own.
    partial = [c for c in ckpts if _validated_before(c, metric)]
    # A NaN sorts anywhere (every comparison with it is false): a diverged epoch's NaN loss was taken among the best
    scored = [c for c in ckpts if c not in partial and is_number(c["sate"]["metrics"].get(metric))]
    if not scored:  # before the mode: --metric epoch was asked for --mode, then refused as never recorded
        if partial and len(partial) == len(ckpts):
            raise SateError(f"{ckpt_dir}: {_partial_said(partial)}, the only epoch checkpoint"
                            f"{'s' if len(partial) > 1 else ''} there: none is ranked by {metric}; average with --last")
        known = ", ".join(sorted({name for c in ckpts for name in c["sate"]["metrics"]}))
        raise SateError(f"no checkpoint in {ckpt_dir} recorded metric {metric!r} as a finite number (recorded: "
                        f"{known})")
    if mode is not None:
        check_mode(metric, mode, "--mode")
    else:
        trainer = _trainer_section(ckpts)
        mode = best_mode(metric, trainer.get("monitor"), trainer.get("monitor_mode"))
    if len(scored) < len(ckpts) and best is not None:  # left out without a word: --best 3 by valid/bleu of a run
        # resumed with valid_bleu_utts 0 averaged the 2 epochs before, and the note blamed trainer.keep_best (24th
        # hostile pass)
        unranked = [c["path"].name for c in ckpts if c not in scored and c not in partial]
        reasons = [f"{first_few(unranked)} recorded no finite {one_line(metric)} (a diverged epoch, or a run resumed "
                   "with other validation settings)"] if unranked else []
        reasons += [_partial_said(partial)] if partial else []
        print(f"sate average: note: --best {best}: {'; '.join(reasons)}, so "
              f"{'it is' if len(unranked) + len(partial) == 1 else 'they are'} not ranked; {len(scored)} of "
              f"{len(ckpts)} epoch checkpoints are", file=sys.stderr)
    scored.sort(key=lambda c: c["sate"]["metrics"][metric], reverse=(mode == "max"))
    return sorted(scored[:best], key=lambda c: c["sate"]["epoch"])


def _last_alone(ckpt_dir: Path, last: int | None) -> list[dict]:
    """With no epoch checkpoint in the folder (removed to save disk), the run's latest weights, last.ckpt, are what is
    left: `--last N` takes them, said; `--best N` is told that. It was "no epoch checkpoints to average", with no way
    on, and `sate pack --model EXP/checkpoints/last.ckpt`'s advice (`sate average --exp EXP --last N`) failed when
    followed (hand31c)."""
    path = ckpt_dir / layout.LAST_CHECKPOINT
    if not path.is_file():
        raise SateError(f"{ckpt_dir}: no epoch checkpoints to average")
    ckpt = {**_header(path), "path": path}
    why = _none_written(ckpt)
    if last is None:
        raise SateError(f"{ckpt_dir}: holds {layout.LAST_CHECKPOINT} alone, no epoch checkpoint ({why}): none to rank "
                        f"by --best; --last 1 writes a model file of {layout.LAST_CHECKPOINT}, the run's latest "
                        "weights")
    step = ckpt.get("global_step", ckpt["sate"].get("step"))
    at = f", update {step:,}" if is_int64(step) else ""
    print(f"sate average: note: --last {last}: {one_line(str(ckpt_dir))} holds no epoch checkpoint ({why}), only "
          f"{layout.LAST_CHECKPOINT}: took its weights alone, the run's latest (epoch {ckpt['sate']['epoch']}{at})",
          file=sys.stderr)
    return [ckpt]


def _none_written(last: dict) -> str:
    """Why a folder holds last.ckpt and no epoch checkpoint, as its header tells: a run stopped (or still training)
    inside its first epoch, with mid-epoch checkpoints, never wrote one, and the note said "removed?" of it (review32k).
    An epoch checkpoint was written once the run ended an epoch, or reached trainer.max_steps (Lightning saves that
    epoch's then); a header without `mid_epoch` (an older sate) at epoch 0 cannot tell."""
    meta = last["sate"]
    trainer = meta.get("train_config", {}).get("trainer") if isinstance(meta.get("train_config"), dict) else None
    max_steps = trainer.get("max_steps") if isinstance(trainer, dict) else None
    step = meta.get("step")
    ended = is_int64(max_steps) and max_steps > 0 and is_int64(step) and step >= max_steps
    if meta["epoch"] > 0 or meta.get("mid_epoch") is False or ended:
        return "removed?"
    if meta.get("mid_epoch") is True:
        return "none written yet: last.ckpt was saved inside the run's first epoch, which it has not finished"
    return "removed, or never written by a run stopped inside its first epoch?"


def _validated_before(ckpt: dict, metric: str) -> bool:
    """Was ``ckpt`` saved after the validation whose ``metric`` (a valid/ one) it records, at another update? Said by
    the update of that validation, which checkpoints record (`validated_step`); one without the record is not judged."""
    validated = ckpt["sate"].get("validated_step")
    return metric.startswith("valid/") and is_int64(validated) and validated != ckpt["sate"].get("step", validated)


def _partial_said(partial: list[dict]) -> str:
    """The checkpoints `_validated_before` names, and why their scores are not theirs."""
    first = partial[0]["sate"]
    return (f"{first_few([c['path'].name for c in partial])} {'was' if len(partial) == 1 else 'were'} saved after the "
            f"run's last validation (update {first['step']:,}, validated at {first['validated_step']:,}: "
            "trainer.max_steps ended it inside its epoch?): the valid/ scores recorded are that validation's")


def average_state_dicts(states: list[dict[str, torch.Tensor]], names: list[str]) -> dict[str, torch.Tensor]:
    """Element-wise mean of float tensors; integer buffers (counters) are taken from the last state."""
    import torch  # heavy: torch, imported when a command averages, so `sate --help` stays instant

    reference = states[-1]
    for state, name in zip(states, names, strict=True):
        if set(state) != set(reference):
            diff = sorted(set(state) ^ set(reference))
            raise SateError(f"{name} has different parameters than {names[-1]} (e.g. {', '.join(diff[:4])}): "
                            f"checkpoints of different architectures cannot be averaged")
        for key, value in state.items():
            if value.shape != reference[key].shape:
                raise SateError(f"{name}: {key} has shape {tuple(value.shape)}, {names[-1]} has "
                                f"{tuple(reference[key].shape)}: different architectures cannot be averaged")
    out = {}
    for key, value in reference.items():
        if value.is_floating_point():
            total = torch.zeros_like(value, dtype=torch.float64)
            for state in states:
                total += state[key].to(torch.float64)
            out[key] = (total / len(states)).to(value.dtype)
        else:
            out[key] = value.clone()
    return out


def average(ckpt_dir: Path, out: Path, last: int | None = None, best: int | None = None, metric: str | None = None,
            mode: str | None = None, option: str = "--out") -> list[Path]:
    """Write the average of the selected checkpoints to `out` (a sate model file); returns their paths. ``option``
    names `out` in a refusal: the default one was called `--out EXP/model.pt` by a user who gave no --out."""
    from sate.models.model_file import (  # heavy: torch and ESPnet, when it averages
        built,
        load_exact,
        save_model_file,
        token_sides,
    )

    given = out
    out = check_output(out, "model", option)  # before any work: never a checkpoint, nor another file than a model file
    # a name of another kind (`--out avg.json`, `avg.ckpt`, which sate reads as a training checkpoint) was written a
    # model file under, exit 0 (twenty-second hostile pass)
    check_named_kind(given, "sate average writes a model file", (".pt", ".pth"), option)
    ckpts = select(ckpt_dir, last, best, metric, mode)
    names = [str(c["path"]) for c in ckpts]
    first = ckpts[-1]["sate"]
    runs = {str(c["sate"].get("run_id") or "unknown") for c in ckpts}
    if len(runs) > 1:
        which = ", ".join(f"{c['path'].name} (run {c['sate'].get('run_id') or 'unknown'})" for c in ckpts)
        raise SateError(f"{ckpt_dir}: the checkpoints to average come from different training runs: {which}; "
                        f"average checkpoints of one run")
    last = _last_header(ckpt_dir)
    ours = last.get("run_id")
    if isinstance(ours, str) and ours and runs not in ({ours}, {"unknown"}) and not any(
            c["path"].name == layout.LAST_CHECKPOINT for c in ckpts):
        # a checkpoint copied (or linked) in from another experiment, the newest epoch there: `--last 1` (or `--best
        # 1`) averaged it alone, exit 0, where two of them with one of this run's were refused (33rd hostile pass).
        # Checkpoints of no run id are an older sate's, of this run before a resume gave it an id (`ResumePoint`):
        # its best epochs were blamed as copied in (review33c)
        taken = [c["path"].name for c in ckpts]
        raise SateError(f"{ckpt_dir}: {first_few(taken)} {'is' if len(taken) == 1 else 'are'} of run "
                        f"{runs.pop()}, and {layout.LAST_CHECKPOINT} beside {'it' if len(taken) == 1 else 'them'} of "
                        f"run {ours}: checkpoints of two experiments (one copied or linked in?); move those of the "
                        "other out of the checkpoint folder")
    for ckpt in ckpts:
        meta = ckpt["sate"]
        # an ASR run resumed after the target vocabulary changed: a list its model never read (`token_sides`)
        keys = ("task", "config", *(f"{side}_tokens" for side in token_sides(first["task"])), "cmvn")
        for key in keys:
            if meta.get(key) != first.get(key):
                raise SateError(f"{ckpt['path']}: its {key} differs from {names[-1]}'s: checkpoints of different "
                                f"architectures, vocabularies or CMVN statistics cannot be averaged")
    states = [{k[len(PREFIX):]: v for k, v in c["state_dict"].items() if k.startswith(PREFIX)} for c in ckpts]
    averaged = average_state_dicts(states, names)
    model = built(first, names[-1])
    load_exact(model, averaged, f"the average of {len(ckpts)} checkpoints")
    save_model_file(out, model, first["src_tokens"], first["tgt_tokens"], state_dict=averaged, cmvn=first.get("cmvn"),
                    cmvn_kind=first.get("cmvn_kind"), averaged=_record(ckpt_dir, ckpts))
    return [c["path"] for c in ckpts]


def _last_header(ckpt_dir: Path) -> dict:
    """The `sate` header of the run's last.ckpt in ``ckpt_dir``, or {} where there is none or it does not read."""
    try:
        return _header(ckpt_dir / layout.LAST_CHECKPOINT)["sate"]
    except (SateError, OSError):
        return {}


def _record(ckpt_dir: Path, ckpts: list[dict]) -> dict[str, object]:
    """What an average took, for the model file: the run, its epochs, and the update the run had reached (its
    last.ckpt's, else the newest taken). `sate pack` compares it with last.ckpt: after a resume trained on, the older
    EXP/model.pt was packed without a word (hand31c)."""
    steps = [c["sate"].get("step") for c in ckpts]
    reached = max((s for s in steps if is_int64(s)), default=None)
    run_id = ckpts[-1]["sate"].get("run_id")
    last = _last_header(ckpt_dir)  # none, or damaged: the run's newest is then the newest taken
    if last.get("run_id") == run_id and is_int64(last.get("step")):
        reached = max(int(last["step"]), reached or 0)
    return {"run_id": run_id, "epochs": [int(c["sate"]["epoch"]) for c in ckpts], "step": reached}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--exp", type=read_name, required=True, help="experiment dir of `sate train`")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--last", type=whole_number, help="average the last N epoch checkpoints")
    group.add_argument("--best", type=whole_number, help="average the best N checkpoints by --metric")
    parser.add_argument("--metric", default=None, help="metric for --best (default: the run's trainer.monitor)")
    parser.add_argument("--mode", choices=["min", "max"], default=None,
                        help="whether --metric is better low or high (default: the run's trainer.monitor_mode for "
                             "its monitor; else min for a loss or WER, max for accuracy, BLEU or chrF)")
    parser.add_argument("--out", type=file_name, default=None, help="model file to write (default: EXP/model.pt)")


def run(args: argparse.Namespace) -> int:
    count = args.last if args.last is not None else args.best
    if count < 1:  # named: "the number of checkpoints must be >= 1" named no option
        raise SateError(f"--{'last' if args.last is not None else 'best'} {count}: the number of checkpoints to "
                        "average must be >= 1")
    if args.last is not None and (args.metric is not None or args.mode is not None):  # taken without a word
        raise SateError(f"--{'metric' if args.metric is not None else 'mode'} ranks the checkpoints of --best; "
                        "--last takes the latest epochs")
    out = args.out or args.exp / layout.MODEL
    option = "--out" if args.out else "the model file of --exp"
    # `--out exp/asr/model.pt` copied from the ASR line replaced the ASR model; so did EXP/model.pt left as a link
    # to it, without any --out
    check_same_experiment(out, [args.exp], f"the average of --exp {args.exp}", option)
    used = average(args.exp / layout.CHECKPOINTS, out, args.last, args.best, args.metric, args.mode, option)
    print(f"averaged {len(used)} checkpoint(s) into {one_line(str(out))}: " + ", ".join(p.name for p in used))
    return 0
