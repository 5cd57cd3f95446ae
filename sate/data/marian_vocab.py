"""Marian's (OPUS-MT's) tokenisation through our token ids: what `MarianTokenizer` does, without transformers.

A Marian directory holds ``source.spm`` and ``target.spm`` (SentencePiece models of each language) and one
``vocab.json`` (piece -> id) shared by both sides. Marian's conventions, all kept here:

- the source is cut by ``source.spm``; each piece is looked up in vocab.json (``<unk>`` when absent) and
  ``</s>`` is appended; the target is cut by ``target.spm`` the same way (teacher forcing appends ``</s>``,
  `sate.models.decoder`);
- ids go back to text by dropping the special tokens (``</s>``, ``<unk>``, ``<pad>``), joining the pieces with
  ``target.spm`` and turning ``▁`` into spaces;
- Marian was trained on cased, punctuated text: the source side reads a manifest's ``src`` with sound tags such
  as ``(Applause)`` removed (nobody says them), never the lowercased ``src_norm``.

The CTC side of a SATE model with a Marian textual encoder (``ctc``) uses a subset of the source pieces:
``<blank>``, ``<unk>``, then every piece that ``source.spm`` gives the train transcripts, in Marian id order
(`sate vocab --marian DIR` writes it; `sate.models.hub.load` maps it to Marian ids for the soft adaptor). A CTC
head over all of Marian's ids would also cover the target language's pieces, which speech never contains
(BENCHMARKS.md measures what they cost).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import sentencepiece as spm

from sate import layout
from sate.data.manifest import TRAIN_SPLIT, read_manifest, read_text_lines
from sate.data.text import SOUND_TAG
from sate.data.tokens import BLANK, UNK, check_texts, token_ids
from sate.errors import SateError, one_line, shown
from sate.files import cache_hint, contents_digest, read_json, replace_together, require_file

FILES = ("source.spm", "target.spm", "vocab.json")
FOREIGN_SHARE = 0.05  # of a SentencePiece model's pieces, at most, that its Marian model's vocab.json may lack
CTC_TOKENS = layout.MARIAN_CTC_TOKENS
EOS, PAD = "</s>", "<pad>"
SIDES = ("source", "target", "ctc")
_SPACE = re.compile(r"\s+")


def marian_text(text: str) -> str:
    """A transcript as Marian reads it: cased and punctuated, sound tags removed, whitespace collapsed."""
    return _SPACE.sub(" ", SOUND_TAG.sub(" ", text)).strip()


def marian_pieces(directory: Path) -> list[str]:
    """vocab.json as a list indexed by Marian id; the ids must be 0..V-1 without gaps."""
    path = Path(directory) / "vocab.json"
    vocab = read_json(path)
    ids = sorted(vocab.values()) if all(isinstance(i, int) for i in vocab.values()) else None
    if ids != list(range(len(vocab))):
        raise SateError(f"{path}: the ids are not 0..{len(vocab) - 1}, each once")
    pieces = [""] * len(vocab)
    for piece, i in vocab.items():
        pieces[i] = piece
    for special in (EOS, UNK, PAD):
        if special not in vocab:
            raise SateError(f"{path}: no {special} token; is this a Marian vocabulary?")
    return pieces


def load_sentencepiece(path: Path) -> spm.SentencePieceProcessor:
    """A SentencePiece model file; a damaged or replaced one is one line naming it, not SentencePiece's traceback.
    Read by sate and handed over as bytes: SentencePiece takes its file name as UTF-8 text, and a data directory or
    pack whose name is not UTF-8 was a `TypeError: not a string` traceback in every command that loads one."""
    data = Path(path).read_bytes()
    again = "write it again with the command that made it (`sate vocab`, `sate pack`, or a fresh download)"
    if not data:  # SentencePiece takes no bytes for no model: every text encoded to nothing, exit 0
        raise SateError(f"{path}: the file is empty (0 bytes), not a SentencePiece model; {again}")
    try:
        return spm.SentencePieceProcessor(model_proto=data)
    except (RuntimeError, OSError):  # "Internal: could not parse ModelProto"
        raise SateError(f"{path}: not a readable SentencePiece model (damaged or replaced); {again}") from None


class MarianVocab:
    """One side of a Marian directory: ``source`` and ``target`` use Marian's ids, ``ctc`` the CTC subset's.

    Offers what `sate.data.vocab.Vocabulary` offers (``tokens``, ``encode``, ``encode_many``, ``decode``,
    ``prepare``, ``manifest_source``), so datasets, training and decoding take either.
    """

    blank_id = 0  # ctc only

    def __init__(self, directory: str | Path, side: str, ctc_tokens: Sequence[str] | None = None) -> None:
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {side!r}")
        self.directory, self.side = Path(directory), side
        for name in FILES:
            require_file(self.directory / name, f"a Marian model's {name}",
                         f"{self.directory / name} is missing: a Marian directory holds {', '.join(FILES)}")
        self.pieces = marian_pieces(self.directory)
        self.ids = {piece: i for i, piece in enumerate(self.pieces)}
        self.eos_id, self.unk_id, self.pad_id = self.ids[EOS], self.ids[UNK], self.ids[PAD]
        spm_name = "target.spm" if side == "target" else "source.spm"
        self.sp = load_sentencepiece(self.directory / spm_name)
        self._check_pieces(self.directory / spm_name)
        self.special = {self.eos_id, self.unk_id, self.pad_id}
        if side == "ctc":
            if ctc_tokens is None:
                ctc_tokens = read_text_lines(self.directory / CTC_TOKENS)
            if list(ctc_tokens[:2]) != [BLANK, UNK] or any(t not in self.ids for t in ctc_tokens[1:]):
                raise SateError(f"{self.directory / CTC_TOKENS}: must be {BLANK}, {UNK}, then Marian pieces "
                                "(run sate vocab --marian DIR)")
            self.tokens = list(ctc_tokens)
            self.ctc_ids = {piece: i for i, piece in enumerate(self.tokens)}
        else:
            self.tokens = list(self.pieces)

    def _check_pieces(self, path: Path) -> None:
        """A SentencePiece model whose pieces are mostly not in vocab.json is another model's (a data directory's
        spm_src.model copied as source.spm): each piece it cut was looked up as <unk>, and `sate vocab --marian` took
        it, exit 0 (twenty-second hostile pass). A Marian model's vocab.json holds every piece of both its models."""
        sp = self.sp
        pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not (sp.is_control(i) or sp.is_unknown(i))]
        foreign = [piece for piece in pieces if piece not in self.ids]
        if len(foreign) > FOREIGN_SHARE * len(pieces):
            raise SateError(f"{path}: {len(foreign)} of its {len(pieces)} pieces are not in "
                            f"{self.directory / 'vocab.json'} (e.g. {shown(foreign[0])}): the SentencePiece model of "
                            "another model, not this Marian model's")

    @classmethod
    def load(cls, data_dir: str | Path, side: str) -> MarianVocab:
        """The side of the Marian vocabulary `sate vocab --marian` copied into ``DATA/marian``."""
        return cls(Path(data_dir) / "marian", side)

    def __len__(self) -> int:
        return len(self.tokens)

    def prepare(self, text: str) -> str:
        """Raw text as this vocabulary's model reads it."""
        return marian_text(text)

    def manifest_source(self, row: dict) -> str:
        """A manifest row's source text for this vocabulary: its cased ``src``."""
        return marian_text(row["src"])

    def _ids(self, pieces: list[str]) -> list[int]:
        if self.side == "ctc":
            unk = self.ctc_ids[UNK]
            return [self.ctc_ids.get(p, unk) for p in pieces]
        ids = [self.ids.get(p, self.unk_id) for p in pieces]
        return ids + [self.eos_id] if self.side == "source" else ids

    def encode(self, text: str) -> list[int]:
        """Token ids: Marian's (source: ``</s>`` last, as Marian reads its source) or the CTC subset's."""
        check_texts(text)
        return self._ids(self.sp.encode(text, out_type=str))

    def encode_many(self, texts: list[str]) -> list[np.ndarray]:
        """`encode` of many sentences, one SentencePiece call."""
        check_texts(texts, many=True)
        return [np.asarray(self._ids(p), dtype=np.int64) for p in self.sp.encode(texts, out_type=str)]

    def decode(self, ids: Iterable[int]) -> str:
        """Text of token ids; special tokens (and ``<blank>`` on the CTC side) are dropped."""
        pieces = []
        for i in token_ids(ids, len(self.tokens)):
            piece = self.tokens[i]
            if self.side == "ctc":
                if i != self.blank_id and piece != UNK:
                    pieces.append(piece)
            elif i not in self.special:
                pieces.append(piece)
        return self.sp.decode_pieces(pieces).replace("\u2581", " ").strip()


