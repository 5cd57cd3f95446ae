"""Fixtures shared by the whole suite: a small real corpus made by `sate synth`, an Augmented LibriSpeech corpus,
a LibriSpeech subset and a Kaldi data directory voiced the same way (`libri_trans_root`, `librispeech_subset`,
`kaldi_corpus`), and tiny hub model directories.

The hub fixtures build tiny random models from transformers' config classes and ``save_pretrained`` them, as
a user's download would look (no hub is reachable here); each skips its tests where transformers is absent.
Their tokenisers are SentencePiece models trained on the fixture corpus's sentences.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf
import torch

from sate.data.text import normalize_source
from sate.synth import corpus as synth
from sate.synth.voices import Voice, speak, training_pool

# Per split, how many Ding sentence pairs the shared corpus voices (about 20 in all).
FIXTURE_SIZES = {"train": 12, "dev": 5, "tst-COMMON": 5}

# One torch thread for the whole session. The models here are tiny: a second thread only adds OpenMP's
# synchronisation to every small op (on a busy machine it made the capture tests ten times slower). Importing
# silero_vad, or the first in-process `sate features`, switches the process to one thread anyway, so without this
# a test's speed depended on whether it ran before or after those.
torch.set_num_threads(1)
# Under pytest-xdist (./run.sh test runs two workers) the other worker keeps a core busy: a subprocess that the
# test starts (`sate`, a recipe, DDP ranks) left at torch's default of a thread per core would wait on that core
# at every small op (BENCHMARKS.md, "Threads on a shared machine"). One thread, unless OMP_NUM_THREADS says else.
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.setdefault("OMP_NUM_THREADS", "1")


# ------------------------------------------------------------------------ a disk that fills up


def _full_disk(patch: pytest.MonkeyPatch, after: int = 0) -> None:
    """fsync, which every atomic write calls before its rename, fails as on a full disk (once `after` writes went
    through)."""
    real, done = os.fsync, []

    def fsync(fd: int) -> None:
        if len(done) >= after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        done.append(fd)
        real(fd)

    patch.setattr("sate.files.os.fsync", fsync)


@pytest.fixture
def full_disk() -> Callable[..., None]:
    """full_disk(patch, after=0): through `patch` (the test's monkeypatch, or a `monkeypatch.context()` to end it
    within the test), sate's writes find the disk full once `after` of them went through."""
    return _full_disk


