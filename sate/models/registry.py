"""The registries of choices: one entry per acoustic, adaptor and text type, with what the config checks of it.

A type's module lives with its part (`sate.models.adaptor.ADAPTORS` maps each adaptor type to its class); an
entry here says which config keys apply to it and what the model around it needs (a source embedding, the CTC
posteriors, a hub directory), so that `sate.models.config` checks a config without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AcousticKind:
    """An acoustic encoder type: on fbank (ours, ESPnet blocks), or a downloaded hub model on waveforms."""

    hub: bool = False  # a downloaded model read from acoustic.path (sate.models.hub), 16 kHz waveforms in
    kernel: bool = False  # has the Conformer's depthwise convolution (acoustic.kernel)


ACOUSTIC_TYPES: dict[str, AcousticKind] = {
    "conformer": AcousticKind(kernel=True),
    "transformer": AcousticKind(),
    "hf_wav2vec2": AcousticKind(hub=True),
    "hf_hubert": AcousticKind(hub=True),
    "hf_wavlm": AcousticKind(hub=True),
    # Whisper's encoder (sate.models.hub.whisper), from a Hugging Face or a CTranslate2 (faster-whisper) directory;
    # its log-mel front-end runs inside the model, so it reads waveforms too.
    "whisper": AcousticKind(hub=True),
}
HUB_ACOUSTIC_TYPES = tuple(name for name, kind in ACOUSTIC_TYPES.items() if kind.hub)


@dataclass(frozen=True)
class AdaptorKind:
    """An adaptor type (`sate.models.adaptor`): which of the two branches its output is built from."""

    linear: bool  # the linear branch ReLU(Dropout(LN(W·h + b))): adaptor.dropout applies
    soft: bool  # the soft branch P·E over the CTC posteriors P: adaptor.temperature and adaptor.embedding apply
    shrinks: bool = False  # CTC compression first, then the adaptor adaptor.shrink_mode names


# "none" passes the acoustic states to the decoder unchanged: the E2E ST baseline (textual.layers 0).
ADAPTOR_TYPES: dict[str, AdaptorKind] = {
    "none": AdaptorKind(linear=False, soft=False),
    "linear": AdaptorKind(linear=True, soft=False),
    "soft": AdaptorKind(linear=False, soft=True),
    "league": AdaptorKind(linear=True, soft=True),
    "gated": AdaptorKind(linear=True, soft=True),
    "inter": AdaptorKind(linear=False, soft=True),
    "shrink": AdaptorKind(linear=False, soft=True, shrinks=True),
}
SHRINK_MODES = ("soft", "league")


@dataclass(frozen=True)
class TextKind:
    """A textual encoder or decoder type: ours (ESPnet's pre-LN blocks) or a downloaded Marian model's."""

    hub: bool = False  # sizes and the `hub` dict come from textual.path (sate.models.hub.marian)


# hf_marian: an OPUS-MT (Marian) model's encoder and decoder, on ESPnet's post-norm blocks.
TEXT_TYPES: dict[str, TextKind] = {"transformer": TextKind(), "hf_marian": TextKind(hub=True)}
# E of the soft branch: the MT source embedding (the paper), or the decoder's (the authors' code, joint vocabulary).
ADAPTOR_EMBEDDINGS = ("source", "decoder")
# Loss scale: summed per utterance and averaged over the batch (ESPnet), or divided by target tokens (fairseq).
LOSS_NORMALIZATIONS = ("utterance", "token")
# Upper bounds far beyond any model built so far (Whisper large: d 1,280, ffn 5,120, 32 layers), so that a typo
# of a few zeros is refused by `sate config` and `sate train` before anything is built, and a hub directory's
# config.json by its own keys (sate.models.hub.settings).
MAX_WIDTH = 1 << 16
MAX_BLOCKS = 10000
