"""The estimator contract every method keeps: a signature that lists its hyper-parameters,
unknown names refused the same way in ``__init__`` and ``set_params``, ``score`` a float
and ``evaluate`` a dict, learned tables written through one hook."""

from __future__ import annotations

import dataclasses
import inspect
import pkgutil
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

import fedstruct.methods
from fedstruct.data import ClientData, horizontal, load_network
from fedstruct.data.datasets.images import load_digits
from fedstruct.data.scm import CategoricalSCM
from fedstruct.errors import ConfigError, DataError, NotFittedError
from fedstruct.estimators import FederatedEstimator, GraphLearner
from fedstruct.graphs import Graph
from fedstruct.graphs.io import write_graph
from fedstruct.graphs.random import chain_dag
from fedstruct.methods.cafe import CAFE
from fedstruct.methods.cafe.sources import image_clients
from fedstruct.methods.fcm import FCM
from fedstruct.methods.fedavg import FedAvg
from fedstruct.methods.fedcd import FedCD
from fedstruct.methods.fedcd.sources import horizontal_interventions
from fedstruct.methods.fedcdnv import FedCDnv
from fedstruct.methods.fedngm import FedNGM
from fedstruct.registry import estimator_class, method_names
from fedstruct.runs.artifacts import write_artifacts


def method_estimators() -> dict[str, type[FederatedEstimator]]:
    """Every method's estimator, found through the registry (each class registers
    itself under its ``method`` name when its module is imported)."""
    return {name: estimator_class(name) for name in method_names("estimator")}


ESTIMATORS = method_estimators()

#: A value for each input a method's estimator requires, by parameter name.
EXAMPLE_INPUTS = {
    "target": "y",
    "task": "y",
    "cardinalities": {"a": 2, "y": 2},
    "kinds": {"a": "real", "b": "binary"},
    "shape": (1, 8, 8),
    "n_classes": 10,
}


#: Inputs with a default because the method takes one of two sets of them (CAFE: an
#: image task's shape and classes, or a table's target and cardinalities): the set the
#: examples give.
CHOSEN_INPUTS = {"cafe": ("shape", "n_classes")}


def required_inputs(cls: type[FederatedEstimator]) -> dict[str, object]:
    required = [p.name for p in inspect.signature(cls).parameters.values() if p.default is p.empty]
    required += CHOSEN_INPUTS.get(cls.method, ())
    missing = [name for name in required if name not in EXAMPLE_INPUTS]
    assert not missing, f"add an example value for {missing} to EXAMPLE_INPUTS"
    return {name: EXAMPLE_INPUTS[name] for name in required}


def example(cls: type[FederatedEstimator], **params) -> FederatedEstimator:
    """An unfitted estimator with example inputs."""
    return cls(**required_inputs(cls), **params)


def test_every_method_package_has_its_estimator_found():
    packages = {p.name for p in pkgutil.iter_modules(fedstruct.methods.__path__)}
    assert set(ESTIMATORS) == packages and len(packages) >= 6
    assert all(cls.method == name for name, cls in ESTIMATORS.items())


@pytest.mark.parametrize("cls", ESTIMATORS.values(), ids=list(ESTIMATORS))
def test_signature_lists_every_hyper_parameter_with_its_default(cls):
    parameters = inspect.signature(cls).parameters
    assert not any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    for field in dataclasses.fields(cls.config_class):
        parameter = parameters[field.name]
        assert parameter.kind is parameter.KEYWORD_ONLY
        assert parameter.default == field.default
    assert {"seed", "participation"} <= set(parameters)
    estimator = example(cls)
    assert list(estimator.get_params()) != [] and set(estimator.get_params()) == set(parameters)


def pydoc_text(cls: type) -> str:
    import pydoc

    return pydoc.render_doc(cls, renderer=pydoc.plaintext)


def test_help_shows_the_hyper_parameters():
    header = pydoc_text(FedCD).splitlines()[3]  # the line under "class FedCD(...)"
    assert header.startswith(" |  FedCD(*, seed: 'int' = 0,")
    assert "rounds: 'int' = 5" in header and "**params" not in header


def test_a_subclass_of_a_method_keeps_its_signature():
    class Quiet(FedCD):
        pass

    assert inspect.signature(Quiet) == inspect.signature(FedCD)
    assert Quiet(rounds=2).rounds == 2 and Quiet(rounds=2).prepare().config_.rounds == 2


@pytest.mark.parametrize("cls", ESTIMATORS.values(), ids=list(ESTIMATORS))
def test_an_unknown_name_is_refused_in_init_and_set_params(cls):
    field = dataclasses.fields(cls.config_class)[0].name
    typo = field[:-1] + "z"
    expected = (
        rf"^unknown {cls.method} parameter '{typo}' \(did you mean '{field}'\?\); "
        rf"valid {cls.method} parameters: .*\bparticipation\b.*\bseed\b"
    )
    with pytest.raises(ConfigError, match=expected):
        example(cls, **{typo: 3})
    with pytest.raises(ConfigError, match=expected):
        example(cls).set_params(**{typo: 3})
    with pytest.raises(ConfigError, match=rf"^unknown {cls.method} parameter 'nonsense'; valid"):
        example(cls).set_params(nonsense=1)