@pytest.fixture
def decoded_frames(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """[frames]: the audio frames libsndfile decodes from now on (every `SoundFile.read`), counted in its one item;
    how a reader of a file that cannot seek shows it decodes each frame about once."""
    counted = [0]
    read = sf.SoundFile.read

    def counting(self: sf.SoundFile, *args: Any, **kwargs: Any) -> np.ndarray:
        block = read(self, *args, **kwargs)
        counted[0] += len(block)
        return block

    monkeypatch.setattr(sf.SoundFile, "read", counting)
    return counted


# ------------------------------------------------------------------------ the longest test modules first

TIMES = "sate/test-seconds"  # pytest's cache (.pytest_cache): each test's seconds in the last run that ran it


def _last_times(config: pytest.Config) -> dict[str, float]:
    """The cached times; an xdist worker gets the controller's copy, so that every worker sorts alike."""
    if hasattr(config, "workerinput"):
        return config.workerinput.get(TIMES, {})
    cache = getattr(config, "cache", None)  # absent under -p no:cacheprovider
    seconds = cache.get(TIMES, None) if cache is not None else None
    return seconds if isinstance(seconds, dict) else {}


# Where no run has left its times (CI's clean clone, `-p no:cacheprovider`): the longest modules, in seconds of an
# idle core (a whole run's --durations under load, 2026-12-06, scaled back), so that they start first. xdist's own
# order (most tests first) handed out tests/recipes/test_recipe_corpora.py, two recipe runs of two minutes, 98th of
# 109 modules, and tests/recipes/test_recipe.py 54th: a worker could end on them alone while the other idled. The
# recipe and docs modules' figures are those times scaled by what the pre-forked `sate` left of them (0.43-0.59,
# BENCHMARKS.md "Test suite time").
KNOWN_SECONDS = {"tests/recipes/test_recipe.py": 125, "tests/test_docs.py": 90,
                 "tests/recipes/test_recipe_corpora.py": 55, "tests/bench/test_bench.py": 70,
                 "tests/train/test_trainer.py": 75, "tests/decode/test_simultaneous.py": 70,
                 "tests/bench/test_scale_gpu.py": 40, "tests/recipes/test_recipe_hub.py": 22,
                 "tests/data/test_text_shards.py": 30, "tests/test_os_errors.py": 34, "tests/hostile/test_kills.py": 32,
                 "tests/recipes/test_recipe_options.py": 30}


def pytest_configure(config: pytest.Config) -> None:
    """xdist hands out modules in the order `pytest_collection_modifyitems` gives (longest first, by the last run's
    times or else KNOWN_SECONDS) instead of its own (most tests first), so no worker ends on a long module alone."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:  # node: xdist's WorkerController
    node.workerinput[TIMES] = _last_times(node.config)


# The fixtures that train a model: a test that asks for one trains (or waits for) it, so it is slow by the marker's
# definition wherever it is written (tryfirst: `-m "not slow"` deselects after this hook has marked).
TRAINING_FIXTURES = frozenset({"trained_st_file", "trained_mt_file"})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests that need a trained model are marked slow. Then the modules in order of their tests' summed seconds
    in the last run, or of KNOWN_SECONDS without one, longest first (a module's tests keep their order); the
    modules never timed after them, those of most tests first (xdist's own order)."""
    for item in items:
        if TRAINING_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    seconds = _last_times(config)
    per_module: dict[str, float] = {}
    tests: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        tests[module] = tests.get(module, 0) + 1
        if seconds:
            per_module[module] = per_module.get(module, 0.0) + float(seconds.get(item.nodeid, 0.0))
        else:
            per_module[module] = float(KNOWN_SECONDS.get(module, 0.0))
    items.sort(key=lambda item: (-per_module[item.nodeid.split("::")[0]], -tests[item.nodeid.split("::")[0]]))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _seconds_run[report.nodeid] = _seconds_run.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller (or a run without xdist) adds this run's times to the cache."""
    cache = getattr(session.config, "cache", None)
    if cache is None or hasattr(session.config, "workerinput") or not _seconds_run:
        return
    seconds = cache.get(TIMES, None)
    seconds = seconds if isinstance(seconds, dict) else {}
    cache.set(TIMES, {**seconds, **{k: round(v, 3) for k, v in _seconds_run.items()}})


_seconds_run: dict[str, float] = {}


# ------------------------------------------------------------------------------ `sate` as the tests start it

_slow_test = False  # whether the test being set up is marked slow (`sate_path` serves those from the zygote)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    global _slow_test
    _slow_test = item.get_closest_marker("slow") is not None


@pytest.fixture(scope="session")
def sate_path() -> Iterator[Callable[[dict[str, str]], dict[str, str]]]:
    """sate_path(env) -> env with a `sate` first on its PATH: the venv's, or for a slow test the pre-forked one of
    tests/recipes/zygote.py (the same command, without its seconds of imports; one server per worker and start
    environment). A fast test never starts it: its 8 s of imports pay back over a recipe's tens of commands, not
    over a fast test's one or two."""
    from tests.recipes.zygote import Zygote, start_key  # only where a recipe or docs test runs `sate`

    servers: dict[str, Zygote] = {}
    venv = Path(sys.executable).parent

    def on_path(env: dict[str, str]) -> dict[str, str]:
        env = {**env, "PATH": f"{venv}:{env['PATH']}"}
        if not _slow_test:
            return env
        key = json.dumps(start_key(env))
        if key not in servers:
            servers[key] = Zygote(env)
        return {**env, "PATH": servers[key].path(env["PATH"])}

    yield on_path
    for server in servers.values():
        server.stop()


# ------------------------------------------------------------------------------ built once for all the workers

def _built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """The directory `name`, filled by `build(directory)` once per run. Under pytest-xdist the workers share it
    (the first to ask builds it while the others wait for it), so a fixture that trains or voices costs one
    worker's time instead of each worker's; its builder must give the same files on any worker."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        out = factory.mktemp(name)
        build(out)
        return out
    root = factory.getbasetemp().parent  # the run's directory, above each worker's own
    out, done = root / name, root / f"{name}.done"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(out, ignore_errors=True)  # what a worker that failed half-way left
            out.mkdir()
            build(out)
            done.touch()
    return out


@pytest.fixture(scope="session")
def built_once() -> Callable[[pytest.TempPathFactory, str, Callable[[Path], None]], Path]:
    """built_once(tmp_path_factory, name, build) -> a directory built once per run, shared by the xdist workers."""
    return _built_once


@pytest.fixture(scope="session")
def fixture_sizes() -> dict[str, int]:
    return dict(FIXTURE_SIZES)


# ------------------------------------------------------------------------------------- fixtures that train

def _fixture_seed() -> int:
    value = os.environ.get("SATE_TEST_SEED", "0")
    if not value.isdigit():
        raise pytest.UsageError(f"SATE_TEST_SEED must be a non-negative integer, got {value!r}")
    return int(value)


@pytest.fixture(scope="session")
def fixture_seed() -> int:
    """The seed of the fixtures that train (SATE_TEST_SEED, default 0). Another seed is the nearest thing to
    another machine that one machine has: docs/development.md runs the suite under several."""
    return _fixture_seed()


@contextlib.contextmanager
def _seeded() -> Iterator[None]:
    """Seed torch with SATE_TEST_SEED, train on one thread with deterministic algorithms; restored afterwards.

    One thread makes the result independent of OMP_NUM_THREADS and of the machine's core count; it cannot make
    it independent of the CPU's instruction set (BLAS kernels round differently), which is why tests on trained
    fixtures assert properties that any training gives, never a score the seed happened to reach."""
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.manual_seed(_fixture_seed())
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


@pytest.fixture(scope="session")
def seeded() -> Callable[[], contextlib.AbstractContextManager[None]]:
    """seeded() -> a context for training a fixture model: SATE_TEST_SEED, one thread, deterministic algorithms."""
    return _seeded


@pytest.fixture(scope="session")
def ding_pairs(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, str]]:
    """Every sentence pair of the Ding dictionary (fetched once into the cache; parsed once per run, 0.8 s)."""
    def build(out: Path) -> None:
        pairs = synth.read_ding_pairs(synth.fetch_ding(synth.default_cache_dir()))
        (out / "pairs.json").write_text(json.dumps(pairs, ensure_ascii=False), encoding="utf-8")

    path = _built_once(tmp_path_factory, "ding", build) / "pairs.json"
    return [(en, de) for en, de in json.loads(path.read_text(encoding="utf-8"))]


@pytest.fixture(scope="session")
def fixture_pairs(ding_pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The first Ding pairs of each split, as many as FIXTURE_SIZES says."""
    chosen: list[tuple[str, str]] = []
    left = dict(FIXTURE_SIZES)
    for en, de in ding_pairs:
        split = synth.split_of(en)
        if left[split] > 0:
            chosen.append((en, de))
            left[split] -= 1
        if not any(left.values()):
            return chosen
    raise AssertionError(f"the dictionary is too small for the fixture: {left} missing")


@pytest.fixture(scope="session")
def synth_corpus(tmp_path_factory: pytest.TempPathFactory, fixture_pairs: list[tuple[str, str]]) -> Path:
    """A MuST-C layout corpus of about 20 voiced sentences; returns the root holding `en-de/`."""
    def build(out: Path) -> None:
        synth.build_corpus(out, fixture_pairs, train_size=FIXTURE_SIZES["train"], seed=0, jobs=2, progress=False)

    return _built_once(tmp_path_factory, "synth", build)


@pytest.fixture(scope="session")
def prepared_data(tmp_path_factory: pytest.TempPathFactory, synth_corpus: Path) -> Path:
    """The fixture corpus through `sate prep`, `sate features` and `sate vocab` (tiny vocabularies)."""
    from sate.cli import main

    def build(data: Path) -> None:
        for argv in (["prep", "--mustc-root", str(synth_corpus), "--out", str(data)],
                     ["features", "--data", str(data), "--jobs", "1"],
                     ["vocab", "--data", str(data), "--src-size", "48", "--tgt-size", "64"]):
            assert main(argv) == 0, argv

    return _built_once(tmp_path_factory, "data", build)


# ------------------------------------------------------------------------------------ more corpora, voiced offline

# Training voices of the small LibriSpeech, Kaldi and Augmented LibriSpeech corpora (never a reserved one).
CORPUS_VOICES = (Voice("espeak", "en-us+m3"), Voice("espeak", "en-gb+f2"), Voice("flite", "slt"),
                 Voice("espeak", "en-029+m1"))
# Sets of the Augmented LibriSpeech fixture and their segments.
LIBRI_TRANS_SIZES = {"train": 3, "other": 2, "dev": 2, "test": 2}


@pytest.fixture(scope="session")
def voice(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, int], np.ndarray]:
    """voice(text, k) -> float32 16 kHz audio of `text` spoken by CORPUS_VOICES[k % 4] (each voiced once)."""
    pool = {v.key for v in training_pool()}
    assert all(v.key in pool for v in CORPUS_VOICES), "the fixture voices must be training voices"
    workdir = tmp_path_factory.mktemp("voice")
    cache: dict[tuple[str, int], np.ndarray] = {}

    def speak_one(text: str, k: int) -> np.ndarray:
        key = (text, k % len(CORPUS_VOICES))
        if key not in cache:
            cache[key] = speak(text, CORPUS_VOICES[key[1]], 1.0, 0.5, workdir)
        return cache[key]

    return speak_one


