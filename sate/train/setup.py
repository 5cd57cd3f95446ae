"""From a training config to the model that trains: build it, initialise it, attach its teachers."""

from __future__ import annotations

from sate.models import SateModel, build_model


def build_for_training(config: dict, src_tokens: list[str], tgt_tokens: list[str],
                       initialize: bool = True) -> SateModel:
    """The model of `config["task"]` with the `init:` section loaded and the `loss.kd` teachers attached.

    `initialize` False skips the `init:` section (a resume, whose weights come from its checkpoint).
    Both steps fail loudly (`SateError`) on a missing file, unmatched keys, shape or vocabulary mismatch.
    """
    from sate.models.pretrained import initialize, load_teachers

    model = build_model(config["task"], config["model"], len(src_tokens), len(tgt_tokens))
    if initialize and config["init"]:
        initialize(model, config["init"], src_tokens, tgt_tokens)
    load_teachers(model, src_tokens, tgt_tokens)
    return model