def test_fedcd_typo_names_the_right_parameter():
    with pytest.raises(ConfigError) as caught:
        FedCD(roundz=3)
    message = str(caught.value)
    assert message.startswith("unknown fedcd parameter 'roundz' (did you mean 'rounds'?)")
    fields = [f.name for f in dataclasses.fields(FedCD.config_class)]
    assert all(name in message for name in [*fields, "seed", "participation"])


@pytest.mark.parametrize("cls", ESTIMATORS.values(), ids=list(ESTIMATORS))
def test_every_estimator_clones_with_scikit_learn(cls):
    estimator = example(cls, seed=3)
    copy = clone(estimator)
    assert copy is not estimator and type(copy) is type(estimator)
    assert copy.get_params() == estimator.get_params()
    assert copy.prepare().config_ == estimator.prepare().config_


@pytest.mark.parametrize("cls", ESTIMATORS.values(), ids=list(ESTIMATORS))
def test_an_unfitted_estimator_says_it_is_not_fitted(cls):
    """predict/score before fit were AttributeErrors on a private attribute (issue 49):
    now a NotFittedError (a ValueError and an AttributeError, as scikit-learn's)."""
    model = example(cls)
    not_fitted = f"this {cls.__name__} is not fitted yet (it has no .*_): call fit(clients)"
    with pytest.raises(NotFittedError, match=re.escape(not_fitted).replace(r"\.\*", ".*")):
        model.learned_state()
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)
    assert not hasattr(model, "model_") and getattr(model, "graph_", None) is None
    with pytest.raises(AttributeError, match="has no attribute '_private'"):
        model._private  # noqa: B018
    if isinstance(model, GraphLearner):
        return  # score(truth) says it learned no graph yet (test below)
    try:
        rows = pd.DataFrame(0, index=range(3), columns=list(model.input_columns().read))
    except NotFittedError:
        rows = pd.DataFrame({"a": [0, 1, 0]})
    target = {"target": "a"} if cls is FedNGM else {}
    for call in (lambda: model.prediction(rows), lambda: model.score(rows, **target)):
        with pytest.raises(NotFittedError, match="is not fitted yet"):
            call()


# --------------------------------------------------------------- score, evaluate
NET = load_network("asia")


@pytest.fixture(scope="module")
def fedavg():
    model = FedAvg("dysp", NET.cardinalities, rounds=1).fit(
        horizontal(NET.sample(400, seed=0), n_clients=2, seed=0)
    )
    return model, NET.sample(200, seed=1)


@pytest.fixture(scope="module")
def fcm():
    rows = NET.sample(600, seed=0)
    rng = np.random.default_rng(0)
    x = rows.to_numpy(np.float32) @ rng.normal(size=(len(NET.names), 4)).astype(np.float32)
    frame = pd.concat([pd.DataFrame(x, columns=[f"x{i}" for i in range(4)]), rows], axis=1)
    clients = [
        ClientData(
            f"c{k}", frame.iloc[k * 200 : (k + 1) * 200].reset_index(drop=True), list(NET.names)
        )
        for k in range(2)
    ]
    model = FCM(task="dysp", cardinalities=NET.cardinalities, rounds=1).fit(clients)
    return model, frame.iloc[400:].reset_index(drop=True)


@pytest.fixture(scope="module")
def cafe():
    digits = load_digits(seed=0)
    fed = image_clients(digits, 3, alpha=1.0, seed=0)
    return CAFE(digits.shape, 10, rounds=1, local_epochs=1).fit(fed.clients[:2]), fed.test


@pytest.fixture(scope="module")
def fedngm():
    rng = np.random.default_rng(0)
    a = rng.normal(size=600)
    b = a + 0.5 * rng.normal(size=600)
    c = (b > 0).astype(np.int64)
    frame = pd.DataFrame({"a": a, "b": b, "c": c})
    clients = [ClientData(f"h{k}", frame.iloc[k::2].reset_index(drop=True)) for k in range(2)]
    kinds = {"a": "real", "b": "real", "c": "binary"}
    return FedNGM(kinds=kinds, epochs=2, burn_in=3).fit(clients), frame.iloc[:100]


@pytest.fixture(scope="module")
def fedcd():
    dag = chain_dag(4, seed=0)
    scm = CategoricalSCM(dag, seed=0, n_categories=3)
    clients = horizontal_interventions(scm, 2, n_observational=300, n_per_intervention=30, seed=0)
    small = {"model_steps": 60, "graph_steps": 10, "graphs_per_step": 20}
    return FedCD(rounds=1, **small).fit(list(clients)), dag


