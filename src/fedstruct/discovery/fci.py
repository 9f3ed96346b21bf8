"""FCI: the Fast Causal Inference algorithm, without selection bias.

Spirtes, Glymour & Scheines (2000), *Causation, Prediction, and Search*, 2nd ed.,
§6.7; orientation rules of Zhang (2008), AIJ 172, with R5-R7 left out (no selection
bias; FedCDnv §3 assumes none):

1. adjacency search (:func:`~fedstruct.discovery.skeleton.adjacency_search`),
   every edge ``o-o``;
2. R0: unshielded colliders from the separating sets;
3. possible-D-SEP edge removal
   (:func:`~fedstruct.discovery.pds.remove_by_possible_dsep`);
4. every remaining edge back to ``o-o``, R0 again with all separating sets;
5. R1-R4 and R8-R10 to a fixpoint (R4 reads the separating sets).

With a perfect CI oracle the output is the PAG of the true MAG (Zhang 2008, §4),
i.e. :func:`fedstruct.graphs.pag.dag_to_pag`.

With background knowledge (``knowledge=``; docs/knowledge.md): steps 1 and 3 skip
what it settles (pairs ``forbidden_adjacent`` are never tested, required pairs never
removed; step 3's candidates from Possible-D-SEP are the possible ancestors of the pair by
default, step 1's too with ``prune_sets=True``); after step 3 the pairs it
removed get a separating set where a rule needs one
(:func:`~fedstruct.discovery.background.separate_removed_pairs`); after step 4's R0 the
marks it implies are set (:func:`~fedstruct.discovery.background.orient_pag`: an
arrowhead at a variable that may not be an ancestor of the other end, ``-->`` for a
required edge; never a tail from the tiers), and step 5 runs on them, as Andrews,
Spirtes & Cooper (2020) do for tiered knowledge.
"""

from __future__ import annotations

import numpy as np

from fedstruct.discovery.background import PHASE, orient_pag, separate_removed_pairs
from fedstruct.discovery.citest import CITest
from fedstruct.discovery.dataset import DataLike
from fedstruct.discovery.knowledge import POSSIBLE_DSEP, Knowledge, Prune
from fedstruct.discovery.pds import AUTO, auto_pds_depth, remove_by_possible_dsep
from fedstruct.discovery.result import LocalResult
from fedstruct.discovery.search import check_alpha, start_search
from fedstruct.discovery.skeleton import check_depth
from fedstruct.errors import ConfigError
from fedstruct.graphs.graph import CIRCLE, NONE
from fedstruct.graphs.orientation import apply_rules, orient_colliders

# check_alpha now lives in search.py; still exported here for existing imports.
__all__ = ["check_alpha", "circle_marks", "fci"]


def circle_marks(adjacency: np.ndarray) -> np.ndarray:
    """A writable mark matrix with ``o-o`` on every edge of a boolean adjacency matrix."""
    return np.where(adjacency, CIRCLE, NONE).astype(np.int8)


