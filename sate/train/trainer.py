"""Train an ASR, MT or SATE model: `sate train --config CONF --exp DIR [--set key=value ...]`.

Lightning runs the loop. On one machine it uses every GPU it sees (or the CPU); across machines, start
it with torchrun or srun and give --num-nodes. A run resumes by itself when EXP/checkpoints/last.ckpt
exists: step, epoch, optimizer, scheduler, sampler position and RNG continue.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from sate.config import apply_overrides, merge, read_yaml, write_yaml
from sate.errors import SateError
from sate.files import atomic_write_text
from sate.models.config import TASKS

# Every key a training config may have; `model` is checked by sate.models.config, `init` by sate.models.pretrained.
DEFAULTS: dict = {
    "task": "st",
    "seed": 0,
    "data": {"dir": None, "train": "train", "valid": "dev", "mt_text": None, "cmvn": "global", "num_workers": 2},
    "batch": {"per_device": 20000, "global": 20000},
    "specaug": {"enabled": True, "start_step": 0, "freq_mask_width": 27, "num_freq_masks": 1,
                "time_mask_width": 100, "num_time_masks": 1, "max_time_ratio": 0.2},
    "model": {},
    "init": {},
    "optim": {"lr": 2e-3, "warmup_steps": 10000, "betas": [0.9, 0.98], "weight_decay": 0.0, "clip_norm": 10.0},
    "trainer": {
        "max_epochs": 50,
        "max_steps": -1,
        "max_minutes": None,
        "patience": 0,
        "monitor": "valid/loss",
        "monitor_mode": "min",
        "keep_last": 10,
        "keep_best": 10,
        "valid_bleu_utts": 200,
        "valid_max_len_ratio": 1.5,
        "nan_patience": 20,
        "precision": "auto",
        "log_every_n_steps": 50,
    },
}
# One line per key for `sate config`; a test checks that every key of DEFAULTS has one.
HELP: dict[str, str] = {
    "task": "asr (acoustic encoder + CTC) | mt (textual encoder + decoder) | st (SATE or the E2E baseline)",
    "seed": "seeds weights, batch order, SpecAugment and dropout",
    "data": "the prepared data",
    "data.dir": "a `sate prep` output dir with fbank/, cmvn.json, spm_*.model, tokens_*.txt",
    "data.train": "training split (a manifest DATA/<split>.jsonl)",
    "data.valid": "validation split",
    "data.mt_text": "mt only: [EN_FILE, TGT_FILE] parallel text to train on instead of the train manifest",
    "data.cmvn": "feature normalisation: global (train statistics) | utterance | none",
    "data.num_workers": "data loader processes (0 loads in the training process)",
    "batch": "batch size, in frames (asr, st) or target tokens (mt)",
    "batch.per_device": "what one device holds in one forward pass",
    "batch.global": "what one update sees over all devices; accumulation = global / (per_device x devices)",
    "specaug": "SpecAugment on the features (asr, st)",
    "specaug.enabled": "false switches it off",
    "specaug.start_step": "the update from which it applies (an untrained CTC model learns faster without it)",
    "specaug.freq_mask_width": "F: the widest frequency mask, in mel bins",
    "specaug.num_freq_masks": "frequency masks per utterance",
    "specaug.time_mask_width": "T: the widest time mask, in frames",
    "specaug.num_time_masks": "time masks per utterance",
    "specaug.max_time_ratio": "a time mask covers at most this share of its utterance",
    "model": "the architecture and the loss: see the model keys below (sate config --task TASK)",
    "init": "components loaded from checkpoints, e.g. {acoustic: {path: exp/asr/model.pt}}; "
            "or sate train --init-from asr=PATH --init-from mt=PATH",
    "optim": "Adam with a linear warm-up and inverse square-root decay",
    "optim.lr": "peak learning rate, reached at the end of the warm-up",
    "optim.warmup_steps": "updates of linear warm-up",
    "optim.betas": "Adam's beta1 and beta2",
    "optim.weight_decay": "L2 penalty added to the gradients by Adam (not decoupled)",
    "optim.clip_norm": "gradient norm clipping",
    "trainer": "the training loop",
    "trainer.max_epochs": "stop after this many epochs",
    "trainer.max_steps": "stop after this many updates (-1: no limit)",
    "trainer.max_minutes": "stop after this much wall-clock time (null: no limit)",
    "trainer.patience": "stop after this many validations without improving `monitor` (0: never)",
    "trainer.monitor": "the validation metric for best-N checkpoints and early stopping",
    "trainer.monitor_mode": "min or max: which way `monitor` improves",
    "trainer.keep_last": "the last N epoch checkpoints kept (sate average --last N)",
    "trainer.keep_best": "the best N checkpoints by `monitor` kept (sate average --best N)",
    "trainer.valid_bleu_utts": "validation utterances decoded greedily for BLEU (mt, st)",
    "trainer.valid_max_len_ratio": "greedy validation decoding stops at this ratio of the source length",
    "trainer.nan_patience": "stop after this many batches in a row with a non-finite loss (each is skipped)",
    "trainer.precision": "auto (bf16-mixed on GPUs with bf16, 16-mixed on other GPUs, 32 on the CPU) | "
                         "32-true | bf16-mixed | 16-mixed",
    "trainer.log_every_n_steps": "how often training losses go to logs/ and tensorboard/",
}


def load_training_config(path: str | Path, overrides: list[str], need_data: bool = True) -> dict:
    """The file's config merged with the defaults and checked; `need_data` False allows data.dir unset."""
    config = merge(DEFAULTS, apply_overrides(read_yaml(path), overrides))
    if config["task"] not in TASKS:
        raise SateError(f"{path}: task must be one of {', '.join(TASKS)}, got {config['task']!r}")
    if need_data and not config["data"]["dir"]:
        raise SateError(f"{path}: data.dir is not set (the `sate prep` output directory)")
    if config["data"]["cmvn"] not in ("global", "utterance", "none"):
        raise SateError(f"{path}: data.cmvn must be global, utterance or none, got {config['data']['cmvn']!r}")
    if config["trainer"]["monitor_mode"] not in ("min", "max"):
        raise SateError(f"{path}: trainer.monitor_mode must be min or max")
    return config


