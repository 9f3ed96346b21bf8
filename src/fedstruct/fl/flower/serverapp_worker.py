"""A warm ServerApp: a process started ahead of a run that runs that run's ServerApp.

Flower's SuperLink starts a ``flower-superexec`` that starts a fresh ``flwr-serverapp``
process for every run, which imports Flower's SuperLink package, fedstruct, the
method, torch and scikit-learn before the run's first message: seconds of every run.
``fedstruct flower superlink`` runs its SuperLink with ``--isolation process`` and a
dispatcher (:mod:`fedstruct.fl.flower.dispatch`) that keeps one of these processes
ready: it loads fedstruct's ServerApp when it starts (fedstruct's only: the
``serverapp`` component of :data:`~fedstruct.fl.flower.guard.FEDSTRUCT_COMPONENTS`,
never code from the run's app bundle, which it checks again with
:func:`~fedstruct.fl.flower.guard.app_problem`) and what a run needs (:data:`PRELOAD`,
torch), then waits. Given a run, it runs it as ``flwr-serverapp`` would
(:func:`~fedstruct.fl.flower.adapter.run_serverapp_task`) and ends: one process per run,
as with Flower, so that nothing of a run outlives it.

With its dispatcher it speaks lines, as a SuperNode's worker does
(:mod:`fedstruct.fl.flower.worker`): ``ready`` on its report pipe once loaded, the
run's task token on its standard input, ``done`` once the run's task has ended. The end
of its input before a token ends it; so does the end of its SuperLink. Its output is
the SuperLink's, and is uploaded as the run's log, as a ``flwr-serverapp``'s is.

Run: ``python -m fedstruct.fl.flower.serverapp_worker RUNTIME_ADDRESS REPORT_FD
[CA_CERTIFICATE]`` (the CA certificate of a TLS SuperLink's Runtime API).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fedstruct.fl.flower.worker import DONE, READY

__all__ = ["PRELOAD", "load_serverapp", "main"]

#: What a warm ServerApp calls before it reports ready: fedstruct's own imports of a run
#: (named as the app's components are: it lives in a layer above this one).
PRELOAD = "fedstruct.deployment.app:preload_server"


def load_serverapp() -> Any:
    """fedstruct's ServerApp (the guard's ``serverapp`` component), imported here."""
    from fedstruct.fl.flower.guard import FEDSTRUCT_COMPONENTS, load_component

    return load_component(FEDSTRUCT_COMPONENTS["serverapp"])


def _preload() -> None:
    """Import what a run needs of Flower, of fedstruct (:data:`PRELOAD`) and torch,
    before the run is given (the SuperLink starts this process while it is idle)."""
    from fedstruct.fl.flower import adapter
    from fedstruct.fl.flower.guard import load_component

    adapter.load_serverapp_runtime()
    load_component(PRELOAD)()
    try:
        import torch  # noqa: F401
    except ImportError:
        pass


def _stop(signum: int, frame: Any) -> None:
    """SIGTERM or SIGINT: end the run's task as failed (its ``finally``), then exit; a
    spare not given a run yet just exits."""
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the ServerApp task whose token arrives on standard input (module docstring)."""
    from fedstruct.files import read_bytes
    from fedstruct.fl.flower import adapter
    from fedstruct.fl.flower.guard import app_problem

    address, fd, *ca = list(sys.argv[1:] if argv is None else argv)
    signal.signal(signal.SIGTERM, _stop)  # from here on, never a traceback of an import
    signal.signal(signal.SIGINT, _stop)  # a stopped spare was in (its parent's monitor)
    adapter.start_parent_monitor(os.getppid())
    report = os.fdopen(int(fd), "w", buffering=1)
    certificates = read_bytes(Path(ca[0]), "the SuperLink's CA certificate") if ca else None
    app = load_serverapp()
    _preload()
    report.write(READY + "\n")
    token = sys.stdin.readline().strip()
    if not token:  # the dispatcher ended it (its SuperLink stopped) before any run
        return
    try:
        completed = adapter.run_serverapp_task(
            address, token, app, app_problem, root_certificates=certificates
        )
    finally:
        report.write(DONE + "\n")
    sys.exit(0 if completed else 1)


if __name__ == "__main__":
    main()
