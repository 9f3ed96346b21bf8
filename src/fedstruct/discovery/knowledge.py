"""Background knowledge for PC, FCI and RFCI: tiers, forbidden and required edges.

A :class:`Knowledge` holds what a user knows before looking at data, by variable name:

``tiers``
    Ordered lists of variables (e.g. ``[["age", "sex"], ["diagnosis"], ["treatment"]]``):
    a variable of a later tier is not a cause of one in an earlier tier, directly or
    through other variables (it is not an *ancestor* of it; a time order says this).
    Variables of one tier, and variables in no tier, are unconstrained.
``forbidden``
    Directed pairs ``[x, y]``: ``x`` is not a cause of ``y``, directly or indirectly
    (``x`` is not an ancestor of ``y``).
``required``
    Directed pairs ``[x, y]``: ``x`` is a direct cause of ``y`` (an edge ``x -> y`` of
    the causal DAG between two observed variables).
``forbidden_adjacent``
    Unordered pairs ``[x, y]``: ``x`` and ``y`` are not adjacent in the graph learned
    (some set of observed variables separates them: no direct effect either way and,
    for FCI and RFCI, no latent confounder or other inducing path between them).

The file form is JSON or YAML with these four keys (each optional)::

    {"tiers": [["age", "sex"], ["diagnosis"]],
     "forbidden": [["treatment", "age"]],
     "required": [["diagnosis", "treatment"]],
     "forbidden_adjacent": [["sex", "treatment"]]}

:meth:`Knowledge.read` reads it (:mod:`fedstruct.files`: a regular file of bounded
size, plain data only, no object can be built, no key given twice, no YAML alias,
bounded nesting), :meth:`Knowledge.write` writes the JSON form, and
:meth:`Knowledge.resolve` checks it against the variables of a data set and returns
the index form the learners use (:class:`KnowledgeRules`). Every bad input is one
:class:`~fedstruct.errors.KnowledgeError` (or
:class:`~fedstruct.errors.UnknownVariableError` for a name that is not a variable)
whose message names the entry. What the learners do with it: docs/knowledge.md and
:mod:`fedstruct.discovery.background`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fedstruct.constraints import Constraint
from fedstruct.errors import (
    ConfigError,
    KnowledgeError,
    UnknownVariableError,
    unknown_choice_message,
)
from fedstruct.files import parse_json, parse_yaml, read_text
from fedstruct.graphs.graph import ARROW, NONE, TAIL, Graph, find_cycle, reachable

__all__ = [
    "KEYS",
    "KNOWLEDGE_FILE",
    "POSSIBLE_DSEP",
    "Knowledge",
    "KnowledgeRules",
    "KnowledgeSetting",
    "as_rules",
    "check_graph",
    "load_knowledge",
    "violations",
]

#: The file a run saves its knowledge in (``fedstruct show`` reads it).
KNOWLEDGE_FILE = "knowledge.json"

#: The suffixes of a knowledge file (JSON or YAML).
SUFFIXES = (".json", ".yaml", ".yml")

#: The keys of a knowledge file, in the order they are written.
KEYS: tuple[str, ...] = ("tiers", "forbidden", "required", "forbidden_adjacent")

Pair = tuple[str, str]

#: ``prune_sets="possible_dsep"``: prune only the candidates drawn from Possible-D-SEP
#: (FCI's step 3; :meth:`KnowledgeRules.pool`).
POSSIBLE_DSEP = "possible_dsep"

#: The values of ``prune_sets``: no pruning, pruning everywhere, or only Possible-D-SEP's.
Prune = bool | str


@dataclass(frozen=True)
class Knowledge:
    """Background knowledge by variable name (module docstring).

    Build it directly, from a mapping (:meth:`from_dict`) or from a file
    (:meth:`read`); the types are checked on construction, the names and the
    consistency when it meets the variables (:meth:`resolve`).
    """

    tiers: tuple[tuple[str, ...], ...] = ()
    forbidden: tuple[Pair, ...] = ()
    required: tuple[Pair, ...] = ()
    forbidden_adjacent: tuple[Pair, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "tiers", _tiers(self.tiers))
        for key in KEYS[1:]:
            object.__setattr__(self, key, _pairs(getattr(self, key), key))

    # ------------------------------------------------------------------ files
    @classmethod
    def from_dict(cls, data: object, where: str = "knowledge") -> Knowledge:
        """Knowledge from a mapping with the keys of :data:`KEYS` (each optional).

        Raises
        ------
        KnowledgeError
            If ``data`` is not a mapping, has another key, or a value of a wrong type.
        """
        if not isinstance(data, Mapping):
            raise KnowledgeError(
                f"{where}: expected a mapping with the keys {list(KEYS)}, got {type(data).__name__}"
            )
        unknown = sorted(str(k) for k in data if k not in KEYS)
        if unknown:
            raise KnowledgeError(f"{where}: unknown key(s) {unknown}; the keys are {list(KEYS)}")
        try:
            return cls(**{k: data[k] for k in KEYS if k in data and data[k] is not None})
        except KnowledgeError as err:
            raise KnowledgeError(f"{where}: {err}") from None

    @classmethod
    def read(cls, path: str | Path) -> Knowledge:
        """Read a knowledge file: JSON (``.json``) or YAML (``.yaml``, ``.yml``).

        Raises
        ------
        KnowledgeError
            If the file is missing, not readable as its format, or not valid knowledge.
        """
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in SUFFIXES:
            raise KnowledgeError(_suffix_problem(path))
        where = f"knowledge file {path}"
        text = read_text(path, "knowledge file", error=KnowledgeError)
        parse = parse_json if suffix == ".json" else parse_yaml
        return cls.from_dict(parse(text, where, error=KnowledgeError), where=where)

    def to_dict(self) -> dict[str, list[list[str]]]:
        """The JSON form: every key of :data:`KEYS`, lists of lists of names."""
        return {key: [list(item) for item in getattr(self, key)] for key in KEYS}

    def write(self, path: str | Path) -> Path:
        """Write the JSON form to ``path`` (e.g. a run's knowledge.json); return it."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        return path

    @property
    def is_empty(self) -> bool:
        """``True`` if nothing is stated."""
        return not any(getattr(self, key) for key in KEYS)

    def names(self) -> set[str]:
        """Every variable name the knowledge mentions."""
        out = {n for tier in self.tiers for n in tier}
        for key in KEYS[1:]:
            out.update(n for pair in getattr(self, key) for n in pair)
        return out

    def restrict(self, names: Sequence[str]) -> Knowledge:
        """The knowledge a learner over ``names`` only (a site's variables) may use.

        Tiers keep their members among ``names`` (empty tiers go); ``forbidden`` and
        ``required`` pairs are kept when both names are among ``names``: ancestry and
        direct edges between two variables do not depend on which others are observed.
        ``forbidden_adjacent`` pairs are all left out: a pair separated only by a
        variable missing from ``names`` is adjacent in the MAG over ``names``.
        """
        keep = set(names)
        tiers = [[n for n in tier if n in keep] for tier in self.tiers]
        return Knowledge(
            tiers=tuple(tuple(tier) for tier in tiers if tier),
            forbidden=tuple(p for p in self.forbidden if set(p) <= keep),
            required=tuple(p for p in self.required if set(p) <= keep),
        )

    def within(self, names: Sequence[str]) -> Knowledge:
        """The statements between two of ``names`` (tiers keep their members among
        ``names``), ``forbidden_adjacent`` included: what a graph over ``names`` that
        stands for the whole federation's variables (a server's merged graph, a graph
        given to a method) must respect. Unlike :meth:`restrict`, for one site's."""
        keep = set(names)
        tiers = (tuple(n for n in tier if n in keep) for tier in self.tiers)
        pairs = {key: tuple(p for p in getattr(self, key) if set(p) <= keep) for key in KEYS[1:]}
        return Knowledge(tiers=tuple(t for t in tiers if t), **pairs)

    def summary(self) -> str:
        """One line: how many statements of each kind."""
        return ", ".join(f"{len(getattr(self, key))} {key}" for key in KEYS)

    # ------------------------------------------------------------ validation
    def resolve(self, variables: Sequence[str]) -> KnowledgeRules:
        """Check the knowledge against ``variables`` and return its index form.

        Raises
        ------
        UnknownVariableError
            If a name is not one of ``variables``.
        KnowledgeError
            For a contradiction: a variable in two tiers, a cycle among the required
            edges, a required edge into an earlier tier, a required edge (or a chain
            of required edges) ``x -> ... -> y`` with ``[x, y]`` forbidden, or a
            required edge between a ``forbidden_adjacent`` pair.
        """
        index = {name: k for k, name in enumerate(variables)}
        self._check_names(index, variables)
        d = len(variables)
        tier = np.full(d, -1, dtype=np.int64)
        for t, members in enumerate(self.tiers):
            for name in members:
                if tier[index[name]] >= 0:
                    raise KnowledgeError(
                        f"knowledge: {name!r} is in tier {int(tier[index[name]]) + 1} and "
                        f"tier {t + 1}; list each variable in one tier only"
                    )
                tier[index[name]] = t
        required = _matrix(d, self.required, index)
        not_ancestor = _matrix(d, self.forbidden, index)
        tiered = tier >= 0
        not_ancestor |= tiered[:, None] & tiered[None, :] & (tier[:, None] > tier[None, :])
        apart = _matrix(d, self.forbidden_adjacent, index)
        apart |= apart.T
        _check_consistent(variables, required, not_ancestor, apart, tier)
        return KnowledgeRules(tuple(variables), tier, required, not_ancestor, apart)

    def _check_names(self, index: Mapping[str, int], variables: Sequence[str]) -> None:
        for key in KEYS:
            for item in getattr(self, key):
                for name in item:
                    if name not in index:
                        unknown = unknown_choice_message("variable", name, variables, suggest=True)
                        raise UnknownVariableError(f"knowledge: {key} names an {unknown}")


@dataclass(frozen=True, eq=False)
class KnowledgeRules:
    """Knowledge resolved against ``names`` (:meth:`Knowledge.resolve`): boolean matrices.

    Attributes
    ----------
    names
        The variables, in index order.
    tier
        Each variable's tier (0 first), ``-1`` if it is in none.
    required
        ``[i, j]``: ``i -> j`` is required (a direct cause).
    not_ancestor
        ``[i, j]``: ``i`` is not an ancestor of ``j`` (from the tiers and ``forbidden``).
    apart
        Symmetric ``[i, j]``: the pair is ``forbidden_adjacent``.
    prune_sets
        Where to condition only on the pair's possible ancestors (:meth:`pool`):
        nowhere (``False``), everywhere (``True``), or only among the candidates
        drawn from Possible-D-SEP (:data:`POSSIBLE_DSEP`).
    """

    names: tuple[str, ...]
    tier: NDArray[np.int64]
    required: NDArray[np.bool_]
    not_ancestor: NDArray[np.bool_]
    apart: NDArray[np.bool_]
    prune_sets: Prune = False
    _adjacent: NDArray[np.bool_] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_adjacent", self.required | self.required.T)

    @property
    def fixed(self) -> NDArray[np.bool_]:
        """Symmetric ``[i, j]``: the pair is adjacent by a required edge (never tested)."""
        return self._adjacent

    def removed(self, latent_free: bool) -> NDArray[np.bool_]:
        """Symmetric ``[i, j]``: the pair is not adjacent by knowledge (never tested).

        ``forbidden_adjacent`` pairs; with ``latent_free`` (PC: no latent confounder)
        also the pairs of which neither may be an ancestor of the other (in a DAG an
        edge makes one of them the other's parent). Without it (FCI, RFCI) such a pair
        may still share a latent cause (``x <-> y``) and stays.
        """
        out = self.apart.copy()
        if latent_free:
            out |= self.not_ancestor & self.not_ancestor.T
        return out

    def pool(self, x: int, y: int, *, possible_dsep: bool = False) -> NDArray[np.bool_]:
        """The variables a separating set of ``x`` and ``y`` may draw on: all others, or,
        where :attr:`prune_sets` prunes, those that may be an ancestor of ``x`` or of ``y``.

        ``possible_dsep``: the candidates come from Possible-D-SEP (FCI's step 3 and
        the separating-set search of the pairs knowledge removed), pruned also with
        ``prune_sets=`` :data:`POSSIBLE_DSEP`; else from the adjacencies, pruned only
        with ``prune_sets=True``.

        Some separating set of a non-adjacent pair consists of ancestors of the pair
        (in a DAG, the parents of one of them; in a MAG, D-SEP(x, y) ⊆ An({x, y}),
        and D-SEP(x, y) ⊆ Possible-D-SEP(x): Spirtes et al. 2000, §6.7), so dropping
        the others from the candidates keeps every separation a perfect test would
        find (docs/knowledge.md).
        """
        prune = self.prune_sets is True or (possible_dsep and self.prune_sets == POSSIBLE_DSEP)
        if prune:
            out = ~(self.not_ancestor[:, x] & self.not_ancestor[:, y])
        else:
            out = np.ones(len(self.names), dtype=bool)
        out[[x, y]] = False
        return out


class KnowledgeSetting(Constraint):
    """A method's ``knowledge`` setting, checked when its config is built
    (:func:`~fedstruct.constraints.check_fields`): ``None``, a :class:`Knowledge`, its
    mapping form (valid, :meth:`Knowledge.from_dict`), or the path of a ``.json``,
    ``.yaml`` or ``.yml`` file. The file itself is read when the method starts to fit
    (:func:`load_knowledge`: a missing file is one line there, before any round): a
    fitted model's saved parameters keep the path, and loading the model elsewhere
    (``fedstruct.load``) must not need the file."""

    allow_none = True

    def accepts(self, value: Any) -> bool:
        return self.problem(value) is None

    def describe(self) -> str:
        return "a Knowledge, its mapping form or a knowledge file's path"

    @staticmethod
    def problem(value: Any) -> str | None:
        """Why ``value`` is not a knowledge setting (``None``: it is one)."""
        if isinstance(value, Knowledge):
            return None
        if isinstance(value, Mapping):
            try:
                Knowledge.from_dict(value, where="its mapping")
            except KnowledgeError as err:
                return str(err)
            return None
        if isinstance(value, str | Path):
            suffix = Path(value).suffix.lower()
            return None if suffix in SUFFIXES else _suffix_problem(Path(value))
        return (
            f"must be a Knowledge (Knowledge.read(path)), its mapping form, a knowledge "
            f"file's path or None, got {type(value).__name__} {value!r}"
        )

    def message(self, what: str, value: Any) -> str:
        problem = self.problem(value) or ""
        return f"{what} {problem}" if problem.startswith("must") else f"{what}: {problem}"


def as_rules(
    knowledge: Knowledge | KnowledgeRules | None, names: Sequence[str], prune_sets: Prune = False
) -> KnowledgeRules | None:
    """``knowledge`` resolved against ``names`` (with :attr:`KnowledgeRules.prune_sets`);
    ``None`` for no (or empty) knowledge.

    Raises
    ------
    ConfigError
        For a ``prune_sets`` other than ``False``, ``True`` or :data:`POSSIBLE_DSEP`.
    KnowledgeError, UnknownVariableError
        As :meth:`Knowledge.resolve`; a :class:`KnowledgeRules` of other variables.
    """
    if not isinstance(prune_sets, bool) and prune_sets != POSSIBLE_DSEP:
        raise ConfigError(
            f"prune_sets must be False, True or {POSSIBLE_DSEP!r}, got {prune_sets!r}"
        )
    if knowledge is None:
        return None
    if isinstance(knowledge, KnowledgeRules):
        if knowledge.names != tuple(names):
            raise KnowledgeError(
                "knowledge was resolved for other variables; pass the Knowledge object "
                "instead of its rules"
            )
        return replace(knowledge, prune_sets=prune_sets)
    if not isinstance(knowledge, Knowledge):
        raise KnowledgeError(
            f"knowledge must be a fedstruct Knowledge (Knowledge.read(path)) or None, "
            f"got {type(knowledge).__name__}"
        )
    if knowledge.is_empty:
        return None
    return replace(knowledge.resolve(names), prune_sets=prune_sets)


def load_knowledge(value: Knowledge | Mapping[str, Any] | str | Path | None) -> Knowledge | None:
    """The knowledge a method's ``knowledge`` setting gives: a :class:`Knowledge`, its
    mapping form (as a run's config.json records it), a file path, or ``None``.

    Raises
    ------
    KnowledgeError
        For a file or mapping that is not valid knowledge, or another type.
    """
    if value is None or isinstance(value, Knowledge):
        return value
    if isinstance(value, str | Path):
        return Knowledge.read(value)
    if isinstance(value, Mapping):
        return Knowledge.from_dict(value)
    raise KnowledgeError(
        f"knowledge must be a Knowledge, a file path or None, got {type(value).__name__}"
    )


def violations(graph: Graph, knowledge: Knowledge) -> list[str]:
    """What ``graph`` asserts against ``knowledge``, one phrase per violation.

    The statements over two of the graph's variables count (tiers keep their
    members in the graph). A mark counts by its MAG meaning (docs/knowledge.md): a
    tail at ``x`` with an arrowhead at ``y`` says ``x`` is an ancestor of ``y``, and so
    does a chain of such edges; an arrowhead at ``x`` says it is not one of ``y``.
    Circles and undirected CPDAG edges assert neither. Violations: ``x`` an ancestor of
    ``y`` where the tiers or ``forbidden`` say it is not (by an edge or a directed
    path), an edge between a ``forbidden_adjacent`` pair, and a required ``x -> y``
    missing or with an arrowhead at ``x`` or a tail at ``y`` (``y`` an ancestor).
    """
    inner = knowledge.within(graph.names)
    if inner.is_empty:
        return []
    rules = inner.resolve(graph.names)
    m, names = graph.marks, graph.names
    directed = (m == ARROW) & (m.T == TAIL)  # [x, y]: x --> y
    out = []
    for x, y in np.argwhere(rules.not_ancestor).tolist():
        if directed[x, y]:
            out.append(f"{names[x]} -> {names[y]} ({_why(inner, rules, x, y)})")
        elif x != y and reachable(directed, [x])[y]:
            out.append(
                f"{names[x]} -> ... -> {names[y]}, a directed path ({_why(inner, rules, x, y)})"
            )
    for x, y in np.argwhere(np.triu(rules.apart)).tolist():
        if m[x, y] != NONE:
            out.append(f"{names[x]} - {names[y]} (forbidden_adjacent)")
    for x, y in np.argwhere(rules.required).tolist():
        if m[x, y] == NONE:
            out.append(f"{names[x]} -> {names[y]} missing (required)")
        elif m[y, x] == ARROW or m[x, y] == TAIL:
            out.append(
                f"{graph.edge(names[x], names[y])} against the required {names[x]} -> {names[y]}"
            )
    return out


def check_graph(graph: Graph, knowledge: Knowledge | None, where: str) -> Graph:
    """``graph`` if it respects ``knowledge`` (:func:`violations`); ``None`` knowledge:
    no check.

    Raises
    ------
    KnowledgeError
        One line naming ``where`` and every violating edge.
    """
    found = [] if knowledge is None else violations(graph, knowledge)
    if found:
        raise KnowledgeError(
            f"{where} contradicts the background knowledge: {'; '.join(found)}; fix the "
            "graph or the knowledge"
        )
    return graph


def _why(knowledge: Knowledge, rules: KnowledgeRules, x: int, y: int) -> str:
    """Which statement says ``x`` is not an ancestor of ``y``."""
    if (rules.names[x], rules.names[y]) in knowledge.forbidden:
        return "forbidden"
    return f"tier {int(rules.tier[x]) + 1} into the earlier tier {int(rules.tier[y]) + 1}"


# --------------------------------------------------------------------- helpers
def _suffix_problem(path: Path) -> str:
    return (
        f"knowledge file {path}: unknown format {path.suffix.lower() or '(no suffix)'!r}; "
        "name it .json, .yaml or .yml"
    )


def _name(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise KnowledgeError(f"{where} must be a variable name (a non-empty string), got {value!r}")
    return value


def _list(value: object, where: str) -> list[Any]:
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise KnowledgeError(f"{where} must be a list, got {type(value).__name__} {value!r}")
    return list(value)


def _tiers(value: object) -> tuple[tuple[str, ...], ...]:
    out = []
    for t, tier in enumerate(_list(value, "tiers")):
        members = _list(tier, f"tiers[{t}]")
        if not members:
            raise KnowledgeError(
                f"tiers[{t}] is empty; list at least one variable in each tier, or drop it"
            )
        out.append(tuple(_name(v, f"tiers[{t}][{k}]") for k, v in enumerate(members)))
    return tuple(out)


def _pairs(value: object, key: str) -> tuple[Pair, ...]:
    out = []
    for k, item in enumerate(_list(value, key)):
        pair = _list(item, f"{key}[{k}]")
        if len(pair) != 2:
            raise KnowledgeError(f"{key}[{k}] must be a pair [x, y] of two names, got {item!r}")
        a, b = (_name(v, f"{key}[{k}]") for v in pair)
        if a == b:
            raise KnowledgeError(f"{key}[{k}] pairs {a!r} with itself; give two different names")
        out.append((a, b))
    return tuple(out)


def _matrix(d: int, pairs: Sequence[Pair], index: Mapping[str, int]) -> NDArray[np.bool_]:
    out = np.zeros((d, d), dtype=bool)
    for a, b in pairs:
        out[index[a], index[b]] = True
    return out


def _check_consistent(
    names: Sequence[str],
    required: NDArray[np.bool_],
    not_ancestor: NDArray[np.bool_],
    apart: NDArray[np.bool_],
    tier: NDArray[np.int64],
) -> None:
    """Raise :class:`KnowledgeError` for the first contradiction (:meth:`Knowledge.resolve`)."""
    cycle = find_cycle(required)
    if cycle is not None:
        shown = " -> ".join(names[k] for k in [*cycle, cycle[0]])
        raise KnowledgeError(
            f"knowledge: the required edges form a cycle {shown}; a causal graph has none"
        )
    for i, j in np.argwhere(required).tolist():
        a, b = names[i], names[j]
        if apart[i, j]:
            raise KnowledgeError(
                f"knowledge: required edge {a} -> {b} contradicts forbidden_adjacent [{a}, {b}]"
            )
        if tier[i] >= 0 and tier[j] >= 0 and tier[i] > tier[j]:
            raise KnowledgeError(
                f"knowledge: required edge {a} -> {b} goes from tier {tier[i] + 1} into the "
                f"earlier tier {tier[j] + 1}"
            )
    for i in range(len(names)):
        below = reachable(required, [i])  # i and what required chains make its descendants
        below[i] = False
        clash = np.flatnonzero(below & not_ancestor[i])
        if clash.size:
            j = int(clash[0])
            raise KnowledgeError(
                f"knowledge: required edges make {names[i]} a cause of {names[j]}, but "
                f"[{names[i]}, {names[j]}] is forbidden (or the tiers put {names[j]} earlier)"
            )
