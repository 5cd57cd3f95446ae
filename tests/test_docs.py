"""Every shell block of the docs either runs here on tiny data or says why not, so a command that drifts fails.

The documents: README.md, BENCHMARKS.md, docs/*.md and recipes/*/README.md. A shell block is a fence of
```bash, ```sh or ```console (of a console block, the lines after a `$ ` prompt). Each block is one of:

- **marked**: the last non-blank line before its fence is `<!-- not run here: REASON -->` with a reason (a GPU,
  MuST-C, half an hour, a synopsis whose brackets are optional parts). It is not run, but its commands are still
  checked: every `sate COMMAND`, `python -m sate.bench`, `recipes/NAME/run.sh` and `./run.sh` it names must
  exist, with every `--option` it gives.
- **fast**: it runs only `sate config`, `sate score` or `--help` and names no experiment: run in a fresh
  directory holding `conf/` (the repository's configs), `recipes/`, `hyp.txt` and `ref.txt`.
- **slow** (everything else): run in a copy of one workspace made once per session, where the README's block
  "train on your own corpus" has already run on the fixture corpus (tests/conftest.py: about 20 Ding sentences
  voiced by espeak-ng and flite) and left what its commands write: `$DATA` (manifests, features,
  vocabularies), `exp/{asr,mt,st}/model.pt` and `packs/{asr,mt,st}`. The same tiny models also stand where the
  demo leaves its own (`exp/synth/{whisper,demo}/<asr|mt|st>/{model.pt,pack}`, `data/synth`), and `talk.wav` is a
  tst-COMMON talk of the fixture corpus.

Substitutions, the same for every block run (so that the doc reads as a user types it):
- the variables `CORPUS` (a MuST-C layout root: the fixture corpus) and `DATA` (`data/corpus`) are set by the
  test; a block's own line `CORPUS=...` or `DATA=...` is left out;
- in the slow workspace every `conf/<recipe>/<name>.yaml` of the repository is a tiny model of the same task
  (tiny_config: one epoch of one batch), so `sate train` takes seconds;
- SentencePiece sizes (`--src-size N`, `--tgt-size N`, `--joint N`) become the fixture's 48, 64 and 80: 12
  sentences hold no more pieces;
- `sate pack` stores greedy decoding of short outputs (`--decode beam=1,max_len_ratio=0.2`): a model of a few
  updates runs every hypothesis to the maximum length, which on the CPU takes seconds per utterance.
Each block runs under `bash -e -o pipefail` with the venv's `sate` first on the PATH; it passes when it exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
import yaml

from sate.cli import COMMANDS, build_parser
from sate.models.tiny import tiny_config

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "recipes").glob("*/README.md"))]
FENCE = re.compile(r"^\s*```(bash|sh|console)\s*$")
MARKER = re.compile(r"^\s*<!--\s*not run here:(.*?)-->\s*$")
FAST_COMMANDS = {"config", "score"}
VOCAB_SIZES = {"--src-size": "48", "--tgt-size": "64", "--joint": "80"}
TEST_VARIABLES = ("CORPUS", "DATA")
# The README block that the slow workspace runs first: its outputs are every other slow block's inputs.
BASE_BLOCK_SIGN = r"sate prep\s+--mustc-root"


@dataclass(frozen=True)
class Block:
    """One shell block: where it is, its text, and the reason given in its marker (None: unmarked)."""

    doc: str  # relative to the repository
    line: int  # the fence's line, 1-based
    lang: str
    text: str
    reason: str | None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def script(self) -> str:
        """The commands as bash runs them."""
        if self.lang != "console":
            return self.text
        return "\n".join(line.strip()[2:] for line in self.text.splitlines() if line.strip().startswith("$ "))

    @property
    def fast(self) -> bool:
        """Runs in seconds without a trained model: only `sate config`, `sate score` and `--help`."""
        if re.search(r"\bexp/|\bpacks/|\$DATA", self.script):
            return False
        commands = commands_of(self.script)
        return bool(commands) and all(c[0] == "sate" and c[1] in FAST_COMMANDS or "--help" in c[2]
                                      for c in commands)


def read_blocks(path: Path) -> list[Block]:
    """The shell blocks of one document, each with the reason of the marker right before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if fence is None:
            if lines[i].lstrip().startswith("```"):  # another language's block: skip past its end
                i = next(j for j in range(i + 1, len(lines)) if lines[j].lstrip().startswith("```"))
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].lstrip().startswith("```")), None)
        assert end is not None, f"{path.relative_to(ROOT)}:{i + 1}: the block never closes"
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.match(before)
        blocks.append(Block(str(path.relative_to(ROOT)), i + 1, fence.group(1), "\n".join(lines[i + 1:end]),
                            marker.group(1).strip() if marker else None))
        i = end + 1
    return blocks


