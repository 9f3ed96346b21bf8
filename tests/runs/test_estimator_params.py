"""A run builds its estimator from ``settings.estimator_params(source)`` (issue 52), and
asks its Source what it needs instead of the source's type."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from fedstruct.data import load_network
from fedstruct.registry import estimator_class
from fedstruct.runs.contract import build_estimator, runnable
from fedstruct.runs.settings import apply_settings

METHODS = Path(__file__).resolve().parents[2] / "src" / "fedstruct" / "methods"


def _settings(name: str, layer: dict) -> object:
    entry = runnable(name)
    return apply_settings(entry.settings(), dict(entry.quick), layer, method=name)


def test_no_run_asks_its_sources_type():
    found = [
        f"{path.relative_to(METHODS)}:{n}"
        for path in sorted(METHODS.rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"isinstance\(source\b", line)
    ]
    assert found == []


def test_every_method_builds_its_estimator_through_the_shared_function():
    for name in ("fedavg", "cafe", "fcm", "fedngm", "fedcd", "fedcdnv", "fedfci"):
        entry = runnable(name)
        assert entry.method is build_estimator, name
        assert entry.settings.method_name == name


def test_the_settings_named_like_parameters_reach_the_estimator_and_nothing_else():
    settings = _settings("fedcdnv", {"alpha": 0.1, "seed": 7, "jobs": 2})
    source = runnable("fedcdnv").resolve(settings)
    params = settings.estimator_params(source)
    assert set(params) <= set(estimator_class("fedcdnv")._get_param_names())
    assert (params["alpha"], params["seed"], params["jobs"]) == (0.1, 7, 2)
    assert params["kinds"] is None  # the protocol's data: no files' kinds
    assert params["participation"] == settings.participation(source.names)
    model = runnable("fedcdnv").method(settings, source)
    assert (model.alpha, model.seed, model.jobs) == (0.1, 7, 2)


def test_no_bootstrap_is_none_and_replicates_are_passed_on():
    for replicates, expected in ((0, None), (3, 3)):
        settings = _settings("fedfci", {"bootstrap": replicates})
        source = runnable("fedfci").resolve(settings)
        assert settings.estimator_params(source)["bootstrap"] == expected


def test_sampled_sites_give_their_levels_and_dag(tmp_path):
    settings = _settings("fedfci", {})
    source = runnable("fedfci").resolve(settings)
    network = load_network("asia")
    assert source.levels() == dict(network.cardinalities)
    assert source.graph_variables() == tuple(network.graph.names)
    assert source.column_kinds() == {} and source.report() == {}


def test_a_users_table_gives_the_schemas_kinds_levels_and_columns(tmp_path):
    rng = np.random.default_rng(0)
    paths = []
    for k in range(2):
        frame = pd.DataFrame({"x": rng.normal(size=60), "g": rng.choice(["a", "b", "c"], size=60)})
        frame.to_csv(tmp_path / f"s{k}.csv", index=False)
        paths.append(str(tmp_path / f"s{k}.csv"))
    settings = apply_settings(runnable("fedfci").settings(), {"sites": paths}, method="fedfci")
    source = runnable("fedfci").resolve(settings)
    assert source.sites is source and source.graph_variables() == ("x", "g")
    assert source.column_kinds() == {"x": "continuous", "g": "categorical"}
    assert source.levels() == {"g": 3}
    params = settings.estimator_params(source)
    assert params["kinds"] == {"x": "continuous", "g": "categorical"}
    assert params["levels"] == {"g": 3}


def test_fedcdnv_knowledge_and_reference_leave_the_latent_variables_out():
    settings = _settings("fedcdnv", {"latent_ratio": 0.25})
    source = runnable("fedcdnv").resolve(settings)
    assert source.split.latent
    assert source.graph_variables() == source.split.observed
    rows = source.reference_rows(50, seed=1)
    assert list(rows.columns) == list(source.split.observed) and len(rows) == 50


def test_the_real_sachs_reference_draws_no_more_rows_than_the_table_holds():
    settings = _settings("fedcdnv", {"network": "sachs-cytometry"})
    source = runnable("fedcdnv").resolve(settings)
    rows = source.reference_rows(10**7, seed=1)
    assert len(rows) == len(source.sampler.table)