@pytest.fixture(scope="session")
def extra_pairs(ding_pairs: list[tuple[str, str]], fixture_pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """30 short Ding pairs (4-8 words) the MuST-C fixture does not voice, for the other corpora. The first holds a
    letter the fixture's train English lacks, so a vocabulary test can tell whether it saw the extra text."""
    from sate.data.text import normalize_source

    train_letters = set("".join(normalize_source(en) for en, _ in fixture_pairs if synth.split_of(en) == "train"))
    used = set(fixture_pairs)
    short = [(en, de) for en, de in ding_pairs if (en, de) not in used and 4 <= len(en.split()) <= 8]
    first = next(pair for pair in short if set(normalize_source(pair[0])) - train_letters)
    return [first] + [pair for pair in short if pair != first][:29]


def write_libri_trans(root: Path, pairs: list[tuple[str, str]], voice: Callable[[str, int], np.ndarray]) -> Path:
    """An Augmented LibriSpeech En-Fr corpus as shipped, in small: ``root/{train,other,dev,test}/`` with
    ``audiofiles/<book>-<chapter>-<n>.wav``, ``alignments.meta`` (a header, then one tab-separated line per segment,
    the file name in column 5 and the duration in column 6) and ``<set>.en``, ``<set>.fr``,
    ``<set>_gtranslate.fr``. No English-French text is available offline: German stands in for French (the Ding
    translation as ``.fr``, the same lowercased without its final punctuation as the machine translation
    ``_gtranslate.fr``). The first file of ``other/`` is FLAC under its .wav name, as some of the real ones are.
    Returns ``root``."""
    k = 0
    for name, size in LIBRI_TRANS_SIZES.items():
        directory = root / name
        (directory / "audiofiles").mkdir(parents=True)
        meta = ["book_id\tchapter_id\tsentence\tscore\taudio_filename\tduration\ttranscript"]
        texts: dict[str, list[str]] = {f"{name}.en": [], f"{name}.fr": [], f"{name}_gtranslate.fr": []}
        for i in range(size):
            en, de = pairs[k]
            file_name = f"{100 + k % 2}-{2000 + i // 2}-{k:04d}"
            audio = voice(en, k)
            flac = name == "other" and i == 0
            sf.write(directory / "audiofiles" / f"{file_name}.wav", audio, 16000, format="FLAC" if flac else "WAV",
                     subtype="PCM_16")
            meta.append("\t".join([str(100 + k % 2), str(2000 + i // 2), str(i), "0.9", file_name,
                                   f"{len(audio) / 16000:.2f}", en]))
            for key, line in zip(texts, (en, de, de.lower().rstrip(".!?")), strict=True):
                texts[key].append(line)
            k += 1
        (directory / "alignments.meta").write_text("\n".join(meta) + "\n", encoding="utf-8")
        for file_name, lines in texts.items():
            (directory / file_name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def libri_trans_root(tmp_path_factory: pytest.TempPathFactory, extra_pairs: list[tuple[str, str]],
                     voice: Callable[[str, int], np.ndarray]) -> Path:
    """`write_libri_trans` on the last extra pairs (read-only: copy it to edit). Its ROOT holds train/ (3 segments),
    other/ (2), dev/ (2) and test/ (2)."""
    return write_libri_trans(tmp_path_factory.mktemp("libri_trans"), extra_pairs[-sum(LIBRI_TRANS_SIZES.values()):],
                             voice)


@pytest.fixture(scope="session")
def sacrebleu_cli() -> Callable[..., str]:
    """sacrebleu_cli(ref, hyp, *extra) -> what the sacrebleu command prints for BLEU, chrF and TER."""
    tool = str(Path(sys.executable).parent / "sacrebleu")

    def run(ref: Path, hyp: Path, *extra: str) -> str:
        return subprocess.run([tool, str(ref), "-i", str(hyp), "-m", "bleu", "chrf", "ter", *extra],
                              check=True, capture_output=True, text=True).stdout

    return run


@pytest.fixture(autouse=True)
def _close_progress_bars() -> Iterator[None]:
    """Close the progress bars a test's training left open (a run stopped by an error), while its output is
    still captured: left open, tqdm redraws them when the interpreter exits, after pytest's summary line."""
    yield
    from tqdm import tqdm

    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()


_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@pytest.fixture(autouse=True)
def _signals_as_found() -> Iterator[None]:
    """Fail a test that leaves a signal's handler changed, and put it back: an ignored SIGINT is inherited by every
    process started after it (a recipe run by a later test could not be stopped by Ctrl-C; it once happened in a
    CI worker, by Lightning's interrupted fit: sate.errors.handlers_kept)."""
    before = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    yield
    changed = [sig.name for sig, handler in before.items() if signal.getsignal(sig) is not handler]
    for sig, handler in before.items():
        signal.signal(sig, handler)
    if changed:
        pytest.fail(f"the test left the handler of {', '.join(changed)} changed")


# Lightning's launcher sets these in its own process too (MASTER_ADDR, MASTER_PORT, NODE_RANK, LOCAL_RANK,
# WORLD_SIZE) when a run starts other processes: a test training in-process with several leaves them to the tests
# after it, and a later two-process test's own launch was refused as "LOCAL_RANK='0' is set" (CI of 6c1525e).
_LAUNCH_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "LOCAL_RANK", "WORLD_SIZE", "RANK", "GROUP_RANK")


@pytest.fixture(autouse=True)
def _launch_variables_as_found() -> Iterator[None]:
    """Put back the launch variables a test's in-process training set or changed."""
    before = {name: os.environ.get(name) for name in _LAUNCH_VARIABLES}
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


# ------------------------------------------------------------------------------------------------ hub models

MARIAN_SIZES = {"d_model": 16, "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 2,
                "decoder_attention_heads": 2, "encoder_ffn_dim": 32, "decoder_ffn_dim": 32,
                "max_position_embeddings": 512}


def _spm(sentences: list[str], size: int) -> bytes:
    """A unigram model with SentencePiece's default specials (<unk> 0, <s> 1, </s> 2), as Marian's are."""
    import io

    import sentencepiece as spm

    out = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(sentences), model_writer=out, vocab_size=size,
                                   model_type="unigram", character_coverage=1.0, hard_vocab_limit=False,
                                   minloglevel=2)
    return out.getvalue()


def _randomise(model: object, seed: int) -> None:
    """Weights far from transformers' std-0.02 start, so that outputs are peaked (no near-ties) and every
    mistake in a mapping shows; LayerNorms stay near the identity, padding embeddings zero."""
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            parts = name.split(".")
            if len(parts) > 1 and "norm" in parts[-2]:
                p.copy_((1.0 if name.endswith("weight") else 0.0) + 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))


