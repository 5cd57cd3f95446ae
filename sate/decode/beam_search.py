"""Batched beam search: all utterances of a batch times all their beams advance together, one token a step.

The search follows ESPnet's `BeamSearch` step for step, so that with the same decoder, beam and maximum
length it finds the same hypotheses with the same scores (a test checks this):

- Every utterance starts from one hypothesis, ``<sos>``. At each step the running hypotheses of an
  utterance are extended by every token and the ``beam`` best extensions by summed log-probability are
  kept. Those that end with ``<eos>`` leave the beam and join the utterance's finished hypotheses; the
  others run on. (fairseq instead keeps ``beam`` running hypotheses besides the finished ones; ESPnet's
  rule is kept here so that both toolkits' results can be compared exactly.)
- At the maximum length, the hypotheses still running are finished as they are, with an ``<eos>`` that
  adds no log-probability (ESPnet's rule).
- Below the minimum length, ``<eos>`` cannot be chosen. (ESPnet picks such hypotheses and then drops
  them, which wastes beam slots; fairseq masks ``<eos>`` as done here.)

Finished hypotheses are ranked by ``(logp + length_bonus * m) / n ** lenpen``: ``n`` counts the tokens
including ``<eos>``, ``m`` the tokens the search chose (``n``, or ``n - 1`` for a hypothesis cut at the
maximum length, whose ``<eos>`` is free). ``lenpen`` is fairseq's length normalisation, ``length_bonus``
ESPnet's ``penalty`` (its `LengthBonus` scorer). Neither changes which hypotheses the search keeps (all
running hypotheses of a step have the same length), only which finished hypothesis wins.

Stopping rule: an utterance is done when its ``nbest``-th best finished score is at least the best
score that any of its running hypotheses could still reach. Log-probabilities are at most 0, so a
running hypothesis with ``t`` tokens and summed log-probability ``s`` finishes at best with
``max over n in [t + 1, max_len + 1] of (s + length_bonus * min(n, max_len)) / n ** lenpen``. The result
is therefore exactly what the search gives when it runs every utterance to its maximum length, as
ESPnet does. Without normalisation the bound is ``s + length_bonus * (t + 1)`` and the search stops soon
after the best hypothesis ends; with ``lenpen > 0`` it allows for length gains up to the maximum length,
so the search runs on longer, the more so the larger ``max_len_ratio``.

Batching: decoder states are kept for every (utterance, beam) pair and reordered by beam origin each
step; the encoder memory is masked beyond each utterance's length, so an utterance gives the same
result in any batch; finished utterances leave the batch. The decoder step is ESPnet's
`TransformerDecoder` arithmetic (pre-LN layers: self-attention, source attention, feed-forward; or post-LN
layers, a Marian decoder's), run on its own modules, with two caches that ESPnet's ``forward_one_step``
recomputes every step: the source attention's keys and values of the memory, computed once per utterance and
shared by its beams, and the self-attention keys and values of the prefix. A test checks that it gives the
log-probabilities of ``forward_one_step``.

Token conventions come from the decoder (`sate.models.decoder`): hypotheses start from its ``sos_id``, and
its ``banned_ids`` (a Marian decoder's pad) get no probability. Their log-probabilities are taken out after
the softmax, as transformers' ``bad_words_ids`` does, so a greedy search returns what ``generate(num_beams=1)``
returns with pad banned. The output length is capped at the decoder's positions (Marian: 512).

A forced prefix (``decode_memory(..., prefix=TOKENS)``, what a streaming policy has already shown): for its first
steps the search may only choose the prefix's tokens, each with its own log-probability, so every hypothesis
starts with the prefix and is scored as a whole (fairseq's ``prefix_tokens``), and the beam opens after it.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import torch
from espnet.nets.pytorch_backend.transformer.subsampling import TooShortUttError
from torch import nn

from sate.decode.api_args import option_values
from sate.decode.options import DecodeOptions
from sate.errors import SateError
from sate.models.base import SateModel
from sate.models.decoder import token_conventions
from sate.settings import read


@dataclass
class Hypothesis:
    """One finished translation of an utterance."""

    tokens: list[int]  # target ids, no sos/eos
    score: float  # (logp + length_bonus * m) / n ** lenpen, n = len(tokens) + 1 (module doc); what ranks them
    logp: float  # sum of token log-probs incl. eos (a hypothesis cut at the max length has no eos term)


def length_limits(lengths: torch.Tensor, options: DecodeOptions) -> tuple[torch.Tensor, torch.Tensor]:
    """Min and max output lengths (B,) for memory lengths (B,): floor(min ratio x n), max(1, ceil(max ratio x n))."""
    # Rounded to 1e-6 first so that float noise (0.3 x 10 = 3.0000000000000004) does not move a limit.
    scaled_min = torch.round(lengths.double() * options.min_len_ratio * 1e6) / 1e6
    scaled_max = torch.round(lengths.double() * options.max_len_ratio * 1e6) / 1e6
    return scaled_min.floor().long(), scaled_max.ceil().long().clamp(min=1)


def encode_for_decoding(model: SateModel, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """memory (B, T, D) and memory_lengths (B,) of an MT batch (src) or a speech batch (feats)."""
    keys = ("src", "src_lengths") if model.task == "mt" else ("feats", "feats_lengths")
    missing = [key for key in keys if not isinstance(batch, Mapping) or key not in batch]
    if missing:  # a text batch given to an ST model was a KeyError (25th hostile pass)
        dataset = "TextDataset" if model.task == "mt" else "SpeechDataset"
        raise SateError(f"batch: an {model.task.upper()} model decodes {' and '.join(keys)}, which the batch lacks "
                        f"({', '.join(missing)}); `collate` of a {dataset} gives them")
    batch = _checked(model, batch, keys)
    if model.task == "mt":  # the models check the lengths and cut the padding past the longest (cut_to_longest)
        return model.encode_text(batch["src"], batch["src_lengths"])
    given = _input_lengths(batch, keys)
    need = _hub_min_samples(model)
    feats = batch["feats"]
    if need and torch.is_tensor(feats) and feats.dim() == 2 and feats.size(1) < need:
        # every item shorter than a hub (wav2vec2) front end's window was torch's "Calculated padded input size"
        _too_short(given, feats.size(1), need, "samples")
    try:
        enc = model.encode(feats, batch["feats_lengths"])
    except TooShortUttError as err:  # every item shorter than the front end takes: ESPnet's traceback
        _too_short(given, err.actual_size, err.limit, "frames")
    # an item too short in a batch of longer ones has no acoustic frame, but the textual encoder's mask (ESPnet's
    # make_pad_mask) reads a length of 0 as the whole padded width: it was translated from the padding, exit 0
    short = (enc.ctc_lengths < 1) & (given.to(enc.ctc_lengths.device) > 0) if given is not None else None
    if short is not None and bool(short.any()):
        i = int(short.nonzero()[0])
        raise SateError(f"batch: feats_lengths[{i}] is {int(given[i])}, too short for the acoustic encoder's front "
                        f"end (it gives no frame): {PAD_ADVICE}")
    return enc.memory, enc.memory_lengths


def _hub_min_samples(model: SateModel) -> int:
    """The fewest samples a hub (wav2vec2, HuBERT, WavLM) front end's convolutions turn into one frame (400 for
    wav2vec2), or 0 for other acoustic encoders: fbank ones raise ESPnet's TooShortUttError, Whisper its own line."""
    extractor = getattr(getattr(getattr(getattr(model, "acoustic", None), "encoder", None), "model", None),
                        "feature_extractor", None)
    layers = getattr(extractor, "conv_layers", None)
    if layers is None:
        return 0
    need = 1
    for layer in reversed(list(layers)):
        need = (need - 1) * int(layer.stride) + int(layer.kernel_size)
    return need


