"""Building the model that trains (sate.train.setup)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sate.data.vocab import load_vocabularies
from sate.models import build_model
from sate.models.tiny import tiny_config
from sate.train.setup import build_for_training
from sate.train.trainer import checked_config


def test_a_model_read_in_eval_mode_leaves_the_student_training(tmp_path: Path, make_config: Callable[..., Path],
                                                                prepared_data: Path) -> None:
    """ESPnet's feed-forward blocks share one default ReLU across every model of the process: the MT teacher of
    loss.kd, rebuilt from its model file in eval mode, put the student's blocks in eval mode, and each SATE run with
    it (the recipes' st.yaml) began with Lightning's "Found 1 module(s) in eval mode ... may lead to unexpected
    behavior" (29th hostile pass; `--init-from mt=` alone reads weights and builds no model)."""
    config = checked_config(make_config(tmp_path, "st", prepared_data), [], [])
    src, tgt = load_vocabularies(prepared_data, "st")
    other = build_model("mt", tiny_config("mt", adaptor=None), len(src.tokens), len(tgt.tokens))
    model = build_for_training(config, src.tokens, tgt.tokens)
    other.eval()  # what reading a teacher's model file does (sate.models.model_file)
    assert [name for name, module in model.named_modules() if not module.training] == []
