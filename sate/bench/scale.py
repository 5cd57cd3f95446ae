"""MuST-C scale without MuST-C: what `sate train` costs before and around the GPU on about 230k segments.

A fake prepared data dir is written with MuST-C En-De's size (229,700 train segments) and length
distribution (`mustc_like_durations`): a real manifest and feature index, and a small ark of feature
matrices that the 230k index entries share (lengths rounded to 32 frames, so that every entry still has
its manifest's shape); text of about 2.5 words a second from a made-up lexicon, SentencePiece vocabularies
trained by `sate vocab` on a sample. On it this part measures:

- the dataset index (`SpeechDataset`: manifest, feature index, every text encoded): time and memory kept;
- the sampler's epoch (`BucketBatchSampler.global_batches`): time and memory kept;
- start-up: from starting a `sate train` process (the paper-size SATE of conf/mustc/st.yaml, distillation
  off) to its first training step, and that process's peak memory then;
- loader throughput: frames/s the training DataLoader delivers with `--jobs` workers, against what one GPU
  consumes: the gpu part's SATE frames/s where it ran in the same bench run (`--parts gpu,scale`), else
  ASSUMED_GPU_FRAMES_PER_S, an assumption.

Goals: start-up <= 60 s; index and sampler memory <= 1 GiB.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NotRequired, TypedDict

import numpy as np
import yaml

from sate import layout
from sate.bench.data import mustc_like_durations
from sate.bench.measure import MiB, _rss, peak_memory, release_free_memory, stopwatch
from sate.bench.steps import last_line
from sate.bench.steps import run_sate as sate
from sate.data.manifest import write_manifest
from sate.data.vocab import Vocabulary
from sate.errors import SateError

SEGMENTS = 229_700  # MuST-C En-De v1 train
# fewer train rows are too little text for the fake data's 1,000-token vocabularies (250 were: SentencePiece's
# "Vocabulary size too high", said as "sate vocab failed on the fake data"; 26th hostile pass)
MIN_SEGMENTS = 1000
FRAME_STEP = 32  # feature lengths are rounded to this, so that few matrices serve every entry
WORDS_PER_SECOND = 2.5
ASSUMED_GPU_FRAMES_PER_S = 50_000  # an assumption (a generous one) until `--parts gpu` measures it
GOALS = {"startup_s": 60.0, "index_and_sampler_mib": 1024.0}
STARTUP_LIMIT_S = 900  # the start-up run is stopped after this (15 x the goal)


class FakeData(TypedDict):
    """What `write_fake_data` wrote."""

    segments: int
    hours: float
    distinct_matrices: int
    ark_mib: float
    write_seconds: NotRequired[float]  # added by `run`


class Kept(TypedDict):
    """A structure built once and kept: its build time, the memory it holds and the peak on the way."""

    seconds: float
    kept_mib: int
    peak_rise_mib: int
    batches: NotRequired[int]  # the sampler's epoch


class Startup(TypedDict):
    seconds: float  # from starting `sate train` to its first step
    peak_rss_mib: int
    first_batch_frames: int
    workers: int


class LoaderFigures(TypedDict):
    batches: int
    workers: int
    frames_per_s: int
    batches_per_s: float


class GpuFrames(TypedDict):
    value: int
    source: str


class ScaleGoals(TypedDict):
    startup_s: float
    startup_met: bool
    index_and_sampler_mib: float
    memory_met: bool
    index_and_sampler_kept_mib: int


class ScaleResult(TypedDict):
    """The scale part's figures."""

    data: FakeData
    max_frames: int
    index: Kept
    sampler: Kept
    startup: Startup
    loader: LoaderFigures
    gpu_frames_per_s: GpuFrames
    loader_over_gpu: float
    goals: ScaleGoals
CONF = Path(__file__).resolve().parents[2] / "conf" / "mustc" / "st.yaml"

STARTUP_SCRIPT = """
import json, os, sys, time
from lightning.pytorch.callbacks import Callback
from sate.bench.measure import high_water_mark_mib
from sate.train.trainer import load_training_config, train

class FirstStep(Callback):
    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        json.dump({"peak_rss_mib": high_water_mark_mib(), "frames": int(batch["feats"].numel() // 80)},
                  open(sys.argv[3], "w"))
        os._exit(0)

train(load_training_config(sys.argv[1], []), sys.argv[2], callbacks=[FirstStep()])
"""


def default_max_frames() -> int:
    """batch.per_device of conf/mustc/st.yaml: what one GPU holds in the MuST-C recipe."""
    return int(yaml.safe_load(CONF.read_text())["batch"]["per_device"])


def _lexicon(rng: np.random.Generator, size: int) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return ["".join(rng.choice(letters, int(n))) for n in rng.integers(2, 10, size)]


