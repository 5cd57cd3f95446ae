"""Build an English->German speech translation corpus offline, in MuST-C v1 layout.

Text (--text): `phrasebook` (default), a generated corpus of everyday spoken phrases (travel, weather,
shopping, directions, appointments, restaurant, hotel, health, small talk; see docs/phrasebook.md), a
limited domain a CPU can learn in minutes; or `ding`, the example sentences of the Ding German-English
dictionary (open domain, fetched with apt-get at run time). Speech: each English sentence voiced by
espeak-ng or flite with a random rate and pitch. Consecutive sentences of one voice form a "talk" wav,
segmented by a MuST-C style yaml, so every later stage runs on this corpus exactly as on the real MuST-C.
The phrasebook corpus also writes tst-heldout: the tst-COMMON sentences voiced only by voices that
train, dev and tst-COMMON never use.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from sate import layout
from sate.data.parallel_text import pair_language
from sate.errors import SateError, one_line, shell_word
from sate.files import held_out_dir, not_a_file
from sate.numbers import check_jobs, whole_number
from sate.synth.corpus import (
    DEFAULT_TRAIN_SIZE,
    HELDOUT_SPLIT,
    TEXTS,
    build_corpus,
    build_phrasebook_corpus,
    check_heldout_voices,
    check_phrasebook_sizes,
    corpus_out,
    phrasebook_styles,
    unfilled,
)
from sate.synth.ding import (
    DING_PACKAGE,
    DING_PATH_IN_PACKAGE,
    cached_ding,
    default_cache_dir,
    fetch_ding,
    read_ding_pairs,
)
from sate.synth.splits import split_pairs
from sate.synth.voices import (
    check_engines,
    heldout_names,
    missing_voices,
    voice_pool,
)
from sate.targets import dir_name, read_name


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from sate.synth import phrasebook  # slow: it builds its template tables on import; `sate --help` needs none

    parser.add_argument("--out", type=dir_name, metavar="DIR", required=True,
                        help="output root; the corpus goes to DIR/en-de/")
    parser.add_argument("--text", choices=TEXTS, default="phrasebook",
                        help="the sentences: 'phrasebook', generated everyday phrases in nine topics (a limited "
                             "domain a CPU demo learns in minutes; see docs/phrasebook.md), or 'ding', the Ding "
                             "dictionary's open-domain example sentences")
    parser.add_argument("--tgt-lang", default="de", choices=["de"],
                        help="target language (both texts are English-German, so only de)")
    parser.add_argument("--train-size", type=whole_number, metavar="N", default=DEFAULT_TRAIN_SIZE,
                        help="number of train sentences to voice; all train text still goes to the MT corpus "
                             "(DIR/en-de/mt/train.*), and dev and tst-COMMON are always voiced whole")
    heldout = ", ".join(heldout_names())
    parser.add_argument("--text-size", type=whole_number, metavar="N", default=None,
                        help=f"phrasebook only: number of generated train text pairs, the MT corpus; at least "
                             f"--train-size (phrasebook default: {phrasebook.DEFAULT_TEXT_SIZE})")
    parser.add_argument("--dev-size", type=whole_number, metavar="N", default=None,
                        help=f"phrasebook only: number of dev sentences, all voiced (phrasebook default: "
                             f"{phrasebook.DEFAULT_DEV_SIZE})")
    parser.add_argument("--test-size", type=whole_number, metavar="N", default=None,
                        help=f"phrasebook only: number of tst-COMMON sentences, all voiced, and voiced again as "
                             f"tst-heldout by the voices held out of the other splits ({heldout}) (phrasebook "
                             f"default: {phrasebook.DEFAULT_TEST_SIZE})")
    parser.add_argument("--seed", type=whole_number, default=0,
                        help="seed for the sentences (phrasebook), sentence choice, voices, rate and pitch "
                             "(default: %(default)s)")
    parser.add_argument("--jobs", type=whole_number, metavar="N", default=os.cpu_count(),
                        help="parallel voicing processes")
    parser.add_argument("--ding", type=read_name, metavar="PATH", default=None,
                        help=f"--text ding only: the unpacked Ding file ({DING_PATH_IN_PACKAGE}); default: fetched "
                             f"with `apt-get download {DING_PACKAGE}` into $SATE_CACHE (~/.cache/sate)")


def _check_args(args: argparse.Namespace) -> None:
    """Every bad option raises a SateError naming it; the phrasebook sizes get their defaults here."""
    from sate.synth import phrasebook  # slow: it builds its template tables on import; `sate --help` needs none

    # never a data directory or an experiment, which OUT/en-de/ would go into; written where a symlink leads (a broken
    # one was "File exists" once the text was drawn, where sate prep --out writes through it)
    args.out = corpus_out(args.out, args.tgt_lang, "--out")
    if args.train_size < 0:
        raise SateError(f"--train-size must be >= 0, got {args.train_size}")
    if args.jobs is not None:
        check_jobs(args.jobs)
    sizes = {"--text-size": "text_size", "--dev-size": "dev_size", "--test-size": "test_size"}
    if args.text == "ding":
        given = [option for option, name in sizes.items() if getattr(args, name) is not None]
        if given:
            raise SateError(f"{', '.join(given)}: only for --text phrasebook (the Ding dictionary fixes its sizes; "
                            "--train-size chooses how many train sentences are voiced)")
        if args.ding is not None:
            not_a_file(args.ding, "the Ding dictionary file")  # a directory was "no such file"
            if not args.ding.is_file():
                raise SateError(f"--ding {args.ding}: no such file")
        return
    if args.ding is not None:
        raise SateError("--ding is only read with --text ding")
    defaults = {"text_size": phrasebook.DEFAULT_TEXT_SIZE, "dev_size": phrasebook.DEFAULT_DEV_SIZE,
                "test_size": phrasebook.DEFAULT_TEST_SIZE}
    for name in sizes.values():
        if getattr(args, name) is None:
            setattr(args, name, defaults[name])
    check_phrasebook_sizes(args.text_size, args.train_size, args.dev_size, args.test_size, options=True)


def other_pairs(out: Path, tgt_lang: str) -> list[str]:
    """The MuST-C pairs (``en-XX/data/``) in ``out`` that `sate synth` did not voice: `sate synth --out` a MuST-C
    root holding a downloaded en-fr put its voiced en-de beside it, exit 0, without a word (24th hostile pass): a
    synthetic pair inside a real corpus's root, read by `sate prep --mustc-root ROOT` by default. Said, not refused:
    one folder of corpora may be meant."""
    try:
        names = sorted(os.listdir(out))
    except OSError:
        return []
    return [name for name in names if pair_language(name) not in (None, tgt_lang)
            and (out / name / "data").is_dir() and not (out / name / layout.SYNTH_MARK).is_file()]


def check_voices(text: str) -> None:
    """Refuse, before any work, a held-out voice the installed engines lack (tst-heldout would be voiced by a
    training voice, without a word), and say which other voices they lack and voice in another. Only the held-out
    accents and flite voices hold tst-heldout out: a variant espeak-ng lacks (espeak-ng 1.50, Ubuntu 22.04's, lacks
    `adam` and five more) is voiced as its accent's base voice, still the held-out accent, so it is only said."""
    pools = {"ding": voice_pool()} if text == "ding" else {s: list(st.voices) for s, st in phrasebook_styles().items()}
    voices = [v for pool in pools.values() for v in pool]
    check_engines(voices)
    if HELDOUT_SPLIT in pools:
        check_heldout_voices()
    others = missing_voices(voices)
    if others:
        print(f"note: the installed engines lack {', '.join(others)}: espeak-ng voices a variant it lacks as its "
              "accent's base voice and an accent it lacks in its default voice, flite a voice it lacks in kal, so the "
              "corpus has fewer voices than docs/synth.md lists; espeak-ng 1.51 or later has them all",
              file=sys.stderr)


