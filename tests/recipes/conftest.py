"""Recipe-test helpers: tiny training configs, and running a recipe in a subprocess with the venv's `sate`."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from sate.models.tiny import tiny_config

ROOT = Path(__file__).resolve().parents[2]


def write_tiny_configs(conf_dir: Path) -> Path:
    """asr, mt, st (with both distillation terms and MT text batches) and st_e2e configs of tiny models, each 2 epochs
    of one batch."""
    conf_dir.mkdir()
    for task in ("asr", "mt", "st"):
        model = tiny_config(task, adaptor=None)
        batch = {"per_device": 100000, "global": 100000}
        if task == "st":  # as conf/synth/st_whisper.yaml: distillation, and MT text batches beside the speech
            model["loss"] = {"kd": {"asr_weight": 0.3, "mt_weight": 0.3}, "mt_text_weight": 0.5}
            batch["mt_tokens"] = 400
        config = {"task": task, "data": {"num_workers": 0}, "batch": batch,
                  "model": model, "optim": {"lr": 3e-3, "warmup_steps": 2},
                  "trainer": {"max_epochs": 2, "keep_last": 1, "keep_best": 1, "valid_bleu_utts": 5}}
        (conf_dir / f"{task}.yaml").write_text(yaml.safe_dump(config))
    e2e = yaml.safe_load((conf_dir / "st.yaml").read_text())
    e2e["model"] = tiny_config("st", baseline=True)
    del e2e["batch"]["mt_tokens"]  # no textual side to take text
    (conf_dir / "st_e2e.yaml").write_text(yaml.safe_dump(e2e))
    return conf_dir


@pytest.fixture(scope="session")
def tiny_configs() -> Callable[[Path], Path]:
    """tiny_configs(conf_dir) -> conf_dir holding asr/mt/st/st_e2e.yaml of tiny models."""
    return write_tiny_configs


@pytest.fixture(scope="session")
def run_recipe(sate_path: Callable[[dict[str, str]], dict[str, str]]) -> Callable[..., subprocess.CompletedProcess]:
    """run_recipe(name, *args, timeout=600) -> recipes/<name>/run.sh run with the venv's `sate` on the PATH (for a
    slow test, the pre-forked one: tests/conftest.py, `sate_path`)."""

    def run(name: str, *args: object, timeout: int = 600) -> subprocess.CompletedProcess:
        env = sate_path(dict(os.environ))
        argv = ["bash", str(ROOT / "recipes" / name / "run.sh"), *map(str, args)]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)

    return run