def _too_short(given: torch.Tensor | None, width: int, need: int, unit: str) -> None:
    """Refuse a batch whose every item is shorter than the front end takes, naming the first such item (not only
    the padded width, which is no item's where the first is empty)."""
    if given is not None:
        i = next((i for i, n in enumerate(given.tolist()) if 0 < n < need), 0)
        what = f"feats_lengths[{i}] is {int(given[i])} {unit}"
    else:
        what = f"feats are {width} {unit} wide"
    raise SateError(f"batch: {what}, too short for the acoustic encoder's front end (at least {need}): "
                    f"{PAD_ADVICE}") from None


def _checked(model: SateModel, batch: Mapping, keys: tuple[str, str]) -> Mapping:
    """The batch as the model can read it, or a refusal. Floating features are never refused for their precision:
    float64 (numpy's default, through torch.from_numpy: torch's "Input type (double) and bias type (float)" for
    fbank models) is cast to float32, what stored features and the API give, unless the model's weights are
    float64; outside torch.autocast the features are then given in the weights' precision (a model cast whole),
    under it as they are (autocast mixes them; Whisper casts its waveform itself).
    Features that are not floating are refused. Integer source ids of any integer dtype are cast to long (int16 or
    uint8 was the embedding's traceback); ids that are no token of the vocabulary within an item's length (past it,
    the padding is never read) are refused: an id past the vocabulary was an IndexError of the embedding, a negative
    one was read as token 0, exit 0."""
    x = batch[keys[0]]
    if not torch.is_tensor(x):
        return batch
    if model.task != "mt":
        if not x.is_floating_point():
            raise SateError(f"batch: feats holds {x.dtype} values; the acoustic encoder reads floating features or "
                            "samples (`collate` of a SpeechDataset gives float32)")
        weights = next(model.parameters(), None)
        if x.dtype == torch.float64 and (weights is None or weights.dtype != torch.float64):
            x = x.float()
        # outside autocast, in the weights' precision: a model cast whole (model.half(), bfloat16, float64) given
        # `collate`'s float32 was torch's "Input type (float) and bias type (c10::Half) should be the same", where an
        # MT model cast so decodes its ids (33rd hostile pass)
        if weights is not None and weights.is_floating_point() and x.dtype != weights.dtype \
                and not torch.is_autocast_enabled(x.device.type):
            x = x.to(weights.dtype)
        return batch if x is batch[keys[0]] else {**batch, keys[0]: x}
    if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
        raise SateError(f"batch: src holds {x.dtype} values; an MT model reads token ids, an integer tensor (`collate` "
                        "of a TextDataset gives them)")
    if x.dtype != torch.long:
        x = x.long()
        batch = {**batch, keys[0]: x}
    lengths = _input_lengths(batch, keys)
    if lengths is None or x.dim() != 2 or not x.numel():
        return batch
    inside = torch.arange(x.size(1), device=x.device)[None, :] < lengths.to(x.device).clamp(min=0)[:, None]
    bad = inside & ((x < 0) | (x >= model.src_vocab_size))
    if bool(bad.any()):
        item, position = (int(i) for i in bad.nonzero()[0])
        raise SateError(f"batch: src holds {int(x[item, position])} at item {item}, position {position}, within its "
                        f"length: token ids run from 0 to {model.src_vocab_size - 1} (the model's source vocabulary); "
                        "only the padding past each length may hold others (`collate` pads with -1)")
    return batch


