"""What the three models share: their identity (task, resolved config, vocabularies) and outputs."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from sate.data.tokens import IGNORE_ID
from sate.errors import SateError
from sate.models.config import ModelConfig

# A batch as the models read it: name -> tensor (feats, feats_lengths, src, src_lengths, tgt, tgt_lengths, ...).
Batch = dict[str, torch.Tensor]
# What forward() returns: "loss" (the tensor to optimise) and floats for logging.
Stats = dict[str, torch.Tensor | float]


class Encoded(NamedTuple):
    """What decoding needs from a speech input.

    memory (B, T, D) and memory_lengths (B,): what the decoder attends to.
    ctc_logits (B, T', V_src) and ctc_lengths (B,): full-length CTC outputs (T' >= T after shrink).
    """

    memory: torch.Tensor
    memory_lengths: torch.Tensor
    ctc_logits: torch.Tensor
    ctc_lengths: torch.Tensor


class SateModel(nn.Module):
    """Base of ASRModel, MTModel and STModel; ``forward(batch)["loss"]`` is what training calls."""

    task: str

    def __init__(self, conf: ModelConfig, src_vocab_size: int, tgt_vocab_size: int) -> None:
        super().__init__()
        self.conf = conf
        self.src_vocab_size = src_vocab_size
        self.tgt_vocab_size = tgt_vocab_size

    @property
    def eos(self) -> int:
        """The decoder's end token: the last index of our vocabularies, 0 in Marian's (`sate.models.decoder`)."""
        from sate.models.decoder import token_conventions

        return token_conventions(self.decoder)[1]

    @property
    def sos(self) -> int:
        """The decoder's start token: the last index of our vocabularies and of Marian's."""
        from sate.models.decoder import token_conventions

        return token_conventions(self.decoder)[0]


def cut_to_longest(x: torch.Tensor, lengths: torch.Tensor, names: tuple[str, str]) -> tuple[torch.Tensor, torch.Tensor]:
    """An encoder's input (x, lengths) checked and its padding cut to the longest item (a view): ESPnet's encoders
    build their masks as wide as the longest length, so a batch padded wider (some items of a collated batch,
    `{k: v[idx]}`) was a size mismatch deep in the attention, a length past the padded width was read from past
    the padding (speech) or a size mismatch (text), a negative one decoded or was an IndexError, and one utterance's
    (T, 80) features without their batch dimension were "longer than feats's 80 positions" (twenty-eighth hostile
    pass). `names` are the arguments' names, as the message gives them."""
    if not (torch.is_tensor(x) and torch.is_tensor(lengths)) or lengths.numel() == 0:
        return x, lengths
    data, length = names
    if lengths.dim() != 1 or lengths.is_floating_point() or lengths.dtype == torch.bool:
        raise SateError(f"{length} must be a 1-d tensor of whole numbers, one length per item of {data}; got "
                        f"{lengths.dtype} of shape {tuple(lengths.shape)}")
    if x.dim() < 2 or x.size(0) != lengths.numel():
        if x.dim() < 2 or lengths.numel() == 1:
            raise SateError(f"{data} of shape {tuple(x.shape)} lacks its batch dimension: one item is {data}[None], "
                            f"with its length alone in {length}")
        raise SateError(f"{data} holds {x.size(0)} items (its first dimension) but {length} {lengths.numel()} "
                        "lengths; give one length per item")
    values, width = lengths.tolist(), x.size(1)  # one transfer from the device; ESPnet's pad mask makes one too
    bad = next((i for i, n in enumerate(values) if not 0 <= n <= width), None)
    if bad is not None and values[bad] < 0:
        raise SateError(f"{length} holds {values[bad]} at item {bad}; a length cannot be negative")
    if bad is not None:
        raise SateError(f"{length} holds {values[bad]} at item {bad}, past the {width} positions of {data}; each "
                        "length must be at most the padded width (`collate` gives both)")
    # An empty text item (a dev row whose source is "(Applause)" alone: `sate prep` keeps it outside training splits)
    # is encoded as one padding token, beside others or alone: refusing it stopped an MT run at its first validation
    # (review28z), and its length 0 beside others was read by ESPnet's pad mask as the batch's whole width, its memory
    # (so an MT dev loss, and `encode_text` then `decode_memory`) the padding of however wide a batch it fell in
    # (thirtieth hostile pass). A batch of empty speech is refused (one padding frame is too short for the front end).
    longest = max(values)
    if not x.is_floating_point():
        if not width:  # a batch of empty texts alone, as `collate` pads it: (B, 0), refused as "every item of src is
            # empty", stopped an MT run at the validation batch that "(Applause)" rows (short targets) shared (32nd)
            x = x.new_full((x.size(0), 1, *x.shape[2:]), IGNORE_ID)
        return x[:, :max(longest, 1)], lengths.clamp(min=1)
    if longest == 0:
        raise SateError(f"every item of {data} is empty (its {length} are all 0): nothing to encode")
    return x[:, :longest], lengths


def token_accuracy(logits: torch.Tensor, targets: torch.Tensor) -> float:
    """Share of non-padding positions where the argmax is the target: (B, L, V), (B, L) -> float."""
    mask = targets != IGNORE_ID
    correct = (logits.argmax(-1) == targets) & mask
    return float(correct.sum()) / max(int(mask.sum()), 1)


def stats(loss: torch.Tensor, **terms: torch.Tensor | float | None) -> Stats:
    """The forward() result: the loss to optimise plus detached floats for logging."""
    out: Stats = {"loss": loss}
    out.update({k: float(v.detach()) if isinstance(v, torch.Tensor) else float(v)
                for k, v in terms.items() if v is not None})
    return out
