"""Train SentencePiece unigram models and write ESPnet-order token lists.

The source model is trained on train ``src_norm`` (the text CTC and the MT source use), the
target model on train ``tgt``; ``--joint SIZE`` trains one model on both and writes it under
both names. Extra parallel MT text (``--mt-text EN TGT``, repeatable) is added to the training
text, its English side normalised like ``src_norm``. ``--src-splits SPLIT...`` adds more manifests'
``src_norm`` to the source side only (extra ASR corpora such as LibriSpeech, whose words CTC must
spell), after train's and the MT text's, in the order given. Token lists put ``<blank>`` at 0 and
``<unk>`` at 1, then the pieces, then ``<sos/eos>`` last, so the CTC blank and the MT source
embedding share one index space (the SATE adaptor multiplies CTC posteriors by that embedding).
A re-run with the same inputs and sizes does nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from itertools import chain, islice
from pathlib import Path

import numpy as np
import sentencepiece as spm

from sate import layout
from sate.data.features import SPEED_SPLIT
from sate.data.manifest import (
    TRAIN_SPLIT,
    check_split_names,
    inside_data_directory,
    missing_split,
    read_manifest,
    read_text_lines,
    require_translations,
)
from sate.data.marian_vocab import (
    CTC_TOKENS,
    FILES,
    MarianVocab,
    load_sentencepiece,
    write_marian_vocab,
)
from sate.data.parallel_text import (
    ORDER_LINES,
    OTHER_LANGUAGE_SHARE,
    check_pair_order,
    check_pairs,
    check_target_language,
    corpus_folder,
    model_target,
    not_a_text_file,
    read_pairs,
    reservoir_sample,
    shared_words,
    unspaced,
    words_of,
)
from sate.data.spm_child import FAILED
from sate.data.text import normalize_source
from sate.data.tokens import BLANK, SOS_EOS, check_texts, token_ids
from sate.errors import SateError, one_line
from sate.files import (
    atomic_write_text,
    contents_digest,
    exclusive,
    file_sha256,
    near_data_directory,
    not_a_directory,
    not_a_file,
    read_record,
    real_path,
    replace_together,
    require_file,
)
from sate.numbers import whole_number
from sate.targets import check_output, check_own_files, dir_name, read_name

SIDES = ("src", "tgt")
VOCAB_KINDS = ("spm", "marian")  # DATA/vocab.json "kind": which vocabulary the last `sate vocab` wrote
MAX_VOCAB = 1_000_000  # pieces of one SentencePiece model
_OPTION = {"src": "--src-size", "tgt": "--tgt-size", "joint": "--joint"}
DEFAULT_SAMPLE_SIZE = 300_000  # sentence pairs: plenty for 10k-piece models; memory grows with it (BENCHMARKS.md)


class Vocabulary:
    """A SentencePiece model seen through an ESPnet-order token list.

    Token ids are SentencePiece ids shifted by one (``<blank>`` takes 0), with ``<sos/eos>``
    appended, so ``len(vocab)`` is the model's piece count + 2.
    """

    blank_id = 0
    unk_id = 1

    def __init__(self, spm_model: str | Path, token_list: str | Path) -> None:
        spm_model, token_list = Path(spm_model), Path(token_list)
        require_file(spm_model, "a SentencePiece model",
                     lambda: inside_data_directory(spm_model.parent) or
                     f"{spm_model}: SentencePiece model is missing (run `sate vocab`)")
        self.sp = load_sentencepiece(spm_model)
        # a named pipe there was read as a stream: `sate train` waited for a writer for ever (fifteenth hostile pass,
        # the reads harness's wider run); a missing list is named by the read as before
        not_a_file(token_list, "a token list of `sate vocab`")
        self.tokens = read_text_lines(token_list)
        expected = token_list_for(self.sp)
        if self.tokens != expected:
            line = next((i + 1 for i, (a, b) in enumerate(zip(self.tokens, expected, strict=False)) if a != b),
                        min(len(self.tokens), len(expected)) + 1)
            raise SateError(f"{token_list}:{line}: token list does not match {spm_model} "
                            f"({len(self.tokens)} tokens, the model implies {len(expected)})")
        self.sos_eos_id = len(self.tokens) - 1
        self.clean = cleaned(self.sp)  # cleaned `as_nmt_nfkc`, as the model's text was before training


    @classmethod
    def load(cls, data_dir: str | Path, side: str) -> Vocabulary:
        """The ``src`` or ``tgt`` vocabulary written by ``sate vocab`` into ``data_dir``."""
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, got {side!r}")
        data_dir = Path(data_dir)
        return cls(data_dir / layout.spm_model(side), data_dir / layout.token_list(side))

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no ``<sos/eos>``: the model adds it)."""
        check_texts(text)
        return [i + 1 for i in self.sp.encode(as_nmt_nfkc(text) if self.clean else text)]

    def encode_many(self, texts: list[str]) -> list[np.ndarray]:
        """`encode` of many sentences in one SentencePiece call (it batches in C++)."""
        check_texts(texts, many=True)
        if self.clean:
            texts = [as_nmt_nfkc(text) for text in texts]
        return [np.asarray(ids, dtype=np.int64) + 1 for ids in self.sp.encode(texts)]

    def prepare(self, text: str) -> str:
        """Raw English as the source model reads it: normalised like ``src_norm`` (a target vocabulary never
        prepares text: translations are encoded as they are)."""
        return normalize_source(text)

    def manifest_source(self, row: dict) -> str:
        """A manifest row's source text for this vocabulary: its ``src_norm``."""
        return row["src_norm"]

    def decode(self, ids: Iterable[int]) -> str:
        """Text of token ids; ``<blank>`` and ``<sos/eos>`` are skipped."""
        pieces = []
        for i in token_ids(ids, len(self.tokens)):
            if i not in (self.blank_id, self.sos_eos_id):
                pieces.append(i - 1)
        return self.sp.decode(pieces)


