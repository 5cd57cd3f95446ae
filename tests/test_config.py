"""`sate config`: every key printed with its default and a comment, and config files as `sate train` reads them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from sate.cli import main
from sate.models import config as model_config
from sate.train import trainer


def _paths(tree: dict, prefix: str = "") -> set[str]:
    """Every dotted key of a nested dict, sections included."""
    out: set[str] = set()
    for key, value in tree.items():
        out.add(prefix + key)
        if isinstance(value, dict):
            out |= _paths(value, f"{prefix}{key}.")
    return out


def test_every_default_has_a_comment_and_every_comment_a_key() -> None:
    assert _paths(trainer.DEFAULTS) == set(trainer.HELP)
    assert _paths(model_config.DEFAULTS) == set(model_config.HELP)


@pytest.mark.parametrize("task", ["asr", "mt", "st"])
def test_task_defaults_print_as_yaml_that_reads_back(task: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--task", task]) == 0
    printed = capsys.readouterr().out
    config = yaml.safe_load(printed)  # the comments are YAML comments
    assert config["task"] == task and config["optim"] == trainer.DEFAULTS["optim"]
    assert config["model"] == model_config.task_defaults(task) == model_config.resolve_config(task, None)
    assert "  lr: 0.002" in printed and "# peak learning rate" in printed
    assert ("adaptor" in config["model"]) == (task == "st") and ("acoustic" in config["model"]) == (task != "mt")


def test_a_config_file_prints_merged_and_resolved(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "st.yaml"
    path.write_text(yaml.safe_dump({"task": "st", "model": {"d_model": 64, "loss": {"kd": {"mt_weight": 0.5}}},
                                    "optim": {"lr": 1e-3}}))
    assert main(["config", "--config", str(path), "--set", "trainer.max_steps=7", "--init-from", "mt=m.pt"]) == 0
    config = yaml.safe_load(capsys.readouterr().out)
    assert config["model"]["d_model"] == 64 and config["model"]["acoustic"]["layers"] == 12  # defaults filled
    assert config["optim"]["lr"] == 1e-3 and config["trainer"]["max_steps"] == 7
    assert config["model"]["loss"]["kd"]["mt_teacher"] == "m.pt" and config["init"]["decoder"] == {"path": "m.pt"}


@pytest.mark.parametrize(("argv", "message"), [
    (["--task", "st", "--set", "a=1"], "--set and --init-from need --config"),
    (["--config", "{dir}/missing.yaml"], "config file not found"),
    (["--config", "{dir}/bad.yaml"], "unknown config key 'optim.lrr'"),
    (["--config", "{dir}/bad_spec.yaml"], "unknown config key 'specaug.freq_mask_widht'"),
    (["--config", "{dir}/kd.yaml"], "loss.kd.asr_teacher .* is not set .*--init-from asr=PATH"),
])
def test_errors_name_the_key_or_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                     message: str) -> None:
    (tmp_path / "bad.yaml").write_text("task: mt\noptim: {lrr: 1}\n")
    (tmp_path / "bad_spec.yaml").write_text("task: asr\nspecaug: {freq_mask_widht: 10}\n")
    (tmp_path / "kd.yaml").write_text("task: st\nmodel: {loss: {kd: {asr_weight: 0.5}}}\n")
    assert main(["config", *(a.format(dir=tmp_path) for a in argv)]) == 2
    assert re.search(message, capsys.readouterr().err)
