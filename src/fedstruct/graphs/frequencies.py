"""How often each pair is adjacent, and with which marks, over graphs learned from
resampled data; and their consensus graph (docs/confidence.md).

A *mark pattern* names an edge's marks read from its first variable to its second:
``-->``, ``<--``, ``<->``, ``o->``, ``<-o``, ``o-o`` (and the rarer ``---``, ``--o``,
``o--``). :class:`EdgeFrequencies` counts, for every pair of variables, in how many of
``B`` graphs it is adjacent and with which pattern, so that

    adjacency frequency = sum of the patterns' frequencies = 1 - frequency of "none".

Consensus rule (:meth:`EdgeFrequencies.consensus`): a pair is an edge of the
consensus graph when it is adjacent in at least ``threshold`` (default one half) of
the graphs; its marks are its most frequent pattern among the graphs where it is
adjacent (a tie goes to the pattern with more circles, the less committal one, then
to the first in :data:`ALL_PATTERNS`). A consensus of DAGs may close a directed
cycle; with ``acyclic=True`` each cycle is broken at its least frequent edge
(:func:`~fedstruct.graphs.projection.break_cycles`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from fedstruct.errors import DataError, GraphError
from fedstruct.graphs.graph import ARROW, CIRCLE, NONE, TAIL, Graph
from fedstruct.graphs.projection import break_cycles

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ALL_PATTERNS",
    "CONSENSUS",
    "DAG_PATTERNS",
    "PAG_PATTERNS",
    "EdgeFrequencies",
    "mark_pattern",
    "site_contradictions",
]

#: The consensus threshold fedstruct's runs use: edges adjacent in half the graphs or more.
CONSENSUS = 0.5
#: A PAG's usual patterns, in the order tables list them.
PAG_PATTERNS: tuple[str, ...] = ("-->", "<--", "<->", "o->", "<-o", "o-o")
#: A DAG's patterns.
DAG_PATTERNS: tuple[str, ...] = ("-->", "<--")
#: Every pattern of two marks (tail, arrow, circle at each end), in that order.
ALL_PATTERNS: tuple[str, ...] = (*PAG_PATTERNS, "---", "--o", "o--")

_LEFT = {TAIL: "-", ARROW: "<", CIRCLE: "o"}
_RIGHT = {TAIL: "-", ARROW: ">", CIRCLE: "o"}
_PATTERN_MARKS = {
    f"{_LEFT[a]}-{_RIGHT[b]}": (a, b) for a in (TAIL, ARROW, CIRCLE) for b in (TAIL, ARROW, CIRCLE)
}


def mark_pattern(mark_a: int, mark_b: int) -> str:
    """The pattern of an edge with ``mark_a`` at its first end and ``mark_b`` at its
    second (e.g. circle, arrow: ``"o->"``)."""
    return f"{_LEFT[mark_a]}-{_RIGHT[mark_b]}"


def _flipped(pattern: str) -> str:
    """The same edge read the other way (``"o->"`` becomes ``"<-o"``)."""
    a, b = _PATTERN_MARKS[pattern]
    return mark_pattern(b, a)


@dataclass(frozen=True)
class EdgeFrequencies:
    """Counts of each pair's adjacency and mark patterns over ``replicates`` graphs.

    Attributes
    ----------
    names
        The variables, in order; a pair ``(a, b)`` is read with ``a`` first in it.
    replicates
        ``B``, the number of graphs counted.
    counts
        ``(n, n, 4, 4)`` integers: ``counts[i, j, p, q]`` (``i < j``) is how many graphs
        hold the edge between ``names[i]`` and ``names[j]`` with mark ``p`` at ``i`` and
        ``q`` at ``j`` (marks as in :mod:`fedstruct.graphs.graph`; entries with a
        ``none`` mark and those with ``i >= j`` are 0).
    patterns
        The patterns tables list: the graphs' kind's usual ones (:data:`PAG_PATTERNS`
        or :data:`DAG_PATTERNS`) and any other pattern some graph holds.
    """

    names: tuple[str, ...]
    replicates: int
    counts: NDArray[np.int64]
    patterns: tuple[str, ...]

    @classmethod
    def of(
        cls,
        graphs: Sequence[Graph],
        names: Sequence[str] | None = None,
        patterns: Sequence[str] = PAG_PATTERNS,
    ) -> EdgeFrequencies:
        """Count ``graphs`` (a variable a graph lacks is adjacent to nothing in it).

        Parameters
        ----------
        graphs
            The replicates' graphs, at least one.
        names
            The variables, in order; default: every graph's, in order of first appearance.
        patterns
            The patterns always listed (more are added where some graph holds them).

        Raises
        ------
        GraphError
            If there is no graph, or a graph names a variable ``names`` lacks.
        """
        if not graphs:
            raise GraphError("edge frequencies need at least one graph")
        if names is None:
            names = list(dict.fromkeys(v for g in graphs for v in g.names))
        names = tuple(names)
        n = len(names)
        counts = np.zeros((n, n, 4, 4), dtype=np.int64)
        upper = np.triu(np.ones((n, n), dtype=bool), 1)
        for graph in graphs:
            unknown = [v for v in graph.names if v not in set(names)]
            if unknown:
                raise GraphError(f"a replicate's graph names {unknown}, not among {list(names)}")
            marks = graph.expand(names).marks.astype(np.int64)
            i, j = np.nonzero(upper & (marks != NONE))
            np.add.at(counts, (i, j, marks[j, i], marks[i, j]), 1)
        return cls(names, len(graphs), counts, _listed(counts, patterns))

    # ------------------------------------------------------------------ reading
    def _pair(self, a: str, b: str) -> tuple[int, int, bool]:
        """``(i, j, flipped)`` with ``i < j``: where the pair's counts are, and whether
        ``(a, b)`` reads them backwards."""
        try:
            i, j = self.names.index(a), self.names.index(b)
        except ValueError:
            raise GraphError(
                f"no frequencies for the pair ({a!r}, {b!r}): unknown variable"
            ) from None
        if i == j:
            raise GraphError(f"no frequencies for the pair ({a!r}, {b!r}): the same variable")
        return (i, j, False) if i < j else (j, i, True)

    def adjacency(self, a: str, b: str) -> float:
        """The share of the graphs where ``a`` and ``b`` are adjacent."""
        i, j, _ = self._pair(a, b)
        return float(self.counts[i, j].sum()) / self.replicates

    def pattern_frequencies(self, a: str, b: str) -> dict[str, float]:
        """Pattern (read from ``a`` to ``b``) -> its share of the graphs, for every
        pattern of :attr:`patterns` (zero where none holds it)."""
        i, j, flipped = self._pair(a, b)
        out = dict.fromkeys(self.patterns, 0.0)
        for p, q in zip(*np.nonzero(self.counts[i, j]), strict=True):
            pattern = mark_pattern(int(p), int(q))
            pattern = _flipped(pattern) if flipped else pattern
            out[pattern] = float(self.counts[i, j, p, q]) / self.replicates
        return out

    def row(self, a: str, b: str) -> dict[str, float]:
        """The pair's frequencies as a table row: ``adjacent``, each pattern (read from
        ``a`` to ``b``) and ``none``."""
        adjacent = self.adjacency(a, b)
        return {"adjacent": adjacent, **self.pattern_frequencies(a, b), "none": 1.0 - adjacent}

    def pairs(self) -> list[tuple[str, str]]:
        """Every pair adjacent in some graph, in the variables' order."""
        i, j = np.nonzero(self.counts.sum(axis=(2, 3)))
        return [(self.names[a], self.names[b]) for a, b in zip(i.tolist(), j.tolist(), strict=True)]

    def table(self) -> pd.DataFrame:
        """One row per pair adjacent in some graph: ``from``, ``to`` and :meth:`row`."""
        import pandas as pd  # only where a table is asked for: graphs/ stays light

        columns = ["from", "to", "adjacent", *self.patterns, "none"]
        rows = [{"from": a, "to": b, **self.row(a, b)} for a, b in self.pairs()]
        return pd.DataFrame(rows, columns=columns)

    def adjacency_matrix(self) -> NDArray[np.float64]:
        """``(n, n)`` symmetric adjacency frequencies."""
        upper = self.counts.sum(axis=(2, 3)).astype(np.float64) / self.replicates
        return upper + upper.T

    # ---------------------------------------------------------------- consensus
    def consensus(self, threshold: float = 0.5, *, acyclic: bool = False) -> Graph:
        """The consensus graph (the module docstring's rule).

        Parameters
        ----------
        threshold
            The least adjacency frequency of a consensus edge, in ``(0, 1]``.
        acyclic
            Break each directed cycle at its least frequent edge (a consensus of DAGs).

        Raises
        ------
        GraphError
            If ``threshold`` is not in ``(0, 1]``, or ``acyclic`` and some consensus
            edge is not directed.
        """
        if not 0.0 < threshold <= 1.0:
            raise GraphError(f"consensus threshold {threshold} must lie in (0, 1]")
        n = len(self.names)
        marks = np.zeros((n, n), dtype=np.int8)
        support = np.zeros((n, n))
        for a, b in self.pairs():
            i, j, _ = self._pair(a, b)
            if self.counts[i, j].sum() < threshold * self.replicates - 1e-9:
                continue
            p, q = _most_frequent(self.counts[i, j])
            marks[j, i], marks[i, j] = p, q
            share = self.counts[i, j, p, q] / self.replicates
            support[i, j] = support[j, i] = share
        graph = Graph(self.names, marks)
        if acyclic and not graph.is_acyclic():
            graph = break_cycles(graph, support).dag
        return graph

    # --------------------------------------------------------------------- JSON
    def to_json(self) -> dict[str, Any]:
        """A JSON object: ``names``, ``replicates``, ``patterns`` and, per pair adjacent
        in some graph, its pattern counts (read from the pair's first variable)."""
        pairs = []
        for a, b in self.pairs():
            i, j, _ = self._pair(a, b)
            found = zip(*np.nonzero(self.counts[i, j]), strict=True)
            counts = {mark_pattern(int(p), int(q)): int(self.counts[i, j, p, q]) for p, q in found}
            pairs.append({"from": a, "to": b, "counts": counts})
        return {
            "names": list(self.names),
            "replicates": self.replicates,
            "patterns": list(self.patterns),
            "pairs": pairs,
        }

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], source: str = "edge frequencies"
    ) -> EdgeFrequencies:
        """Read :meth:`to_json`'s object.

        Raises
        ------
        DataError
            If a key is missing, a pattern unknown, or a count outside ``0..replicates``.
        """
        try:
            names = tuple(str(v) for v in data["names"])
            replicates = int(data["replicates"])
            patterns = tuple(str(p) for p in data["patterns"])
            n = len(names)
            counts = np.zeros((n, n, 4, 4), dtype=np.int64)
            for pair in data["pairs"]:
                i, j = names.index(pair["from"]), names.index(pair["to"])
                for pattern, count in pair["counts"].items():
                    p, q = _PATTERN_MARKS[pattern]
                    counts[min(i, j), max(i, j), *((p, q) if i < j else (q, p))] = int(count)
        except (KeyError, ValueError, TypeError) as exc:
            raise DataError(f"{source} is not an edge-frequency object ({exc!r})") from None
        if replicates < 1 or (counts.sum(axis=(2, 3)) > replicates).any() or (counts < 0).any():
            raise DataError(f"{source}: counts must lie in 0..replicates ({replicates})")
        return cls(names, replicates, counts, patterns)


