"""MT text of any size as token-id shards on disk: cleaned once, read one shard at a time.

`sate train` (task mt, ``data.mt_text``) streams the text files through the vocabularies once and stores the
result in ``DATA/mt_bin/<key>/``; later runs with the same files, vocabularies and cleaning reuse it. Building
it keeps at most one chunk of pairs and then one shard in memory, whatever the corpus size:

1. the line counts of each file pair are checked (before any work);
2. each pair is stripped, its English prepared as the source vocabulary reads it, both sides encoded, and
   dropped when a side is empty, the longer side has more than ``max_tokens`` tokens, or one side is more than
   ``max_ratio`` times longer than the other; kept pairs go to one of ``ceil(pairs / SHARD_PAIRS)`` buckets by
   a hash of the raw pair, so equal pairs meet in one bucket;
3. each bucket drops its repeated pairs (the first one stays) and becomes a shard: token ids and offsets.

Every count is printed and kept in ``index.json``, written last: a store without it is incomplete and rebuilt. It
also names the store's key and each shard's size, so a store found under another key (another corpus's or
vocabulary's, copied or renamed into this one's place: its ids index other tokens) or with a shard of another size
is rebuilt too.
`ShardedText` reads a store for training; with `BucketBatchSampler` over its `ShardLengths` only the shard being
read is in memory. A corpus of one shard keeps its pairs in file order, so a small corpus trains as before.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from sate import layout
from sate.data.parallel_text import check_pairs, read_pairs
from sate.errors import SateError, first_few, one_line
from sate.files import atomic_write_text, read_record, real_path, remove_temp_dir

SHARD_PAIRS = 200_000  # pairs per shard (about 45 MB of ids at WMT lengths): the memory of building and of reading
CHUNK_PAIRS = 10_000  # pairs encoded per SentencePiece call while streaming
FORMAT = 2  # 2: token ids as uint16 when both vocabularies fit
STORE_DIR = layout.MT_STORE_DIR


@dataclass(frozen=True)
class TextCleaning:
    """What `sate train` drops from MT text (``data.mt_max_tokens``, ``data.mt_max_ratio``, ``data.mt_dedup``)."""

    max_tokens: int = 256
    max_ratio: float = 9.0
    dedup: bool = True


def _pair_hash(en: str, tgt: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{en}\t{tgt}".encode(), digest_size=8).digest(), "little")


def _file_key(path: Path) -> list:
    stat = path.stat()
    return [str(real_path(path)), stat.st_size, stat.st_mtime_ns]


def store_key(files: Sequence[tuple[Path, Path]], vocab_ids: Sequence[str], cleaning: TextCleaning) -> str:
    """Changes whenever a file (path, size, time), a vocabulary or the cleaning changes."""
    blob = json.dumps([FORMAT, [[_file_key(en), _file_key(tgt)] for en, tgt in files], list(vocab_ids),
                       asdict(cleaning)])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


class _Bucket:
    """Append-only record blocks of one bucket in a temporary file (np.save blocks, read back in order)."""

    FIELDS = ("hash", "source", "index", "src_len", "tgt_len", "src", "tgt")

    def __init__(self, path: Path, dtype: type) -> None:
        self.path, self.dtype = path, dtype
        self.blocks = 0
        self.pending: dict[str, list] = {name: [] for name in self.FIELDS}

    def add(self, h: int, source: int, index: int, src: np.ndarray, tgt: np.ndarray) -> None:
        for name, value in zip(self.FIELDS, (h, source, index, len(src), len(tgt), src, tgt), strict=True):
            self.pending[name].append(value)

    def flush(self) -> None:
        if not self.pending["hash"]:
            return
        p = self.pending
        arrays = [np.asarray(p["hash"], dtype=np.uint64), np.asarray(p["source"], dtype=np.int32),
                  np.asarray(p["index"], dtype=np.int64), np.asarray(p["src_len"], dtype=np.int32),
                  np.asarray(p["tgt_len"], dtype=np.int32), np.concatenate(p["src"]).astype(self.dtype),
                  np.concatenate(p["tgt"]).astype(self.dtype)]
        with open(self.path, "ab") as f:
            for array in arrays:
                np.save(f, array, allow_pickle=False)
        self.blocks += 1
        self.pending = {name: [] for name in self.FIELDS}

    def read(self) -> dict[str, np.ndarray]:
        """Every record written, as one array per field (empty arrays for an empty bucket)."""
        parts: dict[str, list[np.ndarray]] = {name: [] for name in self.FIELDS}
        with open(self.path, "rb") if self.blocks else open(os.devnull, "rb") as f:
            for _ in range(self.blocks):
                for name in self.FIELDS:
                    parts[name].append(np.load(f, allow_pickle=False))
        return {name: np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
                for name, arrays in parts.items()}


def _offsets(lengths: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])


def build_store(files: Sequence[tuple[Path, Path]], src_vocab, tgt_vocab, out: Path,  # noqa: ANN001 - vocabularies
                cleaning: TextCleaning) -> dict:
    """Write the store into the new directory `out` (built beside it, renamed at the end); returns its index. The
    directory it is built in goes on any way out (a line of bad UTF-8 a million lines in, a full disk, Ctrl-C or
    `kill`): it was left in DATA/mt_bin under this process's pid, as large as the text read so far, at every
    failed try."""
    counts = check_pairs(files)
    total = sum(counts)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        return _build_in(tmp, files, src_vocab, tgt_vocab, out, cleaning, total)
    finally:
        remove_temp_dir(tmp)


def _build_in(tmp: Path, files: Sequence[tuple[Path, Path]], src_vocab, tgt_vocab, out: Path,  # noqa: ANN001
              cleaning: TextCleaning, total: int) -> dict:
    """`build_store`'s work in its directory ``tmp``, renamed to ``out`` once complete."""
    n_buckets = max(1, math.ceil(total / SHARD_PAIRS))
    # Ids take two bytes where both vocabularies fit (Marian's 58k does): half the memory of a shard and of the disk.
    dtype = np.uint16 if max(len(src_vocab.tokens), len(tgt_vocab.tokens)) <= np.iinfo(np.uint16).max + 1 else np.int32
    buckets = [_Bucket(tmp / f"bucket-{b:05d}.npy", dtype) for b in range(n_buckets)]
    dropped = {"empty": 0, "too_long": 0, "ratio": 0, "duplicate": 0}
    chunk: list = []

    def encode(chunk: list) -> None:
        srcs = src_vocab.encode_many([src for _, src, _ in chunk])
        tgts = tgt_vocab.encode_many([pair.tgt for pair, _, _ in chunk])
        for (pair, _, h), src, tgt in zip(chunk, srcs, tgts, strict=True):
            longer, shorter = max(len(src), len(tgt)), min(len(src), len(tgt))
            if longer > cleaning.max_tokens:
                dropped["too_long"] += 1
            elif longer > cleaning.max_ratio * shorter:
                dropped["ratio"] += 1
            else:
                buckets[h % n_buckets].add(h, pair.source, pair.index, src, tgt)
        for bucket in buckets:
            bucket.flush()

    for pair in read_pairs(files):
        src = src_vocab.prepare(pair.en) if pair.en else ""
        if not src or not pair.tgt:
            dropped["empty"] += 1
            continue
        chunk.append((pair, src, _pair_hash(pair.en, pair.tgt)))
        if len(chunk) >= CHUNK_PAIRS:
            encode(chunk)
            chunk = []
    encode(chunk)

    sizes, longest = [], 0
    for k, bucket in enumerate(buckets):
        records = bucket.read()
        n = len(records["hash"])
        keep = np.ones(n, dtype=bool)
        if cleaning.dedup and n:
            keep[:] = False
            keep[np.unique(records["hash"], return_index=True)[1]] = True  # the first of equal pairs stays
            dropped["duplicate"] += n - int(keep.sum())
        src_mask, tgt_mask = np.repeat(keep, records["src_len"]), np.repeat(keep, records["tgt_len"])
        src_len, tgt_len = records["src_len"][keep], records["tgt_len"][keep]
        np.savez(tmp / f"shard-{k:05d}.npz", src=records["src"][src_mask], src_offsets=_offsets(src_len),
                 tgt=records["tgt"][tgt_mask], tgt_offsets=_offsets(tgt_len), source=records["source"][keep],
                 index=records["index"][keep])
        bucket.path.unlink(missing_ok=True)
        sizes.append(len(src_len))
        if len(src_len):
            longest = max(longest, int(np.maximum(src_len, tgt_len).max()))
    if not sum(sizes):
        raise SateError(f"data.mt_text: no sentence pairs left after cleaning ({_describe(total, dropped)})")
    index = {"format": FORMAT, "key": out.name, "files": [[str(en), str(tgt)] for en, tgt in files], "pairs": total,
             "kept": sum(sizes), "dropped": dropped, "cleaning": asdict(cleaning), "shards": sizes,
             "bytes": [(tmp / f"shard-{k:05d}.npz").stat().st_size for k in range(len(sizes))], "longest": longest}
    atomic_write_text(tmp / "index.json", json.dumps(index, indent=1))
    try:
        tmp.rename(out)
    except OSError:  # another process (a second node on a shared disk) finished the same store first
        pass  # its directory goes with the others (build_store)
    return json.loads((out / "index.json").read_text())


