"""Whisper as a whole speech recogniser: our encoder, our decoder, greedy decoding to English text.

This is the ASR side of the cascade a user would build from Whisper (`sate evaluate --model WHISPER_DIR --mt-model
MT_PACK`, the asr-real benchmark on a Whisper directory), to set beside SATE built on Whisper's encoder. Nothing
of `transformers`, `tokenizers` or CTranslate2 runs.

Decoding is Whisper's greedy search: the prompt ``<|startoftranscript|><|notimestamps|>`` (English-only models),
the argmax token each step with the directory's suppressed tokens masked (CTranslate2's ``suppress_ids`` and
``suppress_ids_begin`` in its config.json, Hugging Face's ``suppress_tokens`` and ``begin_suppress_tokens`` in
generation_config.json, or config.json without it; the "begin" ones at the first step only), until
``<|endoftext|>`` or half the decoder's positions (224 tokens, Whisper's own cap). Utterances are decoded in padded
batches; a batch gives each utterance what it gets alone.

``window``: "30s" (the default) pads the audio with silence to Whisper's 30-s window, as Whisper itself does;
"natural" feeds the encoder each utterance at its natural length, as SATE's acoustic side does. Whisper's decoder
needs the window: at natural length it rarely stops, repeating the sentence until the cap (docs/whisper.md has the
figures). Either way the output equals CTranslate2's on the same features.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from sate.data.audio import SAMPLE_RATE, to_mono_16k
from sate.data.whisper_mel import HOP_LENGTH, N_FFT, beyond_window, whisper_log_mel
from sate.errors import SateError
from sate.files import read_json
from sate.layout import CT2_MODEL, PACK_YAML
from sate.models.hub.files import hub_directory
from sate.models.hub.whisper import WhisperEncoder, max_segment_seconds
from sate.models.hub.whisper_decoder import WhisperDecoder, load_decoder
from sate.models.hub.whisper_files import whisper_format
from sate.models.hub.whisper_tokens import WhisperTokens, whisper_tokens

Window = Literal["natural", "30s"]
WINDOWS: tuple[Window, ...] = ("natural", "30s")
# Where each format keeps the suppressed tokens: (file, all steps, the first step only).
SUPPRESS = {"ctranslate2": ("config.json", "suppress_ids", "suppress_ids_begin"),
            "huggingface": ("generation_config.json", "suppress_tokens", "begin_suppress_tokens")}


def is_whisper_directory(path: str | Path) -> bool:
    """A Whisper model directory of either format (not a `sate pack`): what ``--model`` may name as an ASR side."""
    directory = Path(path)
    if not directory.is_dir() or (directory / PACK_YAML).is_file():
        return False
    if os.path.lexists(directory / CT2_MODEL):  # a broken link there is named when it is read, not "no sate.yaml"
        return True
    config = directory / "config.json"
    # anything at its name is read, and named if no file: a named pipe, a directory or a broken link there made a
    # Whisper directory "not a packed model: sate.yaml is missing (write one with `sate pack`)"
    return os.path.lexists(config) and read_json(config).get("model_type") == "whisper"


# Where a Hugging Face Whisper's configs give the ids of the tokens sate's decoding uses: (key, WhisperTokens field).
CONFIG_IDS = (("decoder_start_token_id", "start"), ("eos_token_id", "end"), ("no_timestamps_token_id", "no_timestamps"))


def _refuse_foreign_vocabulary(directory: Path, tokens: WhisperTokens) -> None:
    """A Hugging Face Whisper's vocabulary whose special ids are not the ones its config gives: a multilingual
    model's tokenizer.json (every special id one higher) put beside an English-only model's weights decoded from the
    wrong prompt and turned every id into another model's token; with lists that name the end token it was blamed on
    those lists, whose advice (the model's own config) failed, and without lists it went through, exit 0 (32nd
    hostile pass). The config read is the one transformers reads for generation (`_suppressed`'s)."""
    if whisper_format(directory) != "huggingface":
        return
    path = next((directory / name for name in ("generation_config.json", "config.json")
                 if os.path.isfile(directory / name)), None)
    config = read_json(path) if path is not None else {}
    for key, field in CONFIG_IDS:
        given = config.get(key)
        ids = given if isinstance(given, list) else [given]  # eos_token_id may list several ids
        if not ids or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            continue  # not given (or not ids): nothing to compare with
        ours = getattr(tokens, field)
        if ours not in ids:
            assert path is not None
            raise SateError(f"{tokens.source}: {tokens.tokens[ours]} is {ours}, but {path.name} gives {key} "
                            f"{given}: is {tokens.source.name} another Whisper's vocabulary (a multilingual model's, "
                            f"whose special ids are one higher), or {path.name} another Whisper's? Use the "
                            f"{tokens.source.name} and {path.name} of this model's own download")


def _suppressed(directory: Path, tokens: WhisperTokens) -> tuple[list[int], list[int]]:
    """The token ids masked at every step and at the first step only, as the directory lists them."""
    vocab = tokens.size
    name, always, first = SUPPRESS[whisper_format(directory)]
    path = directory / name
    if name == "generation_config.json" and not os.path.lexists(path):
        # as transformers does: without generation_config.json its settings come from config.json, where the
        # openai/whisper-* directories also list them (one downloaded without it decoded with nothing suppressed)
        path = directory / "config.json"
    if name == "config.json" and not os.path.lexists(path):
        # a partial download (model.bin and a vocabulary alone) decoded with nothing suppressed, exit 0, the end
        # token and the blank free at the first step (29th hostile pass). CTranslate2 (4.8.5) itself cannot decode
        # it: its generate fails on the missing suppress_ids unless suppression is turned off (review)
        raise SateError(f"{directory}: no config.json beside {CT2_MODEL}: CTranslate2's converter writes the tokens "
                        "Whisper's decoding suppresses there (suppress_ids, suppress_ids_begin), without which "
                        "CTranslate2 itself does not decode the directory either; download the whole directory (hf "
                        "download NAME --local-dir DIR) or convert the model again")
    config = read_json(path) if os.path.lexists(path) else {}  # no file in its place (a folder): named, not skipped
    missing = [key for key in (always, first) if name == "config.json" and key not in config]
    if missing:  # the converter writes both, null or not: a config.json of another kind put beside model.bin
        raise SateError(f"{path}: no {' or '.join(missing)}; not the config.json CTranslate2's converter writes "
                        "beside a Whisper model.bin (download the whole directory, or convert the model again)")
    lists = []
    for key in (always, first):
        ids = config.get(key) or []
        # true is an int to Python: [true] suppressed token 1 without a word
        if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < vocab
                                                for i in ids):
            raise SateError(f"{path}: {key} is not a list of token ids below {vocab}")
        lists.append(ids)
    _refuse_foreign_lists(path, (always, first), lists, tokens)
    return lists[0], lists[1]


