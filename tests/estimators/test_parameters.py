"""Issue 52, item 1: every method's estimator has an explicit ``__init__`` whose
parameters are attributes of the same name, checked in ``fit``; scikit-learn's own
``get_params``, ``set_params``, ``clone`` and reprs work on it."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from sklearn.base import BaseEstimator, clone

from fedstruct.data import ClientData, load_network
from fedstruct.errors import ConfigError, NotFittedError
from fedstruct.estimators import FederatedEstimator
from fedstruct.methods.fedavg import FedAvg
from fedstruct.methods.fedcd import FedCD
from fedstruct.methods.fedcdnv import FedCDnv, FedCDnvConfig
from fedstruct.registry import estimator_class, method_names

ESTIMATORS = {name: estimator_class(name) for name in method_names("estimator")}
ASIA = load_network("asia")


def test_every_registered_method_is_covered():
    assert set(ESTIMATORS) >= {"cafe", "fcm", "fedavg", "fedcd", "fedcdnv", "fedfci", "fedngm"}


@pytest.mark.parametrize("cls", ESTIMATORS.values(), ids=list(ESTIMATORS))
def test_scikit_learn_sees_every_parameter_of_the_signature(cls):
    """It saw 7 of FedCDnv's 26 (the rest hid behind ``**params``)."""
    names = BaseEstimator._get_param_names.__func__(cls)
    assert names == sorted(inspect.signature(cls).parameters)
    fields = {f.name for f in dataclasses.fields(cls.config_class)}
    assert fields | {"seed", "participation", "secure_aggregation"} <= set(names)


@pytest.mark.parametrize("cls", ESTIMATORS.values(), ids=list(ESTIMATORS))
def test_each_default_is_the_config_field_s_default(cls):
    """The config dataclass stays the one place a default is chosen."""
    parameters = inspect.signature(cls).parameters
    for field in dataclasses.fields(cls.config_class):
        default = parameters[field.name].default
        assert default == field.default and type(default) is type(field.default), field.name


def test_a_parameter_is_an_attribute_and_coupled_ones_are_set_one_at_a_time():
    model = FedCDnv()
    assert model.alpha == 0.05 and model.theta1 == 0.049
    assert model.set_params(alpha=0.01) is model and model.alpha == 0.01  # was a ConfigError
    assert model.get_params()["alpha"] == 0.01
    model.set_params(theta1=0.005)
    assert model.prepare().config_ == FedCDnvConfig(alpha=0.01, theta1=0.005)


def test_parameters_that_do_not_go_together_are_refused_at_fit_before_any_round():
    rows = ASIA.sample(100, seed=0)
    clients = [ClientData("a", rows.iloc[:50]), ClientData("b", rows.iloc[50:])]
    model = FedCDnv().set_params(alpha=0.01)
    with pytest.raises(ConfigError, match=r"theta1 = 0\.049 must lie in \(0, alpha = 0\.01\)"):
        model.fit(clients)
    assert not hasattr(model, "history_")  # no round ran


def test_config_is_a_fitted_attribute():
    model = FedCDnv(alpha=0.01, theta1=0.005)
    with pytest.raises(NotFittedError, match="has no config_"):
        model.config_  # noqa: B018
    assert model.prepare().config_.alpha == 0.01
    model.set_params(alpha=0.02)
    assert model.config_.alpha == 0.01  # what the last fit (or prepare) used, until the next


@pytest.mark.parametrize("cls", ESTIMATORS.values(), ids=list(ESTIMATORS))
def test_init_stores_every_argument_unchanged_so_clone_round_trips(cls):
    """scikit-learn's ``clone`` checks that each parameter is the object given."""
    required = {
        "fedavg": {"target": "y", "cardinalities": {"y": 2, "x": 3}},
        "fcm": {"task": "y", "cardinalities": {"y": 2, "x": 3}},
        "fedngm": {"kinds": {"a": "real", "b": "binary"}},
        "cafe": {"shape": [1, 8, 8], "n_classes": 10},
    }.get(cls.method, {})
    changed = {"seed": 7, "participation": None, **required}
    model = cls(**changed)
    copy = clone(model)
    assert type(copy) is cls and copy is not model
    assert copy.get_params() == model.get_params()
    for name, value in changed.items():
        assert getattr(model, name) is value  # unchanged: a list stays that list


def test_the_repr_shows_only_what_differs_from_the_defaults():
    assert repr(FedCDnv()) == "FedCDnv()"
    assert repr(FedCDnv(alpha=0.01, theta1=0.005)) == "FedCDnv(alpha=0.01, theta1=0.005)"
    assert repr(FedCD(rounds=2)) == "FedCD(rounds=2)"
    assert repr(FedAvg("y", {"y": 2})) == "FedAvg(cardinalities={'y': 2}, target='y')"
    html = FedCDnv(alpha=0.01)._repr_html_()
    assert "FedCDnv" in html and "alpha" in html and "0.01" in html


def test_set_params_and_init_refuse_an_unknown_name_in_one_line():
    with pytest.raises(ConfigError, match=r"^unknown fedcdnv parameter 'alpah' \(did you mean"):
        FedCDnv(alpah=0.01)
    with pytest.raises(ConfigError, match=r"^unknown fedcdnv parameter 'alpah' \(did you mean"):
        FedCDnv().set_params(alpah=0.01)


def test_a_method_whose_init_leaves_out_a_field_or_changes_its_default_is_refused():
    short = r"^Short.__init__ must take every field of FedCDnvConfig.*lacks .*alpha"
    with pytest.raises(TypeError, match=short):

        class Short(FedCDnv):
            def __init__(self, *, seed=0, participation=None, secure_aggregation=False):
                super().__init__(seed=seed, participation=participation)

    with pytest.raises(TypeError, match=r"defaults differ: alpha = 0\.1 \(the config's: 0\.05\)"):

        class Drifted(FedCDnv):
            def __init__(self, *, alpha=0.1, **params):
                super().__init__()


def test_the_base_is_scikit_learn_s_base_estimator():
    assert issubclass(FederatedEstimator, BaseEstimator)
    assert FederatedEstimator.get_params is BaseEstimator.get_params
