"""What a training config's ``init:`` section may hold, told without building the model.

`sate config` and `sate train` check it before any work (naming the file), so this module stays free of torch:
`sate.cli` imports the trainer's config reading at start-up. `sate.models.pretrained` checks the rest (a component
the built model lacks) and loads the weights.
"""

from __future__ import annotations

from sate.errors import SateError, first_few, shown
from sate.settings import PATH, nameable, yaml_shown

TASK_COMPONENTS = {
    "asr": ("acoustic", "ctc", "decoder"),
    "mt": ("src_embed", "textual", "decoder"),
    "st": ("acoustic", "ctc", "adaptor", "src_embed", "textual", "decoder"),
}
ENTRY_KEYS = ("path", "prefix", "config")


def check_init_section(task: str, init_conf: object) -> None:
    """What can be told of an `init:` section without the model: `sate config` and `sate train` refuse it before
    any work, naming the file (an unknown component or an entry without a path passed `sate config`, and `sate
    train` refused it once the model was built)."""
    if not isinstance(init_conf, dict):
        raise SateError(f"init: must be a mapping of component -> {{path: ...}}, got {yaml_shown(init_conf)}")
    allowed = TASK_COMPONENTS[task] + ("model",)
    unknown = [c for c in init_conf if c not in allowed]
    if unknown:
        raise SateError(f"init: unknown component(s) {first_few(unknown)} for a {task} model; "
                        f"known: {', '.join(allowed)}")
    if "model" in init_conf and len(init_conf) > 1:
        raise SateError("init: 'model' loads the whole model and cannot be combined with components")
    for component, entry in init_conf.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise SateError(f"init.{component}: must be a mapping with a 'path', got {yaml_shown(entry)}")
        extra = sorted(set(entry) - set(ENTRY_KEYS), key=str)
        if extra:
            raise SateError(f"init.{component}: unknown key(s) {first_few(extra)}; known: "
                            f"{', '.join(ENTRY_KEYS)}")
        for key in ("prefix", "config"):
            if key in entry and not isinstance(entry[key], str):
                raise SateError(f"init.{component}.{key} must be a string, got {yaml_shown(entry[key])}")
        for key in ("path", "config"):  # a NUL byte or a lone surrogate was a traceback once the model was built
            if key in entry and not nameable(entry[key]):
                raise SateError(f"init.{component}.{key} must be {PATH[1]}, got {shown(entry[key])}")
