"""A small, fast reader for Bayesian networks in BIF (Bayesian Interchange Format).

BIF 0.15 (Cozman, *The Interchange Format for Bayesian Networks*, 1998) as written by
bnlearn's repository (Scutari 2010, https://www.bnlearn.com/bnrepository/):

.. code-block:: text

    variable lung {
      type discrete [ 2 ] { yes, no };
    }
    probability ( either | lung, tub ) {
      (yes, yes) 1.0, 0.0;
      (no, no) 0.0, 1.0;
      ...
    }
    probability ( smoke ) {
      table 0.5, 0.5;
    }

Supported: ``//`` and ``/* */`` comments, ``property`` entries (ignored), the
per-parent-configuration form ``(a, b) p1, p2;`` with an optional ``default p1, p2;``
for configurations not listed, and the ``table`` form. A ``table`` for a variable with
parents lists the values in C order over ``(variable, parent_1, ..., parent_m)`` —
the variable's state is the slowest index, the last parent the fastest — which is how
pgmpy reads and writes it.

bnlearn's networks ship inside pgmpy 1.0's wheel as
``pgmpy/utils/example_models/<name>.bif.gz``. :func:`bundled_bif_path` finds them
without importing pgmpy (whose import alone takes over a second).
"""

from __future__ import annotations

import gzip
import importlib.util
import re
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from fedstruct.data.discrete import DiscreteNetwork
from fedstruct.errors import DataError
from fedstruct.graphs.graph import Graph

__all__ = ["bundled_bif_path", "parse_bif", "pgmpy_example_file", "read_bif", "read_bif_graph"]

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
# ``variable(?<=\bvariable)`` is ``\bvariable`` that lets the regex engine look for the literal
# first: a leading ``\b`` makes it try every position of a many-megabyte file.
_VARIABLE = re.compile(
    r"variable(?<=\bvariable)\s+([^\s{]+)\s*\{\s*type\s+discrete\s*\[\s*(\d+)\s*\]\s*\{([^}]*)\}\s*;[^}]*\}"
)
_PROBABILITY = re.compile(r"\bprobability\s*\(([^)]*)\)\s*\{([^}]*)\}")
_CONFIG = re.compile(r"\(([^)]*)\)(.*)", re.DOTALL)
_DECLARATION = re.compile(r"variable(?<=\bvariable)\s")


def _words(text: str) -> list[str]:
    """Names separated by commas and/or white space."""
    return text.replace(",", " ").split()


def _numbers(text: str, where: str) -> NDArray[np.float64]:
    try:
        return np.array(_words(text), dtype=np.float64)
    except ValueError:
        raise DataError(f"{where}: cannot read probabilities from {text.strip()[:60]!r}") from None


def _number_rows(texts: list[str], words: list[str], k: int, where: str) -> NDArray[np.float64]:
    """The ``k`` numbers of each text (``words``: theirs, in order) as a ``(len(texts), k)`` array.

    One conversion for a whole block: a big network lists thousands of configurations.
    """
    try:
        return np.array(words, dtype=np.float64).reshape(len(texts), k)
    except ValueError:
        for text in texts:
            _numbers(text, where)  # raises, naming the first text that is not numbers
        raise


