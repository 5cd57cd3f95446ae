"""Building a model from its config: the one place that maps a task name to a class."""

from __future__ import annotations

from sate.models.asr import ASRModel
from sate.models.base import SateModel
from sate.models.config import ModelConfig, resolve_config
from sate.models.fast_modules import use_fast_modules
from sate.models.mt import MTModel
from sate.models.st import STModel

MODEL_CLASSES: dict[str, type[SateModel]] = {"asr": ASRModel, "mt": MTModel, "st": STModel}


def build_model(task: str, conf: dict | ModelConfig | None, src_vocab_size: int, tgt_vocab_size: int) -> SateModel:
    """A freshly initialised model; `conf` is the YAML ``model:`` section (defaults fill the rest), a model file's
    resolved dict, or a resolved config.

    Teachers for distillation are not loaded here (decoding rebuilds models from their stored
    config and needs none); see `sate.models.pretrained.load_teachers`. ESPnet's parameter-free modules
    are swapped for faster ones (`sate.models.fast_modules`): the same weights and eval-mode results.
    """
    resolved = resolve_config(task, conf)
    return use_fast_modules(MODEL_CLASSES[task](resolved, src_vocab_size, tgt_vocab_size))