BLOCKS = [block for doc in DOCS for block in read_blocks(doc)]
RUN = [block for block in BLOCKS if block.reason is None]


def commands_of(script: str) -> list[tuple[str, str, list[str]]]:
    """(program, sub-command, options) of every `sate`, `python -m sate.bench` and recipe command in `script`.

    program is `sate`, `sate.bench` or a recipe's run.sh path; options are the `--name` tokens (brackets of a
    synopsis and `=value` stripped)."""
    found = []
    for logical in script.replace("\\\n", " ").splitlines():
        try:
            tokens = shlex.split(logical, comments=True)
        except ValueError:  # an unbalanced quote in a synopsis: read it word by word
            tokens = logical.split("#")[0].split()
        for k, token in enumerate(tokens):
            rest = tokens[k + 1:]
            stop = next((n for n, t in enumerate(rest) if t in {"|", "||", "&&", ";"}), len(rest))
            rest = rest[:stop]
            options = [t.lstrip("[").split("=")[0].rstrip("]") for t in rest if t.lstrip("[").startswith("--")]
            if (token == "sate" or token.endswith("which sate)")) and rest and rest[0] in COMMANDS:
                found.append(("sate", rest[0], options))
            elif token == "sate" and rest and rest[0].startswith("-"):
                found.append(("sate", "", options))
            elif token == "-m" and rest and rest[0] == "sate.bench":
                found.append(("sate.bench", "", options))
            elif re.fullmatch(r"(\./)?(recipes/\w+/)?run\.sh", token) and (k == 0 or tokens[k - 1] in {"&&", ";"}):
                if token.lstrip("./") == "run.sh" and rest[:1] == ["test"]:
                    continue  # `./run.sh test ARGS`: the arguments are pytest's
                found.append((token.lstrip("./") if "recipes/" in token else "recipes/synth/run.sh", "", options))
    return found


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option of `parser` and of the sub-commands below it (`sate analyze locality`, ...)."""
    found = {"--help"}
    for action in parser._actions:
        found.update(s for s in action.option_strings if s.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _option_strings(sub)
    return found


@cache
def known_options(program: str, command: str) -> frozenset[str]:
    """The options that `program command` accepts, read from its parser or its recipe's variables."""
    if program == "sate":
        parser = build_parser(command or None)
        if command:
            sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
            parser = sub.choices[command]
        return frozenset(_option_strings(parser))
    if program == "sate.bench":
        from sate.bench.cli import parse_args

        text = io.StringIO()
        with contextlib.redirect_stdout(text), pytest.raises(SystemExit):
            parse_args(["--help"])
        return frozenset(re.findall(r"--[a-z][a-z0-9-]*", text.getvalue()))
    script = (ROOT / program).read_text() + (ROOT / "recipes" / "lib" / "stages.sh").read_text()
    names = re.findall(r"^\s*([a-z_][a-z0-9_]*)=", script, flags=re.M)
    return frozenset({"--help", "--force"} | {"--" + name.replace("_", "-") for name in names})


# ------------------------------------------------------------------------------------------------ fast checks

