"""Attention analysis: per-layer localness plots and cross-attention heatmaps.

    sate analyze locality --model exp/asr/model.pt exp/mt/model.pt packs/st --data data --split dev --out analysis
    sate analyze attention --model packs/st --data data --split dev --utt ted_1_0 --out heat.png
    sate analyze attention --model packs/st talk.wav --out heat.png --layer 6 --head mean --encoder-layers 1 6

A model is a model file (`sate average`, `sate train`) or a directory holding one as model.pt
(a `sate pack` directory, or an experiment directory). Speech models read the split's fbank
features (``DATA/fbank/<split>.scp``) or, for `attention`, an audio FILE read whole as one
utterance (any rate and channel count, resampled to 16 kHz mono; keep it to about a sentence: 120 s at most,
the longest segment the VAD cuts, as `sate segment` cuts a recording).
MT models read the split's transcripts (``src_norm``), encoded with a pack's own vocabularies, else DATA's.
A pack's parts are checked as `sate evaluate` checks them (each there, its vocabularies its model's).

CMVN rule: features are normalised as the model was trained, per the packed directory's
sate.yaml, else what the model file records (``cmvn_kind``), else ``data.cmvn`` of the config.yaml
beside the model file, else global. Global statistics are a pack's own cmvn.json (as `sate evaluate`
reads them), else ``DATA/cmvn.json`` whenever --data is given, else the model directory's cmvn.json.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sate import layout
from sate.data.audio import audio_blocks, audio_name, read_segment, wav_info
from sate.data.cmvn_record import require_cmvn
from sate.data.features import FRAME_SHIFT_MS, compute_fbank
from sate.data.manifest import check_split_names, manifest_splits, read_manifest
from sate.data.marian_vocab import MarianVocab
from sate.data.vocab import Vocabulary, load_source_vocabulary, load_vocabularies, vocabulary_kind
from sate.decode.pack import (
    check_cmvn_kind,
    check_pack_features,
    check_pack_parts,
    check_pack_tokens,
    model_features,
    read_pack_yaml,
    training_cmvn,
)
from sate.decode.vad import MAX_SEGMENT
from sate.errors import DefaultsShown, SateError, address_space_limit, one_line, out_of_memory
from sate.files import (
    check_distinct,
    check_journal_place,
    given_twice,
    held_out_dir,
    is_stream,
    json_text,
    real_path,
    replace_together,
    require_directory,
    require_file,
)
from sate.numbers import is_number, real_number, whole_number
from sate.targets import check_output, check_own_files, dir_name, file_name, read_name

if TYPE_CHECKING:  # torch: imported when a command runs, so `sate analyze --help` stays instant

    from sate.data.dataset import CMVN, Batch, SpeechDataset
    from sate.models.base import SateModel
    from sate.models.model_file import ModelMeta

    Vocab = Vocabulary | MarianVocab

# ----------------------------------------------------------------------------------------------
# Inputs


@dataclass
class AnalysisModel:
    """A loaded model with where it came from and how its speech input is normalised."""

    path: Path  # as given on the command line
    name: str  # short name for tables, legends and titles
    model: SateModel  # eval mode
    meta: ModelMeta  # the model file's header (token lists, task, config)
    cmvn: str | None  # global | utterance | none; None for MT
    directory: Path | None  # the directory given, if a directory was given
    vocabs: tuple[Vocab, Vocab] | None  # a pack's own (source, target) vocabularies, checked against the model

    @property
    def task(self) -> str:
        return self.meta["task"]

    @property
    def model_file(self) -> Path:
        return self.directory / layout.MODEL if self.directory is not None else self.path

    def own_pack(self) -> str:
        """The advice that ends a refusal of DATA's statistics or vocabulary: give the pack, which reads its own; a
        pack's model.pt given alone was told to `sate pack` what is packed already (twenty-sixth pass, review)."""
        folder = self.path.parent
        if self.directory is None and self.path.name == layout.MODEL and (folder / layout.PACK_YAML).is_file():
            return f"give its pack {folder} instead of its {layout.MODEL}, which reads its own"
        return (f"pack it (`sate pack --model {self.model_file} --data TRAINING_DATA --out PACK`) and give the pack, "
                "which reads its own")


