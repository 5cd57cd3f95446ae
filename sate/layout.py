"""The names of the files sate writes and reads, in one place: a data directory, an experiment, a pack.

A data directory (`sate prep`, `sate features`, `sate vocab`) holds ``SPLIT.jsonl`` manifests, ``fbank/``,
``cmvn.json``, the SentencePiece models ``spm_{src,tgt}.model`` with their token lists ``tokens_{src,tgt}.txt``,
and ``vocab.json`` (which vocabulary the last `sate vocab` wrote). An experiment (`sate train`) holds
``config.yaml``, ``checkpoints/`` (``last.ckpt`` among them), ``train_time.json`` and, after `sate average`,
``model.pt``. A pack (`sate pack`) holds ``sate.yaml``, ``model.pt``, the vocabulary files and ``cmvn.json``.
"""

from __future__ import annotations

from pathlib import Path

from sate.errors import one_line

# A data directory
DEFAULT_SPLITS = ("train", "dev", "tst-COMMON")  # the splits `sate prep` writes, in pipeline order
OPTIONAL_SPLITS = ("tst-HE", "tst-heldout")  # added to the default splits when present (tst-heldout: sate synth)
FBANK_DIR = "fbank"
CMVN = "cmvn.json"
VOCAB_META = "vocab.json"
REPLACING = ".sate-replacing"  # a set of files being renamed into place lists them here (sate.files.replace_together)
FEATURES_LOCK = "features.lock"  # held while `sate features` runs
VOCAB_LOCK = "vocab.lock"  # held while `sate vocab` runs
FROZEN_DIR = "frozen"  # Whisper encoder states computed once (sate.train.frozen_cache)
MT_STORE_DIR = "mt_bin"  # data.mt_text as token-id shards (sate.data.text_shards)
# Folders of a data directory that the commands computing them alone write: a text output in one would replace
# an index, a record or an ark.
STORED_DIRS = (FBANK_DIR, FROZEN_DIR, MT_STORE_DIR)

# An experiment directory
CONFIG = "config.yaml"
CHECKPOINTS = "checkpoints"
LAST_CHECKPOINT = "last.ckpt"
TRAIN_TIME = "train_time.json"
METRICS_LOG = "metrics.csv"  # each run's metric rows, EXP/logs/version_N/ (Lightning's CSV logger)
TRAIN_LOCK = "train.lock"  # held while `sate train` runs
MODEL = "model.pt"  # `sate average`'s output, and a pack's model file
MODEL_FORMAT = "sate-model"  # the "format" a model file declares (sate.models.model_file)

# A corpus `sate synth` voices (OUT/en-de/)
SYNTH_SUMMARY = "synth.json"  # written when the corpus is done
SYNTH_MARK = ".sate-synth"  # written first: the files beside it are `sate synth`'s to replace

# What `sate evaluate` writes into its --out directory beside hyp.txt and ref.txt: the scores, and how they were made
RESULTS = "results.json"
RESULTS_MAX_BYTES = 1 << 20  # a results.json `sate evaluate` writes is about 1 KB; a larger one is read by no command
# Everything `sate evaluate` writes there: results.json describes the files beside it, so only evaluate replaces them
EVALUATE_OUTPUTS = ("hyp.txt", "ref.txt", "transcript.txt", "transcript_ref.txt", "delays.jsonl", RESULTS)

# A downloaded model directory (Hugging Face's, or a CTranslate2 Whisper's), which sate reads and never writes: its
# config.json beside the weights, one file or shards listed by an index (safetensors first, preferred when both exist)
HUB_WEIGHT_FILES = {"model.safetensors": "model.safetensors.index.json",
                    "pytorch_model.bin": "pytorch_model.bin.index.json"}
CT2_MODEL = "model.bin"  # CTranslate2's weights (faster-whisper)

# A packed model directory
PACK_YAML = "sate.yaml"
MARIAN_DIR = "marian"  # a Marian vocabulary's files, in a pack (and a data directory: `sate vocab --marian`)
MARIAN_CTC_TOKENS = "ctc_tokens.txt"  # beside them, the CTC token list `sate vocab --marian` writes


def spm_model(side: str) -> str:
    """A data directory's SentencePiece model of `side` (src or tgt)."""
    return f"spm_{side}.model"


def token_list(side: str) -> str:
    """A data directory's ESPnet-order token list of `side` (src or tgt)."""
    return f"tokens_{side}.txt"


def token_source(directory: Path, side: str, kind: str) -> Path:
    """What a data or pack directory's token list of `side` is read from, for a vocabulary of `kind` (spm or
    marian): a Marian vocabulary's folder, else the token list."""
    return directory / (MARIAN_DIR if kind == "marian" else token_list(side))


def average_advice(checkpoint: Path) -> str:
    """How a model file is made of a training checkpoint, naming its experiment where the checkpoint lies in one."""
    folder = checkpoint.parent
    exp = one_line(str(folder.parent)) if folder.name == CHECKPOINTS else "EXP"
    return f"write a model file of the experiment's checkpoints with `sate average --exp {exp} --last N` (or --best N)"
