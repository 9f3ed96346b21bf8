"""Benchmark networks: BIF reading, registry, forward sampling, interventions, tiling."""

from __future__ import annotations

import hashlib
import itertools
import pickle

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.bif import bundled_bif_path, parse_bif, read_bif
from fedstruct.data.discrete import DiscreteNetwork, inverse_cdf, mixed_radix_strides
from fedstruct.data.networks import list_networks, load_network, network_names
from fedstruct.data.tiling import tile_network
from fedstruct.errors import (
    CyclicGraphError,
    DataError,
    SampleSizeError,
    UnknownNetworkError,
    UnknownVariableError,
)

# Sizes from the bnlearn repository pages and FedCDnv Table 5 (Child3, Alarm3).
KNOWN = {
    "asia": (8, 8),
    "cancer": (5, 4),
    "earthquake": (5, 4),
    "survey": (6, 6),
    "sachs": (11, 17),
    "child": (20, 25),
    "insurance": (27, 52),
    "water": (32, 66),
    "alarm": (37, 46),
    "barley": (48, 84),
    "hailfinder": (56, 66),
    "child3": (60, 79),
    "hepar2": (70, 123),
    "win95pts": (76, 112),
    "pathfinder": (109, 195),
    "andes": (223, 338),
    "alarm3": (111, 149),
    "diabetes": (413, 602),
    "pigs": (441, 592),
    "link": (724, 1125),
    "munin": (1041, 1397),
}


# ------------------------------------------------------------------ oracle
def exact_joint(net: DiscreteNetwork) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Brute-force joint distribution of a small network (product of CPT entries)."""
    configs = list(itertools.product(*(range(net.cardinalities[v]) for v in net.names)))
    pos = {v: i for i, v in enumerate(net.names)}
    probs = np.ones(len(configs))
    for r, cfg in enumerate(configs):
        for v in net.names:
            c = net.cpt(v)
            probs[r] *= c.table[(*(cfg[pos[p]] for p in c.parents), cfg[pos[v]])]
    return configs, probs


def exact_marginal(net: DiscreteNetwork, var: str) -> np.ndarray:
    configs, probs = exact_joint(net)
    j = net.names.index(var)
    out = np.zeros(net.cardinalities[var])
    for cfg, p in zip(configs, probs, strict=True):
        out[cfg[j]] += p
    return out


def assert_frequencies(values: np.ndarray, expected: np.ndarray, n_se: float = 4.0) -> None:
    """Empirical frequencies within ``n_se`` binomial standard errors (plus 1e-3)."""
    freq = np.bincount(values, minlength=expected.size) / values.size
    se = np.sqrt(expected * (1 - expected) / values.size)
    assert np.all(np.abs(freq - expected) <= n_se * se + 1e-3), (freq, expected)


# ----------------------------------------------------------------- loading
@pytest.mark.parametrize("name", sorted(KNOWN))
def test_every_network_loads_with_its_counts(name: str) -> None:
    net = load_network(name)
    assert (net.n_nodes, net.n_edges) == KNOWN[name]
    assert net.graph.is_dag()
    assert net.graph.names == net.names
    info = {i.name: i for i in list_networks()}[name]
    assert (info.n_nodes, info.n_edges) == KNOWN[name]


def test_registry_lists_exactly_the_loadable_names() -> None:
    assert set(network_names()) == set(KNOWN)
    assert all(i.source and i.description for i in list_networks())


def test_load_is_cached_and_case_insensitive() -> None:
    assert load_network("alarm") is load_network(" Alarm ")


def test_unknown_network_lists_valid_names() -> None:
    with pytest.raises(UnknownNetworkError) as err:
        load_network("alarm4")
    msg = str(err.value)
    assert "\n" not in msg and "'alarm4'" in msg
    assert "alarm3, andes, asia, barley" in msg
    assert isinstance(err.value, ValueError)


def test_asia_tables_read_from_per_configuration_lines() -> None:
    net = load_network("asia")
    assert net.states["asia"] == ("yes", "no")
    assert net.cpt("asia").table.tolist() == [0.01, 0.99]
    assert net.cpt("tub").parents == ("asia",)
    assert net.cpt("tub").table.tolist() == [[0.05, 0.95], [0.01, 0.99]]
    # "(no, yes) 1.0, 0.0" in the file: lung = no, tub = yes.
    either = net.cpt("either")
    assert either.parents == ("lung", "tub")
    assert either.table[1, 0].tolist() == [1.0, 0.0]
    assert either.table[1, 1].tolist() == [0.0, 1.0]
    assert net.cpt("dysp").table[1, 0].tolist() == pytest.approx([0.7, 0.3])
    assert set(net.graph.parents("either")) == {"lung", "tub"}


def test_alarm_states_and_a_table_row() -> None:
    net = load_network("alarm")
    assert net.cardinalities["EXPCO2"] == 4
    assert net.states["INTUBATION"] == ("NORMAL", "ESOPHAGEAL", "ONESIDED")
    assert net.cpt("HISTORY").parents == ("LVFAILURE",)
    # probability ( HISTORY | LVFAILURE ) { (TRUE) 0.9, 0.1; (FALSE) 0.01, 0.99; }
    assert net.cpt("HISTORY").table.tolist() == [[0.9, 0.1], [0.01, 0.99]]


def test_networks_pickle_to_an_equal_sampler() -> None:
    net = load_network("alarm3")
    copy = pickle.loads(pickle.dumps(net))
    assert copy.name == "alarm3" and copy.graph == net.graph
    pd.testing.assert_frame_equal(copy.sample(200, seed=1), net.sample(200, seed=1))


def test_tables_are_read_only() -> None:
    net = load_network("asia")
    with pytest.raises(ValueError):
        net.cpt("tub").table[0, 0] = 0.5


# --------------------------------------------------------------- BIF parser
SMALL_BIF = """
// a comment
network test { }
variable A { type discrete [ 2 ] { a0, a1 }; property position = (1, 2); }
variable B { type discrete [ 3 ] { b0, b1, b2 }; }
variable C { type discrete [ 2 ] { c0, c1 }; }
/* block
   comment */
