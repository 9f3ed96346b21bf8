"""A Flower deployment on this machine: SuperLink and SuperNodes as real processes.

For trying a deployment on one machine, for tests and for benchmarks. Every process
is started through fedstruct's own commands (``fedstruct flower ...``) in its own
session, so stopping its process group also stops the warm workers and ServerApps
they start. Everything binds to 127.0.0.1 on free ports, with a private FLWR_HOME,
telemetry and update checks off. Its daemons stop by themselves when the process that
started them ends, even by SIGKILL (:data:`~fedstruct.fl.flower.guard.STOP_WITH_ENV`).
Its SuperNodes poll as often as Flower's own
(every 3 s when idle) unless ``poll_interval`` says otherwise.
Use it as a context manager::

    with LoopbackCluster(Path("/tmp/fl")) as cluster:
        cluster.superlink("--insecure")
        for k in range(3):
            cluster.supernode(k, "--insecure")
        cluster.fedstruct("run", "fedavg", "--clients", "3", "--backend", "flower",
                          "--superlink", cluster.address, "--out", "/tmp/fl/run")
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from fedstruct.fl.flower.guard import POLL_INTERVAL_ENV, STOP_WITH_ENV

FEDSTRUCT = [sys.executable, "-m", "fedstruct.cli"]

#: Seconds any wait of a loopback cluster may last before it is a failure: far above
#: what a loaded machine needs, so that only a broken process reaches it.
PATIENCE = 600.0


__all__ = ["FEDSTRUCT", "PATIENCE", "LoopbackCluster", "free_port"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LoopbackCluster:
    """A SuperLink and SuperNodes on 127.0.0.1: start them, stop them all (by PID).

    Parameters
    ----------
    root
        Folder for the private FLWR_HOME and one log file per process.
    poll_interval
        Seconds between the polls of every SuperNode for messages; ``None``: Flower's
        own interval.
    runs
        The SuperLink's runs folder (``--runs``): submitted runs must write their
        results inside it (default: ``root``).
    """

    def __init__(
        self, root: Path, *, poll_interval: float | None = None, runs: Path | None = None
    ) -> None:
        self.root = root
        self.runs = root if runs is None else runs
        self.home = root / "flwr-home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.env = dict(os.environ)
        self.env.update(
            FLWR_HOME=str(self.home),
            FLWR_TELEMETRY_ENABLED="0",
            FLWR_DISABLE_UPDATE_CHECK="1",
        )
        self.env[STOP_WITH_ENV] = str(os.getpid())
        self.env.pop(POLL_INTERVAL_ENV, None)
        if poll_interval is not None:
            self.env[POLL_INTERVAL_ENV] = str(poll_interval)
        self.procs: dict[str, subprocess.Popen] = {}
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"

    def __enter__(self) -> LoopbackCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(
        self,
        name: str,
        *args: str,
        env: dict[str, str] | None = None,
        program: Sequence[str] = tuple(FEDSTRUCT),
    ) -> subprocess.Popen:
        """Start ``fedstruct ARGS`` (or ``program ARGS``) in its own session, output to
        ``root/NAME.log`` (``env``: variables added to the cluster's environment for
        this process)."""
        log = (self.root / f"{name}.log").open("w")
        proc = subprocess.Popen(
            [*program, *args],
            env={**self.env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.procs[name] = proc
        return proc

    def log(self, name: str) -> str:
        """The output of process ``name`` so far."""
        return (self.root / f"{name}.log").read_text()

    def superlink(self, *extra: str, env: dict[str, str] | None = None) -> None:
        """Start the SuperLink on :attr:`port` (runs folder :attr:`runs`) and wait until it
        accepts connections (or its process ends)."""
        self.start(
            "superlink", "flower", "superlink", "--port", str(self.port),
            "--runs", str(self.runs), *extra, env=env,
        )  # fmt: skip
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if self.procs["superlink"].poll() is not None:
                    break
                time.sleep(0.3)
        raise RuntimeError(f"SuperLink did not come up:\n{self.log('superlink')}")

    def supernode(self, partition: int, *extra: str, name: str | None = None) -> str:
        """Start a SuperNode for ``partition``; return its process name."""
        name = name or f"node{partition}"
        self.start(
            name,
            "flower",
            "supernode",
            "--partition",
            str(partition),
            "--superlink",
            self.address,
            "--port",
            str(free_port()),
            *extra,
        )
        return name

    def site_node(
        self, data: Path, *extra: str, name: str, env: dict[str, str] | None = None
    ) -> str:
        """Start a SuperNode holding site ``name``'s own file ``data``; return its
        process name (``name``)."""
        self.start(
            name,
            "flower",
            "supernode",
            "--data",
            str(data),
            "--name",
            name,
            "--superlink",
            self.address,
            "--port",
            str(free_port()),
            *extra,
            env=env,
        )
        return name

    def wait_connected(self, *names: str) -> None:
        """Wait until the SuperNodes ``names`` have joined the SuperLink (each log names
        its SuperNode id): a run submitted then finds them, however slowly the machine
        started them (a run waits only ``join_timeout`` seconds for its nodes).

        Raises
        ------
        RuntimeError
            If a node's process ends first, or :data:`PATIENCE` passes.
        """
        deadline = time.monotonic() + PATIENCE
        for name in names:
            while "SuperNode ID:" not in self.log(name):
                if self.procs[name].poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"SuperNode {name} did not join:\n{self.log(name)}")
                time.sleep(0.2)

    def stop(self, name: str, sig: int = signal.SIGTERM, grace: float = PATIENCE) -> None:
        """Signal process ``name``'s group and wait until it has ended (a SuperNode
        stopped by SIGTERM has then left the SuperLink); kill it if it has not ended
        after ``grace`` seconds."""
        self._stop_together([name], sig, grace)

    def close(self) -> None:
        """Stop every process: the SuperNodes first (signalled together: each takes
        about 2 s to shut down), then the SuperLink; any left 10 s later is killed."""
        self._stop_together([n for n in self.procs if n != "superlink"], signal.SIGTERM, 10)
        if "superlink" in self.procs:
            self.stop("superlink", grace=10)

    def _stop_together(self, names: Sequence[str], sig: int, grace: float) -> None:
        """Signal the groups of processes ``names`` at once; kill those that have not
        ended ``grace`` seconds later."""
        procs = [self.procs.pop(name) for name in names]
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
        deadline = time.monotonic() + grace
        for proc in procs:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)

    def fedstruct(self, *args: str, timeout: float = PATIENCE) -> subprocess.CompletedProcess:
        """Run ``fedstruct ARGS`` with the cluster's environment; capture its output."""
        return subprocess.run(
            [*FEDSTRUCT, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
