"""FedFCI, the estimator: the pooled search across sites, on every path a run can take."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fedstruct.data import ClientData, load_network
from fedstruct.discovery import Knowledge, fci, make_ci_test
from fedstruct.errors import DataError
from fedstruct.methods.fedfci import FedFCI


@pytest.fixture(scope="module")
def asia() -> pd.DataFrame:
    return load_network("asia").sample(3000, seed=2)


def sites_of(rows: pd.DataFrame, k: int, **drops: list[str]) -> list[ClientData]:
    parts = np.array_split(np.arange(len(rows)), k)
    out = []
    for s, part in enumerate(parts):
        name = f"site-{s + 1}"
        frame = (
            rows.iloc[part]
            .reset_index(drop=True)
            .drop(columns=drops.get(name.replace("-", "_"), []))
        )
        out.append(ClientData(name, frame, missing_values=bool((frame == -1).any().any())))
    return out


def local_fci(rows: pd.DataFrame):
    cards = [int(rows[c].max()) + 1 for c in rows.columns]
    return fci(make_ci_test(rows, "g2", cardinalities=cards), workers=1)


def test_the_federation_finds_the_pooled_graph_in_a_few_exchanges(asia) -> None:
    model = FedFCI().fit(sites_of(asia, 3))
    local = local_fci(asia)
    assert model.graph_ == local.graph
    assert model.ci_test_ == "g2"
    assert 1 <= model.exchanges_ <= 6  # a batch per level and phase, not a test per exchange
    pvalues = model.pvalues_.to_numpy()
    assert np.allclose(
        np.nan_to_num(pvalues, nan=-1), np.nan_to_num(local.pvalues, nan=-1), atol=1e-9
    )
    assert model.sepsets_ == {
        (local.names[a], local.names[b]): tuple(local.names[k] for k in z)
        for (a, b), z in local.sepsets.items()
    }
    history = model.history_
    assert [h["round"] for h in history[:2]] == [1, 2]
    assert all(h["requests"] >= 1 for h in history[2:])


def test_secure_aggregation_gives_the_same_search(asia) -> None:
    """Counts are integers: the masked sums are exact, and so is every p-value."""
    sites = sites_of(asia, 3)
    plain = FedFCI().fit(sites)
    secure = FedFCI(secure_aggregation=True).fit(sites)
    assert secure.graph_ == plain.graph_
    assert np.array_equal(
        np.nan_to_num(secure.pvalues_.to_numpy(), nan=-1),
        np.nan_to_num(plain.pvalues_.to_numpy(), nan=-1),
    )


def test_a_pair_measured_together_by_one_site_is_undecided(asia) -> None:
    sites = sites_of(asia, 3, site_1=["asia"], site_2=["asia"])
    model = FedFCI().fit(sites)
    assert {frozenset(p) for p in model.undecided_} == {
        frozenset(("asia", v)) for v in asia.columns if v != "asia"
    }
    assert all(not model.graph_.is_adjacent("asia", v) for v in asia.columns if v != "asia")
    assert "undecided" in model.learned_tables()


def test_sites_that_give_a_variable_two_kinds_are_refused(asia) -> None:
    sites = sites_of(asia, 2)
    sites[1] = ClientData("site-2", sites[1].rows.astype({"smoke": float}))
    with pytest.raises(DataError, match="'smoke' is categorical at site 'site-1' but continuous"):
        FedFCI().fit(sites)


def test_one_site_is_refused(asia) -> None:
    with pytest.raises(DataError, match="at least min_sites = 2 sites"):
        FedFCI().fit(sites_of(asia, 1))


def test_a_constant_variable_is_named_or_left_out(asia) -> None:
    rows = asia.assign(constant=0)
    with pytest.raises(DataError, match="'constant' is constant over the sites' pooled rows"):
        FedFCI().fit(sites_of(rows, 2))
    model = FedFCI(constant_columns="exclude").fit(sites_of(rows, 2))
    assert model.excluded_ == ("constant",)
    assert model.graph_ == local_fci(asia).graph


def test_knowledge_reaches_the_search(asia) -> None:
    knowledge = Knowledge(forbidden_adjacent=[("smoke", "lung")])
    model = FedFCI(knowledge=knowledge).fit(sites_of(asia, 2))
    assert not model.graph_.is_adjacent("smoke", "lung")
    assert FedFCI().fit(sites_of(asia, 2)).graph_.is_adjacent("smoke", "lung")


def test_a_stopped_run_resumes_to_the_same_graph(asia, tmp_path) -> None:
    sites = sites_of(asia, 3)
    checkpoint = tmp_path / "checkpoint.safetensors"
    stopped = FedFCI().fit(sites, checkpoint=checkpoint, stop_after=3)
    assert stopped.graph_ is None
    resumed = FedFCI().fit(sites, checkpoint=checkpoint, resume=True)
    whole = FedFCI().fit(sites)
    assert resumed.graph_ == whole.graph_
    assert resumed.exchanges_ == whole.exchanges_
    assert resumed.n_tests_ == whole.n_tests_


def test_the_bootstrap_resamples_each_site(asia) -> None:
    model = FedFCI(bootstrap=2, jobs=1).fit(sites_of(asia, 2))
    frequencies = model.edge_frequencies_.adjacency_matrix()
    assert frequencies.max() == 1.0 and model.consensus_graph_ is not None


def test_differential_privacy_spends_the_budget_and_refuses_beyond_it(asia) -> None:
    """dp_epsilon: each site noises every batch it releases; ε is composed over the
    exchanges, and a search needing more releases than planned stops in one line."""
    levels = {v: int(asia[v].max()) + 1 for v in asia.columns}
    model = FedFCI(dp_epsilon=8.0, dp_releases=8, levels=levels).fit(sites_of(asia, 3))
    assert 0 < model.dp_epsilon_spent_ <= 8.0 + 1e-9
    assert model.graph_ is not None and model.exchanges_ <= 8
    with pytest.raises(DataError, match="privacy budget dp_epsilon = 1 is spent after 2 releases"):
        FedFCI(dp_epsilon=1.0, dp_releases=2, levels=levels).fit(sites_of(asia, 3))


def test_differential_privacy_needs_public_levels_and_categories(asia) -> None:
    from fedstruct.errors import ConfigError

    with pytest.raises(ConfigError, match=r"dp_delta = 0\.001 has no effect without dp_epsilon"):
        FedFCI(dp_delta=1e-3).prepare()
    with pytest.raises(DataError, match="none is given for 'asia'"):
        FedFCI(dp_epsilon=1.0).fit(sites_of(asia, 2))
    floats = sites_of(asia.astype({"smoke": float}), 2)
    with pytest.raises(DataError, match="'smoke' is continuous"):
        FedFCI(dp_epsilon=1.0, levels={"smoke": 2}).fit(floats)
