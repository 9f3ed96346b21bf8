"""One SiteFormat for tables and images: describe -> merge -> read, as on a deployment.

Each format's three steps, run one site at a time with the merged schema (as the
sites' nodes do), give the same clients as reading every site on one machine.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedstruct.data.formats import IMAGES, TABLES, SiteFormat, SiteOptions
from fedstruct.data.sites import Manifest, SchemaLimits, SiteSpec
from fedstruct.errors import SampleSizeError, UnknownVariableError

OPTIONS = SiteOptions(limits=SchemaLimits(min_rows=2))


def table_sites(tmp_path: Path) -> tuple[SiteSpec, ...]:
    rng = np.random.default_rng(0)
    specs = []
    for k, sexes in enumerate((["f", "m"], ["m", "x"])):
        frame = pd.DataFrame(
            {
                "age": rng.normal(50, 10, 12).round(1),
                "sex": np.array(sexes)[rng.integers(0, 2, 12)],
                "y": rng.integers(0, 2, 12),
            }
        )
        path = tmp_path / f"h{k + 1}.csv"
        frame.to_csv(path, index=False)
        specs.append(SiteSpec(f"h{k + 1}", path))
    return tuple(specs)


def image_sites(tmp_path: Path) -> tuple[SiteSpec, ...]:
    rng = np.random.default_rng(1)
    specs = []
    for k, classes in enumerate((["cat", "dog"], ["dog", "eel"])):
        path = tmp_path / f"s{k + 1}.npz"
        images = rng.random((6, 1, 3, 3)).astype(np.float32)
        np.savez(path, images=images, labels=np.array(classes * 3))
        specs.append(SiteSpec(f"s{k + 1}", path))
    return tuple(specs)


def node_by_node(fmt: SiteFormat, specs, roles):
    """Each site described where it lies, merged, then each site read alone."""
    schema = fmt.merge([fmt.describe(s, OPTIONS, roles) for s in specs], OPTIONS, roles)
    return schema, [fmt.read(Manifest((s,)), OPTIONS, roles, schema) for s in specs]


@pytest.mark.parametrize(
    ("fmt", "sites", "roles"),
    [(TABLES, table_sites, {"supervised": ["y"]}), (IMAGES, image_sites, {})],
)
def test_a_format_read_node_by_node_equals_one_read(tmp_path, fmt, sites, roles) -> None:
    specs = sites(tmp_path)
    whole = fmt.read(Manifest(specs), OPTIONS, roles, None)
    _, alone = node_by_node(fmt, specs, roles)
    assert fmt.inputs(alone[0]) == fmt.inputs(whole)
    for read, client in zip(alone, whole.clients, strict=True):
        (own,) = read.clients
        assert own.name == client.name and own.supervised == client.supervised
        pd.testing.assert_frame_equal(own.rows, client.rows)
        assert fmt.report(read, own.name) == fmt.report(whole, own.name)


def test_tables_report_and_inputs(tmp_path) -> None:
    specs = table_sites(tmp_path)
    read = TABLES.read(Manifest(specs), OPTIONS, {}, None)
    assert TABLES.inputs(read) == {
        "variables": ["age", "sex", "y"],
        "kinds": {"age": "continuous", "sex": "categorical", "y": "categorical"},
        "levels": {"sex": ["f", "m", "x"], "y": ["0", "1"]},
    }
    assert TABLES.report(read, "h1") == {"dropped_rows": 0, "constant": []}


def test_images_merge_the_class_codebook(tmp_path) -> None:
    schema, _ = node_by_node(IMAGES, image_sites(tmp_path), {})
    read = IMAGES.read(Manifest(image_sites(tmp_path)), OPTIONS, {}, schema)
    assert IMAGES.inputs(read) == {"shape": [1, 3, 3], "classes": ["cat", "dog", "eel"]}
    assert IMAGES.report(read, "s1") == {}


def test_tables_apply_the_options_and_roles(tmp_path) -> None:
    specs = table_sites(tmp_path)
    strict = dataclasses.replace(OPTIONS, limits=SchemaLimits(min_rows=13))
    with pytest.raises(SampleSizeError, match=r"site 'h1' .* has 12 rows, fewer than the 13"):
        TABLES.describe(specs[0], strict, {})
    with pytest.raises(UnknownVariableError, match="no site has the regime column 'arm'"):
        TABLES.merge([TABLES.describe(s, OPTIONS, {}) for s in specs], OPTIONS, {"regime": "arm"})
    coded = TABLES.read(Manifest(specs), SiteOptions(kinds={"y": "continuous"}), {}, None)
    assert coded.schema.kinds["y"] == "continuous"
