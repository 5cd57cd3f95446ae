"""The Python API over a packed model directory (`sate pack`).

```python
from sate.decode.api import Failure, SpeechTranslator

st = SpeechTranslator.load("packs/st")                     # GPU when present
for result in st.translate(["talk.flac", (samples, 44100)]):
    for seg in result.segments:
        print(seg.start, seg.end, seg.transcript, seg.translation)
for item in st.stream(Path("talks").glob("*.flac")):      # any number of inputs, bounded memory
    print(item.source, item.error if isinstance(item, Failure) else item.translation)
SpeechTranslator.load("packs/mt").translate_text(["hello world"])   # an MT pack: text in, text out
```

Audio goes through exactly the training features (`compute_fbank`, then the packed CMVN), is
cut at pauses by `sate.decode.vad`, and is decoded in length-sorted batches: one encoder pass
per batch gives both the CTC transcript (greedy) and the memory that beam search decodes. An
ASR pack gives transcripts only; an MT pack translates text (the second half of a cascade).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Sized
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import torch

from sate import layout
from sate.data.audio import (
    MIN_SAMPLES,
    SAMPLE_RATE,
    audio_blocks,
    list_residue,
    num_frames,
    to_mono_16k,
)
from sate.data.features import NUM_MEL_BINS, compute_fbank
from sate.data.whisper_mel import beyond_window
from sate.decode import api_args as args
from sate.decode.options import DecodeOptions
from sate.decode.pack import (
    CMVN,
    MODEL,
    _pack_advice,
    check_cmvn,
    check_cmvn_kind,
    check_pack_features,
    check_pack_parts,
    check_pack_tokens,
    decode_options,
    model_features,
    read_pack_yaml,
)
from sate.decode.vad import (
    MAX_SEGMENT,
    VadOptions,
    cut,
    cut_blocks,
    file_segments,
    no_speech,
    speech_segments,
    spooled_segments,
)
from sate.errors import SateError, first_few, one_line, out_of_memory, shown
from sate.files import hub_model_folder
from sate.numbers import bound_text
from sate.targets import PYTHON_DOWNLOAD, url_refusal

if TYPE_CHECKING:  # types only: the modules load with the pack
    from sate.data.dataset import CMVN as Normalizer
    from sate.data.marian_vocab import MarianVocab
    from sate.data.vocab import Vocabulary
    from sate.models.base import SateModel

    Vocab = Vocabulary | MarianVocab

AudioInput = str | Path | tuple[np.ndarray, int]
# `stream` reads inputs ahead until this much audio (seconds) or this many segments per batch slot is
# pending, then decodes the pending segments together: memory stays bounded on any number of inputs.
GROUP_SECONDS = 1800.0
GROUP_BATCHES = 8


@dataclass(frozen=True)
class Segment:
    """One stretch of speech: times in seconds from the start of the input."""

    start: float
    end: float
    transcript: str  # the CTC greedy transcript (in the form CTC was trained on: src_norm, or Marian's cased text)
    translation: str | None  # None for an ASR model


@dataclass(frozen=True)
class Result:
    """Everything said in one input, segment by segment."""

    source: str  # the file path, or "<waveform k>"
    duration: float  # seconds
    segments: list[Segment]

    @property
    def transcript(self) -> str:
        return " ".join(s.transcript for s in self.segments if s.transcript)

    @property
    def translation(self) -> str | None:
        if any(s.translation is None for s in self.segments):
            return None
        return " ".join(s.translation for s in self.segments if s.translation)


@dataclass(frozen=True)
class Failure:
    """An input that could not be translated (missing, unreadable, empty, silent, damaged); `error` names it.
    `stream` yields one in the input's place and goes on with the next input."""

    source: str
    error: str


@dataclass(frozen=True)
class PreparedAudio:
    """One input read, resampled and cut at pauses, ready for batched decoding."""

    source: str
    duration: float
    spans: list[tuple[float, float]]
    waves: Iterable[np.ndarray]  # a file's are cut as they are decoded, one segment at a time (`cut_blocks`)


def _path_of(source: object) -> str | Path | None:
    """The file an input names: a str, or any path object of one (`os.PathLike`: an `os.DirEntry` of `os.scandir`, a
    `PurePath`), which were "expected a file path or a (samples, sample_rate) pair" (25th hostile pass); else None."""
    if isinstance(source, str | Path):
        return source
    if isinstance(source, os.PathLike):
        name = os.fspath(source)
        return Path(name) if isinstance(name, str) else None
    return None


def _source_name(source: AudioInput, index: int) -> str:
    """How messages and results name an input: its path, or ``<waveform k>`` for the k-th input's samples."""
    path = _path_of(source)
    return str(path) if path is not None else f"<waveform {index}>"


def _dict_advice(source: Mapping) -> str:
    """What to pass for a dict input, by its keys: a decoded datasets Audio value holds 'array' and 'sampling_rate';
    an undecoded one (``Audio(decode=False)``) 'path' and 'bytes', and was told to pass d['array'], a key it lacks
    (twenty-first hostile pass)."""
    if "array" in source and "sampling_rate" in source:
        return " (a datasets Audio value? pass (d['array'], d['sampling_rate']))"
    if source.get("path"):
        return " (a datasets Audio value not decoded? pass its d['path'], or cast the column with decode=True)"
    return ""


