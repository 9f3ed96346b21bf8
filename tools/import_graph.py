"""Every import statement of a package's modules that names one of the package's modules.

Read from the source (``ast``): nothing is imported, so the check runs on a clean
clone before anything is installed. Shared by ``tools/check_layers.py`` (which imports
may exist) and ``tools/check_cycles.py`` (which imports run when a module is imported).
Imports built from strings at run time (``importlib.import_module``,
``fedstruct.lazy``, the method registry) are not seen.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Import", "imports", "modules", "shown"]


@dataclass(frozen=True)
class Import:
    """One module of the package named by one import statement.

    Attributes
    ----------
    path
        The importing file.
    line
        The statement's line.
    importer
        The importing module's dotted name (``fedstruct.fl.client``).
    target
        The package's module the statement names, the most specific one:
        ``from fedstruct.fl import progress`` names ``fedstruct.fl.progress``,
        ``from fedstruct.fl import Message`` names ``fedstruct.fl``.
    deferred
        Inside a function's body: runs when the function is called, not when the
        module is imported.
    type_only
        Under ``if TYPE_CHECKING:``: never runs; read by type checkers only.
    """

    path: Path
    line: int
    importer: str
    target: str
    deferred: bool
    type_only: bool


def modules(src: Path, package: str) -> dict[str, Path]:
    """The package's modules under ``src``: dotted name -> file (a package is its
    ``__init__.py``), in file order."""
    found = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = path.relative_to(src).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def shown(path: Path) -> Path:
    """``path`` relative to the working folder when it is inside it (shorter messages)."""
    return path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path


def imports(src: Path, package: str) -> list[Import]:
    """Every import of one of the package's modules by one of them, in file and line
    order (a module naming itself is left out)."""
    known = modules(src, package)
    found = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        visitor = _Visitor(name, path, path.name == "__init__.py", known)
        visitor.visit(tree)
        found.extend(visitor.found)
    return found


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


class _Visitor(ast.NodeVisitor):
    """Collects one module's imports, knowing whether each sits in a function's body
    or under ``if TYPE_CHECKING:``."""

    def __init__(self, name: str, path: Path, is_package: bool, known: dict[str, Path]):
        self.name, self.path, self.is_package, self.known = name, path, is_package, known
        self.functions = 0
        self.type_checking = 0
        self.found: list[Import] = []

    def _nested(self, node: ast.AST, attribute: str) -> None:
        setattr(self, attribute, getattr(self, attribute) + 1)
        self.generic_visit(node)
        setattr(self, attribute, getattr(self, attribute) - 1)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._nested(node, "functions")

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._nested(node, "functions")

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        self.visit(node.test)
        self.type_checking += 1
        for statement in node.body:
            self.visit(statement)
        self.type_checking -= 1
        for statement in node.orelse:
            self.visit(statement)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, self._known_prefix(alias.name))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:  # relative: from the importer's package, one level up per extra dot
            here = self.name.split(".") if self.is_package else self.name.split(".")[:-1]
            here = here[: len(here) - (node.level - 1)]
            base = ".".join([*here, base] if base else here)
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            self._add(node, submodule if submodule in self.known else self._known_prefix(base))

    def _known_prefix(self, dotted: str) -> str | None:
        """The longest prefix of ``dotted`` that is one of the package's modules."""
        while dotted and dotted not in self.known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    def _add(self, node: ast.stmt, target: str | None) -> None:
        if target is None or target == self.name:
            return
        self.found.append(
            Import(
                path=self.path,
                line=node.lineno,
                importer=self.name,
                target=target,
                deferred=self.functions > 0,
                type_only=self.type_checking > 0,
            )
        )
