"""Train an ASR, MT or SATE model: `sate train --config CONF --exp DIR [--set key=value ...]`.

Lightning runs the loop. On one machine it uses every GPU it sees (or the CPU); across machines, start
it with torchrun or srun and give --num-nodes. One run holds an experiment directory at a time
(`sate.train.lock`). A run resumes by itself from the newest readable checkpoint of EXP/checkpoints
(`sate.train.resume`): step, epoch, optimizer, scheduler, loader position and RNG continue, inside an
epoch too; a changed config is refused unless only safe keys changed.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import signal
import socket
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from sate import layout
from sate.config import (
    ConfigOption,
    apply_overrides,
    dump_flow,
    dump_yaml,
    load_yaml_value,
    read_yaml,
    write_yaml,
)
from sate.data.features import SPEED_SPLIT
from sate.data.manifest import TRAIN_SPLIT
from sate.errors import (
    SateError,
    handlers_kept,
    ignored_kept,
    loader_worker_lost,
    one_line,
    out_of_memory,
    sent_at_parents_end,
    shell_word,
    shown,
)
from sate.files import lock_holder, remove_abandoned, require_directory, require_file, what_is_there
from sate.models.config import ASRConfig, ModelConfig, MTConfig, check_init_parts, resolve_in_file
from sate.models.init_from import fill_init, parse_init_from
from sate.models.init_section import check_init_section
from sate.numbers import is_digits, is_int64, max_jobs, whole_number
from sate.settings import BOOLEAN_WORD, read, yaml_shown
from sate.targets import check_output, check_run_folders, dir_name, read_name, same_file
from sate.train.average import check_mode, not_an_experiment
from sate.train.lock import pid_alive
from sate.train.schema import (
    WER_MONITOR_ADVICE,
    TrainingConfig,
    check_feature_mode,
    speech_side_only,
    train_splits,
    trained_twice,
    untrained_output,
    untrained_wer_monitor,
)

__all__ = ["apply_init_from", "load_training_config", "train"]
# Environment variables that name a process's rank under torchrun, SLURM or Lightning's own launcher.
RANK_VARIABLES = ("RANK", "SLURM_PROCID", "LOCAL_RANK", "NODE_RANK", "GROUP_RANK")
# What a launcher of a run over several machines sets (torchrun, SLURM, or Lightning's own manual launch).
LAUNCHER_VARIABLES = (*RANK_VARIABLES, "WORLD_SIZE", "MASTER_ADDR", "SLURM_NTASKS")
# Every rank variable Lightning may read: LSF's jsrun sets JSM_NAMESPACE_RANK (not a sign of a run over several
# machines, so not among LAUNCHER_VARIABLES).
RANKS_READ = (*RANK_VARIABLES, "JSM_NAMESPACE_RANK")
MAX_NODES = 10_000
# The counts `trainer.monitor` may name (for best-N checkpoints), and what they count: no early stopping follows them.
COUNTS = {"epoch": "epochs", "step": "updates"}

def load_training_config(path: str | Path, overrides: list[str], need_data: bool = True) -> TrainingConfig:
    """The file's config merged with the defaults and checked; `need_data` False allows data.dir unset."""
    data = read_yaml(path)  # once: a pipe (`--config <(sed ...)`) cannot be read again
    config = _naming_set(path, overrides, lambda items: _merged(data, items))
    if need_data:
        _require_data(config, path, overrides)
    return config


def _merged(data: dict[str, object], overrides: list[str]) -> TrainingConfig:
    return read(TrainingConfig, apply_overrides(data, overrides))


def _require_data(config: TrainingConfig, path: str | Path, overrides: list[str]) -> None:
    if not config.data.dir:
        # `--set data.dir=~` (which no shell expands) is YAML's null: "data.dir is not set", naming only the file,
        # sent the user to a file that did not set it (sixteenth hostile pass)
        tilde = any([part.strip() for part in item.split("=", 1)] == ["data.dir", "~"] for item in overrides)
        if tilde:
            raise SateError(f"{path} with --set data.dir=~: data.dir is not set (a lone ~ is YAML for null, not your "
                            "home folder: write the path out)")
        raise SateError(f"{path}: data.dir is not set (the `sate prep` output directory)")


def checked_config(path: str | Path, overrides: list[str], init_from: list[str], need_data: bool = True) \
        -> TrainingConfig:
    """`load_training_config` with `--init-from` applied and the model section resolved (`resolve_in_file`)."""
    data = read_yaml(path)
    sources = parse_init_from(init_from)
    # --init-from inside: a refusal of what it fills (a teacher the file or a --set names otherwise) names them too
    config = _naming_set(path, overrides, lambda items: apply_init_from(_merged(data, items), sources))

    def resolved(items: list[str]) -> TrainingConfig:
        # the whole command line's config is built above; only a refusal's search for its --set builds others
        built = config if items == overrides else apply_init_from(_merged(data, items), sources)
        model = resolve_in_file(built.task, built.model, path)
        check_monitor(built, model)  # before the data: named with the file
        check_feature_mode(built)
        if built.init:
            check_init_section(built.task, built.init)
            check_init_parts(model, built.init, "model.")
        if need_data:  # the command line's data directory, whichever --set is tried: a refusal names the --set that
            _check_joint_vocabulary(built.task, config.data.dir, model)  # made the model, not one giving data.dir
        return built

    _naming_set(path, overrides, resolved)
    if need_data:
        _require_data(config, path, overrides)
    return config


def _check_joint_vocabulary(task: str, data_dir: object, model: ModelConfig) -> None:
    """`model.adaptor.embedding: decoder` over the data's token lists, before any work and so named with the file and
    its `--set`: the model's build refused it as "model config: adaptor.embedding decoder ...", naming neither
    (`conf/mustc/st_reference.yaml` on data without `sate vocab --joint`; 25th hostile pass). Token lists that cannot
    be read are left to the training's own refusal of them."""
    from sate.data.vocab import load_vocabularies  # heavy: sentencepiece
    from sate.models.sharing import check_joint_vocabulary  # heavy: torch

    if task != "st" or not data_dir:
        return
    try:
        src, tgt = load_vocabularies(Path(str(data_dir)), task)
    except (SateError, OSError):
        return
    try:
        check_joint_vocabulary(model, src.tokens, tgt.tokens)
    except SateError:
        data = str(data_dir)
        raise SateError(f"model.adaptor.embedding decoder multiplies CTC posteriors by the decoder's embedding, so it "
                        f"needs one joint vocabulary, but {one_line(data)}'s source and target token lists differ "
                        f"({len(src)} and {len(tgt)} tokens): make one with `sate vocab --data {shell_word(data)} "
                        "--joint SIZE`, or set model.adaptor.embedding: source") from None


def logged_metrics(config: TrainingConfig, model: ModelConfig) -> list[str]:
    """The metrics a run of this config has at every validation's end (`sate.train.module.SateModule` logs them, from
    the terms of its model's loss), which `trainer.monitor` may name."""
    if isinstance(model, MTConfig):
        terms = ["loss_ce", "acc"]
    elif isinstance(model, ASRConfig):
        terms = ["loss_ctc", *(["loss_ce", "acc"] if model.decoder.layers else [])]
    else:
        kd = model.loss.kd
        terms = ["loss_ce", "loss_ctc", *(["loss_kd_asr"] if kd.asr_weight > 0 else []),
                 *(["loss_kd_mt"] if kd.mt_weight > 0 else []), "acc"]
    names = [f"valid/{term}" for term in ["loss", *terms]]
    names += ["valid/wer"] if config.task != "mt" else []
    names += ["valid/bleu"] if config.task != "asr" and config.trainer.valid_bleu_utts > 0 else []
    names += [f"train/{term}" for term in ["loss", *terms, *(["loss_mt"] if config.text_batches else [])]]
    return [*names, "lr", "epoch", "step"]


