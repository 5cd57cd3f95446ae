"""`sate train --init-from asr=PATH --init-from mt=PATH`: the `init:` entries and teachers a SATE model gets.

SATE's recipe is always the same: the acoustic encoder and CTC come from the pre-trained ASR model,
the source embedding, textual encoder and decoder from the pre-trained MT model, and where the loss
distils, those two models are also the frozen teachers. This fills the config so that neither the
user nor a recipe's shell has to spell out five `init.*.path` keys and two teacher paths.
"""

from __future__ import annotations

import copy
from pathlib import Path

from sate.errors import SateError, shown
from sate.models.config import STConfig, resolve_config
from sate.numbers import is_number
from sate.settings import PATH, nameable
from sate.targets import same_file

# What each pre-trained model gives a SATE model.
SOURCE_COMPONENTS = {"asr": ("acoustic", "ctc"), "mt": ("src_embed", "textual", "decoder")}


def parse_init_from(items: list[str]) -> dict[str, str]:
    """`["asr=exp/asr/model.pt", "mt=..."]` -> {"asr": path, "mt": path}, with errors naming the item."""
    sources: dict[str, str] = {}
    for item in items:
        side, sep, path = item.partition("=")
        if not sep or side not in SOURCE_COMPONENTS or not path:
            raise SateError(f"--init-from {shown(item)}: expected asr=PATH or mt=PATH")  # shown: cut, a long one
        if side in sources:
            raise SateError(f"--init-from {side}= is given twice")
        if not nameable(path):  # a 256-byte name was the OS's "File name too long" once the model was built
            raise SateError(f"--init-from {shown(item)}: {side}= must be {PATH[1]}")
        sources[side] = path
    return sources


def fill_init(task: str, model: dict, init: dict, sources: dict[str, str]) -> tuple[dict, dict]:
    """A training config's ``model:`` and ``init:`` sections with the entries and teachers `sources` stand for.

    The ASR model gives the acoustic encoder and CTC; the MT model the source embedding, textual
    encoder and decoder, each only where this model has the part (the E2E baseline has no textual
    encoder; linear and none adaptors have no source embedding unless loss.mt_text_weight trains on
    text). Where `loss.kd` sets a distillation weight, the same model becomes that side's teacher.
    Entries given here replace the config's; the sections given are not changed.
    """
    if not sources:
        return model, init
    if task != "st":
        raise SateError(f"--init-from fills a SATE (st) model from ASR and MT models; this config's task is "
                        f"{task} (use its init: section instead)")
    if isinstance(init, dict) and "model" in init:
        # refused as "init: 'model' ... cannot be combined with components", naming the config file, which held no
        # component: they were the ones --init-from adds (30th hostile pass)
        entry = init["model"]
        if entry is None:  # `--set init.model=null` was told "init.model loads the whole model" (fix30h)
            raise SateError(f"init.model is null, which does not drop the entry, and --init-from "
                            f"{' and '.join(f'{side}=' for side in sources)} fills parts of the model: --set "
                            "init=null drops init: to start from the --init-from models")
        given = f" ({shown(entry['path'])})" if isinstance(entry, dict) and isinstance(entry.get("path"), str) else ""
        raise SateError(f"init.model{given} loads the whole model, and --init-from "
                        f"{' and '.join(f'{side}=' for side in sources)} fills parts of it: give one of them (drop "
                        "--init-from to start from init.model, or --set init=null to start from the --init-from "
                        "models)")
    model, init = copy.deepcopy(model), copy.deepcopy(init)
    loss = model.setdefault("loss", {})
    kd = loss.setdefault("kd", {}) if isinstance(loss, dict) else None
    for side, path in sources.items():
        weight = kd.get(f"{side}_weight", 0) if isinstance(kd, dict) else 0
        if is_number(weight) and weight > 0:
            # a teacher the config or --set names is the user's choice too: it was replaced without a word, so
            # `--set model.loss.kd.mt_teacher=exp/big_mt/model.pt` distilled from the --init-from model instead
            given = kd.get(f"{side}_teacher")  # type: ignore[union-attr]  # a mapping, as the weight was read from it
            if isinstance(given, str) and given and not same_file(Path(given), Path(path)):
                raise SateError(f"model.loss.kd.{side}_teacher is {shown(given)}, and --init-from {side}= makes "
                                f"{shown(path)} that side's teacher: name one teacher (a config saved from an earlier "
                                f"run names its teacher: --set model.loss.kd.{side}_teacher=null lets --init-from "
                                f"name it; to start from one model and distil from another, write init: entries "
                                f"instead of --init-from)")
            kd[f"{side}_teacher"] = path  # type: ignore[index]
    try:
        resolved = resolve_config("st", model)
    except SateError:  # a loss or kd section of the wrong kind, a weight that is text ('0.3'), null or NaN: the
        return model, init  # caller's resolution of the file refuses it, naming the file and key (a traceback here)
    assert isinstance(resolved, STConfig)
    present = {"acoustic", "ctc", "decoder"}
    present |= {"textual"} if resolved.textual.layers else set()
    present |= {"src_embed"} if resolved.has_source_embedding else set()
    for side, path in sources.items():
        for component in SOURCE_COMPONENTS[side]:
            if component in present:
                init[component] = {"path": path}
    return model, init
