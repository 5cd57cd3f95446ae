"""MT text of WMT size: memory and speed of `sate vocab` and `sate train` on a multi-million-line file pair.

A generated parallel corpus (`--text-lines` pairs, default 5,000,000: WMT16 En-De holds about 4.5M) of
plain text: words of a made-up lexicon drawn with Zipf weights, 3-40 words a sentence (mean about 14), the
second side as long as the first give or take a quarter. On it this part measures, each in a process of
its own whose peak resident memory (``VmHWM``) is read at its end:

- `sate vocab --mt-text` (source and target SentencePiece models of the demo's target size, 1,000 pieces, on
  its bounded sample): seconds and peak RSS;
- `sate train` of the demo's MT model (conf/synth/mt.yaml, 3,000-token batches) on ``data.mt_text``:
  seconds to stream the text into shards (DATA/mt_bin, the cleaning counts), then `--text-steps` updates,
  and the process's peak RSS over both, against the goal of 2 GiB; and the same training on the first
  SMALL_LINES pairs only, with the same vocabularies, so that the difference is what the corpus size adds;
- the training loader alone (the shards through `BucketBatchSampler`, `collate`, no workers): pairs and
  tokens per second, against the target tokens per second the training consumed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TypedDict

import numpy as np
import yaml

from sate import layout
from sate.bench.measure import MiB, _rss, stopwatch
from sate.bench.steps import last_line
from sate.data.manifest import write_manifest
from sate.data.text import normalize_source
from sate.errors import SateError

LINES = 5_000_000
SMALL_LINES = 20_000
# fewer pairs are too little text for the 1,000-piece vocabularies (50 were SentencePiece's "Vocabulary size too
# high", said inside the part as a failure of a `--src-size 1000` nobody gave; 100 are enough, 80 not: review28b)
MIN_LINES = 100
STEPS = 100
VOCAB_SIZE = 1000
GOAL_MIB = 2048.0
CONF = Path(__file__).resolve().parents[2] / "conf" / "synth" / "mt.yaml"

# Runs `sate` (argv[2:]) in this process and writes its peak RSS to argv[1] when it ends.


class TextWritten(TypedDict):
    lines: int
    seconds: float
    mib: int


class CommandCost(TypedDict):
    """A sate command run in a process of its own."""

    seconds: float
    peak_rss_mib: int


class StoreSummary(TypedDict):
    """From the MT text store's index.json (`sate.data.text_shards`)."""

    pairs: int
    kept: int
    dropped: dict[str, int]  # pairs dropped by each cleaning rule
    longest: int


class TrainFigures(TypedDict):
    """`_train`: MT training streaming a text pair."""

    prepare_seconds: float
    train_seconds: float
    train_cpu_seconds: float
    steps: int
    target_tokens_per_s: int
    target_tokens_per_cpu_s: int
    peak_rss_mib_before_training: int
    peak_rss_mib: int
    store: StoreSummary
    shards: int
    store_mib: int


class TextLoader(TypedDict):
    batches: int
    pairs_per_s: int
    target_tokens_per_s: int
    rss_added_mib: int


class TextGoal(TypedDict):
    peak_rss_mib_at_most: float
    peak_rss_mib: int
    met: bool


class TextResult(TypedDict):
    """The text part's figures."""

    text: TextWritten
    vocab: CommandCost
    train: TrainFigures
    train_small: TrainFigures  # the same on the first SMALL_LINES pairs
    loader: TextLoader
    corpus_adds_mib: int
    loader_over_training: float
    goal: TextGoal


CLI_SCRIPT = """
import json, sys
from sate.bench.measure import high_water_mark_mib
from sate.cli import main
rc = main(sys.argv[2:])
json.dump({"rc": rc, "peak_rss_mib": high_water_mark_mib()}, open(sys.argv[1], "w"))
"""

# Trains argv[1] into argv[2] for argv[4] updates; writes the times, tokens and peak RSS to argv[3].
TRAIN_SCRIPT = """
import json, os, sys, time
from lightning.pytorch.callbacks import Callback
from sate.bench.measure import high_water_mark_mib as hwm
from sate.train.trainer import load_training_config, train

class Clock(Callback):
    start = time.perf_counter()
    def on_train_start(self, trainer, pl_module):
        self.ready, self.ready_cpu, self.ready_rss, self.tokens = time.perf_counter(), time.process_time(), hwm(), 0
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.tokens += int(batch["tgt_lengths"].sum())
        if trainer.global_step >= int(sys.argv[4]):
            now = time.perf_counter()
            json.dump({"prepare_s": self.ready - self.start, "train_s": now - self.ready,
                       "train_cpu_s": time.process_time() - self.ready_cpu, "steps": trainer.global_step,
                       "target_tokens": self.tokens, "peak_rss_mib_before_training": self.ready_rss,
                       "peak_rss_mib": hwm()}, open(sys.argv[3], "w"))
            os._exit(0)

train(load_training_config(sys.argv[1], []), sys.argv[2], callbacks=[Clock()])
"""


