"""Tiny model configs: the one factory that tests and benchmarks share.

A tiny model trains a step in milliseconds on a CPU, so a test can build, train and decode it on a
few synthetic utterances. Every test used to write its own copy of such a config; this module is
the only one now, and each variant a test needs is a keyword here, not another copy.
"""

from __future__ import annotations

from dataclasses import fields

from sate.models.config import config_class
from sate.models.registry import ADAPTOR_TYPES


def tiny_config(task: str, d_model: int = 32, *, layers: int = 1, decoder_layers: int | None = None,
                acoustic_type: str = "conformer", kernel: int | None = None, adaptor: str | None = "league",
                dropout: float | None = None, baseline: bool = False) -> dict[str, object]:
    """The `model:` section of a tiny `task` model (asr, mt or st).

    Each part has `layers` blocks of 2 heads with a feed-forward of 2·d_model; the conv front-end
    has d_model/4 channels. `decoder_layers` gives the decoder its own depth (an ASR model has a
    decoder only when it is set: hybrid CTC/attention). `kernel` and `dropout` left at None keep the
    model defaults (`dropout` sets the adaptor's too); `adaptor` None leaves the adaptor section out (the
    default type). `baseline` gives the E2E ST baseline: no adaptor, no textual encoder. The adaptor's dropout is set
    where its type (league when `adaptor` is None; shrink's default mode is league) has a linear branch: the config
    refuses it elsewhere as doing nothing, and a test of `dropout=0.0` with the default type got the adaptor's 0.1.
    """
    block: dict[str, object] = {"layers": layers, "heads": 2, "ffn": 2 * d_model}
    if dropout is not None:
        block["dropout"] = dropout
    acoustic = {**block, "type": acoustic_type, "frontend_channels": d_model // 4}
    if kernel is not None:
        acoustic["kernel"] = kernel
    adaptor_section: dict[str, object] = {} if adaptor is None else {"type": adaptor}
    kind = ADAPTOR_TYPES.get(adaptor or "league")  # an unknown type is the config's to refuse, by name
    if dropout is not None and kind is not None and (kind.linear or kind.shrinks):
        adaptor_section["dropout"] = dropout
    conf: dict[str, object] = {
        "d_model": d_model,
        "acoustic": acoustic,
        "adaptor": adaptor_section,
        "textual": dict(block),
        "decoder": {**block, "layers": layers if decoder_layers is None else decoder_layers},
    }
    if baseline:
        conf["adaptor"], conf["textual"] = {"type": "none"}, {"layers": 0}
    elif not adaptor_section:
        del conf["adaptor"]
    keep = {f.name for f in fields(config_class(task))} - {"loss"}
    if task == "asr" and decoder_layers is None:
        keep.discard("decoder")
    return {k: v for k, v in conf.items() if k in keep}