def vocabulary_kind(directory: str | Path) -> str:
    """``spm`` (our SentencePiece models) or ``marian`` (a Marian model's): what `sate vocab` wrote last."""
    owner = inside_data_directory(Path(directory))  # DATA/fbank: "spm_src.model is missing (run `sate vocab`)"
    if owner is not None:
        raise SateError(owner)
    # None when missing or damaged (not UTF-8, not JSON)
    meta = read_record(Path(directory) / layout.VOCAB_META, "`sate vocab`")
    kind = meta.get("kind", "spm") if isinstance(meta, dict) else "spm"
    return kind if isinstance(kind, str) and kind in VOCAB_KINDS else "spm"


def _kind(directory: str | Path, kind: str | None) -> str:
    """``kind``, else what `sate vocab` wrote in ``directory``, which must be a directory."""
    if not Path(directory).is_dir():  # not "run sate vocab": a relative data.dir read from another directory
        raise SateError(f"{directory}: {not_a_directory(Path(directory))}")
    return kind or vocabulary_kind(directory)


def load_vocabularies(directory: str | Path, task: str, kind: str | None = None) -> tuple:
    """The (source, target) vocabularies of a data or pack directory for a model of `task`.

    With a Marian vocabulary, an MT model reads Marian's ids on both sides; ASR and ST models have CTC over
    the subset of source pieces (`sate.data.marian_vocab`).
    """
    kind = _kind(directory, kind)
    source = load_source_vocabulary(directory, task, kind)
    return source, MarianVocab.load(directory, "target") if kind == "marian" else Vocabulary.load(directory, "tgt")


def load_source_vocabulary(directory: str | Path, task: str, kind: str | None = None) -> Vocabulary | MarianVocab:
    """The source vocabulary alone (a model of `task`'s: CTC's for ASR and ST), for what reads no translation: a
    transcript-only corpus has no target vocabulary."""
    if _kind(directory, kind) == "marian":
        return MarianVocab.load(directory, "source" if task == "mt" else "ctc")
    return Vocabulary.load(directory, "src")


def target_ids(manifest: str | Path, rows: list[dict], tgt_vocab: Vocabulary | None) -> list[np.ndarray]:
    """Each row's translation as ids; with no target vocabulary (ASR: none needed) every row's are empty, so a
    transcript-only split (``tgt`` null) trains ASR, and only ASR."""
    if tgt_vocab is None:
        return [np.zeros(0, dtype=np.int64) for _ in rows]
    require_translations(manifest, rows)
    return tgt_vocab.encode_many([row["tgt"] for row in rows])


def token_list_for(sp) -> list[str]:
    """ESPnet order: ``<blank>``, the model's pieces (``<unk>`` first), ``<sos/eos>``."""
    return [BLANK] + [sp.id_to_piece(i) for i in range(sp.get_piece_size())] + [SOS_EOS]


# ----------------------------------------------------------------------------------------------
# Training


def training_text(manifest_rows: Iterable[dict], mt_files: Sequence[tuple[Path, Path]],
                  sample_size: int) -> tuple[list[str], list[str]]:
    """Source (``src_norm`` form) and target sentences that train the vocabularies: the manifest's pairs, then
    the MT text's, streamed; beyond `sample_size` pairs a uniform sample (seeded), so memory stays bounded."""
    check_pairs(mt_files)  # a file pair of different lengths fails before minutes of reading
    pairs = chain(((row["src_norm"], row["tgt"]) for row in manifest_rows),
                  ((normalize_source(pair.en), pair.tgt) for pair in read_pairs(mt_files)))
    sample = reservoir_sample(pairs, sample_size, seed=1)
    return [src for src, _ in sample], [tgt for _, tgt in sample]


def _in_our_words(reason: str, option: str) -> str:
    """SentencePiece's reason, its advice in sate's options: "Increase vocab_size or decrease character_coverage with
    --character_coverage option" named two options `sate vocab` does not have (twentieth hostile pass). The
    characters' count itself is a size that trains: "above N" sent a small text's user to N + 1, "too high"
    (review29o)."""
    small = re.fullmatch(r"Vocabulary size is smaller than required_chars\. (\d+) vs (\d+)\..*", reason)
    if small is not None:
        return (f"the text holds {small[2]} distinct characters, each a piece of its own: give {option} "
                f"{small[2]} or more")
    return reason