def command_line(args: argparse.Namespace) -> str:
    """The `sate synth` command of ``args`` (checked), with every option that decides the corpus and absolute paths:
    what `sate prep` of the corpus, left unfinished, says to run again (review29y)."""
    words = ["sate", "synth", "--out", shell_word(str(args.out)), "--text", args.text]
    if args.ding is not None:
        words += ["--ding", shell_word(os.path.abspath(args.ding))]
    words += ["--train-size", str(args.train_size)]
    if args.text == "phrasebook":
        words += ["--text-size", str(args.text_size), "--dev-size", str(args.dev_size), "--test-size",
                  str(args.test_size)]
    return " ".join(words + ["--seed", str(args.seed)])


def run(args: argparse.Namespace) -> int:
    _check_args(args)
    command = command_line(args)
    check_voices(args.text)
    if args.text == "ding":
        ding = args.ding or fetch_ding(default_cache_dir())
        pairs = read_ding_pairs(ding)
        empty = unfilled(split_pairs(pairs))
        # sate's own download, damaged (emptied, cut short, replaced): "is it the Ding file?" asked the user about a
        # file they never named (26th hostile pass)
        fetched = args.ding is None and ding == cached_ding(default_cache_dir())
        advice = (f"; it is the copy `sate synth` fetched: remove it and run again to fetch it anew, or pass --ding "
                  f"PATH/{DING_PATH_IN_PACKAGE}") if fetched else ""
        if not pairs:  # any other file was voiced as a corpus of no sentences, exit 0
            raise SateError(f"{ding}: no example sentence pairs ('German :: English' lines with sentences)"
                            + (advice or f": is it the Ding file ({DING_PATH_IN_PACKAGE})?"))
        if empty:
            raise SateError(f"{ding}: {len(pairs)} example sentence pairs, too few to fill {' and '.join(empty)} "
                            "(about 4% of the sentences go to each of dev and tst-COMMON)" + advice)
        print(f"read {len(pairs)} sentence pairs from {one_line(str(ding))}")
        with held_out_dir(args.out, "sate synth"):  # as below
            summary = build_corpus(args.out, pairs, args.train_size, args.seed, args.tgt_lang, args.jobs,
                                   option="--out", command=command)
    else:
        # held for the run: two runs into one --out at once (other seeds) both ended 0, the one's wavs beside the
        # other's yaml and texts (27th hostile pass); the second is now refused, naming the folder
        with held_out_dir(args.out, "sate synth"):
            summary = build_phrasebook_corpus(args.out, args.text_size, args.train_size, args.dev_size,
                                              args.test_size, args.seed, args.jobs, option="--out",
                                              command=command)
        print(f"phrasebook: {summary['english_word_types']} English word types; voices held out of train, dev "
              f"and tst-COMMON (tst-heldout uses only these): {', '.join(summary['heldout_voices'])}")
    print(f"corpus in {one_line(summary['root'])} (MT text: {summary['mt_train_pairs']} train pairs)")
    others = other_pairs(args.out, args.tgt_lang)
    if others:
        print(f"note: {one_line(str(args.out))} holds {', '.join(others)}, which `sate synth` did not voice (a "
              f"corpus of yours?): its en-{args.tgt_lang}, voiced, now stands beside them as one root's pairs; "
              f"`sate prep --mustc-root {one_line(str(args.out))}` reads en-{args.tgt_lang} when not given "
              "--tgt-lang", file=sys.stderr)
    for split, s in summary["splits"].items():
        print(f"  {split:<11} {s['segments']:>6} segments  {s['talks']:>4} talks  {s['hours']:>7.3f} h"
              f"  ({s['text_pairs']} text pairs)"
              + (f"; {s['dropped_talks']} talk{'s' if s['dropped_talks'] > 1 else ''} of an earlier plan removed"
                 if s.get("dropped_talks") else ""))
    for split in summary.get("dropped_splits", []):
        print(f"  {split:<11} removed: a split of an earlier run that this one does not voice")
    for split in summary.get("kept_splits", []):
        print(f"note: {one_line(str(Path(summary['root']) / 'data' / split))} is a split of an earlier run that this "
              "one does not voice, left whole (nothing of it removed) as it is a symbolic link or holds files "
              "`sate synth` did not write (or a wav changed since), and `sate prep --mustc-root` reads it as a split "
              "of this corpus: remove it (a link: the link alone), or move your files out and run again",
              file=sys.stderr)
    return 0