def load_model(path: Path) -> AnalysisModel:
    """A model file, or a directory with model.pt (and, when packed, sate.yaml saying its CMVN)."""
    from sate.models.model_file import model_from_file, note_older_average  # heavy: torch

    directory = path if path.is_dir() else None
    model_file = path / layout.MODEL if directory else path
    if directory and not os.path.lexists(model_file) and any(
            (place / layout.LAST_CHECKPOINT).is_file() for place in (path, path / layout.CHECKPOINTS)):
        # an experiment not averaged yet, or its checkpoint folder: "holds no model.pt (give a model file or a `sate
        # pack` directory)" gave no way to the model file (twenty-sixth hostile pass); the reader names `sate average`
        model_from_file(path)
    if directory:  # a named pipe there was "holds no model.pt" (fifteenth hostile pass, the reads harness)
        require_file(model_file, "a model file",
                     f"{path}: directory holds no {layout.MODEL} (give a model file or a `sate pack` directory)")
    model, meta = model_from_file(model_file)
    note_older_average(model_file, meta, "the model")  # an experiment's EXP/model.pt a resume has trained past
    meta = {k: v for k, v in meta.items() if k != "model"}
    cmvn = None
    if meta["task"] != "mt" and model_features(model.conf) == "waveform":  # it failed after the work, naming a key
        raise SateError(f"{path}: its acoustic encoder ({model.conf.acoustic.type}) reads waveforms; `sate analyze` "
                        "feeds fbank features (the split's, or an audio file's as `sate features` computes them), "
                        "so it cannot analyse this model")
    info = read_pack_yaml(directory) if directory and (directory / layout.PACK_YAML).is_file() else None
    vocabs = None
    if info is not None:  # its own parts, as `sate evaluate` reads and checks them: a pack missing cmvn.json was read
        # with DATA's statistics, and one whose vocabulary is not its model's gave an IndexError or wrong values
        # (twenty-sixth hostile pass, review)
        if info.task != meta["task"]:
            raise SateError(f"{model_file} holds a model of task {meta['task']}, but {directory / layout.PACK_YAML} "
                            f"says {info.task}")
        check_pack_parts(directory, info)
        vocabs = load_vocabularies(directory, info.task, info.vocab)
        check_pack_tokens(meta, directory, info, vocabs)
        check_pack_features(model.conf, directory, info)
    if meta["task"] != "mt":
        if info is not None:
            cmvn, where = info.features["cmvn"], f"{directory / layout.PACK_YAML}: features.cmvn"
        else:
            found = training_cmvn(model_file, meta)
            cmvn, where = (found[0], f"{found[1]}: data.cmvn") if found else ("global", "")
        check_cmvn_kind(meta, model_file, cmvn, where)  # a model trained on global CMVN read as no other
    name = path.name if directory else (path.parent.name if path.name == layout.MODEL else path.stem)
    return AnalysisModel(path, name or str(path), model, meta, cmvn, directory, vocabs)


def unique_names(models: list[AnalysisModel]) -> None:
    """Models whose short names collide are named by the paths given instead."""
    names = [m.name for m in models]
    for m in models:
        if names.count(m.name) > 1:
            m.name = str(m.path)


