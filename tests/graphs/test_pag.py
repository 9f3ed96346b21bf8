"""DAG -> MAG -> PAG: textbook PAGs and a brute-force soundness/completeness check."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from fedstruct.errors import ConfigError, CyclicGraphError, GraphError, UnknownVariableError
from fedstruct.graphs.graph import ARROW, CIRCLE, NONE, TAIL, Graph
from fedstruct.graphs.orientation import RULES, apply_rules, orient_colliders
from fedstruct.graphs.pag import (
    dag_member,
    dag_to_mag,
    dag_to_pag,
    is_ancestral,
    is_maximal,
    mag_to_pag,
    pag_to_mag,
    require_mag,
)
from fedstruct.graphs.separation import SeparationOracle, ancestor_matrix


def _edges(graph: Graph) -> set[str]:
    return {str(e) for e in graph.edges()}


def _same(graph: Graph, edges: list[str]) -> bool:
    """Whether ``graph`` has exactly these edges (written in any direction)."""
    return graph == Graph.from_edges(graph.names, edges)


def _pag_with_counts(mag: Graph) -> tuple[Graph, dict[str, int]]:
    """mag_to_pag, rebuilt from the public rule functions to see which rules fired."""
    anc = ancestor_matrix(mag)

    def sepset_contains(x: int, y: int, z: int) -> bool:
        return bool(anc[z, x] or anc[z, y])

    marks = np.where(mag.marks != NONE, CIRCLE, NONE).astype(np.int8)
    orient_colliders(marks, sepset_contains)
    counts = apply_rules(marks, sepset_contains)
    pag = mag.with_marks(marks)
    assert pag == mag_to_pag(mag)
    return pag, counts


# ------------------------------------------------------------------ textbook PAGs
def test_collider_chain_and_y_structure() -> None:
    collider = Graph.from_edges("ABC", [("A", "C"), ("B", "C")])
    assert _same(dag_to_pag(collider), ["A o-> C", "B o-> C"])
    chain = Graph.from_edges("ABC", [("A", "B"), ("B", "C")])
    assert _same(dag_to_pag(chain), ["A o-o B", "B o-o C"])
    y_structure = Graph.from_edges("ABCD", [("A", "C"), ("B", "C"), ("C", "D")])
    assert _same(dag_to_pag(y_structure), ["A o-> C", "B o-> C", "C --> D"])


def test_latent_confounder() -> None:
    dag = Graph.from_edges(
        ["A", "B", "X", "Y", "L"], [("A", "X"), ("L", "X"), ("L", "Y"), ("B", "Y")]
    )
    mag = dag_to_mag(dag, ["L"])
    assert mag.names == ("A", "B", "X", "Y")
    assert _same(mag, ["A --> X", "B --> Y", "X <-> Y"])
    assert _same(dag_to_pag(dag, ["L"]), ["A o-> X", "B o-> Y", "X <-> Y"])


def test_inducing_path_adds_an_edge() -> None:
    # A -> B <- L -> C and B -> C: A and C are not adjacent in the DAG, but A -> B <- L -> C
    # is an inducing path relative to {L}, so they are adjacent in the MAG (A ancestor of C).
    dag = Graph.from_edges(["A", "B", "C", "L"], [("A", "B"), ("L", "B"), ("L", "C"), ("B", "C")])
    assert _same(dag_to_mag(dag, "L"), ["A --> B", "B --> C", "A --> C"])
    # Without latents the MAG is the DAG itself.
    assert dag_to_mag(dag, []) == dag


def test_discriminating_path_non_collider() -> None:
    # D -> A <- L -> B, A -> C <- B with L latent: MAG D -> A <-> B, A -> C, B -> C.
    # R1/R2 give A -> C and B o-> C; the discriminating path <D, A, B, C> (R4) with B in
    # the separating set of D and C gives B -> C.
    dag = Graph.from_edges(
        ["D", "A", "B", "C", "L"], [("D", "A"), ("L", "A"), ("L", "B"), ("A", "C"), ("B", "C")]
    )
    mag = dag_to_mag(dag, ["L"])
    assert _same(mag, ["D --> A", "A <-> B", "A --> C", "B --> C"])
    pag, counts = _pag_with_counts(mag)
    assert _same(pag, ["D o-> A", "B o-> A", "A --> C", "B --> C"])
    assert counts["R4"] == 1


def test_discriminating_path_collider() -> None:
    # D -> A <- L1 -> B <- L2 -> C, A -> C: MAG D -> A <-> B <-> C, A -> C; R4 with B not
    # in the separating set of D and C gives A <-> B <-> C.
    dag = Graph.from_edges(
        ["D", "A", "B", "C", "L1", "L2"],
        [("D", "A"), ("L1", "A"), ("L1", "B"), ("A", "C"), ("L2", "B"), ("L2", "C")],
    )
    pag, counts = _pag_with_counts(dag_to_mag(dag, ["L1", "L2"]))
    assert _same(pag, ["D o-> A", "A <-> B", "B <-> C", "A --> C"])
    assert counts["R4"] == 1


def test_rule_9() -> None:
    # a -> b -> t -> g <- a: R0 gives a o-> g <-o t, and the uncovered p.d. paths
    # <a, b, t, g> and <t, b, a, g> turn both into tails (Zhang 2008, R9).
    dag = Graph.from_edges(["a", "b", "t", "g"], [("a", "b"), ("b", "t"), ("t", "g"), ("a", "g")])
    pag, counts = _pag_with_counts(dag_to_mag(dag, []))
    assert _same(pag, ["a o-o b", "b o-o t", "t --> g", "a --> g"])
    assert counts["R9"] == 2
    assert counts["R8"] == counts["R10"] == 0


R10_DAG = [
    ("t", "a"), ("t", "x"), ("t", "c"), ("a", "x"), ("a", "b"), ("a", "c"), ("x", "b"), ("b", "c")
]  # fmt: skip
R8_DAG = [
    ("A", "C"), ("B", "C"), ("C", "D"), ("D", "E"), ("E", "F"),
    ("A", "Y"), ("B", "Y"), ("C", "Y"), ("D", "Y"), ("F", "Y"),
]  # fmt: skip


def test_rule_10() -> None:
    # R0 gives b o-> c <-o t (b, t not adjacent) and R3 a o-> c. R9 turns b o-> c and
    # t o-> c into tails (uncovered p.d. paths <b, x, t, c> and <t, x, b, c>); then R10
    # with mu = b, omega = t (not adjacent) gives a -> c. R4 does not apply.
    dag = Graph.from_edges(["a", "b", "c", "t", "x"], R10_DAG)
    pag, counts = _pag_with_counts(dag_to_mag(dag, []))
    expected = [
        "a --> c",
        "b --> c",
        "t --> c",
        "a o-o x",
        "a o-o b",
        "a o-o t",
        "x o-o b",
        "x o-o t",
    ]
    assert _same(pag, expected)
    assert counts == {"R1": 0, "R2": 0, "R3": 1, "R4": 0, "R8": 0, "R9": 2, "R10": 1}


def test_rule_8() -> None:
    # A o-> C <-o B; R1 orients C -> D -> E -> F -> Y and D -> Y; C o-> Y (arrowhead by R2)
    # becomes C -> Y by R8 since C -> D -> Y.
    dag = Graph.from_edges(list("ABCDEFY"), R8_DAG)
    pag, counts = _pag_with_counts(dag_to_mag(dag, []))
    expected = [
        "A o-> C", "B o-> C", "C --> D", "D --> E", "E --> F",
        "A o-> Y", "B o-> Y", "C --> Y", "D --> Y", "F --> Y",
    ]  # fmt: skip
    assert _same(pag, expected)
    assert counts["R8"] == 1


# ---------------------------------------------------------------- MAG validation
def test_mag_checks() -> None:
    assert is_ancestral(Graph.from_edges("ABC", [("A", "B"), "B <-> C"]))
    almost_cycle = Graph.from_edges("ABC", [("A", "B"), ("B", "C"), "A <-> C"])
    assert not is_ancestral(almost_cycle)
    with pytest.raises(GraphError, match="almost directed cycle"):
        mag_to_pag(almost_cycle)
    # A <-> B <-> C <-> D with B -> D and C -> A: the path is inducing (colliders B, C are
    # ancestors of D and A), so A and D cannot be m-separated although not adjacent.
    not_maximal = Graph.from_edges(
        "ABCD", ["A <-> B", "B <-> C", "C <-> D", ("C", "A"), ("B", "D")]
    )
    assert is_ancestral(not_maximal)
    assert not is_maximal(not_maximal)
    with pytest.raises(GraphError, match="A and D are not adjacent"):
        require_mag(not_maximal)
    with pytest.raises(GraphError, match="'A o-> B'"):
        mag_to_pag(Graph.from_edges("AB", ["A o-> B"]))
    with pytest.raises(GraphError, match="directed cycle"):
        require_mag(Graph.from_edges("ABC", [("A", "B"), ("B", "C"), ("C", "A")]))


def test_dag_to_mag_errors() -> None:
    dag = Graph.from_edges("AB", [("A", "B")])
    with pytest.raises(UnknownVariableError, match="'Z'"):
        dag_to_mag(dag, ["Z"])
    with pytest.raises(GraphError, match="non-directed edge"):
        dag_to_pag(Graph.from_edges("AB", ["A <-> B"]))
    with pytest.raises(CyclicGraphError):
        dag_to_pag(Graph.from_edges("ABC", [("A", "B"), ("B", "C"), ("C", "A")]))


def test_rule_0_and_rule_4_follow_the_sepset_callback() -> None:
    names = ["D", "A", "B", "C"]  # indices 0..3
    skeleton = Graph.from_edges(names, ["D o-o A", "A o-o B", "A o-o C", "B o-o C"])
    calls: list[tuple[int, int, int]] = []

    def collider_at_a_only(x: int, y: int, z: int) -> bool:
        calls.append((x, y, z))
        return not (z == 1 and (x, y) == (0, 2))

    marks = skeleton.marks.copy()
    assert orient_colliders(marks, collider_at_a_only) == 1
    assert sorted(calls) == [(0, 2, 1), (0, 3, 1)]  # the unshielded triples, x < y
    assert _same(skeleton.with_marks(marks), ["D o-> A", "B o-> A", "A o-o C", "B o-o C"])
    after_r0 = marks.copy()
    for b_in_sepset, expected in [
        (True, ["D o-> A", "B o-> A", "A --> C", "B --> C"]),
        (False, ["D o-> A", "A <-> B", "A --> C", "B <-> C"]),
    ]:
        calls.clear()
        marks = after_r0.copy()
        counts = apply_rules(marks, lambda x, y, z, ans=b_in_sepset: calls.append((x, y, z)) or ans)
        assert calls == [(0, 3, 2)]  # R4 asks whether B is in the sepset of D and C
        assert counts == {"R1": 1, "R2": 1, "R3": 0, "R4": 1, "R8": 0, "R9": 0, "R10": 0}
        assert _same(skeleton.with_marks(marks), expected)


def test_orientation_input_checks() -> None:
    with pytest.raises(GraphError, match="read-only"):
        apply_rules(Graph.from_edges("AB", ["A o-o B"]).marks, lambda x, y, z: False)
    with pytest.raises(GraphError, match="square"):
        orient_colliders(np.zeros((2, 3), dtype=np.int8), lambda x, y, z: False)


# ------------------------------------------------ brute-force equivalence classes
def _is_ancestral_nx(marks: np.ndarray) -> bool:
    """Independent ancestrality check with networkx (no directed or almost directed cycle)."""
    n = marks.shape[0]
    directed = nx.DiGraph()
    directed.add_nodes_from(range(n))
    directed.add_edges_from(zip(*np.nonzero((marks == ARROW) & (marks.T == TAIL)), strict=True))
    if not nx.is_directed_acyclic_graph(directed):
        return False
    for i, j in zip(*np.nonzero(np.triu((marks == ARROW) & (marks.T == ARROW), 1)), strict=True):
        if nx.has_path(directed, i, j) or nx.has_path(directed, j, i):
            return False
    return True


def _all_queries(n: int) -> list[tuple[int, int, tuple[int, ...]]]:
    """Every (i, j, Z) with i < j and Z a subset of the other nodes."""
    out = []
    for i, j in itertools.combinations(range(n), 2):
        rest = [k for k in range(n) if k not in (i, j)]
        for size in range(len(rest) + 1):
            out.extend((i, j, z) for z in itertools.combinations(rest, size))
    return out


def _same_independence_model(graph: Graph, queries: list, answers: list[bool]) -> bool:
    """Whether ``graph`` answers every m-separation query as given (brute force)."""
    oracle = SeparationOracle(graph)
    return all(
        oracle.separated(i, j, z) == ans for (i, j, z), ans in zip(queries, answers, strict=True)
    )


def _ancestral_orientations(codes: np.ndarray, pairs: list[tuple[int, int]], n: int) -> np.ndarray:
    """Vectorised: which orientation codes give an ancestral graph.

    Transitive closure of the directed part by repeated boolean squaring; ancestral =
    no directed cycle and no ``x <-> y`` with ``x`` an ancestor of ``y`` or back.
    """
    directed = np.zeros((len(codes), n, n), dtype=bool)
    bidirected = np.zeros_like(directed)
    for k, (i, j) in enumerate(pairs):
        directed[:, i, j] = codes[:, k] == 0
        directed[:, j, i] = codes[:, k] == 1
        bidirected[:, i, j] = bidirected[:, j, i] = codes[:, k] == 2
    reach = directed | np.eye(n, dtype=bool)
    for _ in range(n.bit_length()):
        r = reach.astype(np.float32)
        reach = (r @ r) > 0
    strict = reach & ~np.eye(n, dtype=bool)
    cyclic = (strict & strict.transpose(0, 2, 1)).any(axis=(1, 2))
    almost = (bidirected & (strict | strict.transpose(0, 2, 1))).any(axis=(1, 2))
    return ~cyclic & ~almost


def _equivalent_mags(mag: Graph) -> list[np.ndarray]:
    """Every MAG (edges ->, <-, <->) on the skeleton of ``mag`` that is Markov equivalent to it.

    All 3**E orientations of the skeleton are enumerated (Markov-equivalent MAGs share
    the skeleton). Two vectorised necessary conditions prune them: ancestral (no
    directed or almost directed cycle) and the same unshielded colliders (Spirtes &
    Richardson 1996). Survivors are confirmed ancestral with networkx and compared with
    ``mag`` on *every* m-separation statement by brute force. Being maximal follows from
    having the same separation statements as the maximal ``mag`` on the same skeleton.
    """
    n = mag.n_nodes
    pairs = [(i, j) for i, j in itertools.combinations(range(n), 2) if mag.marks[i, j]]
    codes = np.indices((3,) * len(pairs)).reshape(len(pairs), -1).T  # 0: i->j, 1: j->i, 2: <->
    adj = mag.adjacency()
    index = {p: k for k, p in enumerate(pairs)}

    def arrow_at(z: int, other: int) -> np.ndarray:
        i, j = min(z, other), max(z, other)
        code = codes[:, index[(i, j)]]
        return code != (0 if z == i else 1)

    keep = _ancestral_orientations(codes, pairs, n)
    for z in range(n):
        for x, y in itertools.combinations(np.flatnonzero(adj[z]).tolist(), 2):
            if adj[x, y]:
                continue
            true_collider = mag.marks[x, z] == ARROW and mag.marks[y, z] == ARROW
            keep &= (arrow_at(z, x) & arrow_at(z, y)) == true_collider
    oracle = SeparationOracle(mag)
    # Separated statements first: a non-equivalent candidate usually fails one early.
    answered = sorted(
        ((q, oracle.separated(*q)) for q in _all_queries(n)), key=lambda qa: not qa[1]
    )
    queries = [q for q, _ in answered]
    answers = [a for _, a in answered]
    out = []
    for code in codes[keep]:
        marks = np.zeros((n, n), dtype=np.int8)
        for (i, j), c in zip(pairs, code.tolist(), strict=True):
            marks[i, j], marks[j, i] = [(ARROW, TAIL), (TAIL, ARROW), (ARROW, ARROW)][c]
        assert _is_ancestral_nx(marks)
        if _same_independence_model(mag.with_marks(marks), queries, answers):
            out.append(marks)
    return out


def _expected_pag_marks(mag: Graph) -> tuple[np.ndarray, int]:
    members = _equivalent_mags(mag)
    stack = np.stack(members)
    assert any(np.array_equal(m, mag.marks) for m in members)
    unanimous = (stack == stack[0]).all(axis=0)
    return np.where(unanimous, stack[0], CIRCLE).astype(np.int8), len(members)


def _random_case(rng: np.random.Generator) -> tuple[Graph, list[str]]:
    n = int(rng.integers(6, 9))
    lower = np.tril(rng.random((n, n)) < rng.uniform(0.3, 0.5), -1)
    perm = rng.permutation(n)
    dag = Graph.from_dag_matrix([f"V{i}" for i in range(n)], lower[np.ix_(perm, perm)].T)
    n_latent = int(rng.integers(1, 3))
    # Prefer latents with two or more children: they create bidirected edges.
    children = dag.directed().sum(axis=1)
    order = sorted(range(n), key=lambda v: (int(children[v] < 2), rng.random()))
    return dag, [dag.names[v] for v in order[:n_latent]]


def test_pag_equals_brute_force_equivalence_class() -> None:
    """Arrowheads and tails exactly where all equivalent MAGs agree, circles elsewhere."""
    rng = np.random.default_rng(11)
    totals = dict.fromkeys(RULES, 0)
    checked = circles = 0
    sizes = []
    while checked < 60:
        dag, latent = _random_case(rng)
        mag = dag_to_mag(dag, latent)
        if not 3 <= mag.n_edges <= 9:
            continue
        assert is_ancestral(mag)
        assert is_maximal(mag)
        pag, counts = _pag_with_counts(mag)
        expected, size = _expected_pag_marks(mag)
        assert np.array_equal(pag.marks, expected), (dag.to_dict(), latent, _edges(pag))
        for rule, k in counts.items():
            totals[rule] += k
        circles += int((pag.marks == CIRCLE).sum())
        sizes.append(size)
        checked += 1
    assert circles > 0
    assert max(sizes) > 1
    assert totals["R1"] > 0 and totals["R2"] > 0
    assert totals["R4"] > 0


@pytest.mark.parametrize(
    ("dag_edges", "latent"),
    [
        ([("D", "A"), ("L", "A"), ("L", "B"), ("A", "C"), ("B", "C")], ["L"]),
        (
            [("D", "A"), ("L1", "A"), ("L1", "B"), ("A", "C"), ("L2", "B"), ("L2", "C")],
            ["L1", "L2"],
        ),
        ([("a", "b"), ("b", "t"), ("t", "g"), ("a", "g")], []),
        (R10_DAG, []),
        (R8_DAG, []),
        # R4 orients a -> g through the discriminating path <d1, b, a, g>.
        (
            [("a", "b"), ("a", "t"), ("a", "g"), ("b", "g"), ("t", "g"), ("d1", "b"), ("d2", "t")],
            [],
        ),
    ],
    ids=["R4-noncollider", "R4-collider", "R9", "R10", "R8", "R4-tail"],
)
def test_textbook_rule_examples_match_brute_force(dag_edges: list, latent: list) -> None:
    names = sorted({v for e in dag_edges for v in e})
    mag = dag_to_mag(Graph.from_edges(names, dag_edges), latent)
    expected, _ = _expected_pag_marks(mag)
    assert np.array_equal(mag_to_pag(mag).marks, expected)


@pytest.mark.parametrize("network", ["asia", "sachs", "alarm", "insurance", "child"])
def test_pag_to_mag_gives_a_member_of_the_class(network):
    """Zhang (2008) Theorem 2: the MAG built from the PAG has the same PAG."""
    from fedstruct.data import load_network

    dag = load_network(network).graph
    parents_of_two = [dag.names[i] for i in np.flatnonzero(dag.directed().sum(axis=1) >= 2)]
    for latent in ((), parents_of_two[:4]):
        pag = dag_to_pag(dag, latent)
        mag = pag_to_mag(pag)
        assert is_ancestral(mag) and is_maximal(mag)
        assert np.array_equal(mag_to_pag(mag).marks, pag.marks)
        for rule in ("drop", "orient"):
            member = dag_member(pag, rule)
            assert member.is_dag()
            kept = member.adjacency() & pag.adjacency()
            assert np.array_equal(kept, member.adjacency())  # no new adjacency
            bidirected = (mag.marks == ARROW) & (mag.marks.T == ARROW)
            expected = pag.adjacency() & ~bidirected if rule == "drop" else pag.adjacency()
            assert np.array_equal(member.adjacency(), expected)


def test_dag_member_of_small_graphs():
    chain = Graph.from_edges(["a", "b", "c"], ["a o-o b", "b o-o c"])
    member = dag_member(chain)
    assert member.is_dag() and len(member.edges()) == 2
    assert not ({"a", "c"} <= set(member.parents("b")))  # no new collider at b
    collider = Graph.from_edges(["a", "b", "c"], ["a o-> b", "c o-> b"])
    assert set(dag_member(collider).parents("b")) == {"a", "c"}
    confounded = Graph.from_edges(["a", "b", "c"], ["a <-> b", "b o-> c", "a o-> c"])
    assert not dag_member(confounded, "drop").is_adjacent("a", "b")
    oriented = dag_member(confounded, "orient")
    assert oriented.is_dag() and oriented.is_adjacent("a", "b")
    cpdag = Graph.from_edges(["a", "b", "c"], ["a --- b", "b --> c"])
    assert dag_member(cpdag).is_dag()
    dag = Graph.from_edges(["a", "b"], ["a --> b"])
    assert np.array_equal(dag_member(dag).marks, dag.marks)
    with pytest.raises(ConfigError, match="bidirected"):
        dag_member(dag, "latent")
    cyclic = Graph.from_edges(["a", "b", "c"], ["a --> b", "b --> c", "c --> a"])
    with pytest.raises(GraphError, match="no MAG"):
        pag_to_mag(cyclic)
    member = dag_member(cyclic)  # e.g. a merged graph: the cycle is broken at one edge
    assert member.is_dag() and member.n_edges == 2
    merged = Graph.from_edges(["a", "b", "c"], ["a --> b", "b --> c", "a <-> c"])
    assert dag_member(merged, "orient").is_dag()  # not ancestral, still a DAG out
