"""Flower backends: run any fedstruct federation on Flower (simulation or deployment).

Needs the ``flower`` extra (``pip install fedstruct[flower]``: flwr[simulation] 1.41 or
1.42; :mod:`~fedstruct.fl.flower.adapter` refuses another).
Importing this package imports no Flower code: it registers the ``flower-sim``
backend with :func:`fedstruct.fl.backend.register_backend`, loading its module only
when asked for, so that a local run and :mod:`fedstruct.fl.flower.cluster` (process
commands) stay light. A deployment is no backend here: ``fedstruct run ... --backend
flower`` chooses the launcher that submits the run to a SuperLink
(:mod:`fedstruct.deployment.launcher`), whose ServerApp runs it on the
deployment backend (:mod:`~fedstruct.fl.flower.deployment`) around the real grid.

- :mod:`~fedstruct.fl.flower.records`: Message <-> Flower records;
- :mod:`~fedstruct.fl.flower.grid`: :class:`FlowerGrid`, our grid over Flower's;
- :mod:`~fedstruct.fl.flower.client_app`: the ClientApp hosting our clients;
- :mod:`~fedstruct.fl.flower.simulation`: the ``flower-sim`` backend;
- :mod:`~fedstruct.fl.flower.deployment`: the backend of a deployment ServerApp;
- :mod:`~fedstruct.fl.flower.cluster`: SuperLink/SuperNode commands, ``flwr`` calls;
- :mod:`~fedstruct.fl.flower.control`: fedstruct's own Control API calls (submit a
  run, register a node, a run's status), each signed for itself, in this process;
- :mod:`~fedstruct.fl.flower.credentials`: TLS certificates, node keys, control keys
  and tokens;
- :mod:`~fedstruct.fl.flower.guard`: fedstruct's checks inside the SuperLink and
  SuperNode processes (control tokens for one call, once; fedstruct's app only);
- :mod:`~fedstruct.fl.flower.adapter`: every Flower internal the others use (the
  public API they import themselves), and the Flower versions it was checked against.
"""

from fedstruct.fl.backend import Backend, register_backend, register_elsewhere


def _simulation() -> Backend:
    from fedstruct.fl.flower.simulation import FlowerSimBackend

    return FlowerSimBackend()


register_backend("flower-sim", _simulation)
register_elsewhere(
    "flower",
    "runs on a SuperLink: submit the run with "
    "'fedstruct run METHOD --backend flower ...' (see docs/deploy.md)",
)
