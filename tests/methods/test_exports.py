"""Every method package exports the same kinds of names: estimator, config, client, server."""

import dataclasses
import importlib
import subprocess
import sys

import pytest

from fedstruct.estimators import FederatedEstimator
from fedstruct.fl import Client
from fedstruct.fl.federation import ServerAlgorithm
from fedstruct.registry import method_names


@pytest.mark.parametrize("method", method_names("estimator"))
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


@pytest.mark.parametrize("method", method_names("estimator"))
def test_importing_a_method_package_imports_none_of_its_modules(method):
    """The package's names are imported when first read: its config (a run's
    settings, ``--help``) without its estimator, torch or its client."""
    script = (
        f"import sys; from fedstruct.methods.{method} import {{}}; "
        "print(sorted(m for m in sys.modules if m.startswith('fedstruct.methods.')), "
        "'torch' in sys.modules)"
    )
    config = importlib.import_module(f"fedstruct.methods.{method}.config")
    name = next(n for n in vars(config) if n.endswith("Config") and n != "ENCOConfig"
                and isinstance(vars(config)[n], type))  # fmt: skip
    done = subprocess.run([sys.executable, "-c", script.format(name)], capture_output=True,
                          text=True, check=True, timeout=300)  # fmt: skip
    modules, torch = done.stdout.rsplit(" ", 1)
    assert f"fedstruct.methods.{method}.estimator" not in modules
    assert torch.strip() == "False"