def _describe(total: int, dropped: dict[str, int]) -> str:
    kept = total - sum(dropped.values())
    return f"{total:,} pairs read, {kept:,} kept; dropped: " + ", ".join(
        f"{n:,} {name.replace('_', ' ')}" for name, n in dropped.items())


def _shard_bytes(store: Path, k: int) -> int | None:
    try:
        return (store / f"shard-{k:05d}.npz").stat().st_size
    except OSError:
        return None


def read_index(store: Path) -> dict | None:
    """A store's index.json as `build_store` wrote it, for the key that names `store`, with every shard it names
    present at its size; None when missing, damaged (cut short or edited: a JSONDecodeError, TypeError or KeyError
    traceback before), of an earlier format, or another store's (copied or renamed here: it was read as this one)."""
    index = read_record(store / "index.json", "`sate train`")
    if not isinstance(index, dict):
        return None
    shards, files, dropped = index.get("shards"), index.get("files"), index.get("dropped")
    whole = (isinstance(index.get("pairs"), int) and isinstance(index.get("longest"), int)
             and isinstance(dropped, dict) and all(isinstance(n, int) for n in dropped.values())
             and isinstance(files, list) and all(isinstance(f, list) and len(f) == 2 for f in files)
             and isinstance(shards, list) and all(isinstance(n, int) and n >= 0 for n in shards)
             and index.get("key") == store.name and isinstance(index.get("bytes"), list)
             and len(index["bytes"]) == len(shards))
    if not whole or any(_shard_bytes(store, k) != size for k, size in enumerate(index["bytes"])):
        return None
    return index


