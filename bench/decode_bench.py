"""Decoding speed: sate's batched beam search against ESPnet's BatchBeamSearch one utterance at a time.

Usage:
    python bench/decode_bench.py --model MODEL.pt --data DATA --split dev [--max-utts N] [--json OUT]
    python bench/decode_bench.py --tiny [--json OUT]

MODEL.pt is an ST model file (`sate average`), DATA its prepared data dir (features, cmvn.json,
SentencePiece models). --tiny instead voices a small synth corpus (64 train utterances), prepares it and
fits a tiny ST model to it (300 full-batch Adam steps, a few minutes), so the harness runs without a
trained model. It then decodes that train split by default: the tiny model has memorised it, so its
hypotheses end with eos at about the right length, as a trained model's do on unseen speech. Its figures
say little about a real model's speed (per-step overheads dominate such a small network).

Both sides decode the same utterances with the same weights and settings: beam 5 (--beam), no length
normalisation, max length = the encoder memory length (ESPnet's default maxlenratio 0, i.e. our
max_len_ratio 1.0). ESPnet runs as `espnet2.bin.st_inference` does: our encoder on one utterance, then
`BatchBeamSearch` (beams batched, utterances one by one) with the decoder as its only scorer; ESPnet also
applies its end detection, which may stop a search early. sate encodes and decodes batches of
--batch-sizes utterances (sorted by length). Times cover encoder + search (also given apart), features already
in memory; each is the fastest of --repeat runs. Real-time factor = decoding time / audio duration. Peak RSS is
sampled from /proc during each run. BLEU is sacreBLEU (13a, case-sensitive) on the detokenized output.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import platform
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from sate.data.dataset import SpeechDataset, collate
from sate.data.vocab import Vocabulary
from sate.decode.beam_search import DecodeOptions, decode_memory, encode_for_decoding
from sate.errors import SateError
from sate.models.base import SateModel
from sate.models.model_file import model_from_file

TINY_STEPS = 300
TINY_MODEL = {"d_model": 32,
              "acoustic": {"type": "transformer", "layers": 1, "heads": 2, "ffn": 64, "frontend_channels": 8,
                           "dropout": 0.0},
              "textual": {"layers": 1, "heads": 2, "ffn": 64, "dropout": 0.0},
              "decoder": {"layers": 2, "heads": 2, "ffn": 64, "dropout": 0.0}}
TINY_SPLITS = {"train": 64, "dev": 4, "tst-COMMON": 1}  # prep wants every split


# ----------------------------------------------------------------------------- measuring

class PeakRSS:
    """Highest resident set size of this process while the `with` block runs (sampled every 5 ms), and
    how far it rose above the size at the start (the process already holds torch, ESPnet and the model)."""

    def __init__(self) -> None:
        self.peak = self.start = 0
        self._stop = threading.Event()
        self._page = os.sysconf("SC_PAGE_SIZE")

    def _rss(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self._page

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self._rss())

    @contextlib.contextmanager
    def watch(self) -> Iterator[None]:
        self.peak = self.start = self._rss()
        thread = threading.Thread(target=self._sample, daemon=True)
        thread.start()
        try:
            yield
        finally:
            self._stop.set()
            thread.join()
            self.peak = max(self.peak, self._rss())
            self._stop.clear()


class Decoded:
    """Best hypotheses of one run and how its time split between the encoder and the search."""

    def __init__(self) -> None:
        self.hyps: dict[int, list[int]] = {}
        self.encode = self.search = 0.0

    def ordered(self) -> list[list[int]]:
        return [self.hyps[i] for i in range(len(self.hyps))]


def timed(run: Callable[[], Decoded], repeat: int) -> tuple[Decoded, tuple[float, float]]:
    """The fastest of `repeat` runs, and the peak RSS and its rise over the start (MiB) over all of them."""
    best, peak, rise, rss = None, 0, 0, PeakRSS()
    for _ in range(repeat):
        with rss.watch():
            out = run()
        if best is None or out.encode + out.search < best.encode + best.search:
            best = out
        peak, rise = max(peak, rss.peak), max(rise, rss.peak - rss.start)
    return best, (peak / 2**20, rise / 2**20)


# ----------------------------------------------------------------------------- the two decoders

@torch.no_grad()
def sate_decode(model: SateModel, items: list[dict], batch_size: int, options: DecodeOptions) -> Decoded:
    """Batches of `batch_size` utterances of similar length, as `sate evaluate` would form them."""
    order = sorted(range(len(items)), key=lambda i: items[i]["feats"].size(0))
    out = Decoded()
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        batch = collate([items[i] for i in chunk])
        t0 = time.perf_counter()
        memory, lengths = encode_for_decoding(model, batch)
        t1 = time.perf_counter()
        hyps = decode_memory(model.decoder, memory, lengths, model.eos, options)
        out.encode, out.search = out.encode + t1 - t0, out.search + time.perf_counter() - t1
        out.hyps.update((i, nbest[0].tokens) for i, nbest in zip(chunk, hyps, strict=True))
    return out


@torch.no_grad()
def espnet_decode(model: SateModel, items: list[dict], beam: int) -> Decoded:
    """One utterance at a time, as espnet2.bin.st_inference: encode, then ESPnet's BatchBeamSearch."""
    from espnet.nets.batch_beam_search import BatchBeamSearch

    logging.getLogger("espnet.nets.beam_search").setLevel(logging.ERROR)  # one warning per max-length hypothesis
    eos = model.eos
    search = BatchBeamSearch(scorers={"decoder": model.decoder}, weights={"decoder": 1.0}, beam_size=beam,
                             vocab_size=model.decoder.output_layer.out_features, sos=eos, eos=eos).eval()
    out = Decoded()
    for i, item in enumerate(items):
        feats = item["feats"][None]
        t0 = time.perf_counter()
        enc = model.encode(feats, torch.tensor([feats.size(1)]))
        t1 = time.perf_counter()
        best = search(x=enc.memory[0], maxlenratio=0.0, minlenratio=0.0)[0]
        out.encode, out.search = out.encode + t1 - t0, out.search + time.perf_counter() - t1
        out.hyps[i] = [t for t in best.yseq.tolist()[1:] if t != eos]
    return out