def test_the_docs_have_shell_blocks() -> None:
    assert len(BLOCKS) >= 30 and {b.doc for b in BLOCKS} >= {"README.md", "BENCHMARKS.md", "docs/inference.md"}


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.reason is not None], ids=lambda b: b.id)
def test_a_marked_block_says_why(block: Block) -> None:
    assert len(block.reason) >= 10, f"{block.id}: the marker gives no reason: write what it needs (a GPU, MuST-C, ...)"


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: str(d.relative_to(ROOT)))
def test_every_marker_stands_right_before_a_shell_block(doc: Path) -> None:
    lines = doc.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines):
        if "not run here" in line:
            assert MARKER.match(line), f"{doc.name}:{n + 1}: write the marker as <!-- not run here: REASON -->"
            after = next((x for x in lines[n + 1:] if x.strip()), "")
            assert FENCE.match(after), f"{doc.name}:{n + 1}: the marker is not followed by a bash/sh/console block"


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_every_command_and_option_a_block_names_exists(block: Block) -> None:
    for program, command, options in commands_of(block.script):
        unknown = sorted(set(options) - known_options(program, command))
        assert not unknown, f"{block.id}: {program} {command} has no option {', '.join(unknown)}"


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lowercase, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@cache
def _anchors(path: Path) -> frozenset[str]:
    found, in_block = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        in_block ^= line.lstrip().startswith("```")
        if not in_block and re.match(r"#+ ", line):
            found.add(_slug(line.lstrip("#")))
    return frozenset(found)


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: str(d.relative_to(ROOT)))
def test_every_link_between_the_docs_resolves(doc: Path) -> None:
    """Figures live in one place and are linked from the others: a moved section must not leave a dead link."""
    for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text(encoding="utf-8")):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        assert file.exists(), f"{doc.relative_to(ROOT)}: the link {target} names no file"
        if anchor and file.suffix == ".md":
            assert anchor in _anchors(file), f"{doc.relative_to(ROOT)}: the link {target} names no heading"


def test_commands_are_found_in_blocks() -> None:
    """The checker itself: it reads commands of every form the docs use."""
    script = ('sate prep --mustc-root "$CORPUS" --out $DATA [--splits A B] \\\n  --tgt-lang de  # x --no\n'
              'torchrun --nnodes 2 "$(which sate)" train --config c --exp e\n'
              'python -m sate.bench --parts gpu && recipes/mustc/run.sh --ngpu=8\n./run.sh --compare true\n'
              './run.sh test -m "not slow"\n')
    assert commands_of(script) == [("sate", "prep", ["--mustc-root", "--out", "--splits", "--tgt-lang"]),
                                   ("sate", "train", ["--config", "--exp"]), ("sate.bench", "", ["--parts"]),
                                   ("recipes/mustc/run.sh", "", ["--ngpu"]),
                                   ("recipes/synth/run.sh", "", ["--compare"])]
    assert "--ngpu" in known_options("recipes/mustc/run.sh", "")
    assert "--init-from" in known_options("sate", "train") and "--window" in known_options("sate", "analyze")


def _run(block: Block, cwd: Path, env: dict[str, str]) -> None:
    script = "\n".join(line for line in block.script.splitlines()
                       if not re.match(rf"^\s*(export\s+)?({'|'.join(TEST_VARIABLES)})=", line))
    for option, size in VOCAB_SIZES.items():
        script = re.sub(rf"{option}(\s+|=)\d+", rf"{option}\g<1>{size}", script)
    script = re.sub(r"\bsate pack\s", "sate pack --decode beam=1,max_len_ratio=0.2 ", script)
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"{block.id} failed ({done.returncode}):\n{script}\n{done.stderr[-3000:]}"


def _env(corpus: Path, sate_path: Callable[[dict[str, str]], dict[str, str]]) -> dict[str, str]:
    return sate_path({**os.environ, "PYTHONPATH": str(ROOT), "CORPUS": str(corpus), "DATA": "data/corpus"})