# ---------------------------------------------------------------------------------------------- sate vocab --marian


def ctc_subset(vocab: MarianVocab, transcripts: list[str]) -> tuple[list[str], int]:
    """The CTC token list (``<blank>``, ``<unk>``, the pieces of `transcripts` in Marian id order) and how many
    pieces ``source.spm`` can emit that Marian has (the larger subset it could have been)."""
    seen = {p for pieces in vocab.sp.encode(transcripts, out_type=str) for p in pieces}
    specials = {EOS, UNK, PAD}
    kept = sorted((p for p in seen if p in vocab.ids and p not in specials), key=vocab.ids.__getitem__)
    sp = vocab.sp
    emittable = {sp.id_to_piece(i) for i in range(sp.get_piece_size()) if not (sp.is_control(i) or sp.is_unknown(i))}
    return [BLANK, UNK, *kept], len((emittable & set(vocab.ids)) - specials)


def check_marian_dir(hub_dir: Path) -> list[str]:
    """A Marian directory's pieces, or a `SateError` naming what is missing or inconsistent. `sate vocab` calls
    it before it touches the data directory, so a bad --marian leaves the old vocabulary usable."""
    for name in FILES:
        # a Hugging Face cache's folder of the model: "source.spm is missing" alone sent the user to download a model
        # that was there, a level down (30th hostile pass)
        require_file(hub_dir / name, f"a Marian model's {name}",
                     lambda name=name: f"--marian {hub_dir}: {name} is missing (a Marian directory holds "
                                       f"{', '.join(FILES)}){cache_hint(hub_dir)}")
    pieces = marian_pieces(hub_dir)
    config = hub_dir / "config.json"
    if config.is_file() and read_json(config).get("vocab_size") != len(pieces):
        raise SateError(f"{config}: vocab_size {read_json(config).get('vocab_size')} but {hub_dir / 'vocab.json'} "
                        f"has {len(pieces)} pieces")
    return pieces