def normalization_rule(sentences: Sequence[str]) -> str:
    """SentencePiece's normalisation for a side's training text. Its own NFKC folded MuST-C En-Zh's full-width
    punctuation into ASCII: the model wrote "," "?" ":" for "，" "？" "：", and a perfect translation scored BLEU 43.7
    against its reference (28th hostile pass); a text of an unspaced script (Chinese, Japanese) is trained with
    ``identity``, so the model writes what it read. Other text keeps ``nmt_nfkc``: a German TED text with "…" or a
    no-break space in a few lines in a hundred trains as before (a share of NFKC-changed lines switched it:
    no-break spaces and soft hyphens became pieces, tabs <unk>). Its first `ORDER_LINES` lines tell, in a fraction of
    a second. A text that joins its words' parts with a zero-width non-joiner (Persian, MuST-C's En-Fa:
    "می\\u200cخواهم") in a tenth of its lines or more is trained with plain ``nfkc``: ``nmt_nfkc`` read U+200C as a
    space, so the model wrote "می خواهم", two words where the reference holds one (32nd hostile pass); what else
    ``nmt_nfkc`` reads as a space or drops is read so first (`AS_NMT_NFKC`)."""
    lines = sentences[:ORDER_LINES]
    if unspaced(lines):
        return "identity"
    return "nfkc" if 10 * sum(map(joined, lines)) >= max(len(lines), 1) else "nmt_nfkc"


# A zero-width non-joiner after a letter (and the marks on it: Persian's kasra, "کتابِ\u200cها") and before one, as
# Persian writes its words' parts (nmt_nfkc keeps ZWJ). The marks between are checked by category: `\w` is no mark,
# so a joiner after one was not counted, and a text whose joined words end in a vowel sign trained with nmt_nfkc.
JOINED = re.compile(r"\w([^\w\s\u200c]*)\u200c(?=\w)")


def joined(line: str) -> bool:
    """Does ``line`` hold a zero-width non-joiner inside a word (`JOINED`)?"""
    return any(all(unicodedata.category(ch)[0] == "M" for ch in match[1]) for match in JOINED.finditer(line))


# What SentencePiece's nmt_nfkc reads as a space, or drops, where its plain nfkc keeps it (every code point compared,
# sentencepiece 0.2.0), less U+200C, the one a Persian text needs kept: a text trained with plain nfkc (or identity) is
# cleaned of them before training and before each encoding, as nmt_nfkc would, so that a tab inside a Persian (or
# Chinese) translation is a space, not a character SentencePiece makes no piece of (<unk>, " ⁇ " in the output), and a
# stray control character, U+200B, a bidi mark, a byte-order mark or U+FFFD is not a piece of its own (review32d).
# U+FF5E, which nfkc folds to "~" and nmt_nfkc keeps, is the one difference left.
NMT_SPACES = "\t\n\x0c\r\u1680\u200b\u200e\u200f\u2028\u2029\u2581\ufeff\ufffd"
NMT_DROPPED = "".join(map(chr, [*range(0x01, 0x09), 0x0b, *range(0x0e, 0x20), 0x7f, 0x8f, 0x9f]))
AS_NMT_NFKC = str.maketrans({**dict.fromkeys(NMT_SPACES, " "), **dict.fromkeys(NMT_DROPPED)})
NMT_CLEANED = re.compile(f"[{re.escape(NMT_SPACES + NMT_DROPPED)}]")


def as_nmt_nfkc(text: str) -> str:
    """``text`` with `AS_NMT_NFKC` applied, where it holds one of those characters: a translate of every line made
    a Persian vocabulary's encode_many 20% slower, for the few lines that hold one (review32z)."""
    return text.translate(AS_NMT_NFKC) if NMT_CLEANED.search(text) else text


def cleaned(sp: spm.SentencePieceProcessor) -> bool:
    """Is the model's text cleaned `as_nmt_nfkc` (before training and each encoding)? So is every rule's but
    nmt_nfkc's (which reads U+200C as a space, as the others do not): plain ``nfkc`` (a Persian text's) and
    ``identity`` (Chinese's, Japanese's: a tab in a translation was a character of no piece, `<unk>`, and " ⁇ "
    where the model wrote it, 33rd hostile pass)."""
    return "\u200c" in sp.normalize("a\u200cb")


def target_rule(rows: Iterable[dict], mt_files: Sequence[tuple[Path, Path]]) -> str:
    """The target side's `normalization_rule`, of the first `ORDER_LINES` translations of the text SentencePiece's is
    sampled from: the manifest's, then the MT text's. `folding_note` asks it the same: it read the manifest alone, so
    a Persian corpus whose MT text spaces its words' parts trained with nmt_nfkc, was called older at every run, and
    its advice, followed, trained the same model (review32d)."""
    texts = chain((str(row.get("tgt") or "") for row in rows), (pair.tgt for pair in read_pairs(mt_files)))
    return normalization_rule(list(islice(texts, ORDER_LINES)))


