"""What a node offers: its data sets (``--data NAME=PATH``, ``--manifest``), the data
set a run asks of it (``--node-site SITE:DATASET``), and what its catalogue says of
each data set (names, kinds, rows; only the statistics its owner allows)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from flwr.common.config import parse_config_args
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.data.catalogue import AGGREGATE_KEYS, describe_dataset, read_node_manifest
from fedstruct.data.sites import SchemaLimits, SiteSpec
from fedstruct.deployment.catalogue import catalogue_lines, describe_offer, request_catalogue
from fedstruct.deployment.node import NodeOffer, Offered
from fedstruct.errors import ConfigError, PrivacyViolationError, SampleSizeError
from fedstruct.fl.flower.cluster import DeploymentOptions, Link, supernode_command
from fedstruct.privacy.audit import audit_description
from fedstruct.runs.contract import runnable
from fedstruct.runs.settings import apply_settings

runner = CliRunner()


def ward(path: Path, rows: int = 60, seed: int = 0) -> Path:
    """A table with an identifier, a free-text note, two categories, a score with a
    missing value and a measurement."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "patient": [f"P-{1000 + k}" for k in range(rows)],
            "sex": rng.choice(["F", "M"], rows),
            "smoker": rng.choice(["no", "yes"], rows),
            "stage": rng.integers(1, 5, rows).astype(float),
            "age": rng.normal(50, 12, rows).round(1),
            "note": [f"seen on day {k}, dose 2.5 mg; follow up" for k in range(rows)],
        }
    )
    frame.loc[3, "stage"] = np.nan
    frame.to_csv(path, index=False)
    return path


def test_by_default_a_catalogue_says_names_kinds_and_rows_only(tmp_path):
    path = ward(tmp_path / "ward.csv")
    described = describe_dataset(SiteSpec("admissions", path))
    assert described == {
        "dataset": "admissions",
        "format": "table",
        "n_rows": 60,
        "columns": ["patient", "sex", "smoker", "stage", "age", "note"],
        "kinds": [
            "categorical",
            "categorical",
            "categorical",
            "ordinal",
            "continuous",
            "categorical",
        ],
    }
    audit_description(described, SchemaLimits(), "admissions", "catalogue", AGGREGATE_KEYS)


def test_the_owner_s_share_adds_levels_counts_missing_and_moments_never_a_row(tmp_path):
    path = ward(tmp_path / "ward.csv")
    frame = pd.read_csv(path)
    share = ("levels", "counts", "missing", "moments")
    described = describe_dataset(SiteSpec("admissions", path), share)
    assert described["levels.sex"] == ["F", "M"]
    assert described["counts.sex"] == [int((frame.sex == "F").sum()), int((frame.sex == "M").sum())]
    assert described["levels.stage"] == ["1", "2", "3", "4"]
    assert sum(described["counts.stage"]) == 59
    assert described["missing"] == [0, 0, 0, 1, 0, 0]
    assert described["mean.age"] == pytest.approx(frame.age.mean())
    assert described["std.age"] == pytest.approx(frame.age.std())
    # an identifier's and a free-text column's levels never leave the node
    assert described["withheld"] == ["patient", "note"]
    assert not any(key in described for key in ("levels.patient", "levels.note", "counts.note"))
    text = json.dumps(described)
    assert "P-1000" not in text and "follow up" not in text
    audit_description(described, SchemaLimits(), "admissions", "catalogue", AGGREGATE_KEYS)


def test_the_audit_refuses_levels_of_free_text_and_real_numbers_elsewhere(tmp_path):
    described = describe_dataset(SiteSpec("admissions", ward(tmp_path / "w.csv")), ("levels",))
    notes = [f"seen on day {k}, dose 2.5 mg; follow up" for k in range(60)]
    with pytest.raises(PrivacyViolationError, match=r"column 'note' .* looks like"):
        audit_description({**described, "levels.note": notes}, SchemaLimits(), "a", "catalogue")
    with pytest.raises(PrivacyViolationError, match=r"key 'mean\.age' holds float"):
        audit_description({**described, "mean.age": 50.1}, SchemaLimits(), "a", "catalogue")
    with pytest.raises(PrivacyViolationError, match=r"key 'mean\.age' holds float values"):
        audit_description({"mean.age": [50.1, 49.0]}, SchemaLimits(), "a", "c", AGGREGATE_KEYS)


def test_a_data_set_too_small_to_describe_is_listed_with_the_reason(tmp_path):
    small = ward(tmp_path / "small.csv", rows=6)
    with pytest.raises(SampleSizeError, match="has 6 rows, fewer than the 10"):
        describe_dataset(SiteSpec("small", small))
    offer = NodeOffer(
        "ward-a", (Offered("small", str(small)), Offered("big", str(ward(tmp_path / "b.csv"))))
    )
    small_entry, big_entry = describe_offer(offer)
    assert small_entry["dataset"] == "small"
    assert small_entry["error"].startswith("SampleSizeError: site 'small'")
    assert big_entry["n_rows"] == 60 and "error" not in big_entry