# ----------------------------------------------------------------------------- the tiny model

def build_tiny(work: Path) -> tuple[Path, Path]:
    """Voice a small synth corpus, prepare it and fit a tiny ST model to its train split with full-batch
    Adam (faster than `sate train` for this); returns (model file, data dir)."""
    from sate.cli import main as sate
    from sate.data import synth
    from sate.models import build_model
    from sate.models.model_file import save_model_file

    pairs, left = [], dict(TINY_SPLITS)
    for en, de in synth.read_ding_pairs(synth.fetch_ding(synth.default_cache_dir())):
        split = synth.split_of(en)
        if left[split] > 0:
            pairs.append((en, de))
            left[split] -= 1
    synth.build_corpus(work / "corpus", pairs, train_size=TINY_SPLITS["train"], seed=0, jobs=2, progress=False)
    data = work / "data"
    for argv in (["prep", "--mustc-root", str(work / "corpus"), "--out", str(data)],
                 ["features", "--data", str(data), "--jobs", "2"],
                 ["vocab", "--data", str(data), "--src-size", "100", "--tgt-size", "150"]):
        if sate(argv) != 0:
            raise SateError(f"sate {' '.join(argv)} failed")
    src, tgt = Vocabulary.load(data, "src"), Vocabulary.load(data, "tgt")
    train = SpeechDataset.from_data_dir(data, "train", src, tgt, cmvn=data / "cmvn.json")
    batch = collate([train[i] for i in range(len(train))])
    torch.manual_seed(0)
    model = build_model("st", TINY_MODEL, len(src), len(tgt))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    start = time.perf_counter()
    for step in range(TINY_STEPS):
        optimizer.zero_grad()
        loss = model(batch)["loss"]
        loss.backward()
        optimizer.step()
        if step % 50 == 0 or step == TINY_STEPS - 1:
            print(f"tiny model: step {step + 1}/{TINY_STEPS}, loss {float(loss.detach()):.1f}, "
                  f"{time.perf_counter() - start:.0f} s")
    model_file = work / "model.pt"
    save_model_file(model_file, model.eval(), src.tokens, tgt.tokens)
    return model_file, data


# ----------------------------------------------------------------------------- main

def bleu(hyps: list[list[int]], refs: list[str], vocab: Vocabulary) -> float:
    import sacrebleu

    return round(sacrebleu.corpus_bleu([vocab.decode(h) for h in hyps], [refs]).score, 2)