def folding_note(data_dir: Path, manifest: Path, mt_files: Sequence[tuple[Path, Path]] = ()) -> str | None:
    """A note where the target vocabulary, up to date, folds full-width punctuation that its text, Chinese or
    Japanese, is written with: `sate vocab` before the 28th pass trained every text with SentencePiece's NFKC, and
    its record holds no rule, so such a data directory stayed "up to date" with a model that writes "," for "，"
    (review28z); so with a Persian text's zero-width non-joiners, before the 32nd. It is not retrained unasked:
    experiments trained on it read it. The rule is `target_rule`'s, of the manifest and ``mt_files``, as training's."""
    rows = []
    try:
        with manifest.open(encoding="utf-8") as lines:
            for line in islice(lines, ORDER_LINES):
                row = json.loads(line) if line.strip() else {}
                rows.append(row if isinstance(row, dict) else {})
        rule = target_rule(rows, mt_files)
        if rule == "nmt_nfkc":
            return None
        model = data_dir / layout.spm_model("tgt")
        probe, kept = ("，", "，") if rule == "identity" else ("a\u200cb", "\u200c")
        if kept in spm.SentencePieceProcessor(model_file=str(model)).normalize(probe):
            return None
    except (OSError, ValueError, RuntimeError, SateError):  # a courtesy: an unreadable file says nothing here
        return None
    what, before = (("full-width punctuation ('，' '？' '：') as ASCII, which its Chinese or Japanese references keep",
                     "twenty-eighth") if rule == "identity" else
                    ("a zero-width non-joiner inside a word (U+200C, as Persian writes its words' parts) as a space, "
                     "which its references keep", "thirty-second"))
    return (f"note: {one_line(str(model))} writes {what} ('sate vocab' before the {before} pass folded it); remove "
            f"{one_line(str(data_dir / layout.VOCAB_META))} and run sate vocab again to train one that keeps it, "
            "then train again the models that read the old one")


# SentencePiece's threads. Its model depends on their count (the sentences are split in that many parts), not on the
# cores that run them: with one thread a core, one corpus gave one vocabulary on a 1-core machine and another on a
# 2-core one, so models, scores and a moved data directory's resume differed from machine to machine (33rd hostile
# pass). A fixed count gives the same bytes everywhere; 8 costs a 2-core machine 3% over 2 threads.
SPM_THREADS = 8


def train_spm(sentences: Sequence[str], size: int, option: str, sampled: str = "", rule: str = "nmt_nfkc") -> bytes:
    """A unigram model with ``<unk>`` at 0 and no bos/eos/pad pieces (the token list adds ours), trained in a child
    process (`sate.data.spm_child`) so that a signal ends the command at once. ``sampled``: what a failure adds when
    the text was a sample (`--sample-size 3` failed naming only the size option, fifteenth hostile pass); ``rule``:
    SentencePiece's normalisation (`normalization_rule`)."""
    if rule != "nmt_nfkc":  # as `Vocabulary` encodes
        sentences = [as_nmt_nfkc(s) for s in sentences]
    sentences = [s for s in sentences if s.strip()]
    if not sentences:
        raise SateError(f"{option}: no training text")
    feed = "\n".join(chain([json.dumps({"size": size, "threads": SPM_THREADS, "normalization": rule})],
                           map(json.dumps, sentences))).encode()
    package_root = str(Path(__file__).resolve().parents[2])  # where `sate` is, for the child's `-m`
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    child = start_trainer([sys.executable, "-m", "sate.data.spm_child", str(os.getpid())], env)
    try:
        model, err = child.communicate(feed)
    finally:  # a signal (its handler raising here) or any error: the training goes with the command
        if child.poll() is None:
            child.kill()
            child.wait()
    reason = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
    if child.returncode == FAILED:
        raise SateError(f"{option} {size}: SentencePiece training failed: {_in_our_words(reason[0], option)}{sampled}")
    if child.returncode != 0:
        cause = "killed: out of memory?" if child.returncode == -signal.SIGKILL else reason[0] or "no reason given"
        raise SateError(f"{option} {size}: SentencePiece training ended without a model (its process exited with "
                        f"status {child.returncode}: {cause})")
    pieces = set(token_list_for(spm.SentencePieceProcessor(model_proto=model))[1:-1])
    if BLANK in pieces or SOS_EOS in pieces:
        raise SateError(f"{option}: the training text contains the reserved token {BLANK} or {SOS_EOS}")
    return model


