"""Fixtures of the gate scripts' tests (tools/, on the path through pyproject's
``pythonpath``)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

#: The repository's root.
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def repo() -> Path:
    """The repository's root."""
    return REPO


@pytest.fixture
def make_tree(tmp_path: Path) -> Callable[[dict[str, str], str], Path]:
    """Writes a small package: ``make_tree(files, folder="tree")`` puts ``files`` (paths
    under ``fedstruct/`` -> text, dedented) in ``tmp_path/folder/src``, with an
    ``__init__.py`` in every package, and returns that ``src``."""

    def make(files: dict[str, str], folder: str = "tree") -> Path:
        src = tmp_path / folder / "src"
        for name, text in {"__init__.py": "", **files}.items():
            path = src / "fedstruct" / name
            for package in [path.parent, *path.parent.parents]:
                if package == src:
                    break
                package.mkdir(parents=True, exist_ok=True)
                (package / "__init__.py").touch()
            path.write_text(textwrap.dedent(text))
        return src

    return make