TIMESTAMP = re.compile(r"<\|\d+(\.\d+)?\|>")


def _refuse_foreign_lists(path: Path, keys: tuple[str, str], lists: list[list[int]], tokens: WhisperTokens) -> None:
    """Suppressed ids written for another vocabulary, one line naming the first: lists copied from a multilingual
    model's config (its ids of every special token one higher) suppressed pieces of English words (" out", "ill") in
    an English-only model, and left <|endoftext|> free at the first step, exit 0 with worse transcripts (30th hostile
    pass). The regular ids cannot be told; the special ones can: Whisper's lists name <|endoftext|> at the first
    step alone, and never <|notimestamps|> (the prompt's) nor, at every step, <|endoftext|> (decoding would not
    end)."""
    for key, ids, first in zip(keys, lists, (False, True), strict=True):
        for i in ids:
            token = tokens.tokens[i] if i < len(tokens.tokens) else ""
            named = token.startswith("<|") and token.endswith("|>") and not TIMESTAMP.fullmatch(token)
            if i == tokens.no_timestamps or (i == tokens.end and not first) or (first and named and i != tokens.end):
                # a special token at the first step other than <|endoftext|> was said to be one Whisper's decoding
                # never suppresses there, though its every-step list (the first step's too) names several (fix30h)
                why = "decoding would never end" if i == tokens.end else \
                    "the prompt's own token, which Whisper's decoding never suppresses" if i == tokens.no_timestamps \
                    else f"not {tokens.tokens[tokens.end]}, the one special token Whisper's first-step list names " \
                         "(the others it suppresses are in the every-step list)"
                # the lists the model's own, the vocabulary another's (a multilingual tokenizer.json copied in) was
                # told to use the model's own lists, which it had (32nd hostile pass): either file may be the other's
                raise SateError(f"{path}: {key} names {i}, which is {token} in {tokens.source.name}: {why}; are these "
                                "the lists of another Whisper's vocabulary (a multilingual model's), or is "
                                f"{tokens.source.name} another Whisper's? Use the {path.name} and "
                                f"{tokens.source.name} of this model's own download, or convert the model again")