@pytest.fixture(scope="module")
def fedcdnv():
    rows = NET.sample(1500, seed=0)
    names = list(NET.names)
    clients = [
        ClientData("a", rows[names[:6]].iloc[:750].reset_index(drop=True)),
        ClientData("b", rows[names[2:]].iloc[750:].reset_index(drop=True)),
    ]
    return FedCDnv().fit(clients), NET.graph


def test_predicting_estimators_score_a_float_their_main_metric(fedavg, fcm, cafe):
    for (model, rows), key in ((fedavg, "accuracy"), (fcm, "task_accuracy"), (cafe, "accuracy")):
        metrics = model.evaluate(rows)
        assert isinstance(metrics, dict) and all(isinstance(v, float) for v in metrics.values())
        score = model.score(rows)
        assert type(score) is float and score == metrics[key] and 0.0 <= score <= 1.0
    assert set(fcm[0].evaluate(fcm[1])) == {"task_accuracy", "concept_accuracy"}
    assert "concept_coverage" in fcm[0].evaluate(fcm[1], truth=NET.graph)


def test_y_gives_the_labels_as_in_scikit_learn(fedavg, fcm):
    model, rows = fedavg
    assert model.score(rows.drop(columns="dysp"), rows["dysp"].to_numpy()) == model.score(rows)
    model, rows = fcm
    assert model.score(rows.drop(columns="dysp"), rows["dysp"]) == model.score(rows)
    with pytest.raises(DataError, match="one 'dysp' label per row"):
        model.score(rows, rows["dysp"].iloc[:3])


def test_fedngm_scores_one_target_by_its_headline_metric(fedngm):
    model, rows = fedngm
    continuous = model.evaluate(rows, target="b")
    assert model.score(rows, target="b") == -continuous["mae"]
    binary = model.evaluate(rows, target="c")
    assert type(model.score(rows, target="c")) is float
    assert model.score(rows, target="c") == binary["auc"]
    assert model.score(rows.drop(columns="c"), rows["c"]) == binary["auc"]  # named by y
    with pytest.raises(ConfigError, match="name the one to score"):
        model.score(rows)


def test_graph_learners_score_the_f1_of_edges_against_a_truth(fedcd, fedcdnv, tmp_path):
    for model, truth in (fedcd, fedcdnv):
        assert isinstance(model, GraphLearner)
        metrics = model.evaluate(truth)
        assert {"shd", "precision_edge", "recall_edge", "f1_edge", "f1_orientation"} <= set(metrics)
        score = model.score(truth)
        assert type(score) is float and score == metrics["f1_edge"] and 0.0 <= score <= 1.0
        with pytest.raises(ConfigError, match="not y"):
            model.score(truth, [1, 2])
        with pytest.raises(ConfigError, match="take the true graph"):
            model.score(pd.DataFrame({"a": [1]}))
    model, truth = fedcdnv
    definite = {"fdr_dc", "fdr_dnc"} if any(model.definite_pairs_) else set()
    assert {"fdr_c", "fdr_nc", *definite} <= set(model.evaluate(truth))
    write_graph(truth, tmp_path / "truth.json")
    assert model.score(tmp_path / "truth.json") == model.score(truth)


def test_a_graph_learner_scores_over_the_union_of_variables():
    learned = Graph.from_edges(["a", "b", "c"], [("a", "b")])
    model = FedCDnv()
    model.graph_ = learned
    model.definite_pairs_ = ([], [])
    truth = Graph.from_edges(["a", "b", "d"], [("a", "b"), ("b", "d")])
    # adjacencies: learned {a-b}, true {a-b, b-d}: precision 1, recall 1/2
    assert model.score(truth) == pytest.approx(2 / 3)
    model.graph_ = None  # a run stopped before FedG was built
    with pytest.raises(ConfigError, match="learned no graph"):
        model.score(truth)


# ------------------------------------------------------------------ learned tables
def test_fedcd_writes_its_edge_probabilities_through_the_table_hook(fedcd, tmp_path):
    model, _ = fedcd
    written = write_artifacts(model, tmp_path)
    assert "edge-probabilities.csv" in written
    table = pd.read_csv(tmp_path / "edge-probabilities.csv", index_col=0)
    assert table.index.name == "from\\to" and list(table.columns) == list(model.graph_.names)
    np.testing.assert_allclose(table.to_numpy(), model.beliefs_.edge_probability)


def test_any_estimator_table_is_written(fedavg, tmp_path):
    class WithTable(FedAvg):
        def learned_tables(self):
            return {"calibration": pd.DataFrame({"p": [0.5]}, index=["bin-1"])}

    model = WithTable("dysp", NET.cardinalities).prepare()  # as fedstruct.load does
    model.restore(*fedavg[0].learned_state())
    assert "calibration.csv" in write_artifacts(model, tmp_path)
    assert (tmp_path / "calibration.csv").read_text().splitlines() == [",p", "bin-1,0.5"]
    assert FedAvg("dysp", NET.cardinalities).learned_tables() == {}
