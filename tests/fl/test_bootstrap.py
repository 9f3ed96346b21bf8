"""Edge confidence by resampling: each site resamples its own rows; replicates counted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedstruct.data import ClientData
from fedstruct.data.scm import CategoricalSCM
from fedstruct.errors import ConfigError
from fedstruct.fl.bootstrap import BootstrapOptions, ResampledSites, replicate_graphs
from fedstruct.graphs.random import chain_dag
from fedstruct.methods.fedcd import FedCD
from fedstruct.methods.fedcd.sources import vertical_interventions
from fedstruct.methods.fedcdnv import FedCDnv
from fedstruct.runs.contract import runnable
from fedstruct.runs.settings import apply_settings

SMALL_ENCO = {"model_steps": 10, "graph_steps": 5, "graphs_per_step": 5}


def site(name: str, start: int, n: int = 50) -> ClientData:
    """A site whose ``id`` column numbers its own rows ``start .. start + n - 1``."""
    rng = np.random.default_rng(start)
    rows = pd.DataFrame({"id": np.arange(start, start + n), "x": rng.integers(0, 3, n)})
    return ClientData(name, rows)


def test_a_site_draws_only_from_its_own_rows_seeded_by_its_name_alone() -> None:
    a, b = site("a", 0), site("b", 1000)
    backend = ResampledSites(replicate=2, seed=7)
    for own in (a, b):
        drawn = backend.site_data(own)
        assert drawn.n_rows == own.n_rows
        assert set(drawn.rows["id"]) <= set(own.rows["id"])
        assert drawn.rows["id"].duplicated().any()  # with replacement
        assert drawn.evidence == 0.5  # each repeated row counts half a row in the tests
    # The draw depends on the seed, the replicate and the site's name: not on the others.
    alone = ResampledSites(replicate=2, seed=7).site_data(site("a", 0))
    assert alone.rows.equals(backend.site_data(a).rows)
    assert not ResampledSites(replicate=3, seed=7).site_data(a).rows.equals(alone.rows)


def test_a_subsample_draws_a_share_without_replacement() -> None:
    drawn = ResampledSites(0, 0, BootstrapOptions(subsample=0.5)).site_data(site("a", 0, n=40))
    assert drawn.n_rows == 20 and not drawn.rows["id"].duplicated().any()


def test_rows_keep_their_intervention_regime() -> None:
    rows = pd.DataFrame({"x": np.arange(12) % 3, "y": np.arange(12) % 2})
    regimes = np.array([-1] * 8 + [0] * 4)
    client = ClientData("s", rows, intervention=regimes)
    drawn = client.resampled(np.random.default_rng(0))
    assert (drawn.regimes() == 0).sum() == 4  # the design: as many rows per regime
    for regime in (-1, 0):
        mine = rows[regimes == regime]
        got = drawn.rows[drawn.regimes() == regime]
        assert set(map(tuple, got.to_numpy())) <= set(map(tuple, mine.to_numpy()))


@pytest.fixture(scope="module")
def pag_sites() -> list[ClientData]:
    scm = CategoricalSCM(chain_dag(4, seed=0), seed=0, n_categories=2)
    rows = scm.sample(600, seed=1)
    names = list(rows.columns)
    return [
        ClientData("s1", rows.iloc[:300][names[:3]].reset_index(drop=True)),
        ClientData("s2", rows.iloc[300:][names[1:]].reset_index(drop=True)),
    ]


def test_fedcdnv_bootstrap_frequencies_are_consistent_and_reproducible(pag_sites) -> None:
    plain = FedCDnv(seed=0, ci_test="g2").fit(pag_sites)
    runs = [FedCDnv(seed=0, ci_test="g2", bootstrap=3, jobs=1).fit(pag_sites) for _ in range(2)]
    freq = runs[0].edge_frequencies_
    assert freq.replicates == 3
    assert runs[0].graph_ == plain.graph_  # the sites' own rows: as without a bootstrap
    table = freq.table()
    shares = table[list(freq.patterns)].sum(axis=1)
    np.testing.assert_allclose(shares, table["adjacent"])
    assert ((table[["adjacent", "none"]] >= 0) & (table[["adjacent", "none"]] <= 1)).all().all()
    np.testing.assert_array_equal(freq.counts, runs[1].edge_frequencies_.counts)
    assert runs[0].consensus_graph_ == freq.consensus()
    other = FedCDnv(seed=1, ci_test="g2", bootstrap=3, jobs=1).fit(pag_sites)
    assert other.edge_frequencies_.replicates == 3  # another seed: other draws, same shape


def test_replicates_in_processes_equal_those_in_this_one(pag_sites) -> None:
    params = FedCDnv(seed=0, ci_test="g2").get_params()
    here = replicate_graphs(FedCDnv, params, pag_sites, BootstrapOptions(2, jobs=1), seed=0)
    there = replicate_graphs(
        FedCDnv, params, pag_sites, BootstrapOptions(2, jobs=2), seed=0, start="fork"
    )
    assert here == there


def test_fedcd_bootstrap_counts_directions_and_gives_a_dag() -> None:
    scm = CategoricalSCM(chain_dag(3, seed=0), seed=0, n_categories=2)
    clients = vertical_interventions(scm, 2, n_observational=120, n_per_intervention=10, seed=0)
    model = FedCD(rounds=1, epochs_per_round=1, bootstrap=2, jobs=1, **SMALL_ENCO).fit(clients)
    freq = model.edge_frequencies_
    assert freq.patterns == ("-->", "<--")
    assert model.consensus_graph_.is_dag()
    assert "edge-frequencies" in model.learned_tables()


def test_bad_bootstrap_settings_and_a_deployment_are_refused(pag_sites) -> None:
    with pytest.raises(ConfigError, match="fedcdnv bootstrap must be an integer in"):
        FedCDnv(bootstrap=-1).prepare()
    with pytest.raises(ConfigError, match=r"subsample must be .*, got 1\.5"):
        FedCDnv(bootstrap=2, subsample=1.5).prepare()
    with pytest.raises(ConfigError, match="correct_duplicates must be true or false, got 'no'"):
        FedCDnv(bootstrap=2, correct_duplicates="no").prepare()

    class Deployment(ResampledSites):
        needs_client_data = False

    with pytest.raises(ConfigError, match="SuperNode would have to resample its own rows"):
        FedCDnv(bootstrap=2).fit(["s1", "s2"], backend=Deployment(0, 0))


def test_corrected_replicates_are_as_sparse_as_the_run_the_plain_ones_denser() -> None:
    # A chain, two sites over overlapping variables: the run on the sites' rows finds
    # (nearly) the chain. The plain bootstrap's tests take repeated rows for evidence
    # and keep pairs the chain separates; counted at half a row, replicates hold about
    # as many edges as the run (mean edges per replicate = the sum of the frequencies).
    scm = CategoricalSCM(chain_dag(6, seed=0), seed=0, n_categories=3)
    rows = scm.sample(1000, seed=1)
    names = list(rows.columns)
    sites = [
        ClientData("s1", rows.iloc[:500][names[:4]].reset_index(drop=True)),
        ClientData("s2", rows.iloc[500:][names[2:]].reset_index(drop=True)),
    ]
    edges = {}
    for correct in (False, True):
        model = FedCDnv(ci_test="g2", bootstrap=8, jobs=1, correct_duplicates=correct)
        model.fit(sites)
        edges[correct] = np.triu(model.edge_frequencies_.adjacency_matrix(), 1).sum()
    assert FedCDnv().correct_duplicates  # the default
    assert edges[False] > model.graph_.n_edges + 1.5
    assert edges[True] <= model.graph_.n_edges + 0.5


#: A bad bootstrap value -> its one line, the same for a run's settings and the options
#: object (an estimator's parameter: the same line after its method); a B past the bound
#: says why there is one.
BAD_BOOTSTRAP = [
    ({"subsample": 1.0}, "subsample must be a number in (0, 1) (or null), got 1.0"),
    (
        {"bootstrap": 20000},
        "bootstrap = 20000: each replicate runs the whole federation again (about 20000 "
        "times the fit's own time); give at most 10,000 (an edge's frequency has a "
        "standard error of at most 0.5/√B; docs/confidence.md)",
    ),
    ({"bootstrap": -1}, "bootstrap must be an integer in [0, 10000], got -1"),
    ({"jobs": 0}, "jobs must be an integer >= 1 (or null), got 0"),
]


@pytest.mark.parametrize(("given", "line"), BAD_BOOTSTRAP)
def test_bootstrap_options_are_checked_in_one_place_with_the_same_line(given, line) -> None:
    with pytest.raises(ConfigError) as options:
        BootstrapOptions(**given)
    assert str(options.value) == line
    settings = runnable("fedcdnv").settings
    with pytest.raises(ConfigError) as run:
        apply_settings(settings(), given, method="fedcdnv")
    assert str(run.value) == line
    with pytest.raises(ConfigError) as estimator:
        FedCDnv(**given).prepare()
    assert str(estimator.value) == f"fedcdnv {line}"


def test_bootstrap_options_are_built_from_the_flat_names_once() -> None:
    model = FedCDnv(bootstrap=4, subsample=0.5, correct_duplicates=False, jobs=2)
    options = model.bootstrap_options
    assert options == BootstrapOptions(4, 0.5, False, 2) and options.replicates == 4
    assert {"bootstrap", "subsample", "correct_duplicates", "jobs"} <= set(model.get_params())
    assert BootstrapOptions().replicates == 0 and BootstrapOptions(None).bootstrap == 0
    assert BootstrapOptions(0).params()["bootstrap"] is None  # model.json: no bootstrap
    settings = apply_settings(runnable("fedcdnv").settings(), {"bootstrap": 3}, method="fedcdnv")
    assert settings.bootstrap_options() == BootstrapOptions(3)
    with pytest.raises(AttributeError):
        options.jobs = 1  # frozen: one value, passed as is