probability ( A ) { table 0.3, 0.7; }
probability ( B | A ) {
  table 0.1, 0.2, 0.3, 0.4, 0.6, 0.4;
}
probability ( C | A, B ) {
  (a0, b0) 0.5, 0.5;
  (a1, b2) 0.9, 0.1;
  default 0.2, 0.8;
}
"""


def test_parser_table_order_default_and_comments() -> None:
    net = parse_bif(SMALL_BIF, name="small")
    assert net.names == ("A", "B", "C")
    assert net.cpt("A").table.tolist() == [0.3, 0.7]
    # table over (B, A) in C order: P(B=b0|a0)=.1, P(B=b0|a1)=.2, P(B=b1|a0)=.3, ...
    assert net.cpt("B").table == pytest.approx(np.array([[0.1, 0.3, 0.6], [0.2, 0.4, 0.4]]))
    c = net.cpt("C").table
    assert c[0, 0].tolist() == [0.5, 0.5]
    assert c[1, 2].tolist() == pytest.approx([0.9, 0.1])
    assert c[0, 1].tolist() == pytest.approx([0.2, 0.8])
    assert c[1, 0].tolist() == pytest.approx([0.2, 0.8])
    assert net.n_edges == 3


@pytest.mark.parametrize(
    ("old", "new", "fragment"),
    [
        ("  default 0.2, 0.8;\n", "", "configuration (a0, b1) has no probabilities"),
        ("(a1, b2) 0.9", "(a1, b9) 0.9", "'b9' is not a state of parent 'B'"),
        ("table 0.3, 0.7;", "table 0.3, 0.6, 0.1;", "table has 3 values, expected 2"),
        ("(a0, b0) 0.5, 0.5;", "(a0, b0) 0.5, 0.25, 0.25;", "(a0, b0) has 3 values, expected 2"),
        ("(a0, b0) 0.5, 0.5;", "(a0, b0) 0.5, 0.5; (a0, b0) 0.5, 0.5;", "(a0, b0) is given twice"),
        ("probability ( A )", "probability ( Z )", "names 'Z', which is not a declared variable"),
        ("probability ( A ) { table 0.3, 0.7; }", "", "variables ['A'] have no probability block"),
    ],
)
def test_parser_errors_name_the_problem(old: str, new: str, fragment: str) -> None:
    assert old in SMALL_BIF
    with pytest.raises(DataError) as err:
        parse_bif(SMALL_BIF.replace(old, new), name="small")
    assert fragment in str(err.value)
    assert str(err.value).startswith("small")


def test_parser_rejects_rows_not_summing_to_one() -> None:
    with pytest.raises(DataError, match=r"table of 'A' sums to 0\.9"):
        parse_bif(SMALL_BIF.replace("table 0.3, 0.7;", "table 0.3, 0.6;"), name="small")


def test_read_bif_plain_file_and_missing_file(tmp_path) -> None:
    path = tmp_path / "small.bif"
    path.write_text(SMALL_BIF)
    assert read_bif(path).name == "small"
    with pytest.raises(DataError, match=r"nosuch\.bif"):
        read_bif(tmp_path / "nosuch.bif")


def test_bundled_path_points_into_pgmpy() -> None:
    path = bundled_bif_path("asia")
    assert path.name == "asia.bif.gz" and "pgmpy" in path.parts
    with pytest.raises(DataError, match=r"no file example_models/nosuch\.bif\.gz"):
        bundled_bif_path("nosuch")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", ["asia", "alarm", "hailfinder", "pigs"])
def test_tables_match_pgmpy_reader(name: str) -> None:
    """Independent oracle: pgmpy's own BIF reader gives the same CPTs."""
    pgmpy_utils = pytest.importorskip("pgmpy.utils")
    model = pgmpy_utils.get_example_model(name)
    ours = load_network(name)
    assert set(model.nodes()) == set(ours.names)
    for cpd in model.get_cpds():
        var, evidence = cpd.variable, list(cpd.variables[1:])
        assert tuple(cpd.state_names[var]) == ours.states[var]
        shape = [len(cpd.state_names[var])] + [len(cpd.state_names[e]) for e in evidence]
        theirs = cpd.get_values().reshape(shape)
        table = ours.cpt(var)
        perm = [evidence.index(p) + 1 for p in table.parents] + [0]
        np.testing.assert_allclose(np.transpose(theirs, perm), table.table, atol=1e-6)