def cmvn_source(am: AnalysisModel, data: Path | None) -> Path | None:
    """The `cmvn.json` a global-CMVN model's features are normalised with: a pack's own (as `sate evaluate` reads
    it), else DATA's, else a model directory's; None for another kind or none found. A pack given with the
    --data of another corpus (held-out speech) was refused for DATA's statistics, which were not its own, and no
    option gave its own (twenty-sixth hostile pass)."""
    if am.cmvn != "global":
        return None
    if am.vocabs is not None:  # a pack: its cmvn.json is a file (`check_pack_parts`)
        return am.directory / layout.CMVN
    if data is not None:
        return data / layout.CMVN
    if am.directory is not None and os.path.lexists(am.directory / layout.CMVN):
        return am.directory / layout.CMVN
    return None


def normalizer(am: AnalysisModel, data: Path | None) -> CMVN | None:
    """The CMVN of the module docstring's rule (None: raw features)."""
    from sate.data.dataset import CMVN  # heavy: torch

    if am.cmvn != "global":
        return CMVN.from_option(am.cmvn)
    path = cmvn_source(am, data)
    if path is None:
        raise SateError(f"{am.path} was trained with global CMVN: give --data DATA_DIR (its {layout.CMVN}) "
                        f"or a packed directory holding {layout.CMVN}")
    normalise = CMVN.from_option(path)  # exists and is well-formed
    # and holds the statistics the model recorded, when it recorded them; DATA's of another corpus said no more
    advice = (f": analyse it on the data directory it was trained on, or {am.own_pack()}" if data is not None
              and path == data / layout.CMVN else "")
    require_cmvn(am.meta.get("cmvn"), path, am.path, advice)
    return normalise


def speech_vocabulary(am: AnalysisModel, data: Path) -> Vocab:
    """The source (CTC) vocabulary a speech dataset encodes its transcripts with, which the analysis never reads: a
    pack's own, else DATA's. Its translations are never read (the encoders' attention, the greedy output): an ASR
    model analysed on a transcript-only corpus (LibriSpeech, Kaldi), which `sate evaluate` scores, was refused for
    rows with no translation, or for no target vocabulary (twenty-sixth hostile pass); a pack on held-out speech with
    no vocabulary (`sate prep` and `sate features` alone, as `sate evaluate` reads it) was told to run `sate vocab`,
    which refuses a transcript-only corpus (review)."""
    return am.vocabs[0] if am.vocabs is not None else load_source_vocabulary(data, am.task)


def model_vocabularies(am: AnalysisModel, data: Path) -> tuple[Vocab, Vocab]:
    """An MT model's vocabularies: a pack's own, as `sate evaluate` reads them (an MT pack given the --data of another
    corpus was refused for DATA's token list, twenty-sixth hostile pass), else DATA's as `sate vocab` wrote them
    (SentencePiece or Marian's: a Marian data directory's MT model was told its token list differs from
    tokens_src.txt), which must be the model's."""
    if am.vocabs is not None:
        return am.vocabs
    vocabs = load_vocabularies(data, am.task)
    check_source_tokens(am, vocabs[0], data)
    return vocabs


def check_source_tokens(am: AnalysisModel, src_vocab: Vocab, data: Path) -> None:
    """An MT model embeds DATA's source ids, so both must use one token list."""
    if am.meta["src_tokens"] != src_vocab.tokens:
        # a Marian data directory's list is its marian/ folder's (tokens_src.txt there is not what was compared)
        where = layout.token_source(data, "src", vocabulary_kind(data))
        raise SateError(f"{am.path}: its source token list differs from {where}; "
                        f"analyse it on the data directory it was trained on, or {am.own_pack()}")


# ----------------------------------------------------------------------------------------------
# sate analyze locality


def ctc_layer(am: AnalysisModel, top: int | None) -> int | None:
    """The acoustic layer a model's CTC reads (``ctc.layer``, null: the top), or None where no CTC loss trains one
    (MT; a model with a decoder and ``loss.ctc_weight: 0``; a CTC-only ASR model's weight is not read)."""
    conf = am.model.conf
    if am.task == "mt" or getattr(conf, "ctc", None) is None:
        return None
    if getattr(am.model, "decoder", None) is not None and conf.loss.ctc_weight == 0:
        return None
    return conf.ctc.layer if conf.ctc.layer is not None else top