class WhisperRecognizer:
    """16 kHz waveforms -> Whisper's English transcripts; build it with `WhisperRecognizer.load`."""

    task = "asr"  # what `sate evaluate` reads of a model

    def __init__(self, encoder: WhisperEncoder, decoder: WhisperDecoder, tokens: WhisperTokens,
                 suppress: Sequence[int], suppress_begin: Sequence[int], directory: Path, device: torch.device,
                 window: Window = "30s") -> None:
        if window not in WINDOWS:
            raise SateError(f"Whisper window {window!r}: expected one of {', '.join(WINDOWS)}")
        if encoder.sizes.d_model != decoder.sizes.d_model:
            raise SateError(f"{directory}: encoder width {encoder.sizes.d_model} but decoder {decoder.sizes.d_model}")
        self.encoder, self.decoder, self.tokens = encoder.eval().to(device), decoder.eval().to(device), tokens
        self.suppress = torch.tensor(sorted(set(suppress)), dtype=torch.long, device=device)
        self.suppress_begin = torch.tensor(sorted(set(suppress_begin)), dtype=torch.long, device=device)
        self.directory, self.device, self.window = directory, device, window
        self.max_tokens = decoder.sizes.positions // 2  # Whisper's sample_len

    @classmethod
    def load(cls, path: str | Path, device: str | torch.device = "cpu", window: Window = "30s") -> WhisperRecognizer:
        """Encoder, decoder, vocabulary and suppressed tokens of a Whisper directory of either format."""
        directory = hub_directory(path, "--model")
        decoder = load_decoder(directory)
        tokens = whisper_tokens(directory, decoder.sizes.vocab)
        _refuse_foreign_vocabulary(directory, tokens)
        return cls(WhisperEncoder.from_directory(directory), decoder, tokens,
                   *_suppressed(directory, tokens), directory, torch.device(device), window)

    def max_seconds(self) -> float:
        """The longest segment the encoder takes: 30 s."""
        return max_segment_seconds(self.encoder.sizes)

    def describe(self) -> dict[str, object]:
        """What a results file records of this recogniser."""
        return {"whisper": str(self.directory), "encoder": asdict(self.encoder.sizes),
                "decoder": asdict(self.decoder.sizes), "search": "greedy", "window": self.window,
                "max_tokens": self.max_tokens}

    def log_mel(self, waves: Sequence[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
        """Padded (B, T, mel_bins) Whisper log-mel of 16 kHz waveforms and their frame counts; with window "30s"
        each waveform is padded with silence to the encoder's window first."""
        longest = max(len(w) for w in waves)
        # the bound of training, sate evaluate and the API (480,159 samples fit 3,000 frames); 480,000 refused more
        if (beyond := beyond_window(longest, self.max_seconds())) is not None:
            raise SateError(f"a segment of {beyond} Whisper's window holds: split it into shorter segments")
        # padded to 30 s, as Whisper pads; a segment a little longer keeps its own length (3,000 frames either way)
        width = max(self.encoder.max_frames() * HOP_LENGTH, longest) if self.window == "30s" else longest
        batch = torch.zeros(len(waves), width)
        for i, wave in enumerate(waves):
            batch[i, :len(wave)] = torch.as_tensor(wave, dtype=torch.float32)
        lengths = torch.tensor([width if self.window == "30s" else len(w) for w in waves])
        return whisper_log_mel(batch, lengths, self.encoder.sizes.mel_bins)

    @torch.inference_mode()
    def greedy(self, feats: torch.Tensor, lengths: torch.Tensor) -> list[list[int]]:
        """(B, T, mel_bins) log-mel, (B,) frames -> each utterance's tokens after the prompt, without the end."""
        memory, memory_lengths = self.encoder(feats.to(self.device), lengths.to(self.device))
        cross = self.decoder.cross_states(memory)
        batch = feats.size(0)
        prompt = torch.tensor(self.tokens.prompt, device=self.device).expand(batch, -1)
        logits, cache = self.decoder.step(prompt, None, cross, memory_lengths)
        end = self.tokens.end
        done = torch.zeros(batch, dtype=torch.bool, device=self.device)
        chosen: list[torch.Tensor] = []
        for step in range(self.max_tokens):
            scores = logits[:, -1].clone()
            scores[:, self.suppress] = float("-inf")
            if step == 0:
                scores[:, self.suppress_begin] = float("-inf")
            token = scores.argmax(dim=-1).masked_fill(done, end)
            done |= token == end
            if bool(done.all()):
                break
            chosen.append(token)
            logits, cache = self.decoder.step(token[:, None], cache, cross, memory_lengths)
        rows = torch.stack(chosen, dim=1).tolist() if chosen else [[] for _ in range(batch)]
        return [row[:row.index(end)] if end in row else row for row in rows]

    def transcribe(self, waves: Sequence[np.ndarray], batch_size: int = 16) -> list[str]:
        """English text of each 16 kHz waveform, decoded in length-sorted batches; results in input order.

        Each waveform is taken as `SpeechTranslator.features` takes samples (`to_mono_16k`): float in [-1, 1] or
        integer PCM, (n,) or (n, channels). int16 PCM was read as floats 32,768 times too loud and NaN samples were
        decoded, both to a transcript, exit 0; stereo was a torch traceback; a waveform beyond the window was named
        by its length alone (31st hostile pass), and a too-short one (window "natural") by its place in the
        length-sorted batch."""
        if batch_size < 1:
            raise SateError(f"the batch size must be >= 1, got {batch_size}")
        waves = [to_mono_16k(wave, SAMPLE_RATE, f"waves[{i}]") for i, wave in enumerate(waves)]
        for i, wave in enumerate(waves):
            if (beyond := beyond_window(len(wave), self.max_seconds())) is not None:
                raise SateError(f"waves[{i}]: {beyond} Whisper's window holds: cut it at pauses (sate segment)")
            # at its natural length, a waveform of 200 samples or fewer was named by its place in the length-sorted
            # batch ("item 1 of the batch"), not the caller's index, with advice about stored features (review31w)
            if self.window == "natural" and len(wave) <= N_FFT // 2:
                raise SateError(f"waves[{i}]: {len(wave)} samples, too short for Whisper's front-end at its natural "
                                f"length (it needs more than {N_FFT // 2}): pad it with silence to 0.1 s, or load the "
                                "recogniser with window='30s', which pads every waveform to Whisper's window")
        order = sorted(range(len(waves)), key=lambda i: -len(waves[i]))
        out = [""] * len(waves)
        for k in range(0, len(order), batch_size):
            batch = order[k:k + batch_size]
            for i, ids in zip(batch, self.greedy(*self.log_mel([waves[i] for i in batch])), strict=True):
                out[i] = self.tokens.decode(ids)
        return out