def write_marian_vocab(data_dir: Path, hub_dir: Path, meta: dict, record: Path) -> None:
    """Copy a Marian directory's tokenisation into ``DATA/marian`` with its CTC subset, and write ``record``
    (`meta`, the data directory's vocab.json) with them: all written before any is replaced, so a full disk or a
    bad --marian leaves the old vocabulary and its record as they were."""
    pieces = check_marian_dir(hub_dir)
    target = data_dir / "marian"
    vocab = MarianVocab(hub_dir, "source")  # the files copied below, read where they are
    MarianVocab(hub_dir, "target")  # read too: a damaged target.spm was copied, and `sate vocab` said all was well
    rows = read_manifest(data_dir / f"{TRAIN_SPLIT}.jsonl")
    tokens, emittable = ctc_subset(vocab, [vocab.manifest_source(row) for row in rows])
    contents = {target / name: (hub_dir / name).read_bytes() for name in FILES}
    contents[target / CTC_TOKENS] = "".join(f"{token}\n" for token in tokens).encode()
    meta = {**meta, "outputs": contents_digest(contents[target / name] for name in (*FILES, CTC_TOKENS))}
    replace_together(contents, record, json.dumps(meta) + "\n")
    print(f"marian: {one_line(str(hub_dir))} -> {one_line(str(target))}; CTC over {len(tokens)} tokens: <blank>, "
          f"<unk> and the {len(tokens) - 2} "
          f"source pieces of the train transcripts (source.spm can emit {emittable}; Marian has {len(pieces)} ids)")