@pytest.fixture(scope="session")
def marian_sentences(fixture_pairs: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    """English and German sentences the tiny Marian tokenisers are trained on: the fixture corpus's and a few
    with punctuation and digits."""
    extra = [("Hello, world! Is this the 2nd test?", "Hallo, Welt! Ist das der 2. Test?"),
             ("I'll call you back at 2:15 p.m.", "Ich rufe Sie um 14:15 Uhr zurück.")]
    pairs = list(fixture_pairs) + extra
    return [en for en, _ in pairs], [de for _, de in pairs]


@pytest.fixture(scope="session")
def marian_dir(tmp_path_factory: pytest.TempPathFactory, marian_sentences: tuple[list[str], list[str]]) -> Path:
    """A tiny random OPUS-MT-like model as transformers saves it: config.json, model.safetensors (one copy of the
    tied embedding, no positions), source.spm, target.spm and the joint vocab.json; pad is the last id, eos 0."""
    import sentencepiece as spm
    import torch

    transformers = pytest.importorskip("transformers")
    out = tmp_path_factory.mktemp("marian")
    en, de = marian_sentences
    pieces = {"</s>": 0, "<unk>": 1}
    for name, text in (("source.spm", en), ("target.spm", de)):
        model = _spm(text, 120)
        (out / name).write_bytes(model)
        sp = spm.SentencePieceProcessor(model_proto=model)
        for i in range(sp.get_piece_size()):
            if not (sp.is_control(i) or sp.is_unknown(i)):
                pieces.setdefault(sp.id_to_piece(i), len(pieces))
    pieces["<pad>"] = len(pieces)
    (out / "vocab.json").write_text(json.dumps(pieces, ensure_ascii=False), encoding="utf-8")
    size = len(pieces)
    config = transformers.MarianConfig(vocab_size=size, pad_token_id=size - 1, eos_token_id=0,
                                       decoder_start_token_id=size - 1, activation_function="swish",
                                       scale_embedding=True, dropout=0.0, **MARIAN_SIZES)
    torch.manual_seed(0)
    model = transformers.MarianMTModel(config).eval()
    _randomise(model, 0)
    with torch.no_grad():
        model.model.shared.weight[size - 1].zero_()  # as opus-mt's pad row
        model.final_logits_bias.copy_(torch.randn(model.final_logits_bias.shape))
    model.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def marian_bin_dir(tmp_path_factory: pytest.TempPathFactory, marian_dir: Path) -> Path:
    """The same model in the older format opus-mt-en-de's main branch has: pytorch_model.bin holding every tied
    copy of the embedding and the position tables."""
    import shutil

    import torch
    import transformers

    out = tmp_path_factory.mktemp("marian_bin")
    for path in marian_dir.iterdir():
        if path.name != "model.safetensors":
            shutil.copy(path, out / path.name)
    model = transformers.MarianMTModel.from_pretrained(marian_dir)
    torch.save(model.state_dict(), out / "pytorch_model.bin")
    return out


# (our acoustic type, feat_extract_norm) -> the transformers classes of a tiny speech model
SPEECH_KINDS = {("hf_wav2vec2", "group"): ("Wav2Vec2Config", "Wav2Vec2Model"),
                ("hf_wav2vec2", "layer"): ("Wav2Vec2Config", "Wav2Vec2Model"),
                ("hf_hubert", "group"): ("HubertConfig", "HubertModel"),
                ("hf_wavlm", "group"): ("WavLMConfig", "WavLMModel")}


@pytest.fixture(scope="session")
def speech_hub_dir(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str, str], Path]:
    """speech_hub_dir(kind, norm) -> a tiny random wav2vec2 / HuBERT / WavLM directory as save_pretrained writes
    it (config.json, model.safetensors, preprocessor_config.json). Group-norm models normalise their input
    (do_normalize), the layer-norm one does not; the layer-norm one is also pre-LN (do_stable_layer_norm). The
    convolutions have the real models' kernels and strides (50 frames a second), with 16 channels."""
    import torch

    transformers = pytest.importorskip("transformers")
    made: dict[tuple[str, str], Path] = {}

    def make(kind: str, norm: str) -> Path:
        if (kind, norm) not in made:
            config_name, model_name = SPEECH_KINDS[(kind, norm)]
            out = tmp_path_factory.mktemp(f"{kind}_{norm}")
            config = getattr(transformers, config_name)(
                hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                conv_dim=(16,) * 7, conv_kernel=(10, 3, 3, 3, 3, 2, 2), conv_stride=(5, 2, 2, 2, 2, 2, 2),
                conv_bias=norm == "layer",
                num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, feat_extract_norm=norm,
                do_stable_layer_norm=norm == "layer", hidden_dropout=0.0, attention_dropout=0.0,
                activation_dropout=0.0, feat_proj_dropout=0.0, layerdrop=0.0, vocab_size=12)
            torch.manual_seed(0)
            model = getattr(transformers, model_name)(config).eval()
            _randomise(model, 1)
            model.save_pretrained(out)
            transformers.Wav2Vec2FeatureExtractor(do_normalize=norm == "group").save_pretrained(out)
            made[(kind, norm)] = out
        return made[(kind, norm)]

    return make


