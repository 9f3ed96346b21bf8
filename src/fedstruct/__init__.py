"""fedstruct: federated learning of structured models.

Causal graphs, concept-based models, neural graphical models and drift-aware
classifiers, learned across institutions whose data cannot move.

Layers (imports only point down): ``graphs`` and ``data`` at the bottom, then
``privacy``, ``fl`` (the federated runtime), ``discovery``, ``estimators``,
``drawing``, ``runs`` (the run contract), ``methods`` (one package per published
method: its algorithm and its run), ``results``, ``reproduction``, ``deployment`` and,
on top, the command line (``fedstruct.cli``); docs/architecture.md.
"""

from typing import Any

from fedstruct import errors

__version__ = "0.1.0"
__all__ = ["__version__", "errors", "load"]


def load(folder: Any) -> Any:
    """The fitted estimator a run saved in ``folder`` (its ``--out``), as after ``fit``;
    see :func:`fedstruct.fl.artifact.load` and docs/artifacts.md."""
    from fedstruct.fl.artifact import load as load_run

    return load_run(folder)
