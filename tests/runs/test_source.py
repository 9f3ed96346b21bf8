"""A run's data resolved once (runs/source.py): views, site files, the contract."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fedstruct.runs
from fedstruct.data.formats import TABLES
from fedstruct.data.sites import SiteSpec
from fedstruct.errors import ConfigError, DataError, UnknownVariableError
from fedstruct.runs.contract import runnable
from fedstruct.runs.settings import apply_settings
from fedstruct.runs.source import (
    SiteFiles,
    Source,
    checked_clients,
    node_view,
    server_view,
    site_view,
)


def tables(folder: Path, sizes=(30, 40)) -> list[Path]:
    """Two sites over columns a (two levels), b (three) and y (two)."""
    rng = np.random.default_rng(0)
    paths = []
    for k, n in enumerate(sizes):
        frame = pd.DataFrame(
            {
                "a": rng.choice(["lo", "hi"], n),
                "b": rng.choice(["x", "y", "z"], n),
                "y": rng.choice(["no", "yes"], n),
            }
        )
        path = folder / f"site{k}.csv"
        frame.to_csv(path, index=False)
        paths.append(path)
    return paths


def fedavg_settings(**layer):
    entry = runnable("fedavg")
    return entry, apply_settings(entry.settings(), layer, method="fedavg")


def test_built_in_data_have_no_view_and_node_sites_need_a_deployment():
    _, built_in = fedavg_settings()
    assert site_view(built_in) is None
    _, deployed = fedavg_settings(node_sites=["a", "b"], target="y")
    with pytest.raises(ConfigError, match="--backend flower"):
        site_view(deployed)


def test_the_view_names_the_sites_without_reading_them(tmp_path):
    paths = [tmp_path / "not-yet-1.csv", tmp_path / "not-yet-2.csv"]  # nothing to read
    _, settings = fedavg_settings(sites=[f"left={paths[0]}", f"right={paths[1]}"], target="y")
    view = site_view(settings)
    assert view is not None and view.names == ("left", "right")
    assert [s.path for s in view.here] == paths


def test_site_files_are_read_once_per_run_and_not_shared_between_runs(tmp_path):
    paths = tables(tmp_path)
    entry, settings = fedavg_settings(sites=[str(p) for p in paths], target="y")
    source = entry.resolve(settings)
    assert isinstance(source.sites, SiteFiles)
    first = source.sites.read
    assert source.sites.read is first  # read once
    assert [c.n_rows for c in checked_clients(source)] == [30, 40]
    assert source.report() == {
        "columns_categorical": 3.0,  # text columns
        "columns_ordinal": 0.0,
        "columns_continuous": 0.0,
        "rows_site0": 30.0,
        "dropped_rows_site0": 0.0,
        "constant_columns_site0": 0.0,
        "unobserved_columns_site0": 0.0,
        "rows_site1": 40.0,
        "dropped_rows_site1": 0.0,
        "constant_columns_site1": 0.0,
        "unobserved_columns_site1": 0.0,
    }
    # The same settings after the files changed: a new run reads the new files.
    tables(tmp_path, sizes=(12, 15))
    again = entry.resolve(settings)
    assert [c.n_rows for c in again.clients()] == [12, 15]
    assert source.sites.read is first


def test_a_deployed_node_reads_its_own_file_and_the_server_none(tmp_path):
    paths = tables(tmp_path)
    entry, settings = fedavg_settings(node_sites=["site0", "site1"], target="y")
    schema = TABLES.merge(
        [TABLES.describe(SiteSpec(p.stem, p), site_view_options(settings), {}) for p in paths],
        site_view_options(settings),
        {},
    )
    node = entry.resolve(settings, node_view(settings, SiteSpec("site1", paths[1]), schema))
    assert node.names == ("site0", "site1")
    assert [c.name for c in node.clients()] == ["site1"]
    report = node.sites.own_report()
    server = entry.resolve(
        settings, server_view(settings, schema, {"site0": {"dropped_rows": 0}, "site1": report})
    )
    assert server.clients() == []
    assert server.target == "y" and server.cardinalities == {"a": 2, "b": 3, "y": 2}
    assert server.report()["rows_site1"] == 40.0
    assert server.inputs() == node.inputs()


def site_view_options(settings):
    from fedstruct.runs.sites import site_options

    return site_options(settings, {})


def test_truth_is_checked_against_the_sites_variables(tmp_path):
    paths = tables(tmp_path)
    truth = tmp_path / "truth.dot"
    truth.write_text("digraph { a -> y; q -> y }\n")
    _, settings = fedavg_settings(sites=[str(p) for p in paths], target="y")
    view = site_view(settings)
    files = SiteFiles(dataclasses.replace(view, truth=str(truth)), TABLES, {})
    with pytest.raises(UnknownVariableError, match=r"names variables no site has: \['q'\]"):
        _ = files.truth
    truth.write_text("digraph { a -> y; b -> y }\n")
    files = SiteFiles(dataclasses.replace(view, truth=str(truth)), TABLES, {})
    assert sorted(files.truth.names) == ["a", "b", "y"]


def test_clients_that_are_not_the_named_ones_are_refused():
    class Wrong(Source):
        names = ("client-1", "client-2")

        def clients(self):
            from fedstruct.data.client import ClientData

            return [ClientData("client-2", pd.DataFrame({"x": [0, 1]}))]

    with pytest.raises(DataError, match=r"clients are \['client-2'\], expected"):
        checked_clients(Wrong())


def test_no_cache_keyed_on_settings_or_context_variable_holds_a_run_together():
    """The issue's done-when: no lru_cache and no ContextVar in the run layer."""
    root = Path(fedstruct.runs.__file__).parent
    found = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            name = getattr(node, "id", None) or getattr(node, "attr", None)
            if name in ("lru_cache", "ContextVar"):
                found.append(f"{path.relative_to(root)}:{node.lineno} {name}")
    assert not found, found