def check_monitor(config: TrainingConfig, model: ModelConfig) -> None:
    """`trainer.monitor` must be a metric the run logs: Lightning found one it never logs (a typo, `valid/bleu` of an
    ASR run or with `valid_bleu_utts` 0) only at the end of the first epoch, as a traceback after the work. And
    `trainer.monitor_mode` the way it improves (`check_mode`)."""
    names = logged_metrics(config, model)
    tconf = config.trainer
    if tconf.monitor not in names:
        raise SateError(f"trainer.monitor {shown(tconf.monitor)} is not a metric this {config.task} run "
                        f"logs ({', '.join(name for name in names if name.startswith('valid/'))}, or a train/ one)")
    if tconf.patience > 0 and tconf.monitor in COUNTS:
        # Lightning's early stopping reads the logged metrics, where the counts are not: its RuntimeError traceback
        # ("Early stopping conditioned on metric `epoch` which is not available") ended the first epoch, before its
        # checkpoint, the experiment's snapshot and logs left (thirty-third hostile pass)
        raise SateError(f"trainer.patience {tconf.patience} stops the run when trainer.monitor has not improved for "
                        f"that many validations, and {tconf.monitor} is the count of {COUNTS[tconf.monitor]}, no "
                        "measure of the model: monitor a valid/ metric (valid/loss), or set trainer.patience 0")
    if tconf.monitor == "epoch" and tconf.monitor_mode == "max":
        # the best checkpoints by the count are the last ones, kept under the same Lightning state as the last
        # trainer.keep_last: training began with its "more than one stateful callback" traceback (review33t)
        raise SateError("trainer.monitor epoch with trainer.monitor_mode max keeps the last epochs, which "
                        "trainer.keep_last keeps already: monitor a valid/ metric (valid/loss), or raise "
                        "trainer.keep_last")
    check_mode(config.trainer.monitor, config.trainer.monitor_mode, "trainer.monitor_mode is")


def _naming_set(path: str | Path, overrides: list[str], build: Callable[[list[str]], TrainingConfig]) \
        -> TrainingConfig:
    """``build(overrides)``; its refusal names the file and, where the file alone is taken, the first `--set` with
    which it is not. A refusal named only the file ("conf/st.yaml: unknown config key 'trainer.max_epoch'"), and
    the user searched it for a key it never held."""
    try:
        return build(overrides)
    except SateError as err:
        message = str(err)
        # a message that names its --set already (`--set X: ...`, or one of a config `with --set X`) keeps it; advice
        # that shows a --set to give is no naming
        named = message.startswith("--set ") or " with --set " in message
        item = None if named or not overrides else _set_at_fault(overrides, build, message)
        where = str(path) if item is None else f"{path} with --set {shown(item)}"
        message = message if item is None else _as_written(message, item, str(path), _retried(build, overrides, item))
        raise SateError(message.replace(str(path), where, 1) if message.startswith(str(path))
                        else f"{where}: {message}") from None


def _retried(build: Callable[[list[str]], TrainingConfig], overrides: list[str], item: str) \
        -> Callable[[str], str | None]:
    """The refusal of the command line with `item` given as ``instead``, or None where it is taken."""
    def refusal(instead: str) -> str | None:
        try:
            build([instead if given == item else given for given in overrides])
        except SateError as err:
            return str(err)
        return None
    return refusal


def _as_written(message: str, item: str, path: str, retry: Callable[[str], str | None]) -> str:
    """``message`` with a YAML 1.1 boolean that `item` (``KEY=VALUE``) gave named as the user wrote it: `--set
    data.cmvn=no` was "data.cmvn must be a string, got False", a word the user never wrote (24th hostile pass). A
    refusal of the model section starts with the config's path (``PATH: model.acoustic.type ...``); where the key
    takes text, the quoting that gives the text is advised, unless `retry` (the command line with the text quoted)
    is refused for the key as well: then that refusal names what the key takes (`data.cmvn`'s choices), the quoting
    followed was refused again (24th hostile pass, review)."""
    key, raw = (part.strip() for part in item.split("=", 1))
    try:
        value = load_yaml_value(raw, f"--set {shown(item)}")
    except (SateError, yaml.YAMLError):
        return message
    rest = message.removeprefix(f"{path}: ")
    head, body = message[:len(message) - len(rest)], rest.removesuffix(BOOLEAN_WORD)
    got = yaml_shown(value)
    if not isinstance(value, bool) or raw.lower() in ("true", "false") or not body.startswith(f"{key} ") \
            or not body.endswith(f", got {got}"):
        return message
    read_as = f", which YAML reads as {got}"
    if "must be a string" not in body:
        return f"{head}{body[:-len(got)]}{shown(raw)}{read_as}"
    again = retry(f"{key}={dump_flow(raw)}")
    again = None if again is None else again.removeprefix(f"{path}: ")
    if again is not None and again.startswith(f"{key} ") and again.endswith(f", got {shown(raw)}"):
        return f"{head}{again}{read_as}"  # the text is refused too: what the key takes, not the quoting
    return (f"{head}{body[:-len(got)]}{shown(raw)}{read_as} (for the text, quote it: --set "
            f"\"{key}='{one_line(raw)}'\")")


def _set_at_fault(overrides: list[str], build: Callable[[list[str]], TrainingConfig], message: str) -> str | None:
    """The first override with which `build` refuses as the whole command line is refused (``message``), where it
    takes none; None when it refuses the file alone. The first refusal of any kind named a --set that is refused
    for another reason: `--set trainer.monitor=valid/bleu --set trainer.monitor_mode=max --set
    trainer.valid_bleu_utts=0` ("valid/bleu is not a metric this run logs") named the first, refused alone for its
    mode. Without a refusal of that message, the first refusal."""
    first = None
    for n in range(len(overrides) + 1):
        try:
            build(overrides[:n])
        except SateError as err:
            item = overrides[n - 1] if n else None
            if str(err) == message:
                return item
            first = item if first is None else first
    return first


def apply_init_from(config: TrainingConfig, sources: dict[str, str]) -> TrainingConfig:
    """`config` with the `init:` entries and `loss.kd` teachers of `--init-from` (`sate.models.init_from`)."""
    model, init = fill_init(config.task, config.model, config.init, sources)
    return replace(config, model=model, init=init)


def is_primary_process() -> bool:
    """Whether this process is global rank 0 (or the only one), judged before Lightning sets ranks up. A rank is
    read as Lightning reads it (int()): RANK=' 0' or '00' is rank 0, whose run took no lock (29th hostile pass).
    JSM_NAMESPACE_RANK is LSF's (jsrun): without it every task of a jsrun launch took the lock, rank 1 stopped on
    "in use by another training run" and rank 0 waited at the rendezvous for 30 minutes (fix29t)."""
    return not any(_launch_number(name) for name in RANKS_READ)