# ---------------------------------------------------------------- sampling
def test_sample_frame_layout_and_determinism() -> None:
    net = load_network("alarm")
    a = net.sample(500, seed=3)
    assert list(a.columns) == list(net.names)
    assert all(a[c].dtype == np.int64 for c in a.columns)
    assert (a.max() < pd.Series(net.cardinalities)).all() and (a.min() >= 0).all()
    pd.testing.assert_frame_equal(a, net.sample(500, seed=3))
    assert not a.equals(net.sample(500, seed=4))


def _digest(frame: pd.DataFrame) -> str:
    return hashlib.sha256(np.ascontiguousarray(frame.to_numpy(np.int64)).tobytes()).hexdigest()


# First 16 hex digits of each sample's codes, pinned before the sampler was made
# column-major (issue 51): a faster sampler must draw the very same rows for a seed.
PINNED_SAMPLES = [
    ("alarm", None, "9b9efd6ff78b2b73"),
    ("pathfinder", None, "a21670a6f18233e3"),
    ("child3", None, "4e78fc229624dc46"),
    ("asia", {"lung": "uniform", "smoke": "yes"}, "3bdb65936f6187d6"),
]


@pytest.mark.parametrize(("name", "interventions", "digest"), PINNED_SAMPLES)
def test_samples_for_a_seed_never_change(name: str, interventions, digest: str) -> None:
    data = load_network(name).sample(2000, seed=7, interventions=interventions)
    assert _digest(data)[:16] == digest