# what to do with speech too short to encode: what sate's own features and the Python API do
PAD_ADVICE = "pad it to 0.1 s, as stored features and `SpeechTranslator.features` do"


def _input_lengths(batch: Mapping, keys: tuple[str, str]) -> torch.Tensor | None:
    """The batch's input lengths where they are one whole number per item of its input (a 1-d integer tensor, or a
    list of ints), else None: the models' own checks name what is wrong with them."""
    x, lengths = batch.get(keys[0]), batch.get(keys[1])
    if isinstance(lengths, list | tuple) and all(isinstance(n, int) and not isinstance(n, bool) for n in lengths):
        lengths = torch.tensor(lengths, dtype=torch.long)
    if not (torch.is_tensor(x) and torch.is_tensor(lengths)) or lengths.dim() != 1 or lengths.is_floating_point() \
            or lengths.dtype == torch.bool or lengths.is_complex() or x.dim() < 2 or x.size(0) != lengths.numel():
        return None
    return lengths


def _nothing() -> list[Hypothesis]:
    """What an empty input (length 0) decodes to: one empty hypothesis, as `translate_text` gives an empty
    translation of an empty sentence; there is nothing for the decoder to attend to."""
    return [Hypothesis([], 0.0, 0.0)]


# Decodings of one module under way (threads sharing a pack), and the training flag it had before the first began.
_DECODING: dict[nn.Module, tuple[int, bool]] = {}
_DECODING_LOCK = threading.Lock()