def _writable(wave: np.ndarray) -> np.ndarray:
    """``wave``, copied when it may not be written: 16-kHz float32 samples come back from `to_mono_16k` as they were
    given, and read-only ones (``np.load(..., mmap_mode="r")``, ``np.frombuffer``) drew torch's "The given NumPy
    array is not writable ..." warning, several lines from deep inside torch, from the VAD and the fbank (25th hostile
    pass)."""
    return wave if wave.flags.writeable else wave.copy()


def _no_raw_bytes(samples: object, name: str, decoded: str, path_advice: str) -> None:
    """Refuse raw PCM bytes (`wave`'s ``readframes()``) given as samples, saying how to decode them (``decoded``, the
    call that does): bytes were "expected samples ..., got ()" or "a (path, sample_rate) pair", and a bytearray or a
    memoryview was read as 8-bit samples, twice as many as there were (25th hostile pass). Bytes that read as a file
    name (``os.fsencode``'s) are named as one, with ``path_advice``: decoding them would read the name as audio."""
    if not isinstance(samples, bytes | bytearray | memoryview):
        return
    if isinstance(samples, memoryview) and samples.format not in ("B", "b", "c"):
        return  # a typed view of samples (memoryview of an int16 array), read as the array is (review)
    if isinstance(samples, bytes) and _reads_as_a_name(samples):
        raise SateError(f"{name}: a file name as bytes ({shown(samples)}), not samples: {path_advice}")
    raise SateError(f"{name}: {memoryview(samples).nbytes:,} raw bytes, not samples: decode them first, e.g. "
                    f"{decoded} for 16-bit PCM")


def _reads_as_a_name(data: bytes) -> bool:
    """Whether bytes are printable text of a path's length: a file name, never PCM (whose silence is NUL bytes, and
    whose samples are all printable characters by chance only for a few of them). A name of another encoding than
    UTF-8 (`os.fsencode` of a Latin-1 name) is one too: no byte of it is a control character (review)."""
    if not 0 < len(data) <= 4096:
        return False
    try:
        return data.decode().isprintable()
    except UnicodeDecodeError:
        return all(byte >= 0x20 and not 0x7F <= byte < 0xA0 for byte in data)


def _refuse_line_ends(name: str) -> None:
    """Refuse a missing name whose file is there without the spaces or line break around it, as the lines of a list
    read in Python keep their line break (`for line in open("list.txt")`, `readlines()`): every input of
    `stream(open("list.txt"))` was "talk.wav" and a line break, then ": no such file", a message of two lines that
    did not say why (thirtieth hostile pass). A list saved on Windows's residue alone (a BOM, a carriage return, as
    the shell reads it) is named where the file is read (`sate.data.audio`), with how to strip the list; both by
    `list_residue`'s one rule."""
    residue = list_residue(name)
    if residue is not None and not residue.shell:
        raise SateError(one_line(f"{name}: no such file{residue.hint}"))


SLACK = SAMPLE_RATE // 1000  # samples a segment may lack at the file's end: a resampled file's length, rounded


def _guarded(item: PreparedAudio, errors: dict[int, str], key: int) -> PreparedAudio:
    """``item`` whose segments, read as they are decoded, stand in silence for what cannot be read any more (a file
    removed, cut short or made unreadable since `prepare` read it), its error kept under ``key``: the group's
    other inputs are decoded and this one is a `Failure`. The whole run ended there, exit 2, nothing written (25th
    hostile pass)."""
    end = round(item.duration * SAMPLE_RATE)  # samples when first read: a segment's end, rounded to the
    # millisecond, may lie up to half of one past it (review: every such file was "changed")

    def waves() -> Iterator[np.ndarray]:
        done = 0
        try:
            for wave, (a, b) in zip(item.waves, item.spans, strict=False):
                if len(wave) < min(round(b * SAMPLE_RATE), end) - round(a * SAMPLE_RATE) - SLACK:  # cut short, or
                    # rewritten shorter: "wave: holds no audio samples" of the group, naming no file (review)
                    raise SateError(f"it ends before {a:.2f} s now, where its segment {done + 1} lies")
                done += 1
                yield wave
        except (SateError, OSError) as err:
            why = one_line(str(err))
            errors[key] = f"{item.source}: changed since it was first read: {why.removeprefix(f'{item.source}: ')}"
            for a, b in item.spans[done:]:
                yield np.zeros(max(round((b - a) * SAMPLE_RATE), MIN_SAMPLES), np.float32)

    return PreparedAudio(item.source, item.duration, item.spans, waves()) if inspect.isgenerator(item.waves) else item


def _uneven(item: PreparedAudio, index: int, waves: int | None) -> str:
    """The refusal of a prepared input whose waves (None: more than its spans) are not one for each of its spans."""
    spans = f"{len(item.spans)} span{'' if len(item.spans) == 1 else 's'}"
    given = "more waves" if waves is None else f"{waves} wave{'' if waves == 1 else 's'}"
    return (f"prepared[{index}] ({one_line(item.source)}): {spans} but {given}: its waves are the "
            "samples of its spans, one each, in order (spans changed alone, e.g. by dataclasses.replace? prepare() it "
            "again, or give the waves of the spans given)")


