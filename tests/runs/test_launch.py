"""Launchers apart from backends: ``--backend`` chooses a launcher once; backends only
provide grids; no module outside the Flower packages branches on ``"flower"``."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import fedstruct
from fedstruct.deployment.launcher import FlowerLauncher
from fedstruct.errors import ConfigError
from fedstruct.fl import Backend, LocalBackend, backend_names, get_backend
from fedstruct.runs import runnable
from fedstruct.runs.contract import execute
from fedstruct.runs.control import RunControl
from fedstruct.runs.launch import (
    LocalLauncher,
    PreparedRun,
    launcher_names,
    make_launcher,
)

SRC = Path(fedstruct.__file__).parent
#: The only packages that may know the name of the Flower launcher.
FLOWER_PACKAGES = (SRC / "deployment", SRC / "fl" / "flower")


def test_the_backend_registry_lists_only_backends_that_provide_a_grid():
    assert backend_names() == ("flower-sim", "local")
    for name in backend_names():
        assert isinstance(get_backend(name), Backend)
    with pytest.raises(ConfigError, match="backend 'flower' runs on a SuperLink"):
        get_backend("flower")


def test_backend_chooses_a_launcher_once():
    assert launcher_names() == ("flower", "flower-sim", "local")
    assert make_launcher("local") == LocalLauncher("local")
    assert make_launcher("flower-sim") == LocalLauncher("flower-sim")
    flower = make_launcher("flower", {"superlink": "10.0.0.5:9091", "min_nodes": 2})
    assert isinstance(flower, FlowerLauncher) and not flower.checkpoint_here
    assert flower.record()["deployment"]["superlink"] == "10.0.0.5:9091"
    assert flower.record()["deployment"]["min_nodes"] == 2
    with pytest.raises(
        ConfigError, match="unknown backend 'ray'; valid backends: flower, flower-sim, local"
    ):
        make_launcher("ray")


def test_the_flower_launcher_checks_its_own_options(tmp_path):
    with pytest.raises(ConfigError, match="--control-key"):
        make_launcher("flower", {"control_key": tmp_path / "absent"})


def _compares_with_flower(tree: ast.AST) -> list[int]:
    """Lines of ``tree`` comparing something with the string ``"flower"``."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Constant) and s.value == "flower" for s in sides):
                lines.append(node.lineno)
    return lines


def test_no_module_outside_the_flower_packages_branches_on_flower():
    found = {
        f"{path.relative_to(SRC)}:{line}"
        for path in SRC.rglob("*.py")
        if not any(path.is_relative_to(p) for p in FLOWER_PACKAGES)
        for line in _compares_with_flower(ast.parse(path.read_text()))
    }
    assert not found, f"compared with 'flower' outside the Flower launcher: {sorted(found)}"


def test_the_scan_finds_a_comparison():
    """The scan above can fail: it sees the branches this item removed."""
    assert _compares_with_flower(ast.parse('if backend == "flower":\n    pass')) == [1]
    assert _compares_with_flower(ast.parse('x = a and "flower" != backend')) == [1]


class ToyLauncher:
    """A launcher defined here: runs here on the local grid, records one option."""

    name = "toy"
    checkpoint_here = True

    def __init__(self) -> None:
        self.launched: list[PreparedRun] = []

    def check(self, settings):
        if settings.rounds > 5:
            raise ConfigError("toy: at most 5 rounds")

    def record(self):
        return {"toy": {"answer": 42}}

    def resumed(self, config, out):
        return self

    def launch(self, run):
        self.launched.append(run)
        return run.here(LocalBackend())


def test_execute_hands_the_run_to_the_launcher(tmp_path):
    toy = ToyLauncher()
    settings = {**runnable("fedavg").quick, "rounds": 2}
    outcome = execute("fedavg", [settings], tmp_path / "run", backend=toy)
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["backend"] == "toy" and config["toy"] == {"answer": 42}
    assert [r.method for r in toy.launched] == ["fedavg"]
    assert outcome.metrics == json.loads((tmp_path / "run" / "metrics.json").read_text())
    with pytest.raises(ConfigError, match="toy: at most 5 rounds"):
        execute("fedavg", [{**settings, "rounds": 6}], tmp_path / "other", backend=toy)
    assert not (tmp_path / "other").exists()  # refused before the folder was touched


@pytest.mark.parametrize("stop_after", [0, -3, 1.5, True])
def test_run_control_is_checked_once_with_the_cli_line(tmp_path, stop_after):
    line = f"--stop-after {stop_after}: give the round to stop after, a number >= 1"
    with pytest.raises(ConfigError) as made:
        RunControl(stop_after=stop_after)
    assert str(made.value) == line
    toy = ToyLauncher()
    quick = {**runnable("fedavg").quick, "rounds": 2}
    with pytest.raises(ConfigError) as run:
        execute("fedavg", [quick], tmp_path / "run", backend=toy, stop_after=stop_after)
    assert str(run.value) == line
    assert not toy.launched and not (tmp_path / "run").exists()


def test_the_run_control_travels_as_one_value_to_the_fit(tmp_path, monkeypatch):
    from fedstruct.estimators import FederatedEstimator

    fits: list[dict] = []
    fit = FederatedEstimator.fit

    def recorded(model, clients, **options):
        fits.append(options)
        return fit(model, clients, **options)

    monkeypatch.setattr(FederatedEstimator, "fit", recorded)
    toy = ToyLauncher()
    quick = {**runnable("fedavg").quick, "rounds": 2}
    execute("fedavg", [quick], tmp_path / "run", backend=toy, stop_after=1, overwrite=True)
    control = RunControl(stop_after=1, overwrite=True)
    assert [run.control for run in toy.launched] == [control]
    assert [(f["resume"], f["progress"], f["stop_after"]) for f in fits] == [(False, False, 1)]
    execute("fedavg", [quick], tmp_path / "run", backend=toy, resume=True)
    assert toy.launched[-1].control == RunControl(resume=True)
    assert fits[-1]["resume"] is True and fits[-1]["stop_after"] is None