def run_locality(args: argparse.Namespace) -> int:
    from sate.decode.api import pick_device  # heavy: torch

    if not 0.0 < args.window <= 1.0:
        raise SateError(f"--window must be in (0, 1], got {args.window}")
    check_output(args.out, "directory")
    # its own files, named: a named pipe at locality.csv passed as a text stream, and the run waited for a reader
    # for ever once the analysis was done (the writes harness's wider run, fifteenth hostile pass)
    check_distinct(args.out / name for name in ("locality.csv", "locality.md", "locality.png"))  # names both
    check_own_files(args.out, ["locality.csv", "locality.md", "locality.png"], "--out")
    for name, kind in (("locality.csv", "text"), ("locality.md", "text"), ("locality.png", "image")):
        check_output(args.out / name, kind)
    check_journal_place([real_path(args.out)])
    if args.max_utts is not None and args.max_utts < 1:
        raise SateError(f"--max-utts must be >= 1, got {args.max_utts}")
    if args.batch_size < 1:
        raise SateError(f"--batch-size must be >= 1, got {args.batch_size}")
    require_directory(args.data, "--data")
    # one model file given twice (its pack and its model.pt, a link to either) was two lines of one model's values,
    # analysed twice, exit 0 (twenty-third hostile pass)
    files = [path / layout.MODEL if path.is_dir() else path for path in args.model]
    twice = given_twice(files)
    if twice is not None:
        first, again = (args.model[next(k for k, f in enumerate(files) if f is one)] for one in twice)
        raise SateError(f"--model {again}: the model file of --model {first} is given already; give each model once")
    models = [load_model(path) for path in args.model]
    unique_names(models)
    # every model checked before any work: each speech model's CMVN statistics (a second model trained on other
    # statistics rode on the first one's dataset unchecked), each MT model's source tokens
    normalisers = {id(am): normalizer(am, args.data) for am in models if am.task != "mt"}
    speech_vocabs: dict[int, Vocab] = {}
    data_vocab = None  # DATA's, loaded once, for the model files and experiments that read it
    for am in (am for am in models if am.task != "mt"):
        if am.vocabs is None and data_vocab is None:
            data_vocab = speech_vocabulary(am, args.data)
        speech_vocabs[id(am)] = am.vocabs[0] if am.vocabs is not None else data_vocab
    text_vocabs = {id(am): model_vocabularies(am, args.data) for am in models if am.task == "mt"}
    device = pick_device(args.device)
    with held_out_dir(args.out, "sate analyze locality"):  # two runs into one folder interleaved their files
        return _locality(args, models, normalisers, speech_vocabs, text_vocabs, device)


# Rows longer than this are long for self-attention's memory, which grows with the square of a row's length: the
# 30-s window of Whisper, past every utterance of a speech-translation corpus's segments
LONG_ROW = 30.0


def _too_long(args: argparse.Namespace, am: Any, row: dict, frames: int, device: Any) -> str:
    """The line for a speech model that ran out of memory on the split: its longest row named, with advice that can
    be followed. Over a split of whole recordings (a Kaldi directory without `segments`) the line was the CLI's "give
    it less at once (smaller inputs or batches)", which did nothing at `--batch-size 1`, the default (hand31n). Where
    the rows are short already, cutting them does nothing either: the model is what does not fit (review32k)."""
    seconds = row.get("duration") if is_number(row.get("duration")) else frames * FRAME_SHIFT_MS / 1000
    lasts = f"lasts {seconds:,.1f} s ({frames:,} frames)"
    batch = "give --batch-size 1 (one row at a time; it was " \
        f"{args.batch_size}), or " if args.batch_size > 1 else ""
    said = (f"out of memory encoding {args.split} of {one_line(str(args.data))} with {one_line(am.name)} on "
            f"{device}: its longest row, {one_line(str(row.get('id')))}, {lasts}")
    if seconds > LONG_ROW:
        return (f"{said}, and self-attention's memory grows with the square of a row's length; {batch}analyse rows "
                "cut into segments of a few seconds (a Kaldi `segments` file for `sate prep`: docs/data.md)")
    if device.type != "cpu":
        return (f"{said}, short already: the model and its activations need more memory than {device} has free; "
                f"{batch}give --device cpu (the machine's memory; slower), or free the GPU of other processes")
    limit = address_space_limit()
    what, fix = ("the machine could give", "free memory (other processes), or run it on a machine with more") if \
        limit is None else (f"a memory limit allows (ulimit -v: {limit // 2**20:,} MiB of address space)",
                            "raise or lift the limit")
    return f"{said}, short already: the model and its activations need more memory than {what}; {batch}{fix}"


