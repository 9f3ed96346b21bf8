"""The flower-sim backend gives exactly the local result (Ray; ~10 s per run)."""

import json
import logging
import os
import signal
import subprocess
import sys
import time
import uuid
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")

from fedstruct.data import horizontal, load_network
from fedstruct.errors import ConfigError, DeploymentError
from fedstruct.fl import Participation, get_backend
from fedstruct.fl.federation import CHECKPOINT_FILE, read_checkpoint_header
from fedstruct.fl.flower.loopback import FEDSTRUCT, PATIENCE
from fedstruct.fl.flower.simulation import FlowerSimBackend
from fedstruct.methods.fedavg import FedAvg
from fedstruct.runs import execute, runnable_names

pytestmark = [pytest.mark.slow, pytest.mark.deploy]


@pytest.fixture(scope="class")
def one_ray():
    """One Ray instance for a class's in-process flower-sim runs. Flower starts Ray for
    a run only when none runs in the process (``RayBackend.init_ray``) and shuts it down
    when the run ends (``RayBackend.terminate``): here Ray is started once, as Flower
    starts it for :class:`FlowerSimBackend` (its ``init_args``, the workers' PYTHONPATH),
    and ``ray.shutdown`` waits for the class's end. Each run still builds its own actors
    and terminates them; the Ctrl-C test below runs in fresh processes, where Flower
    starts and stops Ray itself. Saves Ray's start and stop (~5-10 s) per run."""
    import ray

    assert not ray.is_initialized()
    path = os.pathsep.join([*sys.path, *filter(None, [os.environ.get("PYTHONPATH")])])
    with warnings.catch_warnings():  # Ray's notice about a future default of num_gpus=0
        warnings.filterwarnings("ignore", "Tip: In future versions of Ray", FutureWarning)
        ray.init(
            runtime_env={"env_vars": {"PYTHONPATH": path}},
            num_cpus=FlowerSimBackend().num_cpus,
            num_gpus=0,
            include_dashboard=False,
            logging_level=logging.ERROR,
            log_to_driver=False,
        )
    shutdown = ray.shutdown
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(ray, "shutdown", lambda *args, **kwargs: None)
            yield
    finally:
        shutdown()


@pytest.mark.usefixtures("one_ray")
class TestFlowerSimEqualsLocal:
    """The flower-sim backend's runs against the local backend's, on one Ray."""

    def test_flower_sim_equals_local_under_partial_participation(self):
        net = load_network("asia")
        clients = horizontal(net.sample(3000, seed=0), 3, seed=0)
        test = net.sample(1000, seed=1)
        part = Participation(dropout=0.2, report_rate=0.6)
        kw = dict(rounds=3, seed=3, participation=part, staleness_exponent=0.5)
        local = FedAvg("dysp", net.cardinalities, **kw).fit(clients, test=test)
        sim = FedAvg("dysp", net.cardinalities, **kw).fit(clients, test=test, backend="flower-sim")
        assert sim.history_ == local.history_
        for name, value in local.params_.items():
            np.testing.assert_array_equal(sim.params_[name], value)
        assert sim.traffic_.summary() == local.traffic_.summary()
        # the participation model really acted: someone dropped or reported late
        assert any(h["clients_answered"] < 3 for h in local.history_)
        assert any(h["late_merged"] > 0 for h in local.history_)

    @pytest.mark.parametrize("method", runnable_names())
    def test_every_method_gives_the_local_metrics_on_flower_sim(
        self, method, small_settings, tmp_path
    ):
        """Backend equivalence for each registered method, on its quick settings made
        smaller (``small_settings``); FedAvg's with secure aggregation (its plain runs on
        flower-sim are the tests around this one): the protocol's four stages per sum run
        through Flower's ClientApp, each node keeping its session's secrets in its
        in-memory context between them."""
        quick = small_settings(method)
        if method == "fedavg":
            quick["secure_aggregation"] = True
        local = execute(method, [quick], tmp_path / "local")
        sim = execute(method, [quick], tmp_path / "sim", backend="flower-sim")
        assert sim.metrics == pytest.approx(local.metrics, rel=1e-6, abs=1e-9)
        assert sim.metrics.keys() == local.metrics.keys()
        assert json.loads((tmp_path / "sim" / "config.json").read_text())["backend"] == "flower-sim"

    def test_a_run_on_site_files_gives_the_local_metrics_on_flower_sim(self, tmp_path):
        net = load_network("asia")
        rows = net.sample(1500, seed=0)
        sites = []
        for k, part in enumerate(np.array_split(np.arange(1500), 3)):
            path = tmp_path / f"site-{k}.csv"
            rows.iloc[part].to_csv(path, index=False)
            sites.append(str(path))
        settings = {"sites": sites, "target": "dysp", "test_fraction": 0.2, "rounds": 3}
        local = execute("fedavg", [settings], tmp_path / "local")
        sim = execute("fedavg", [settings], tmp_path / "sim", backend="flower-sim")
        assert sim.metrics == pytest.approx(local.metrics, rel=1e-6, abs=1e-9)
        assert local.metrics["test_accuracy"] > 0.6

    def test_a_tracked_flower_sim_run_logs_every_round_and_its_metrics(
        self, small_settings, tmp_path
    ):
        """issue 53, item 5: a flower-sim run tracked in MLflow (by its own process, the
        rounds read from its progress file): every round's series equals history.json's
        and the final metrics metrics.json's."""
        pytest.importorskip("mlflow")
        from mlflow import MlflowClient

        from fedstruct.runs.control import Tracking

        uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
        out = tmp_path / "sim"
        settings = small_settings("fedavg")
        outcome = execute(
            "fedavg", [settings], out, backend="flower-sim", track=Tracking("mlflow", uri)
        )
        assert outcome.tracked.startswith("MLflow run ")
        client = MlflowClient(uri)
        (run,) = client.search_runs([client.get_experiment_by_name("fedstruct").experiment_id])
        assert run.info.status == "FINISHED" and run.data.params["backend"] == "flower-sim"
        history = json.loads((out / "history.json").read_text())
        for key in ("test_accuracy", "train_loss"):
            logged = client.get_metric_history(run.info.run_id, f"round/{key}")
            assert sorted((m.step, m.value) for m in logged) == [
                (h["round"], h[key]) for h in history
            ]
        metrics = json.loads((out / "metrics.json").read_text())
        assert {k: run.data.metrics[k] for k in metrics} == metrics