def choose_precision(setting: str, accelerator: str) -> str:
    """The precision a run uses: `trainer.precision`, "auto" chosen by the device, and 16-mixed on the CPU bf16-mixed,
    as Lightning runs it there (no fp16 autocast on the CPU): the run's line said "precision 16-mixed" while Lightning
    ran bf16-mixed, under a warning naming its own file (thirtieth hostile pass)."""
    import torch

    cpu = accelerator == "cpu" or not torch.cuda.is_available()
    if setting == "16-mixed" and cpu:
        return "bf16-mixed"
    if setting != "auto":
        return setting
    if cpu:
        return "32-true"
    return "bf16-mixed" if torch.cuda.is_bf16_supported() else "16-mixed"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, type=read_name, action=ConfigOption,
                        help="training YAML (see conf/)")
    parser.add_argument("--exp", required=True, type=dir_name,
                        help="experiment dir: checkpoints, logs, config snapshot")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key, e.g. --set optim.lr=1e-3 (repeatable)")
    parser.add_argument("--init-from", action="append", default=[], metavar="asr=PATH|mt=PATH",
                        help="st: start the acoustic encoder and CTC from an ASR model file, the source embedding, "
                             "textual encoder and decoder from an MT model file; each is also the distillation "
                             "teacher of its side where the config sets a loss.kd weight (repeatable)")
    parser.add_argument("--steps-from", type=read_name, metavar="EXP",
                        help="train for exactly as many updates as the run in EXP did (its last checkpoint's step), "
                             "for comparisons at equal training; replaces the config's budgets, and turns early "
                             "stopping (trainer.patience) off")
    parser.add_argument("--accelerator", default="auto", choices=["auto", "cpu", "gpu"])
    parser.add_argument("--devices", type=whole_number, default=None,
                        help="devices per node (default: all GPUs, or 1 CPU process)")
    parser.add_argument("--num-nodes", type=whole_number, default=1, help="machines (with torchrun or SLURM)")


def steps_of(exp: Path) -> int:
    """The number of updates the run in `exp` made: its last checkpoint's global step."""
    import torch

    last = Path(exp) / layout.CHECKPOINTS / layout.LAST_CHECKPOINT
    if not os.path.isdir(Path(exp) / layout.CHECKPOINTS):  # a model file, a pack, a checkpoint folder, a folder of
        # experiments: "EXP/model.pt/checkpoints/last.ckpt is missing (has that run trained?)", a path nobody gave
        # (24th hostile pass); what it is, as `sate average --exp` says
        raise SateError(f"--steps-from {one_line(str(exp))}: {not_an_experiment(Path(exp), '--steps-from')}")
    require_file(last, "a checkpoint", f"--steps-from {exp}: {last} is missing (has that run trained?)")
    try:
        # mapped, not read: the weights and the optimizer's states (a model's size three times) are not needed
        step = torch.load(last, map_location="cpu", weights_only=True, mmap=True)["global_step"]
    except Exception as err:  # noqa: BLE001 - any unreadable file gets the same message
        raise SateError(f"--steps-from {exp}: cannot read the step of {last} ({shown(str(err))})") from None
    # -1 is Lightning's "no limit": a step of -1 trained without end, where the run's own count was asked for
    if not is_int64(step) or step < 1:
        raise SateError(f"--steps-from {exp}: {last} records {shown(step)} updates, not a whole number of at least "
                        "one (int64)")
    lock = Path(exp) / layout.TRAIN_LOCK
    if lock_holder(lock) is not None:  # its count so far: "as many updates" was fewer, exit 0 (twenty-second pass)
        raise SateError(f"--steps-from {exp}: that run is still training (it holds {lock}), so the {int(step):,} "
                        "updates of its last checkpoint are not its count yet; wait for it to end")
    return int(step)


def config_from_args(args: argparse.Namespace) -> TrainingConfig:
    """The config a `sate train` command line stands for: file, --set, --init-from and --steps-from."""
    config = checked_config(args.config, args.overrides, args.init_from)
    if args.steps_from is not None:
        trainer = config.trainer
        steps = steps_of(args.steps_from)
        # "exactly as many updates": early stopping ended a comparison row before them, at a count of its own, and
        # the rows were compared at unequal training without a word (24th hostile pass)
        if trainer.patience > 0:
            print(one_line(f"--steps-from {args.steps_from}: trainer.patience {trainer.patience} is off, so that this "
                           f"run trains for exactly its {steps:,} updates"), file=sys.stderr)
        config = replace(config, trainer=replace(trainer, max_steps=steps, max_epochs=max(trainer.max_epochs, 100000),
                                                 max_minutes=None, patience=0))
    return config


def check_devices(accelerator: str, devices: int | None, gpus: int) -> int:
    """The devices per node for `accelerator` ("cpu" or "gpu", on a machine of `gpus` GPUs): --devices from 1 to
    the GPUs there are, or to `max_jobs` CPU processes; when not given, every GPU or one process. `--accelerator
    gpu` without a GPU was a ZeroDivisionError traceback, `--devices -1` a TypeError, 10**20 an OverflowError,
    and 0 meant the default without a word. Run by a recipe (which exports SATE_STOP_WITH), whose --ngpu gives both
    options, the advice names --ngpu: "use --accelerator cpu" was refused by the recipe as an unknown option."""
    recipe = "SATE_STOP_WITH" in os.environ  # sate.cli.STOP_WITH
    if accelerator == "gpu" and gpus == 0:
        raise SateError("--accelerator gpu: torch sees no GPU on this machine; "
                        + ("give the recipe --ngpu 0 (the CPU)" if recipe else "use --accelerator cpu (or auto)"))
    if devices is None:
        return gpus if accelerator == "gpu" else 1
    most, what = (gpus, "its GPUs") if accelerator == "gpu" else (max_jobs(), "processes, four per CPU")
    if not 1 <= devices <= most:
        advice = f"; give the recipe --ngpu {most} or fewer" if recipe and accelerator == "gpu" else ""
        raise SateError(f"--devices {devices:,}: from 1 to {most} on this machine ({what}){advice}")
    return devices


def check_nodes(num_nodes: int) -> None:
    """A run over several machines needs a launcher on each (torchrun, SLURM, or the environment Lightning's manual
    launch sets): without one, `--num-nodes 2` waited for the other machines for ever, deaf to Ctrl-C and kill
    (the rendezvous blocks in C), and 0 was a ZeroDivisionError traceback."""
    if not 1 <= num_nodes <= MAX_NODES:
        raise SateError(f"--num-nodes {num_nodes:,}: from 1 to {MAX_NODES:,} machines")
    if num_nodes > 1 and not any(os.environ.get(name) for name in LAUNCHER_VARIABLES):
        raise SateError(f"--num-nodes {num_nodes}: a run over several machines is started on each of them by a "
                        f"launcher (torchrun, SLURM; docs/training.md), which sets {', '.join(LAUNCHER_VARIABLES[:2])} "
                        "and the like; none is set here. On one machine, leave --num-nodes out")


def _launch_number(name: str) -> int | None:
    """A launcher variable's whole number (None: unset, empty or not a number, left to Lightning)."""
    value = os.environ.get(name, "").strip()
    return int(value) if _is_whole(value) else None


def _is_whole(value: str) -> bool:
    """Whether `value` is ASCII digits alone, the one rule for rank and port variables: str.isdigit() takes
    superscripts ('²') that int() refuses, a ValueError traceback past the check (fix29t)."""
    return re.fullmatch(r"[0-9]+", value) is not None


def _slurm_launches() -> bool:
    """Whether Lightning takes this process for one task of a SLURM job (its own rule, SLURMEnvironment.detect):
    SLURM_NTASKS set, not under torchrun (TORCHELASTIC_RUN_ID set, even empty: torch's is_torchelastic_launched, as
    check_launch reads it), and the job not named bash or interactive."""
    return ("SLURM_NTASKS" in os.environ and "TORCHELASTIC_RUN_ID" not in os.environ
            and os.environ.get("SLURM_JOB_NAME") not in ("bash", "interactive"))