def _check_only_ours(store: Path) -> None:
    """Refuse to build a damaged store again where its folder holds what sate did not write there (a user's notes,
    a hidden file, a folder) or is a symlink: the folder is removed whole first, and the user's things in it went
    with it (eighteenth hostile pass), as `sate features` refuses them in a split's shard folder."""
    if store.is_symlink():
        raise SateError(f"{store}: a symlink (to {os.readlink(store)}), where sate keeps an MT text store it removes "
                        "and builds again (this one is damaged); remove the link")
    other = sorted(p.name for p in store.iterdir() if not (p.is_file() and not p.is_symlink() and
                                                         re.fullmatch(r"index\.json|shard-[0-9]{5,}\.npz", p.name)))
    if other:
        raise SateError(f"{store}: holds {first_few(other, 1)}, which sate did not write; the store is damaged and "
                        "its folder is removed before it is built again: move it away")


def prepare_store(data_dir: Path, files: Sequence[tuple[Path, Path]], src_vocab, tgt_vocab,  # noqa: ANN001
                  vocab_ids: Sequence[str], cleaning: TextCleaning) -> Path:
    """The store of `files` under ``data_dir/mt_bin``, built when missing; prints what cleaning dropped."""
    out = data_dir / STORE_DIR / store_key(files, vocab_ids, cleaning)
    index = read_index(out)
    if index is not None:
        print(f"MT text: {one_line(str(out))} ({_describe(index['pairs'], index['dropped'])})")
        return out
    if out.is_dir():  # a store appears whole (renamed into place): this one was cut or edited since
        _check_only_ours(out)
        print(f"MT text: {one_line(str(out))} is damaged, of an earlier format or another store's (its index.json or "
              "a shard is missing, unreadable, of another size or names another key): built again")
        shutil.rmtree(out)
    print(f"MT text: streaming {len(files)} file pair(s) into {one_line(str(out))} (once; reused while files, "
          "vocabularies and cleaning stay the same)")
    index = build_store(files, src_vocab, tgt_vocab, out, cleaning)
    print(f"MT text: {_describe(index['pairs'], index['dropped'])}, in {len(index['shards'])} shard(s)")
    return out