def write_texts(workspace: Path) -> None:
    """hyp.txt and ref.txt: what `sate score` reads in the docs."""
    (workspace / "ref.txt").write_text("Ich rufe Sie um 14:15 Uhr zurück.\nBitte schicken Sie mir den Fahrplan.\n")
    (workspace / "hyp.txt").write_text("Ich rufe Sie um 14:15 Uhr an.\nBitte schicken Sie mir das Angebot.\n")


@pytest.fixture
def fast_workspace(tmp_path: Path) -> Path:
    (tmp_path / "conf").symlink_to(ROOT / "conf")
    (tmp_path / "recipes").symlink_to(ROOT / "recipes")
    write_texts(tmp_path)
    return tmp_path


@pytest.mark.parametrize("block", [b for b in RUN if b.fast], ids=lambda b: b.id)
def test_fast_block_runs(block: Block, fast_workspace: Path, sate_path) -> None:  # noqa: ANN001
    _run(block, fast_workspace, _env(fast_workspace / "no corpus", sate_path))


# ------------------------------------------------------------------------------------------------ slow runs

def tiny_conf(real: Path, out: Path) -> None:
    """`out` as a tiny model of `real`'s task (an E2E baseline for an st_e2e config): one epoch of one batch."""
    task = yaml.safe_load(real.read_text())["task"]
    model = tiny_config(task, adaptor=None, baseline="e2e" in real.stem)
    config = {"task": task, "data": {"num_workers": 0}, "batch": {"per_device": 100000, "global": 100000},
              "model": model, "optim": {"lr": 3e-3, "warmup_steps": 2},
              "trainer": {"max_epochs": 1, "keep_last": 1, "keep_best": 1, "valid_bleu_utts": 5}}
    if task == "st" and "e2e" not in real.stem:
        config["model"]["loss"] = {"kd": {"asr_weight": 0.3, "mt_weight": 0.3}}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(config))


@pytest.fixture(scope="module")
def base_workspace(tmp_path_factory: pytest.TempPathFactory, synth_corpus: Path, sate_path) -> Path:  # noqa: ANN001
    """The README's "train on your own corpus" block run on the fixture corpus, with the demo's paths beside."""
    base = tmp_path_factory.mktemp("docs") / "workspace"
    base.mkdir()
    for real in (ROOT / "conf").glob("*/*.yaml"):
        tiny_conf(real, base / real.relative_to(ROOT))
    (base / "recipes").symlink_to(ROOT / "recipes")
    write_texts(base)
    shutil.copy(sorted((synth_corpus / "en-de" / "data" / "tst-COMMON" / "wav").glob("*.wav"))[0], base / "talk.wav")
    _run(base_block(), base, _env(synth_corpus, sate_path))
    for tag in ("whisper", "demo"):  # the default demo's exp tag, and --acoustic conformer's
        for name in ("asr", "mt", "st"):
            demo = base / "exp" / "synth" / tag / name
            demo.mkdir(parents=True)
            shutil.copy(base / "exp" / name / "model.pt", demo / "model.pt")
            shutil.copytree(base / "packs" / name, demo / "pack")
    (base / "data" / "synth").symlink_to("corpus")
    return base


def base_block() -> Block:
    found = [b for b in RUN if b.doc == "README.md" and re.search(BASE_BLOCK_SIGN, b.text)]
    assert len(found) == 1, "README.md needs one block that runs `sate prep --mustc-root` (the path of your own corpus)"
    return found[0]


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in RUN if not b.fast], ids=lambda b: b.id)
def test_slow_block_runs(block: Block, base_workspace: Path, synth_corpus: Path, tmp_path: Path,
                         sate_path) -> None:  # noqa: ANN001
    if block == base_block():  # it made the workspace
        assert (base_workspace / "packs" / "st" / "model.pt").is_file()
        return
    workspace = tmp_path / "workspace"
    shutil.copytree(base_workspace, workspace, symlinks=True)
    _run(block, workspace, _env(synth_corpus, sate_path))