def _locality(args: argparse.Namespace, models: list, normalisers: dict, speech_vocabs: dict, text_vocabs: dict,
              device: Any) -> int:
    """`run_locality` once its inputs are checked and its folder held: the localness of each model, written."""
    from torch.utils.data import Subset  # heavy: torch

    from sate.analysis import locality  # heavy: torch
    from sate.data.dataset import SpeechDataset, TextDataset  # heavy: torch

    # (CMVN kind, statistics file, vocabulary) -> dataset, shared by the speech models normalised and encoded alike
    speech_sets: dict[tuple[str | None, Path | None, int], SpeechDataset] = {}
    rows: list[locality.LayerLocalness] = []
    for am in models:
        if am.task == "mt":
            dataset = TextDataset.from_manifest(args.data / f"{args.split}.jsonl", *text_vocabs[id(am)])
            keep = [i for i in range(len(dataset))[: args.max_utts] if len(dataset.src[i])]
            sizes = [len(dataset.src[i]) for i in keep]
        else:
            kind = (am.cmvn, cmvn_source(am, args.data), id(speech_vocabs[id(am)]))
            if kind not in speech_sets:
                speech_sets[kind] = SpeechDataset.from_data_dir(args.data, args.split, speech_vocabs[id(am)], None,
                                                                normalisers[id(am)])
            dataset = speech_sets[kind]
            keep = list(range(len(dataset))[: args.max_utts])
            sizes = [dataset.lengths[i] for i in keep]
        if not keep:
            raise SateError(f"{args.data / args.split}.jsonl: no utterance to analyse for {am.path}")
        batches = locality.length_sorted_batches(Subset(dataset, keep), sizes, args.batch_size)
        try:
            means = locality.model_localness(am.model, batches, args.window, device)
        except (MemoryError, RuntimeError) as err:
            if am.task == "mt" or not out_of_memory(err):
                raise
            raise SateError(_too_long(args, am, dataset.rows[keep[max(range(len(keep)), key=sizes.__getitem__)]],
                                      max(sizes), device)) from None
        top = max((layer for (encoder, layer) in means if encoder == "acoustic"), default=None)
        ctc = ctc_layer(am, top)
        rows += [locality.LayerLocalness(one_line(am.name), am.task, encoder, layer, value, count,  # a name of bytes
                                         ctc=encoder == "acoustic" and layer == ctc)
                 for (encoder, layer), (value, count) in means.items()]
        depths = ", ".join(f"{e} {max(layer for (k, layer) in means if k == e)} layers"
                           for e in dict.fromkeys(k for k, _ in means))
        print(f"{one_line(am.name)} ({am.task}, {one_line(str(am.path))}): {depths}; {len(keep)} utterances of "
              f"{args.split}")
    caption = (f"Localness of encoder self-attention: split {args.split} of {one_line(str(args.data))}, "
               f"attention mass on keys with |i - j| <= floor({args.window:g}·T / 2), mean over heads, "
               "positions and utterances.")
    table = locality.markdown_table(rows, caption)
    paths = [args.out / f"locality.{ext}" for ext in ("csv", "md", "png")]
    # one set: a kill or a full disk between its files left the new table beside the old plot
    replace_together(dict(zip(paths, (locality.csv_text(rows).encode(), table.encode(),
                                      locality.plot_locality(rows, args.window)), strict=True)))
    print(table, end="")
    print("wrote " + ", ".join(one_line(str(p)) for p in paths))
    return 0