def test_an_image_set_says_its_shape_and_count(tmp_path):
    path = tmp_path / "scans.npz"
    labels = np.array(["a", "b"] * 10)
    np.savez(path, images=np.zeros((20, 4, 4), dtype=np.uint8), labels=labels)
    assert describe_dataset(SiteSpec("scans", path)) == {
        "dataset": "scans", "format": "images", "n_rows": 20, "shape": [1, 4, 4]
    }  # fmt: skip
    counted = describe_dataset(SiteSpec("scans", path), ("counts",))
    assert counted["levels.class"] == ["a", "b"] and counted["counts.class"] == [10, 10]


def test_a_node_manifest_lists_its_data_sets_with_their_policies(tmp_path):
    ward(tmp_path / "admissions.csv")
    ward(tmp_path / "labs.csv")
    (tmp_path / "g.json").write_text("{}")
    manifest = tmp_path / "node.yaml"
    manifest.write_text(
        "sites:\n  - admissions.csv\n  - path: labs.csv\n    name: lab-results\n"
        "    share: [levels, moments]\n    graph: g.json\n"
    )
    first, second = read_node_manifest(manifest)
    assert (first.name, first.path, first.options) == (
        "admissions",
        tmp_path / "admissions.csv",
        {},
    )
    assert second.name == "lab-results"
    assert second.options == {"share": ("levels", "moments"), "graph": str(tmp_path / "g.json")}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "sites:\n  - nope.csv\n",
            "data set 'nope' of node manifest {m}: its path {d}/nope.csv does not exist",
        ),
        ("sites:\n  - path: a.csv\n    graph: g.json\n", "its graph {d}/g.json does not exist"),
        ("sites:\n  - path: a.csv\n    kinds: {x: ordinal}\n", "unknown key 'kinds' in data set 1"),
        (
            "sites:\n  - path: a.csv\n    share: [rows]\n",
            "'share' must be a list of levels, counts",
        ),
        ("sites: [a.csv, a.csv]\n", "two sites are named 'a'"),
        ("sites: []\n", "'sites' must be a non-empty list"),
        ("missing: drop-rows\nsites: [a.csv]\n", "unknown key 'missing' in node manifest"),
        ("- a.csv\n", "must be a mapping with a 'sites' list"),
    ],
)
def test_a_bad_node_manifest_is_one_line_when_the_node_starts(tmp_path, text, message):
    ward(tmp_path / "a.csv")
    manifest = tmp_path / "node.yaml"
    manifest.write_text(text)
    expected = message.format(m=manifest, d=tmp_path)
    with pytest.raises(ConfigError, match=re.escape(expected)):
        read_node_manifest(manifest)
    result = runner.invoke(app, ["flower", "supernode", "--insecure", "--manifest", str(manifest)])
    assert result.exit_code == 2 and expected in " ".join(result.output.split())


def node_config_of(tmp_path: Path, monkeypatch, *args: str) -> dict:
    """The node config ``fedstruct flower supernode ARGS`` starts its node with, as
    Flower's parser reads it back."""
    from fedstruct.cli import flower as flower_commands
    from fedstruct.fl.flower import cluster

    started: list[list[str]] = []
    monkeypatch.setattr(flower_commands, "_exec", lambda cmd, home, *rest: started.append(cmd))
    monkeypatch.setattr(cluster, "wait_reachable", lambda link, timeout: None)
    result = runner.invoke(
        app, ["flower", "supernode", "--insecure", "--home", str(tmp_path), *args]
    )
    assert result.exit_code == 0, result.output
    return parse_config_args([started[-1][started[-1].index("--node-config") + 1]])


def test_a_node_offers_several_data_sets_named_on_its_command_line(tmp_path, monkeypatch):
    folder = tmp_path / 'it\'s a "folder"'
    folder.mkdir()
    a, b = ward(folder / "a.csv"), ward(folder / "b.csv")
    config = node_config_of(
        tmp_path,
        monkeypatch,
        "--data",
        f"admissions={a}",
        "--data",
        f"labs={b}",
        "--name",
        "ward-a",
    )
    offer = NodeOffer.from_config(config)
    assert offer == NodeOffer("ward-a", (Offered("admissions", str(a)), Offered("labs", str(b))))
    single = NodeOffer.from_config(node_config_of(tmp_path, monkeypatch, "--data", str(a)))
    assert single == NodeOffer("a", (Offered("a", str(a)),))  # today's --data PATH
    named = node_config_of(tmp_path, monkeypatch, "--data", str(a), "--name", "hospital-a")
    assert NodeOffer.from_config(named).name == "hospital-a"


def test_a_node_config_value_with_both_quotes_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="holds both"):
        supernode_command(None, Link(), port=9100, node_config={"site": "a'b\"c"})


