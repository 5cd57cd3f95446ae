"""`python -m sate.bench`: sate against ESPnet, with ratios measured in one run on the same weights and data.

Parts (--parts; decode, train, data and length by default):
  decode  our batched beam search against ESPnet's BatchBeamSearch one utterance at a time (`sate.bench.decode`)
  train   a training step of our SATE model against ESPnet's ESPnetSTModel with hier_encoder (`sate.bench.train`)
  data    fbank extraction and data loading speed (`sate.bench.data`)
  length  decoding time and memory against utterance length, league against shrink (`sate.bench.length`)
  corpus  voicing speed of `sate synth` (`sate.bench.corpus`); needs no model
  scale   MuST-C size on fake data: index, sampler, start-up, loader (`sate.bench.scale`); needs no model
  gpu     the GPU check: paper-size training steps, decoding, DDP on a CUDA device (`sate.bench.gpu`); no model
  segment silero-vad against the energy VAD on real speech (Asterisk prompts) under noise (`sate.bench.segment`)
  asr-real  a packed model's CTC WER on the clean Asterisk prompts, or a Whisper directory's own (`sate.bench.realasr`);
            needs --pack
  asr-long  a packed model's transcript of the segment part's long recording, clean and under noise, cut and
            decoded as `sate translate` does (`sate.bench.longasr`); needs --pack
  whisper-window  a Whisper pack's CTC WER and encoding time, natural-length input against padding to 30 s
          (`sate.bench.whisper_window`); needs --pack, --data and --split
  ctc-vocab what CTC and the soft adaptor over a Marian vocabulary add to a wav2vec2-base training step, at
          each of --vocab-sizes (`sate.bench.ctcvocab`); needs no model
  text    WMT-size MT text (--text-lines generated pairs): memory and time of `sate vocab` and of `sate train`
          streaming it, the loader against what training consumes (`sate.bench.text`); needs no model

It prints a table per part and a summary, and writes every figure as JSON (--out). Absolute times drift on
a shared machine; the ratios, measured side by side in one process, are the figures to compare.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import signal
import sys
import tempfile
from pathlib import Path
from typing import TypedDict

import torch

from sate.bench import corpus as corpus_part
from sate.bench import ctcvocab as ctcvocab_part
from sate.bench import data as data_part
from sate.bench import decode as decode_part
from sate.bench import gpu as gpu_part
from sate.bench import length as length_part
from sate.bench import longasr as longasr_part
from sate.bench import realasr as realasr_part
from sate.bench import scale as scale_part
from sate.bench import segment as segment_part
from sate.bench import text as text_part
from sate.bench import train as train_part
from sate.bench import whisper_window as window_part
from sate.bench.measure import Machine, machine
from sate.bench.measure import __doc__ as PEAK_DOC
from sate.bench.subject import Subject, SubjectInfo, build_tiny, load_subject
from sate.cli import Terminated, signals_as_interrupts
from sate.data.manifest import check_split_names, missing_split
from sate.decode.options import MAX_BEAM
from sate.errors import SIGNAL_ENDINGS, SateError, one_line, shown
from sate.files import atomic_write_text, describe_os_error, require_file
from sate.numbers import check_jobs, is_digits, max_jobs, real_number, whole_number
from sate.targets import check_named_kind, check_output, file_name, read_name

PARTS = ("decode", "train", "data", "length", "corpus", "scale", "gpu", "segment", "asr-real", "asr-long", "ctc-vocab",
         "text", "whisper-window")
DEFAULT_PARTS = PARTS[:4]
# parts that need no --model/--tiny
NO_MODEL_PARTS = {"data", "corpus", "scale", "gpu", "segment", "asr-real", "asr-long", "ctc-vocab", "text",
                  "whisper-window"}
PEAK_MEMORY = " ".join(PEAK_DOC.split("\n\n")[1].replace("``", "").replace("**", "").split())  # one line

# Each part's figures under its name, for the parts that ran ("asr-real" and "ctc-vocab" are no Python names, hence
# this form).
PartResults = TypedDict("PartResults", {
    "decode": decode_part.DecodeResult, "train": train_part.TrainResult, "data": data_part.DataResult,
    "length": length_part.LengthResult | length_part.LengthSkipped, "corpus": corpus_part.CorpusResult,
    "scale": scale_part.ScaleResult, "gpu": gpu_part.GpuResult, "segment": segment_part.SegmentResult,
    "asr-real": realasr_part.RealAsrResult, "asr-long": longasr_part.LongAsrResult,
    "ctc-vocab": ctcvocab_part.CtcVocabResult, "text": text_part.TextResult,
    "whisper-window": window_part.WindowResult,
}, total=False)


class BenchResult(PartResults):
    """The JSON of one run (--out): how it was run, on what, and the figures of each part."""

    command: str
    machine: Machine
    peak_memory: str  # how peak memory is measured
    subject: SubjectInfo | None  # None: only parts without a model ran
    parts: list[str]


def _sizes(parser: argparse.ArgumentParser, option: str, text: str, least: int) -> list[int]:
    """A comma-separated list of whole numbers >= `least` (`--batch-sizes a` was a ValueError traceback, and
    `--batch-sizes 0` was found only after the tiny model had trained)."""
    sizes = [part.strip() for part in text.split(",")]
    bad = next((part for part in sizes if not is_digits(part) or int(part) < least), None)
    if bad is not None:
        parser.error(f"{option} must be comma-separated whole numbers >= {least}, got {shown(bad)} in {shown(text)}")
    return [int(part) for part in sizes]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m sate.bench", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--model", type=read_name, help="ST model file (sate train / sate average)")
    source.add_argument("--tiny", action="store_true",
                        help="no trained model: voice a small synth corpus and fit a tiny ST model to it first")
    parser.add_argument("--data", type=read_name, help="the prepared data dir --model was trained on")
    parser.add_argument("--out", type=file_name, default=Path("bench.json"), help="JSON file for every figure")
    parser.add_argument("--parts", default=",".join(DEFAULT_PARTS),
                        help=f"comma-separated subset of {','.join(PARTS)}")
    parser.add_argument("--repeat", type=whole_number, default=3, help="runs per measurement; the fastest counts")
    parser.add_argument("--split", default=None, help="split to decode (default: dev; with --tiny: train)")
    parser.add_argument("--max-utts", type=whole_number, default=100, help="decode: the first N utterances of --split")
    parser.add_argument("--batch-sizes", default="1,4,16,64", help="decode: comma-separated sate batch sizes")
    parser.add_argument("--beam", type=whole_number, default=5, help="decode and length: beam size")
    parser.add_argument("--train-batches", type=whole_number, default=4, help="train: batches timed per model")
    parser.add_argument("--max-frames", type=whole_number, default=None,
                        help="train and data: batch cap in frames (default: batch.per_device of the config.yaml "
                             f"beside --model, else {train_part.DEFAULT_MAX_FRAMES})")
    parser.add_argument("--data-minutes", type=real_number, default=120.0,
                        help="data: minutes of audio for fbank extraction (--data's first train utterances; "
                             "generated tones with --tiny)")
    parser.add_argument("--jobs", type=whole_number, default=os.cpu_count() or 1,
                        help="data and corpus: parallel fbank or voicing jobs")
    parser.add_argument("--corpus-size", type=whole_number, default=3000, help="corpus: train sentences to voice")
    parser.add_argument("--scale-segments", type=whole_number, default=scale_part.SEGMENTS,
                        help="scale: train segments of the fake MuST-C data")
    parser.add_argument("--scale-batches", type=whole_number, default=200, help="scale: batches the loader is timed on")
    parser.add_argument("--gpu-steps", type=whole_number, default=10, help="gpu: timed training steps per model")
    parser.add_argument("--gpu-utts", type=whole_number, default=32, help="gpu: utterances decoded by each decoder")
    parser.add_argument("--segment-utterances", type=whole_number, default=100,
                        help="segment, asr-long: Asterisk prompts in the constructed recording")
    parser.add_argument("--segment-seed", type=whole_number, default=0,
                        help="segment, asr-long: seed of the construction (which prompts, pauses, noise)")
    parser.add_argument("--pack", type=read_name, default=None,
                        help="asr-real, asr-long: packed ASR or ST model directory (asr-real: or a Whisper "
                        "directory, its own decoder)")
    parser.add_argument("--vocab-sizes", default=",".join(map(str, ctcvocab_part.DEFAULT_SIZES)),
                        help="ctc-vocab: comma-separated CTC vocabulary sizes, the full Marian vocabulary first")
    parser.add_argument("--text-lines", type=whole_number, default=text_part.LINES,
                        help="text: generated sentence pairs")
    parser.add_argument("--text-steps", type=whole_number, default=text_part.STEPS,
                        help="text: MT training updates timed")
    parser.add_argument("--threads", type=whole_number, default=None, help="torch threads (default: torch's choice)")
    args = parser.parse_args(argv)
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(args.parts) - set(PARTS))
    if unknown or not args.parts:
        parser.error(f"--parts: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(PARTS)}")
    twice = sorted({part for part in args.parts if args.parts.count(part) > 1})
    if twice:  # each part's figures are one entry of the JSON: `data,data` ran it twice and kept the second's
        parser.error(f"--parts: {', '.join(twice)} given more than once in {shown(','.join(args.parts))}; each part "
                     "runs once (its figures are one entry of the JSON), so name it once")
    if "gpu" in args.parts and "scale" in args.parts:  # the scale part's loader is put against the gpu part's
        # frames/s: `--parts scale,gpu` put it against the assumed 50,000 while this run measured the real one
        args.parts.remove("gpu")
        args.parts.insert(args.parts.index("scale"), "gpu")
    if args.split is not None:  # `--split ../other/dev` read another data directory's manifest, as evaluate refuses
        try:
            check_split_names([args.split], "--split")
        except SateError as err:
            parser.error(str(err))
    if args.model is not None and args.data is None:
        parser.error("--model needs --data")
    if args.data is not None and args.model is None and "whisper-window" not in args.parts:
        # `--parts data --data D` timed generated tones, exit 0: without --model no part but whisper-window reads it
        parser.error(f"--data {one_line(str(args.data))}: read only with --model (the data dir it was trained on) or "
                     "by --parts whisper-window; without them the parts run on data of their own (the data part on "
                     "generated tones), so give --model too, or leave --data out")
    if args.model is None and not args.tiny and not set(args.parts) <= NO_MODEL_PARTS:
        parser.error("give --model and --data (a trained ST model and its data dir), or --tiny")
    if "asr-real" in args.parts and args.pack is None:
        parser.error("--parts asr-real needs --pack DIR (a packed ASR or ST model, or a Whisper directory)")
    if "asr-long" in args.parts and args.pack is None:
        parser.error("--parts asr-long needs --pack DIR (a packed ASR or ST model)")
    if "whisper-window" in args.parts and (args.pack is None or args.data is None or args.split is None):
        parser.error("--parts whisper-window needs --pack DIR (a Whisper model's pack), --data DIR and --split NAME")
    for option in ("repeat", "train_batches", "max_utts", "corpus_size", "scale_segments", "scale_batches",
                   "gpu_steps", "gpu_utts", "segment_utterances", "text_lines", "text_steps", "beam"):
        if getattr(args, option) < 1:  # each named: one line listed eleven options for any of them
            parser.error(f"--{option.replace('_', '-')} must be at least 1, got {getattr(args, option)}")
    if args.scale_segments < scale_part.MIN_SEGMENTS:
        parser.error(f"--scale-segments must be at least {scale_part.MIN_SEGMENTS:,} (the fake data's vocabularies are "
                     f"trained on its text), got {args.scale_segments:,}")
    most = corpus_part.DEMO_SIZES["text_size"]
    if args.corpus_size > most:  # failed once the part began (`--parts text,corpus`: after the text part's hour) as
        # "train_size 50000 is more than text_size 40000", options nobody gave (30th hostile pass)
        parser.error(f"--corpus-size must be at most {most:,} (the demo phrasebook's train text pairs, of which the "
                     f"corpus part voices --corpus-size), got {args.corpus_size:,}")
    if args.text_lines < text_part.MIN_LINES:
        parser.error(f"--text-lines must be at least {text_part.MIN_LINES:,} (the text part's vocabularies, "
                     f"{text_part.VOCAB_SIZE:,} pieces a side, are trained on its pairs), got {args.text_lines:,}")
    if args.beam > MAX_BEAM:  # 10^5 was ESPnet's "selected index k out of range" traceback after the model loaded
        parser.error(f"--beam must be at most {MAX_BEAM} (sate's decoding limit), got {args.beam}")
    if args.segment_seed < 0:  # -1 was numpy's "expected non-negative integer" traceback
        parser.error(f"--segment-seed must be at least 0, got {args.segment_seed}")
    if args.max_frames is not None and args.max_frames < 1:
        parser.error(f"--max-frames must be at least 1, got {args.max_frames}")
    if not (math.isfinite(args.data_minutes) and args.data_minutes > 0):
        parser.error(f"--data-minutes must be a positive number of minutes, got {args.data_minutes}")
    try:  # the workers started, before any part spends its time
        check_jobs(args.jobs)
    except SateError as err:
        parser.error(str(err))
    if args.threads is not None and not 1 <= args.threads <= max_jobs():  # 0 was taken for torch's own choice
        parser.error(f"--threads must be from 1 to {max_jobs()} (four per CPU of this machine's {os.cpu_count() or 1})"
                     f", got {args.threads}")
    args.batch_sizes = _sizes(parser, "--batch-sizes", args.batch_sizes, 1)
    args.vocab_sizes = _sizes(parser, "--vocab-sizes", args.vocab_sizes, 2)
    if max(args.vocab_sizes) > ctcvocab_part.MAX_SIZE:
        parser.error(f"--vocab-sizes must be at most {ctcvocab_part.MAX_SIZE:,} pieces (above any Marian vocabulary; "
                     f"each piece costs the step about 16 KB of memory), got {max(args.vocab_sizes):,}")
    return args


def split_of(args: argparse.Namespace, subject: Subject | None) -> str:
    """The split the decode and length parts read: --split, else dev (with --tiny: train)."""
    return args.split or ("train" if subject is not None and subject.tiny else "dev")


def run_parts(args: argparse.Namespace, subject: Subject | None, threads: int) -> PartResults:
    """Run the chosen parts in order, printing each table as soon as its part is done."""
    max_frames = args.max_frames or (train_part.default_max_frames(subject.model_path)
                                     if subject is not None and not subject.tiny else train_part.DEFAULT_MAX_FRAMES)
    split = split_of(args, subject)
    result = PartResults()
    for part in args.parts:
        torch.set_num_threads(threads)  # `sate features` (in --tiny and the data part) leaves torch at 1 thread
        print(f"\n== {part}", flush=True)
        if part == "decode":
            result[part] = decode_part.run(subject, split, args.max_utts, args.batch_sizes, args.beam, args.repeat)
            print(decode_part.table(result[part]))
        elif part == "train":
            result[part] = train_part.run(subject, max_frames, args.train_batches, args.repeat)
            print(train_part.table(result[part]))
        elif part == "data":
            data = None if subject is None or subject.tiny else subject.data
            result[part] = data_part.run(data, args.data_minutes, args.jobs, max_frames)
            print(data_part.table(result[part]))
        elif part == "corpus":
            result[part] = corpus_part.run(args.corpus_size, args.jobs)
            print(corpus_part.table(result[part]))
        elif part == "scale":
            measured = result["gpu"]["sate"]["frames_per_s"] if "gpu" in result else None  # run first (parse_args)
            result[part] = scale_part.run(args.scale_segments, args.max_frames or scale_part.default_max_frames(),
                                          args.jobs, args.scale_batches, measured)
            print(scale_part.table(result[part]))
        elif part == "gpu":
            result[part] = gpu_part.run(args.gpu_steps, args.gpu_utts, args.beam, args.max_frames)
            print(gpu_part.table(result[part]))
        elif part == "segment":
            result[part] = segment_part.run(args.segment_utterances, args.segment_seed)
            print(segment_part.table(result[part]))
        elif part == "asr-real":
            result[part] = realasr_part.run(args.pack)
            print(realasr_part.table(result[part]))
        elif part == "asr-long":
            result[part] = longasr_part.run(args.pack, args.segment_utterances, args.segment_seed)
            print(longasr_part.table(result[part]))
        elif part == "whisper-window":
            result[part] = window_part.run(args.pack, args.data, args.split, args.repeat)
            print(window_part.table(result[part]))
        elif part == "ctc-vocab":
            result[part] = ctcvocab_part.run(args.vocab_sizes, args.repeat)
            print(ctcvocab_part.table(result[part]))
        elif part == "text":
            result[part] = text_part.run(args.text_lines, args.text_steps)
            print(text_part.table(result[part]))
        elif length_part.frame_kind(subject.model) is None:
            result[part] = length_part.LengthSkipped(
                skipped=f"the model's adaptor is {subject.model.conf.adaptor.type!r}; the length part compares league "
                        "or soft with shrink")
            print(result[part]["skipped"])
        else:
            result[part] = length_part.run(subject, split, args.beam, args.repeat)
            print(length_part.table(result[part]))
    return result


def summary(result: PartResults) -> str:
    """The ratios and goals of the parts that ran, one line each."""
    lines = ["Summary (ratios measured side by side in this run):"]
    if "decode" in result:
        d, goal = result["decode"], result["decode"]["goal"]
        row = next(r for r in d["sate"] if r["batch_size"] == goal["best_batch_size"])
        lines.append(f"  decoding: sate {goal['speedup']}x ESPnet's utterances/s (batch {goal['best_batch_size']}), "
                     f"BLEU {row['bleu']} vs {d['espnet']['bleu']}, {row['identical']}/{d['utterances']} identical "
                     f"-> goal >= 5x with equal BLEU {'met' if goal['met'] else 'NOT met'}")
    if "train" in result:
        t = result["train"]
        lines.append(f"  training step: sate {t['ratio']}x ESPnet's frames/s (repetitions {t['spread']['min']}-"
                     f"{t['spread']['max']}x, {t['clock']}), losses equal: {t['loss_check']['equal']} -> goal >= "
                     f"{t['goal']['ratio_at_least']}x {'met' if t['goal']['met'] else 'NOT met'} "
                     f"({t['ratio_without_adaptor']}x without the adaptor's own work); padding waste "
                     f"{t['padding']['measured_batches']:.1%}")
    if "data" in result:
        d = result["data"]
        loader = max(x["utts_per_s"] for x in d["loader"])
        line = (f"  data: fbank {d['features'][0]['x_real_time_per_core']:g}x real time per core, "
                f"loader up to {loader:g} utt/s")
        if "train" in result:
            t = result["train"]
            line += f" (a training step consumes {t['utterances'] / t['sate']['seconds']:.1f} utt/s)"
        lines.append(line)
    if "corpus" in result:
        c = result["corpus"]
        lines.append(f"  corpus: {c['utterances_per_second']} utt/s voiced, {c['seconds_per_audio_hour']} s per "
                     f"audio hour with {c['jobs']} jobs")
    if "scale" in result:
        g, startup = result["scale"]["goals"], result["scale"]["startup"]["seconds"]
        lines.append(f"  MuST-C scale: start-up {startup} s (goal <= {g['startup_s']:g} s "
                     f"{'met' if g['startup_met'] else 'NOT met'}), index + sampler {g['index_and_sampler_kept_mib']} "
                     f"MiB (goal <= {g['index_and_sampler_mib']:g} {'met' if g['memory_met'] else 'NOT met'}), loader "
                     f"{result['scale']['loader_over_gpu']}x "
                     + ("an assumed GPU's frames/s" if scale_part.is_assumed(result["scale"]) else
                        "the frames/s the gpu part measured"))
    if "gpu" in result:
        r = result["gpu"]
        lines.append(f"  GPU: sate {r['ratio']}x ESPnet's frames/s in bf16; decoding {r['decode']['speedup']}x ESPnet; "
                     f"MuST-C SATE estimated {r['estimate']['hours_1_gpu']} h on 1 GPU, "
                     f"{r['estimate']['hours_8_gpus']} h on 8")
    if "segment" in result:
        rows, g = result["segment"]["rows"], result["segment"]["goal"]
        at = {(r["noise"], r["vad"]): r for r in rows if r["snr_db"] == g["snr"]}
        lines.append(f"  segment at {g['snr']} dB, F1 / speech lost, silero vs energy: " + ", ".join(
            f"{noise} {at[noise, 'silero']['f1']:.2f} / {at[noise, 'silero']['speech_lost']:.1%} vs "
            f"{at[noise, 'energy']['f1']:.2f} / {at[noise, 'energy']['speech_lost']:.1%}"
            for noise in sorted({n for n, _ in at})) + f" -> goal {'met' if g['met'] else 'NOT met'}")
    if "asr-real" in result:
        kind = "Whisper WER" if result["asr-real"]["task"] == "whisper" else "CTC WER"
        lines.append(f"  real speech: {kind} {result['asr-real']['wer']:.1f}% on the clean Asterisk prompts")
    if "asr-long" in result:
        r = result["asr-long"]
        snr = segment_part.GOAL["snr"]
        at = [f"{row['noise']} {row['wer']:.1f}%" for row in r["rows"] if row["snr_db"] in (None, snr)]
        lines.append(f"  long real recording: transcript WER {', '.join(at)} (at {snr} dB); the "
                     f"prompts one by one {r['one_by_one_wer']:.1f}%")
    if "whisper-window" in result:
        natural, padded = result["whisper-window"]["rows"]
        lines.append(f"  Whisper window: CTC WER {natural['wer']:.1f}% natural-length, {padded['wer']:.1f}% padded to "
                     f"30 s, which takes {result['whisper-window']['time_ratio']}x the encoding time")
    if "ctc-vocab" in result:
        lines.append(ctcvocab_part.summary_line(result["ctc-vocab"]))
    if "text" in result:
        r = result["text"]
        lines.append(f"  MT text: {r['text']['lines']:,} pairs, peak RSS {r['goal']['peak_rss_mib']:,} MiB (goal <= "
                     f"{r['goal']['peak_rss_mib_at_most']:g} {'met' if r['goal']['met'] else 'NOT met'}); loader "
                     f"{r['loader_over_training']}x the tokens/s training consumes")
    if "length" in result and "skipped" not in result["length"]:
        r = result["length"]["lengths"][-1]
        frame, shrink = result["length"]["adaptors"]
        lines.append(f"  length {r['seconds']} s: {shrink} {r['speedup']}x faster than {frame} (memory "
                     f"{r[frame]['memory_length']} -> {r[shrink]['memory_length']} positions, peak rise "
                     f"{r[frame]['rss_rise_mib']} -> {r[shrink]['rss_rise_mib']} MiB)")
    return "\n".join(lines)


def check_beam(beam: int, subject: Subject) -> None:
    """ESPnet's BatchBeamSearch (the decode part's reference) takes its first beam from the target vocabulary
    alone: a beam above its size was "selected index k out of range", a traceback."""
    if beam > len(subject.tgt):
        raise SateError(f"--beam {beam}: the decode part's ESPnet search keeps at most the target vocabulary's "
                        f"{len(subject.tgt)} tokens of {subject.model_path}")


def check_pack_early(args: argparse.Namespace) -> None:
    """--pack (and whisper-window's split of --data) read before any part: a misspelt pack was named only when its
    part began, after the parts before it (`--parts text,asr-real`: the text part's hour) had run."""
    from sate.decode.pack import read_pack_yaml  # heavy: torch
    from sate.models.hub.whisper_asr import is_whisper_directory  # heavy: torch

    reads = [part for part in ("asr-real", "asr-long", "whisper-window") if part in args.parts]
    if not reads:
        return
    if not ("asr-real" in reads and is_whisper_directory(args.pack)):  # asr-real also reads a Whisper directory
        read_pack_yaml(args.pack)
    if "whisper-window" in reads:
        manifest = args.data / f"{args.split}.jsonl"
        require_file(manifest, "a manifest", missing_split(manifest, f"{manifest} is missing (--split {args.split} of "
                                                                     "--data)"))


def check_split_early(args: argparse.Namespace, subject: Subject) -> None:
    """The split the decode and length parts read, before any part: `--parts train,length --split tst-common` was
    refused when the length part began, after the train part's minutes, naming none of the splits there."""
    reads = "decode" in args.parts or ("length" in args.parts and length_part.frame_kind(subject.model) is not None)
    if reads:
        subject.dataset(split_of(args, subject))


def main(argv: list[str] | None = None) -> int:
    with signals_as_interrupts():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    args = parse_args(argv)
    threads = args.threads or torch.get_num_threads()
    command = shlex.join(["python", "-m", "sate.bench", *(sys.argv[1:] if argv is None else argv)])
    try:
        out = check_output(args.out, "text")  # before any part spends its time: never over a model, pack or data
        check_named_kind(args.out, "python -m sate.bench writes one JSON document", (".json",))  # not bench.csv
        if "gpu" in args.parts:
            gpu_part.require_cuda()  # before any other part spends its time
        check_pack_early(args)
        with tempfile.TemporaryDirectory() as tmp:
            subject = None
            if args.tiny:
                subject = build_tiny(Path(tmp))
            elif args.model is not None:
                subject = load_subject(args.model, args.data)
            if subject is not None:
                check_split_early(args, subject)
            if subject is not None and "decode" in args.parts:
                check_beam(args.beam, subject)
            torch.set_num_threads(threads)
            result = BenchResult(command=command, machine=machine(), peak_memory=PEAK_MEMORY,
                                 subject=subject.describe() if subject is not None else None, parts=args.parts,
                                 **run_parts(args, subject, threads))
    except SateError as err:
        print(f"python -m sate.bench: error: {one_line(str(err))}", file=sys.stderr)
        return 2
    except OSError as err:  # a part's own files on a full disk (the scale part's data): a traceback through the part
        print(f"python -m sate.bench: error: {one_line(describe_os_error(err))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as err:  # Ctrl-C or, by signals_as_interrupts, a kill: the temporary folder is gone
        signum = err.signum if isinstance(err, Terminated) else signal.SIGINT
        print(f"python -m sate.bench: {SIGNAL_ENDINGS[signum]}", file=sys.stderr)
        return 128 + signum
    print()
    print(summary(result))
    try:  # a full disk here, after every part ran, was a traceback: one line, as the sate CLI gives it
        atomic_write_text(out, json.dumps(result, indent=2) + "\n")
    except OSError as err:
        print(f"python -m sate.bench: error: {one_line(describe_os_error(err))}", file=sys.stderr)
        return 1
    print(f"wrote {one_line(str(args.out))}")
    return 0
