import json

import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.errors import ConfigError
from fedstruct.methods.fcm import ConceptSource, FCMRun
from fedstruct.methods.fcm.sources import roles
from fedstruct.runs.contract import build_estimator

runner = CliRunner()

SMALL = [
    "--set", "samples=2000",
    "--set", "autoencoder_epochs=5",
    "--set", "initial_clients=2",
    "--set", "arrival_round=3",
    "--set", "clients_per_round=3",
    "--set", "max_epochs=15",
    "--set", "batch_size=128",
    "--set", "standardise_latent=true",
]  # fmt: skip


def run(tmp_path, name, *extra):
    out = tmp_path / name
    args = ["run", "fcm", "--network", "asia", "--clients", "4", "--rounds", "6", "--seed", "0"]
    result = runner.invoke(app, [*args, "--quiet", "--out", str(out), *SMALL, *extra])
    assert result.exit_code == 0, result.output
    return json.loads((out / "metrics.json").read_text()), out


def test_run_fcm_reports_the_papers_metrics_and_plots(tmp_path):
    metrics, out = run(tmp_path, "fcm", "--model", "cbm", "--regime", "fcm")
    required = {"task_accuracy", "concept_accuracy", "concept_coverage", "params_changed_fraction"}
    assert required <= set(metrics)
    history = json.loads((out / "history.json").read_text())
    assert [h["pool"] for h in history] == [2, 2, 4, 4, 4, 4]  # the late cohort at round 3
    assert history[2]["concepts"] > history[1]["concepts"]  # ... brings new concepts
    assert metrics["concept_coverage"] == 1.0 and 0 < metrics["params_growth"] < 1
    assert metrics["task_accuracy"] > 0.6  # dysp's majority class is 0.56 on this sample
    assert (out / "fcm_rounds.png").stat().st_size > 10_000


def test_localized_and_static_regimes_cover_less(tmp_path):
    fcm, _ = run(tmp_path, "fcm", "--model", "cbm")
    static, _ = run(tmp_path, "sfcm", "--model", "cbm", "--regime", "sfcm")
    local, _ = run(tmp_path, "local", "--model", "cbm", "--regime", "local")
    assert static["concept_coverage"] < fcm["concept_coverage"]
    assert local["concept_coverage"] < fcm["concept_coverage"]
    assert static["params_changed_fraction"] == 0.0


def test_the_late_cohort_brings_the_new_concepts():
    s = FCMRun(network="asia", clients=6, initial_clients=3, samples=2000, autoencoder_epochs=2)
    clients = list(ConceptSource(s).clients())
    early = set().union(*(c.supervised for c in clients[:3]))
    late = set().union(*(c.supervised for c in clients[3:]))
    assert late - early  # concepts only late clients supervise


def test_the_protocol_source_builds_its_data_once_and_scores_against_their_graph():
    s = FCMRun(network="asia", clients=4, initial_clients=2, samples=400, autoencoder_epochs=1)
    source = ConceptSource(s)
    assert source.names == ("client-1", "client-2", "client-3", "client-4")
    assert "data" not in vars(source)  # the names need no data
    data = source.data
    assert source.data is data and source.truth is data.graph
    assert ConceptSource(s).data is not data  # nothing kept between sources (no cache)
    assert list(source.clients().names) == list(source.names)
    assert len(source.test) == int((data.split == 2).sum())
    model = build_estimator(s, source)
    assert model.task == "dysp" and model.cardinalities == data.cardinalities
    schedule = model.participation.schedule
    assert schedule.active(source.names, 1) == ["client-1", "client-2"]
    assert schedule.active(source.names, s.arrival) == list(source.names)


def test_the_roles_of_site_files_come_from_the_settings_over_the_manifest():
    given = {"task": "y", "concepts": ["a", "b"]}
    assert roles(FCMRun(), given) == {"supervised": ["a", "b", "y"]}
    assert roles(FCMRun(task="z"), given) == {"supervised": ["a", "b", "z"]}
    with pytest.raises(ConfigError, match="--set task=COLUMN"):
        roles(FCMRun(), {"task": "y"})


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"network": "child"}, "network"),
        ({"model": "resnet"}, "model"),
        ({"regime": "greedy"}, "regime"),
        ({"initial_clients": 30}, "initial_clients"),
        ({"concept_weight": 1.5}, "concept_weight"),
        ({"dp_epsilon": -1.0}, "epsilon"),
    ],
)
def test_bad_fcm_settings_are_named(settings, message):
    with pytest.raises(ConfigError, match=message):
        FCMRun(**settings)


