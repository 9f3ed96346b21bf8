"""A user's own per-site files: reading, kinds, schemas, the codebook, manifests, errors.

The manifest format these tests use (documented in ``fedstruct.data.sites``)::

    sites:
      - path: h1.csv            # relative to the manifest's folder
        name: north             # default: the file's stem
        kinds: {stage: ordinal}
        graph: g1.json          # kept as a resolved path for another module
        regime: target
        supervised: [y]
    kinds: {age: continuous}
    missing: error              # or drop-rows
    delimiter: ","
    regime: target
    supervised: [y]
    target: y                   # method roles: target, label, inputs, concepts, task,
    truth: truth.json           # truth (a path, resolved)
"""

from __future__ import annotations

import json
import logging
import os
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fedstruct.data import load_network
from fedstruct.data.client import ClientData
from fedstruct.data.graph_files import read_graph_file
from fedstruct.data.sites import (
    ColumnSchema,
    FederationSchema,
    SchemaLimits,
    SiteSchema,
    describe_site,
    encode_site,
    infer_kinds,
    merge_schemas,
    read_federation,
    read_manifest,
    read_site,
    read_table,
    require_kinds,
    site_schema,
    unobserved_as_missing,
)
from fedstruct.errors import (
    ConfigError,
    DataError,
    FedstructWarning,
    SampleSizeError,
    UnknownVariableError,
)
from fedstruct.runs.site_args import parse_site_args


def read_small_federation(source, **options):
    """read_federation for these tests' sites of 2-3 rows (the schema limits, which
    refuse sites under 10 rows, have their own tests below)."""
    return read_federation(source, min_site_rows=1, **options)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def exact(message: str) -> str:
    return "^" + re.escape(message) + "$"


H1 = "age,sex,smoker,stage\n61.5,f,1,2\n47.25,m,0,1\n55.0,f,1,3\n"
H2 = "age;sex;smoker;stage\n70.5;m;1;10\n38.75;x;0;2\n"


@pytest.fixture
def two_sites(tmp_path: Path) -> tuple[Path, Path]:
    return write(tmp_path / "h1.csv", H1), write(tmp_path / "h2.csv", H2)


# ------------------------------------------------------------- read_table
def test_read_table_sniffs_delimiters(tmp_path: Path) -> None:
    comma = read_table(write(tmp_path / "a.csv", "a,b\n1,x\n2,y\n"))
    semi = read_table(write(tmp_path / "b.csv", "a;b\n1;x\n2;y\n"))
    tab = read_table(write(tmp_path / "c.tsv", "a\tb\n1\tx\n2\ty\n"))
    pipe = read_table(write(tmp_path / "d.txt", "a|b\n1|x\n2|y\n"))
    single = read_table(write(tmp_path / "e.csv", "a\n1\n2\n"))
    for frame in (comma, semi, tab, pipe):
        assert list(frame.columns) == ["a", "b"] and frame["a"].tolist() == [1, 2]
        assert frame["b"].tolist() == ["x", "y"]
    assert list(single.columns) == ["a"]
    given = read_table(write(tmp_path / "f.dat", "a:b\n1:2\n"), delimiter=":")
    assert given.to_numpy().tolist() == [[1, 2]]
    assert read_table(tmp_path / "c.tsv", delimiter="tab").shape == (2, 2)