def start_trainer(command: list[str], env: dict[str, str]) -> subprocess.Popen:
    """The training process, its three streams piped (a name of its own so that tests can see it start)."""
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def _digest(paths: Iterable[Path], legacy: bool = False) -> str:
    """The inputs' digest, of their contents (each file's length first), read in blocks (MT text may be gigabytes);
    ``legacy``: the one a record written before the 33rd pass holds, of their real paths and contents. The paths made
    a data directory copied or moved (`cp -r data /scratch/`) "not up to date": `sate vocab` trained its vocabularies
    again (on another machine, then, another model: `SPM_THREADS`), so the experiments trained on the old one were
    refused at their resume, the old models gone (33rd hostile pass)."""
    h = hashlib.sha256()
    for path in paths:
        if legacy:
            h.update(os.fsencode(real_path(path)))  # a name that is not UTF-8 as its bytes
        with open(path, "rb") as f:
            if not legacy:
                h.update(f"{os.fstat(f.fileno()).st_size}\n".encode())
            while block := f.read(1 << 20):
                h.update(block)
    return h.hexdigest()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=dir_name, required=True, help="data directory written by `sate prep`")
    parser.add_argument("--src-size", type=whole_number, default=None,
                        help="source (src_norm) SentencePiece vocabulary size")
    parser.add_argument("--tgt-size", type=whole_number, default=None, help="target SentencePiece vocabulary size")
    parser.add_argument("--joint", type=whole_number, default=None, metavar="SIZE",
                        help="train one model of SIZE pieces on source and target instead")
    parser.add_argument("--mt-text", nargs=2, action="append", type=read_name, default=[], metavar=("EN", "TGT"),
                        help="extra parallel MT text files (plain or gzip, any size) added to the training text "
                             "(repeatable)")
    parser.add_argument("--src-splits", nargs="+", action="extend", default=[], metavar="SPLIT",
                        help="more splits of --data (e.g. extra ASR corpora) whose src_norm joins train's in the "
                             "source (or joint) training text")
    parser.add_argument("--sample-size", type=whole_number, default=DEFAULT_SAMPLE_SIZE, metavar="PAIRS",
                        help="at most this many sentence pairs train the vocabularies: a uniform sample (seeded) of "
                             "the train manifest and the MT text when they hold more")
    parser.add_argument("--marian", type=read_name, default=None, metavar="DIR",
                        help="instead: use the vocabulary of the downloaded Marian (OPUS-MT) model in DIR, with CTC "
                             "over the source pieces of the train transcripts (docs/models.md)")


# The names of MuST-C's, LibriSpeech's and Augmented LibriSpeech's evaluation splits (dev, tst-COMMON, tst-HE,
# dev-clean, test-other, test): `vocab --src-splits tst-COMMON` trained the source vocabulary on the test set's
# transcripts, exit 0, without a word (24th hostile pass). Extra corpora (train-clean-100, a Kaldi `kaldi`) are not.
EVALUATION_SPLIT = re.compile(r"(dev|tst|test)([-_.].*)?")


def source_manifests(data_dir: Path, splits: list[str]) -> list[Path]:
    """The manifests of ``--src-splits``: each present, none twice, train not among them (it is always read)."""
    if len(set(splits)) != len(splits) or TRAIN_SPLIT in splits:
        raise SateError(f"--src-splits {' '.join(splits)}: name each split once, and not {TRAIN_SPLIT} (always read)")
    check_split_names(splits, "--src-splits")  # `../other/dev` read another directory's manifest
    if SPEED_SPLIT in splits:  # train's transcripts twice more (its speed copies), exit 0 (25th hostile pass)
        raise SateError(f"--src-splits {' '.join(splits)}: {SPEED_SPLIT} is {TRAIN_SPLIT}'s speed copies (`sate "
                        f"features --speed-perturb`), whose transcripts {TRAIN_SPLIT} already gives; leave it out")
    paths = [data_dir / f"{split}.jsonl" for split in splits]
    for path in paths:
        require_file(path, "a manifest",
                     missing_split(path, f"--src-splits: {path} is missing (run `sate prep` for it first)"))
    held_out = [split for split in splits if EVALUATION_SPLIT.fullmatch(split)]
    if held_out:  # a note: dev transcripts in the vocabulary may be meant
        print(f"note: --src-splits {' '.join(held_out)}: an evaluation split by its name; its transcripts train the "
              "source vocabulary, so its words become known pieces before it is scored (--src-splits is for extra "
              "ASR corpora)", file=sys.stderr)
    return paths


def _up_to_date(meta_path: Path, meta: dict, outputs: list[Path], inputs: Sequence[Path]) -> bool:
    """Are the outputs there as they were written (their digest, which the record keeps), and does the record say
    these inputs made them? A damaged record (cut short, not UTF-8, not JSON) says no; so does an output edited or
    damaged since (a token list with a line added, a model replaced), which its readers refused, saying to run `sate
    vocab`, which had called it up to date. The train manifest's own digest is left out: "inputs" holds it, and a
    record written before it was kept is no less up to date."""
    if not all(p.is_file() for p in outputs):
        return False
    record = read_record(meta_path, "`sate vocab`")
    if not isinstance(record, dict):
        return False
    made = {k: v for k, v in record.items() if k != TRAIN_DIGEST}
    legacy = made.get("inputs") != meta["inputs"] and made.get("inputs") == _digest(inputs, legacy=True)
    if legacy:
        made["inputs"] = meta["inputs"]  # a record of the inputs' paths and contents (`_digest`), read again only so
    if made != {**meta, "outputs": contents_digest(p.read_bytes() for p in outputs)}:
        return False
    if legacy:
        _upgrade(meta_path, {**record, "inputs": meta["inputs"]})
    return True