def _is_this_machine(address: str) -> bool:
    """Whether `address` (a name or an IP) is this machine, where the processes Lightning starts meet: one of its
    addresses takes a bind (with its scope: a link-local `fe80::1%eth0` takes none without it, review31t), or reaches
    a port this machine listens on, as rank 0's store listens on all of them (a cloud VM's NATed public address)."""
    try:
        infos = socket.getaddrinfo(address, None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):  # socket.gaierror: no such name; UnicodeError: a label IDNA refuses
        return False
    for family, kind, proto, _, where in infos:
        try:
            with socket.socket(family, kind, proto) as probe:
                probe.bind((where[0], 0, *where[2:]))  # IPv6: flow info and scope id kept
            return True
        except OSError:
            continue
    for family, kind, proto, _, where in infos:
        try:
            with socket.socket(family, kind, proto) as listener, socket.socket(family, kind, proto) as probe:
                listener.bind(("", 0))  # all of this machine's addresses, as c10d's store
                listener.listen(1)
                probe.settimeout(2)  # an address that reaches no machine answers nothing
                probe.connect((where[0], listener.getsockname()[1], *where[2:]))
            return True
        except OSError:
            continue
    return False


def check_launch(devices: int, num_nodes: int) -> None:
    """Refuse a launcher's environment that this run's --devices and --num-nodes cannot be part of. torchrun with
    `--nproc-per-node 2` and `--devices 1` trained two one-process runs into one experiment (the second without
    the lock), `--devices 2` under torchrun's one process was Lightning's ValueError traceback (the fresh
    experiment's snapshot left), a NODE_RANK left in the shell waited 30 minutes as rank 2 of 2, a stray RANK made
    a run take no lock and write no logs, and `sbatch --ntasks 2` was Lightning's RuntimeError traceback (26th
    hostile pass). An empty NODE_RANK or GROUP_RANK is removed from the environment: unset, it is rank 0."""
    world = devices * num_nodes
    given = f"--devices {devices} x --num-nodes {num_nodes}"
    advice = ("give --devices the processes per machine and --num-nodes the machines the launcher starts "
              "(docs/training.md), or unset the variable if no launcher started this process")
    for name in ("NODE_RANK", "GROUP_RANK"):
        # An empty NODE_RANK or GROUP_RANK (`export NODE_RANK=`) is taken as unset, so rank 0, in a run of one
        # process or several: a one-process run never reads it, but Lightning's launch of several read it with
        # int(), a ValueError traceback and an empty experiment left (fix29t)
        if os.environ.get(name, "x").strip() == "":
            del os.environ[name]
    for name in RANKS_READ:
        value = os.environ.get(name)
        # Lightning reads RANK, LOCAL_RANK, SLURM_PROCID and JSM_NAMESPACE_RANK with int() when it is imported:
        # 'abc' (or an empty RANK=) was a ValueError traceback, and LOCAL_RANK=-1 (transformers' "not distributed")
        # an AssertionError traceback once the log folders were made, the fresh experiment left; NODE_RANK=abc
        # made a run take no lock (29th hostile pass)
        if value is not None and not _is_whole(value.strip()):
            raise SateError(f"{name}={one_line(repr(value))} is not a rank (a whole number from 0, all that "
                            f"torchrun, SLURM or Lightning sets): unset it (unset {name}) to train in one process")
    port = os.environ.get("MASTER_PORT")
    # read by the rendezvous of a run of several processes alone: 'abc' was Lightning's ValueError traceback, 70000
    # torch's, once the fresh experiment was made and left (29th hostile pass)
    if world > 1 and port is not None and not (_is_whole(port.strip()) and 1 <= int(port) <= 65535):
        raise SateError(f"MASTER_PORT={one_line(repr(port))} is not a TCP port (1 to 65535), where the processes of "
                        f"{given} meet: give a free one, the same on every machine of the run, or, when training on "
                        "one machine, unset it (a free port is then chosen)")
    size = _launch_number("WORLD_SIZE")
    # Only torchrun's WORLD_SIZE is the launch's (Lightning's own rule, TorchElasticEnvironment.detect); one left
    # alone in the shell Lightning ignores or overwrites, and trained right
    if size is not None and size != world and "TORCHELASTIC_RUN_ID" in os.environ:
        raise SateError(f"WORLD_SIZE={size} (set by torchrun or another launcher) is not the {world} process(es) of "
                        f"{given}: {advice}")
    if _slurm_launches():
        tasks = _launch_number("SLURM_NTASKS")
        if tasks is not None and tasks > 1 and "SLURM_NTASKS_PER_NODE" not in os.environ:
            raise SateError(f"SLURM_NTASKS={tasks} without SLURM_NTASKS_PER_NODE: in a SLURM job each process is a "
                            "task that srun starts; submit it with --ntasks-per-node D and start it with srun (srun "
                            "sate train --devices D --num-nodes N; docs/training.md), or with one task to train in one "
                            "process")
        # Fewer tasks than processes: Lightning starts none of its own in a SLURM job, so the run was smaller than
        # its batch plan. More tasks are refused only by SLURM_PROCID below: task 0 of a batch script of several
        # tasks (--ntasks-per-node 8 for 8 CPUs) that runs one `sate train` without srun trains right.
        # Lightning's launcher of several processes checks these itself, in a ValueError traceback
        for name, want, flag in (("SLURM_NTASKS_PER_NODE", devices, "--devices"),
                                 ("SLURM_NNODES", num_nodes, "--num-nodes")):
            number = _launch_number(name)
            if world > 1 and number is not None and number != want:
                raise SateError(f"{name}={number} (this SLURM job's) is not {flag} {want}: give --devices the tasks "
                                "per node and --num-nodes the nodes (srun --ntasks-per-node D sate train --devices D "
                                "--num-nodes N; docs/training.md), or --devices 1 to train in one process")
        if tasks is not None and tasks < world:
            raise SateError(f"SLURM_NTASKS={tasks} (this SLURM job's tasks) is fewer than the {world} process(es) of "
                            f"{given}: in a SLURM job each process is a task that srun starts; submit it with "
                            "--ntasks-per-node D and start it with srun (srun sate train --devices D --num-nodes N; "
                            "docs/training.md)")
    # LOCAL_RANK makes Lightning take this process for one of several started by hand or by a launcher, and start
    # none itself; without MASTER_PORT each process picks a free port of its own, so none could ever join: a
    # LOCAL_RANK=0 left in the shell made `--devices 2` wait its 30 minutes as rank 0 (31st hostile pass)
    lsf = all(name in os.environ for name in ("LSB_JOBID", "LSB_DJOB_RANKFILE", "JSM_NAMESPACE_LOCAL_RANK",
                                              "JSM_NAMESPACE_SIZE"))  # Lightning's LSFEnvironment.detect
    if (world > 1 and "LOCAL_RANK" in os.environ and "TORCHELASTIC_RUN_ID" not in os.environ
            and not _slurm_launches() and not lsf and "MASTER_PORT" not in os.environ
            and "STANDALONE_PORT" not in os.environ):
        raise SateError(f"LOCAL_RANK={one_line(repr(os.environ['LOCAL_RANK'].strip()))} is set, so Lightning takes "
                        f"this process for one of the {world} of {given} that a launcher started, and starts none "
                        "itself; with no MASTER_PORT to meet at, no other could join: unset it (unset LOCAL_RANK) "
                        "to have Lightning start the processes, or start them with torchrun (docs/training.md)")
    address = os.environ.get("MASTER_ADDR", "").strip()
    if (world > 1 and num_nodes == 1 and address and "TORCHELASTIC_RUN_ID" not in os.environ
            and not _slurm_launches() and not lsf and not _is_this_machine(address)):
        # the processes Lightning starts on this one machine meet at MASTER_ADDR: one left in the shell (a cluster
        # job's export) that names another machine, or none, made the run wait its 30 minutes, an unknown name with
        # a c10d warning every few seconds (31st hostile pass)
        raise SateError(f"MASTER_ADDR={one_line(repr(address))} is not this machine, where the {world} processes of "
                        f"{given} that Lightning starts here meet: unset it (unset MASTER_ADDR; 127.0.0.1 is then "
                        "used), or, for a run over several machines, give --num-nodes and start it with torchrun or "
                        "srun on each (docs/training.md)")
    # One process outside a launch Lightning takes (a SLURM job named bash or interactive, a SLURM_PROCID left in
    # the shell, LSF's JSM_NAMESPACE_RANK): Lightning's one-process run never resets the rank it read at import, so
    # it wrote no logs, and sate took no lock (29th hostile pass)
    alone = world == 1 and not _slurm_launches() and "TORCHELASTIC_RUN_ID" not in os.environ
    for name, most in (("RANK", world), ("LOCAL_RANK", devices), ("NODE_RANK", num_nodes), ("GROUP_RANK", num_nodes),
                       ("JSM_NAMESPACE_RANK", world),
                       *((("SLURM_PROCID", world),) if _slurm_launches() or alone else ())):
        rank = _launch_number(name)
        if name == "SLURM_PROCID" and alone and rank:
            raise SateError(f"SLURM_PROCID={rank} is task {rank} of a SLURM step that Lightning does not take for a "
                            "launch (the job is named bash or interactive, or SLURM_NTASKS is unset), so each task "
                            "would train a run of its own into one experiment: start one task (no srun, or srun "
                            "--ntasks 1) and give --devices the processes, or unset SLURM_PROCID if srun did not "
                            "start this process")
        if rank is not None and rank >= most:
            raise SateError(f"{name}={rank} is no rank of {given} (from 0 to {most - 1}): {advice}")