def choose_precision(setting: str, accelerator: str) -> str:
    if setting != "auto":
        return setting
    import torch

    if accelerator == "cpu" or not torch.cuda.is_available():
        return "32-true"
    return "bf16-mixed" if torch.cuda.is_bf16_supported() else "16-mixed"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, type=Path, help="training YAML (see conf/)")
    parser.add_argument("--exp", required=True, type=Path, help="experiment dir: checkpoints, logs, config snapshot")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key, e.g. --set optim.lr=1e-3 (repeatable)")
    parser.add_argument("--init-from", action="append", default=[], metavar="asr=PATH|mt=PATH",
                        help="st: start the acoustic encoder and CTC from an ASR model file, the source embedding, "
                             "textual encoder and decoder from an MT model file; each is also the distillation "
                             "teacher of its side where the config sets a loss.kd weight (repeatable)")
    parser.add_argument("--steps-from", type=Path, metavar="EXP",
                        help="train for exactly as many updates as the run in EXP did (its last checkpoint's step), "
                             "for comparisons at equal training; replaces the config's budgets")
    parser.add_argument("--accelerator", default="auto", choices=["auto", "cpu", "gpu"])
    parser.add_argument("--devices", type=int, default=None,
                        help="devices per node (default: all GPUs, or 1 CPU process)")
    parser.add_argument("--num-nodes", type=int, default=1, help="machines (with torchrun or SLURM)")


def steps_of(exp: Path) -> int:
    """The number of updates the run in `exp` made: its last checkpoint's global step."""
    import torch

    last = Path(exp) / "checkpoints" / "last.ckpt"
    if not last.is_file():
        raise SateError(f"--steps-from {exp}: {last} is missing (has that run trained?)")
    try:
        return int(torch.load(last, map_location="cpu", weights_only=True)["global_step"])
    except Exception as err:  # noqa: BLE001 - any unreadable file gets the same message
        raise SateError(f"--steps-from {exp}: cannot read the step of {last} ({err})") from None


def config_from_args(args: argparse.Namespace) -> dict:
    """The config a `sate train` command line stands for: file, --set, --init-from and --steps-from."""
    from sate.models.init_from import apply_init_from, parse_init_from

    config = load_training_config(args.config, args.overrides)
    config = apply_init_from(config, parse_init_from(args.init_from))
    if args.steps_from is not None:
        trainer = config["trainer"]
        trainer.update(max_steps=steps_of(args.steps_from), max_epochs=max(trainer["max_epochs"], 100000),
                       max_minutes=None)
    return config


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    import torch

    accelerator = args.accelerator
    if accelerator == "auto":
        accelerator = "gpu" if torch.cuda.is_available() else "cpu"
    devices = args.devices or (torch.cuda.device_count() if accelerator == "gpu" else 1)
    train(config, args.exp, accelerator=accelerator, devices=devices, num_nodes=args.num_nodes)
    return 0