def _listed(counts: NDArray[np.int64], patterns: Iterable[str]) -> tuple[str, ...]:
    """``patterns`` and, after them in :data:`ALL_PATTERNS` order, every other pattern
    some graph holds (read either way: ``<-o`` is listed with ``o->``)."""
    seen = set()
    for p, q in zip(*np.nonzero(counts.sum(axis=(0, 1))), strict=True):
        pattern = mark_pattern(int(p), int(q))
        seen.update({pattern, _flipped(pattern)})
    listed = list(dict.fromkeys(patterns))
    return tuple(listed + [p for p in ALL_PATTERNS if p in seen and p not in listed])


def _most_frequent(counts: NDArray[np.int64]) -> tuple[int, int]:
    """The marks ``(p, q)`` of the most frequent pattern in a ``(4, 4)`` count table;
    a tie goes to more circles, then to the first in :data:`ALL_PATTERNS`."""
    found = [(int(p), int(q)) for p, q in zip(*np.nonzero(counts), strict=True)]
    return max(
        found,
        key=lambda m: (
            counts[m],
            (m[0] == CIRCLE) + (m[1] == CIRCLE),
            -ALL_PATTERNS.index(mark_pattern(*m)),
        ),
    )


def site_contradictions(consensus: Graph, local: Graph) -> int:
    """How many pairs of ``local``'s variables (those the consensus has too) are
    adjacent in one graph and not in the other: a site's disagreements with the
    consensus's adjacencies (marks not counted)."""
    shared = [v for v in local.names if v in consensus]
    if len(shared) < 2:
        return 0
    ours = consensus.restrict(shared).adjacency()
    theirs = local.restrict(shared).adjacency()
    return int(np.triu(ours != theirs, 1).sum())