def _upgrade(meta_path: Path, record: dict) -> None:
    """Write ``record`` (one of the old digest, up to date where it was written) with the inputs' new digest, so that
    the data directory moved later is still up to date and its inputs are hashed once a run: kept as it was, every
    data directory made before the 33rd pass trained its vocabularies again after a move (review33m). Atomic; a
    record that cannot be written (a read-only data directory) is left as it was, still up to date here."""
    try:
        atomic_write_text(meta_path, json.dumps(record) + "\n")
    except OSError:
        pass


# vocab.json's digest of the train manifest the vocabularies were made from, its contents alone (a data directory
# moved keeps it), for `sate train` to tell one `sate prep` wrote again since
TRAIN_DIGEST = "train"


def made_from_another_train(data_dir: Path) -> str | None:
    """A note where DATA/train.jsonl is not the manifest `sate vocab` made DATA's vocabularies from: `sate prep`
    into a data directory again (another corpus, another target language), then `sate features` and `sate train`
    without `sate vocab`, trained on the new text with the old vocabularies without a word."""
    record = read_record(data_dir / layout.VOCAB_META, "`sate vocab`")
    made = record.get(TRAIN_DIGEST) if isinstance(record, dict) else None
    manifest = data_dir / f"{TRAIN_SPLIT}.jsonl"
    if not isinstance(made, str) or not manifest.is_file() or file_sha256(manifest) == made:
        return None
    return (f"note: {manifest} is not the manifest the vocabularies of {data_dir} were made from (`sate prep` wrote "
            "it again since): if it holds other text now (another corpus or target language), run `sate vocab` "
            "again")


def check_near_data(data_dir: Path) -> None:
    """A folder next to the data directory given for it (its fbank/, the folder holding it, a corpus) is named for
    what it is: it was told that DIR/train.jsonl was missing, and to run `sate prep` into it."""
    near = near_data_directory(data_dir) if data_dir.is_dir() else None
    if near is not None:
        raise SateError(f"--data {data_dir}: {near}")


# Pieces a word of the train split's translations that a Marian model's target.spm cuts, against its English
# source.spm's: its own language's words are cut into far fewer (the tests' tiny German model over German: 0.66 of
# the English one's), another language's into about as many (their tiny French one: 0.91). Not measured on real
# opus-mt models (none here): between the two bounds it cannot tell, a note.
MARIAN_OWN_LANGUAGE = 0.75
MARIAN_OTHER_LANGUAGE = 0.9


def _pieces_a_word(hub: Path, rows: list[dict]) -> tuple[float, float] | None:
    """Pieces a word type of the translations (``rows``' first ORDER_LINES) under the model's target.spm and its
    source.spm, or None where that cannot tell: too few words (20), a tokeniser missing, unreadable, or the same
    model on both sides."""
    words = sorted(words_of((str(row.get("tgt") or "") for row in rows[:ORDER_LINES]), lower=False))
    files = [hub / name for name in ("target.spm", "source.spm")]
    if len(words) < 20 or not all(path.is_file() for path in files) or len({p.read_bytes() for p in files}) < 2:
        return None
    try:
        target, source = (load_sentencepiece(path) for path in files)
    except SateError:  # `check_marian_dir` names it when the vocabulary is copied
        return None
    pieces = [sum(len(sp.encode(word, out_type=str)) for word in words) / len(words) for sp in (target, source)]
    return pieces[0], pieces[1]


def check_marian_pair(hub: Path, manifest: Path) -> None:
    """Refuse a Marian model named for another target language than the train split's corpus where the words agree:
    `sate vocab --marian opus-mt-en-fr` over an En-De data directory took the French model's vocabularies (its
    target.spm cut the German references into French pieces), exit 0 (24th hostile pass). Told by the names (the hub
    folder, or a folder above it such as the hub cache's models--Helsinki-NLP--opus-mt-en-fr, and the audio's
    folders), then by the words: target.spm cuts the train split's translations into about as many pieces a word as
    the English source.spm does, so they are not its language (refused); into far fewer, they are (the audio's folders
    are real paths, which a talk linked to another pair's copy makes the other pair's: it passes); in between, or
    too few words to tell, a note (fix24d: it was a note always)."""
    # the innermost folder that names a model decides, a model of several languages (`-en-mul`) included: a folder
    # above it (`opus-mt-en-all/opus-mt-en-de`) names no other
    model = next((lang for is_model, lang in map(model_target, reversed(real_path(hub).parts)) if is_model), None)
    if model is None:
        return
    rows = read_manifest(manifest)
    found = corpus_folder(rows)
    if found is None or found[0] == model:
        return
    lang, folder = found
    pieces = _pieces_a_word(hub, rows)
    if pieces is not None and pieces[0] < MARIAN_OWN_LANGUAGE * pieces[1]:
        return  # the translations are the model's language, whatever the folders say
    line = (f"--marian {one_line(str(hub))}: an English-to-{model} model by its name, and {one_line(str(manifest))} "
            f"is en-{lang} (by its audio's folder {one_line(str(folder))})")
    if pieces is not None and pieces[0] >= MARIAN_OTHER_LANGUAGE * pieces[1]:
        raise SateError(f"{line}, and its target.spm cuts the translations into about as many pieces a word "
                        f"({pieces[0]:.2f}) as its English source.spm ({pieces[1]:.2f}): they are not its language; "
                        f"give the opus-mt-en-{lang} model")
    print(f"note: {line}: if its translations are {lang}, give the opus-mt-en-{lang} model", file=sys.stderr)