# ----------------------------------------------------------------------------------------------
# sate analyze attention


def find_index(ids: list[str], utt: str, manifest: Path) -> int:
    try:
        return ids.index(utt)
    except ValueError:
        held = split_holding(manifest, utt)
        raise SateError(f"{manifest}: no utterance {utt!r} ({len(ids)} utterances, e.g. {', '.join(ids[:3])})"
                        + (f"; it is in {held}.jsonl: give --split {held}" if held else "")) from None


def split_holding(manifest: Path, utt: str) -> str | None:
    """The other split of the data directory whose manifest has a row of id ``utt``, or None: an id of tst-COMMON
    (where `sate evaluate` decodes) looked up in the default --split dev was told only that dev lacks it (twenty-third
    hostile pass). A row is found as `sate prep` writes it (``"id": ...``), a line at a time; this is advice only."""
    key = f'"id": {json_text(utt)}'.encode("utf-8", "surrogateescape")
    with contextlib.suppress(OSError):
        for split in manifest_splits(manifest.parent):
            other = manifest.parent / f"{split}.jsonl"
            if other != manifest and other.is_file():
                with other.open("rb") as f:
                    if any(key in line for line in f):
                        return split
    return None


def utterance_batch(am: AnalysisModel, data: Path, split: str, utt: str) -> Batch:
    """A one-item batch of a prepared split: features for speech models, source ids for MT."""
    from sate.data.dataset import SpeechDataset, TextDataset, collate  # heavy: torch

    manifest = data / f"{split}.jsonl"
    if am.task == "mt":
        dataset = TextDataset.from_manifest(manifest, *model_vocabularies(am, data))
        index = find_index(dataset.ids, utt, manifest)
        if not len(dataset.src[index]):
            raise SateError(f"{manifest}: utterance {utt!r} has an empty transcript")
        return collate([dataset[index]])
    rows = read_manifest(manifest) if manifest.is_file() else None  # a missing one is named by the dataset
    seconds = float(rows[find_index([row["id"] for row in rows], utt, manifest)]["duration"]) if rows else 0.0
    if seconds > MAX_SEGMENT:  # as an audio FILE is: a 130-s row (a Kaldi recording as a row) took 411 s and 3.2 GB
        raise SateError(f"{manifest}: utterance {utt!r} is {seconds:,.1f} s long; `sate analyze attention` keeps every "
                        f"attention map of an utterance, so it takes {MAX_SEGMENT:g} s at most: give a shorter one, or "
                        "cut its recording with `sate segment` and give one segment as an audio file")
    dataset = SpeechDataset.from_data_dir(data, split, speech_vocabulary(am, data), None, normalizer(am, data))
    return collate([dataset[find_index([row["id"] for row in dataset.rows], utt, manifest)]])