def check_config_kept(config_path: Path, exp: Path) -> None:
    """Refuse a hand-written ``--config`` that is the experiment's own snapshot path: the snapshot would replace it,
    its comments and layout lost. A snapshot sate wrote (given back to resume or extend a run) is rewritten freely:
    it is YAML exactly as sate dumps it. Whatever ``--config``, the snapshot's place must hold nothing of the user's
    (`check_snapshot_place`)."""
    snapshot = exp / layout.CONFIG
    if not same_file(config_path, snapshot) or _written_by_sate(config_path):
        check_snapshot_place(snapshot, exp)
        return
    raise SateError(f"--config {config_path}: is where `sate train --exp {exp}` writes the run's resolved config, "
                    "which would replace this file and lose its comments and layout; keep your config outside the "
                    "experiment folder (conf/, say) and give that")


def _written_by_sate(path: Path) -> bool:
    """Is ``path`` YAML exactly as sate dumps its snapshot (not a file with comments or another layout)?"""
    data = read_yaml(path)  # bounded, and its errors named, before the text is read whole
    return path.read_text(encoding="utf-8") == dump_yaml(data)


def check_snapshot_place(snapshot: Path, exp: Path) -> None:
    """Refuse ``EXP/config.yaml`` where the run's snapshot would replace a file of the user's: a symlink (the
    snapshot was written where it led: a config of the user's, another experiment's snapshot), or, in an experiment
    without checkpoints yet, a file sate did not write. Once a run has checkpoints the file is its snapshot."""
    real = os.path.realpath(snapshot)
    if os.path.lexists(snapshot) and real != os.path.join(os.path.realpath(exp), layout.CONFIG):
        raise SateError(f"--exp {exp}: {snapshot} is a symlink to {real}, which the run's resolved config would "
                        "replace; remove the link (keep your config elsewhere and give it as --config)")
    kind = what_is_there(snapshot)  # a named pipe was written into: the run blocked for ever before its first update
    if kind is not None:
        raise SateError(f"--exp {exp}: {snapshot} is {kind}, where the run writes its resolved config; remove it")
    if snapshot.is_file() and not (exp / layout.CHECKPOINTS).is_dir() and not _written_by_sate(snapshot):
        raise SateError(f"--exp {exp}: {snapshot} is not a snapshot sate wrote (comments or another layout), and the "
                        "run's resolved config would replace it; move it out of the experiment folder (give it as "
                        "--config, or train into another --exp)")


# Rank 0's pid, in the environment of the ranks Lightning starts beside it (`ends_with_rank_0`)
RANK_0_PID = "SATE_RANK_0_PID"


def ends_with_rank_0() -> None:
    """In a rank that Lightning's launcher started beside rank 0 (`--devices 2` without torchrun or SLURM: rank 0's
    process runs the command line again), be killed when rank 0's process ends, as Lightning's own observer ends such
    a rank (SIGKILL: one hung in a collective runs no handler, and rank 0 writes every file of the run). Rank 0 killed
    outright (the out-of-memory killer picks the largest process) left rank 1 waiting in the rendezvous, or hung in a
    collective, for 30 minutes, holding its GPU against the next run (thirty-third hostile pass). Rank 0 names itself
    in the environment it starts them with; a rank whose rank 0 ended while it loaded its modules ends at once."""
    text = os.environ.get(RANK_0_PID, "")
    if os.environ.get("LOCAL_RANK") and is_digits(text) and 0 < int(text) <= 1 << 22 and int(text) != os.getpid():
        if os.getppid() == int(text):
            sent_at_parents_end(int(text), signal.SIGKILL)
        elif not pid_alive(int(text)):
            os.kill(os.getpid(), signal.SIGKILL)
    os.environ[RANK_0_PID] = str(os.getpid())


def run(args: argparse.Namespace) -> int:
    ends_with_rank_0()
    check_config_kept(args.config, args.exp)
    config = config_from_args(args)
    import torch

    accelerator = args.accelerator
    if accelerator == "auto":
        accelerator = "gpu" if torch.cuda.is_available() else "cpu"
    devices = check_devices(accelerator, args.devices, torch.cuda.device_count())
    train(config, args.exp, accelerator=accelerator, devices=devices, num_nodes=args.num_nodes,
          lr_where=lr_where(args.config, args.overrides))
    return 0


def began_init(point: Any, config: TrainingConfig) -> dict | None:
    """The init: section a run began with: its own on a fresh start, the one its checkpoint records on a resume (init
    is a safe key: a resume given no --init-from, or others, loads nothing, and its config says nothing of the
    decoder an `--init-from mt=` filled: review30z), None for a checkpoint that records none (before fix30z)."""
    if point.checkpoint is None:
        return dict(config.to_dict()["init"])  # plain data: checkpoints load with weights_only
    began = point.checkpoint.get("sate", {}).get("began_init")
    return dict(began) if isinstance(began, dict) else None


def lr_where(config_path: str | Path, overrides: list[str]) -> str:
    """Where a diverged run's optim.lr is lowered: the last --set of it, or the config file, named (the advice
    said "lower optim.lr in the config", naming no file, and the file's value was not the one trained with where a
    --set gave it: 24th hostile pass)."""
    given = [item for item in overrides if item.split("=", 1)[0].strip() == "optim.lr"]
    if given:
        return f"--set {one_line(given[-1].strip()[:60])}"
    return one_line(str(config_path))


