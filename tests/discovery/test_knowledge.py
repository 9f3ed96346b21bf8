"""Background knowledge: the file, its validation, and what PC/FCI/RFCI do with it."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from fedstruct.data import load_network
from fedstruct.discovery import fci, pc, rfci
from fedstruct.discovery.background import orient_pag
from fedstruct.discovery.build import make_ci_test
from fedstruct.discovery.citest import OracleTest
from fedstruct.discovery.knowledge import Knowledge
from fedstruct.errors import KnowledgeError, UnknownVariableError
from fedstruct.graphs.graph import ARROW, CIRCLE, Graph
from fedstruct.graphs.pag import dag_to_mag, dag_to_pag

NAMES = ["age", "sex", "diagnosis", "treatment", "outcome"]


# ------------------------------------------------------------------- the file
def test_json_and_yaml_files_read_the_same_and_write_back(tmp_path):
    data = {
        "tiers": [["age", "sex"], ["diagnosis"], ["treatment", "outcome"]],
        "forbidden": [["outcome", "diagnosis"]],
        "required": [["diagnosis", "treatment"]],
        "forbidden_adjacent": [["sex", "treatment"]],
    }
    (tmp_path / "k.json").write_text(json.dumps(data))
    (tmp_path / "k.yaml").write_text(
        "tiers:\n  - [age, sex]\n  - [diagnosis]\n  - [treatment, outcome]\n"
        "forbidden: [[outcome, diagnosis]]\nrequired: [[diagnosis, treatment]]\n"
        "forbidden_adjacent: [[sex, treatment]]\n"
    )
    a = Knowledge.read(tmp_path / "k.json")
    assert a == Knowledge.read(tmp_path / "k.yaml")
    written = a.write(tmp_path / "knowledge.json")
    assert json.loads(written.read_text()) == data
    assert Knowledge.read(written) == a
    rules = a.resolve(NAMES)
    assert rules.not_ancestor[3, 0] and not rules.not_ancestor[0, 3]  # treatment not -> age
    assert rules.not_ancestor[4, 2]  # forbidden outcome -> diagnosis
    assert rules.fixed[2, 3] and rules.fixed[3, 2] and rules.apart[3, 1]
    assert not rules.removed(False)[0, 3] and rules.removed(False)[1, 3]


BAD_FILES = [
    ("k.json", '{"tiers": [["age"], ', "not valid JSON"),
    ("k.yaml", "tiers: [[age, sex]\n", "not valid YAML"),
    ("k.yaml", "!!python/object/apply:os.system ['true']\n", "not valid YAML"),
    ("k.yaml", "- age\n", "expected a mapping"),
    ("k.json", '{"tier": [["age"]]}', "unknown key(s) ['tier']"),
    ("k.json", '{"tiers": "age"}', "tiers must be a list"),
    ("k.json", '{"tiers": [["age", 3]]}', "tiers[0][1] must be a variable name"),
    ("k.json", '{"required": [["age", "sex", "outcome"]]}', "required[0] must be a pair"),
    ("k.json", '{"forbidden": [["age", "age"]]}', "forbidden[0] pairs 'age' with itself"),
    ("k.txt", "{}", "unknown format '.txt'"),
]


@pytest.mark.parametrize(("name", "text", "says"), BAD_FILES)
def test_a_bad_file_is_one_line_naming_the_problem(tmp_path, name, text, says):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(KnowledgeError) as err:
        Knowledge.read(path)
    message = str(err.value)
    assert says in message and "\n" not in message and str(path) in message


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(KnowledgeError, match="does not exist"):
        Knowledge.read(tmp_path / "none.json")


CONTRADICTIONS = [
    (
        {"forbidden": [["age", "bmi"]]},
        UnknownVariableError,
        "forbidden names an unknown variable 'bmi'",
    ),
    ({"tiers": [["age"], ["age"]]}, KnowledgeError, "'age' is in tier 1 and tier 2"),
    (
        {"required": [["age", "sex"], ["sex", "diagnosis"], ["diagnosis", "age"]]},
        KnowledgeError,
        "cycle age -> sex -> diagnosis -> age",
    ),
    (
        {"tiers": [["age"], ["treatment"]], "required": [["treatment", "age"]]},
        KnowledgeError,
        "required edge treatment -> age goes from tier 2 into the earlier tier 1",
    ),
    (
        {"required": [["age", "sex"]], "forbidden": [["age", "sex"]]},
        KnowledgeError,
        "make age a cause of sex, but [age, sex] is forbidden",
    ),
    (
        {"required": [["age", "sex"], ["sex", "outcome"]], "forbidden": [["age", "outcome"]]},
        KnowledgeError,
        "make age a cause of outcome",
    ),
    (
        {"required": [["age", "sex"]], "forbidden_adjacent": [["sex", "age"]]},
        KnowledgeError,
        "required edge age -> sex contradicts forbidden_adjacent",
    ),
]


@pytest.mark.parametrize(("data", "error", "says"), CONTRADICTIONS)
def test_unknown_names_and_contradictions_are_one_line(data, error, says):
    knowledge = Knowledge.from_dict(data)
    with pytest.raises(error) as err:
        knowledge.resolve(NAMES)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_the_learners_check_the_knowledge_against_their_variables():
    dag = Graph.from_edges("ABC", ["A --> B", "B --> C"])
    with pytest.raises(UnknownVariableError, match="'D'"):
        pc(OracleTest(dag), knowledge=Knowledge(required=[("A", "D")]))
    with pytest.raises(KnowledgeError, match="must be a fedstruct Knowledge"):
        fci(OracleTest(dag), knowledge={"tiers": [["A"]]})  # type: ignore[arg-type]


# ------------------------------------------------------- without knowledge
def _fingerprint(result):
    h = hashlib.sha256()
    h.update(result.graph.marks.tobytes())
    h.update(repr(sorted(result.sepsets.items())).encode())
    for key, p in sorted(result.ci_test.cache.items()):
        # 7 significant digits: the same p-value summed in another order (a level's
        # tests computed together, discovery/centre_tables.py) differs by ~1e-12
        h.update(f"{key}:{p:.6e};".encode())
    return h.hexdigest()[:16]


def test_no_knowledge_is_the_same_run_as_before_knowledge_existed():
    # The fingerprints (marks, separating sets, every cached p-value) were computed with
    # the code before knowledge was added (commit ecac561), at 12 digits; at 7 digits,
    # with the code before the centre tables (which the 12-digit ones then matched).
    data = load_network("sachs").sample(1000, seed=3)
    before = {"pc": "66aab853e665f224", "fci": "ec4ae6d847da26d8", "rfci": "9a8801654638b00c"}
    for learn in (pc, fci, rfci):
        for knowledge in (None, Knowledge()):
            result = learn(make_ci_test(data, "g2"), alpha=0.05, knowledge=knowledge)
            assert _fingerprint(result) == before[learn.__name__], learn.__name__


# ----------------------------------------------------------- in the learners
def _chain_with_confounder():
    # A -> B -> C, L -> B, L -> D (L latent): MAG A -> B -> C, B <-> D, A, C, D pairwise apart.
    dag = Graph.from_edges(["A", "B", "C", "D", "L"], ["A --> B", "B --> C", "L --> B", "L --> D"])
    return dag, ["L"]


def test_tiers_set_arrowheads_never_tails_in_fci():
    # The causal-learn #266 trap: B in an earlier tier than D says D is not an ancestor
    # of B (an arrowhead at D), nothing about B's mark: the true MAG's edge is B <-> D,
    # so "B --> D" would be wrong.
    dag, latent = _chain_with_confounder()
    truth = dag_to_pag(dag, latent)
    assert str(truth.edge("B", "D")) == "B <-o D"
    assert str(dag_to_mag(dag, latent).edge("B", "D")) == "B <-> D"
    told = fci(OracleTest(dag, latent), knowledge=Knowledge(tiers=[["A", "B"], ["C", "D"]]))
    assert str(told.graph.edge("B", "D")) == "B <-> D"
    marks = np.where(truth.adjacency(), CIRCLE, 0).astype(np.int8)
    rules = Knowledge(tiers=[["B"], ["D"]]).resolve(truth.names)
    assert orient_pag(marks, rules) == 1
    b, d = truth.indices(["B", "D"])
    assert marks[b, d] == ARROW and marks[d, b] == CIRCLE  # B o-> D: no tail at B


def test_required_edge_gives_a_tail_and_is_never_tested():
    dag = Graph.from_edges("ABC", ["A --> B", "C --> B"])
    plain = fci(OracleTest(dag))
    assert str(plain.graph.edge("A", "B")) == "A o-> B"
    told = fci(OracleTest(dag), knowledge=Knowledge(required=[("A", "B")]))
    assert str(told.graph.edge("A", "B")) == "A --> B"
    a, b = told.graph.indices(["A", "B"])
    assert not any(k[:2] == (a, b) for k in told.ci_test.cache)
    assert told.n_tests < plain.n_tests


def test_forbidden_adjacency_is_removed_without_a_test_and_colliders_stay_right():
    # A -> C <- B and C -> D: the removed pair A, B gets its separating set (empty)
    # from a search among neighbours, so the collider at C is still found.
    dag = Graph.from_edges("ABCD", ["A --> C", "B --> C", "C --> D"])
    knowledge = Knowledge(forbidden_adjacent=[("A", "B")], forbidden=[("D", "A")])
    for learn in (pc, fci, rfci):
        told = learn(OracleTest(dag), knowledge=knowledge)
        assert told.graph.edge("A", "C").mark_b == ARROW, learn.__name__
        assert told.tests_by_phase["knowledge_sepsets"] == 1
        assert told.sepset("A", "B") == ()
    pc_plain, pc_told = pc(OracleTest(dag)), pc(OracleTest(dag), knowledge=knowledge)
    assert pc_told.graph == pc_plain.graph
    assert pc_told.tests_by_phase["adjacency"] == pc_plain.n_tests - 1  # A, B at level 0


def test_pc_pairs_forbidden_both_ways_are_not_adjacent_but_fci_keeps_them():
    # D and B share the latent L: neither causes the other, yet FCI must keep B <-> D.
    dag, latent = _chain_with_confounder()
    both = Knowledge(forbidden=[("B", "D"), ("D", "B")])
    assert str(fci(OracleTest(dag, latent), knowledge=both).graph.edge("B", "D")) == "B <-> D"
    dag2 = Graph.from_edges("ABC", ["A --> B", "B --> C"])
    told = pc(OracleTest(dag2), knowledge=Knowledge(forbidden=[("A", "C"), ("C", "A")]))
    assert not told.graph.is_adjacent("A", "C")
    assert str(told.graph.edge("A", "B")) == "A --- B"  # not implied by the knowledge


def test_pc_orients_by_tiers_and_closes_with_meek_rules():
    dag = Graph.from_edges("ABCD", ["A --> B", "B --> C", "C --> D"])
    told = pc(OracleTest(dag), knowledge=Knowledge(tiers=[["A"], ["B"]]))
    assert told.graph == dag  # A -> B by the tiers, then R1 down the chain


def test_load_knowledge_takes_an_object_a_mapping_a_path_or_none(tmp_path):
    from fedstruct.discovery.knowledge import load_knowledge

    told = Knowledge(tiers=[["a"], ["b"]])
    told.write(tmp_path / "k.json")
    assert load_knowledge(told) is told and load_knowledge(None) is None
    assert load_knowledge(str(tmp_path / "k.json")) == told == load_knowledge(told.to_dict())
    with pytest.raises(KnowledgeError, match="must be a Knowledge, a file path or None, got int"):
        load_knowledge(3)