def write_fake_data(root: Path, segments: int, seed: int = 0) -> FakeData:
    """A prepared data dir of `segments` MuST-C-like train rows (module docstring); returns what it holds."""
    import kaldiio  # slow: kaldiio, only where features are read or written

    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / layout.FBANK_DIR).mkdir(exist_ok=True)
    durations = mustc_like_durations(rng, segments + 200)
    frames = np.maximum(FRAME_STEP, np.round(durations * 100 / FRAME_STEP).astype(int) * FRAME_STEP)
    offsets: dict[int, str] = {}
    ark, scp = root / layout.FBANK_DIR / "shared.ark", root / layout.FBANK_DIR / "shared.scp"
    with kaldiio.WriteHelper(f"ark,scp:{ark},{scp}") as writer:
        for n in sorted(set(frames.tolist())):
            writer(f"len{n}", rng.standard_normal((n, 80)).astype(np.float32))
    for line in scp.read_text().splitlines():
        key, where = line.split(" ", 1)
        offsets[int(key[3:])] = where
    words = _lexicon(rng, 3000)
    weights = 1.0 / np.arange(1, len(words) + 1)
    weights /= weights.sum()
    counts = np.maximum(1, np.round(durations * WORDS_PER_SECOND)).astype(int)
    picks = rng.choice(len(words), int(counts.sum()), p=weights)
    ends = np.cumsum(counts)
    for split, rows in (("train", range(segments)), ("dev", range(segments, segments + 200))):
        manifest, index = [], []
        for i in rows:
            text = " ".join(words[j] for j in picks[ends[i] - counts[i]:ends[i]])
            manifest.append({"id": f"{split}_{i}", "audio": "none.wav", "offset": 0.0,
                             "duration": float(durations[i]), "n_frames": int(frames[i]), "speaker": f"spk{i // 60}",
                             "src": text, "src_norm": text, "tgt": text.capitalize() + "."})
            index.append(f"{split}_{i} {offsets[int(frames[i])]}")
        if split == "train":  # the vocabularies are trained on a sample: their cost is not what is measured
            write_manifest(root / "train.jsonl", manifest[:20000])
            if sate(["vocab", "--data", str(root), "--src-size", "1000", "--tgt-size", "1000"]) != 0:
                raise SateError("sate vocab failed on the fake data")
        write_manifest(root / f"{split}.jsonl", manifest)
        (root / layout.FBANK_DIR / f"{split}.scp").write_text("\n".join(index) + "\n")
    mean, std = np.zeros(80), np.ones(80)
    (root / layout.CMVN).write_text(json.dumps({"split": "train", "frames": int(frames.sum()),
                                                "mean": mean.tolist(), "std": std.tolist()}))
    return FakeData(segments=segments, hours=round(float(durations[:segments].sum()) / 3600, 1),
                    distinct_matrices=len(offsets), ark_mib=round(ark.stat().st_size / MiB, 1))


def _kept(build: Any) -> tuple[Any, float, float, float]:
    """(result, seconds, MiB kept after, peak rise MiB) of `build()`."""
    release_free_memory()
    before = _rss()
    lap = stopwatch()
    with peak_memory() as peak:
        result = build()
        seconds = lap()
    release_free_memory()
    return result, seconds, (_rss() - before) / MiB, peak.rise_mib


def startup(data: Path, work: Path, max_frames: int, workers: int) -> Startup:
    """Seconds from starting `sate train` (paper-size SATE) to its first step, and its peak memory then."""
    config = yaml.safe_load(CONF.read_text())
    config["model"]["loss"]["kd"] = {"asr_weight": 0.0, "mt_weight": 0.0}
    config.update(data={"dir": str(data), "num_workers": workers}, batch={"per_device": max_frames,
                                                                           "global": max_frames})
    path = work / "startup.yaml"
    path.write_text(yaml.safe_dump(config))
    script, out = work / "startup.py", work / "startup.json"
    script.write_text(STARTUP_SCRIPT)
    lap = stopwatch()
    try:
        done = subprocess.run([sys.executable, str(script), str(path), str(work / "exp"), str(out)],
                              capture_output=True, text=True, timeout=STARTUP_LIMIT_S)
    except subprocess.TimeoutExpired:  # was a TimeoutExpired traceback, after the fake data had been written
        raise SateError(f"the start-up run of `sate train` had not reached its first step after {STARTUP_LIMIT_S} s "
                        f"(the goal is {GOALS['startup_s']:g} s) and was stopped; a machine this loaded, or fake data "
                        "this large (--scale-segments), gives no start-up figure: run the part on a quieter machine "
                        "or fewer segments") from None
    seconds = lap()
    if done.returncode != 0 or not out.is_file():
        raise SateError(f"the start-up run failed: {last_line(done.stderr)}")
    figures = json.loads(out.read_text())
    return Startup(seconds=round(seconds, 1), peak_rss_mib=round(figures["peak_rss_mib"]),
                   first_batch_frames=figures["frames"], workers=workers)


def loader_throughput(dataset: Any, sampler: Any, workers: int, batches: int) -> LoaderFigures:
    """Frames/s and batches/s of the training DataLoader over `batches` batches (after the first)."""
    import torch  # heavy: torch
    from torch.utils.data import DataLoader  # heavy: torch

    from sate.data.dataset import collate  # heavy: torch

    loader = DataLoader(dataset, batch_sampler=sampler, collate_fn=collate, num_workers=workers,
                        generator=torch.Generator().manual_seed(0))
    it = iter(loader)
    next(it)  # workers started, first batch in
    frames, lap = 0, stopwatch()
    for _ in range(batches):
        frames += int(next(it)["feats_lengths"].sum())
    seconds = lap()
    return LoaderFigures(batches=batches, workers=workers, frames_per_s=round(frames / seconds),
                         batches_per_s=round(batches / seconds, 2))