def test_read_table_parquet_and_gzip(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "x"], "c": [0.5, 1.5, 2.5]})
    frame.to_parquet(tmp_path / "s.parquet")
    frame.to_csv(tmp_path / "s.csv.gz", index=False)
    for name in ("s.parquet", "s.csv.gz"):
        back = read_table(tmp_path / name)
        assert back["a"].tolist() == [1, 2, 3] and back["b"].tolist() == ["x", "y", "x"]
        assert back["c"].tolist() == [0.5, 1.5, 2.5]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("empty.csv", "", "file {p} is empty; it needs a header row and at least one row"),
        ("header.csv", "a,b\n", "file {p} has a header but no rows; add the site's rows"),
        (
            "dup.csv",
            "a,b,a\n1,2,3\n",
            "file {p}: column name 'a' appears twice in the header (columns 1 and 3); rename one",
        ),
        ("noname.csv", "a,,c\n1,2,3\n", "file {p}: column 2 of the header has no name; name it"),
    ],
)
def test_read_table_bad_files(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = write(tmp_path / name, text)
    with pytest.raises(DataError, match=exact(message.format(p=path))):
        read_table(path)


def test_read_table_missing_file_and_folder(tmp_path: Path) -> None:
    with pytest.raises(
        DataError, match=exact(f"file {tmp_path / 'no.csv'} does not exist; check the path")
    ):
        read_table(tmp_path / "no.csv")
    with pytest.raises(DataError, match="is a folder, not a table file"):
        read_table(tmp_path)


def test_read_table_duplicate_parquet_columns(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table([pa.array([1, 2]), pa.array([3, 4])], names=["a", "a"])
    pq.write_table(table, tmp_path / "d.parquet")
    with pytest.raises(DataError, match="column name 'a' appears twice in the header"):
        read_table(tmp_path / "d.parquet")


def test_read_table_ragged_rows_name_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "r.csv", "a,b\n1,2\n3,4,5\n")
    with pytest.raises(DataError, match=f"^file {re.escape(str(path))} does not parse with"):
        read_table(path, delimiter=",")


# ------------------------------------------------------------------ kinds
def test_infer_kinds_rule_and_overrides() -> None:
    frame = pd.DataFrame(
        {
            "text": ["a", "b", "a", "c"],
            "flag": [True, False, True, True],
            "few": [0, 1, 2, 1],
            "many": [1, 2, 3, 4],
            "real": [0.5, 1.5, 2.5, 3.5],
            "gappy": [1.0, np.nan, 2.0, 1.0],
            "score": [1.0, 2.0, 3.0, 2.0],
            "binary": [0, 1, 1, 0],
            "binary_float": [0.0, 1.0, np.nan, 1.0],
            "infinite": [1.0, np.inf, 2.0, 1.0],
            "regime": ["obs", "few", "", "obs"],
        }
    )
    kinds = infer_kinds(frame, max_levels=3, regime="regime")
    assert kinds == {
        "text": "categorical",
        "flag": "categorical",
        "few": "ordinal",  # whole numbers, 3 <= max_levels levels: a score
        "many": "continuous",  # 4 > max_levels levels
        "real": "continuous",
        "gappy": "categorical",  # two levels (missing values aside): binary
        "score": "ordinal",  # whole numbers stored as floats
        "binary": "categorical",
        "binary_float": "categorical",
        "infinite": "continuous",
    }
    assert infer_kinds(frame[["few"]], {"few": "categorical"}) == {"few": "categorical"}
    with pytest.raises(UnknownVariableError, match="kinds names column 'nope'"):
        infer_kinds(frame, {"nope": "continuous"})
    with pytest.raises(
        ConfigError,
        match=exact(
            "column 'few': unknown kind 'nominal'; valid kinds: categorical, ordinal, continuous"
        ),
    ):
        infer_kinds(frame, {"few": "nominal"})


def test_infer_kinds_float_column_sampled_then_read_whole() -> None:
    """A float column whose first rows are whole numbers is read whole: a fraction or
    too many levels after the sampled rows still make it continuous."""
    whole = np.tile(np.arange(1.0, 6.0), 400)  # 2,000 rows, scores 1..5
    late_fraction = whole.copy()
    late_fraction[-1] = 2.5
    late_levels = whole.copy()
    late_levels[-20:] = np.arange(20.0, 40.0)
    frame = pd.DataFrame({"score": whole, "fraction": late_fraction, "levels": late_levels})
    assert infer_kinds(frame) == {
        "score": "ordinal",
        "fraction": "continuous",
        "levels": "continuous",
    }


# ---------------------------------------------------------------- schemas
def test_site_schema_levels_sorted_numerically_or_lexicographically() -> None:
    frame = pd.DataFrame({"n": [10, 2, 2, 1], "t": ["b", "a", "B", "a"], "x": [0.1, 0.2, 0.3, 0.4]})
    schema = site_schema("s", frame, {"n": "categorical", "t": "categorical", "x": "continuous"})
    assert schema == SiteSchema(
        "s",
        4,
        (
            ColumnSchema("n", "categorical", ("1", "2", "10")),
            ColumnSchema("t", "categorical", ("B", "a", "b")),
            ColumnSchema("x", "continuous"),
        ),
    )


def test_merge_schemas_unions_levels_in_first_seen_order(two_sites) -> None:
    h1, h2 = (read_table(p) for p in two_sites)
    a = site_schema("h1", h1, infer_kinds(h1))
    b = site_schema("h2", h2, infer_kinds(h2))
    merged = merge_schemas([a, b])
    assert merged == FederationSchema(
        variables=("age", "sex", "smoker", "stage"),
        kinds={
            "age": "continuous",
            "sex": "categorical",
            "smoker": "categorical",  # 0/1: two levels
            "stage": "ordinal",  # whole numbers, 4 levels over the two sites
        },
        levels={"sex": ("f", "m", "x"), "smoker": ("0", "1"), "stage": ("1", "2", "3", "10")},
        sites={"h1": ("age", "sex", "smoker", "stage"), "h2": ("age", "sex", "smoker", "stage")},
        rows={"h1": 3, "h2": 2},
    )
    assert merged.cardinalities() == {"sex": 3, "smoker": 2, "stage": 4}


def test_merge_promotes_few_integers_to_continuous_and_rejects_text() -> None:
    few = SiteSchema("small", 3, (ColumnSchema("age", "categorical", ("40", "50")),))
    many = SiteSchema("big", 300, (ColumnSchema("age", "continuous"),))
    assert merge_schemas([few, many]).kinds == {"age": "continuous"}
    assert merge_schemas([few, many]).levels == {}
    text = SiteSchema("t", 3, (ColumnSchema("age", "categorical", ("old", "young")),))
    with pytest.raises(
        DataError,
        match=exact(
            "column 'age' is categorical at site 't' and continuous at site 'big'; give it "
            "one kind for every site, e.g. --set kinds.age=categorical"
        ),
    ):
        merge_schemas([text, many])
    ordinal = SiteSchema("o", 3, (ColumnSchema("age", "ordinal", ("40", "50", "60")),))
    # whole numbers: two levels at one site (categorical), three at another -> ordinal
    assert merge_schemas([ordinal, few]).kinds == {"age": "ordinal"}
    assert merge_schemas([ordinal, many]).kinds == {"age": "continuous"}
    with pytest.raises(DataError, match="'age' is ordinal at site 'o' and categorical at site 't'"):
        merge_schemas([ordinal, text])
    assert merge_schemas([ordinal, few], {"age": "ordinal"}).kinds == {"age": "ordinal"}
    with pytest.raises(DataError, match="was read as continuous, so it reported no levels"):
        merge_schemas([few, many], {"age": "categorical"})
    with pytest.raises(UnknownVariableError, match=r"kinds names \['weight'\], which no site has"):
        merge_schemas([few], {"weight": "continuous"})
    with pytest.raises(DataError, match=r"site names must be unique; repeated: \['small'\]"):
        merge_schemas([few, few])


def test_schema_configs_survive_json(two_sites) -> None:
    h1, h2 = (read_table(p) for p in two_sites)
    a = site_schema("h1", h1, infer_kinds(h1))
    b = site_schema("h2", h2, infer_kinds(h2))
    merged = merge_schemas([a, b])
    assert SiteSchema.from_config(json.loads(json.dumps(a.to_config()))) == a
    assert FederationSchema.from_config(json.loads(json.dumps(merged.to_config()))) == merged
    config = merged.to_config()
    for value in config.values():  # flat: str, int or a list of str
        assert isinstance(value, str | int) or all(isinstance(v, str) for v in value)
    with pytest.raises(ConfigError, match=exact("site schema: key 'n_rows' is missing")):
        SiteSchema.from_config({k: v for k, v in a.to_config().items() if k != "n_rows"})


def test_site_schema_carries_no_continuous_values(tmp_path: Path) -> None:
    planted = "123.456789"
    path = write(tmp_path / "h.csv", f"x,y\n{planted},a\n2.5,b\n3.5,a\n")
    frame = read_table(path)
    text = json.dumps(site_schema("h", frame, infer_kinds(frame)).to_config())
    assert planted not in text and "2.5" not in text
    assert json.loads(text) == {
        "site": "h",
        "n_rows": 3,
        "columns": ["x", "y"],
        "kinds": ["continuous", "categorical"],
        "levels.y": ["a", "b"],
    }


# --------------------------------------------------------------- encoding
def test_read_federation_codes_follow_the_codebook(two_sites) -> None:
    fed = read_small_federation([str(p) for p in two_sites])
    h1, h2 = fed.clients
    assert (h1.name, h2.name) == ("h1", "h2")
    assert h1.rows["sex"].tolist() == [0, 1, 0] and h2.rows["sex"].tolist() == [1, 2]
    assert h1.rows["stage"].tolist() == [1, 0, 2] and h2.rows["stage"].tolist() == [3, 1]
    assert h1.rows["age"].tolist() == [61.5, 47.25, 55.0]
    assert h2.rows["smoker"].tolist() == [1, 0]
    assert h1.rows.dtypes.astype(str).tolist() == ["float64", "int64", "int64", "int64"]
    assert fed.dropped_rows == {"h1": 0, "h2": 0}
    assert fed.constant == {"h1": (), "h2": ()}


def test_read_site_alone_uses_its_own_codebook(two_sites) -> None:
    client = read_site(two_sites[1], name="south")
    assert client.name == "south"
    assert client.rows["sex"].tolist() == [0, 1] and client.rows["stage"].tolist() == [1, 0]
    schema = read_small_federation([str(p) for p in two_sites]).schema
    assert read_site(two_sites[1], schema=schema).rows["stage"].tolist() == [3, 1]


def test_missing_values_error_or_drop_rows(tmp_path: Path, caplog) -> None:
    path = write(tmp_path / "h2.csv", "age,sex\n1.5,f\n,m\n,f\n4.5,\n5.5,m\n")
    with pytest.raises(
        DataError,
        match=exact(
            f"2 missing values in column 'age' of site 'h2' (file {path}); fill them, "
            "pass --set missing=keep for a method that uses incomplete rows (fedavg, "
            "fedcdnv), or --set missing=drop-rows"
        ),
    ):
        read_site(path)
    with caplog.at_level(logging.WARNING, logger="fedstruct.data.sites"):
        client = read_site(path, missing="drop-rows")
    assert client.rows["age"].tolist() == [1.5, 5.5] and client.rows["sex"].tolist() == [0, 1]
    assert f"site 'h2' (file {path}): dropped 3 rows with missing values" in caplog.text
    fed = read_small_federation([str(path)], missing="drop-rows")
    assert fed.dropped_rows == {"h2": 3}


def test_missing_values_kept(tmp_path: Path) -> None:
    """missing="keep": every row stays, a missing level is -1, a missing number NaN."""
    path = write(tmp_path / "h2.csv", "age,sex\n1.5,f\n,m\n,f\n4.5,\n5.5,m\n")
    client = read_site(path, missing="keep")
    assert client.missing_values and client.rows["sex"].tolist() == [0, 1, 0, -1, 1]
    assert np.isnan(client.rows["age"]).tolist() == [False, True, True, False, False]
    assert not read_site(path, missing="drop-rows").missing_values
    fed = read_small_federation([str(path)], missing="keep")
    assert fed.dropped_rows == {"h2": 0} and fed.constant == {"h2": ()}


def test_missing_label_of_a_supervised_column_is_minus_one(tmp_path: Path) -> None:
    path = write(tmp_path / "s.csv", "x,y\n0.5,a\n1.5,\n2.5,b\n")
    client = read_site(path, supervised=["y"])
    assert client.rows["y"].tolist() == [0, -1, 1] and client.supervised == ("y",)


def test_column_all_missing_is_unobserved_at_the_site(tmp_path: Path) -> None:
    path = write(tmp_path / "s.csv", "x,y\n0.5,\n1.5,\n")
    with pytest.warns(
        FedstructWarning,
        match=exact(
            f"column 'y' is missing at every row of site 's' (file {path}): it is treated "
            "as unobserved there (methods that need every column at every site say so); "
            "fill it in or remove it from that file to silence this"
        ),
    ):
        client = read_site(path)
    assert client.variables == ("x",)


def test_rows_to_predict_may_hold_a_column_all_missing_when_the_model_imputes() -> None:
    """encode_site refuses a column without any value, but with missing="keep" (a model
    that imputes: a site that never observes the column) it stays, all -1 or NaN."""
    schema = FederationSchema(
        ("g", "x"), {"g": "categorical", "x": "continuous"}, {"g": ("a", "b")},
        {"s": ("g", "x")}, {"s": 2},
    )  # fmt: skip
    frame = pd.DataFrame({"g": [None, None], "x": [np.nan, np.nan]})
    with pytest.raises(DataError, match="column 'g' of site 'input' has no values"):
        encode_site("input", frame, schema)
    rows = encode_site("input", frame, schema, missing="keep").client.rows
    assert rows["g"].tolist() == [-1, -1] and rows["x"].isna().all()


def test_a_column_a_site_does_not_observe_is_added_missing() -> None:
    schema = FederationSchema(
        ("g", "x", "y"), {"g": "categorical", "x": "continuous", "y": "continuous"},
        {"g": ("a", "b")}, {"s": ("y",), "t": ("g", "x", "y")}, {"s": 2, "t": 2},
    )  # fmt: skip
    assert schema.unobserved("s") == ("g", "x") and schema.unobserved("t") == ()
    client = ClientData("s", pd.DataFrame({"y": [1.0, 2.0]}))
    filled = unobserved_as_missing(client, schema, ["g", "x", "y"])
    assert filled.variables == ("y", "g", "x") and filled.missing_values
    assert filled.rows["g"].tolist() == [-1, -1] and filled.rows["x"].isna().all()
    assert unobserved_as_missing(client, schema, ["y"]) is client
    with pytest.raises(UnknownVariableError, match=r"\['q'\] are not columns of the sites"):
        unobserved_as_missing(client, schema, ["q"])


def test_min_rows_and_constant_columns(tmp_path: Path) -> None:
    path = write(tmp_path / "s.csv", "x,y\n0.5,a\n1.5,a\n,b\n")
    with pytest.raises(
        SampleSizeError,
        match=exact(
            f"site 's' (file {path}) has 2 rows after dropping 1 with missing values, fewer "
            "than the 3 required; add rows or lower min_rows"
        ),
    ):
        read_small_federation([str(path)], missing="drop-rows", min_rows=3)
    fed = read_small_federation([str(path)], missing="drop-rows")
    assert fed.constant == {"s": ("y",)}


def test_regime_column_becomes_intervention_codes(tmp_path: Path) -> None:
    path = write(tmp_path / "s.csv", "a,regime,b\n0,obs,1.5\n1,b,2.5\n0,,3.5\n1,a,4.5\n")
    client = read_site(path, regime="regime")
    assert client.variables == ("a", "b")
    assert client.intervention.tolist() == [-1, 1, -1, 0]
    bad = write(tmp_path / "t.csv", "a,regime\n0,c\n1,c\n0,obs\n")
    with pytest.raises(
        UnknownVariableError,
        match=exact(
            f"regime column 'regime' of site 't' (file {bad}) names 'c' in 2 rows, which is "
            "not one of its variables ['a']; fix those values or mark observational rows 'obs'"
        ),
    ):
        read_site(bad, regime="regime")


def test_encode_site_rejects_text_in_a_continuous_column_and_unknown_levels() -> None:
    schema = FederationSchema(
        ("x", "y"),
        {"x": "continuous", "y": "categorical"},
        {"y": ("a", "b")},
        {"s": ("x", "y")},
        {"s": 2},
    )
    with pytest.raises(DataError, match="column 'x' of site 's' holds text"):
        encode_site("s", pd.DataFrame({"x": ["1", "z"], "y": ["a", "b"]}), schema)
    with pytest.raises(DataError, match=r"has levels \['c'\] that the run's sites never had"):
        encode_site("s", pd.DataFrame({"x": [1.0, 2.0], "y": ["a", "c"]}), schema)
    page = "p" * 100_000  # a new file's cell of text is cut to 64 characters in the message
    with pytest.raises(DataError, match=rf"has levels \['{'p' * 64}\.\.\.'\] that") as new:
        encode_site("s", pd.DataFrame({"x": [1.0, 2.0], "y": ["a", page]}), schema)
    assert len(str(new.value)) < 500
    with pytest.raises(DataError, match=rf"holds text \(e.g. '{'p' * 64}\.\.\.'\)"):
        encode_site("s", pd.DataFrame({"x": [page, "1"], "y": ["a", "b"]}), schema)
    encoded = encode_site("s", pd.DataFrame({"x": [1.0, 2.0], "y": ["b", "b"]}), schema)
    assert encoded.client.rows["y"].tolist() == [1, 1] and encoded.constant == ("y",)
    with pytest.raises(ConfigError, match="missing must be one of error, drop-rows"):
        encode_site("s", pd.DataFrame({"x": [1.0], "y": ["a"]}), schema, missing="drop")


def test_require_kinds_names_the_variable(two_sites) -> None:
    schema = read_small_federation([str(p) for p in two_sites]).schema
    with pytest.raises(
        DataError,
        match=exact(
            "fisher-z needs continuous variables, but 'sex' is categorical (levels "
            "['f', 'm', 'x']); set --set kinds.sex=continuous if its values are numbers, "
            "or leave it out"
        ),
    ):
        require_kinds(schema, ("continuous",), method="fisher-z")


# -------------------------------------------------------------- manifests
def test_manifest_paths_roles_and_site_options(tmp_path: Path, two_sites) -> None:
    (tmp_path / "sub").mkdir()
    manifest = write(
        tmp_path / "sub" / "fed.yaml",
        "sites:\n"
        "  - {path: ../h1.csv, name: north, graph: g1.json, kinds: {stage: ordinal}}\n"
        "  - ../h2.csv\n"
        "target: stage\ninputs: [age, sex]\ntruth: truth.json\n",
    )
    parsed = read_manifest(manifest)
    assert [s.name for s in parsed.sites] == ["north", "h2"]
    assert parsed.sites[0].path == tmp_path / "sub" / "../h1.csv"
    assert parsed.sites[0].options == {
        "graph": str(tmp_path / "sub" / "g1.json"),
        "kinds": {"stage": "ordinal"},
    }
    fed = read_small_federation(manifest)
    assert fed.schema.kinds["stage"] == "ordinal"
    assert fed.roles == {
        "target": "stage",
        "inputs": ("age", "sex"),
        "truth": str(tmp_path / "sub" / "truth.json"),
        "graphs": {"north": str(tmp_path / "sub" / "g1.json")},
    }
    json_manifest = write(tmp_path / "fed.json", json.dumps({"sites": [{"path": "h1.csv"}]}))
    assert [c.name for c in read_small_federation(json_manifest).clients] == ["h1"]
    assert [c.name for c in read_small_federation(tmp_path / "h1.csv").clients] == ["h1"]


def test_manifest_unknown_keys(tmp_path: Path) -> None:
    top = write(tmp_path / "a.yaml", "sites: [h1.csv]\nmissings: drop-rows\n")
    with pytest.raises(
        ConfigError,
        match=exact(
            f"unknown key 'missings' in manifest {top}; valid keys: sites, kinds, missing, "
            "delimiter, regime, supervised, min_site_rows, max_site_levels, target, label, inputs, "
            "concepts, task, truth"
        ),
    ):
        read_manifest(top)
    site = write(tmp_path / "b.yaml", "sites:\n  - {path: h1.csv, label: y}\n")
    with pytest.raises(
        ConfigError,
        match=exact(
            f"unknown key 'label' in site 1 of manifest {site}; valid keys: path, name, kinds, "
            "graph, regime, supervised"
        ),
    ):
        read_manifest(site)


def test_manifest_site_whose_file_is_missing(tmp_path: Path) -> None:
    manifest = write(tmp_path / "m.yaml", "sites:\n  - {path: gone.csv, name: east}\n")
    with pytest.raises(
        DataError,
        match=exact(
            f"site 'east' of manifest {manifest}: file {tmp_path / 'gone.csv'} does not exist; "
            "fix its path"
        ),
    ):
        read_small_federation(manifest)


def test_parse_site_args() -> None:
    specs = parse_site_args(["data/h1.csv.gz", "south=other/h2.tsv"])
    assert [(s.name, str(s.path)) for s in specs] == [
        ("h1", "data/h1.csv.gz"),
        ("south", "other/h2.tsv"),
    ]
    with pytest.raises(ConfigError, match=r"two sites are named 'h1' \(a/h1.csv and b/h1.csv\)"):
        parse_site_args(["a/h1.csv", "b/h1.csv"])
    with pytest.raises(ConfigError, match="has an empty name"):
        parse_site_args(["=a.csv"])


def test_kinds_disagreeing_between_sites_name_both(tmp_path: Path) -> None:
    write(tmp_path / "a.csv", "v\nlow\nhigh\n")
    write(tmp_path / "b.csv", "v\n0.5\n1.5\n")
    with pytest.raises(
        DataError,
        match=exact(
            "column 'v' is categorical at site 'a' and continuous at site 'b'; give it one kind "
            "for every site, e.g. --set kinds.v=categorical"
        ),
    ):
        read_small_federation([str(tmp_path / "a.csv"), str(tmp_path / "b.csv")])
    fed = read_small_federation(
        [str(tmp_path / "a.csv"), str(tmp_path / "b.csv")], kinds={"v": "categorical"}
    )
    assert fed.schema.levels == {"v": ("0.5", "1.5", "high", "low")}
    assert fed.clients[1].rows["v"].tolist() == [0, 1]


def test_not_utf8_file(tmp_path: Path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes("name,x\nJosé,1\n".encode("latin-1"))
    message = f"file {path} is not UTF-8 text; save it as UTF-8 CSV"
    with pytest.raises(DataError, match=exact(message)):
        read_table(path)


def test_federation_wide_supervised_and_regime_apply_where_present(tmp_path: Path) -> None:
    write(tmp_path / "a.csv", "x,y,regime\n0.5,1,x\n1.5,0,obs\n")
    write(tmp_path / "b.csv", "x\n2.5\n3.5\n")
    sites = [str(tmp_path / "a.csv"), str(tmp_path / "b.csv")]
    fed = read_small_federation(sites, supervised=["y"], regime="regime")
    a, b = fed.clients
    assert a.supervised == ("y",) and b.supervised == ()
    assert a.intervention.tolist() == [0, -1] and b.intervention is None
    assert fed.schema.sites == {"a": ("x", "y"), "b": ("x",)}
    with pytest.raises(UnknownVariableError, match=r"supervised names \['z'\], which no site has"):
        read_small_federation(sites, supervised=["z"])
    with pytest.raises(UnknownVariableError, match="no site has the regime column 'arm'"):
        read_small_federation(sites, regime="arm")


def test_sites_declaring_different_kinds(tmp_path: Path) -> None:
    write(tmp_path / "a.csv", "v\n1\n2\n")
    write(tmp_path / "b.csv", "v\n1\n3\n")
    manifest = write(
        tmp_path / "m.yaml",
        "sites:\n  - {path: a.csv, kinds: {v: ordinal}}\n"
        "  - {path: b.csv, kinds: {v: categorical}}\n",
    )
    message = (
        "column 'v' is declared ordinal at site 'a' and categorical at site 'b'; give it one "
        "kind, e.g. --set kinds.v=categorical"
    )
    with pytest.raises(DataError, match=exact(message)):
        read_small_federation(manifest)


def test_infinite_values_name_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "s.csv", "x\n1.5\ninf\n\n-inf\n")
    message = (
        f"2 infinite values in column 'x' of site 's' (file {path}); "
        "replace them with finite numbers"
    )
    with pytest.raises(DataError, match=exact(message)):
        read_site(path, missing="drop-rows")


@pytest.mark.parametrize(
    "text",
    [
        "a,b,c\n1,x,True\n2,y,False\n3,,True\n,z,True\n5,x,False\n",  # int then NaN: floats
        "a,b\n1,\n2,\n3,x\n4,y\n5,\n",  # text after a block without any
        "a,b\n1.5,x\n2,y\n3,x\n4,y\n5,z\n",  # floats, then integers
        "a,b\n1,x\n2,y\n3,x\n4.5,y\n5,z\n",  # integers, then a float further down
        "a,b\n1,x\n2,y\n3,x\nfour,y\n5,z\n",  # integers, then a word further down
        'a,b\n1,"x\ny"\n2,y\n3,"z"\n',  # quotes: a field spans lines
        "a,b\n1,x\n2,y\n3,z\n4,w\n5,x\n6,y\n7,q\n",  # levels new in later blocks
        "a,b\n1,2020-01-01\n2,2020-02-01\n3,\n",  # dates stay text
        "a,b,c\n1,+1,0.5\n2,-1,+1.5\n3,+2,2\n",  # pandas: +1 is an integer
        "a,b\n1,NAN\n2,1.5\n3,nan\n",  # pandas: NAN is text (nan is missing)
        "a,b\n1,tRUE\n2,False\n3,true\n",  # pandas: booleans in any case
        "a,b\nTrue,1\n,2\nFalse,3\n",  # booleans with a missing value
        "a,b\n1, 2\n2,3 \n3,NA\n",  # numbers with spaces; NA missing
        "a,b\n1,\n2,NULL\n",  # a column all missing
        "a\n1\n  \n2\n",  # pandas skips a line of spaces
        "a,b\n1,x\n\n\n\n\n\n\n2,y\n",  # a piece of blank lines types nothing
        "\ufeffa,b\n1,x\n2,y\n",  # a byte order mark
    ],
)
def test_reading_equals_pandas(tmp_path: Path, text: str) -> None:
    path = write(tmp_path / "s.csv", text)
    frame, whole = read_table(path), pd.read_csv(path)
    for col in whole.columns:
        if whole[col].dtype.kind in "biuf":
            assert frame[col].dtype == whole[col].dtype, col
    pd.testing.assert_frame_equal(frame.astype(str), whole.astype(str))
    gz = tmp_path / "s.csv.gz"
    whole.to_csv(gz, index=False)
    pd.testing.assert_frame_equal(read_table(gz).astype(str), whole.astype(str))


# ------------------------------------------------ what a site's schema may disclose
def site_rows(n: int, **columns) -> str:
    """A CSV of ``n`` rows: a binary ``x`` plus ``columns`` (name -> function of the row)."""
    names = ["x", *columns]
    lines = [",".join(names)]
    lines += [",".join([str(i % 2), *(str(f(i)) for f in columns.values())]) for i in range(n)]
    return "\n".join(lines) + "\n"


def test_a_site_with_too_few_rows_is_refused_unless_lowered(tmp_path: Path) -> None:
    path = write(tmp_path / "tiny.csv", site_rows(9))
    with pytest.raises(
        SampleSizeError,
        match=r"^site 'tiny' \(file .*tiny.csv\) has 9 rows, fewer than the 10 a site needs .*"
        "lower --set min_site_rows=N$",
    ):
        read_federation([str(path)])
    assert read_federation([str(path)], min_site_rows=9).clients[0].n_rows == 9
    manifest = write(tmp_path / "fed.yaml", "sites: [tiny.csv]\nmin_site_rows: 5\n")
    assert read_federation(manifest).clients[0].n_rows == 9
    with pytest.raises(SampleSizeError, match="fewer than the 20 a site needs"):
        read_federation(manifest, min_site_rows=20)  # the setting wins over the manifest
    bad = write(tmp_path / "bad.yaml", "sites: [tiny.csv]\nmin_site_rows: 0\n")
    with pytest.raises(ConfigError, match="'min_site_rows' must be a positive integer, got 0"):
        read_manifest(bad)


def test_an_identifier_column_is_refused_naming_column_and_site(tmp_path: Path) -> None:
    path = write(tmp_path / "h1.csv", site_rows(40, patient=lambda i: f"P{i:05d}"))
    with pytest.raises(
        DataError,
        match=r"^column 'patient' of site 'h1' \(file .*h1.csv\) looks like an identifier "
        r"\(40 distinct values in 40 rows\)",
    ):
        read_federation([str(path)])
    # 36 distinct values in 40 rows: still one per row nearly (>= 90 %)
    near = write(tmp_path / "h2.csv", site_rows(40, patient=lambda i: f"P{min(i, 35)}"))
    with pytest.raises(DataError, match="'patient' of site 'h2'"):
        read_federation([str(near)])
    # 30 levels in 40 rows is a column, not an identifier (31 would be too many levels
    # for so few rows: test_names_of_people_are_refused_unless_declared)
    fine = write(tmp_path / "h3.csv", site_rows(40, town=lambda i: f"T{min(i, 29)}"))
    assert read_federation([str(fine)]).schema.cardinalities()["town"] == 30


def test_a_column_with_too_many_levels_is_refused_unless_raised(tmp_path: Path) -> None:
    # 3,000 rows: 20 a level, not too few for 150 levels (names_of_people below)
    path = write(tmp_path / "big.csv", site_rows(3000, code=lambda i: f"C{i % 150}"))
    with pytest.raises(
        DataError,
        match=r"^column 'code' of site 'big' \(file .*\) has 150 levels, more than the 100 "
        r"a site may report .* raise --set max_site_levels=N$",
    ):
        read_federation([str(path)])
    schema = read_federation([str(path)], max_site_levels=150).schema
    assert schema.cardinalities()["code"] == 150


def people(n: int = 1000, seed: int = 0) -> pd.DataFrame:
    """A site's table of ``n`` rows with ordinary categorical columns (text, mixed
    kinds, missing values) to which a test adds a column of people's data."""
    rng = np.random.default_rng(seed)
    countries = ["France", "Bosnia and Herzegovina", "United States", "Korea, Rep.",
                 "Côte d'Ivoire", *(f"Country {k}" for k in range(20))]  # fmt: skip
    income = ["Under $25,000", "$25,000 to $49,999", "$50,000 or more", "1 to 2 times a week"]
    frame = pd.DataFrame({
        "sex": rng.choice(["Female", "Male"], n),
        "smoker": rng.choice(["yes", "no"], n),
        "country": rng.choice(countries, n),
        "income": rng.choice(income, n),
        "bp": rng.choice(["LOW", "NORMAL", "HIGH"], n),
        "age": rng.normal(50, 10, n).round(1),
        "score": rng.integers(1, 6, n),
    })  # fmt: skip
    frame.loc[rng.choice(n, 30, replace=False), "country"] = None
    return frame


def test_ordinary_categorical_columns_pass_the_rules_on_people(tmp_path: Path) -> None:
    path = tmp_path / "h1.csv"
    people().to_csv(path, index=False)
    schema = read_federation([str(path)], missing="keep").schema
    assert schema.cardinalities() == {
        "sex": 2, "smoker": 2, "country": 25, "income": 4, "bp": 3, "score": 5
    }  # fmt: skip
    alarm = load_network("alarm")  # bnlearn's level names, on a small site
    rows = alarm.sample(60, seed=0)
    named = {v: np.array(alarm.states[v])[rows[v].to_numpy()] for v in alarm.names}
    pd.DataFrame(named).to_csv(tmp_path / "alarm.csv", index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FedstructWarning)  # a level alone in 60 rows
        assert len(read_federation([str(tmp_path / "alarm.csv")]).schema.variables) == 37


def read_refused(path: Path, **options) -> str:
    """The one line refusing ``path``'s site, with no warning on the way."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DataError) as refused:
            read_federation([str(path)], missing="keep", **options)
    return str(refused.value)


def test_free_text_is_refused_naming_the_column_never_its_values(tmp_path: Path) -> None:
    """Issue 49: two notes in a free-text column were printed in warnings and saved in
    model.json's levels."""
    frame = people()
    notes = ["Jane Doe, MRN 4471-22, HIV positive", "Bob Roe MRN 1183-09 …"]
    frame["notes"] = None
    frame.loc[[3, 7], "notes"] = notes
    frame.to_csv(tmp_path / "h1.csv", index=False)
    message = read_refused(tmp_path / "h1.csv")
    assert message.startswith(
        f"column 'notes' of site 'h1' (file {tmp_path / 'h1.csv'}) looks like free text (a "
        "level of 5 words with digits and punctuation), and every level name leaves the "
        "site; remove it from the file, recode its values into categories, or declare it "
        "with --set kinds.notes=categorical if its level names may leave the site"
    )
    assert not any(word in message for word in ("Jane", "Bob", "MRN", "4471"))
    # the owner's declaration lets it through (its values then leave the site)
    schema = read_federation([str(tmp_path / "h1.csv")], missing="keep",
                             kinds={"notes": "categorical"}).schema  # fmt: skip
    assert schema.levels["notes"] == tuple(sorted(notes))


def test_notes_held_by_single_rows_are_refused(tmp_path: Path) -> None:
    frame = people()
    frame["remark"] = None
    frame.loc[[3, 7, 9], "remark"] = ["seen by the night nurse", "sent home with family", "ok"]
    frame.loc[100:199, "remark"] = "ok"
    frame.to_csv(tmp_path / "h1.csv", index=False)
    assert "'remark' of site 'h1' (file" in read_refused(tmp_path / "h1.csv")
    assert "(2 of its 3 levels are 3 words or more held by a single row each)" in read_refused(
        tmp_path / "h1.csv"
    )
    frame.loc[200:209, "remark"] = "sent home with family"  # a common answer, not a note
    frame.to_csv(tmp_path / "h2.csv", index=False)
    assert (
        read_federation([str(tmp_path / "h2.csv")], missing="keep").schema.cardinalities()["remark"]
        == 3
    )


def test_names_of_people_are_refused_unless_declared(tmp_path: Path) -> None:
    """Issue 49: 60 names over 1,000 rows (6 % distinct) passed the identifier rule."""
    frame = people()
    first, last = ("Ann", "Bob", "Eve", "Joe", "Kim", "Sam"), ("Doe", "Roe", "Poe", "Lee", "Fox")
    names = [f"{a} {b}{k}" for a in first for b in last for k in ("", "-Smith")]
    frame["patient"] = np.random.default_rng(1).choice(names, len(frame))
    path = tmp_path / "h1.csv"
    frame.to_csv(path, index=False)
    message = read_refused(path)
    assert message.startswith(
        f"column 'patient' of site 'h1' (file {path}) looks like names or codes of people "
        "(60 levels in 1000 rows, 16.7 rows per level; a column of more than 30 levels needs "
        "20 rows per level on average), and every level name leaves the site;"
    )
    assert not any(name in message for name in names)
    declared = read_federation([str(path)], missing="keep", kinds={"patient": "categorical"})
    assert declared.schema.cardinalities()["patient"] == 60
    manifest = write(
        tmp_path / "fed.yaml", "sites:\n  - {path: h1.csv, kinds: {patient: categorical}}\n"
    )
    assert read_federation(manifest, missing="keep").schema.cardinalities()["patient"] == 60
    frame.iloc[:600].to_csv(path, index=False)  # 10 rows a name
    assert "60 levels in 600 rows, 10.0 rows per level" in read_refused(path)
    pd.concat([frame] * 2).to_csv(path, index=False)  # 2,000 rows: 33 a name, a group
    assert read_federation([str(path)], missing="keep").schema.cardinalities()["patient"] == 60


def test_a_long_level_is_refused_even_when_declared(tmp_path: Path) -> None:
    """Issue 49: a 50 MB cell became a level name."""
    frame = people(200)
    frame["comment"] = "none"
    frame.loc[5, "comment"] = "x" * 100_000
    path = tmp_path / "h1.csv"
    frame.to_csv(path, index=False)
    message = (
        f"column 'comment' of site 'h1' (file {path}) has a level of 100,000 characters, more "
        "than the 64 a level name may have (every level name leaves the site): it holds "
        "text, not categories; remove it from the file, or recode its values as short "
        "category names"
    )
    assert read_refused(path) == message
    assert read_refused(path, kinds={"comment": "categorical"}) == message
    frame.loc[5, "comment"] = "y" * 64  # 64 characters are a level name
    frame.to_csv(path, index=False)
    assert read_federation([str(path)], missing="keep").schema.cardinalities()["comment"] == 2


def test_the_audit_of_a_description_takes_no_declaration() -> None:
    """A deployed node's audit knows no owner's declaration (the run's kinds are the
    coordinator's): it applies every rule to the level names, and says so."""
    names = [f"Name{k}" for k in range(40)]
    with pytest.raises(DataError, match=r"40 levels in 500 rows.* does not take the run's kinds"):
        SchemaLimits().check("h1", 500, {"patient": names})
    SchemaLimits().check("h1", 500, {"patient": names}, declared={"patient"})
    SchemaLimits().check("h1", 800, {"patient": names})


def test_describe_site_applies_the_limits(tmp_path: Path) -> None:
    spec = parse_site_args([str(write(tmp_path / "s.csv", site_rows(5)))])[0]
    with pytest.raises(SampleSizeError, match="has 5 rows, fewer than the 10"):
        describe_site(spec)
    schema, _ = describe_site(spec, limits=SchemaLimits(min_rows=5))
    assert schema.n_rows == 5


def test_sites_that_share_no_level_of_a_column_are_warned_about(tmp_path: Path) -> None:
    a = write(tmp_path / "a.csv", "smoker,y\n" + "yes,1\nno,0\n" * 6)
    b = write(tmp_path / "b.csv", "smoker,y\n" + "1,1\n0,0\n" * 6)
    with pytest.warns(
        FedstructWarning,
        match=r"^column 'smoker': sites 'a' \(levels \['no', 'yes'\]\) and 'b' \(levels "
        r"\['0', '1'\]\) share no level",
    ) as caught:
        schema = read_federation([str(a), str(b)]).schema
    assert len(caught) == 1  # y shares its levels
    assert schema.cardinalities()["smoker"] == 4


def test_an_ordinal_column_of_numbers_need_not_share_levels(tmp_path: Path) -> None:
    """Issue 49: scores 1-4 at one site and 6-9 at another are numbers of one scale,
    not two codings: no "share no level" warning (text levels still get it)."""
    a = write(
        tmp_path / "a.csv", "score,g\n" + "".join(f"{1 + i % 4},{i % 2}\n" for i in range(12))
    )
    b = write(
        tmp_path / "b.csv", "score,g\n" + "".join(f"{6 + i % 4},{i % 2}\n" for i in range(12))
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        schema = read_federation([str(a), str(b)]).schema
    assert schema.kinds["score"] == "ordinal" and len(schema.levels["score"]) == 8
    c = write(tmp_path / "c.csv", "grade,g\n" + "1-low,0\n2-mid,1\n3-high,0\n" * 4)
    d = write(tmp_path / "d.csv", "grade,g\n" + "low,0\nmid,1\nhigh,0\n" * 4)
    with pytest.warns(FedstructWarning, match=r"^column 'grade': sites 'c' .* share no level"):
        read_federation([str(c), str(d)], kinds={"grade": "ordinal"})


def test_damaged_compressed_files_are_one_line_errors(tmp_path: Path) -> None:
    import bz2
    import gzip
    import lzma

    text = ("a,b\n" + "".join(f"{i % 3},{i % 7}\n" for i in range(40_000))).encode()
    cases = {
        "cut.csv.gz": gzip.compress(text)[:-200],  # the head reads; the rest is cut short
        "small.csv.gz": gzip.compress(text[:300])[:-30],
        "junk.csv.gz": b"\x1f\x8b\x08\x00" + b"x" * 900,
        "plain.csv.gz": text[:300],
        "cut.csv.bz2": bz2.compress(text)[:100],
        "junk.csv.xz": b"not xz at all",
        "cut.csv.xz": lzma.compress(text)[:-100],
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        suffix = path.suffix
        with pytest.raises(
            DataError, match=rf"^file {re.escape(str(path))} is not a valid \{suffix} file \("
        ):
            read_table(path)


def test_non_regular_files_are_refused_not_waited_on(tmp_path: Path) -> None:
    pipe = tmp_path / "site.csv"
    os.mkfifo(pipe)
    message = "is a named pipe (FIFO), not a regular file"
    with pytest.raises(DataError, match=re.escape(f"file {pipe} {message}")):
        read_table(pipe)
    with pytest.raises(DataError, match=re.escape(f"file {pipe} {message}")):
        read_federation([str(pipe)])
    manifest = tmp_path / "fed.yaml"
    os.mkfifo(manifest)
    with pytest.raises(DataError, match=re.escape(f"manifest {manifest} {message}")):
        read_manifest(manifest)
    with pytest.raises(DataError, match=re.escape(f"graph file {pipe} {message}")):
        read_graph_file(pipe)
    with pytest.raises(DataError, match="is a device, not a regular file"):
        read_table(Path("/dev/zero"))


def test_a_column_with_one_level_at_every_site_is_named_with_the_fix() -> None:
    a = SiteSchema("a", 3, (ColumnSchema("flag", "categorical", ("yes",)),))
    b = SiteSchema("b", 4, (ColumnSchema("flag", "categorical", ("yes",)),))
    with pytest.warns(FedstructWarning, match="column 'flag' has the single level 'yes' at every"):
        merge_schemas([a, b])
    c = SiteSchema("c", 4, (ColumnSchema("flag", "categorical", ("no", "yes")),))
    with warnings.catch_warnings():
        warnings.simplefilter("error", FedstructWarning)
        merge_schemas([a, c])  # two levels over the sites: no warning
