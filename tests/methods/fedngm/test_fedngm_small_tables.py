"""FedNGM on small real-sized tables: training length and variables with no neighbour.

anes96's sites (about 250 training rows each) got one Adam step per epoch and flat
conditionals; a variable the merged graph leaves isolated is predicted by its
marginal, which the user must be told (docs/fedngm.md, "Small sites").
"""

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.client import ClientData
from fedstruct.errors import FedstructWarning
from fedstruct.fl.grid import torch_threads
from fedstruct.graphs.undirected import undirected
from fedstruct.methods.fedngm import FedNGM
from fedstruct.methods.fedngm.config import FedNGMConfig
from fedstruct.methods.fedngm.model import fit_ngm, isolated_message
from fedstruct.methods.fedngm.schema import Schema
from fedstruct.methods.fedngm.structure import glasso_graph
from fedstruct.methods.fedngm.train import batch_rows
from fedstruct.results import use

#: P(y = 1 | x), a survey's vote given party identification (anes96: 0.015 ... 0.954).
P_Y = np.array([0.02, 0.06, 0.06, 0.3, 0.75, 0.83, 0.95])
KINDS = {"x": "categorical", "y": "binary", "z": "real"}


def _survey(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 7, size=n)
    return pd.DataFrame(
        {"x": x, "y": (rng.random(n) < P_Y[x]).astype(int), "z": rng.standard_normal(n)}
    )


def test_batch_rows_cuts_a_small_table_into_min_batches():
    assert batch_rows(225, 256, 4) == 57  # anes96's site: 4 batches, not 1
    assert batch_rows(864, 256, 4) == 256  # already 4 batches of 256: unchanged
    assert batch_rows(10_000, 256, 4) == 256
    assert batch_rows(3, 256, 4) == 1
    assert batch_rows(225, 256, 1) == 256


@pytest.mark.parametrize(("min_batches", "learns"), [(4, True), (1, False)])
def test_a_small_site_learns_a_strong_conditional(min_batches, learns):
    """250 rows, 60 epochs: with one batch per epoch (60 Adam steps) P(y | x) stays
    near the marginal (measured 0.35 and 0.55); with the default 4 it reaches the
    data's 0.02 and 0.95."""
    frame = _survey(250)
    schema = Schema.from_frame(frame, KINDS)
    adjacency = undirected(["x", "y", "z"], np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]])).adjacency()
    config = FedNGMConfig(min_batches=min_batches)
    with torch_threads(1):
        model, _ = fit_ngm(schema, [(schema.encode(frame), 1.0)], adjacency, config, seed=0)
    p = model.predict_proba(pd.DataFrame({"x": [0, 6]}), "y", evidence=["x"])[:, 1]
    assert bool(p[0] < 0.1 and p[1] > 0.9) == learns, p


@pytest.fixture(scope="module")
def isolated_z():
    """A FedNGM whose given graph links x and y and leaves z isolated."""
    frame = _survey(300, seed=1)
    clients = [ClientData(f"s{k}", frame.iloc[k::2].reset_index(drop=True)) for k in range(2)]
    graph = undirected(["x", "y", "z"], np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]]))
    with torch_threads(1):
        return FedNGM(kinds=KINDS, graph=graph, epochs=2).fit(clients)


def test_predicting_a_variable_with_no_neighbour_warns(isolated_z):
    rows = pd.DataFrame({"x": [0, 6], "y": [0, 1]})
    with pytest.warns(FedstructWarning, match="'z' has no neighbour"):
        prediction = isolated_z.coded_prediction(rows, ["z"])
    assert len(prediction.warnings) == 1 and "'z'" in prediction.warnings[0]
    assert isolated_message(isolated_z.model_, "y") is None
    linked = isolated_z.coded_prediction(rows.drop(columns="y"), ["y"])
    assert linked.warnings == ()


def test_querying_a_variable_with_no_neighbour_warns(isolated_z, monkeypatch):
    monkeypatch.setattr(use, "_joint_model", lambda folder, what: isolated_z)
    with pytest.warns(FedstructWarning, match="'z' has no neighbour"):
        table = use.query("run", {"x": "6"}, "z")
    assert table.attrs["warnings"] and "'z'" in table.attrs["warnings"][0]
    assert use.query("run", {"x": "6"}, "y").attrs["warnings"] == []


def test_a_perfect_own_model_leaves_its_variable_out_of_the_ratio(monkeypatch):
    """The own model's error 0 on a few held-out rows made the ratio infinite and the
    run fail at its end (breast cancer, edge_level=None); it is left out of the mean."""
    from types import SimpleNamespace

    from fedstruct.methods.fedngm import metrics

    errors = {("g", "a"): 0.1, ("o", "a"): 0.0, ("g", "b"): 2.0, ("o", "b"): 1.0}
    monkeypatch.setattr(
        metrics, "prediction_metrics", lambda m, test, v: {"mae": errors[(m.tag, v)]}
    )
    schema = SimpleNamespace(names=("a", "b"))
    glob, own = SimpleNamespace(tag="g", schema=schema), SimpleNamespace(tag="o", schema=schema)
    rows = pd.DataFrame({"a": [0.0], "b": [0.0]})
    assert metrics.global_own_ratio(glob, own, rows) == 2.0
    assert metrics.global_own_ratio(glob, own, rows[["a"]]) is None


