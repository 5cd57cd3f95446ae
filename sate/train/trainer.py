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

# Every key a training config may have; `model`, `init` and `specaug` are passed on.
DEFAULTS: dict = {
    "task": "st",  # asr | mt | st
    "seed": 0,
    "data": {
        "dir": None,  # a `sate prep` data dir with fbank/, cmvn.json, spm_*.model, tokens_*.txt
        "train": "train",
        "valid": "dev",
        "mt_text": None,  # mt only: [EN, TGT] parallel text files to train on instead of the train manifest
        "cmvn": "global",  # global | utterance | none
        "num_workers": 2,
    },
    "batch": {"per_device": 20000, "global": 20000},  # frames (asr, st) or tokens (mt)
    "specaug": {"enabled": True, "start_step": 0, "freq_mask_width": 27, "num_freq_masks": 1,
                "time_mask_width": 100, "num_time_masks": 1, "max_time_ratio": 0.2},
    "model": {},
    "init": {},
    "optim": {"lr": 2e-3, "warmup_steps": 10000, "betas": [0.9, 0.98], "weight_decay": 0.0, "clip_norm": 10.0},
    "trainer": {
        "max_epochs": 50,
        "max_steps": -1,
        "max_minutes": None,  # wall-clock budget (the CPU demo trains each model for a fixed time)
        "patience": 0,  # epochs without improvement of `monitor` before stopping; 0 = never
        "monitor": "valid/loss",
        "monitor_mode": "min",
        "keep_last": 10,
        "keep_best": 10,
        "valid_bleu_utts": 200,
        "valid_max_len_ratio": 1.5,
        "nan_patience": 20,
        "precision": "auto",  # auto: bf16-mixed on GPUs with bf16, 16-mixed on other GPUs, 32 on CPU
        "log_every_n_steps": 50,
    },
}


def load_training_config(path: str | Path, overrides: list[str]) -> dict:
    config = merge(DEFAULTS, apply_overrides(read_yaml(path), overrides))
    if config["task"] not in TASKS:
        raise SateError(f"{path}: task must be one of {', '.join(TASKS)}, got {config['task']!r}")
    if not config["data"]["dir"]:
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
    parser.add_argument("--accelerator", default="auto", choices=["auto", "cpu", "gpu"])
    parser.add_argument("--devices", type=int, default=None,
                        help="devices per node (default: all GPUs, or 1 CPU process)")
    parser.add_argument("--num-nodes", type=int, default=1, help="machines (with torchrun or SLURM)")


def run(args: argparse.Namespace) -> int:
    config = load_training_config(args.config, args.overrides)
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