def _row_by_row_sample(net: DiscreteNetwork, n: int, seed: int) -> np.ndarray:
    """The textbook ancestral sampler (Koller & Friedman Alg. 12.1): each variable's CDF
    row gathered per sample and inverted by :func:`inverse_cdf`, in row-major layout."""
    u = np.random.default_rng(seed).random((n, net.n_nodes))
    pos = {v: j for j, v in enumerate(net.names)}
    codes = np.zeros((n, net.n_nodes), dtype=np.int64)
    for var in net.graph.topological_order():
        cpt = net.cpt(var)
        k = cpt.table.shape[-1]
        cum = np.cumsum(cpt.table.reshape(-1, k), axis=1)
        cum[:, -1] = 1.0
        rows = codes[:, [pos[p] for p in cpt.parents]] @ mixed_radix_strides(cpt.table.shape[:-1])
        codes[:, pos[var]] = inverse_cdf(cum[rows], u[:, pos[var]])
    return codes


@pytest.mark.parametrize("name", ["munin", "diabetes"])
def test_large_networks_sample_as_the_row_by_row_sampler(name: str) -> None:
    """munin and diabetes have variables with up to 21 states and 600-7,056-entry tables."""
    net = load_network(name)
    assert max(net.cardinalities.values()) == 21
    data = net.sample(300, seed=5)
    assert list(data.columns) == list(net.names)
    np.testing.assert_array_equal(data.to_numpy(), _row_by_row_sample(net, 300, seed=5))


def test_asia_marginals_match_exact_inference() -> None:
    net = load_network("asia")
    data = net.sample(50_000, seed=11)
    for var in net.names:
        assert_frequencies(data[var].to_numpy(), exact_marginal(net, var))


def test_alarm_root_and_edge_conditionals_match_cpts() -> None:
    net = load_network("alarm")
    data = net.sample(50_000, seed=5)
    # Root: HYPOVOLEMIA; single-parent edge: LVFAILURE -> HISTORY.
    assert net.cpt("HYPOVOLEMIA").parents == ()
    assert_frequencies(data["HYPOVOLEMIA"].to_numpy(), net.cpt("HYPOVOLEMIA").table)
    for state in (0, 1):
        rows = data["LVFAILURE"].to_numpy() == state
        assert rows.sum() > 1000
        assert_frequencies(data["HISTORY"].to_numpy()[rows], net.cpt("HISTORY").table[state])
    # A two-parent node: STROKEVOLUME | (HYPOVOLEMIA, LVFAILURE) at its most common parents.
    sv = net.cpt("STROKEVOLUME")
    assert sv.parents == ("HYPOVOLEMIA", "LVFAILURE")
    assert sv.table[1, 0].tolist() == [0.95, 0.04, 0.01]  # "(FALSE, TRUE) 0.95, 0.04, 0.01"
    rows = (data["LVFAILURE"] == 1).to_numpy() & (data["HYPOVOLEMIA"] == 1).to_numpy()
    assert_frequencies(data["STROKEVOLUME"].to_numpy()[rows], sv.table[1, 1])


def test_zero_probability_states_are_never_drawn() -> None:
    net = load_network("asia")
    data = net.sample(20_000, seed=2)
    # either is a deterministic OR of lung and tub.
    expected = np.where((data["lung"] == 0) | (data["tub"] == 0), 0, 1)
    assert np.array_equal(data["either"].to_numpy(), expected)