@contextlib.contextmanager
def eval_mode(module: nn.Module) -> Iterator[None]:
    """Dropout off while decoding; the module's training flag is restored when the last decoding of it ends. Each
    call putting its own flag back, two threads translating with a model left in training mode decoded part of one
    input with dropout and left the model in eval mode, so the next fine-tuning step ran without it (review33a)."""
    with _DECODING_LOCK:
        count, was_training = _DECODING.get(module, (0, module.training))
        _DECODING[module] = (count + 1, was_training)
        module.eval()
    try:
        yield
    finally:
        with _DECODING_LOCK:
            count, was_training = _DECODING.pop(module)
            if count > 1:
                _DECODING[module] = (count - 1, was_training)
            else:
                module.train(was_training)


@torch.no_grad()
def beam_search(model: SateModel, batch: dict,
                options: DecodeOptions = DecodeOptions()) -> list[list[Hypothesis]]:  # noqa: B008 - frozen
    """Per utterance of the batch, the nbest hypotheses, best first.

    Works for st and asr with a decoder (batch has feats, feats_lengths) and mt (batch has src, src_lengths) models;
    the model runs in eval mode and is put back in its previous mode afterwards.
    """
    options = _typed(options)
    if getattr(model, "decoder", None) is None:  # 'ASRModel' object has no attribute 'eos'
        raise SateError(f"an {model.task.upper()} model without a decoder (CTC only) has no beam search: its "
                        "transcripts are the CTC head's (sate.models.ctc.ctc_greedy of model.encode's ctc_logits)")
    keys = ("src", "src_lengths") if model.task == "mt" else ("feats", "feats_lengths")
    with eval_mode(model):
        lengths = _input_lengths(batch, keys) if isinstance(batch, Mapping) else None
        if lengths is not None and lengths.numel() == 0:  # no utterances: ESPnet's mask was max() of nothing
            return []
        # An empty item (an MT dev row of "(Applause)" alone, whose src_norm is empty) was read over the whole
        # padded width (ESPnet's pad mask of a length 0) and translated from the padding, as long as the batch was
        # wide; alone it was refused. It gets an empty hypothesis wherever it is.
        empty = lengths == 0 if lengths is not None else None
        if empty is not None and bool(empty.all()):
            return [_nothing() for _ in range(lengths.numel())]
        memory, memory_lengths = encode_for_decoding(model, batch)
        if empty is None or not bool(empty.any()):
            return decode_memory(model.decoder, memory, memory_lengths, model.eos, options)
        keep = (~empty).nonzero(as_tuple=True)[0].to(memory.device)
        found = iter(decode_memory(model.decoder, memory[keep], memory_lengths[keep], model.eos, options))
        return [_nothing() if none else next(found) for none in empty.tolist()]


def _typed(options: object) -> DecodeOptions:
    """``options`` with each field of its type, for either entry point: None or a dict was an AttributeError deep in
    the search, and `DecodeOptions(beam=2.5)` a TypeError of torch.full. `decode_memory` took options unchecked (the
    docs' encode-once path): `DecodeOptions(lenpen=-1)`, within the bounds but an int, was torch's "Integers to
    negative integer powers are not allowed" at the first finished hypothesis, where `beam_search` read it as -1.0
    (33rd hostile pass). The bounds are the callers' (`check_limits`)."""
    if not isinstance(options, DecodeOptions):
        raise SateError(f"options must be DecodeOptions (e.g. DecodeOptions(beam=5)), got {type(options).__name__}")
    return read(DecodeOptions, option_values(options), "options: ", noun="decoding option")


