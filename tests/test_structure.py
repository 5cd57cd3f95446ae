"""The import structure of the package: layers, no circles, a reason for every function-local import.

The package reads as the pipeline, and its imports say so. Every module belongs to a layer, and an import may only
point to its own layer or one below (``LAYERS``, lowest first):

1. ``sate``, ``sate.errors``, ``sate.files``, ``sate.layout``, ``sate.targets``: errors, atomic files, the names of
   files on disk, where a command may write;
2. ``sate.data``: corpora to manifests, audio, features, vocabularies, datasets;
3. ``sate.synth``: the offline demo corpora (`sate synth`), built on ``sate.data``;
4. ``sate.models``: the models and their files;
5. ``sate.config``: YAML configs and `sate config`;
6. ``sate.scoring``, ``sate.decode``, ``sate.train``, ``sate.analysis``: what uses models;
7. ``sate.bench``, ``sate.cli``: the benchmarks and the `sate` command, which import everything.

Imports inside a layer are free as long as they close no circle. The graph counts function-local imports too: a
circle closed by an import inside a function is still a circle. A function-local import of a sate module or of a
package outside the standard library says why on its line (``# heavy: torch``, ``# optional: ...``), or
``ALLOWED_LOCAL`` says why. ``python tests/test_structure.py`` prints the counts.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

LAYERS: list[tuple[str, ...]] = [
    ("sate", "sate.errors", "sate.numbers", "sate.files", "sate.layout", "sate.targets", "sate.config",
     "sate.settings"),
    ("sate.data",),
    ("sate.synth",),
    ("sate.models",),
    ("sate.scoring", "sate.decode", "sate.train", "sate.analysis"),
    ("sate.bench", "sate.cli"),
]

# Circles still open, as the set of modules in each (typed configuration removed the last: `sate config` left
# sate/config.py for sate/train/show_config.py).
KNOWN_CIRCLES: list[frozenset[str]] = []
# Arrows that climb, (from, to).
KNOWN_UPWARD: dict[tuple[str, str], str] = {}
# Function-local imports without a comment on their line, (module, imported): why they stay function-local.
ALLOWED_LOCAL: dict[tuple[str, str], str] = {
    # heavy: torch, ESPnet or Lightning, imported when a command runs so that `sate --help` stays instant
    ("sate.decode.api", "sate.data.dataset"): "heavy: torch",
    ("sate.decode.api", "sate.data.waveform"): "heavy: torch",
    ("sate.decode.api", "sate.decode.beam_search"): "heavy: torch",
    ("sate.decode.api", "sate.models.ctc"): "heavy: ESPnet",
    ("sate.decode.api", "sate.models.model_file"): "heavy: torch",
    ("sate.decode.evaluate", "sate.data.dataset"): "heavy: torch",
    ("sate.decode.evaluate", "sate.decode.api"): "heavy: torch",
    ("sate.decode.evaluate", "tqdm"): "slow: tqdm, only while progress shows",
    ("sate.decode.pack", "sate.models.model_file"): "heavy: torch",
    ("sate.decode.translate", "sate.decode.api"): "heavy: torch",
    ("sate.decode.translate", "tqdm"): "slow: tqdm, only while progress shows",
    ("sate.models.base", "sate.models.decoder"): "heavy: ESPnet's decoder, for the token conventions only",
    ("sate.models.hub.files", "safetensors"): "optional: safetensors, for hub weights",
    ("sate.models.hub.files", "torch"): "heavy: torch",
    ("sate.models.hub.speech", "torchaudio"): "heavy: torchaudio's wav2vec2 models",
    ("sate.train.checkpoint_io", "sate.train.resume"): "heavy: torch",
    ("sate.train.module", "sacrebleu"): "slow: sacrebleu (0.3 s), for validation BLEU",
    ("sate.train.module", "sate.decode.beam_search"): "heavy: ESPnet's beam search, for validation BLEU",
    ("sate.train.module", "sate.models.model_file"): "heavy: torch",
    ("sate.train.setup", "sate.models.hub.load"): "heavy: torch",
    ("sate.train.setup", "sate.models.pretrained"): "heavy: torch",
    ("sate.train.trainer", "lightning"): "heavy: Lightning",
    ("sate.train.trainer", "torch"): "heavy: torch",
    ("sate.train.trainer", "sate.train.checkpoint_io"): "heavy: Lightning",
    ("sate.train.trainer", "sate.train.rendezvous"): "heavy: Lightning",
    ("sate.train.trainer", "sate.train.data"): "heavy: torch",
    ("sate.train.trainer", "sate.train.datamodule"): "heavy: Lightning",
    ("sate.train.trainer", "sate.train.frozen_cache"): "heavy: torch",
    ("sate.train.trainer", "sate.train.module"): "heavy: Lightning",
    ("sate.train.trainer", "sate.train.progress"): "heavy: Lightning",
    ("sate.train.trainer", "sate.train.resume"): "heavy: torch",
    ("sate.train.trainer", "sate.train.setup"): "heavy: torch",
    # optional: hub parts, imported only when a config names a hub model
    ("sate.models.acoustic", "sate.models.hub.speech"): "optional: a hub acoustic encoder",
    ("sate.models.decoder", "sate.models.hub.marian"): "optional: a hub Marian decoder",
    ("sate.models.textual", "sate.models.hub.marian"): "optional: a hub Marian encoder",
    # light: could be module-level imports; these files are being reworked by typed configuration and the typed
    # API, which take them over (then drop the entry)
    ("sate.decode.api", "sate.data.vocab"): "light; beside the heavy imports of load()",
    ("sate.decode.evaluate", "sate.data.manifest"): "light; beside the heavy imports of run()",
    ("sate.decode.evaluate", "sate.decode.options"): "light; decode options are reworked by typed configuration",
    ("sate.decode.evaluate", "sate.scoring.degeneration"): "light; beside the heavy imports of run()",
    ("sate.decode.evaluate", "sate.scoring.score"): "light; beside the heavy imports of run()",
    ("sate.decode.evaluate", "sate.scoring.significance"): "light; beside the heavy imports of run()",
    ("sate.decode.pack", "sate.data.audio"): "light; pack's options are reworked by typed configuration",
    ("sate.decode.pack", "sate.data.features"): "light; pack's options are reworked by typed configuration",
    ("sate.decode.pack", "sate.data.manifest"): "light; pack's options are reworked by typed configuration",
    ("sate.decode.pack", "sate.data.vocab"): "light; pack's options are reworked by typed configuration",
    ("sate.decode.translate", "sate.decode.options"): "light; decode options are reworked by typed configuration",
    ("sate.models.hub.load", "sate.data.marian_vocab"): "light; hub loading is being extended (Whisper)",
    ("sate.models.hub.load", "sate.data.vocab"): "light; hub loading is being extended (Whisper)",
    ("sate.models.textual", "sate.models.hub.settings"): "light; the constructors are reworked by typed configuration",
    ("sate.train.trainer", "sate.data.cmvn_record"): "light; beside run()'s heavy imports",
    ("sate.train.trainer", "sate.data.vocab"): "light; beside run()'s heavy imports, reworked by typed configuration",
    ("sate.train.trainer", "sate.train.lock"): "light; beside run()'s heavy imports, reworked by typed configuration",
}


@dataclass(frozen=True)
class Import:
    """One imported name: the module that imports it, where, what, and whether inside a function."""

    module: str
    line: int
    target: str  # a sate module, or the top-level name of another package
    local: bool
    commented: bool


def modules() -> dict[str, Path]:
    """Every sate module by dotted name (a package by its own name)."""
    found = {}
    for path in sorted((ROOT / "sate").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


@cache
def tree(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once per process (the checks below each walk every module)."""
    return ast.parse(path.read_text())


