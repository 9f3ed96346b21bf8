"""FedNGM's sources: the paper's federation built once per source, the user's files
read as FedNGM models their columns."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fedstruct.data.mixed import make_mixed_data
from fedstruct.data.sites import SiteSpec
from fedstruct.methods.fedngm.sources import MixedSites, SubpopulationSource
from fedstruct.runs.contract import runnable
from fedstruct.runs.node_sites import describe, merge
from fedstruct.runs.settings import apply_settings
from fedstruct.runs.source import server_view

SMALL = {"dataset": "synthetic", "variables": 8, "samples": 2000, "seed": 3}


def _settings(layer: dict) -> object:
    return apply_settings(runnable("fedngm").settings(), layer, method="fedngm")


def test_the_papers_source_names_its_clients_before_building_anything():
    source = runnable("fedngm").resolve(_settings(SMALL))
    assert isinstance(source, SubpopulationSource)
    assert source.names == ("client-1", "client-2", "client-3")
    assert "federation" not in vars(source) and "dataset" not in vars(source)
    assert source.clients() is source.clients()  # built once, kept by the source
    assert source.held_out == 0.0 and source.public is source.federation.public


def test_the_papers_truth_is_the_data_sets_graph():
    settings = _settings(SMALL)
    source = SubpopulationSource(settings)
    expected = make_mixed_data(8, 2000, seed=3).graph
    assert source.truth == expected
    assert source.kinds == source.federation.dataset.kinds


def _sites(tmp_path) -> list[SiteSpec]:
    rng = np.random.default_rng(0)
    specs = []
    for k in range(2):
        a = rng.normal(size=60)
        frame = pd.DataFrame(
            {"a": a, "group": np.where(a > 0, "hi", "lo"), "size": rng.integers(0, 3, 60)}
        )
        frame.to_csv(tmp_path / f"s{k}.csv", index=False)
        specs.append(SiteSpec(f"s{k}", tmp_path / f"s{k}.csv"))
    return specs


def test_site_files_are_read_as_fedngm_kinds_and_keep_rows_out(tmp_path):
    specs = _sites(tmp_path)
    settings = _settings(
        {"sites": [f"{s.name}={s.path}" for s in specs], "kinds": {"size": "categorical"}}
    )
    source = runnable("fedngm").resolve(settings)
    assert isinstance(source, MixedSites) and source.names == ("s0", "s1")
    assert source.kinds == {"a": "real", "group": "binary", "size": "categorical"}
    assert source.held_out == settings.test_fraction and source.public is None
    assert source.truth is None and source.report()["rows_s1"] == 60.0


def test_a_deployments_server_models_the_schema_without_a_file(tmp_path):
    entry = runnable("fedngm")
    specs = _sites(tmp_path)
    settings = _settings({"node_sites": ["s0", "s1"]})
    schema = merge(entry, settings, [describe(entry, settings, s) for s in specs])
    source = entry.resolve(settings, server_view(settings, schema, {}))
    assert source.clients() == [] and source.names == ("s0", "s1")
    # codes 0..2 in an integer column: ordinal
    assert source.kinds == {"a": "real", "group": "binary", "size": "ordinal"}
    model = entry.method(settings, source)
    assert model.kinds == source.kinds