def fci(
    data: CITest | DataLike,
    *,
    alpha: float = 0.05,
    test: str = "auto",
    depth: int | None = None,
    pds_depth: int | str | None = AUTO,
    max_path_length: int | None = None,
    possible_dsep: bool = True,
    biconnected: bool = True,
    stable: bool = True,
    workers: int | None = None,
    progress: str | None = None,
    knowledge: Knowledge | None = None,
    prune_sets: Prune = POSSIBLE_DSEP,
) -> LocalResult:
    """Learn a PAG with FCI (module docstring).

    ``tests_by_phase`` counts the tests of step 1 under ``"adjacency"``, those of
    step 3 (when run) under ``"possible_dsep"`` and, with knowledge, the separating
    sets searched for the pairs it removed under ``"knowledge_sepsets"``.

    Parameters
    ----------
    data, alpha, test, stable, progress
        The data (or a :class:`CITest`, reused with its cache) and the adjacency
        search's options, as in
        :func:`~fedstruct.discovery.search.start_search`.
    depth
        Largest conditioning set in every phase; ``None`` (default) or ``-1``: none.
    pds_depth
        Largest conditioning set in the possible-D-SEP phase: ``"auto"`` (default) the
        size that covers 99 % of the adjacency search's separating sets
        (:func:`~fedstruct.discovery.pds.auto_pds_depth`, never above
        ``depth``); ``None``: ``depth`` (unbounded when ``depth`` is ``None``: FCI's
        complete search, exponential on large Possible-D-SEP sets); or an integer.
    max_path_length
        Longest walk defining Possible-D-SEP; ``None`` (default): none.
    possible_dsep
        Run step 3 (default). Without it the output is FCI's "skeleton-only" variant.
    biconnected
        Restrict Possible-D-SEP to the edge's biconnected component (default): far
        fewer tests and no separation lost (see
        :mod:`~fedstruct.discovery.pds`); ``False`` is pcalg's default.
    workers
        Processes for the possible-D-SEP phase's edge searches; ``None`` (default): the
        cores this process may use, started only when the phase is large (the result
        is the same for every value; see
        :func:`~fedstruct.discovery.pds.remove_by_possible_dsep`).
    knowledge
        Background knowledge (:class:`~fedstruct.discovery.knowledge.Knowledge`,
        module docstring); ``None`` (default): none, the same run as before it existed.
    prune_sets
        With ``knowledge``, where to condition each pair only on the variables that
        may be its ancestors (fewer tests; the same result with a perfect test):
        ``"possible_dsep"`` (default) in step 3 only, among Possible-D-SEP's
        candidates; ``True`` in every phase (on a sample it may keep edges a wider
        adjacency search removes); ``False`` nowhere. Measured: docs/knowledge.md.

    Returns
    -------
    LocalResult
        The PAG, separating sets, per-pair p-values and the CI test.

    Raises
    ------
    ConfigError
        For an out-of-range ``pds_depth`` or ``max_path_length``, and as
        :func:`~fedstruct.discovery.search.start_search`.
    DataError, NonFiniteDataError
        As :func:`~fedstruct.discovery.search.start_search`.
    KnowledgeError, UnknownVariableError
        For knowledge that contradicts itself or names another variable.
    """
    _check_possible_dsep_options(pds_depth, max_path_length)
    search = start_search(
        data,
        alpha=alpha,
        test=test,
        depth=depth,
        stable=stable,
        progress=progress,
        knowledge=knowledge,
        prune_sets=prune_sets,
    )
    evidence = search.evidence
    rules = search.knowledge
    marks = circle_marks(search.skeleton)
    orient_colliders(marks, evidence.sepset_contains)
    first_marks = marks

    if possible_dsep:
        if pds_depth == AUTO:
            pds_depth = min(auto_pds_depth(evidence.sepsets.values()), check_depth(depth))
        evidence.phase("possible_dsep")
        adjacency = remove_by_possible_dsep(
            evidence,
            marks,
            depth=depth if pds_depth is None else pds_depth,  # type: ignore[arg-type]
            max_path_length=max_path_length,
            biconnected=biconnected,
            searched_depth=depth,
            workers=workers,
            knowledge=rules,
        )
        marks = circle_marks(adjacency)
        orient_colliders(marks, evidence.sepset_contains)

    if rules is not None:
        evidence.phase(PHASE)
        adjacency = marks != NONE
        separate_removed_pairs(
            evidence,
            adjacency,
            rules,
            latent_free=False,
            depth=depth,
            pds_marks=first_marks,
            pds_depth=depth if pds_depth is None or not possible_dsep else pds_depth,  # type: ignore[arg-type]
            max_path_length=max_path_length,
        )
        marks = circle_marks(adjacency)
        orient_colliders(marks, evidence.sepset_contains)
        orient_pag(marks, rules)
    apply_rules(marks, evidence.sepset_contains)
    return search.result("fci", marks)


def _check_possible_dsep_options(pds_depth: int | str | None, max_path_length: int | None) -> None:
    """Raise :class:`ConfigError` for a ``pds_depth`` or ``max_path_length`` out of range."""
    if isinstance(pds_depth, str) and pds_depth != AUTO:
        raise ConfigError(
            f"pds_depth must be 'auto', None, -1 (unlimited) or an integer >= 0, got {pds_depth!r}"
        )
    if pds_depth != AUTO:
        check_depth(pds_depth, "pds_depth")  # type: ignore[arg-type]
    check_depth(max_path_length, "max_path_length")
