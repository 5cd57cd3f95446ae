"""Decoding: sate's batched beam search against ESPnet's BatchBeamSearch one utterance at a time.

Both sides decode the same utterances with the same weights and settings: beam 5, no length
normalisation, max length = the encoder memory length (ESPnet's default maxlenratio 0, i.e. our
max_len_ratio 1.0). ESPnet runs as `espnet2.bin.st_inference` does: our encoder on one utterance, then
`BatchBeamSearch` (beams batched, utterances one by one) with the decoder as its only scorer; ESPnet also
applies its end detection, which may stop a search early. sate encodes and decodes batches of each given
size (utterances sorted by length). Times cover encoder + search (also given apart), features already in
memory; each is the fastest of `repeat` runs. Real-time factor = decoding time / audio duration. Peak
memory: see `sate.bench.measure`. BLEU is sacreBLEU (13a, case-sensitive) on the detokenized output.
"""

from __future__ import annotations

import logging
from typing import TypedDict

import torch

from sate.bench.measure import Peak, fastest, stopwatch
from sate.bench.subject import Subject, SubjectInfo
from sate.data.dataset import collate
from sate.data.vocab import Vocabulary
from sate.decode.beam_search import DecodeOptions, decode_memory, encode_for_decoding
from sate.models.base import SateModel

BLEU_TIE = 0.01  # BLEU is rounded to 2 decimals; equal means within rounding


class DecodeFigures(TypedDict):
    """One decoder's fastest run over the utterances."""

    seconds: float
    encode_seconds: float
    search_seconds: float
    utts_per_s: float
    rtf: float
    peak_rss_mib: int
    rss_rise_mib: int
    bleu: float


class SateRow(DecodeFigures):
    """Our decoder at one batch size, against ESPnet's."""

    batch_size: int
    speedup: float
    search_speedup: float
    identical: int  # utterances with ESPnet's best hypothesis


class DecodeGoal(TypedDict):
    speedup_at_least: float
    best_batch_size: int
    speedup: float
    bleu_equal: bool
    met: bool


class DecodeResult(SubjectInfo):
    """The decode part's figures."""

    split: str
    utterances: int
    audio_seconds: float
    beam: int
    lenpen: float
    max_len_ratio: float
    repeat: int
    peak_method: str
    espnet: DecodeFigures
    sate: list[SateRow]  # per batch size
    goal: DecodeGoal


class Decoded:
    """Best hypotheses of one run and how its time split between the encoder and the search."""

    def __init__(self) -> None:
        self.hyps: dict[int, list[int]] = {}
        self.encode = self.search = 0.0

    @property
    def seconds(self) -> float:
        return self.encode + self.search

    def ordered(self) -> list[list[int]]:
        return [self.hyps[i] for i in range(len(self.hyps))]


@torch.no_grad()
def sate_decode(model: SateModel, items: list[dict], batch_size: int, options: DecodeOptions) -> Decoded:
    """Batches of `batch_size` utterances of similar length, as `sate evaluate` forms them."""
    order = sorted(range(len(items)), key=lambda i: items[i]["feats"].size(0))
    out = Decoded()
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        batch = collate([items[i] for i in chunk])
        lap = stopwatch()
        memory, lengths = encode_for_decoding(model, batch)
        encoded = lap()
        hyps = decode_memory(model.decoder, memory, lengths, model.eos, options)
        out.encode, out.search = out.encode + encoded, out.search + lap() - encoded
        out.hyps.update((i, nbest[0].tokens) for i, nbest in zip(chunk, hyps, strict=True))
    return out


@torch.no_grad()
def espnet_decode(model: SateModel, items: list[dict], beam: int) -> Decoded:
    """One utterance at a time, as espnet2.bin.st_inference: encode, then ESPnet's BatchBeamSearch."""
    from espnet.nets.batch_beam_search import BatchBeamSearch  # heavy: ESPnet

    logging.getLogger("espnet.nets.beam_search").setLevel(logging.ERROR)  # one warning per max-length hypothesis
    eos = model.eos
    search = BatchBeamSearch(scorers={"decoder": model.decoder}, weights={"decoder": 1.0}, beam_size=beam,
                             vocab_size=model.decoder.output_layer.out_features, sos=eos, eos=eos).eval()
    out = Decoded()
    for i, item in enumerate(items):
        feats = item["feats"][None]
        lap = stopwatch()
        enc = model.encode(feats, torch.tensor([feats.size(1)]))
        encoded = lap()
        best = search(x=enc.memory[0], maxlenratio=0.0, minlenratio=0.0)[0]
        out.encode, out.search = out.encode + encoded, out.search + lap() - encoded
        out.hyps[i] = [t for t in best.yseq.tolist()[1:] if t != eos]
    return out


def bleu(hyps: list[list[int]], refs: list[str], vocab: Vocabulary) -> float:
    import sacrebleu  # slow: sacrebleu (0.3 s)

    return round(sacrebleu.corpus_bleu([vocab.decode(h) for h in hyps], [refs]).score, 2)