def test_a_run_names_the_data_set_it_uses_at_each_node(tmp_path):
    entry = runnable("fedavg")
    settings = apply_settings(
        entry.settings(), {"node_sites": ["ward-a:labs", "ward-b"]}, method="fedavg"
    )
    assert settings.node_sites == ("ward-a", "ward-b")
    assert settings.node_datasets == {"ward-a": "labs"}
    assert settings.client_names() == ["ward-a", "ward-b"]
    with pytest.raises(ConfigError, match="site 'ward-a' is given two data sets"):
        apply_settings(entry.settings(), {"node_sites": ["ward-a:labs", "ward-a:x"]}, method="f")
    with pytest.raises(ConfigError, match=r"node_datasets names sites \['ward-c'\]"):
        apply_settings(
            entry.settings(), {"node_sites": ["ward-a"], "node_datasets.ward-c": "x"}, method="f"
        )


def node_context(offer: NodeOffer, node_sites: list[str]) -> SimpleNamespace:
    """A ClientApp's context on ``offer``'s node for a fedavg run naming ``node_sites``."""
    settings = apply_settings(
        runnable("fedavg").settings(), {"node_sites": node_sites}, method="fedavg"
    )
    from fedstruct.runs.settings import settings_dict

    return SimpleNamespace(
        node_config=offer.to_config(),
        run_config={"method": "fedavg", "settings": json.dumps(settings_dict(settings))},
    )


def test_a_node_refuses_a_run_asking_for_a_data_set_it_does_not_offer(tmp_path):
    """Refused at the node's first message (HELLO), before any file is read; a node
    the run does not name, or a catalogue, is not refused for it."""
    from fedstruct.deployment import app as deployed

    offer = NodeOffer("ward-a", (Offered("admissions", "/a.csv"), Offered("labs", "/l.csv")))
    hello = SimpleNamespace(kind="fedstruct.hello")
    deployed._admit(hello, node_context(offer, ["ward-a:labs", "ward-b"]))
    assert deployed._own_site(node_context(offer, ["ward-a:labs"])) == SiteSpec(
        "ward-a", Path("/l.csv"), {}
    )
    with pytest.raises(ConfigError) as unknown:
        deployed._admit(hello, node_context(offer, ["ward-a:nope", "ward-b"]))
    assert str(unknown.value) == (
        "SuperNode 'ward-a' offers no data set 'nope'; it offers admissions, labs: fix "
        "--node-site ward-a:DATASET ('fedstruct flower catalogue' lists what each node offers)"
    )
    with pytest.raises(ConfigError, match=r"offers several data sets .*--node-site ward-a:DATASET"):
        deployed._admit(hello, node_context(offer, ["ward-a", "ward-b"]))
    deployed._admit(hello, node_context(offer, ["ward-b"]))  # refused by the grid, not here
    catalogue = node_context(offer, ["ward-a:nope"])
    catalogue.run_config["method"] = "fedstruct.catalogue"
    deployed._admit(hello, catalogue)


def test_the_catalogue_reads_as_one_line_per_column(tmp_path):
    path = ward(tmp_path / "ward.csv")
    offer = NodeOffer(
        "ward-a", (Offered("admissions", str(path), share=("counts", "moments", "missing")),)
    )
    lines = catalogue_lines(
        [
            {"node": "partition 0", "datasets": []},
            {"node": "ward-a", "datasets": describe_offer(offer)},
        ]
    )
    assert lines[0] == "partition 0: a partition of a built-in federation (no data sets)"
    assert lines[1:3] == ["ward-a: 1 data set", "  admissions: table, 60 rows, 6 columns"]
    assert (
        lines[3] == "    patient: categorical; levels withheld (an identifier, names or free text)"
    )
    assert lines[4].startswith("    sex: categorical; levels F (")
    assert lines[6] == "    stage: ordinal; levels 1 (" + lines[6].split("levels 1 (")[1]
    assert lines[6].endswith("; 1 missing")
    assert re.fullmatch(r"    age: continuous; mean [\d.]+, sd [\d.]+", lines[7])
    assert catalogue_lines([]) == ["no SuperNode is connected to the SuperLink"]


def test_a_catalogue_writes_only_into_a_folder_of_its_own(tmp_path):
    options = DeploymentOptions(superlink="127.0.0.1:1")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.json").write_text("{}")
    with pytest.raises(ConfigError, match="holds files that are not a catalogue's"):
        request_catalogue(tmp_path / "run", options)
    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "catalogue.json").write_text("{}")
    with pytest.raises(ConfigError, match=r"catalogue\.json exists; pass --overwrite"):
        request_catalogue(tmp_path / "cat", options)
    result = runner.invoke(
        app, ["flower", "catalogue", "--out", str(tmp_path / "new"), "--superlink", "127.0.0.1:1"]
    )
    assert result.exit_code == 2
    assert result.output.startswith("error: cannot submit a run: the SuperLink at 127.0.0.1:1")