def write_text_pair(directory: Path, lines: int, seed: int = 0) -> tuple[Path, Path]:
    """`lines` generated sentence pairs in ``corpus.en`` and ``corpus.de`` (module docstring)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    paths = (directory / "corpus.en", directory / "corpus.de")
    lexicons = [np.array(["".join(rng.choice(letters, int(n))) for n in rng.integers(2, 11, 20000)])
                for _ in paths]
    weights = 1.0 / np.arange(1, 20001)
    weights /= weights.sum()
    with open(paths[0], "w", encoding="utf-8") as en, open(paths[1], "w", encoding="utf-8") as de:
        for start in range(0, lines, 100_000):
            n = min(100_000, lines - start)
            lengths = [rng.integers(3, 41, n)]
            lengths.append(np.maximum(1, np.round(lengths[0] * rng.uniform(0.75, 1.25, n))).astype(int))
            for out, lexicon, counts in zip((en, de), lexicons, lengths, strict=True):
                words = lexicon[rng.choice(len(lexicon), int(counts.sum()), p=weights)]
                out.write("".join(" ".join(s).capitalize() + ".\n" for s in np.split(words, np.cumsum(counts)[:-1])))
    return paths


def _sate(work: Path, *argv: str) -> CommandCost:
    script, out = work / "cli.py", work / "cli.json"
    script.write_text(CLI_SCRIPT)
    lap = stopwatch()
    done = subprocess.run([sys.executable, str(script), str(out), *argv], capture_output=True, text=True)
    seconds = lap()
    if done.returncode != 0 or json.loads(out.read_text())["rc"] != 0:
        raise SateError(f"sate {argv[0]} failed: {last_line(done.stderr)}")
    return CommandCost(seconds=round(seconds, 1), peak_rss_mib=round(json.loads(out.read_text())["peak_rss_mib"]))


def _train(data: Path, work: Path, files: tuple[Path, Path], steps: int) -> TrainFigures:
    """`steps` updates of the demo MT on `files` in a process of its own (in `work`), with its peak RSS."""
    work.mkdir()
    config = yaml.safe_load(CONF.read_text())
    config["data"].update(dir=str(data), mt_text=[[str(files[0]), str(files[1])]])
    config["trainer"].update(max_steps=steps + 1, max_minutes=None)
    path, script, out = work / "mt.yaml", work / "train.py", work / "train.json"
    path.write_text(yaml.safe_dump(config))
    script.write_text(TRAIN_SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(path), str(work / "exp"), str(out), str(steps)],
                          capture_output=True, text=True)
    if not out.is_file():
        raise SateError(f"the MT training failed: {last_line(done.stderr)}")
    figures = json.loads(out.read_text())
    store = max((data / layout.MT_STORE_DIR).iterdir(), key=lambda p: p.stat().st_mtime)
    index = json.loads((store / "index.json").read_text())
    return TrainFigures(prepare_seconds=round(figures["prepare_s"], 1), train_seconds=round(figures["train_s"], 1),
                        train_cpu_seconds=round(figures["train_cpu_s"], 1), steps=figures["steps"],
                        target_tokens_per_s=round(figures["target_tokens"] / figures["train_s"]),
                        target_tokens_per_cpu_s=round(figures["target_tokens"] / figures["train_cpu_s"]),
                        peak_rss_mib_before_training=round(figures["peak_rss_mib_before_training"]),
                        peak_rss_mib=round(figures["peak_rss_mib"]),
                        store=StoreSummary(pairs=index["pairs"], kept=index["kept"], dropped=index["dropped"],
                                           longest=index["longest"]),
                        shards=len(index["shards"]),
                        store_mib=round(sum(p.stat().st_size for p in store.iterdir()) / MiB))


def loader_throughput(store_dir: Path, max_tokens: int, batches: int) -> TextLoader:
    """Pairs and tokens per second of the MT training loader over the store, and the RSS it adds."""
    from torch.utils.data import DataLoader  # heavy: torch

    from sate.data.dataset import collate  # heavy: torch
    from sate.data.sampler import BucketBatchSampler  # heavy: torch
    from sate.data.text_shards import ShardedText  # heavy: torch

    before = _rss()
    store = ShardedText(store_dir)
    sampler = BucketBatchSampler(store, max_tokens=max_tokens, seed=0)
    loader = iter(DataLoader(store, batch_sampler=sampler, collate_fn=collate))
    pairs = tokens = 0
    lap = stopwatch()
    for _ in range(min(batches, len(sampler))):
        batch = next(loader)
        pairs += len(batch["ids"])
        tokens += int(batch["tgt_lengths"].sum())
    seconds = lap()
    return TextLoader(batches=min(batches, len(sampler)), pairs_per_s=round(pairs / seconds),
                      target_tokens_per_s=round(tokens / seconds), rss_added_mib=round((_rss() - before) / MiB))


def run(lines: int, steps: int) -> TextResult:
    """Every figure of the module docstring, on generated text in a temporary directory."""
    with tempfile.TemporaryDirectory(prefix="sate-text-") as tmp:
        work, data = Path(tmp), Path(tmp) / "data"
        data.mkdir()
        lap = stopwatch()
        files = write_text_pair(work, lines)
        written = TextWritten(lines=lines, seconds=round(lap(), 1),
                              mib=round(sum(p.stat().st_size for p in files) / MiB))
        with open(files[0], encoding="utf-8") as en, open(files[1], encoding="utf-8") as de:
            rows = [{"id": f"dev_{k}", "audio": "none.wav", "offset": 0.0, "duration": 1.0, "n_frames": 98,
                     "speaker": "none", "src": a.strip(), "src_norm": normalize_source(a),
                     "tgt": b.strip()} for k, (a, b) in zip(range(200), zip(en, de, strict=False), strict=False)]
        write_manifest(data / "train.jsonl", rows)
        write_manifest(data / "dev.jsonl", rows)
        vocab = _sate(work, "vocab", "--data", str(data), "--src-size", str(VOCAB_SIZE), "--tgt-size",
                      str(VOCAB_SIZE), "--mt-text", str(files[0]), str(files[1]))
        small_files = _head(files, work / "small", min(SMALL_LINES, lines))
        small = _train(data, work / "train_small", small_files, steps)
        training = _train(data, work / "train", files, steps)
        store = max((data / layout.MT_STORE_DIR).iterdir(), key=lambda p: p.stat().st_mtime)
        loader = loader_throughput(store, int(yaml.safe_load(CONF.read_text())["batch"]["per_device"]), 2000)
    peak = max(vocab["peak_rss_mib"], training["peak_rss_mib"])
    return TextResult(text=written, vocab=vocab, train=training, train_small=small, loader=loader,
                      corpus_adds_mib=training["peak_rss_mib"] - small["peak_rss_mib"],
                      loader_over_training=round(loader["target_tokens_per_s"] / training["target_tokens_per_s"], 1),
                      goal=TextGoal(peak_rss_mib_at_most=GOAL_MIB, peak_rss_mib=peak, met=peak <= GOAL_MIB))


def _head(files: tuple[Path, Path], directory: Path, lines: int) -> tuple[Path, Path]:
    """The first `lines` pairs of `files`, as files of their own in `directory`."""
    directory.mkdir()
    out = (directory / files[0].name, directory / files[1].name)
    for source, target in zip(files, out, strict=True):
        with open(source, encoding="utf-8") as f, open(target, "w", encoding="utf-8") as g:
            g.writelines(line for _, line in zip(range(lines), f, strict=False))
    return out


def table(result: TextResult) -> str:
    t, v, tr, sm, ld, g = (result[k] for k in ("text", "vocab", "train", "train_small", "loader", "goal"))
    s = tr["store"]
    return "\n".join([
        f"generated text: {t['lines']:,} pairs, {t['mib']:,} MiB (written in {t['seconds']} s)",
        f"sate vocab:     {v['seconds']:7.1f} s, peak RSS {v['peak_rss_mib']:,} MiB "
        f"({VOCAB_SIZE} + {VOCAB_SIZE} pieces from a sample)",
        f"sate train:     streaming into {tr['shards']} shards {tr['prepare_seconds']} s ({s['pairs']:,} pairs, "
        f"{s['kept']:,} kept; dropped {s['dropped']}; store {tr['store_mib']:,} MiB); peak RSS "
        f"{tr['peak_rss_mib_before_training']:,} MiB before training",
        f"                {tr['steps']} updates in {tr['train_seconds']} s, {tr['train_cpu_seconds']} CPU s "
        f"({tr['target_tokens_per_s']:,} target tokens/s consumed, {tr['target_tokens_per_cpu_s']:,} per CPU s); "
        f"peak RSS {tr['peak_rss_mib']:,} MiB",
        f"                the same on the first {sm['store']['pairs']:,} pairs: {sm['train_cpu_seconds']} CPU s, "
        f"peak RSS {sm['peak_rss_mib']:,} MiB; the corpus size adds {result['corpus_adds_mib']:,} MiB",
        f"loader alone:   {ld['pairs_per_s']:,} pairs/s, {ld['target_tokens_per_s']:,} target tokens/s "
        f"({ld['batches']} batches; RSS +{ld['rss_added_mib']} MiB) = {result['loader_over_training']}x what "
        "training consumes",
        f"goal: peak RSS <= {g['peak_rss_mib_at_most']:g} MiB: {g['peak_rss_mib']:,} MiB "
        f"{'met' if g['met'] else 'NOT met'}",
    ])
