"""The acoustic encoder: ESPnet's Conformer or Transformer encoder with conv2d subsampling (4x).

The ESPnet module is kept whole as ``.encoder`` so that an ESPnet2 ASR experiment's
``encoder.*`` keys load into it unchanged.
"""

from __future__ import annotations

import torch
from torch import nn

from sate.models.config import AcousticConfig
from sate.models.espnet_blocks import (
    ConformerEncoder,
    Conv2dSubsampling,
    EspnetKwargs,
    TransformerEncoder,
    block_kwargs,
)

FEATURE_DIM = 80  # fbank bins written by the data pipeline
# Frames of the shortest input the 4x subsampling turns into two encoder frames: in training, the Conformer's
# BatchNorm needs two values per channel, and a batch of one utterance of one encoder frame had one. (Fewer than 7
# frames, no encoder frame, stay ESPnet's to refuse: `sate features` pads every utterance to 8.)
TWO_ENCODER_FRAMES = 11


def espnet_encoder_kwargs(conf: AcousticConfig, d_model: int,
                          ctc_layer: int | None = None) -> tuple[str, EspnetKwargs]:
    """The ESPnet encoder name and constructor arguments for our `acoustic` config section.

    Besides what the config sets, we fix the choices of ESPnet's Conformer recipes (macaron
    feed-forward, latest relative positions, swish); `sate.models.pretrained` compares these with an ESPnet
    experiment's ``encoder_conf`` before loading its weights. A CTC layer below the top is ESPnet's
    intermediate output (``interctc_layer_idx``, layer-normed like the top), without self-conditioning.
    """
    kwargs = EspnetKwargs(output_size=d_model, **block_kwargs(conf, input_layer="conv2d"))
    if ctc_layer is not None and ctc_layer < conf.layers:
        kwargs["interctc_layer_idx"] = [ctc_layer]
    if conf.type == "conformer":
        kwargs.update(macaron_style=True, rel_pos_type="latest", pos_enc_layer_type="rel_pos",
                      selfattention_layer_type="rel_selfattn", activation_type="swish",
                      use_cnn_module=True, cnn_module_kernel=conf.kernel)
    return conf.type, kwargs


def narrow_frontend(embed: Conv2dSubsampling, input_size: int, channels: int, d_model: int) -> None:
    """Give ESPnet's conv2d subsampling `channels` filters instead of d_model.

    ESPnet ties the channel count to d_model, and on CPU that front-end costs about half a
    training step of a small Conformer; 32 channels measured 1.6x faster. The layout (module
    names, 4x subsampling, lengths) stays ESPnet's, so only the weight shapes change.
    """
    embed.conv = nn.Sequential(
        nn.Conv2d(1, channels, 3, 2), nn.ReLU(), nn.Conv2d(channels, channels, 3, 2), nn.ReLU()
    )
    embed.out[0] = nn.Linear(channels * (((input_size - 1) // 2 - 1) // 2), d_model)


def build_acoustic(conf: AcousticConfig, d_model: int, ctc_layer: int | None = None) -> nn.Module:
    """The acoustic encoder of an `acoustic` section: ours on fbank, or a hub model on waveforms."""
    if conf.type == "whisper":
        from sate.models.hub.whisper import WhisperAcousticEncoder  # heavy: the Whisper loader, only when chosen

        return WhisperAcousticEncoder(conf, d_model)
    if conf.kind.hub:
        from sate.models.hub.speech import HubAcousticEncoder

        return HubAcousticEncoder(conf, d_model)
    return AcousticEncoder(conf, d_model, ctc_layer=ctc_layer)


class AcousticEncoder(nn.Module):
    """Filterbank frames -> acoustic states, 4x shorter.

    Two hooks make an utterance's output independent of what it is batched with (ESPnet's encoder
    alone is not): the subsampling mask is recomputed from the true lengths (ESPnet slices the padded
    mask, which gives a padded utterance one frame more than it has alone, built from padding and
    attended to by every position), and padded frames are zeroed before each Conformer depthwise
    convolution, which is the zero padding an utterance gets when decoded alone. Hooks change no
    parameter, so ESPnet2 weights still load.
    """

    def __init__(self, conf: AcousticConfig, d_model: int, input_size: int = FEATURE_DIM,
                 ctc_layer: int | None = None) -> None:
        super().__init__()
        self.espnet_name, kwargs = espnet_encoder_kwargs(conf, d_model, ctc_layer)
        self.espnet_kwargs = kwargs
        cls = ConformerEncoder if self.espnet_name == "conformer" else TransformerEncoder
        self.encoder = cls(input_size, **kwargs)
        channels = conf.frontend_channels
        if channels is not None and channels != d_model:
            narrow_frontend(self.encoder.embed, input_size, channels, d_model)
        self._valid: torch.Tensor | None = None  # (B, 1, T') mask of the forward pass in progress
        self.encoder.embed.register_forward_hook(self._true_length_mask)
        for layer in self.encoder.encoders:
            conv = getattr(layer, "conv_module", None)
            if conv is not None:
                conv.depthwise_conv.register_forward_pre_hook(self._zero_padding)

    def _true_length_mask(self, module: nn.Module, inputs: tuple, output: tuple) -> tuple:
        x, mask = output
        if mask is None:
            return output
        lengths = inputs[1].sum(-1).squeeze(-1)  # the input mask (B, 1, T) -> (B,)
        frames = (x[0] if isinstance(x, tuple) else x).size(1)  # x is (x, pos_emb) with relative positions
        sub = ((lengths - 1) // 2 - 1) // 2
        self._valid = (torch.arange(frames, device=sub.device)[None, :] < sub[:, None]).unsqueeze(1)
        return x, self._valid

    def _zero_padding(self, module: nn.Module, inputs: tuple) -> tuple | None:
        if self._valid is None:
            return None
        (x,) = inputs  # (B, channels, T')
        return (x.masked_fill(~self._valid, 0.0),)

    def forward(self, feats: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T, 80), (B,) -> (B, T', D), (B,) with T' = ((T - 1) // 2 - 1) // 2."""
        out, _, out_lengths = self.with_ctc_input(feats, lengths)
        return out, out_lengths

    def with_ctc_input(self, feats: torch.Tensor,
                       lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(B, T, 80), (B,) -> top states (B, T', D), the CTC layer's states (B, T', D), lengths (B,).

        With CTC on top both are the same tensor.
        """
        padded = self.training and self.espnet_name == "conformer" and feats.size(0) == 1 \
            and ((feats.size(1) - 1) // 2 - 1) // 2 == 1
        if padded:
            # a 0.1-s segment (8 frames: one encoder frame), alone in a training batch (its neighbour in length over
            # half of batch.per_device, or a corpus of one), was ESPnet's BatchNorm ValueError, a traceback (28th
            # hostile pass). It is padded as a longer neighbour would pad it: its lengths, and so its masks, stay.
            feats = torch.nn.functional.pad(feats, (0, 0, 0, TWO_ENCODER_FRAMES - feats.size(1)))
        try:
            out, out_lengths, _ = self.encoder(feats, lengths)
        finally:
            self._valid = None
        ctc_input = out
        if isinstance(out, tuple):  # (top, [(layer, states)]): ESPnet's intermediate output
            out, [(_, ctc_input)] = out
        if padded:  # the padding's frame is cut again: the ASR teacher's CTC frames (KD_asr), encoded in eval mode
            # without it, were one fewer, refused as a teacher of another front-end (30th hostile pass)
            out, ctc_input = out[:, :1], ctc_input[:, :1]
        return out, ctc_input, out_lengths
