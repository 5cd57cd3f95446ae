"""From a training config to the model that trains: build it, initialise it, attach its teachers."""

from __future__ import annotations

from pathlib import Path

from sate.models import SateModel, build_model
from sate.train.schema import TrainingConfig


def build_for_training(config: TrainingConfig, src_tokens: list[str], tgt_tokens: list[str],
                       initialize: bool = True, cmvn: Path | None = None) -> SateModel:
    """The model of `config.task` with its hub parts and the `init:` section loaded, and the `loss.kd` teachers
    attached.

    Hub parts (``textual.type hf_marian``, ``acoustic.type hf_*``) load from their directories first, except the
    components `init:` names, which load from their checkpoints after. `initialize` False skips both (a resume,
    whose weights come from its checkpoint). Every step fails loudly (`SateError`) on a missing file, unmatched
    keys, shape or vocabulary mismatch. ``cmvn`` is the run's global `cmvn.json`, which a frozen ASR teacher must
    have been trained with, as it must share the run's `data.cmvn`.
    """
    from sate.models.hub.load import load_hub_parts
    from sate.models.pretrained import initialize as load_init
    from sate.models.pretrained import load_teachers

    model = build_model(config.task, config.model, len(src_tokens), len(tgt_tokens))
    if initialize:
        init = config.init
        load_hub_parts(model, src_tokens, tgt_tokens, skip=set(init) if "model" not in init else {
            "acoustic", "textual", "decoder", "src_embed"})
        if init:
            load_init(model, init, src_tokens, tgt_tokens, cmvn=cmvn, cmvn_kind=config.data.cmvn)
    load_teachers(model, src_tokens, tgt_tokens, cmvn=cmvn, cmvn_kind=config.data.cmvn)
    return model