def _lazy_homes(path: Path) -> dict[str, str]:
    """A package's names served on first use by its ``__getattr__`` (``_HOMES``: name -> submodule)."""
    for node in tree(path).body:
        if isinstance(node, ast.AnnAssign | ast.Assign) and isinstance(node.value, ast.Dict):
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            if isinstance(target, ast.Name) and target.id == "_HOMES":
                return {k.value: v.value for k, v in zip(node.value.keys, node.value.values, strict=True)}
    return {}


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


@cache
def imports() -> tuple[Import, ...]:
    """Every import in the package, run-time ones only (``if TYPE_CHECKING:`` blocks are skipped); read once per
    process (the tests share it, none changes it)."""
    mods = modules()
    homes = {name: _lazy_homes(path) for name, path in mods.items() if path.name == "__init__.py"}

    def resolve(name: str) -> str:
        if name.split(".")[0] != "sate":
            return name.split(".")[0]
        while name not in mods:
            name = name.rpartition(".")[0]
        return name

    found = []
    for module, path in mods.items():
        source = path.read_text()
        # An import statement holds no string, so a "#" on its lines is a comment (tokenizing took a second).
        comments = {number for number, line in enumerate(source.splitlines(), 1) if "#" in line}
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]

        def visit(node: ast.AST, local: bool, module: str = module, package: str = package,
                  comments: set[int] = comments) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and _is_type_checking(child):
                    continue
                names: list[str] = []
                if isinstance(child, ast.Import):
                    names = [alias.name for alias in child.names]
                elif isinstance(child, ast.ImportFrom) and child.module != "__future__":
                    base = child.module or ""
                    if child.level:
                        base = ".".join(package.split(".")[:len(package.split(".")) - child.level + 1] + [base])
                        base = base.rstrip(".")
                    for alias in child.names:
                        sub = f"{base}.{alias.name}"
                        names.append(sub if sub in mods else
                                     f"{base}.{homes[base][alias.name]}" if alias.name in homes.get(base, {}) else
                                     base)
                lines = set(range(child.lineno, (child.end_lineno or child.lineno) + 1)) if names else set()
                for name in names:
                    found.append(Import(module, child.lineno, resolve(name), local, bool(lines & comments)))
                visit(child, local or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

        visit(tree(path), False)
    return tuple(found)


def layer(module: str) -> int:
    """The index in ``LAYERS`` of the longest prefix naming `module`."""
    best, rank = "", -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".") and prefix != "sate") and len(prefix) > len(best):
                best, rank = prefix, index
    assert rank >= 0, f"{module} is in no layer: add it to LAYERS"
    return rank