def test_robustness_recipe_denoises_graphs_that_localized_models_keep(tmp_path):
    """App. E.6: with 30% of each corrupted graph altered, the aggregated DAG stays
    exact whatever the share of corrupted clients; a local graph does not."""
    from fedstruct.runs.recipes import run_recipe

    run_recipe("fcm-robustness", quick=True, out=tmp_path)
    rows = {r["name"]: r["diff_pairs"] for r in json.loads((tmp_path / "results.json").read_text())}
    fcm = [rows[f"asia | F-CMs | graph alteration 0.3 | clients altered {s}"] for s in (0, 0.5, 1)]
    local = [rows[f"asia | Loc. | graph alteration 0.3 | clients altered {s}"] for s in (0, 0.5, 1)]
    assert fcm == [0.0, 0.0, 0.0]
    assert local[0] < local[1] < local[2]
    assert (tmp_path / "diff_pairs_asia_0.3.png").stat().st_size > 10_000


def test_an_interrupted_dp_run_resumes_with_every_ledger(tmp_path):
    """Server state and every client's DP ledger survive the checkpoint: the resumed
    run spends, round by round, the ε of an uninterrupted one (its noise and batches
    come from the OS's entropy, so the weights differ: docs/privacy.md)."""
    dp = ["--model", "cbm", "--set", "dp_epsilon=5", "--set", "dp_rounds=4"]
    full, full_out = run(tmp_path, "full", *dp)
    args = ["run", "fcm", "--network", "asia", "--clients", "4", "--rounds", "6", "--seed", "0"]
    part = tmp_path / "part"
    stop = ["--stop-after", "3"]
    first = runner.invoke(app, [*args, "--quiet", "--out", str(part), *SMALL, *dp, *stop])
    assert first.exit_code == 0, first.output
    resumed = runner.invoke(app, ["run", "fcm", "--resume", str(part), "--quiet"])
    assert resumed.exit_code == 0, resumed.output
    resumed_metrics = json.loads((part / "metrics.json").read_text())
    assert set(resumed_metrics) == set(full)
    history = json.loads((full_out / "history.json").read_text())
    resumed_history = json.loads((part / "history.json").read_text())
    spent = [{k: v for k, v in h.items() if k.startswith("epsilon")} for h in history]
    assert [{k: v for k, v in h.items() if k.startswith("epsilon")} for h in resumed_history] == (
        spent
    )
    assert any(spent)
    assert max(h.get("epsilon_max", 0) for h in history) <= 5.0


#: The quick recipes' common settings cut to the size of :data:`SMALL` (recipe tests).
TINY_RECIPE = {"samples": 2000, "autoencoder_epochs": 5, "clients": 4, "initial_clients": 2,
               "arrival_round": 3, "clients_per_round": 3, "rounds": 6, "max_epochs": 15,
               "batch_size": 128, "standardise_latent": True}  # fmt: skip


@pytest.mark.slow
def test_the_freezing_recipe_trains_with_and_without_freezing(tmp_path, monkeypatch):
    """Tables 7-8: one row per (network, model, freezing); the two runs differ in
    ``freeze_unsupervised`` only, and it changes what they learn."""
    from fedstruct.methods.fcm import recipes
    from fedstruct.runs.recipes import run_recipe

    monkeypatch.setattr(recipes, "QUICK", TINY_RECIPE)
    run_recipe("fcm-freezing", quick=True, out=tmp_path)
    rows = {r["name"]: r for r in json.loads((tmp_path / "results.json").read_text())}
    assert list(rows) == ["asia | c2bm | freezing no", "asia | c2bm | freezing yes"]
    runs = {f: tmp_path / f"asia---c2bm---freezing-{f}" / "seed-0" for f in ("no", "yes")}
    settings = {f: json.loads((p / "config.json").read_text())["settings"] for f, p in runs.items()}
    assert [settings[f]["freeze_unsupervised"] for f in ("no", "yes")] == [False, True]
    assert settings["no"]["regime"] == settings["yes"]["regime"] == "fcm"
    metrics = {f: json.loads((p / "metrics.json").read_text()) for f, p in runs.items()}
    assert metrics["no"]["concept_accuracy"] != metrics["yes"]["concept_accuracy"]
    assert "| asia | c2bm | freezing yes |" in (tmp_path / "results.md").read_text()
    assert (tmp_path / "task_accuracy.png").stat().st_size > 10_000


def test_intervention_metrics_are_ordered_by_level_as_numbers():
    """results.md of ``fcm-interventions``: a network with 10+ levels (hailfinder has 14)
    lists level 2 before level 10, per metric."""
    from fedstruct.methods.fcm.recipes import _by_level

    names = [f"{m}_accuracy_level_{lv}" for m in ("task", "label") for lv in (10, 2, 0, 13, 1)]
    assert sorted(names, key=_by_level) == [
        f"{m}_accuracy_level_{lv}" for m in ("label", "task") for lv in (0, 1, 2, 10, 13)
    ]