def gpu_frames(measured: int | None) -> GpuFrames:
    """What one GPU consumes: the gpu part's frames/s where it ran in this bench run, else the assumption (with
    `--parts gpu,scale` the loader was still put against the assumed 50,000, "the gpu part not yet run")."""
    if measured is None:
        return GpuFrames(value=ASSUMED_GPU_FRAMES_PER_S, source="assumed (the gpu part not yet run)")
    return GpuFrames(value=measured, source="measured by the gpu part in this run (paper-size SATE, bf16, "
                                            "distillation off)")


def run(segments: int, max_frames: int, workers: int, batches: int, gpu: int | None = None) -> ScaleResult:
    """Every figure of the module docstring, on fake data written to a temporary directory; `gpu`: the gpu part's
    frames/s, where it ran before this part."""
    from sate.data.dataset import SpeechDataset  # heavy: torch
    from sate.data.sampler import BucketBatchSampler  # heavy: torch

    with tempfile.TemporaryDirectory(prefix="sate-scale-") as tmp:
        data = Path(tmp) / "data"
        lap = stopwatch()
        written = write_fake_data(data, segments)
        written["write_seconds"] = round(lap(), 1)
        src, tgt = Vocabulary.load(data, "src"), Vocabulary.load(data, "tgt")
        dataset, index_s, index_mib, index_rise = _kept(
            lambda: SpeechDataset.from_data_dir(data, "train", src, tgt, cmvn=data / layout.CMVN))
        sampler = BucketBatchSampler(dataset.lengths, max_frames=max_frames, seed=0)
        epoch, sampler_s, sampler_mib, sampler_rise = _kept(sampler.global_batches)
        loader = loader_throughput(dataset, sampler, workers, min(batches, len(epoch) - 1))
        start = startup(data, Path(tmp), max_frames, workers)
    memory = index_mib + sampler_mib
    consumed = gpu_frames(gpu)
    ratio = round(loader["frames_per_s"] / consumed["value"], 2)
    return ScaleResult(
        data=written, max_frames=max_frames,
        index=Kept(seconds=round(index_s, 1), kept_mib=round(index_mib), peak_rise_mib=round(index_rise)),
        sampler=Kept(seconds=round(sampler_s, 2), kept_mib=round(sampler_mib), peak_rise_mib=round(sampler_rise),
                     batches=len(epoch)),
        startup=start, loader=loader,
        gpu_frames_per_s=consumed,
        loader_over_gpu=ratio,
        goals=ScaleGoals(startup_s=GOALS["startup_s"], startup_met=start["seconds"] <= GOALS["startup_s"],
                         index_and_sampler_mib=GOALS["index_and_sampler_mib"],
                         memory_met=memory <= GOALS["index_and_sampler_mib"],
                         index_and_sampler_kept_mib=round(memory)),
    )


def is_assumed(result: ScaleResult) -> bool:
    """Is the GPU's frames/s the loader is put against the assumption (no gpu part before this one)?"""
    return result["gpu_frames_per_s"]["source"].startswith("assumed")


def table(result: ScaleResult) -> str:
    d, i, s, st, ld, g = (result[k] for k in ("data", "index", "sampler", "startup", "loader", "goals"))
    return "\n".join([
        f"MuST-C scale, fake data: {d['segments']:,} segments ({d['hours']} h of MuST-C-like lengths; "
        f"{d['distinct_matrices']} shared feature matrices, {d['ark_mib']} MiB; written in {d['write_seconds']} s)",
        f"dataset index:   {i['seconds']:7.1f} s, {i['kept_mib']:6d} MiB kept (peak rise {i['peak_rise_mib']} MiB)",
        f"sampler epoch:   {s['seconds']:7.2f} s, {s['kept_mib']:6d} MiB kept (peak rise {s['peak_rise_mib']} MiB), "
        f"{s['batches']:,} batches of <= {result['max_frames']} frames",
        f"start-up:        {st['seconds']:7.1f} s from `sate train` to the first step of paper-size SATE "
        f"({st['workers']} loader workers), peak RSS {st['peak_rss_mib']} MiB",
        f"loader:          {ld['frames_per_s']:,} frames/s ({ld['batches_per_s']} batches/s, {ld['workers']} workers) "
        f"= {result['loader_over_gpu']}x the {result['gpu_frames_per_s']['value']:,} frames/s one GPU "
        + ("is assumed to consume" if is_assumed(result) else "consumes (the gpu part's, this run)"),
        f"goals: start-up <= {g['startup_s']:g} s {'met' if g['startup_met'] else 'NOT met'}; index + sampler "
        f"{g['index_and_sampler_kept_mib']} MiB <= {g['index_and_sampler_mib']:g} MiB "
        f"{'met' if g['memory_met'] else 'NOT met'}",
    ])