def parse_bif(text: str, name: str = "network") -> DiscreteNetwork:
    """Parse BIF text into a :class:`~fedstruct.data.discrete.DiscreteNetwork`.

    Parameters
    ----------
    text
        The file's content.
    name
        The network's label, used in messages and as :attr:`DiscreteNetwork.name`.

    Raises
    ------
    DataError
        If a variable is not discrete, a probability block names an unknown variable or
        state, repeats or misses a parent configuration, has the wrong number of values,
        or a variable has no probability block. Messages name the network and variable.
    """
    text = _COMMENTS.sub(" ", text)
    names: list[str] = []
    states: dict[str, tuple[str, ...]] = {}
    for m in _VARIABLE.finditer(text):
        var, k, body = m.group(1), int(m.group(2)), _words(m.group(3))
        if len(body) != k:
            raise DataError(
                f"{name}: variable {var!r} declares {k} states but lists {len(body)}: {body}"
            )
        if var in states:
            raise DataError(f"{name}: variable {var!r} is declared twice")
        names.append(var)
        states[var] = tuple(body)
    declared = len(_DECLARATION.findall(text))
    if declared != len(names):
        raise DataError(
            f"{name}: {declared - len(names)} variable blocks are not 'type discrete [k] {{...}}'; "
            "only discrete networks are supported"
        )
    parents: dict[str, tuple[str, ...]] = {}
    tables: dict[str, NDArray[np.float64]] = {}
    for m in _PROBABILITY.finditer(text):
        head = m.group(1).split("|")
        var_part = _words(head[0])
        if len(var_part) != 1 or len(head) > 2:
            raise DataError(f"{name}: cannot read probability header ({m.group(1).strip()})")
        var = var_part[0]
        pars = tuple(_words(head[1])) if len(head) == 2 else ()
        for v in (var, *pars):
            if v not in states:
                raise DataError(
                    f"{name}: probability block ({m.group(1).strip()}) names {v!r}, "
                    "which is not a declared variable"
                )
        if var in tables:
            raise DataError(f"{name}: variable {var!r} has two probability blocks")
        parents[var] = pars
        tables[var] = _read_block(m.group(2), var, pars, states, name)
    missing = [v for v in names if v not in tables]
    if missing:
        raise DataError(f"{name}: variables {missing} have no probability block")
    return DiscreteNetwork(names, states, parents, tables, name=name)


def _read_block(
    body: str,
    var: str,
    pars: tuple[str, ...],
    states: dict[str, tuple[str, ...]],
    net: str,
) -> NDArray[np.float64]:
    """The CPT of ``var`` (shape ``(*parent cards, card)``) from a probability block body."""
    where = f"{net}: probability of {var!r}"
    k = len(states[var])
    pcards = tuple(len(states[p]) for p in pars)
    n_cfg = int(np.prod(pcards)) if pars else 1
    lookup = [{s: i for i, s in enumerate(states[p])} for p in pars]
    table = np.full((n_cfg, k), np.nan)
    default: NDArray[np.float64] | None = None
    # Configuration rows are converted to numbers together, at the end or before a table.
    pending_rows: list[int] = []
    pending_set: set[int] = set()
    pending_texts: list[str] = []
    pending_words: list[str] = []

    def flush() -> None:
        if pending_rows:
            table[pending_rows] = _number_rows(pending_texts, pending_words, k, where)
            pending_rows.clear()
            pending_set.clear()
            pending_texts.clear()
            pending_words.clear()

    strides = [int(np.prod(pcards[i + 1 :])) for i in range(len(pars))]
    for entry in body.split(";"):
        entry = entry.strip()
        if not entry or entry.startswith("property"):
            continue
        if entry.startswith("table"):
            values = _numbers(entry[5:], where)
            if values.size != n_cfg * k:
                raise DataError(f"{where}: table has {values.size} values, expected {n_cfg * k}")
            flush()
            # C order over (variable, parents...) -> rows per parent configuration.
            table[:] = values.reshape(k, n_cfg).T
        elif entry.startswith("default"):
            default = _numbers(entry[7:], where)
            if default.size != k:
                raise DataError(f"{where}: default has {default.size} values, expected {k}")
        elif entry.startswith("("):
            m = _CONFIG.match(entry)
            cfg = _words(m.group(1)) if m else []
            if m is None or len(cfg) != len(pars):
                raise DataError(
                    f"{where}: configuration {entry[:40]!r} does not list one state per "
                    f"parent {list(pars)}"
                )
            row = 0
            for i, s in enumerate(cfg):
                if s not in lookup[i]:
                    raise DataError(
                        f"{where}: {s!r} is not a state of parent {pars[i]!r} "
                        f"(states: {list(states[pars[i]])})"
                    )
                row += lookup[i][s] * strides[i]
            words = _words(m.group(2))
            if len(words) != k:
                raise DataError(
                    f"{where}: configuration ({', '.join(cfg)}) has "
                    f"{len(words)} values, expected {k}"
                )
            if row in pending_set or not np.isnan(table[row, 0]):
                raise DataError(f"{where}: configuration ({', '.join(cfg)}) is given twice")
            pending_rows.append(row)
            pending_set.add(row)
            pending_texts.append(m.group(2))
            pending_words.extend(words)
        else:
            raise DataError(f"{where}: cannot read the entry {entry[:40]!r}")
    flush()
    unset = np.isnan(table[:, 0])
    if unset.any():
        if default is None:
            row = int(np.flatnonzero(unset)[0])
            cfg = np.unravel_index(row, pcards) if pars else ()
            shown = ", ".join(states[p][int(c)] for p, c in zip(pars, cfg, strict=True))
            raise DataError(f"{where}: configuration ({shown}) has no probabilities")
        table[unset] = default
    return table.reshape((*pcards, k))