def no_train(manifest: Path, marian: bool = False) -> Callable[[], str]:
    """For `require_file`: a data directory without ``train.jsonl``, with the splits it holds. "run `sate prep` first"
    alone, of a directory prepared with `--splits dev` (or of extra ASR splits alone), was advice that, followed as the
    prep had been run, failed again (32nd hostile pass). Where every split held is transcripts only (a Kaldi or
    LibriSpeech split), `--splits train` of that corpus is refused in turn: a translated corpus's train is asked for;
    ``marian``: train's text does not make the Marian vocabulary, it checks the model's pair (review32d)."""
    def say() -> str:
        what = ("`sate vocab --marian` reads the train split's translations to check the model's language pair and "
                "pick the tokens CTC spells with" if marian else "the vocabularies are made of the train split's text")
        held = sorted(manifest.parent.glob("*.jsonl")) if manifest.parent.is_dir() else []
        if held and all(_transcripts_only(path) for path in held):
            advice = (f"the splits held have transcripts only: prepare a translated corpus, MuST-C or Augmented "
                      f"LibriSpeech, as {TRAIN_SPLIT} into this directory")
        else:
            advice = f"run `sate prep` with {TRAIN_SPLIT} among --splits, or without --splits"
        return missing_split(manifest, f"{manifest}: file is missing: {what} ({advice})")()
    return say


def _transcripts_only(manifest: Path) -> bool:
    """Does the manifest's first row hold no translation (``tgt`` null: a Kaldi or LibriSpeech split)?"""
    try:
        with manifest.open(encoding="utf-8") as rows:
            row = json.loads(rows.readline() or "{}")
    except (OSError, ValueError):
        return False
    return isinstance(row, dict) and "tgt" in row and row["tgt"] is None


def _run_marian(args: argparse.Namespace, manifest: Path) -> int:
    if args.joint is not None or args.src_size is not None or args.tgt_size is not None or args.mt_text \
            or args.src_splits:
        raise SateError("--marian uses the Marian model's vocabulary: --src-size, --tgt-size, --joint, --mt-text "
                        "and --src-splits do not apply")
    check_near_data(args.data)
    require_file(manifest, "a manifest", no_train(manifest, marian=True))
    hub: Path = args.marian
    if not hub.is_dir():
        raise SateError(f"--marian {hub}: not a directory (download the model first: docs/models.md)")
    check_marian_pair(hub, manifest)
    data_dir: Path = args.data
    meta_path = data_dir / layout.VOCAB_META
    inputs = [manifest] + [hub / name for name in FILES if (hub / name).is_file()]
    meta = {"kind": "marian", "hub": str(real_path(hub)), "inputs": _digest(inputs)}
    if _up_to_date(meta_path, meta, [data_dir / "marian" / name for name in (*FILES, CTC_TOKENS)], inputs):
        print(f"{one_line(str(data_dir))}: the Marian vocabulary is up to date")
        return 0
    write_marian_vocab(data_dir, hub, {**meta, TRAIN_DIGEST: file_sha256(manifest)}, meta_path)
    return 0