@dataclass(frozen=True)
class Voiced:
    """What a fixture voiced for one utterance: prep's rows are checked against it."""

    id: str
    speaker: str
    text: str  # the transcript as the corpus writes it
    offset: float
    samples: int  # at 16 kHz


LIBRISPEECH_READERS = (("19", ("198", "227")), ("250", ("142276", "142286")))  # reader -> two chapters


def write_librispeech(subset: Path, pairs: list[tuple[str, str]], voice) -> list[Voiced]:  # noqa: ANN001
    """A LibriSpeech subset in small: 2 readers x 2 chapters x 2 utterances, ``<reader>/<chapter>/`` holding
    ``<reader>-<chapter>-<n>.flac`` and ``<reader>-<chapter>.trans.txt`` with LibriSpeech's uppercase transcripts
    (no punctuation but apostrophes). Each reader has one voice. Returns the utterances in file order."""
    voiced = []
    k = 0
    for r, (reader, chapters) in enumerate(LIBRISPEECH_READERS):
        for chapter in chapters:
            directory = subset / reader / chapter
            directory.mkdir(parents=True)
            lines = []
            for n in range(2):
                utt = f"{reader}-{chapter}-{n:04d}"
                text = normalize_source(pairs[k][0]).upper()
                audio = voice(pairs[k][0], r)
                sf.write(directory / f"{utt}.flac", audio, 16000, subtype="PCM_16")
                lines.append(f"{utt} {text}")
                voiced.append(Voiced(utt, reader, text, 0.0, len(audio)))
                k += 1
            (directory / f"{reader}-{chapter}.trans.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return voiced


def _padded(audio: np.ndarray, seconds: float) -> np.ndarray:
    """`audio` followed by silence up to a whole number of 10 ms, then `seconds` more."""
    n = -(-len(audio) // 160) * 160 + round(seconds * 16000)
    return np.concatenate([audio, np.zeros(n - len(audio), dtype=np.float32)])


def write_kaldi_dir(directory: Path, audio_dir: Path, pairs: list[tuple[str, str]], voice) -> list[Voiced]:  # noqa: ANN001
    """A Kaldi data directory over two recordings of three sentences each: ``wav.scp`` (absolute paths),
    ``segments`` (seconds; the last segment of recB ends at -1), ``text`` (the English as written), ``utt2spk``.
    recA is 16 kHz mono and ends with 0.5 s of noise that ``segments`` lists without a line in ``text``; recB is
    8 kHz stereo (right = half the left). Returns the transcribed utterances in text order."""
    from scipy.signal import resample_poly

    directory.mkdir(parents=True)
    audio_dir.mkdir(parents=True)
    voiced, scp, segments, text, utt2spk = [], [], [], [], []
    for r, rec in enumerate(("recA", "recB")):
        speaker = f"spk{r}"
        pieces, pos = [np.zeros(3200, dtype=np.float32)], 0.2
        for n in range(3):
            en = pairs[3 * r + n][0]
            audio = _padded(voice(en, 2 + r), 0.3)
            utt = f"{speaker}-{rec}-{n}"
            length = len(audio) / 16000 - 0.3
            end = "-1" if (r, n) == (1, 2) else f"{pos + length:.2f}"
            segments.append(f"{utt} {rec} {pos:.2f} {end}")
            text.append(f"{utt} {en}")
            utt2spk.append(f"{utt} {speaker}")
            voiced.append(Voiced(utt, speaker, en, round(pos, 2), round(length * 16000) if end != "-1" else -1))
            pieces.append(audio)
            pos += len(audio) / 16000
        if r == 0:
            pieces.append((0.1 * np.random.default_rng(0).standard_normal(8000)).astype(np.float32))
            segments.append(f"{speaker}-{rec}-noise {rec} {pos:.2f} {pos + 0.5:.2f}")
        wave = np.concatenate(pieces)
        path = audio_dir / f"{rec}.wav"
        if r == 0:
            sf.write(path, wave, 16000, subtype="PCM_16")
        else:
            wave = resample_poly(wave, 1, 2).astype(np.float32)
            sf.write(path, np.stack([wave, 0.5 * wave], axis=1), 8000, subtype="PCM_16")
            last = voiced[-1]  # to the end of the file: what remains of it at 16 kHz
            samples = round((len(wave) / 8000 - last.offset) * 16000)
            voiced[-1] = Voiced(last.id, last.speaker, last.text, last.offset, samples)
        scp.append(f"{rec} {path}")
    for name, lines in (("wav.scp", scp), ("segments", segments), ("text", text), ("utt2spk", utt2spk)):
        (directory / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return voiced


@pytest.fixture(scope="session")
def librispeech_subset(tmp_path_factory, extra_pairs, voice) -> tuple[Path, list[Voiced]]:
    """(a LibriSpeech subset named train-clean-5, its utterances): extra pairs 0-7, read-only."""
    subset = tmp_path_factory.mktemp("LibriSpeech") / "train-clean-5"
    return subset, write_librispeech(subset, extra_pairs, voice)


@pytest.fixture(scope="session")
def kaldi_corpus(tmp_path_factory, extra_pairs, voice) -> tuple[Path, list[Voiced]]:
    """(a Kaldi data directory named kaldi_train, its transcribed utterances): extra pairs 8-13, read-only."""
    root = tmp_path_factory.mktemp("kaldi")
    return root / "kaldi_train", write_kaldi_dir(root / "kaldi_train", root / "audio", extra_pairs[8:14], voice)


@pytest.fixture(scope="session")
def whisper_hub_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Whisper as `save_pretrained` writes it (config.json, model.safetensors): d_model 32, two
    encoder layers of 2 heads, a decoder (which sate does not read)."""
    return _tiny_whisper(tmp_path_factory.mktemp("whisper"), 2, decoder_layers=1, pad_token_id=0, bos_token_id=1,
                         eos_token_id=2, decoder_start_token_id=1)


def _tiny_whisper(out: Path, seed: int, decoder_layers: int, **token_ids: int) -> Path:
    """A tiny random Whisper saved by `save_pretrained` into ``out``: d_model 32, 2 encoder layers of 2 heads,
    ``decoder_layers`` of 2 heads, 60 tokens, 32 decoder positions; weights `_randomise`d with ``seed``."""
    transformers = pytest.importorskip("transformers")
    config = transformers.WhisperConfig(
        vocab_size=60, max_target_positions=32, d_model=32, encoder_layers=2, decoder_layers=decoder_layers,
        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
        num_mel_bins=80, **token_ids)
    torch.manual_seed(0)
    model = transformers.WhisperForConditionalGeneration(config).eval()
    _randomise(model, seed)
    model.save_pretrained(out)
    return out


# A tiny Whisper vocabulary: 56 byte-level BPE tokens (Ġ is a space; "Ã©" the two bytes of é), then the specials.
WHISPER_TOKENS = ["Ġthe", "Ġcat", "Ġsat", "Ġon", "Ġmat", "Ġcaf", "Ã©", ".", ",", "Ġ",
                  *(chr(c) for c in range(ord("a"), ord("z") + 1)), *(chr(c) for c in range(ord("A"), ord("T") + 1))]
WHISPER_SPECIALS = ["<|endoftext|>", "<|startoftranscript|>", "<|notimestamps|>", "<|en|>"]  # ids 56-59


@pytest.fixture(scope="session")
def whisper_asr_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random English-only Whisper with its vocabulary, as a Hugging Face directory (`save_pretrained`,
    tokenizer.json, generation_config.json with suppressed tokens): d_model 32, 2 + 2 layers of 2 heads, 60 tokens,
    32 decoder positions. Decoding it reads every part of the decoder."""
    end, start = (56 + WHISPER_SPECIALS.index(s) for s in ("<|endoftext|>", "<|startoftranscript|>"))
    out = _tiny_whisper(tmp_path_factory.mktemp("whisper_asr"), 3, decoder_layers=2, pad_token_id=end,
                        bos_token_id=end, eos_token_id=end, decoder_start_token_id=start)
    added = [{"id": 56 + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, s in enumerate(WHISPER_SPECIALS)]
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    (out / "tokenizer.json").write_text(json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": byte_level, "post_processor": None, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "vocab": {t: i for i, t in enumerate(WHISPER_TOKENS)}, "merges": []}}), encoding="utf-8")
    generation = json.loads((out / "generation_config.json").read_text())
    generation.update(suppress_tokens=[59, 3], begin_suppress_tokens=[end, 9])  # <|en|>, "Ġon"; at first: end, "Ġ"
    (out / "generation_config.json").write_text(json.dumps(generation))
    return out


