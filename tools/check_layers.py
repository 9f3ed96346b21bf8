"""The import-layer contract of docs/architecture.md ("Layers (imports only point down)").

Usage: ``python tools/check_layers.py [SRC]`` (default: the repository's ``src``). Prints
one line per violation, ``path:line: fedstruct.x imports fedstruct.y (why not)``, and
exits 1 if there is any; 0 and a one-line summary otherwise.

Every import statement counts, wherever it stands: at module level, inside a function
(a deferred import is still a dependency, only a later one) and under
``if TYPE_CHECKING:`` (a type a lower layer names from a higher one ties its design to
that layer; the lower layer declares a ``Protocol`` instead). Imports built from strings
at run time are not seen (``tools/import_graph.py``).

The rules:

- :data:`LAYERS`, bottom first: a module imports its own layer and those below, never
  one above; a layer with ``only`` imports just those lower layers and modules.
- :data:`UNITS`: a method (``methods/<m>/``: its algorithm and its run) never imports
  another method.
- The package's face (``fedstruct/__init__.py``: ``__version__``, ``fedstruct.load``)
  may be imported by every module and may import every module: it exports the top
  (``load``, deferred) and the bottom (``__version__``); its module-level body imports
  only ``fedstruct.errors``, and the cycle check keeps it acyclic.
- A module in no layer is itself a violation: a new top-level module or package is
  placed in :data:`LAYERS` when it is added.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from import_graph import Import, imports, modules, shown

__all__ = ["LAYERS", "PACKAGE", "UNITS", "Layer", "check", "main"]

PACKAGE = "fedstruct"


@dataclass(frozen=True)
class Layer:
    """One layer of :data:`LAYERS`.

    Attributes
    ----------
    name
        Its name in the messages.
    modules
        The modules it holds: each one and the modules under it.
    only
        When not empty, the only lower layers (by name) and modules (with those under
        them) it may import: a narrower rule than "anything below".
    """

    name: str
    modules: tuple[str, ...]
    only: tuple[str, ...] = ()


#: Bottom first. A package named here need not exist yet (``estimators``, issue 52).
LAYERS: tuple[Layer, ...] = (
    # What every layer uses: one-line errors, the one reader of user-named files, lazy
    # exports, the declarative config checks, and the registry of methods (names ->
    # module names; it imports a method's modules from strings, unseen here).
    Layer(
        "base",
        (
            "fedstruct.errors",
            "fedstruct.files",
            "fedstruct.lazy",
            "fedstruct.constraints",
            "fedstruct.registry",
        ),
    ),
    Layer("graphs", ("fedstruct.graphs",)),
    Layer("data", ("fedstruct.data",)),  # data may use graphs
    Layer("privacy", ("fedstruct.privacy",)),
    Layer("fl", ("fedstruct.fl",)),
    # discovery imports only graphs, data, fl's progress display (the per-level
    # progress bar of a long skeleton search, discovery/skeleton.py) and fl's device
    # setting (the G² counts on a torch device, discovery/device_counts.py), not the
    # runtime.
    Layer(
        "discovery",
        ("fedstruct.discovery",),
        only=("base", "graphs", "data", "fedstruct.fl.progress", "fedstruct.fl.device"),
    ),
    Layer("estimators", ("fedstruct.estimators",)),
    # drawing: the pictures of graphs and curves every run and `show` draw
    Layer("drawing", ("fedstruct.drawing",)),
    # runs: the run contract (settings, the registry of runnables, execute, the run
    # folder, launchers, a run's data, recipes' registry); every method's run builds on it
    Layer("runs", ("fedstruct.runs",)),
    Layer("methods", ("fedstruct.methods",)),
    # results: what a finished run left (predict, sample, query, show, export, its page)
    Layer("results", ("fedstruct.results",)),
    # reproduction: what spans methods (comparisons, compositions, robustness, demo)
    Layer("reproduction", ("fedstruct.reproduction",)),
    # deployment: the Flower App and the launcher that submits to a SuperLink
    Layer("deployment", ("fedstruct.deployment",)),
    Layer("cli", ("fedstruct.cli",)),
)

#: Packages whose sub-packages are methods: ``methods/<m>/`` (the algorithm and its
#: run) is one method, which imports no other method's package.
UNITS: tuple[str, ...] = ("fedstruct.methods",)


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str, layers: Iterable[Layer] = LAYERS) -> tuple[int, Layer] | None:
    """The position and layer holding ``module`` (the most specific match), or None."""
    best: tuple[int, int, Layer] | None = None
    for position, layer in enumerate(layers):
        for prefix in layer.modules:
            if _under(module, prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), position, layer)
    return None if best is None else (best[1], best[2])


def method_of(module: str, methods: set[str], units: Iterable[str] = UNITS) -> str | None:
    """The method ``module`` belongs to (``fedstruct.methods.fcm.run`` -> ``fcm``)."""
    for unit in units:
        if module.startswith(unit + "."):
            name = module[len(unit) + 1 :].split(".")[0]
            if name in methods:
                return name
    return None


def violation(found: Import, methods: set[str], layers: tuple[Layer, ...] = LAYERS) -> str | None:
    """Why ``found`` breaks the contract, or None when it keeps it."""
    importer, target = found.importer, found.target
    if PACKAGE in (importer, target):
        return None  # the package's face
    placed, wanted = layer_of(importer, layers), layer_of(target, layers)
    if placed is None or wanted is None:
        return None  # reported once, by check, for the module
    (here, layer), (there, other) = placed, wanted
    if there > here:
        return f"layer {layer.name} may not import layer {other.name}"
    if there < here and layer.only:
        names = {entry for entry in layer.only if "." not in entry}
        modules = [entry for entry in layer.only if "." in entry]
        if other.name not in names and not any(_under(target, m) for m in modules):
            return f"layer {layer.name} imports only {', '.join(layer.only)}"
    mine, theirs = method_of(importer, methods), method_of(target, methods)
    if mine and theirs and mine != theirs:
        return f"method {mine} may not import method {theirs}: methods never import each other"
    return None


def check(src: Path, layers: tuple[Layer, ...] = LAYERS) -> list[str]:
    """The contract's violations in the package under ``src``, one line each."""
    known = modules(src, PACKAGE)
    lines = [
        f"{path}:1: {name} is in no layer (place it in LAYERS, tools/check_layers.py)"
        for name, path in known.items()
        if name != PACKAGE and layer_of(name, layers) is None
    ]
    methods = {name.split(".")[2] for name in known if name.startswith("fedstruct.methods.")}
    for each in imports(src, PACKAGE):
        why = violation(each, methods, layers)
        if why:
            lines.append(f"{each.path}:{each.line}: {each.importer} imports {each.target} ({why})")
    return lines


def main(argv: list[str]) -> int:
    """Check the tree under ``argv[0]`` (default: the repository's ``src``)."""
    src = Path(argv[0]) if argv else shown(Path(__file__).resolve().parent.parent / "src")
    lines = check(src)
    for line in lines:
        print(line)
    if lines:
        print(f"layers: {len(lines)} violation(s) of docs/architecture.md's import layers")
        return 1
    print("layers: every import points down (docs/architecture.md)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
