"""Decode a prepared split and score it: `sate evaluate --model DIR --data DATA --split tst-COMMON`.

What is decoded depends on the packed model(s):

- ST: the features (``DATA/fbank/<split>.scp``, normalised with the pack's CMVN; a hub acoustic encoder: the
  waveforms) are translated
  with beam search, and the CTC head gives the transcript in the same encoder pass.
- ASR: the CTC greedy transcript only; with ``--mt-model MT_DIR`` the transcripts are then
  translated by the MT model (a cascade, scored like ST).
- A Whisper directory instead of a pack (`sate.models.hub.whisper_asr`): Whisper's own decoder gives the
  transcripts (greedy, English-only models), alone or into ``--mt-model``: the cascade a user would build.
- MT: the split's reference transcripts (``src_norm``; a Marian model: the cased ``src``) are translated: the
  cascade's upper bound.

Written to ``--out``: ``hyp.txt``/``ref.txt`` (detokenized translations and references) and
``transcript.txt``/``transcript_ref.txt`` (CTC transcripts and ``src_norm``), one line per manifest
row in manifest order, and ``results.json``. Translations are scored with `sate.scoring.score` (BLEU,
chrF, TER exactly as the sacrebleu CLI scores ``hyp.txt`` against ``ref.txt``, signatures printed),
transcripts with WER on lowercased words without punctuation. Translations also get a 95% bootstrap
confidence interval for BLEU and chrF (`sate.scoring.significance`) and two signs of degenerate
decoding (`sate.scoring.degeneration`): the length ratio and the share of outputs that loop.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypedDict

from sate import layout
from sate.data.manifest import check_split_names, is_split_name, missing_split
from sate.data.rows import is_training_split
from sate.decode.options import CHUNK, StreamPolicy, add_stream_arguments, check_chunk, parse_policy
from sate.errors import SateError, one_line
from sate.files import (
    check_distinct,
    held_out_dir,
    json_text,
    real_path,
    replace_together,
    require_directory,
    require_file,
)
from sate.numbers import whole_number
from sate.scoring.latency import corpus_latency, latency_line, sentence_latency
from sate.targets import (
    check_output,
    check_own_files,
    check_same_experiment,
    dir_name,
    evaluate_results,
    name_max,
    read_name,
    trained_task,
    unused_folder,
)

GROUP_BATCHES = 8  # MT: sentences are translated in groups of this many batches, for the progress bar
# Every file evaluate writes into --out; a run removes those it does not write, so an ASR run never leaves
# an earlier ST run's hyp.txt beside its own results.
OUTPUTS = layout.EVALUATE_OUTPUTS


class Results(TypedDict, total=False):
    """results.json: what was decoded and how, then the scores of the outputs the mode has."""

    mode: str  # asr | mt | st | cascade
    model: str
    mt_model: str | None
    data: str
    split: str
    utterances: int
    decode: dict[str, object]  # the decoding options used (`DecodeOptions`)
    device: str
    decode_seconds: float
    audio_seconds: float  # speech input only
    rtf: float | None
    bleu: float  # translations (st, mt, cascade)
    chrf: float
    ter: float
    bleu_detail: str
    signature: dict[str, str]  # sacreBLEU's, per metric
    bleu_ci: float
    chrf_ci: float
    bootstrap_signature: dict[str, str]
    length_ratio: float
    length_unit: str  # what length_ratio counts: "13a tokens", or "characters" (Chinese, Japanese)
    loop_share: float
    wer: float  # transcripts (asr, st, cascade)
    wer_errors: int
    wer_words: int
    talks: int  # --talks: whole talks translated, the output re-segmented to the references
    stream: StreamResults  # --stream
    whisper: dict[str, object]  # --model a Whisper directory: how its transcripts were decoded


class StreamResults(TypedDict, total=False):
    """A streamed evaluation: the policy, its corpus latency (`sate.scoring.latency`) and where the time went
    (per utterance), or, with --talks, how many talks and chunks."""

    policy: str
    chunk: float
    latency: dict[str, float | int | None]
    chunks: int
    encoder_seconds: float
    decoder_seconds: float
    talks: int


def default_out(model_dir: Path, mt_model_dir: Path | None, split: str) -> Path:
    """``eval/<exp>-<pack>[+<exp>-<pack>]-<hash>/<split>``: the recipe names every pack ``pack``, so the
    experiment folder and a hash of the full paths keep two models from sharing (and overwriting) a folder."""
    import hashlib

    models = [real_path(model_dir)] + ([real_path(mt_model_dir)] if mt_model_dir is not None else [])
    name = "+".join(f"{m.parent.name}-{m.name}" if m.parent.name else m.name for m in models)
    digest = hashlib.sha1(b"\n".join(map(os.fsencode, models))).hexdigest()[:8]  # a name not UTF-8 as its bytes
    # cut to fit the file system (the digest keeps it apart): two long folder names made a name no --out had given
    # ("File name too long (...: choose a shorter one)")
    name = os.fsdecode(os.fsencode(name)[:name_max(Path("eval")) - len(digest) - 1])
    return Path("eval") / f"{name}-{digest}" / split


def check_out(out: Path) -> None:
    """Refuse ``out`` before anything is loaded if any of its files would replace what is not text
    (`sate.targets`)."""
    check_output(out, "directory")
    for name in OUTPUTS:
        check_output(out / name, "results")
    check_distinct(out / name for name in OUTPUTS)  # first: a link between two of them is named with both
    check_own_files(out, OUTPUTS, "--out")  # a link at one to a user's notes: written through (passes 18, 19)


def check_cascade_place(out: Path, model_dir: Path, mt_model_dir: Path) -> None:
    """Refuse a cascade evaluated into an ST experiment (``--out EXP/decode_<split>``, its config.yaml ``task: st``):
    packs from outside any experiment (packs/asr and packs/mt, as docs/inference.md names them) say nothing of where
    they belong, so ``--out exp/st/decode_tst-COMMON`` (the ST line copied, --model changed) exited 0, and `sate report`
    tabled the cascade's BLEU as st's, the baseline every row is tested against (31st hostile pass). Neither part of a
    cascade is an ST model; an ASR or MT experiment, where a part may come from, takes it as before (packs of
    experiments are held to theirs by `check_same_experiment`)."""
    named, real = Path(os.path.abspath(out)).parent, Path(os.path.realpath(out)).parent
    for target in dict.fromkeys((named, real)):
        if trained_task(target) == "st":
            # the recipes' exp/cascade was the advice: following it replaced their cascade's results (review31r)
            own = unused_folder(target.parent, "cascade") / Path(os.path.abspath(out)).name
            raise SateError(f"--out {one_line(str(out))}: it lies in the st experiment {one_line(str(target))}, and "
                            f"--model {one_line(str(model_dir))} --mt-model {one_line(str(mt_model_dir))} is a "
                            f"cascade: it would be taken for {one_line(target.name)}'s own; write it in a folder of "
                            f"its own (--out {one_line(str(own))})")


def _translate_sorted(translator: Any, sources: list[str], options: Any, batch_size: int, desc: str) -> list[str]:
    """translate_text over length-sorted groups, with a progress bar; results in input order."""
    from tqdm import tqdm

    order = sorted(range(len(sources)), key=lambda i: -len(sources[i].split()))
    out = [""] * len(sources)
    step = batch_size * GROUP_BATCHES
    with tqdm(total=len(sources), unit="sent", desc=desc, file=sys.stderr) as bar:
        for k in range(0, len(order), step):
            chunk = order[k:k + step]
            for i, hyp in zip(chunk, translator.translate_text([sources[i] for i in chunk], options, batch_size),
                              strict=True):
                out[i] = hyp
            bar.update(len(chunk))
    return out


def _decode_speech(translator: Any, data: Path, split: str, options: Any,
                   batch_size: int) -> tuple[list[dict], list[str], list[str | None]]:
    """Manifest rows, CTC transcripts and translations (None for ASR) of a split, in manifest order."""
    from tqdm import tqdm

    from sate.data.dataset import speech_dataset
    from sate.decode.api import _batches

    tgt_vocab = translator.tgt_vocab if translator.task == "st" else None  # ASR reads no translations
    dataset = speech_dataset(data, split, translator.src_vocab, tgt_vocab, translator.feature_kind, translator.cmvn)
    transcripts: list[str] = [""] * len(dataset)
    translations: list[str | None] = [None] * len(dataset)
    with tqdm(total=len(dataset), unit="utt", desc="decode", file=sys.stderr) as bar:
        for batch in _batches(dataset.lengths, batch_size):
            feats = [dataset[i]["feats"] for i in batch]
            for i, (transcript, translation) in zip(batch, translator.decode_features(feats, options, len(batch)),
                                                    strict=True):
                transcripts[i], translations[i] = transcript, translation
            bar.update(len(batch))
    return dataset.rows, transcripts, translations


def _transcribe_whisper(recognizer: Any, rows: list[dict], batch_size: int) -> list[str]:
    """Whisper's transcript of each manifest row's audio, in manifest order."""
    from tqdm import tqdm

    from sate.data.audio import HeldFiles, read_segment  # slow: soundfile and numpy, only when Whisper transcribes

    out: list[str] = []
    step = batch_size * GROUP_BATCHES
    with tqdm(total=len(rows), unit="utt", desc="whisper", file=sys.stderr) as bar, HeldFiles() as held:
        for k in range(0, len(rows), step):
            group = rows[k:k + step]
            try:
                waves = [read_segment(r["audio"], float(r["offset"]), float(r["duration"]), held=held) for r in group]
            except SateError as err:
                raise SateError(f"rows {k + 1}-{k + len(group)}: {err}") from None
            out += recognizer.transcribe(waves, batch_size)
            bar.update(len(group))
    return out


def _file_lines(lines: list[str]) -> list[str]:
    """The lines of hyp.txt and the like as written: one line per row, whatever the text holds (a line break inside
    would shift every later line)."""
    return [" ".join(line.split("\n")) for line in lines]


def _as_read(lines: list[str]) -> list[str]:
    """`_file_lines` as `sate score` (and sacrebleu's CLI) reads them back from the file: trailing whitespace dropped;
    the scores are those of the files as written."""
    return [line.rstrip() for line in lines]


def _text(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def check_row_lengths(manifest: Path, rows: list[dict], limit: float | None, advice: str) -> None:
    """Refuse a split holding a row longer than the acoustic encoder takes (`limit` seconds: Whisper's 30-s window;
    None: unbounded), naming the longest, before anything is decoded. In samples, by the bound training and the API
    keep (`window_samples`): in seconds, 480,080 samples were refused as "30.00 s, longer than the 30 s"."""
    if limit is None:
        return
    from sate.data.waveform import segment_samples  # heavy: torch
    from sate.data.whisper_mel import beyond_window  # heavy: torch

    longest = max(rows, key=segment_samples)
    beyond = beyond_window(segment_samples(longest), limit)
    if beyond is not None:
        raise SateError(f"{manifest}: row {longest['id']} lasts {beyond} this model's acoustic encoder (Whisper) "
                        f"takes: {advice}")


def evaluate(model_dir: Path, data: Path, split: str, out: Path, mt_model_dir: Path | None = None,
             decode: dict[str, object] | None = None, batch_size: int = 16, device: str | None = None,
             stream: StreamPolicy | None = None, chunk: float = CHUNK, talks: bool = False) -> Results:
    """Decode and score a split; writes the hypothesis, reference and results files into ``out``.

    With `stream` (an ST pack), each utterance is read `chunk` seconds at a time under that policy, with the
    pack's beam search (or `decode`'s) where it decodes a whole hypothesis (`sate.decode.simultaneous`,
    `sate.decode.policies`), and the results add its latency; ``delays.jsonl`` has each word's delays.
    With `talks`, each talk (the rows of one ``audio`` file) is translated whole, as `sate translate` does, or
    streamed whole under `stream`, and its output re-segmented to the rows by edit distance (`sate.decode.talks`);
    the latency is then StreamAL/StreamLAAL, and no transcripts are scored.
    """
    from sate.data.manifest import read_manifest, require_translations
    from sate.decode.api import SpeechTranslator, pick_device
    from sate.decode.pack import check_experiment_task  # beside the pack's loader, which api imports anyway
    from sate.models.hub.whisper_asr import WhisperRecognizer, is_whisper_directory  # heavy: torch
    from sate.scoring.degeneration import length_line, length_ratio, length_unit, loop_share
    from sate.scoring.score import blank_references, format_text, sacrebleu_scores, wer_line, word_error_rate
    from sate.scoring.significance import bootstrap_seed, confidence

    if batch_size < 1:
        raise SateError(f"--batch-size must be >= 1, got {batch_size}")
    if stream is not None:
        chunk = check_chunk(chunk)
        if "nbest" in (decode or {}):
            raise SateError("--stream shows one translation: nbest (--decode) does not apply")
    require_directory(Path(data), "--data")
    manifest = data / f"{split}.jsonl"
    require_file(manifest, f"the manifest of split {split!r}",
                 missing_split(manifest, f"{manifest}: manifest of split {split!r} is missing (run `sate prep`)"))
    check_out(out)
    if Path(model_dir).is_file() and is_whisper_directory(Path(model_dir).parent):  # told `sate pack --model FILE`,
        # which refuses a downloaded model (twenty-fourth hostile pass, review)
        raise SateError(f"--model {model_dir}: a file of the Whisper model directory {Path(model_dir).parent}: give "
                        f"the directory itself (--model {Path(model_dir).parent})")
    whisper = is_whisper_directory(model_dir)
    if whisper and (stream is not None or talks):
        raise SateError(f"{'--stream' if stream is not None else '--talks'} translates with an ST pack; {model_dir} "
                        "is a Whisper directory (it transcribes each row)")
    if mt_model_dir is not None and is_whisper_directory(mt_model_dir):
        raise SateError(f"--mt-model {mt_model_dir} is a Whisper directory: give it as --model (the ASR side of a "
                        "cascade) and an MT pack as --mt-model")
    if whisper and mt_model_dir is None and decode:
        raise SateError("--decode and --beam set an MT pack's beam search; Whisper's decoder here is greedy")
    model = (WhisperRecognizer.load(model_dir, pick_device(device)) if whisper
             else SpeechTranslator.load(model_dir, device=device))
    mt = SpeechTranslator.load(mt_model_dir, device=device) if mt_model_dir is not None else None
    if mt is not None and (model.task != "asr" or mt.task != "mt"):
        raise SateError(f"--mt-model is for a cascade: --model must be an ASR pack (or a Whisper directory) and "
                        f"--mt-model an MT pack (got {model.task} and {mt.task})")
    translator = mt if mt is not None else model
    if mt is None:  # a pack from outside any experiment evaluated into EXP/decode_x of another task: `sate report`
        # tabled an ST pack's BLEU and p-value as exp/asr's row, exit 0 (twenty-fourth hostile pass, review)
        check_experiment_task(out, Path(model_dir), model.task, out)
    else:
        check_cascade_place(out, Path(model_dir), Path(mt_model_dir))
    if model.task == "asr" and mt is None and decode:  # CTC greedy: --beam 3 was taken, unused, and recorded
        raise SateError(f"--decode and --beam set the beam search of an ST or MT pack; {model_dir} is an ASR pack, "
                        "whose transcripts are CTC greedy (with --mt-model they set the MT pack's)")
    if (stream is not None or talks) and (model.task != "st" or mt is not None):
        flag = "--stream" if stream is not None else "--talks"
        raise SateError(f"{flag} translates with an ST pack; {model_dir} is an {model.task.upper()} pack"
                        + (" (and --mt-model makes a cascade)" if mt is not None else ""))
    single = {"nbest": 1} if stream is not None else {}  # a policy shows one translation, whatever the pack keeps
    # An ASR pack or Whisper alone: no beam search of ours runs, and results.json records none (Whisper's: how it
    # decoded instead)
    options = None if model.task == "asr" and mt is None else translator.with_options(**{**(decode or {}), **single})
    mode = "cascade" if mt is not None else model.task
    rows = read_manifest(manifest)
    if not rows:  # scores of zero sentences were sacreBLEU's IndexError, after the decode
        raise SateError(f"{manifest}: no rows to evaluate")
    if mode != "asr":  # before decoding: scoring translations needs references, and their bootstrap a seed
        require_translations(manifest, rows)
        if not any(row["tgt"].strip() for row in rows):  # scored BLEU 0, TER 100 after the whole decode, exit 0
            raise SateError(blank_references(f"{manifest}: the tgt of every one of its {len(rows):,} rows is",
                                             "prepare the split from its translations (sate prep)"))
        bootstrap_seed()
    if not talks:  # Whisper's window: a longer row was refused once decoding reached it (streamed: 30 s into it)
        # `sate prep --max-duration` drops rows of training splits only: for a test split that advice, followed,
        # kept the row (24th hostile pass)
        cut = ("prepare the split with sate prep --max-duration" if is_training_split(split) else
               "evaluate a split whose rows are 30 s at most (sate prep --max-duration filters training splits only)")
        check_row_lengths(manifest, rows, model.max_seconds() if whisper else model.max_segment_seconds(),
                          cut if whisper else f"evaluate whole talks cut at pauses (--talks), or {cut}")
    with held_out_dir(out, "sate evaluate"):
        started = time.perf_counter()
        transcripts: list[str] | None = None
        translations: list[str] | None = None
        streamed: list[Any] | None = None  # per row: .delays, .elapsed (seconds from its start), .duration
        if stream is not None and talks:
            from sate.decode.talks import stream_talks  # heavy: torch

            streamed, talk_chunks = stream_talks(model, rows, stream, chunk, options)
            translations = [segment.translation for segment in streamed]
        elif talks:
            from sate.decode.talks import translate_talks  # heavy: torch

            translations = translate_talks(model, rows, options, batch_size)
        elif stream is not None:
            from sate.decode.simultaneous import stream_rows  # heavy: torch

            streamed = stream_rows(model, rows, stream, chunk, options)
            transcripts = [run.transcript for run in streamed]
            translations = [run.translation for run in streamed]
        elif model.task == "mt":
            sources = [model.src_vocab.manifest_source(r) for r in rows]  # src_norm, or Marian's cased src
            translations = _translate_sorted(model, sources, options, batch_size, "translate")
        elif whisper:
            transcripts = _transcribe_whisper(model, rows, batch_size)
            if mt is not None:
                translations = _translate_sorted(mt, transcripts, options, batch_size, "translate")
        else:
            rows, transcripts, st_out = _decode_speech(model, data, split, options, batch_size)
            if model.task == "st":
                translations = [t or "" for t in st_out]
            elif mt is not None:
                translations = _translate_sorted(mt, transcripts, options, batch_size, "translate")
        elapsed = time.perf_counter() - started

        results = Results(
            mode=mode, model=str(model_dir), mt_model=str(mt_model_dir) if mt_model_dir else None,
            data=str(data), split=split, utterances=len(rows), decode=asdict(options) if options is not None else {},
            device=str(model.device), decode_seconds=round(elapsed, 3))
        if whisper:
            results["whisper"] = model.describe()
        if talks:
            from sate.decode.talks import count_talks  # heavy: torch (loaded already)

            results["talks"] = count_talks(rows)
        if model.task != "mt":
            audio = sum(float(r["duration"]) for r in rows)
            results.update(audio_seconds=round(audio, 3), rtf=round(elapsed / audio, 4) if audio else None)
        # Nothing is written until everything is scored: a full disk, a kill or a failure while scoring leaves an
        # earlier run's files and its results.json as they were (they were replaced one by one, results.json
        # removed first: a full disk lost the earlier run's scores and left the new hyp.txt beside the old ref.txt)
        files: dict[str, bytes] = {}
        report = [f"{results['talks']} talks translated whole, the output re-segmented to the references"
                  ] if talks else []
        if translations is not None:
            hyp_lines, ref_lines = _file_lines(translations), _file_lines([r["tgt"] for r in rows])
            files.update({"hyp.txt": _text(hyp_lines), "ref.txt": _text(ref_lines)})
            # Scored as the files read, so `sate score`/sacrebleu on them give these numbers.
            hyps, refs = _as_read(hyp_lines), _as_read(ref_lines)
            scores = sacrebleu_scores(hyps, refs, ("the translations", f"the references ({manifest}'s tgt)"))
            # one sentence: every resample is that sentence, and its interval was "± 0.0" (twenty-ninth hostile pass)
            intervals = confidence(hyps, refs) if len(hyps) > 1 else None
            results.update(bleu=scores["BLEU"].score, chrf=scores["chrF"].score, ter=scores["TER"].score,
                           bleu_detail=scores["BLEU"].verbose,
                           signature={"bleu": scores["BLEU"].signature, "chrf": scores["chrF"].signature,
                                      "ter": scores["TER"].signature},
                           length_ratio=length_ratio(hyps, refs), length_unit=length_unit(refs),
                           loop_share=loop_share(hyps))
            report.append(format_text(scores))
            if intervals is None:
                report.append("95% confidence: none from one sentence (every resample is that sentence)")
            else:
                results.update(bleu_ci=intervals["bleu"]["ci"], chrf_ci=intervals["chrf"]["ci"],
                               bootstrap_signature=intervals["signature"])
                # the score ± the interval's half width, as `sate report`'s table shows it; the resamples' mean,
                # which sacreBLEU prints (μ), beside it: the line gave the mean alone, and the two commands two numbers
                report.append(f"95% confidence (sacreBLEU bootstrap): BLEU {results['bleu']:.1f} ± "
                              f"{intervals['bleu']['ci']:.1f} (μ {intervals['bleu']['mean']:.1f}), chrF "
                              f"{results['chrf']:.1f} ± {intervals['chrf']['ci']:.1f} "
                              f"(μ {intervals['chrf']['mean']:.1f})")
            report.append(length_line(results["length_ratio"], results["length_unit"], results["loop_share"]))
        if transcripts is not None:
            files.update({"transcript.txt": _text(_file_lines(transcripts)),
                          "transcript_ref.txt": _text(_file_lines([r["src_norm"] for r in rows]))})
            wer = word_error_rate(transcripts, [r["src_norm"] for r in rows])
            results.update(wer=wer.wer, wer_errors=wer.errors, wer_words=wer.words)
            report.append(wer_line(wer, f"WER ({'Whisper' if whisper else 'CTC'} greedy; lowercase, no punctuation)"))
        if streamed is not None:
            from sate.decode.talks import reference_length  # heavy: torch (loaded already)

            latencies = [sentence_latency(run.delays, run.elapsed, run.duration, reference_length(row["tgt"]))
                         for run, row in zip(streamed, rows, strict=True)]
            results["stream"] = StreamResults(policy=str(stream), chunk=chunk, latency=corpus_latency(latencies))
            if talks:
                results["stream"].update(talks=results["talks"], chunks=talk_chunks)
            else:
                results["stream"].update(
                    chunks=sum(run.chunks for run in streamed),
                    encoder_seconds=round(sum(run.encoder_seconds for run in streamed), 3),
                    decoder_seconds=round(sum(run.decoder_seconds for run in streamed), 3))
            files["delays.jsonl"] = _text([json.dumps(
                {"id": row.get("id"), "duration": run.duration, "delays": run.delays,
                 "elapsed": [round(e, 4) for e in run.elapsed]}) for run, row in zip(streamed, rows, strict=True)])
            whole = " (StreamAL, StreamLAAL)" if talks else ""
            report.append(f"streaming {stream}, {chunk:g} s chunks{whole}: "
                          + latency_line(results["stream"]["latency"]))
        earlier = evaluate_results(out / layout.RESULTS)
        stale = set(OUTPUTS) - set(files) - {layout.RESULTS} if earlier else set()  # an earlier run's, of another
        # mode (a folder of the user's keeps its files). results.json last, the old one and the stale files removed
        # first: a kill among the renames leaves no results describing them, nor after them files of another run
        replace_together({out / name: data for name, data in files.items()}, out / layout.RESULTS,
                         json_text(results, indent=1) + "\n",  # a path not UTF-8 as \udcXX
                         remove=[out / name for name in sorted(stale)])
        speed = f"{len(rows) / elapsed:.1f} utt/s" if elapsed > 0 else ""
        if "rtf" in results and results["rtf"] is not None:
            speed += f", real-time factor {results['rtf']:.3f}"
        print(f"{split}: {len(rows)} utterances decoded in {elapsed:.1f} s ({speed}) on {model.device}, {mode} model")
        print("\n".join(report))
        print(f"wrote {one_line(str(out))}/results.json" + (", hyp.txt, ref.txt" if translations is not None else "")
              + (", transcript.txt, transcript_ref.txt" if transcripts is not None else "")
              + (", delays.jsonl" if streamed is not None else ""))
        return results


# ----------------------------------------------------------------------------------------------
# CLI


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from sate.decode.options import add_override_arguments

    parser.add_argument("--model", type=read_name, required=True,
                        help="packed model directory (`sate pack`): st, asr or mt; or a Whisper model directory "
                             "(Hugging Face or CTranslate2, English-only): its own decoder transcribes")
    parser.add_argument("--mt-model", type=read_name, default=None,
                        help="packed MT model: translate the --model ASR transcripts with it (a cascade)")
    parser.add_argument("--data", type=read_name, required=True,
                        help="prepared data directory (`sate prep`, `features`)")
    parser.add_argument("--split", default="tst-COMMON", help="manifest split to decode")
    parser.add_argument("--out", type=dir_name, default=None,
                        help="where hyp/ref files and results.json go; files of an earlier run there are replaced "
                             "(when not given: eval/EXP-PACK-HASH/SPLIT, one folder per model; with --stream: "
                             "SPLIT-stream-POLICY-CHUNKs[-talks])")
    add_override_arguments(parser)
    parser.add_argument("--batch-size", type=whole_number, default=16, help="utterances (sentences) decoded together")
    parser.add_argument("--device", default=None,
                        help="torch device, e.g. cpu or cuda:1 (when not given: a GPU if present)")
    add_stream_arguments(parser, "--stream", None)
    parser.add_argument("--talks", action="store_true",
                        help="ST: translate each talk (the rows of one audio file) whole, cut by the VAD (as sate "
                             "translate; with --stream: as sate stream), and re-segment the output to the rows by "
                             "edit distance; the latency of --stream is then StreamLAAL")


def run(args: argparse.Namespace) -> int:
    from sate.decode.options import decode_overrides

    decode = decode_overrides(args)
    check_split_names([args.split], "--split")  # it names the manifest and the default output folder
    stream = parse_policy(args.stream) if args.stream is not None else None
    if stream is None and args.chunk is not None:
        raise SateError("--chunk is the reading step of --stream: give --stream POLICY too")
    chunk = CHUNK if args.chunk is None else args.chunk
    out = args.out or default_out(args.model, args.mt_model, args.split)
    if stream is not None and args.out is None:  # beside the offline results, not over them
        out = out.with_name(f"{out.name}-stream-{stream}-{chunk:g}s")
    if args.talks and args.out is None:
        out = out.with_name(f"{out.name}-talks")
    named = args.out.name.removeprefix("decode_") if args.out is not None else ""
    if args.out is not None and args.out.name.startswith("decode_") and named != args.split \
            and is_split_name(named) and os.path.isfile(args.data / f"{named}.jsonl"):
        # `sate report` reads the split from the folder's name: --split dev --out EXP/decode_tst-COMMON (the --split
        # changed, the --out copied) was tabled as tst-COMMON, exit 0 (twenty-second hostile pass)
        instead = args.out.with_name(f"decode_{args.split}")
        raise SateError(f"--out {args.out}: a folder named for split {named}, where `sate report` looks for its "
                        f"results, given --split {args.split}; write it to {instead}")
    if args.out is not None:  # an evaluation of exp/st/pack in exp/asr/decode_x: `sate report` lists it as exp/asr's
        models = [args.model] + ([args.mt_model] if args.mt_model is not None else [])
        check_same_experiment(args.out, models, f"--model {args.model}")
    evaluate(args.model, args.data, args.split, out, args.mt_model, decode, args.batch_size, args.device, stream,
             chunk, args.talks)
    return 0