def audio_batch(am: AnalysisModel, audio: Path, data: Path | None) -> Batch:
    """A one-item batch of a whole audio file: fbank as `sate features` computes it, then the CMVN rule."""
    import torch  # heavy: torch


    if am.task == "mt":
        raise SateError(f"{am.path} is an MT model: it reads text; give --data, --split and --utt")
    if audio.exists() and not audio.is_file() and not audio.is_dir():  # `cat talk.wav | ... /dev/stdin`: it was "not
        # an audio file (a segment is read at its offset)", of a split's rows, and no word of what to do (31st pass)
        raise SateError(f"{audio}: a pipe or a device; `sate analyze attention` reads its audio FILE twice (its "
                        "length, then its samples), which a stream cannot give: save the stream to a file "
                        "(... > talk.wav) and give that")
    info = wav_info(audio)
    if info.duration > MAX_SEGMENT:  # every position against every other, per head and layer, all kept for the plot
        raise SateError(f"{audio}: {info.duration:,.1f} s of audio; `sate analyze attention` reads a file whole as one "
                        f"utterance and keeps every attention map of it, so it takes {MAX_SEGMENT:g} s at most (a "
                        "20-minute file asked for gigabytes): cut the recording with `sate segment` and give one "
                        "segment")
    # the checks of the reader `sate translate` reads a file with, run on its first block: an Ogg or FLAC joined from
    # two files with cat was read as its first alone, its map drawn and named by the file, exit 0 (thirty-first pass)
    with contextlib.closing(audio_blocks(audio)) as blocks:
        next(blocks, None)
    feats = compute_fbank(read_segment(audio, 0.0, info.duration, sample_rate=info.sample_rate))
    cmvn = normalizer(am, data)
    feats = torch.from_numpy(cmvn(feats) if cmvn is not None else feats)
    return {"ids": [audio.name], "feats": feats[None], "feats_lengths": torch.tensor([len(feats)])}


def run_attention(args: argparse.Namespace) -> int:
    from sate.analysis import heatmap  # heavy: torch
    from sate.decode.api import pick_device  # heavy: torch

    bad = next((k for k in args.encoder_layers if k < 1), None)
    if bad is not None:
        raise SateError(f"--encoder-layers {bad}: layers are numbered from 1")
    args.encoder_layers = list(dict.fromkeys(args.encoder_layers))  # `1 1` drew and named each map twice
    # every PNG it may write, checked before any work: the per-layer maps beside --out were written unchecked,
    # through whatever stood there (a symlink to a checkpoint, a file that is no PNG)
    for path in heatmap.output_paths(args.out, args.encoder_layers):
        check_output(path, "image")
    # a map linked to --out (or to another map): named with both, before the link is judged on its own
    check_distinct(path for path in heatmap.output_paths(args.out, args.encoder_layers) if not is_stream(path))
    # the maps' names are sate's, not given: a symlink at one to a user's picture was written through (pass 18, 19)
    check_own_files(args.out.parent, [p.name for p in heatmap.output_paths(args.out, args.encoder_layers)[1:]], "--out")
    check_journal_place(real_path(path).parent for path in heatmap.output_paths(args.out, args.encoder_layers)
                        if not is_stream(path))
    if args.audio is not None and args.utt is None and not isinstance(args.split, _DefaultSplit):
        # it was ignored: a user asking for a split's utterance got the audio file's map, without a word (twenty-fourth
        # hostile pass)
        raise SateError(f"--split {one_line(args.split)}: an audio FILE is analysed whole, and --split names the "
                        "split holding --utt: leave --split out, or give --utt ID instead of the FILE")
    if args.data is not None:
        require_directory(args.data, "--data")
    am = load_model(args.model)
    if args.audio is not None:
        if args.utt is not None:
            raise SateError("give an audio FILE or --utt (with --data and --split), not both")
        batch = audio_batch(am, args.audio, args.data)
    else:
        if args.data is None or args.utt is None:
            raise SateError("give an audio FILE, or --data DATA_DIR and --utt ID (and --split)")
        batch = utterance_batch(am, args.data, args.split, args.utt)
    if getattr(am.model, "decoder", None) is None:  # naming the model: the line named no file (twenty-second
        # hostile pass: an ASR model copied as st.pt)
        raise SateError(f"--model {args.model}: a CTC-only ASR model has no decoder, hence no cross-attention to draw")
    view = heatmap.utterance_attention(am.model, am.meta, batch, pick_device(args.device))
    paths = heatmap.write_heatmaps(view, args.out, am.name, args.layer, args.head, args.encoder_layers)
    print(f"{one_line(view.utt)}: source: {view.transcript}")  # the audio's name, escaped as in a message
    print(f"{one_line(view.utt)}: output: {view.translation}")
    print("wrote " + ", ".join(one_line(str(p)) for p in paths))
    return 0