def graph(found: tuple[Import, ...], local: bool = True) -> dict[str, set[str]]:
    """sate module -> the sate modules it imports (with function-local imports unless `local` is False)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for imp in found:
        if imp.target.startswith("sate") and imp.target != imp.module and (local or not imp.local):
            edges[imp.module].add(imp.target)
    return edges


def circles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def upward(found: tuple[Import, ...]) -> set[tuple[str, str]]:
    """Imports that point to a higher layer than their own."""
    return {(imp.module, imp.target) for imp in found
            if imp.target.startswith("sate") and layer(imp.target) > layer(imp.module)}


def unexplained(found: tuple[Import, ...]) -> list[Import]:
    """Function-local imports of sate modules or other packages with neither a comment nor an allow-list entry."""
    return [imp for imp in found if imp.local and not imp.commented and imp.target not in sys.stdlib_module_names
            and (imp.module, imp.target) not in ALLOWED_LOCAL]


def test_every_module_has_a_layer() -> None:
    for module in modules():
        layer(module)


@pytest.mark.slow
def test_no_circle_at_module_level() -> None:
    assert circles(graph(imports(), local=False)) == []


@pytest.mark.slow
def test_no_circle_with_function_local_imports() -> None:
    found = circles(graph(imports()))
    assert [c for c in found if c not in KNOWN_CIRCLES] == []
    assert [c for c in KNOWN_CIRCLES if c not in found] == [], "a known circle is gone: drop it from KNOWN_CIRCLES"


def test_no_arrow_climbs_the_layers() -> None:
    assert upward(imports()) == set(KNOWN_UPWARD)


def test_function_local_imports_say_why() -> None:
    found = imports()
    missing = [f"{imp.module}:{imp.line} imports {imp.target}" for imp in unexplained(found)]
    assert missing == []
    stale = set(ALLOWED_LOCAL) - {(imp.module, imp.target) for imp in found if imp.local and not imp.commented}
    assert stale == set(), "ALLOWED_LOCAL names imports that are gone"


# Modules whose file-name literals stay: Marian's own vocab.json and a slow Whisper tokenizer's are hub files, not
# our data directory's.
OWN_NAMES: dict[str, set[str]] = {"sate.data.marian_vocab": {"vocab.json"},
                                  "sate.models.hub.whisper_tokens": {"vocab.json"}}


@pytest.mark.slow
def test_file_names_have_one_home() -> None:
    """The names of files on disk are written once, in `sate.layout`; modules name them through it."""
    import sate.layout as layout

    # "fbank" and "marian" also name a feature kind and a vocabulary kind: not checked
    names = {value for key, value in vars(layout).items() if key.isupper() and isinstance(value, str)
             and key not in ("FBANK_DIR", "MARIAN_DIR")}
    names |= {layout.spm_model(side) for side in ("src", "tgt")} | {layout.token_list(side) for side in ("src", "tgt")}
    found = []
    for module, path in modules().items():
        if module == "sate.layout":
            continue
        for node in ast.walk(tree(path)):
            if isinstance(node, ast.Constant) and node.value in names - OWN_NAMES.get(module, set()):
                found.append(f"{module}:{node.lineno} {node.value}")
    assert found == []


def test_no_path_resolve_on_what_a_user_names() -> None:
    """`Path.resolve` raises RuntimeError on a symlink loop in Python 3.11 (a traceback from `sate prep --kaldi-dir
    LOOP`, `sate evaluate --model LOOP`, a data directory whose fbank is a loop): paths are resolved with
    `sate.files.real_path`; only a module's own ``Path(__file__)`` may use it."""
    found = []
    for module, path in modules().items():
        for node in ast.walk(tree(path)):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "resolve" \
                    and "__file__" not in ast.unparse(node.func.value):
                found.append(f"{module}:{node.lineno} {ast.unparse(node)}")
    assert found == []


