"""CAFE's sources: the paper's split built once per source, a user's image sites
read in the IMAGES format (a deployment's server: the schema only)."""

from __future__ import annotations

import numpy as np

from fedstruct.data.sites import SiteSpec
from fedstruct.methods.cafe.sources import SiteImages, SplitImages
from fedstruct.runs.contract import runnable
from fedstruct.runs.node_sites import describe, merge
from fedstruct.runs.settings import apply_settings
from fedstruct.runs.source import server_view


def _settings(layer: dict) -> object:
    return apply_settings(runnable("cafe").settings(), layer, method="cafe")


def test_the_papers_split_is_named_before_it_is_drawn_and_drawn_once():
    source = runnable("cafe").resolve(_settings({"clients": 4}))
    assert isinstance(source, SplitImages)
    assert source.names == ("client-1", "client-2", "client-3", "client-4")
    assert "federation" not in vars(source)
    assert source.clients() is source.clients() and source.test is source.federation.test
    assert (source.shape, source.n_classes, source.held_out) == ((1, 8, 8), 10, 0.0)
    assert source.truth is None


def _image_sites(tmp_path) -> list[SiteSpec]:
    rng = np.random.default_rng(0)
    specs = []
    for k, labels in enumerate((["cat", "dog"] * 10, ["cat", "owl"] * 12)):
        images = rng.integers(0, 255, size=(len(labels), 6, 6), dtype=np.uint8)
        np.savez(tmp_path / f"clinic-{k}.npz", images=images, labels=np.array(labels))
        specs.append(SiteSpec(f"clinic-{k}", tmp_path / f"clinic-{k}.npz"))
    return specs


def test_image_sites_are_read_with_one_class_codebook(tmp_path):
    specs = _image_sites(tmp_path)
    source = runnable("cafe").resolve(_settings({"sites": [str(s.path) for s in specs]}))
    assert isinstance(source, SiteImages) and source.names == ("clinic-0", "clinic-1")
    assert (source.shape, source.n_classes) == ((1, 6, 6), 3)
    assert [len(c.rows) for c in source.clients()] == [20, 24]
    assert source.schema.sites == {"clinic-0": 20, "clinic-1": 24}


def test_a_deployments_server_reads_the_image_schema_only(tmp_path):
    entry = runnable("cafe")
    specs = _image_sites(tmp_path)
    settings = _settings({"node_sites": ["clinic-0", "clinic-1"], "test_fraction": 0.25})
    schema = merge(entry, settings, [describe(entry, settings, s) for s in specs])
    for spec in specs:
        spec.path.unlink()  # the server never opens a site's file
    source = entry.resolve(settings, server_view(settings, schema, {}))
    assert isinstance(source, SiteImages) and source.clients() == []
    assert (source.shape, source.n_classes, source.held_out) == ((1, 6, 6), 3, 0.25)
    model = entry.method(settings, source)
    assert model.shape == (1, 6, 6)