class ShardedText(Dataset):
    """Items ``{id, src, tgt}`` of a store, numbered shard after shard; ids are ``<English file stem>_<line>``.

    Its `ShardLengths` (`sizes`, `lengths(shard)`) feed `BucketBatchSampler`; the shards last read stay cached.
    """

    def __init__(self, store: Path, cache: int = 2) -> None:
        index = read_index(store)
        if index is None:
            raise SateError(f"{store}: not a complete MT text store (index.json or a shard is missing, damaged or "
                            "of another size) or another store's (its index names another key); delete it, and `sate "
                            "train` builds it again")
        self.store = store
        self.sizes: list[int] = list(index["shards"])
        self.longest = int(index["longest"])
        self.stems = [Path(en).stem for en, _ in index["files"]]
        self._starts = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        self._cache: dict[int, dict[str, np.ndarray]] = {}
        self._cache_size = cache

    def _shard(self, shard: int) -> dict[str, np.ndarray]:
        if shard not in self._cache:
            if len(self._cache) >= self._cache_size:
                self._cache.pop(next(iter(self._cache)))
            path = self.store / f"shard-{shard:05d}.npz"
            try:
                with np.load(path, allow_pickle=False) as data:
                    self._cache[shard] = {name: data[name] for name in data.files}
            except (OSError, ValueError, KeyError) as err:
                raise SateError(f"{path}: unreadable MT text shard ({err}); delete {self.store} to rebuild it") \
                    from None
        return self._cache[shard]

    def lengths(self, shard: int) -> np.ndarray:
        data = self._shard(shard)
        return np.maximum(np.diff(data["src_offsets"]), np.diff(data["tgt_offsets"]))

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __getitem__(self, index: int) -> dict:
        shard = int(np.searchsorted(self._starts, index, side="right")) - 1
        data, k = self._shard(shard), index - int(self._starts[shard])
        src = data["src"][data["src_offsets"][k]:data["src_offsets"][k + 1]].astype(np.int64)
        tgt = data["tgt"][data["tgt_offsets"][k]:data["tgt_offsets"][k + 1]].astype(np.int64)
        return {"id": f"{self.stems[int(data['source'][k])]}_{int(data['index'][k])}", "src": torch.from_numpy(src),
                "tgt": torch.from_numpy(tgt)}
