"""Import cycles among the package's modules, at import time.

Usage: ``python tools/check_cycles.py [SRC]`` (default: the repository's ``src``). Prints
each cycle as ``cycle: a (path:line) -> b (path:line) -> a`` and exits 1 if there is
any; 0 and a one-line summary otherwise.

An edge is an import that runs when its module is imported: at module level (inside
``if``, ``try`` and class bodies too), not in a function's body and not under
``if TYPE_CHECKING:``. Importing ``a.b.c`` first runs the packages ``a.b`` above it, so
an import is also an edge to each package above its target that does not hold the
importer (those are already being imported). A module that names its own package
(``from fedstruct.fl import Message`` in ``fedstruct/fl/client.py``) reads what that
package's ``__init__`` has bound so far: an edge too. Deferred imports are how a module
reaches one that imports it; they are not cycles.
"""

from __future__ import annotations

import sys
from collections import deque
from itertools import pairwise
from pathlib import Path

from import_graph import Import, imports, shown

__all__ = ["PACKAGE", "check", "edges", "main"]

PACKAGE = "fedstruct"


def _packages_above(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:k]) for k in range(1, len(parts))]


def edges(found: list[Import]) -> dict[str, dict[str, Import]]:
    """The import-time edges: importer -> {module it runs: the statement that runs it}."""
    graph: dict[str, dict[str, Import]] = {}
    for each in found:
        if each.deferred or each.type_only:
            continue
        mine = set(_packages_above(each.importer))
        out = graph.setdefault(each.importer, {})
        for above in _packages_above(each.target):
            if above not in mine and above != each.importer:
                out.setdefault(above, each)
        out.setdefault(each.target, each)  # the importer's own package too, when named
    return graph


def _components(graph: dict[str, dict[str, Import]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, {}))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _one_cycle(graph: dict[str, dict[str, Import]], component: list[str]) -> list[str]:
    """A shortest cycle through the component's first module (breadth-first)."""
    members = set(component)
    start = component[0]
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph.get(node, {})):
            if child not in members:
                continue
            if child == start:
                back = [node]  # node, the one before it, ..., start
                while back[-1] != start:
                    back.append(came_from[back[-1]])
                return [*reversed(back), start]
            if child not in came_from:
                came_from[child] = node
                queue.append(child)
    raise AssertionError(f"{component} is not a cycle")


def check(src: Path) -> list[str]:
    """One line per import cycle of the package under ``src``: its modules in import
    order, each with the statement that imports the next (empty when there is none)."""
    graph = edges(imports(src, PACKAGE))
    lines = []
    for component in _components(graph):
        path = _one_cycle(graph, component)
        steps = [
            f"{module} ({graph[module][following].path}:{graph[module][following].line})"
            for module, following in pairwise(path)
        ]
        lines.append("cycle: " + " -> ".join([*steps, path[-1]]))
    return lines


def main(argv: list[str]) -> int:
    """Check the tree under ``argv[0]`` (default: the repository's ``src``)."""
    src = Path(argv[0]) if argv else shown(Path(__file__).resolve().parent.parent / "src")
    lines = check(src)
    for line in lines:
        print(line)
    if lines:
        print(f"cycles: {len(lines)} import cycle(s) at import time")
        return 1
    print("cycles: no import cycle at import time")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