def test_sample_draws_with_the_run_s_burn_in(monkeypatch):
    """`fedstruct sample` used the default 30 sweeps whatever the run set."""
    frame = _survey(120, seed=2)
    clients = [ClientData(f"s{k}", frame.iloc[k::2].reset_index(drop=True)) for k in range(2)]
    with torch_threads(1):
        est = FedNGM(kinds=KINDS, epochs=1, burn_in=1).fit(clients)
    monkeypatch.setattr(use, "_joint_model", lambda folder, what: est)
    drawn = use.sample("run", 50, seed=4)
    pd.testing.assert_frame_equal(drawn, est.model_.sample(50, seed=4, burn_in=1))
    assert not drawn.equals(est.model_.sample(50, seed=4))


#: Six breast-cancer measurements (scikit-learn's bundled data, nearly collinear: the
#: radii correlate 0.97) beside the diagnosis.
MEASUREMENTS = ["mean radius", "mean texture", "mean concave points", "worst radius",
                "worst concave points", "worst texture"]  # fmt: skip


@pytest.fixture
def one_hospital(monkeypatch):
    """One breast-cancer hospital of 110 rows and a column of pure noise; the graphical
    lasso at one fixed penalty instead of its cross-validated one (seconds per fit)."""
    from sklearn.covariance import GraphicalLasso
    from sklearn.datasets import load_breast_cancer

    from fedstruct.methods.fedngm import structure

    monkeypatch.setattr(
        structure, "_glasso_fit", lambda x, cv, labels: GraphicalLasso(0.05, max_iter=1000).fit(x)
    )
    monkeypatch.setattr(structure, "cv_failed_below", lambda model, threshold: False)
    data = load_breast_cancer(as_frame=True).frame.rename(columns={"target": "diagnosis"})
    rows = data[[*MEASUREMENTS, "diagnosis"]].sample(110, random_state=0).reset_index(drop=True)
    rows["noise"] = np.random.default_rng(0).standard_normal(len(rows))
    kinds = {c: "real" for c in rows.columns} | {"diagnosis": "binary"}
    return rows, Schema.from_frame(rows, kinds)


def _neighbours(graph, name):
    return {graph.names[j] for j in graph.adjacency()[graph.names.index(name)].nonzero()[0]}


@pytest.mark.parametrize("missing", [False, True])
def test_a_dependent_variable_the_edge_test_isolates_keeps_its_glasso_neighbours(
    one_hospital, missing
):
    """Given the other (collinear) measurements the diagnosis's partial correlations are
    below the edge test's threshold at 110 rows, so the test alone left it isolated (on
    the full data the global model predicted one probability for every row); its
    marginal correlations (0.4-0.8) show it is not independent, and it keeps the
    graphical lasso's neighbours it is marginally dependent on. The noise column,
    marginally independent of everything, stays isolated."""
    rows, schema = one_hospital
    if missing:  # the pairwise-complete path (docs/fedngm.md, "Missing values")
        rows = rows.mask(np.random.default_rng(1).random(rows.shape) < 0.02)
    kw = {"cv": 3, "max_rows": 10_000, "seed": 0, "edge_level": 0.2}
    alone = glasso_graph(rows, schema, isolated="none", **kw)
    linked = glasso_graph(rows, schema, **kw)
    assert not _neighbours(alone, "diagnosis")
    found = _neighbours(linked, "diagnosis")
    assert len(found) >= 3, found
    strength = rows.corr()["diagnosis"].abs()
    assert (strength[sorted(found)] > 0.3).all(), strength
    assert not _neighbours(linked, "noise")
    assert (alone.adjacency() <= linked.adjacency()).all()  # the test's own edges stay


def test_small_sites_distil_from_at_least_the_floor_per_client():
    """anes96's three sites (755 training rows) gave the global model 755 samples and
    a sampled P(Dole) of 0.391 against the data's 0.416 (3,000 samples: 0.412)."""
    from fedstruct.methods.fedngm.server import distillation_total

    rows = {"a": 250, "b": 225, "c": 280}
    assert distillation_total(rows, FedNGMConfig()) == 3_000
    assert distillation_total(rows, FedNGMConfig(min_distillation_samples=0)) == 755
    assert distillation_total(rows, FedNGMConfig(distillation_samples=900)) == 900
    big = {"a": 8_000, "b": 8_000, "c": 8_000}  # the synthetic recipe's clients
    assert distillation_total(big, FedNGMConfig()) == 24_000


def test_the_new_settings_are_checked():
    from fedstruct.errors import ConfigError

    with pytest.raises(ConfigError, match="isolated_edges"):
        FedNGMConfig(isolated_edges="all")
    with pytest.raises(ConfigError, match="min_distillation_samples"):
        FedNGMConfig(min_distillation_samples=-1)
    cfg = FedNGMConfig()
    assert (cfg.isolated_edges, cfg.min_distillation_samples) == ("glasso", 1_000)