@torch.no_grad()
def decode_memory(decoder: nn.Module, memory: torch.Tensor, memory_lengths: torch.Tensor, eos: int,
                  options: DecodeOptions, prefix: Sequence[int] = ()) -> list[list[Hypothesis]]:
    """The same from an already encoded memory (B, T, D) with lengths (B,), so callers that also need
    the CTC output encode once. `decoder` is the model's ESPnet `TransformerDecoder`. Every hypothesis of
    every utterance starts with `prefix` (target ids, no sos; module doc), cut at the maximum length."""
    options = _typed(options)
    memory_lengths = _memory_lengths(decoder, memory, memory_lengths)
    with eval_mode(decoder):
        return _search(decoder, memory, memory_lengths, eos, options, prefix)


def _memory_lengths(decoder: nn.Module, memory: object, lengths: object) -> torch.Tensor:
    """The lengths (B,) of a memory (B, T, D) the decoder attends to, on its device, or one line saying what is wrong
    with either. The encode-once path takes them from the caller: one length for a batch of two was broadcast, the
    second utterance read to the first's length from the padding, exit 0; a length past T, a memory of one utterance
    (T, D) or of another width were torch's size tracebacks, a list of lengths an AttributeError (hand31e); a negative
    length was called an empty encoder output (hand32k)."""
    width = decoder.decoders[0].src_attn.linear_k.in_features
    if not torch.is_tensor(memory) or memory.dim() != 3 or memory.size(-1) != width:
        got = tuple(memory.shape) if torch.is_tensor(memory) else type(memory).__name__
        raise SateError(f"memory: expected a (batch, positions, {width}) tensor, the encoder's output, got {got}")
    if isinstance(lengths, list | tuple) and all(isinstance(n, int) and not isinstance(n, bool) for n in lengths):
        lengths = torch.tensor(lengths, dtype=torch.long)
    if not torch.is_tensor(lengths) or lengths.shape != memory.shape[:1] or lengths.dtype == torch.bool \
            or lengths.is_complex():
        got = tuple(lengths.shape) if torch.is_tensor(lengths) else type(lengths).__name__
        raise SateError(f"memory_lengths: expected one length per utterance of the memory ({memory.size(0)}), got "
                        f"{got}")
    if lengths.is_floating_point() and not bool((lengths == lengths.round()).all()):
        raise SateError(f"memory_lengths: expected whole numbers of positions, got {lengths.tolist()}")
    lengths = lengths.to(device=memory.device, dtype=torch.long)
    if lengths.numel() and int(lengths.min()) < 0:  # was "utterance 1 of the batch has an empty encoder output"
        i = int(lengths.argmin())
        raise SateError(f"memory_lengths[{i}] is {int(lengths[i])}: a length counts the memory's positions (0 to "
                        f"{memory.size(1)})")
    if lengths.numel() and int(lengths.max()) > memory.size(1):
        i = int(lengths.argmax())
        raise SateError(f"memory_lengths[{i}] is {int(lengths[i])}, past the {memory.size(1)} positions of the memory")
    return lengths