# ----------------------------------------------------------- interventions
def test_uniform_intervention_cuts_incoming_edges() -> None:
    net = load_network("asia")
    n = 50_000
    obs = net.sample(n, seed=7)
    do = net.sample(n, seed=7, interventions={"lung": "uniform"})
    lung, smoke = do["lung"].to_numpy(), do["smoke"].to_numpy()
    assert_frequencies(lung, np.array([0.5, 0.5]))
    for s in (0, 1):  # independent of its former parent
        assert_frequencies(lung[smoke == s], np.array([0.5, 0.5]))
    # Observationally lung depends strongly on smoke: P(lung=yes|smoke=yes) = 0.1.
    assert_frequencies(obs["lung"].to_numpy()[obs["smoke"].to_numpy() == 0], np.array([0.1, 0.9]))
    # Non-descendants: the very same column (common random numbers).
    for var in ("asia", "tub", "smoke", "bronc"):
        assert np.array_equal(obs[var], do[var])
    # Descendants follow the mutilated network's exact marginal, which differs.
    mutilated = net.intervene({"lung": "uniform"})
    p_do, p_obs = exact_marginal(mutilated, "either"), exact_marginal(net, "either")
    assert abs(p_do[0] - p_obs[0]) > 0.3
    assert_frequencies(do["either"].to_numpy(), p_do)
    assert_frequencies(do["xray"].to_numpy(), exact_marginal(mutilated, "xray"))


def test_value_intervention_by_name_or_code_and_mutilated_graph() -> None:
    net = load_network("asia")
    by_name = net.sample(1000, seed=1, interventions={"either": "yes", "smoke": 1})
    by_code = net.sample(1000, seed=1, interventions={"either": 0, "smoke": "no"})
    pd.testing.assert_frame_equal(by_name, by_code)
    assert (by_name["either"] == 0).all() and (by_name["smoke"] == 1).all()
    mutilated = net.intervene({"either": "yes"})
    assert mutilated.graph.parents("either") == ()
    assert mutilated.graph.children("either") == net.graph.children("either")
    assert mutilated.n_edges == net.n_edges - 2
    iv = {"either": "yes", "bronc": "uniform"}
    pd.testing.assert_frame_equal(
        net.intervene(iv).sample(3000, seed=9), net.sample(3000, seed=9, interventions=iv)
    )


@pytest.mark.parametrize("n", [0, -5, 2.5, 100.0, True, "10"])
def test_bad_sample_sizes(n) -> None:
    with pytest.raises(SampleSizeError, match="positive integer"):
        load_network("asia").sample(n, seed=0)


def test_bad_interventions_name_the_culprit() -> None:
    net = load_network("asia")
    with pytest.raises(UnknownVariableError, match="'lungs'") as err:
        net.sample(10, seed=0, interventions={"lungs": "yes"})
    assert "\n" not in str(err.value)
    with pytest.raises(DataError, match=r"\['yes', 'no'\]"):
        net.sample(10, seed=0, interventions={"lung": "maybe"})
    with pytest.raises(DataError, match=r"code 0\.\.1"):
        net.sample(10, seed=0, interventions={"lung": 2})
    with pytest.raises(DataError, match="seed"):
        net.sample(10, seed=None)  # type: ignore[arg-type]


def test_network_validation_errors() -> None:
    states = {"A": ("0", "1"), "B": ("0", "1"), "C": ("0", "1")}
    half = np.full((2, 2), 0.5)
    with pytest.raises(CyclicGraphError, match="'A' and 'B' are each other's parents"):
        DiscreteNetwork(
            ["A", "B", "C"],
            states,
            {"A": ("B",), "B": ("A",)},
            {"A": half, "B": half, "C": half[0]},
        )
    with pytest.raises(CyclicGraphError, match="cycle A -> B -> C -> A"):
        DiscreteNetwork(
            ["A", "B", "C"],
            states,
            {"A": ("C",), "B": ("A",), "C": ("B",)},
            {"A": half, "B": half, "C": half},
        )
    two = {"A": ("0", "1"), "B": ("0", "1")}
    with pytest.raises(DataError, match="table of 'B' has shape"):
        DiscreteNetwork(["A", "B"], two, {"B": ("A",)}, {"A": [0.5, 0.5], "B": [0.5, 0.5]})
    with pytest.raises(UnknownVariableError, match="parent 'C' of 'B' is not"):
        DiscreteNetwork(["A", "B"], two, {"B": ("C",)}, {"A": [0.5, 0.5], "B": [0.5, 0.5]})
    with pytest.raises(DataError, match="'B' has no probability table"):
        DiscreteNetwork(["A", "B"], two, {}, {"A": [0.5, 0.5]})