def test_no_missing_file_message_without_asking_what_is_there() -> None:
    """`if not path.is_file(): raise SateError("... is missing")` called a directory, a pipe or a broken symlink
    "missing", and the command it advised then said the file was there: such checks go through
    `sate.files.require_file`, which names what is there instead."""
    found = []
    for module, path in modules().items():
        for node in ast.walk(tree(path)):
            if module != "sate.files" and isinstance(node, ast.If) and isinstance(node.test, ast.UnaryOp) \
                    and isinstance(node.test.op, ast.Not) and "is_file()" in ast.unparse(node.test) \
                    and isinstance(node.body[0], ast.Raise) and "missing" in ast.unparse(node.body[0]):
                found.append(f"{module}:{node.lineno} {ast.unparse(node.test)}")
    assert found == []


def test_checks_catch_what_they_should() -> None:
    """The circle finder and the layer rule on a made-up graph: a real circle is found, a chain is not."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]
    assert circles({"a": {"b"}, "b": {"c"}}) == []
    assert layer("sate.data.audio") < layer("sate.models.st") < layer("sate.decode.api") < layer("sate.cli")
    assert layer("sate.errors") == layer("sate") == 0


if __name__ == "__main__":
    everything = imports()
    local = [imp for imp in everything if imp.local]
    statements = {(imp.module, imp.line) for imp in local}
    print(f"circles (with function-local imports): {len(circles(graph(everything)))}")
    for circle in circles(graph(everything)):
        print("  " + " ".join(sorted(circle)))
    print(f"circles at module level: {len(circles(graph(everything, local=False)))}")
    print(f"arrows up: {len(upward(everything))}")
    for arrow in sorted(upward(everything)):
        print("  " + " -> ".join(arrow))
    print(f"function-local import statements: {len(statements)}; of sate modules: "
          f"{len({(i.module, i.line) for i in local if i.target.startswith('sate')})}; without a reason: "
          f"{len({(i.module, i.line) for i in unexplained(everything)})}")