class _IncrementalDecoder:
    """ESPnet's `TransformerDecoder`, one token at a time for (utterances x beams) hypotheses.

    Holds, per layer, the source attention's keys and values of each utterance's memory (A, H, T, dk)
    and the self-attention keys and values of every hypothesis' prefix (A * K, H, t, dk). ESPnet's
    ``forward_one_step`` recomputes both every step (its cache holds layer outputs); for the memory
    that is the largest cost of a step, multiplied by the beam.
    """

    def __init__(self, decoder: nn.Module, memory: torch.Tensor, memory_lengths: torch.Tensor, beam: int,
                 max_steps: int) -> None:
        for layer in decoder.decoders:
            if layer.concat_after or layer.sequential_attn is not None:
                raise SateError("beam search supports decoder layers without concat_after or "
                                "sequential attention (the layers sate builds)")
        self.decoder = decoder
        self.post_norm = not decoder.decoders[0].normalize_before
        self.banned = list(token_conventions(decoder)[2])
        self.beam = beam
        embed, positions = decoder.embed[0], decoder.embed[1]
        self.embed = embed
        self.xscale = positions.xscale
        # ESPnet's PositionalEncoding adds pe to x * xscale; fed zeros it returns the table itself.
        self.pe = positions(memory.new_zeros(1, max_steps, memory.size(-1)))[0]
        self.heads = decoder.decoders[0].self_attn.h
        self.d_k = decoder.decoders[0].self_attn.d_k
        frames = int(memory_lengths.max())
        memory = memory[:, :frames]
        pad = torch.arange(frames, device=memory.device)[None, :] >= memory_lengths[:, None]
        # Added to the attention scores: ESPnet's masked_fill with the dtype's min, as a bias. (A, 1, 1, T)
        self.memory_bias = torch.zeros(pad.shape, dtype=memory.dtype, device=memory.device).masked_fill(
            pad, torch.finfo(memory.dtype).min)[:, None, None, :]
        # Keys stored transposed (A, H, dk, T) and values (A, H, T, dk), both contiguous: matmul copies
        # any other layout on every step.
        self.memory_kv = [(self._split(layer.src_attn.k_norm, layer.src_attn.linear_k(memory)).transpose(-2, -1)
                           .contiguous(), self._split(None, layer.src_attn.linear_v(memory)).contiguous())
                          for layer in decoder.decoders]
        self.self_kv: list[tuple[torch.Tensor, torch.Tensor]] | None = None
        # The source attention weights of the last step, per layer (A, H, K, T): AlignAtt reads them.
        self.cross_attention: list[torch.Tensor] = []

    def _split(self, norm: nn.Module | None, x: torch.Tensor) -> torch.Tensor:
        """(N, T, D) -> (N, H, T, dk), with the attention's key norm where it has one."""
        x = x.view(x.size(0), x.size(1), self.heads, self.d_k).transpose(1, 2)
        return x if norm is None else norm(x)

    def step(self, tokens: torch.Tensor, position: int) -> torch.Tensor:
        """Last tokens (A * K,) at `position` (0 = sos) -> next-token log-probs (A * K, V)."""
        n, k = tokens.size(0), self.beam
        x = (self.embed(tokens) * self.xscale + self.pe[position]).unsqueeze(1)  # (N, 1, D)
        new_kv, cross = [], []
        for i, layer in enumerate(self.decoder.decoders):
            sa, ca = layer.self_attn, layer.src_attn
            h = x if self.post_norm else layer.norm1(x)
            q = self._split(sa.q_norm, sa.linear_q(h))
            key, value = self._split(sa.k_norm, sa.linear_k(h)), self._split(None, sa.linear_v(h))
            if self.self_kv is not None:
                key = torch.cat([self.self_kv[i][0], key], dim=2)
                value = torch.cat([self.self_kv[i][1], value], dim=2)
            new_kv.append((key, value))
            att = torch.softmax(q @ key.transpose(-2, -1) / math.sqrt(self.d_k), dim=-1)
            x = self._residual(layer.norm1, x, sa.linear_out((att @ value).transpose(1, 2).reshape(n, 1, -1)))
            # Source attention: the K beams of an utterance are K queries on its one memory.
            h = x if self.post_norm else layer.norm2(x)
            q = ca.q_norm(ca.linear_q(h).view(-1, k, self.heads, self.d_k).transpose(1, 2))  # (A, H, K, dk)
            mem_k, mem_v = self.memory_kv[i]
            att = torch.softmax(q @ mem_k / math.sqrt(self.d_k) + self.memory_bias, dim=-1)  # (A, H, K, T)
            cross.append(att)
            x = self._residual(layer.norm2, x, ca.linear_out((att @ mem_v).transpose(1, 2).reshape(n, 1, -1)))
            x = self._residual(layer.norm3, x, layer.feed_forward(x if self.post_norm else layer.norm3(x)))
        self.self_kv, self.cross_attention = new_kv, cross
        y = x[:, 0] if self.post_norm else self.decoder.after_norm(x[:, 0])
        logp = torch.log_softmax(self.decoder.output_layer(y), dim=-1)
        if self.banned:
            logp[:, self.banned] = -math.inf
        return logp

    def _residual(self, norm: nn.Module, x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
        """x + f(x) (pre-LN: f saw norm(x)), or norm(x + f(x)) for post-LN layers."""
        return norm(x + f) if self.post_norm else x + f

    def reorder(self, rows: torch.Tensor) -> None:
        """Hypothesis j continues the prefix of hypothesis rows[j] (same utterance)."""
        self.self_kv = [(key[rows], value[rows]) for key, value in self.self_kv]

    def keep(self, utts: torch.Tensor, rows: torch.Tensor) -> None:
        """Only utterances `utts` (their hypotheses `rows`) go on; the memory is cut to their longest."""
        bias = self.memory_bias[utts]
        frames = int((bias == 0).sum(-1).max())
        self.memory_bias = bias[..., :frames].contiguous()
        self.memory_kv = [(key[utts, :, :, :frames].contiguous(), value[utts, :, :frames].contiguous())
                          for key, value in self.memory_kv]
        self.reorder(rows)


@dataclass
class _Finished:
    """Hypotheses that ended at one step: utterance, tokens after sos (and how many to keep), logp, score."""

    utts: list[int]
    prefixes: list[list[int]]
    counts: list[int]
    logps: list[float]
    scores: list[float]


def _final_score(logp: torch.Tensor, chosen: torch.Tensor | int, n: torch.Tensor | int, options: DecodeOptions
                 ) -> torch.Tensor:
    """(logp + length_bonus x tokens chosen) / (tokens incl. eos) ** lenpen."""
    return (logp + options.length_bonus * chosen) / (n ** options.lenpen if options.lenpen else 1)


def _best_reachable(best_logp: torch.Tensor, tokens: int, max_len: torch.Tensor, options: DecodeOptions
                    ) -> torch.Tensor:
    """Upper bound (A,) on the final score of any continuation of a running hypothesis with `tokens`
    tokens and summed log-probability at most `best_logp` (A,): it ends with n in [tokens + 1, max_len + 1]
    tokens counting eos, min(n, max_len) of them chosen, and its log-probability can only fall."""
    if options.lenpen == 0 and options.length_bonus <= 0:
        return _final_score(best_logp, tokens + 1, tokens + 1, options)
    n = torch.arange(tokens + 1, int(max_len.max()) + 2, device=best_logp.device)[None, :]
    chosen = torch.minimum(n, max_len[:, None])
    reach = _final_score(best_logp[:, None], chosen, n.to(best_logp.dtype), options)
    return reach.masked_fill(n > max_len[:, None] + 1, -math.inf).max(1).values


def _force(step_logp: torch.Tensor, token: int) -> torch.Tensor:
    """Step log-probs (A, K, V) in which only `token` can be chosen, at its own log-probability."""
    forced = torch.full_like(step_logp, -math.inf)
    forced[:, :, token] = step_logp[:, :, token]
    return forced


def _search(decoder: nn.Module, memory: torch.Tensor, memory_lengths: torch.Tensor, eos: int,
            options: DecodeOptions, prefix: Sequence[int] = ()) -> list[list[Hypothesis]]:
    batch, device = memory.size(0), memory.device
    if batch == 0:
        return []
    if bool((memory_lengths < 1).any()):
        empty = (memory_lengths < 1).nonzero()[0].item()
        raise SateError(f"utterance {empty} of the batch has an empty encoder output (its input is too short)")
    k, nbest = options.beam, options.nbest
    vocab = decoder.output_layer.out_features
    min_len, max_len = length_limits(memory_lengths, options)
    limit = getattr(decoder.embed[1], "max_positions", None)  # a Marian decoder's positions
    if limit is not None:
        max_len = max_len.clamp(max=limit)
    inc = _IncrementalDecoder(decoder, memory, memory_lengths, k, int(max_len.max()))
    # State of the utterances still searching (A of them), hypotheses flattened to A * K rows.
    utts = torch.arange(batch, device=device)
    sos = token_conventions(decoder)[0]
    prefixes = torch.full((batch * k, 1), sos, dtype=torch.long, device=device)  # sos + tokens
    # Scores add up in float32 whatever the model's dtype.
    logp = torch.full((batch, k), -math.inf, device=device)
    logp[:, 0] = 0.0  # one hypothesis, <sos>, to start
    best_finished = torch.full((batch, nbest), -math.inf, device=device)
    finished: list[_Finished] = []
    for t in range(1, int(max_len.max()) + 1):  # t = tokens of a hypothesis after this step
        active = utts.size(0)
        step_logp = inc.step(prefixes[:, -1], t - 1).float().view(active, k, vocab)
        too_short = (t - 1) < min_len
        if bool(too_short.any()):
            step_logp[:, :, eos] = step_logp[:, :, eos].masked_fill(too_short[:, None], -math.inf)
        if t <= len(prefix):  # one hypothesis runs (the others are at -inf), through the forced tokens
            step_logp = _force(step_logp, prefix[t - 1])
        top, index = (logp[:, :, None] + step_logp).view(active, k * vocab).topk(k, dim=1)
        token = index % vocab
        rows = (torch.arange(active, device=device)[:, None] * k + index // vocab).view(-1)
        prefixes = torch.cat([prefixes[rows], token.view(-1, 1)], dim=1)
        inc.reorder(rows)
        alive = top > -math.inf
        ends = alive & (token == eos)
        cut = alive & ~ends & (t >= max_len)[:, None]
        ended = ends | cut
        if bool(ended.any()):
            n = t + cut.long()  # tokens counting eos; a cut hypothesis gets a free eos (no log-prob, no bonus)
            score = _final_score(top, t, n, options).masked_fill(~ended, -math.inf)
            best_finished = torch.cat([best_finished, score], dim=1).topk(nbest, dim=1).values
            a, b = ended.nonzero(as_tuple=True)
            flat = a * k + b
            finished.append(_Finished(utts[a].tolist(), prefixes[flat, 1:].tolist(), (n[a, b] - 1).tolist(),
                                      top[a, b].tolist(), score[a, b].tolist()))
        logp = top.masked_fill(ended, -math.inf)
        done = best_finished[:, -1] >= _best_reachable(logp.max(1).values, t, max_len, options)
        if bool(done.all()):
            break
        if bool(done.any()):
            keep = (~done).nonzero(as_tuple=True)[0]
            keep_rows = (keep[:, None] * k + torch.arange(k, device=device)).view(-1)
            utts, logp, best_finished = utts[keep], logp[keep], best_finished[keep]
            min_len, max_len, prefixes = min_len[keep], max_len[keep], prefixes[keep_rows]
            inc.keep(keep, keep_rows)
    return _collect(finished, batch, nbest)


def _collect(finished: list[_Finished], batch: int, nbest: int) -> list[list[Hypothesis]]:
    per_utt: list[list[Hypothesis]] = [[] for _ in range(batch)]
    for step in finished:
        for utt, prefix, count, logp, score in zip(step.utts, step.prefixes, step.counts, step.logps, step.scores,
                                                   strict=True):
            per_utt[utt].append(Hypothesis(prefix[:count], score, logp))
    if not all(per_utt):  # every hypothesis alive until max_len ends there: none ends only on non-finite scores
        raise SateError(f"decoding found no translation for utterance {per_utt.index([])} of the batch: the model's "
                        "scores are not numbers (NaN): its weights hold NaN or infinite values, as a training that "
                        "diverged leaves (optim.lr too high?)")
    return [sorted(hyps, key=lambda h: -h.score)[:nbest] for hyps in per_utt]