# ------------------------------------------------------------------ tiling
@pytest.mark.parametrize(
    ("name", "base", "connecting"), [("child3", "child", 4), ("alarm3", "alarm", 11)]
)
def test_tiled_networks(name: str, base: str, connecting: int) -> None:
    tiled, orig = load_network(name), load_network(base)
    tile_of = {f"{v}_{t}": t for t in (1, 2, 3) for v in orig.names}
    assert set(tiled.names) == set(tile_of)
    between = [(p, v) for v in tiled.names for p in tiled.parents(v) if tile_of[p] != tile_of[v]]
    assert len(between) == connecting
    assert all(tile_of[p] < tile_of[v] for p, v in between)
    assert {(tile_of[p], tile_of[v]) for p, v in between} == {(1, 2), (2, 3), (1, 3)}
    targets = {v for _, v in between}
    assert len(targets) == connecting  # one new parent per target
    cap = max(max(len(orig.parents(v)) for v in orig.names), 3)
    for v in tiled.names:
        plain = v.rsplit("_", 1)[0]
        t = tile_of[v]
        own = tuple(f"{p}_{t}" for p in orig.parents(plain))
        assert tiled.parents(v)[: len(own)] == own
        assert tiled.states[v] == orig.states[plain]
        assert len(tiled.parents(v)) <= cap
        old = orig.cpt(plain).table
        new = tiled.cpt(v).table
        if v not in targets:
            np.testing.assert_array_equal(new, old)
            continue
        # P'(y | pa, z) = 0.5 P(y | pa) + 0.5 q_z(y), q_z a distribution shared by all pa.
        q = (new - 0.5 * old[..., None, :]) / 0.5
        assert q.min() >= -1e-12
        np.testing.assert_allclose(q.sum(axis=-1), 1.0)
        flat = q.reshape(-1, *q.shape[-2:])
        np.testing.assert_allclose(flat, np.broadcast_to(flat[0], flat.shape), atol=1e-12)


def test_tiling_is_deterministic_and_seeded() -> None:
    child = load_network("child")
    a = tile_network(child, 3, 4, seed=[2006, 3, 4], name="child3")
    stored = load_network("child3")
    assert a.graph == stored.graph
    for v in a.names:
        np.testing.assert_array_equal(a.cpt(v).table, stored.cpt(v).table)
    b = tile_network(child, 3, 4, seed=1)
    assert b.graph != a.graph
    with pytest.raises(DataError, match="at least 2 tiles"):
        tile_network(child, 1, 0, seed=0)


def test_tiled_network_samples_its_connecting_dependence() -> None:
    net = load_network("child3")
    data = net.sample(20_000, seed=4)
    assert data.shape == (20_000, 60)
    target = next(v for v in net.names if any(p[-1] != v[-1] for p in net.parents(v)))
    parent = net.parents(target)[-1]
    cpt = net.cpt(target)
    # Marginal over the tile's own parents differs between states of the new parent.
    by_state = [
        np.bincount(data[target][data[parent] == z], minlength=net.cardinalities[target])
        for z in range(net.cardinalities[parent])
    ]
    freqs = [b / b.sum() for b in by_state if b.sum() > 500]
    assert len(freqs) >= 2
    assert np.abs(freqs[0] - freqs[1]).max() > 0.05
    assert cpt.parents[-1] == parent