def test_flower_is_not_a_python_level_backend():
    with pytest.raises(ConfigError, match="runs on a SuperLink"):
        get_backend("flower")
    with pytest.raises(
        ConfigError, match="unknown backend 'ray'; valid backends: flower-sim, local"
    ):
        get_backend("ray")


def _processes_with(marker: str) -> list[str]:
    """Command lines of the live processes whose environment holds ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "environ").read_bytes():
                found.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc for leftover processes")
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_stops_a_flower_sim_run_at_once_and_resume_gives_the_uninterrupted_result(
    tmp_path, sig
):
    """Ctrl-C (or SIGTERM) once: the ServerApp's thread stops within seconds (it used to
    wait out the 600 s reply timeout and then checkpoint the cut round as if no client
    had answered), the run is recorded as stopped with no traceback (SIGTERM used to end
    in Ray's stack dump, recorded as failed), no Ray process is left, and --resume
    reaches the uninterrupted (local) result (after Ctrl-C: SIGTERM takes the same path).

    Independent of the machine's speed (issue 49, item 8: on a busy machine Ctrl-C
    landed after a 20-round run had finished): the run has a million rounds, so it is
    still running whenever the signal comes after its first checkpoint; the resumed run
    and the uninterrupted one both stop one round after the checkpoint it left. The
    waits end on events (a checkpoint, the process's exit, Ray's processes gone); their
    bounds only catch a hang."""
    marker = uuid.uuid4().hex
    env = {**os.environ, "FEDSTRUCT_TEST_MARKER": marker}
    out = tmp_path / "sim"
    chosen = {"clients": 2, "rounds": 1_000_000, "seed": 1, "samples": 1500,
              "test_samples": 500, "dropout": 0.2}  # fmt: skip
    settings = ["fedavg", *(a for k, v in chosen.items() for a in ("--set", f"{k}={v}")), "--quiet"]
    proc = subprocess.Popen(
        [*FEDSTRUCT, "run", *settings, "--backend", "flower-sim", "--out", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + PATIENCE
        while not (out / CHECKPOINT_FILE).exists():  # round 1 is done: Ray runs
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, f"no round finished in {PATIENCE} s"
            time.sleep(0.05)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=PATIENCE)  # not the 600 s reply timeout
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "stopped", err
    # as a local run's Ctrl-C: exit code 130 and one line saying how to go on (no Ray
    # traceback)
    [line] = err.strip().splitlines() or [""]
    assert proc.returncode == 130 and line.startswith("stopped: "), err[-4000:]
    assert f"--resume {out}" in line
    # Ray's helpers end with their driver (on a busy machine, up to seconds later)
    deadline = time.monotonic() + PATIENCE
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_with(marker) == []
    if sig != signal.SIGINT:
        return
    # resumed in this process as 'fedstruct run fedavg --resume OUT' resumes it (that
    # option: tests/cli/test_cli.py), on config.json's backend, flower-sim,
    # for one more round than Ctrl-C left; the uninterrupted run stops there too
    last = read_checkpoint_header(out / CHECKPOINT_FILE)["round"]
    execute("fedavg", [], out, resume=True, stop_after=last + 1)
    execute("fedavg", [chosen], tmp_path / "local", stop_after=last + 1)  # in this process
    for name in ("metrics.json", "history.json"):
        assert json.loads((out / name).read_text()) == json.loads(
            (tmp_path / "local" / name).read_text()
        )
    assert json.loads((out / "history.json").read_text())[-1]["round"] == last + 1


#: A ``sitecustomize`` that ends every Ray worker process as it starts.
WORKERS_DIE = """
import os, sys
if any(arg.endswith("default_worker.py") for arg in sys.argv):
    os._exit(1)
"""


def test_a_flower_sim_run_whose_workers_die_at_start_fails_in_one_line(tmp_path, monkeypatch):
    """Ray's worker processes die as they start (as under a memory limit): the run
    fails with one line once the start timeout is out (it used to wait for ever, with
    ``ray.init`` holding the interpreter), and Ray is shut down. The timeout only
    bounds the wait: no worker ever starts, so any value gives this outcome."""
    import ray

    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(WORKERS_DIE)
    path = os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH")]))
    monkeypatch.setenv("PYTHONPATH", path)  # Ray's workers inherit it
    net = load_network("asia")
    clients = horizontal(net.sample(300, seed=0), 2, seed=0)
    model = FedAvg("dysp", net.cardinalities, rounds=1)
    with pytest.raises(DeploymentError, match="Ray started no worker process that runs within 5 s"):
        model.fit(clients, backend=FlowerSimBackend(start_timeout=5))
    assert not ray.is_initialized()
