"""Every method package exports the same kinds of names: estimator, config, client, server."""

import dataclasses
import importlib

import pytest

from fedstruct.fl import Client
from fedstruct.fl.estimator import FederatedEstimator
from fedstruct.fl.federation import ServerAlgorithm

METHODS = ["fedavg", "fedcdnv", "fedcd", "fcm", "fedngm", "cafe"]


@pytest.mark.parametrize("method", METHODS)
def test_method_package_exports_estimator_config_client_and_server(method):
    package = importlib.import_module(f"fedstruct.methods.{method}")
    exported = {name: getattr(package, name) for name in package.__all__}
    estimators = [
        v for v in exported.values()
        if isinstance(v, type) and issubclass(v, FederatedEstimator)
    ]  # fmt: skip
    assert len(estimators) == 1
    est = estimators[0]
    assert est.method == method
    assert dataclasses.is_dataclass(est.config_class)
    assert issubclass(est.client_class, Client)
    assert issubclass(est.server_class, ServerAlgorithm)
    for cls in (est.config_class, est.client_class, est.server_class):
        assert exported.get(cls.__name__) is cls, cls.__name__