def train(config: dict, exp: Path, accelerator: str = "cpu", devices: int = 1, num_nodes: int = 1,
          callbacks: list | None = None) -> Path:
    """Train (or resume) into `exp`; returns the checkpoint directory."""
    import lightning as L
    from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint, TQDMProgressBar
    from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

    from sate.data.vocab import Vocabulary
    from sate.train.checkpoint_io import AtomicCheckpointIO
    from sate.train.data import SateDataModule, plan_batch
    from sate.train.module import SateModule
    from sate.train.setup import build_for_training

    logging.getLogger("sate").setLevel(logging.INFO)
    exp = Path(exp)
    ckpt_dir = exp / "checkpoints"
    exp.mkdir(parents=True, exist_ok=True)
    L.seed_everything(int(config["seed"]), workers=True, verbose=False)

    data_dir = Path(config["data"]["dir"])
    src_vocab, tgt_vocab = Vocabulary.load(data_dir, "src"), Vocabulary.load(data_dir, "tgt")
    model = build_for_training(config, src_vocab.tokens, tgt_vocab.tokens)
    module = SateModule(config, model, src_vocab, tgt_vocab)
    datamodule = SateDataModule(config, src_vocab, tgt_vocab)

    world = devices * num_nodes
    plan = plan_batch(config["batch"], world, config["task"])
    precision = choose_precision(config["trainer"]["precision"], accelerator)
    tconf = config["trainer"]
    monitor, mode = tconf["monitor"], tconf["monitor_mode"]
    safe_name = monitor.replace("/", "_")
    callbacks = list(callbacks or [])
    # The best-N callback runs first, so that last.ckpt (written by the second) holds both up-to-date states.
    callbacks += [
        ModelCheckpoint(dirpath=ckpt_dir, filename=f"best-{safe_name}-epoch{{epoch:03d}}",
                        auto_insert_metric_name=False, save_top_k=int(tconf["keep_best"]), monitor=monitor, mode=mode),
        ModelCheckpoint(dirpath=ckpt_dir, filename="epoch{epoch:03d}", auto_insert_metric_name=False,
                        save_top_k=int(tconf["keep_last"]), monitor="epoch", mode="max", save_last=True),
        TQDMProgressBar(refresh_rate=10),
    ]
    if int(tconf["patience"]) > 0:
        callbacks.append(EarlyStopping(monitor=monitor, mode=mode, patience=int(tconf["patience"])))
    strategy = "ddp" if world > 1 else "auto"
    trainer = L.Trainer(
        accelerator=accelerator, devices=devices, num_nodes=num_nodes, strategy=strategy, precision=precision,
        max_epochs=int(tconf["max_epochs"]), max_steps=int(tconf["max_steps"]),
        max_time=None if tconf["max_minutes"] is None else {"minutes": float(tconf["max_minutes"])},
        accumulate_grad_batches=plan.accumulation, gradient_clip_val=float(config["optim"]["clip_norm"]),
        callbacks=callbacks, plugins=[AtomicCheckpointIO()], use_distributed_sampler=False,
        # One log version per run or resume (logs/version_N): a resumed run never overwrites earlier curves.
        logger=[CSVLogger(exp, name="logs"), TensorBoardLogger(exp, name="tensorboard")],
        log_every_n_steps=int(tconf["log_every_n_steps"]), num_sanity_val_steps=0, enable_model_summary=False,
        default_root_dir=exp,
    )
    if trainer.is_global_zero:
        write_yaml(exp / "config.yaml", config)
        counts = parameter_counts(model)
        print(f"task {config['task']}: {plan.describe()}; precision {precision}; {world} process(es)")
        print("parameters: " + ", ".join(f"{name} {n / 1e6:.2f}M" for name, n in counts.items()))
    last = ckpt_dir / "last.ckpt"
    resume = last if last.exists() else None
    if resume is not None and trainer.is_global_zero:
        print(f"resuming from {resume}")
    started = time.perf_counter()
    trainer.fit(module, datamodule=datamodule, ckpt_path=resume, weights_only=False)
    if trainer.is_global_zero:
        add_train_time(exp, time.perf_counter() - started)
    return ckpt_dir


def add_train_time(exp: Path, seconds: float) -> None:
    """Accumulate wall-clock training time over runs and resumes in EXP/train_time.json (for reports)."""
    path = exp / "train_time.json"
    record = json.loads(path.read_text()) if path.exists() else {"seconds": 0.0, "runs": 0}
    record = {"seconds": round(record["seconds"] + seconds, 1), "runs": record["runs"] + 1}
    atomic_write_text(path, json.dumps(record))


def parameter_counts(model) -> dict[str, int]:  # noqa: ANN001
    counts = {name: sum(p.numel() for p in child.parameters()) for name, child in model.named_children()}
    counts = {k: v for k, v in counts.items() if v}
    counts["total"] = sum(p.numel() for p in model.parameters())
    counts["trainable"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return counts