# ----------------------------------------------------------------------------------------------
# CLI


def _choice(value: str) -> int | None:
    from sate.analysis.heatmap import parse_choice  # heavy: torch

    try:
        return parse_choice(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


class _DefaultSplit(str):
    """attention's --split when not given: told apart from a `--split dev` given, which an audio FILE does not read."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="analysis", metavar="ANALYSIS", required=True)

    # an option's default where it has one, as every other command: `--device` read "(default: a GPU if present)
    # (default: None)", and each option without a default "(default: None)" (27th hostile pass)
    fmt = DefaultsShown
    loc = sub.add_parser("locality", formatter_class=fmt, help="per-layer localness of encoder self-attention",
                         description="Per encoder layer, the attention mass in a window of window·T positions "
                                     "centred on each position (the SATE paper's localness), as CSV, markdown and "
                                     "a PNG line plot.")
    loc.add_argument("--model", type=read_name, nargs="+", action="extend", required=True,
                     help="model files or model directories (asr, mt, st), one plot line per model encoder")
    loc.add_argument("--data", type=read_name, required=True, help="prepared data directory (manifests, fbank, vocab)")
    loc.add_argument("--split", default="dev", help="manifest split to analyse")
    loc.add_argument("--max-utts", type=whole_number, default=None, help="analyse only the split's first N utterances")
    loc.add_argument("--window", type=real_number, default=0.1,
                     help="window width as a share r of the length T (the paper's 10%%): keys with "
                          "|i - j| <= floor(r·T / 2) count as local; 0.2 gives a half-width of 10%%")
    loc.add_argument("--batch-size", type=whole_number, default=1,
                     help="utterances encoded together; above 1 faster, with the same values (padding is masked "
                          "exactly, speech too)")
    loc.add_argument("--device", default=None, help="torch device (default: a GPU if present)")
    loc.add_argument("--out", type=dir_name, required=True, help="directory for locality.csv, .md and .png")
    loc.set_defaults(_run=run_locality)

    att = sub.add_parser("attention", formatter_class=fmt, help="cross-attention heatmap of one utterance",
                         description="A PNG heatmap of the decoder's cross-attention for one utterance: greedy "
                                     "output tokens against encoder positions labelled with CTC-aligned tokens.")
    att.add_argument("audio", type=audio_name, nargs="?", default=None, metavar="FILE",
                     help="an audio file analysed as one utterance (instead of --utt)")
    att.add_argument("--model", type=read_name, required=True,
                     help="model file or model directory (st, mt, hybrid asr)")
    att.add_argument("--data", type=read_name, default=None,
                     help="prepared data directory: the utterance's split, and the global CMVN statistics of a "
                          "model file or experiment (a pack reads its own)")
    att.add_argument("--split", default=_DefaultSplit("dev"), help="manifest split holding --utt")
    att.add_argument("--utt", default=None, help="utterance id in the split's manifest")
    att.add_argument("--out", type=file_name, required=True, help="PNG to write")
    att.add_argument("--layer", type=_choice, default="mean", metavar="L|mean",
                     help="decoder layer (1-based), or the mean over layers")
    att.add_argument("--head", type=_choice, default="mean", metavar="H|mean",
                     help="attention head (1-based), or the mean over heads")
    att.add_argument("--encoder-layers", type=whole_number, nargs="+", action="extend", default=[], metavar="L",
                     help="also write the self-attention maps of these layers of every encoder")
    att.add_argument("--device", default=None, help="torch device (default: a GPU if present)")
    att.set_defaults(_run=run_attention)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "split", None) is not None:
        check_split_names([args.split], "--split")
    return args._run(args)
