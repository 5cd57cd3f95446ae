"""Reading a downloaded hub model directory: its JSON files and its weights, with errors that name the file.

A directory made by ``hf download NAME --local-dir DIR`` (or a git clone with git lfs) holds ``config.json``
and the weights as ``model.safetensors`` (newer uploads; what transformers 5's ``save_pretrained`` writes) or
``pytorch_model.bin`` (older uploads: opus-mt-en-de's main branch has only this one), either of them possibly
split into shards listed by an ``*.index.json``. safetensors files are read with the safetensors package, .bin
files with ``torch.load(weights_only=True)``, so a pickle cannot run code. A clone without ``git lfs pull``
leaves small text pointers where the weights should be; they are recognised and named.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from sate.errors import SateError, shown
from sate.files import RawMapping, not_a_file, read_checkpoint, read_json, relative_note
from sate.layout import HUB_WEIGHT_FILES

LFS_POINTER = b"version https://git-lfs"

if TYPE_CHECKING:  # torch: imported when weights are read
    import torch


def hub_directory(path: str | Path | None, key: str) -> Path:
    """The directory a config key names; it must exist."""
    if path is None:  # a config with the hub's sizes (copied from `sate config`) and no path: a TypeError traceback
        full = key if key.startswith("-") else f"model.{key}"  # the key as a config and --set name it
        raise SateError(f"{full} is not set: the weights are read from the downloaded model's directory (--set "
                        f"{full}=DIR, or fill the part from a model of ours with init:)")
    directory = Path(path)
    if directory.is_file() and key.endswith(".path") and directory.suffix == ".pth":
        # an ESPnet experiment's checkpoint, which init reads (docs/models.md), kept the advice to name "the folder
        # holding its config.json", and the experiment's folder so named was not a Whisper's (review33w)
        section = key.removesuffix(".path")
        ours = "conformer or transformer" if section == "acoustic" else "transformer"
        raise SateError(f"model.{key}: {directory} is a file, not a downloaded model's folder; an ESPnet experiment's "
                        f"checkpoint (.pth, its config.yaml beside it) fills model.{section} through init (`init: "
                        f"{{{section}: {{path: FILE}}}}`, docs/models.md) where model.{section}.type is sate's own "
                        f"{ours}, as the experiment's encoder, without model.{key}, which names the folder of a "
                        "Hugging Face (or CTranslate2) download")
    if directory.is_file() and key.endswith(".path") and directory.suffix in (".pt", ".ckpt"):
        # a model or checkpoint of ours (or OpenAI whisper's tiny.en.pt) was told to name "the folder holding its
        # config.json and weights", which the user's experiment folder is not: the advice failed (33rd hostile pass)
        section = key.removesuffix(".path")
        raise SateError(f"model.{key}: {directory} is a file, not a downloaded model's folder; a model file or "
                        f"checkpoint of sate's fills model.{section} through init (`init: {{{section}: {{path: "
                        f"FILE}}}}`; for SATE also sate train --init-from), beside model.{key} naming the folder of "
                        "the download it was built on; another toolkit's checkpoint (OpenAI whisper's NAME.pt) is not "
                        "read: give the folder of the model's Hugging Face (or CTranslate2) download")
    if directory.is_file():  # a model's file (model.bin, config.json) was told to download the model first
        raise SateError(f"{key}: {directory} is a file; name the model's directory (the folder holding its "
                        "config.json and weights, as downloaded)")
    if not directory.is_dir():  # a relative or '~' name, there from another folder, was told to download it
        raise SateError(f"{key}: {directory} is not a directory{relative_note(directory)}; download the model first "
                        "(docs/models.md)")
    return directory


def weight_file(directory: Path) -> Path:
    """The weights file (or shard index) of a model directory. Where none is a file, something at one of their names
    (a broken link: a Hugging Face cache's blob gone; a folder) is named as Whisper's reader names it: a Marian or
    wav2vec2 snapshot whose model.safetensors link was broken was "no weights found", beside a file ls lists (32nd
    hostile pass)."""
    names = [name for pair in HUB_WEIGHT_FILES.items() for name in pair]
    for name in names:
        if (directory / name).is_file():
            return directory / name
    for name in names:
        not_a_file(directory / name, "a weights file")
    raise SateError(f"{directory}: no weights ({', '.join(HUB_WEIGHT_FILES)}, or their .index.json) found")


def _check_not_pointer(path: Path) -> None:
    with open(path, "rb") as f:
        head = f.read(len(LFS_POINTER))
    if head == LFS_POINTER:
        raise SateError(f"{path} is a git-lfs pointer, not the weights: run `git lfs pull` in {path.parent}")


def _read_one(path: Path) -> dict[str, object]:
    """A weights file's entries by name, not yet checked to be tensors."""
    if not path.is_file():
        what = "is a directory, not a weights file" if path.is_dir() else "is missing"
        raise SateError(f"{path} {what}: is {path.parent} a complete download?")
    _check_not_pointer(path)
    if path.suffix == ".safetensors":
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        try:
            return load_file(str(path))
        except (SafetensorError, OSError) as err:
            raise SateError(f"{path}: cannot read the safetensors file ({err})") from None
    state = read_checkpoint(path)
    if not isinstance(state, dict):
        raise SateError(f"{path}: expected a state dict, got a {type(state).__name__}")
    return state


def read_weights(directory: Path, used: Callable[[str], bool] | None = None) -> tuple[dict[str, torch.Tensor], Path]:
    """Every tensor of a model directory by name, and the file (or index) it came from. The tensors ``used`` keeps
    (every one where None: the caller reads them) are checked by `check_weights`, each naming the file (the shard)
    that holds it: a NaN in a part sate drops (wav2vec2's ``lm_head``, the decoder of a Whisper read for its encoder)
    refused the model, and the check of every tensor cost time in proportion to the whole checkpoint (28th pass)."""
    import torch

    path = weight_file(directory)
    if path.name.endswith(".index.json"):
        state, files = _read_shards(directory, path)
    else:
        state, files = _read_one(path), {}
    bad = [k for k, v in state.items() if not isinstance(v, torch.Tensor)]
    if bad:
        raise SateError(f"{files.get(bad[0], path)}: entries that are not tensors: {', '.join(map(str, bad[:5]))}")
    tensors = cast("dict[str, torch.Tensor]", state)
    by_file: dict[Path, dict[str, torch.Tensor]] = {}
    for name, tensor in tensors.items():
        if used is None or used(name):
            by_file.setdefault(files.get(name, path), {})[name] = tensor
    for file, part in by_file.items():
        check_weights(part, file)
    return tensors, path


def _read_shards(directory: Path, path: Path) -> tuple[dict[str, object], dict[str, Path]]:
    """The entries of a sharded download (``path`` its index) by name, and the shard each came from."""
    weight_map = read_json(path).get("weight_map")
    if not isinstance(weight_map, dict):
        raise SateError(f"{path}: no weight_map")
    shards = list(weight_map.values())
    # a shard is a file of the download: a number was a TypeError traceback, and an absolute path or ../
    # loaded another directory's weights without a word
    odd = [s for s in shards if not isinstance(s, str) or s in ("", ".", "..") or "/" in s or "\\" in s]
    if odd or not shards:
        what = f"names {shown(odd[0])}, not the name of a file in {directory}" if odd else "names no shard"
        raise SateError(f"{path}: its weight_map {what}")
    state: dict[str, object] = {}
    files: dict[str, Path] = {}
    for shard in sorted(set(shards)):
        for name, value in _read_one(directory / shard).items():
            # each tensor from the shard the map places it in: shards of two downloads (a re-sharded revision over
            # an older one) held one name twice, and the later file's won without a word (28th pass). A tensor the
            # map does not list is taken from the one shard that holds it, as transformers loads it
            if name in weight_map and weight_map[name] != shard:
                raise SateError(f"{directory / shard} holds {name}, but {path.name} places it in "
                                f"{shown(weight_map[name])}: are the shards of one download? Download the model "
                                "again into an empty directory")
            if name in files:
                raise SateError(f"{directory / shard} holds {name}, and so does {files[name].name}, but {path.name} "
                                "lists it in neither: are the shards of one download? Download the model again "
                                "into an empty directory")
            state[name], files[name] = value, directory / shard
    absent = [name for name in weight_map if name not in state]
    if absent:
        raise SateError(f"{path}: {weight_map[absent[0]]} does not hold {absent[0]}, which the index places "
                        "there: are the shards of one download? Download the model again into an empty directory")
    return state, files


def check_weights(state: Mapping[str, torch.Tensor], path: Path) -> None:
    """Every tensor of a weights file a float of finite values, or one line naming the file and the first tensor
    that is not: an integer tensor (a quantised save) was cast to float and loaded as its raw codes, and a NaN or an
    infinity (a float16 conversion that overflowed) was loaded, both without a word (28th hostile pass)."""
    import torch

    for name, tensor in state.items():
        if not tensor.is_floating_point():
            raise SateError(f"{path}: {name} holds {str(tensor.dtype).removeprefix('torch.')} values, not float "
                            "weights (a quantised model?); sate reads float32, float16 or bfloat16 weights: use the "
                            "unquantised download")
        # the sum first: NaN and infinity carry into it, and it is several times cheaper than isfinite on a CPU (a
        # float16 Whisper large holds 1.5 billion values); a sum that overflows is checked value by value
        if not bool(torch.isfinite(tensor.sum(dtype=torch.float32))) and not bool(torch.isfinite(tensor).all()):
            raise SateError(f"{path}: {name} holds NaN or infinite values; the weights are damaged (a float16 "
                            "conversion that overflowed?): download them again")


def get_key(config: RawMapping, key: str, path: Path, kind: type | tuple[type, ...]) -> Any:
    """config[key] of the type `kind` (a bool never passes as a number), or a `SateError` naming the key."""
    if key not in config:
        raise SateError(f"{path}: no {key!r}; the model cannot be built without it")
    value = config[key]
    if isinstance(value, bool) != (kind is bool) or not isinstance(value, kind):
        raise SateError(f"{path}: {key} has the unexpected value {shown(value)}")
    return value


def positive_sizes(config: RawMapping, keys: tuple[str, ...], path: Path) -> list[int]:
    """config.json's sizes ``keys``, each a whole number of at least 1, or one line naming the key (0 heads would
    end in a division by zero)."""
    values = [get_key(config, key, path, int) for key in keys]
    for key, value in zip(keys, values, strict=True):
        if value < 1:
            raise SateError(f"{path}: {key} is {value}; a size must be at least 1")
    return values


Claims = list[tuple[str, int, str, int]]  # (config key, its value, the tensor that holds the size, which axis)


def check_config_sizes(path: Path, shapes: Mapping[str, Sequence[int]], prefix: str, claims: Claims) -> None:
    """config.json's sizes against the weights' shapes (names without ``prefix``): one line for the first that
    differs ("config.json says d_model 16, the weights have 32"), where comparing tensors would list each of them,
    a config with fewer layers than the weights would load without a word, and a huge size would be allocated
    before any comparison. ``encoder_layers``/``decoder_layers`` count the ``layers.N.`` names."""
    for key, said, tensor, axis in claims:
        if key.endswith("_layers"):
            found: int | None = 1 + max((int(m.group(1)) for name in shapes
                                         if (m := re.match(r"layers\.(\d+)\.", name))), default=-1)
        else:
            shape = shapes.get(tensor)
            found = int(shape[axis]) if shape is not None and len(shape) > axis else None
        if found is not None and found != said:
            raise SateError(f"{path} says {key} {said}, the weights have {found} ({prefix}{tensor})")


SAFETENSORS_HEADER_MAX = 100_000_000  # bytes; a real header lists names, shapes and offsets (a few MB at most)


def safetensors_shapes(path: Path) -> dict[str, tuple[int, ...]] | None:
    """Every tensor's shape in a safetensors file, from its header (an 8-byte length and that much JSON), without
    the weights and without torch: sizes are compared with config.json when a config is resolved, before anything
    is built. None when the file is absent or its header unreadable (the weights' reader then says why)."""
    try:
        with open(path, "rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            if length > SAFETENSORS_HEADER_MAX:
                return None
            header = json.loads(f.read(length))
    except (OSError, struct.error, ValueError, RecursionError):
        return None
    if not isinstance(header, dict):
        return None
    shapes = {}
    for name, entry in header.items():
        shape = entry.get("shape") if isinstance(entry, dict) else None
        if name != "__metadata__" and isinstance(shape, list) and all(isinstance(n, int) for n in shape):
            shapes[name] = tuple(shape)
    return shapes


def ctranslate2_spec(path: Path) -> str | None:
    """The spec name a CTranslate2 ``model.bin`` opens with (``WhisperSpec``, ``TransformerSpec``), read from its
    first bytes (uint32 version, uint16 length, the name and its NUL); None where the file is not one. It tells a
    converted Whisper from a converted OPUS-MT model, whose config.json files both lack ``model_type``."""
    try:
        with open(path, "rb") as f:
            head = f.read(6)
            if len(head) < 6:
                return None
            (length,) = struct.unpack("<H", head[4:])
            raw = f.read(length)
    except OSError:
        return None
    if not 0 < length <= 256 or len(raw) != length:
        return None
    try:
        return raw[:-1].decode("ascii")
    except UnicodeDecodeError:
        return None