def run(subject: Subject, split: str, max_utts: int | None, batch_sizes: list[int], beam: int,
        repeat: int) -> DecodeResult:
    """Decode the first `max_utts` utterances of `split` with ESPnet and with sate at each batch size."""
    model, dataset = subject.model, subject.dataset(split)
    count = len(dataset) if max_utts is None else min(max_utts, len(dataset))
    items = [dataset[i] for i in range(count)]
    refs = [dataset.rows[i]["tgt"] for i in range(count)]
    audio = sum(float(dataset.rows[i]["duration"]) for i in range(count))
    options = DecodeOptions(beam=beam, lenpen=0.0, length_bonus=0.0, max_len_ratio=1.0)

    def figures(run: Decoded, peak: Peak) -> DecodeFigures:
        return DecodeFigures(seconds=round(run.seconds, 3), encode_seconds=round(run.encode, 3),
                             search_seconds=round(run.search, 3), utts_per_s=round(count / run.seconds, 2),
                             rtf=round(run.seconds / audio, 4), peak_rss_mib=round(peak.peak_mib),
                             rss_rise_mib=round(peak.rise_mib), bleu=bleu(run.ordered(), refs, subject.tgt))

    # Warm-up (first calls allocate), then ESPnet, then sate at each batch size.
    sate_decode(model, items[:2], 2, options)
    espnet_decode(model, items[:1], beam)
    theirs, peak = fastest(lambda: espnet_decode(model, items, beam), repeat, lambda d: d.seconds)
    espnet = figures(theirs, peak)
    rows = []
    # the batch as decoded: `--batch-sizes 1,4,16,64` over 10 utterances said "sate batch 64" (and could name 64 the
    # goal's best batch) for batches that held 10; each such batch once: 16 and 64 over 10 utterances were two rows
    # "sate batch 10", the same decoding timed twice (33rd hostile pass)
    for size in dict.fromkeys(min(size, count) for size in batch_sizes):
        ours, peak = fastest(lambda size=size: sate_decode(model, items, size, options), repeat, lambda d: d.seconds)
        row = figures(ours, peak)
        rows.append(SateRow(batch_size=size, **row, speedup=round(espnet["seconds"] / row["seconds"], 2),
                            search_speedup=round(espnet["search_seconds"] / row["search_seconds"], 2),
                            identical=sum(a == b for a, b in zip(ours.ordered(), theirs.ordered(), strict=True))))
    best = max(rows, key=lambda r: r["speedup"])
    return DecodeResult(
        **subject.describe(), split=split, utterances=count, audio_seconds=round(audio, 1),
        beam=beam, lenpen=0.0, max_len_ratio=1.0, repeat=repeat, peak_method=peak.method,
        espnet=espnet, sate=rows,
        goal=DecodeGoal(speedup_at_least=5.0, best_batch_size=best["batch_size"], speedup=best["speedup"],
                        bleu_equal=abs(best["bleu"] - espnet["bleu"]) < BLEU_TIE,
                        met=best["speedup"] >= 5.0 and abs(best["bleu"] - espnet["bleu"]) < BLEU_TIE),
    )


def table(result: DecodeResult) -> str:
    e = result["espnet"]
    lines = [f"Decoding: {result['utterances']} utterances of {result['split']}, {result['audio_seconds']} s of audio, "
             f"beam {result['beam']}, fastest of {result['repeat']}",
             "decoder              utt/s     RTF  encode s  search s  speedup (search)  peak RSS MiB (rise)"
             "   BLEU  identical",
             f"espnet one by one {e['utts_per_s']:7.2f} {e['rtf']:7.4f} {e['encode_seconds']:9.2f} "
             f"{e['search_seconds']:9.2f} {1:8.2f} ({1:6.2f}) {e['peak_rss_mib']:13d} ({e['rss_rise_mib']:4d}) "
             f"{e['bleu']:6.2f}  -"]
    for r in result["sate"]:
        lines.append(f"sate batch {r['batch_size']:<6d} {r['utts_per_s']:7.2f} {r['rtf']:7.4f} "
                     f"{r['encode_seconds']:9.2f} {r['search_seconds']:9.2f} {r['speedup']:8.2f} "
                     f"({r['search_speedup']:6.2f}) {r['peak_rss_mib']:13d} ({r['rss_rise_mib']:4d}) "
                     f"{r['bleu']:6.2f}  {r['identical']}/{result['utterances']}")
    goal = result["goal"]
    lines.append(f"goal: >= {goal['speedup_at_least']:g}x with equal BLEU: {goal['speedup']}x at batch "
                 f"{goal['best_batch_size']}, BLEU {'equal' if goal['bleu_equal'] else 'differs'} -> "
                 f"{'met' if goal['met'] else 'NOT met'}")
    return "\n".join(lines)