def run(args: argparse.Namespace) -> int:
    """`_run` holding the data directory's vocabulary lock: two `sate vocab` at once would rename their models and
    token lists into place in among each other's."""
    check_output(args.data, "data", "--data")
    if not args.data.is_dir():
        raise SateError(f"{args.data}: the data directory does not exist (run `sate prep` first)")
    marian = [f"{layout.MARIAN_DIR}/{name}" for name in (*FILES, CTC_TOKENS)] if args.marian is not None else []
    check_own_files(args.data, [layout.VOCAB_META, *(name for side in SIDES for name in (layout.spm_model(side),
                                                                                       layout.token_list(side))),
                                *marian])
    with exclusive(args.data / layout.VOCAB_LOCK, "`sate vocab`"):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    if args.marian is not None:
        return _run_marian(args, args.data / f"{TRAIN_SPLIT}.jsonl")
    if args.joint is not None:
        if args.src_size is not None or args.tgt_size is not None:
            raise SateError("give either --joint or --src-size/--tgt-size, not both")
        sizes = {"joint": args.joint}
    elif args.src_size is None or args.tgt_size is None:
        raise SateError("give --src-size and --tgt-size (or --joint SIZE)")
    else:
        sizes = {"src": args.src_size, "tgt": args.tgt_size}
    for name, size in sizes.items():
        if not 2 <= size <= MAX_VOCAB:  # SentencePiece took a size beyond int32 for a SyntaxError traceback
            raise SateError(f"{_OPTION[name]} must be from 2 to {MAX_VOCAB:,} (the largest real vocabularies hold "
                            f"about 250,000 pieces), got {size:,}")
    data_dir: Path = args.data
    manifest = data_dir / f"{TRAIN_SPLIT}.jsonl"
    extra = source_manifests(data_dir, args.src_splits)
    mt_files = [path for pair in args.mt_text for path in pair]
    check_near_data(data_dir)
    require_file(manifest, "a manifest", no_train(manifest))
    for path in mt_files:
        why = not_a_text_file(path)
        if why is not None:
            raise SateError(f"{path}: {why}")
    meta_path = data_dir / layout.VOCAB_META
    if args.sample_size < 1:
        raise SateError(f"--sample-size must be >= 1, got {args.sample_size}")
    meta = {"sizes": sizes, "inputs": _digest([manifest, *extra, *mt_files]), "sample_size": args.sample_size}
    outputs = [data_dir / name for side in SIDES for name in (layout.spm_model(side), layout.token_list(side))]
    if _up_to_date(meta_path, meta, outputs, [manifest, *extra, *mt_files]):
        print(f"{one_line(str(data_dir))}: vocabularies up to date")
        folded = folding_note(data_dir, manifest, [tuple(pair) for pair in args.mt_text])
        if folded is not None:
            print(folded, file=sys.stderr)
        return 0

    rows = read_manifest(manifest)
    if not rows and not mt_files:  # it was "--src-size: no training text", naming an option given right
        raise SateError(f"{manifest}: no utterances, so no text to train the vocabularies on (run `sate prep` again, "
                        "or give --mt-text)")
    # "it can train ASR only" said nothing of how: an ASR training needs these vocabularies too
    require_translations(manifest, rows, f"`sate vocab` trains the target vocabulary on {TRAIN_SPLIT}'s "
                         f"translations; prepare a translated corpus as {TRAIN_SPLIT} and this one beside it under "
                         "another split name (`sate prep ... --splits NAME`), then give it with --src-splits NAME")
    check_pair_order([tuple(pair) for pair in args.mt_text], rows, "--mt-text")
    check_target_language([tuple(pair) for pair in args.mt_text], rows, "--mt-text")
    src, tgt = training_text(rows, [tuple(pair) for pair in args.mt_text], args.sample_size)
    sampled = (f" (the text was --sample-size {args.sample_size:,} sentence pairs)" if len(tgt) == args.sample_size
               else "")
    transcripts = words_of(row["src_norm"] for row in rows[:ORDER_LINES])
    for path in extra:
        extra_rows = read_manifest(path)
        share = shared_words(words_of(row["src_norm"] for row in extra_rows[:ORDER_LINES]), transcripts)
        if share is not None and share < OTHER_LANGUAGE_SHARE:  # a note: a corpus of another domain may share few
            print(f"note: --src-splits {path.stem}: few of its transcripts' words ({share:.0%}) are in {TRAIN_SPLIT}'s "
                  "(another language?); its words train the source vocabulary, which CTC spells English with",
                  file=sys.stderr)
        src += [row["src_norm"] for row in extra_rows]  # source side only
    rule = target_rule(rows, [tuple(pair) for pair in args.mt_text])  # as `folding_note` asks it
    if "joint" in sizes:  # the target's rule, as --tgt-size would have it (src_norm is NFKC already: either keeps it)
        models = dict.fromkeys(SIDES, train_spm(src + tgt, sizes["joint"], _OPTION["joint"], sampled, rule))
    else:
        models = {side: train_spm(text, sizes[side], _OPTION[side], sampled,
                                  rule if side == "tgt" else normalization_rule(text))
                  for side, text in (("src", src), ("tgt", tgt))}
    contents: dict[Path, bytes] = {}
    sizes_now = {}
    for side, model in models.items():
        tokens = token_list_for(spm.SentencePieceProcessor(model_proto=model))
        contents[data_dir / layout.spm_model(side)] = model
        contents[data_dir / layout.token_list(side)] = "".join(f"{token}\n" for token in tokens).encode()
        sizes_now[side] = len(tokens)
    meta["outputs"] = contents_digest(contents[path] for path in outputs)
    meta[TRAIN_DIGEST] = file_sha256(manifest)
    # All written before any is replaced: a full disk leaves the old vocabularies and vocab.json as they were.
    replace_together(contents, meta_path, json.dumps(meta) + "\n")
    for side, count in sizes_now.items():
        print(f"{side}: {count} tokens -> {one_line(str(data_dir / layout.spm_model(side)))}, "
              f"{one_line(str(data_dir / layout.token_list(side)))}")
    return 0