def train(config: TrainingConfig, exp: Path, accelerator: str = "cpu", devices: int = 1, num_nodes: int = 1,
          callbacks: list | None = None, lr_where: str = "the config") -> Path:
    """Train (or resume) into `exp`, holding its lock throughout; returns the checkpoint directory. `lr_where`: where
    a diverged run's advice says to lower optim.lr (`lr_where`)."""
    from sate.train.lock import ExperimentLock

    check_nodes(num_nodes)
    check_launch(devices, num_nodes)
    given, exp = exp, check_output(Path(exp), "experiment", "--exp")
    try:  # TensorBoard's writer encodes its folder's name as UTF-8: a name that is not (Latin-1 bytes, lone
        str(exp).encode("utf-8")  # surrogates here) was a UnicodeEncodeError traceback once an epoch was trained
    except UnicodeEncodeError:  # (fifteenth hostile pass)
        raise SateError(f"--exp {one_line(str(given))}: {one_line(str(exp))} is not a UTF-8 name, which TensorBoard's "
                        "log writer cannot open; rename it, or give another --exp") from None
    check_run_folders(exp)
    if not is_primary_process():
        exp.mkdir(parents=True, exist_ok=True)
        return _train(config, exp, accelerator, devices, num_nodes, callbacks, None, lr_where)
    made = next((p for p in (*reversed(exp.parents), exp) if not p.exists()), None)  # the first folder this run makes
    fresh = made is not None or not any(exp.iterdir())
    exp.mkdir(parents=True, exist_ok=True)
    try:
        with ExperimentLock(exp) as lock:
            if lock.takeover:
                print(one_line(lock.takeover_note()))
            # a signal in the rendezvous ends the process at once (os._exit, past the clean-up below): it empties
            # a fresh folder there too, still holding the lock (it left config.yaml; hand31t)
            return _train(config, exp, accelerator, devices, num_nodes, callbacks, lock, lr_where,
                          (lambda: _remove_unused(exp, made)) if fresh else None)
    # an OS error too (a data.dir it may not read, a name too long, a full disk), and Ctrl-C or SIGTERM before
    # Lightning's fit (which ends an interrupted fit itself): the folder was left behind, empty or all but
    except (SateError, OSError, KeyboardInterrupt):
        if fresh:
            _remove_unused(exp, made)
        raise


def _stopped(lock: Any, forget: Callable[[], None] | None) -> Callable[[], None]:
    """What a signal in the rendezvous does before the process ends: ``forget`` (a fresh experiment's folder emptied
    and removed) while the lock is held, so that no run starting there meanwhile loses its files, then the lock let
    go of."""
    def stop() -> None:
        try:
            if forget is not None:
                forget()
        finally:
            lock.release()
    return stop


def _end_started_processes(trainer: Any) -> None:
    """End the processes Lightning started beside this one (`--devices` above 1 without a launcher) when the fit
    failed here: Lightning kills them only at Ctrl-C, so a rank 0 that failed alone (a MASTER_PORT in use) left
    rank 1 waiting in the rendezvous for 30 minutes, its parent gone (26th hostile pass)."""
    from lightning.pytorch.strategies.launchers.subprocess_script import _SubprocessScriptLauncher

    launcher = getattr(trainer.strategy, "launcher", None)
    if isinstance(launcher, _SubprocessScriptLauncher):
        launcher.kill(signal.SIGKILL)


def _remove_unused(exp: Path, made: Path | None) -> None:
    """Empty a fresh experiment folder that a refusal ended before any checkpoint, and remove it (and the folders
    made for it, from ``made`` down) where this run made it: a split that is not there, an empty split or an `init:`
    that does not fit was refused once the folder held the run's config snapshot and logs (or nothing), and a later
    run counted the refused one in its train_time.json."""
    checkpoints = exp / layout.CHECKPOINTS
    if checkpoints.is_dir() and any(checkpoints.iterdir()):
        return
    if made is None:  # the user's empty folder: left empty, as it was
        for item in exp.iterdir():
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item, ignore_errors=True)
            else:
                item.unlink()
        return
    shutil.rmtree(exp, ignore_errors=True)
    folder = exp
    while folder != made and folder != folder.parent:
        folder = folder.parent
        try:
            folder.rmdir()  # only while empty: another experiment made there meanwhile stays
        except OSError:
            break


NOT_EMPTY = r"(?s)Checkpoint directory .* exists and is not empty"  # Lightning's, where the run writes checkpoints
_SIGTERM_SAID = re.compile(r"(\[rank: [0-9]+\] )?(Received|Bypassing) SIGTERM: [0-9]+")  # Lightning's, at a kill


class OneLineRecords(logging.Filter):
    """Lightning's own lines, made `one_line`: they name the checkpoint a run restores as given ("Restoring states
    from the checkpoint path at EXP/checkpoints/last.ckpt"), so an --exp holding an escape sequence or a line break
    reached the terminal raw, where sate's own lines escape it. Its "Detected KeyboardInterrupt" is dropped: the
    command ends with its own line ("interrupted", or "terminated" for a `kill`, which Lightning also called a
    KeyboardInterrupt); so are its "[rank: 0] Received SIGTERM: 15" and "Bypassing SIGTERM: 15", which came above
    "sate train: terminated" at every `kill` (thirty-first hostile pass)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage().strip()
        if message.startswith("Detected KeyboardInterrupt") or _SIGTERM_SAID.fullmatch(message):
            return False
        # the banner of a run of several processes, which names no path, keeps its lines: it came as one line of
        # literal "\n"s ("----...\ndistributed_backend=gloo\nAll distributed processes registered...", 24th pass)
        banner = message.startswith("-" * 20) and "distributed_backend=" in message
        record.msg = "\n".join(map(one_line, message.split("\n"))) if banner else one_line(message)
        record.args = None
        return True


def escape_lightning_lines() -> None:
    """Put `OneLineRecords` on the handlers Lightning gives its loggers (once each), and format Lightning's warnings
    (they name the checkpoint folder) with their message on one line; other warnings are formatted as before."""
    for name in ("lightning", "lightning.pytorch", "lightning.fabric"):
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(f, OneLineRecords) for f in handler.filters):
                handler.addFilter(OneLineRecords())
    if getattr(warnings.formatwarning, "escapes_lightning", False):
        return
    before = warnings.formatwarning

    def formatwarning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                      line: str | None = None) -> str:
        """Lightning's warning with its message made `one_line`; any other as the formatter before made it."""
        if f"{os.sep}lightning{os.sep}" in filename:
            message = one_line(str(message))
        return before(message, category, filename, lineno, line)

    formatwarning.escapes_lightning = True  # type: ignore[attr-defined]
    warnings.formatwarning = formatwarning