def _one_a_span(item: PreparedAudio, index: int, limit: float | None = None) -> Iterator[np.ndarray]:
    """``item``'s waves, refused unless there is one for each of its spans: the results were matched to spans in one
    stream across inputs, so a prepared input given its own segmentation (spans cut to the first two of `prepare`'s,
    its waves left as they were) gave its extra waves' translations to the next input, exit as usual, and one with
    fewer waves than spans was a StopIteration traceback (thirtieth hostile pass). A wave beyond ``limit`` seconds
    (Whisper's window) is refused naming the input and its span: it was "feats[3]", an index of the decoding's batch
    group, no input's (31st hostile pass)."""
    count = 0
    for wave in item.waves:
        if count == len(item.spans):
            raise SateError(_uneven(item, index, None))
        if limit is not None and (beyond := beyond_window(len(wave), limit)) is not None:
            a, b = item.spans[count]
            raise SateError(f"prepared[{index}] ({one_line(item.source)}): segment {count + 1} ({a:.2f}-{b:.2f} s): "
                            f"{beyond} this model's acoustic encoder (Whisper) takes: cut it at pauses (prepare() "
                            "does)")
        count += 1
        yield wave
    if count < len(item.spans):
        raise SateError(_uneven(item, index, count))


def pick_device(device: str | torch.device | None) -> torch.device:
    """The GPU when present, unless a device is named; a named device must exist here (`--device cuda:3` on a
    machine without it is one line, not a CUDA traceback after the model has loaded)."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        with warnings.catch_warnings():  # `--device mkldnn` printed torch's deprecation warning and its C++ source line
            warnings.simplefilter("ignore")  # above the refusal (27th hostile pass)
            chosen = torch.device(device)
    except (RuntimeError, TypeError, ValueError):  # ValueError: an index beyond int64 (device=10**20)
        # shown: the repr of an array (device=np.zeros(...)) was a message of several lines
        raise SateError(f"--device {shown(device)}: not a torch device (e.g. cpu, cuda, cuda:1)") from None
    if chosen.type == "cpu":
        return chosen
    backend = getattr(torch, chosen.type, None)
    if backend is None or not backend.is_available():
        raise SateError(f"--device {device}: no {chosen.type} device is available on this machine (use cpu)")
    if chosen.index is not None and chosen.index >= backend.device_count():
        raise SateError(f"--device {device}: this machine has {backend.device_count()} {chosen.type} device(s), "
                        f"numbered from 0")
    return chosen


def _pad(seqs: Sequence[np.ndarray], value: float, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    out = torch.full((len(seqs), int(lengths.max()), *seqs[0].shape[1:]), value, dtype=dtype)
    for k, s in enumerate(seqs):
        out[k, : len(s)] = torch.as_tensor(_writable(s), dtype=dtype)  # decode_features of mapped .npy features
    return out, lengths


def check_ctc_scores(logits: torch.Tensor, lengths: torch.Tensor, model: Path) -> None:
    """Refuse CTC scores that are not numbers in an utterance's frames: an ASR model whose weights hold NaN (a training
    that diverged) gave every transcript empty, exit 0 (the argmax of NaN scores is the blank), where beam search
    refuses such scores of an ST or MT model in these words (twenty-eighth hostile pass)."""
    frames = torch.arange(logits.size(1), device=logits.device)[None, :] < lengths.to(logits.device)[:, None]
    # a frame's maximum is NaN where any of its scores is: (B, T), where indexing the scores by `frames` copied every
    # real frame's (B x T x V: 458 MB for 16 segments of 30 s and a 10k vocabulary; fix28a)
    if torch.isnan(logits.amax(-1)[frames]).any():
        raise SateError(f"{model}: the model's CTC scores are not numbers (NaN): its weights hold NaN or infinite "
                        "values, as a training that diverged leaves (optim.lr too high?)")


R = TypeVar("R")


def _on_device(method: Callable[..., R]) -> Callable[..., R]:
    """``method`` run with torch's own default device (the CPU) as the default: under a notebook's
    `torch.set_default_device("cuda")` (or "meta"), the tensors the decoding makes without naming a device went there,
    not to the translator's, and every call was torch's "Tensor on device cpu is not on the expected device" (the
    VAD's and the fbank's alike, which run on the CPU; thirty-first hostile pass). Not the translator's device: on a
    GPU that would put every such tensor there, where the decoding, written and measured with the CPU as the default,
    moves what it needs itself (the engineer's read of hand31a)."""
    @functools.wraps(method)
    def wrapped(self: SpeechTranslator, *args: Any, **kwargs: Any) -> R:
        # entered only where the default is not the CPU: the device context is a torch function mode that every torch
        # call then goes through (decode_features 1.45x slower, review31z); an empty tensor asks torch, which
        # get_default_device() cannot after torch.set_default_device(None) (an AttributeError in torch 2.9)
        if torch.empty(0).device.type == "cpu":
            return method(self, *args, **kwargs)
        with torch.device("cpu"):
            return method(self, *args, **kwargs)

    return wrapped


def _batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices sorted by length (longest first) cut into batches: little padding, OOM shows up first."""
    if batch_size < 1:
        raise SateError(f"the batch size must be >= 1, got {batch_size}")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    return [order[k:k + batch_size] for k in range(0, len(order), batch_size)]


@contextlib.contextmanager
def _out_of_memory_hint(what: str, options: DecodeOptions, alone: str | None = None) -> Iterator[None]:
    """An allocator failure becomes one line saying what to lower (the option bounds catch the absurd values;
    this catches a batch that is merely too big for the device). ``alone``: what to say instead when the batch held
    one input, which no smaller batch helps (a 10-minute manifest row was told to lower --batch-size)."""
    try:
        yield
    except RuntimeError as err:  # torch.OutOfMemoryError (CUDA) and the CPU allocator's error are RuntimeErrors
        if not out_of_memory(err):
            raise
        advice = alone or "lower --batch-size, --beam or max_len_ratio"
        raise SateError(f"out of memory decoding {what} with beam {options.beam} and max_len_ratio "
                        f"{options.max_len_ratio:g}: {advice}") from None


# Tokens beyond which a sentence alone that runs out of memory is said to be too long, not told to lower --batch-size
# (a batch of one) as a batch is: far beyond any sentence (a text without line breaks read as one).
LONG_SENTENCE = 1024
# Tokens beyond which a sentence is refused before it is encoded: the attention's memory grows with the square of its
# length, and `translate_text(["x" * 100000])` grew to 22 GB before the kernel ended the process (no MemoryError came)
MAX_SENTENCE_TOKENS = 4 * LONG_SENTENCE


class SpeechTranslator:
    """A packed ST, ASR or MT model ready to decode; build it with `SpeechTranslator.load`."""

    def __init__(self, model: SateModel, task: str, src_vocab: Vocab, tgt_vocab: Vocab, cmvn: Normalizer | None,
                 options: DecodeOptions, device: torch.device, directory: Path) -> None:
        self.model, self.task = model, task
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.cmvn = cmvn  # None: raw features
        # fbank, or waveform for a hub acoustic encoder (sate.data.waveform); None for MT
        self.feature_kind = None if task == "mt" else model_features(model.conf)
        self.options = options  # the pack's defaults
        self.device = device
        self.directory = directory

    @classmethod
    def load(cls, directory: str | Path, device: str | torch.device | None = None) -> SpeechTranslator:
        """Load a `sate pack` directory; a missing or inconsistent part is a `SateError` naming it."""
        from sate.data.dataset import CMVN as Normalizer
        from sate.data.vocab import load_vocabularies
        from sate.models.model_file import model_from_file

        directory = args.directory(directory)
        device = pick_device(device)  # first: `device="cuda:3"` on a machine without it was refused after the model
        # had been read, seconds or minutes of a large one (25th hostile pass)
        if directory.is_file() and hub_model_folder(directory.parent) and \
                not (directory.parent / layout.PACK_YAML).is_file():  # WHISPER/model.bin was told `sate pack --model
            # FILE` makes a pack of it, which refuses a downloaded model (twenty-fourth hostile pass, review)
            raise SateError(f"{directory}: a file of the downloaded model {directory.parent}, not a packed model "
                            f"directory ({_pack_advice(directory.parent)})")
        info = read_pack_yaml(directory)
        check_pack_parts(directory, info)
        vocabs = dict(zip(("src", "tgt"), load_vocabularies(directory, info.task, info.vocab), strict=True))
        with torch.device("cpu"):  # built where the weights are read, then moved (see `_on_device`)
            model, meta = model_from_file(directory / MODEL)
        if meta["task"] != info.task:
            raise SateError(f"{directory / MODEL} holds a model of task {meta['task']}, but sate.yaml says {info.task}")
        check_pack_tokens(meta, directory, info, tuple(vocabs.values()))
        check_pack_features(model.conf, directory, info)
        cmvn = None
        if info.features is not None:
            kind = info.features["cmvn"]
            check_cmvn_kind(meta, directory / MODEL, kind, f"{directory / layout.PACK_YAML}: features.cmvn")
            cmvn = Normalizer.from_option(directory / CMVN if kind == "global" else kind)
            if kind == "global":
                check_cmvn(meta, directory / MODEL, directory / CMVN)
        options = decode_options(info.decode, str(directory / layout.PACK_YAML))
        return cls(model.to(device), info.task, vocabs["src"], vocabs["tgt"], cmvn, options, device, directory)

    def with_options(self, **changes: float) -> DecodeOptions:
        """The pack's decoding options with some changed, e.g. ``with_options(beam=10)``."""
        plain = {key: args.plain(value) for key, value in changes.items()}  # beam=np.int64(5) was "not an integer"
        # both named: `translate --beam 1` of a pack that keeps nbest 2 was "decoding options: nbest must be between 1
        # and the beam (1), got 2", naming neither the option given nor the file holding nbest
        # each cut as a value in a message is: an unknown option of 100,000 characters was a line of 100 KB (twentieth
        # hostile pass)
        given = first_few([f"{key}={shown(value)}" for key, value in plain.items()], 6)
        # the pack's own options were checked when it was loaded: a refusal here is of a value given, alone or beside
        # the pack's. `--beam 0` was "PACK/sate.yaml's decoding with beam=0: ...", as if sate.yaml held it (fix28a)
        pack = self.directory / layout.PACK_YAML
        where = f"decoding option{'s' if len(plain) > 1 else ''} {given} (given; the others from {pack})" \
            if given else f"{pack}'s decoding"
        return decode_options({**asdict(self.options), **plain}, where)

    def _decode_options(self, options: object, call: str) -> DecodeOptions | None:
        """``options`` checked (`api_args.decode_options`), refusing an nbest above 1 that the pack does not keep:
        every call here gives the best hypothesis alone, and `translate(..., with_options(nbest=5))` searched for five
        (longer: the search stops at the nbest-th finished one) and gave the best, without a word, where `sate translate
        --decode nbest=5` is refused (twenty-eighth hostile pass). A pack's own nbest (its sate.yaml) still decodes, as
        `sate translate` decodes with it."""
        checked = args.decode_options(options)
        # an ASR pack's transcripts are CTC greedy: no n-best is searched, and a cascade's `sate evaluate` gives it the
        # MT pack's options (one that keeps nbest 2 was refused, exit 2, with this advice; fix28a)
        if self.task != "asr" and checked is not None and checked.nbest > 1 and checked.nbest != self.options.nbest:
            encode = "encode_text" if self.task == "mt" else "encode"  # an MT model has no `encode` (fix28a)
            raise SateError(f"options: nbest={checked.nbest}: {call} gives the best hypothesis alone; for n-best "
                            f"lists, decode the memory of translator.model.{encode} with "
                            "sate.decode.beam_search.decode_memory (docs/inference.md, Batched beam search)")
        return checked

    # ------------------------------------------------------------------------------------------ audio

    def _need_speech(self) -> None:
        if self.task == "mt":
            raise SateError(f"{self.directory} is an MT model: it translates text (translate_text), not audio")

    def prepare(self, source: AudioInput, index: int = 0, vad: VadOptions | None = None) -> PreparedAudio:
        """Read one input (a path or ``(samples, sample_rate)``) and cut it at pauses.

        Raises `SateError` naming the input if it cannot be read, is empty or holds no speech.
        """
        name = _source_name(source, index)
        self._check_segment_cap(vad)
        source = _path_of(source) or source  # a path object of any kind read as its path
        if isinstance(source, str) and source == "":  # as Path(''), the current directory: ".: is a directory"
            raise SateError(f"input {index}: an empty name, no file")
        if isinstance(source, str | Path) and "\0" in str(source):  # a ValueError of os.stat, raised through stream
            # and ending it, not one input's Failure (25th hostile pass)
            raise SateError(f"{one_line(name)}: a name holding a NUL character, which no file's name holds (names "
                            "split on newlines where find -print0 wrote NUL-separated ones?)")
        if isinstance(source, str | Path):
            _refuse_line_ends(str(source))
            url = url_refusal(str(source), PYTHON_DOWNLOAD)  # a notebook's URL, as given
            if url is not None:
                raise SateError(url)
        # os.path.isfile: a name too long for the file system is no file (audio_blocks names it), not an OSError
        if isinstance(source, str | Path) and os.path.isfile(source):  # read twice, block by block: any length
            spans, duration = file_segments(source, vad)
            waves: Iterable[np.ndarray] = cut_blocks(audio_blocks(source), spans)  # read as it is decoded
        elif isinstance(source, str | Path):  # a pipe, read once: kept on disk while the VAD reads it (or what is
            spans, duration, waves = spooled_segments(source, vad)  # missing, named)
        else:
            if isinstance(source, bytes | bytearray | memoryview):  # b"ab" unpacked as the pair (97, 98); a name as
                # bytes alone was "expected a file path or ..." (review)
                _no_raw_bytes(source, f"input {index}", "(np.frombuffer(data, np.int16), sample_rate)",
                              "give it as a str (os.fsdecode(name))")
                raise SateError(f"input {index}: expected a file path or a (samples, sample_rate) pair, got a "
                                f"{type(source).__name__}")
            if isinstance(source, Mapping):  # one of two keys was unpacked as them: "sample rate ... 'sampling_rate'"
                raise SateError(f"input {index}: expected a file path or a (samples, sample_rate) pair, got a dict"
                                f"{_dict_advice(source)}")
            try:
                samples, rate = source
            except (TypeError, ValueError):
                raise SateError(f"input {index}: expected a file path or a (samples, sample_rate) pair") from None
            _no_raw_bytes(samples, f"input {index}", "(np.frombuffer(data, np.int16), sample_rate)",
                          "give the path alone, as a str (os.fsdecode(name)); its rate is read from the file")
            if isinstance(samples, str | os.PathLike):  # "expected samples of shape (n,) ..., got ()"
                raise SateError(f"input {index}: a (path, sample_rate) pair: give the path alone (its rate is read "
                                "from the file), or (samples, sample_rate)")
            if args.is_rate(samples) and not args.is_rate(rate):  # scipy's wavfile.read gives (rate, samples): the
                # samples were "the sample rate must be a whole number of Hz, got array([[0, 0],\n..." (twenty-first
                # hostile pass)
                raise SateError(f"input {index}: a (sample_rate, samples) pair, as scipy.io.wavfile.read returns "
                                "one: give (samples, sample_rate)")
            wave = _writable(to_mono_16k(samples, args.sample_rate(rate, name), name))
            duration = len(wave) / SAMPLE_RATE
            spans = speech_segments(wave, vad)
            waves = cut(wave, spans)
        if not spans:
            raise SateError(f"{name}: {no_speech(duration, vad)}")
        return PreparedAudio(name, duration, spans, waves)

    def max_segment_seconds(self) -> float | None:
        """The longest segment the acoustic encoder takes (Whisper's 30-s window), None when unbounded."""
        limit = getattr(getattr(self.model, "acoustic", None), "max_seconds", None)
        return limit() if callable(limit) else None

    def _check_segment_cap(self, vad: VadOptions | None) -> None:
        if vad is not None and not isinstance(vad, VadOptions):  # a dict was an AttributeError
            raise SateError(f"vad must be VadOptions (e.g. VadOptions(max_segment=10.0)), got {type(vad).__name__}")
        limit, wanted = self.max_segment_seconds(), (vad or VadOptions()).max_segment
        if limit is not None and wanted > limit:
            raise SateError(f"max_segment (--max-segment) {bound_text(wanted)} s: this model's acoustic encoder "
                            f"(Whisper) takes segments of at most {bound_text(limit)} s")

    def features(self, wave: np.ndarray) -> np.ndarray:
        """(T, 80) features of 16 kHz mono samples, exactly as training saw them (fbank, then CMVN); for a hub
        acoustic encoder the samples themselves (T,), padded to 0.1 s as training pads them.

        The samples are taken as `translate` takes a (samples, 16000) pair: float in [-1, 1] or integer PCM, (n,)
        or (n, channels), every value finite. int16 PCM was read as floats 32,768 times too loud, NaN or a value
        beyond any float32 gave NaN features, and a 2-D or text input was a numpy traceback."""
        self._need_speech()
        if isinstance(wave, str | os.PathLike):  # was "expected samples of shape (n,) or (n, channels), got ()"
            raise SateError(f"wave: a file name ({shown(os.fspath(wave))}), not samples: give its 16 kHz samples "
                            "(prepare(path).waves are a file's, cut at pauses)")
        _no_raw_bytes(wave, "wave", "np.frombuffer(data, np.int16)",  # a bytearray was read as 8-bit samples
                      "give its 16 kHz samples (prepare(os.fsdecode(name)).waves are a file's, cut at pauses)")
        wave = _writable(to_mono_16k(wave, SAMPLE_RATE, "wave"))
        if self.feature_kind == "waveform":
            from sate.data.waveform import waveform_input

            return waveform_input(wave)
        with torch.device("cpu"):  # numpy in and out, whatever torch's default device is (see `_on_device`)
            feats = compute_fbank(wave)
        return self.cmvn(feats) if self.cmvn is not None else feats

    def input_dtype(self) -> torch.dtype:
        """The dtype the acoustic encoder is given: fbank features in its weights' precision, as a model cast in a
        notebook (`st.model.half()` on a GPU) reads them; it was torch's "Input type (float) and bias type (c10::Half)
        should be the same", where `translate_text` takes such a model (33rd hostile pass). A hub acoustic encoder's
        waveform stays float32: it casts it itself."""
        if self.feature_kind == "waveform":
            return torch.float32
        return next((p.dtype for p in self.model.parameters() if p.is_floating_point()), torch.float32)

    @_on_device
    @torch.inference_mode()
    def decode_features(self, feats: Sequence[np.ndarray], options: DecodeOptions | None = None,
                        batch_size: int = 16) -> list[tuple[str, str | None]]:
        """(transcript, translation) per (T, 80) normalised feature matrix (or (T,) waveform); translation is None
        for ASR."""
        self._need_speech()
        from sate.decode.beam_search import decode_memory, eval_mode
        from sate.models.ctc import ctc_greedy

        waveform = self.feature_kind == "waveform"
        feats = args.features(feats, None if waveform else NUM_MEL_BINS,
                              MIN_SAMPLES if waveform else num_frames(MIN_SAMPLES))
        limit = self.max_segment_seconds()  # Whisper's window: its encoder's refusal named no input of the batch
        if waveform and limit is not None:
            for i, f in enumerate(feats):
                if (beyond := beyond_window(len(f), limit)) is not None:
                    raise SateError(f"feats[{i}]: {beyond} this model's acoustic encoder (Whisper) takes: cut it at "
                                    "pauses (prepare() does)")
        options = self._decode_options(options, "decode_features") or self.options
        batch_size = args.batch_size(batch_size)
        dtype = self.input_dtype()
        out: list[tuple[str, str | None]] = [("", None)] * len(feats)
        for batch in _batches([len(f) for f in feats], batch_size):
            x, lengths = _pad([feats[i] for i in batch], 0.0, dtype)
            seconds = int(lengths.max()) / (SAMPLE_RATE if waveform else 100)  # fbank: 100 frames a second
            alone = None if len(batch) > 1 or seconds <= MAX_SEGMENT else (
                f"one segment of {seconds:,.0f} s is too long to decode at once (the encoder's attention grows with "
                f"its square): cut it at pauses (sate segment; sate evaluate --talks for a split of whole "
                "recordings)")
            # in eval mode, whatever mode a notebook left the model in (fine-tuned: st.model.train()), restored after:
            # the encoder's dropout gave other transcripts and translations at each call, exit 0 (33rd hostile pass)
            with _out_of_memory_hint(f"{len(batch)} segments of up to {int(lengths.max())} frames", options, alone), \
                    eval_mode(self.model):
                enc = self.model.encode(x.to(self.device), lengths.to(self.device))
                check_ctc_scores(enc.ctc_logits, enc.ctc_lengths, self.directory / MODEL)
                transcripts = [self.src_vocab.decode(ids) for ids in ctc_greedy(enc.ctc_logits, enc.ctc_lengths)]
                translations: list[str | None] = [None] * len(batch)
                if self.task == "st":
                    hyps = decode_memory(self.model.decoder, enc.memory, enc.memory_lengths, self.model.eos,
                                         options)
                    translations = [self.tgt_vocab.decode(nbest[0].tokens) for nbest in hyps]
            for i, transcript, translation in zip(batch, transcripts, translations, strict=True):
                out[i] = (transcript, translation)
        return out

    def decode_prepared(self, prepared: Sequence[PreparedAudio], options: DecodeOptions | None = None,
                        batch_size: int = 16) -> list[Result]:
        """Decode the segments of several prepared inputs together, in batches across inputs, GROUP_BATCHES
        batches at a time (a long file's segments are not all held at once)."""
        options, batch_size = self._decode_options(options, "decode_prepared"), args.batch_size(batch_size)
        prepared = list(args.many(prepared, "prepared"))  # a generator is read once
        bad = next((i for i, item in enumerate(prepared) if not isinstance(item, PreparedAudio)), None)
        if bad is not None:  # 'abc' was an AttributeError deep in the decoding
            raise SateError(f"prepared[{bad}]: expected what prepare() returns, got {type(prepared[bad]).__name__}")
        # a file's segments are read as they are decoded, once: one prepared twice (again with other options, or twice
        # in the list) was a StopIteration traceback after the others had been decoded (25th hostile pass)
        seen: dict[int, int] = {}
        for i, item in enumerate(prepared):
            if not inspect.isgenerator(item.waves):
                continue
            if id(item.waves) in seen:
                why = f"the same as prepared[{seen[id(item.waves)]}]"
            elif inspect.getgeneratorstate(item.waves) != inspect.GEN_CREATED:  # decoded, or only peeked at (next)
                why = "its segments were read already (decoded, or taken from its .waves)"
            else:
                seen[id(item.waves)] = i
                continue
            raise SateError(f"prepared[{i}] ({item.source}): {why}; a file's segments are read once, as they are "
                            "decoded: prepare() it again for each decoding")
        for i, item in enumerate(prepared):  # a list of waves is counted before any decoding, a generator as it is read
            if isinstance(item.waves, Sized) and len(item.waves) != len(item.spans):
                raise SateError(_uneven(item, i, len(item.waves)))
        limit = self.max_segment_seconds()
        waves = (w for i, item in enumerate(prepared) for w in _one_a_span(item, i, limit))
        decoded = self._decode_waves(waves, options, batch_size)
        results = []
        for item in prepared:
            segments = [Segment(a, b, *next(decoded)) for a, b in item.spans]
            results.append(Result(item.source, item.duration, segments))
        return results

    def _decode_waves(self, waves: Iterable[np.ndarray], options: DecodeOptions | None,
                      batch_size: int) -> Iterator[tuple[str, str | None]]:
        feats: list[np.ndarray] = []
        for wave in waves:
            feats.append(self.features(wave))
            if len(feats) == GROUP_BATCHES * batch_size:
                yield from self.decode_features(feats, options, batch_size)
                feats = []
        yield from self.decode_features(feats, options, batch_size)

    def translate(self, inputs: Sequence[AudioInput], options: DecodeOptions | None = None, batch_size: int = 16,
                  vad: VadOptions | None = None) -> list[Result]:
        """Segments with transcript and translation for each input (file paths or ``(samples, rate)``).

        A bad input raises `SateError` naming it; `stream` goes on past bad inputs instead.
        """
        self._need_speech()  # first, as stream says it
        results, options = [], self._decode_options(options, "translate")
        for item in self.stream(args.many(inputs, "inputs"), options, batch_size, vad):
            if isinstance(item, Failure):
                raise SateError(item.error)
            results.append(item)
        return results

    def stream(self, inputs: Iterable[AudioInput], options: DecodeOptions | None = None, batch_size: int = 16,
               vad: VadOptions | None = None) -> Iterator[Result | Failure]:
        """One `Result` or `Failure` per input, in input order, as soon as its group is decoded.

        Inputs are read ahead until GROUP_SECONDS of audio or GROUP_BATCHES x `batch_size` segments (or inputs) are
        pending, and those segments are decoded together in length-sorted batches across inputs: memory is bounded by
        the group, not by the number or length of the inputs (`inputs` may be a generator), and short files
        still share batches. A `Failure` with no audio pending before it is given at once. An error of `inputs` itself
        is raised once the inputs it gave before are given. `sate translate` is a loop over this.
        """
        self._need_speech()
        inputs, options, batch_size = args.many(inputs, "inputs"), self._decode_options(options, "stream"), \
            args.batch_size(batch_size)
        self._check_segment_cap(vad)  # once, not as a failure of every input
        pending: list[PreparedAudio | Failure] = []
        seconds, segments = 0.0, 0
        sources = iter(inputs)
        for index in itertools.count():
            try:
                source = next(sources)
            except StopIteration:
                break
            except Exception:  # the iterable's own error (a generator over a dataset whose disk went away): the
                # inputs it gave before are decoded and given first; they were dropped with the group, read and cut
                # for nothing (twenty-third hostile pass)
                yield from self._decode_group(pending, options, batch_size)
                raise
            try:
                item = self.prepare(source, index, vad)
            except SateError as err:
                pending.append(Failure(_source_name(source, index), str(err)))
            else:
                pending.append(item)
                seconds, segments = seconds + item.duration, segments + len(item.spans)
            # failures count too: with nothing to decode before them they are given at once, and the group is
            # bounded in inputs. A generator of 3,000 missing files was read to its end before the first Failure came
            # out, each one held meanwhile (twenty-eighth hostile pass)
            if segments == 0 or seconds >= GROUP_SECONDS or max(segments, len(pending)) >= GROUP_BATCHES * batch_size:
                yield from self._decode_group(pending, options, batch_size)
                pending, seconds, segments = [], 0.0, 0
        yield from self._decode_group(pending, options, batch_size)

    def _decode_group(self, group: list[PreparedAudio | Failure], options: DecodeOptions | None,
                      batch_size: int) -> Iterator[Result | Failure]:
        errors: dict[int, str] = {}
        prepared = [_guarded(item, errors, i) for i, item in enumerate(group) if isinstance(item, PreparedAudio)]
        results = iter(self.decode_prepared(prepared, options, batch_size) if prepared else [])
        for i, item in enumerate(group):
            if isinstance(item, Failure):
                yield item
            else:
                result = next(results)
                yield Failure(item.source, errors[i]) if i in errors else result

    # ------------------------------------------------------------------------------------------ text

    @_on_device
    @torch.inference_mode()
    def translate_text(self, texts: Sequence[str], options: DecodeOptions | None = None,
                       batch_size: int = 64) -> list[str]:
        """Translations of English sentences (an MT pack). The text is prepared as the model's source vocabulary
        reads it first (ours: normalised like ``src_norm``; Marian's: cased, sound tags removed), so raw
        sentences and ASR transcripts both work; an empty source gives an empty translation."""
        if self.task != "mt":
            raise SateError(f"{self.directory} is an {self.task.upper()} model: translate_text needs an MT model")
        from sate.decode.beam_search import decode_memory, eval_mode
        from sate.models.hub.marian import TooManyPositions  # heavy: ESPnet's blocks, for a Marian pack's refusal

        texts = args.texts(texts)
        options, batch_size = self._decode_options(options, "translate_text") or self.options, \
            args.batch_size(batch_size)
        prepared = [self.src_vocab.prepare(t) for t in texts]
        ids = [self.src_vocab.encode(t) if t else [] for t in prepared]
        longest = max(range(len(ids)), key=lambda i: len(ids[i]), default=None)
        if longest is not None and len(ids[longest]) > MAX_SENTENCE_TOKENS:
            raise SateError(f"a sentence of {len(ids[longest]):,} tokens ({shown(texts[longest], 60)}) is more than "
                            f"sate translates at once ({MAX_SENTENCE_TOKENS:,}; the memory grows with the square of "
                            "the length): split it into sentences")
        out = [""] * len(texts)
        todo = [i for i, s in enumerate(ids) if s]
        for batch in _batches([len(ids[i]) for i in todo], batch_size):
            batch = [todo[k] for k in batch]
            src, lengths = _pad([np.asarray(ids[i]) for i in batch], -1, torch.long)
            tokens = int(lengths.max())
            alone = None if len(batch) > 1 or tokens <= LONG_SENTENCE else (
                f"one sentence of {tokens:,} tokens is too long to translate at once (the encoder's attention grows "
                "with its square): split it into sentences")
            with _out_of_memory_hint(f"{len(batch)} sentences of up to {tokens} tokens", options, alone), \
                    eval_mode(self.model):  # as decode_features
                try:
                    memory, memory_lengths = self.model.encode_text(src.to(self.device), lengths.to(self.device))
                except TooManyPositions as err:  # its advice was speech's (adaptor.type shrink), for a sentence
                    longest = texts[batch[int(lengths.argmax())]]
                    raise SateError(f"a sentence of {tokens:,} tokens ({shown(longest, 60)}) is longer than the "
                                    f"Marian model's {err.limit} positions: split it into shorter sentences") from None
                hyps = decode_memory(self.model.decoder, memory, memory_lengths, self.model.eos, options)
            for i, nbest in zip(batch, hyps, strict=True):
                out[i] = self.tgt_vocab.decode(nbest[0].tokens)
        return out