def read_bif(path: str | Path, name: str | None = None) -> DiscreteNetwork:
    """Read a ``.bif`` or ``.bif.gz`` file.

    Parameters
    ----------
    path
        The file.
    name
        The network's label; defaults to the file name without ``.bif``/``.bif.gz``.

    Raises
    ------
    DataError
        If the file cannot be read (the message names it) or does not parse.
    """
    path = Path(path)
    label = name or path.name.removesuffix(".gz").removesuffix(".bif")
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                text = fh.read()
        else:
            text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read BIF file '{path}': {exc}") from None
    return parse_bif(text, name=label)


def read_bif_graph(path: str | Path, name: str | None = None) -> Graph:
    """The structure of a ``.bif`` or ``.bif.gz`` network: the DAG of its probability blocks.

    Each ``probability ( X | P1, ..., Pm )`` block gives the edges ``Pi -> X``; the
    variables are in the order of the file's ``variable`` blocks. The file is read
    by :func:`read_bif`, so it must be a complete, valid network.

    Parameters
    ----------
    path
        The file.
    name
        The network's label in messages; defaults to the file name.

    Raises
    ------
    DataError
        If the file cannot be read or does not parse.
    CyclicGraphError
        If the parent sets form a directed cycle.
    """
    return read_bif(path, name=name).graph


def bundled_bif_path(name: str) -> Path:
    """The bnlearn network file ``name.bif.gz`` shipped in pgmpy 1.0's wheel.

    Raises
    ------
    DataError
        If pgmpy is not installed or its wheel does not carry the file (pgmpy >= 1.1
        downloads networks instead of shipping them).
    """
    return pgmpy_example_file(f"{name}.bif.gz")


def pgmpy_example_file(filename: str) -> Path:
    """The file ``filename`` of pgmpy 1.0's wheel (``pgmpy/utils/example_models``).

    pgmpy is located with :func:`importlib.util.find_spec`, which does not import it.

    Raises
    ------
    DataError
        If pgmpy is not installed or its wheel does not carry the file (pgmpy >= 1.1
        downloads networks instead of shipping them).
    """
    spec = importlib.util.find_spec("pgmpy")
    if spec is None or not spec.submodule_search_locations:
        raise DataError(
            f"{filename} is read from pgmpy's wheel, but pgmpy is not installed; "
            "run: pip install 'pgmpy>=1.0,<1.1'"
        )
    for root in spec.submodule_search_locations:
        path = Path(root) / "utils" / "example_models" / filename
        if path.is_file():
            return path
    raise DataError(
        f"pgmpy's wheel has no file example_models/{filename}; "
        "install pgmpy 1.0.x (pip install 'pgmpy>=1.0,<1.1'), which ships the bnlearn networks"
    )