def _train(config: TrainingConfig, exp: Path, accelerator: str, devices: int, num_nodes: int, callbacks: list | None,
           lock: object, lr_where: str = "the config", forget: Callable[[], None] | None = None) -> Path:
    import lightning as L
    from lightning.pytorch.callbacks import TQDMProgressBar
    from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

    from sate.data.cmvn_record import cmvn_record
    from sate.data.sampler import OtherItems  # heavy: numpy and torch
    from sate.data.vocab import load_vocabularies, made_from_another_train
    from sate.train.checkpoint_io import (
        AtomicCheckpointIO,
        ConfiguredPatience,
        MidEpochCheckpoint,
        MovableCheckpoint,
        resume_epoch_ends,
    )
    from sate.train.data import plan_batch
    from sate.train.datamodule import SateDataModule, check_mt_text
    from sate.train.frozen_cache import check_teacher_cache
    from sate.train.module import SateModule
    from sate.train.progress import TrainTime, drop_killed_run_rows, drop_rows_after
    from sate.train.rendezvous import AnnouncedDDP
    from sate.train.resume import (
        check_budget,
        check_cmvn,
        check_config_change,
        check_teachers,
        check_vocabularies,
        check_weights,
        drop_unused_states,
        early_stop_note,
        early_stopping_key,
        find_resume_point,
        finished,
        set_aside,
        teacher_prints,
    )
    from sate.train.setup import build_for_training

    started = time.perf_counter()
    logging.getLogger("sate").setLevel(logging.INFO)
    escape_lightning_lines()
    ckpt_dir = exp / layout.CHECKPOINTS
    primary = lock is not None
    point = find_resume_point(ckpt_dir)
    twice = trained_twice(config.data.train)
    if twice is not None and point.checkpoint is None:
        raise SateError(f"{twice}; give {SPEED_SPLIT} in {TRAIN_SPLIT}'s place")
    if point.checkpoint is not None:
        check_config_change(point, config, exp)
        check_budget(point, config.trainer.max_epochs, config.trainer.max_steps)
        done = finished(point, config.trainer)
        if done is not None:  # before anything is written: no log version, snapshot or run counted
            data_dir = Path(str(config.data.dir))
            if data_dir.is_dir():
                # a finished run started again after `sate vocab` or `sate features` remade the data was refused
                # here as any resume is, and the recipe's training stage with it (review32e)
                src_vocab, tgt_vocab = load_vocabularies(data_dir, config.task)
                check_vocabularies(point, src_vocab.tokens, tgt_vocab.tokens, data_dir)
                check_cmvn(point, data_dir / layout.CMVN if config.task != "mt" and config.data.cmvn == "global"
                           else None)
            if primary and point.path != ckpt_dir / layout.LAST_CHECKPOINT:
                for note in point.notes:
                    print(one_line(note))  # a damaged or missing last.ckpt is named (review32e)
            if primary:
                print(one_line(f"{point.path}: {done}; nothing to train, nothing changed"))
            return ckpt_dir
    untrained = untrained_wer_monitor(config.task, config.model, config.trainer.monitor)
    if untrained is not None and point.checkpoint is None:
        raise SateError(f"{untrained}; {WER_MONITOR_ADVICE}, or give model.loss.ctc_weight above 0")
    began = began_init(point, config)
    deaf = untrained_output(config.task, config.model, began)
    speech = speech_side_only(config.task, config.model, began or {})
    if speech is not None and primary:
        print(one_line(f"note: {speech}"))  # a cascade-like choice under a trained MT or Marian (review30c)
    if deaf is not None and point.checkpoint is None:
        raise SateError(f"{deaf.why}; {deaf.advice}")
    if deaf is not None and primary and point.checkpoint is not None:
        print(one_line(f"note: {deaf.why}; this run began so and a resume keeps its losses: it goes on"))
    if untrained is not None and primary and point.checkpoint is not None:
        print(one_line(f"note: {untrained}; this run began so and a resume keeps its monitor: it goes on"))
    if twice is not None and primary:
        # a run started so before the refusal: its data a resume may not change, so it goes on (review of hand27t)
        print(one_line(f"note: {twice}; this run began so and a resume keeps its data: it goes on, but a new --exp "
                       f"with {SPEED_SPLIT} in {TRAIN_SPLIT}'s place trains each row once an epoch"))
    if primary and point.path is None and (exp / layout.MODEL).is_file():
        # an earlier run's model file, its checkpoints deleted (to save disk): the fresh run took any config, and the
        # next `sate average --exp` replaced that model with this run's without a word (31st hostile pass)
        print(one_line(f"note: {exp / layout.MODEL} is an earlier run's model (this experiment holds no checkpoint "
                       "of it): this run starts afresh, and `sate average` into this experiment will replace that "
                       "file with this run's model; move it elsewhere now to keep it"))
    if primary:
        lock.set_run_id(point.run_id)  # type: ignore[attr-defined]
        for note in point.notes:
            print(one_line(note))  # notes name checkpoints: any bytes of --exp
        for damaged, moved in zip(point.passed_over, set_aside(point.passed_over), strict=True):
            print(one_line(f"set aside the unreadable {damaged.name} as {moved.name}"))
        # under train.lock no other writer is in the folder: a checkpoint a killed run was writing, whose name no
        # later save may use again (epochNNN.ckpt of an epoch saved at resume), was left for good (hand27t)
        for temp in remove_abandoned(ckpt_dir, ".ckpt"):
            print(one_line(f"removed {temp.name}, a checkpoint that a killed run was writing"))
        for key, (old, new) in point.changed.items():
            # init: applies to a fresh start alone, so a resume given other --init-from models (of another vocabulary
            # even) said "resuming with init changed", as if they were loaded (24th hostile pass)
            unused = " (not loaded: a resume's weights are its checkpoint's; init applies to a fresh start)" \
                if key == "init" else ""
            print(one_line(f"resuming with {key} changed: {shown(old)} -> {shown(new)}{unused}"))
        said = early_stop_note(point, config.trainer) if point.checkpoint is not None else None
        if said is not None:
            print(one_line(f"note: {said}"))
    L.seed_everything(config.seed, workers=True, verbose=False)

    data_dir = Path(str(config.data.dir))
    require_directory(data_dir, "data.dir")  # a file, a pipe or /dev/null there was "no such directory"
    check_feature_mode(config)
    check_mt_text(config.data.mt_text, data_dir / f"{train_splits(config.data.train)[0]}.jsonl")
    src_vocab, tgt_vocab = load_vocabularies(data_dir, config.task)
    note = made_from_another_train(data_dir) if primary else None
    if note is not None:
        print(one_line(note))
    cmvn = data_dir / layout.CMVN if config.task != "mt" and config.data.cmvn == "global" else None
    if point.checkpoint is not None:
        check_vocabularies(point, src_vocab.tokens, tgt_vocab.tokens, data_dir)
        check_cmvn(point, cmvn)
    try:
        model = build_for_training(config, src_vocab.tokens, tgt_vocab.tokens, initialize=point.path is None,
                                   cmvn=cmvn)
    except (RuntimeError, MemoryError, OverflowError, TypeError) as err:  # torch's allocator, or "Overflow when
        # unpacking long" (a TypeError) for a size beyond int64
        if not (out_of_memory(err) or isinstance(err, OverflowError) or "verflow" in str(err)):
            raise
        raise SateError(f"model: a model of these sizes does not fit in memory ({shown(str(err), 160)}); check "
                        f"model.d_model and the other sizes (`sate config --config FILE` prints them)") from None
    teachers = teacher_prints(model)
    if point.checkpoint is not None:
        check_teachers(point, model, teachers)
        check_weights(point, model)
    world = devices * num_nodes
    plan = plan_batch(config.batch, world, config.task, config.data.features)
    module = SateModule(config, model, src_vocab, tgt_vocab, run_id=point.run_id,
                        cmvn=cmvn_record(cmvn) if cmvn is not None else None, teachers=teachers,
                        per_device=plan.per_device, lr_where=lr_where, began_init=began)
    if config.data.frozen_cache and point.checkpoint is not None:
        # The cache is named by the frozen weights: a resume has them from its checkpoint, which Lightning would
        # restore only after the data is prepared.
        prefix = "model.acoustic."
        model.acoustic.load_state_dict({k[len(prefix):]: v for k, v in point.checkpoint["state_dict"].items()
                                        if k.startswith(prefix)})
    if config.data.frozen_cache:
        check_teacher_cache(model)
    datamodule = SateDataModule(config, src_vocab, tgt_vocab,
                                frozen=model.acoustic if config.data.frozen_cache else None, plan=plan)
    precision = choose_precision(config.trainer.precision, accelerator)
    tconf = config.trainer
    monitor, mode = tconf.monitor, tconf.monitor_mode
    safe_name = monitor.replace("/", "_")
    clock = TrainTime(exp, started)
    callbacks = list(callbacks or [])
    # The best-N callback runs first, so that last.ckpt (written by the second) holds both up-to-date states.
    # No version counter: a checkpoint of the same epoch replaces its file (one run holds the directory).
    best = MovableCheckpoint(dirpath=ckpt_dir, filename=f"best-{safe_name}-epoch{{epoch:03d}}",
                             enable_version_counter=False, auto_insert_metric_name=False, save_top_k=tconf.keep_best,
                             monitor=monitor, mode=mode)
    callbacks += [
        best,
        MovableCheckpoint(dirpath=ckpt_dir, filename="epoch{epoch:03d}", auto_insert_metric_name=False,
                          save_top_k=tconf.keep_last, monitor="epoch", mode="max", save_last=True,
                          enable_version_counter=False),
        MidEpochCheckpoint(ckpt_dir / layout.LAST_CHECKPOINT, tconf.checkpoint_every_steps,
                           tconf.checkpoint_every_minutes),
        TQDMProgressBar(refresh_rate=10),
        clock,
    ]
    if tconf.patience > 0:
        callbacks.append(ConfiguredPatience(monitor=monitor, mode=mode, patience=tconf.patience))
    # the data directory read and checked before Lightning's loggers make this run's version folders and the snapshot
    # is written: a resume refused in Lightning's setup (a feature index missing or unreadable) left
    # tensorboard/version_N and logs/version_N, a rewritten config.yaml, and a run counted in train_time.json
    # (twentieth hostile pass); inside fit, setup opens what prepare_data made and finds the rest read
    datamodule.check_sources()
    checkpoint_io = AtomicCheckpointIO()
    if point.path is not None and point.checkpoint is not None:
        drop_unused_states(point.checkpoint, early_stopping_key(monitor, mode) if tconf.patience > 0 else None,
                           timer=tconf.max_minutes is not None)
        if isinstance(point.checkpoint.get("callbacks"), dict):
            best.take_other_mode(point.checkpoint["callbacks"])  # trainer.monitor_mode changed: its record
        checkpoint_io.preload(point.path, point.checkpoint)
    resumed_step = int(point.checkpoint["global_step"]) if point.checkpoint is not None else 0
    point.checkpoint = None
    # the rendezvous said, and stoppable (sate.train.rendezvous); a signal there lets go of the lock as it ends
    strategy = AnnouncedDDP(on_stop=_stopped(lock, forget) if primary else None) if world > 1 else "auto"
    trainer = L.Trainer(
        accelerator=accelerator, devices=devices, num_nodes=num_nodes, strategy=strategy, precision=precision,
        max_epochs=tconf.max_epochs, max_steps=tconf.max_steps,
        max_time=None if tconf.max_minutes is None else {"minutes": tconf.max_minutes},
        accumulate_grad_batches=plan.accumulation, gradient_clip_val=config.optim.clip_norm,
        callbacks=callbacks, plugins=[checkpoint_io], use_distributed_sampler=False,
        # One log version per run or resume (logs/version_N): a resumed run never overwrites earlier curves.
        # Rows are flushed as they come, so a killed run's rows are on disk up to its last step.
        logger=[CSVLogger(exp, name="logs", flush_logs_every_n_steps=1), TensorBoardLogger(exp, name="tensorboard")],
        log_every_n_steps=tconf.log_every_n_steps, num_sanity_val_steps=0, enable_model_summary=False,
        default_root_dir=exp,
    )
    resume_epoch_ends(trainer)  # with max_steps, Lightning's resume of an epoch's end trained nothing (review33c)
    connector = trainer._signal_connector  # a SIGTERM ignored where sate train was started stays so in the fit
    connector.register_signal_handlers = ignored_kept(connector.register_signal_handlers, [signal.SIGTERM])
    if trainer.is_global_zero:
        if point.path is not None:
            drop_rows_after(exp, resumed_step)  # rows a killed run logged after the checkpoint come again
        else:  # so do those of a run killed before its first checkpoint, and those alone (drop_killed_run_rows)
            drop_killed_run_rows(exp)
        write_yaml(exp / layout.CONFIG, config.to_dict())  # only now: a refused resume leaves the snapshot alone
        counts = parameter_counts(model)
        given = tconf.precision  # a setting the device changed, said where it was not auto
        why = f" (trainer.precision {given}: Lightning has no fp16 autocast on the CPU)" \
            if given not in (precision, "auto") else ""
        print(f"task {config.task}: {plan.describe()}; precision {precision}{why}; {world} process(es)")
        print("parameters: " + ", ".join(f"{name} {n / 1e6:.2f}M" for name, n in counts.items()))
        # budget_notes: the data module says them, once it knows the updates an epoch (SateDataModule)
    try:
        try:
            with handlers_kept([signal.SIGINT]), warnings.catch_warnings():  # Lightning's Ctrl-C ignored at an
                # interrupt, not left so after
                if point.path is not None:  # its own checkpoints are in the folder: "Checkpoint directory
                    # EXP/checkpoints exists and is not empty" came at every resume, as if something were wrong (33rd)
                    warnings.filterwarnings("ignore", message=NOT_EMPTY)
                trainer.fit(module, datamodule=datamodule, ckpt_path=point.path, weights_only=True)
        except BaseException:
            _end_started_processes(trainer)
            raise
    except OtherItems as err:  # the loader's position, restored only inside fit
        raise SateError(f"{point.path}: cannot resume: it {err}. Restore the split as it was when the run "
                        f"stopped, or train into a new --exp") from None
    except RuntimeError as err:  # a loader worker killed (the out-of-memory killer): torch's traceback
        lost = loader_worker_lost(err, "run the command again, which resumes from the last checkpoint if there is "
                                  "one (a lower data.num_workers uses less memory)")
        if lost is None:
            raise
        if isinstance(err.__context__, KeyboardInterrupt):  # the kill of the process group that ended the worker,
            raise err.__context__ from None  # met while the interrupt unwound: the command ends as that kill says
        raise SateError(lost) from None
    except SystemExit as err:  # Lightning ends a fit that Ctrl-C or `kill` stopped with exit(1), once it has torn
        if isinstance(err.__context__, KeyboardInterrupt):  # the run down: the interrupt goes on, so the command
            raise err.__context__ from None  # ends as every other does (130, 143, its one line); it was status 1
        raise  # under Lightning's line alone, which said KeyboardInterrupt for a `kill` (fifteenth hostile pass)
    finally:
        clock.write()
    return ckpt_dir


def parameter_counts(model) -> dict[str, int]:  # noqa: ANN001
    counts = {name: sum(p.numel() for p in child.parameters()) for name, child in model.named_children()}
    counts = {k: v for k, v in counts.items() if v}
    counts["total"] = sum(p.numel() for p in model.parameters())
    counts["trainable"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return counts
