"""Methods are found through the registry (issue 30, item 4): a method added as its own
package runs through ``fedstruct run`` with no file of fedstruct edited, and a command
imports only the method it uses."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import fedstruct
from fedstruct import registry
from fedstruct.errors import ConfigError
from fedstruct.lazy import lazy_exports
from fedstruct.runs.contract import runnable, runnable_names

#: The toy method: each client sends the mean of its column ``x`` and its row count;
#: the server averages the means, weighted by the counts. One package, written outside
#: fedstruct, that declares itself by entry points as an installed package would.
TOY_FILES = {
    "toy_method/__init__.py": '"""A toy method outside fedstruct."""\n',
    "toy_method/estimator.py": """
        from dataclasses import dataclass, field

        import numpy as np

        from fedstruct.constraints import Interval, check_fields
        from fedstruct.estimators import FederatedEstimator
        from fedstruct.fl import Client, Message, handles
        from fedstruct.fl import checkpoint
        from fedstruct.fl.federation import ServerAlgorithm

        MEAN = "toy.mean"


        @dataclass(frozen=True)
        class ToyConfig:
            rounds: int = 2

            def __post_init__(self):
                check_fields(self, {"rounds": Interval(int, 1)}, "")


        @dataclass
        class ToyState:
            mean: float = 0.0
            history: list = field(default_factory=list)


        checkpoint.register(ToyState, name="toy_method.ToyState")


        class ToyClient(Client):
            def __init__(self, data, *, config, seed):
                super().__init__(data, seed=seed)

            @handles(MEAN, max_entries=2)
            def mean(self, msg):
                x = self.data.rows["x"].to_numpy()
                return Message(MEAN, metrics={"mean": float(x.mean()), "n": len(x)})


        class ToyServer(ServerAlgorithm):
            def __init__(self, config):
                self.rounds = config.rounds

            def init_state(self):
                return ToyState()

            def run_round(self, grid, state, rnd):
                replies = grid.send_and_receive({n: Message(MEAN) for n in grid.node_ids()})
                n = sum(r.metrics["n"] for r in replies.values())
                mean = sum(r.metrics["mean"] * r.metrics["n"] for r in replies.values()) / n
                record = {"round": rnd, "mean": mean, "clients_answered": len(replies)}
                return ToyState(mean, [*state.history, record])


        class ToyMean(
            FederatedEstimator, method="toy", config=ToyConfig, client=ToyClient, server=ToyServer
        ):
            def __init__(self, *, seed=0, participation=None, rounds=2, secure_aggregation=False):
                super().__init__(
                    seed=seed, participation=participation, secure_aggregation=secure_aggregation
                )
                self.rounds = rounds

            def make_server(self):
                return ToyServer(self.config_)

            def learn(self, state):
                self.mean_ = state.mean

            def learned_state(self):
                return {"mean": np.array([self.mean_])}, {}

            def restore(self, arrays, meta):
                self.mean_ = float(arrays["mean"][0])
    """,
    "toy_method/run/__init__.py": '''
        from dataclasses import dataclass

        import numpy as np
        import pandas as pd

        from fedstruct.data.client import ClientData
        from fedstruct.runs.contract import FederationSettings, Runnable, RunOutcome, register
        from fedstruct.runs.source import Source
        from toy_method.estimator import ToyConfig, ToyMean


        @dataclass(frozen=True)
        class ToyRun(FederationSettings, ToyConfig):
            """A toy's settings.

            Parameters
            ----------
            rows
                Rows per client.
            """

            rounds: int = 2
            rows: int = 20


        class ToyData(Source):
            """Normal draws around each client's index."""

            def __init__(self, settings):
                self.settings = settings
                self.names = tuple(settings.client_names())

            def clients(self):
                rng = np.random.default_rng(self.settings.seed)
                rows = self.settings.rows
                return [
                    ClientData(name, pd.DataFrame({"x": rng.normal(k, 1.0, rows + k)}))
                    for k, name in enumerate(self.names)
                ]


        def source(settings, sites):
            return ToyData(settings) if sites is None else sites


        def method(settings, source):
            return ToyMean(seed=settings.seed, rounds=settings.rounds)


        def run_toy(settings, ctx, model, source):
            ctx.fit(model, source)
            return RunOutcome({"mean": model.mean_}, model.history_)


        register(
            Runnable(
                name="toy",
                summary="A toy mean, from a package outside fedstruct",
                settings=ToyRun,
                source=source,
                method=method,
                run=run_toy,
                options={"rows": "rows"},
            )
        )
    ''',
    "toy_method/run/recipes.py": """
        from fedstruct.runs.recipes import Recipe, register_recipe

        register_recipe(Recipe("toy-table", "The toy's mean, once", lambda quick, out: None))
    """,
    "toy_method-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: toy-method\nVersion: 0.1\n",
    "toy_method-0.1.dist-info/entry_points.txt": (
        "[fedstruct.methods]\ntoy = toy_method.estimator\n\n"
        "[fedstruct.runs]\ntoy = toy_method.run\n"
    ),
}


def write_package(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    return folder


def python(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """``python ARGS`` in a new process with ``folder`` (the toy's install) on the path."""
    source = str(Path(fedstruct.__file__).parents[1])
    path = os.pathsep.join([str(folder), source, os.environ.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": path},
    )  # fmt: skip


@pytest.mark.deploy
def test_a_method_from_its_own_package_runs_loads_and_lists_with_no_fedstruct_file_edited(
    tmp_path,
):
    site = write_package(tmp_path / "site", TOY_FILES)
    out = tmp_path / "run"
    ran = python(site, "-m", "fedstruct.cli", "run", "toy", "--clients", "3", "--rows", "30",
                 "--out", str(out))  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    rng = np.random.default_rng(0)  # the toy's federation, drawn again here
    rows = np.concatenate([rng.normal(k, 1.0, 30 + k) for k in range(3)])
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["mean"] == pytest.approx(rows.mean(), abs=1e-12)
    assert json.loads((out / "config.json").read_text())["settings"]["rows"] == 30

    loaded = python(site, "-c", f"import fedstruct; m = fedstruct.load({str(out)!r}); "
                    "print(type(m).__name__, m.mean_, len(m.history_))")  # fmt: skip
    assert loaded.returncode == 0, loaded.stderr
    name, mean, rounds = loaded.stdout.split()
    assert (name, float(mean), rounds) == ("ToyMean", pytest.approx(rows.mean()), "2")

    listed = python(site, "-m", "fedstruct.cli", "run", "--help")
    assert "toy" in listed.stdout and "fedavg" in listed.stdout, listed.stderr
    recipes = python(site, "-m", "fedstruct.cli", "reproduce", "--list")
    assert "toy-table" in recipes.stdout and "fedcd-vertical" in recipes.stdout, recipes.stderr


def test_a_package_may_not_take_a_name_of_fedstruct_s_own(tmp_path, monkeypatch):
    files = {
        "clash-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: clash\nVersion: 0.1\n",
        "clash-0.1.dist-info/entry_points.txt": "[fedstruct.runs]\nfedavg = clash.run\n",
    }
    monkeypatch.syspath_prepend(str(write_package(tmp_path, files)))
    with pytest.raises(ConfigError, match=r"package clash declares method 'fedavg'.*another name"):
        registry.method_names()
    assert runnable("fedavg").name == "fedavg"  # fedstruct's own are found first


def test_register_method_finds_a_method_in_this_process(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "_REGISTERED", {})
    registry.register_method("absent", run="no_such_package.run")
    assert "absent" in runnable_names()
    with pytest.raises(ConfigError, match=r"run module 'no_such_package\.run' cannot be imported"):
        runnable("absent")
    with pytest.raises(ConfigError, match="one of fedstruct's own"):
        registry.register_method("fedcd", run="mine.fedcd")
    with pytest.raises(ConfigError, match="unknown method 'nosuch'; valid methods: absent, cafe"):
        runnable("nosuch")


def test_fedstruct_s_own_methods_are_its_run_packages_with_a_method_package():
    found = registry.method_names()
    assert found == ("cafe", "fcm", "fedavg", "fedcd", "fedcdnv", "fedfci", "fedngm")
    for name in found:
        cls = registry.estimator_class(name)
        assert cls.method == name
        assert cls.__module__ == f"fedstruct.methods.{name}.estimator"


def test_lazy_exports_refuse_a_name_that_is_its_module():
    with pytest.raises(ValueError, match=r"\['federation'\] name sub-modules"):
        lazy_exports("fedstruct.runs", {"federation": "federation"})


#: What a command imports, in a new process: methods, torch, Flower.
IMPORTS = """
import sys
from fedstruct.cli import app
try:
    app(sys.argv[1:], standalone_mode=False)
except SystemExit:
    pass
methods = sorted({m.split(".")[2] for m in sys.modules if m.startswith("fedstruct.methods.")})
print(",".join(methods), "torch" in sys.modules, "flwr" in sys.modules)
"""


def imported(*command: str) -> tuple[list[str], bool, bool]:
    """The methods a CLI command imports, and whether it imports torch and Flower."""
    done = subprocess.run([sys.executable, "-c", IMPORTS, *command], capture_output=True,
                          text=True, check=True, timeout=300)  # fmt: skip
    methods, torch, flower = done.stdout.strip().splitlines()[-1].split(" ")
    return [m for m in methods.split(",") if m], torch == "True", flower == "True"


@pytest.mark.deploy
@pytest.mark.parametrize(
    "command, methods",
    [
        (["--help"], []),
        (["datasets"], []),
        (["run", "fedavg", "--help"], ["fedavg"]),
        (["run", "fcm", "--help"], ["fcm"]),
        (["run", "fedcd", "--help"], ["fedcd"]),
        (["reproduce", "--help"], []),
    ],
)
def test_help_and_listing_import_no_torch_and_only_the_method_asked_for(command, methods):
    assert imported(*command) == (methods, False, False)


@pytest.mark.deploy
def test_listing_the_recipes_imports_no_torch():
    """``reproduce --list`` imports every recipe module (each registers its own), and
    none of them imports torch before its recipe runs."""
    assert imported("reproduce", "--list")[1:] == (False, False)


@pytest.mark.deploy
def test_export_of_a_graph_run_imports_no_method_and_show_its_own_only(tmp_path):
    """``export`` needs the saved graph and model.json, not the estimator; ``show``
    loads the run's estimator (for its summary), no other method and no torch."""
    from fedstruct.runs.contract import execute

    run = str(tmp_path / "run")
    execute("fedcdnv", [dict(runnable("fedcdnv").quick)], tmp_path / "run")
    assert imported("export", run, "--format", "dot") == ([], False, False)
    assert imported("show", run) == (["fedcdnv"], False, False)
    weights = tmp_path / "run" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8])  # export still checks the saved model
    done = subprocess.run([sys.executable, "-m", "fedstruct.cli", "export", run, "--format",
                           "dot"], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 2
    assert "does not match the checksum model.json records" in done.stderr


def test_a_deployment_s_client_app_imports_no_method_until_a_run_names_one():
    script = (
        "import sys; import fedstruct.deployment.app; "
        "print(sorted(m for m in sys.modules if m.startswith('fedstruct.methods.')), "
        "'torch' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, timeout=300)  # fmt: skip
    assert done.stdout.strip() == "[] False"


def test_importing_the_cli_loads_no_torch():
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import fedstruct.cli"],
                          capture_output=True, text=True, check=True, timeout=300)  # fmt: skip
    modules = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "fedstruct.cli" in modules
    assert not {m for m in modules if m == "torch" or m.startswith("fedstruct.methods")}
