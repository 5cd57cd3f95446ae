"""conf/mustc_hub: the recipe's hub configs resolve with the settings the recipe adds, and SATE takes its acoustic
side from the ASR model's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sate.models.config import resolve_config
from sate.models.pretrained import without_dropout
from sate.train.schema import check_feature_mode
from sate.train.trainer import apply_init_from, load_training_config

pytest.importorskip("transformers")
CONF = Path(__file__).resolve().parents[2] / "conf" / "mustc_hub"


@pytest.mark.parametrize("ssl", [True, False])
def test_hub_configs_resolve_and_fit_together(ssl: bool, marian_dir: Path,
                                              speech_hub_dir: Callable[[str, str], Path]) -> None:
    speech = speech_hub_dir("hf_hubert", "group")
    # What recipes/lib/pipeline.sh sets (hub_value reads d_model and model_type from config.json).
    extra = ["model.acoustic.type=hf_hubert", f'model.acoustic.path="{speech}"'] if ssl else []
    asr = load_training_config(CONF / ("asr_ssl.yaml" if ssl else "asr.yaml"), ["model.d_model=16", *extra],
                               need_data=False)
    st = load_training_config(CONF / ("st_ssl.yaml" if ssl else "st.yaml"),
                              [f'model.textual.path="{marian_dir}"', *extra], need_data=False)
    st = apply_init_from(st, {"asr": "exp/asr/model.pt"})
    assert set(st.init) == {"acoustic", "ctc"}
    models = {name: resolve_config(c.task, c.model).to_dict() for name, c in (("asr", asr), ("st", st))}
    for section in ("acoustic", "ctc"):
        assert without_dropout(models["st"][section]) == without_dropout(models["asr"][section]), section
    assert models["st"]["d_model"] == models["asr"]["d_model"] == 16
    assert models["st"]["adaptor"]["type"] == "shrink"
    for config in (asr, st):
        check_feature_mode(config)
