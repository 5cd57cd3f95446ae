"""The ASR, MT and SATE speech-translation models, built from ESPnet modules plus SATE's parts.

Read in pipeline order: acoustic (encoder), ctc, adaptor (and shrink), textual, decoder; then
asr, mt and st assemble them, build maps a config to a model, model_file saves and loads them.
"""

from sate.models.asr import ASRModel
from sate.models.base import Encoded, SateModel
from sate.models.build import build_model
from sate.models.config import resolve_config
from sate.models.ctc import ctc_greedy
from sate.models.model_file import load_model_file, model_from_file, model_meta, save_model_file
from sate.models.mt import MTModel
from sate.models.st import STModel

__all__ = [
    "ASRModel",
    "Encoded",
    "MTModel",
    "STModel",
    "SateModel",
    "build_model",
    "ctc_greedy",
    "load_model_file",
    "model_from_file",
    "model_meta",
    "resolve_config",
    "save_model_file",
]