def run(model_path: Path, data: Path, split: str, max_utts: int | None, batch_sizes: list[int], beam: int,
        repeat: int) -> dict[str, Any]:
    model, meta = model_from_file(model_path)
    if model.task != "st":
        raise SateError(f"{model_path}: a {model.task} model; the decoding benchmark needs an st model")
    src, tgt = Vocabulary.load(data, "src"), Vocabulary.load(data, "tgt")
    if tgt.tokens != meta["tgt_tokens"]:
        raise SateError(f"{data}: its target token list differs from the one {model_path} was trained with")
    dataset = SpeechDataset.from_data_dir(data, split, src, tgt, cmvn=data / "cmvn.json")
    count = len(dataset) if max_utts is None else min(max_utts, len(dataset))
    items = [dataset[i] for i in range(count)]
    refs = [dataset.rows[i]["tgt"] for i in range(count)]
    audio = sum(float(dataset.rows[i]["duration"]) for i in range(count))
    options = DecodeOptions(beam=beam, lenpen=0.0, length_bonus=0.0, max_len_ratio=1.0)

    def figures(run: Decoded, rss: tuple[float, float]) -> dict[str, Any]:
        seconds = run.encode + run.search
        return {"seconds": round(seconds, 3), "encode_seconds": round(run.encode, 3),
                "search_seconds": round(run.search, 3), "utts_per_s": round(count / seconds, 2),
                "rtf": round(seconds / audio, 4), "peak_rss_mib": round(rss[0]), "rss_rise_mib": round(rss[1]),
                "bleu": bleu(run.ordered(), refs, tgt)}

    # Warm-up (first calls allocate), then ESPnet, then sate at each batch size.
    sate_decode(model, items[:2], 2, options)
    espnet_decode(model, items[:1], beam)
    theirs, rss = timed(lambda: espnet_decode(model, items, beam), repeat)
    espnet = figures(theirs, rss)
    rows = []
    for size in batch_sizes:
        ours, rss = timed(lambda size=size: sate_decode(model, items, size, options), repeat)
        row = figures(ours, rss)
        rows.append({"batch_size": size, **row, "speedup": round(espnet["seconds"] / row["seconds"], 2),
                     "search_speedup": round(espnet["search_seconds"] / row["search_seconds"], 2),
                     "identical": sum(a == b for a, b in zip(ours.ordered(), theirs.ordered(), strict=True))})
    import espnet as espnet_pkg
    import sacrebleu

    return {
        "model": str(model_path), "data": str(data), "split": split, "utterances": count,
        "audio_seconds": round(audio, 1), "beam": beam, "lenpen": 0.0, "max_len_ratio": 1.0,
        "repeat": repeat, "threads": torch.get_num_threads(), "cpu": _cpu_name(), "torch": torch.__version__,
        "espnet_version": espnet_pkg.__version__, "sacrebleu": sacrebleu.__version__,
        "espnet": espnet, "sate": rows,
    }


def _cpu_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def table(result: dict[str, Any]) -> str:
    e = result["espnet"]
    lines = [f"{result['utterances']} utterances, {result['audio_seconds']} s of audio, beam {result['beam']}, "
             f"{result['threads']} thread(s), fastest of {result['repeat']}",
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
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", type=Path, help="ST model file (sate average)")
    source.add_argument("--tiny", action="store_true", help="build and briefly train a tiny model on a synth corpus")
    parser.add_argument("--data", type=Path, help="prepared data dir of --model")
    parser.add_argument("--split", default=None, help="split to decode (default: dev; with --tiny: train)")
    parser.add_argument("--max-utts", type=int, default=None, help="decode only the first N utterances")
    parser.add_argument("--batch-sizes", default="1,4,16,64", help="comma-separated sate batch sizes")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest counts")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--json", type=Path, default=Path("decode_bench.json"), help="where to write the figures")
    args = parser.parse_args(argv)
    if args.model is not None and args.data is None:
        parser.error("--model needs --data")
    threads = args.threads or torch.get_num_threads()
    batch_sizes = [int(x) for x in args.batch_sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        model, data = (args.model, args.data) if args.model is not None else build_tiny(Path(tmp))
        torch.set_num_threads(threads)  # set here: `sate features` (in --tiny) leaves torch at 1 thread
        split = args.split or ("train" if args.tiny else "dev")
        result = run(model, data, split, args.max_utts, batch_sizes, args.beam, args.repeat)
        if args.tiny:
            result["model"], result["data"] = "tiny (--tiny)", "a temporary synth corpus (--tiny)"
    print(table(result))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
