"""Launchers: where ``fedstruct run`` runs a method, chosen once from ``--backend``.

A *backend* (:mod:`fedstruct.fl.backend`) provides the grid a server algorithm talks
to; a *launcher* decides where the run happens and reads its own options:

- :class:`LocalLauncher`: runs here, through a backend's grid (``local``,
  ``flower-sim``, any registered backend);
- a launcher that submits the run elsewhere, imported only when chosen
  (:data:`SUBMITTING`): ``flower`` sends it to a SuperLink
  (:class:`fedstruct.deployment.launcher.FlowerLauncher`).

A launcher declares the command-line options it reads (:class:`LauncherOption`,
:func:`launcher_options`); the command line mounts them on every ``fedstruct run``
command and hands them back by name.

:func:`~fedstruct.runs.contract.execute` resolves the settings, asks the launcher to
check them and what it adds to ``config.json``, and hands it a :class:`PreparedRun`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any, Protocol

from fedstruct.errors import ConfigError, unknown_choice_message
from fedstruct.fl import Backend, backend_names, get_backend
from fedstruct.runs.control import RunControl
from fedstruct.runs.outcome import RunOutcome

__all__ = [
    "SUBMITTING",
    "Launcher",
    "LauncherOption",
    "LocalLauncher",
    "PreparedRun",
    "Submitting",
    "launcher_names",
    "launcher_options",
    "make_launcher",
]


@dataclass(frozen=True)
class LauncherOption:
    """A command-line option a launcher reads (``fedstruct run ... --backend NAME``):
    the launcher declares it, the command line mounts it.

    Attributes
    ----------
    flag
        The option as typed, without ``--`` (``min-nodes``).
    name
        The key :meth:`Launcher.from_options` reads it by (``min_nodes``).
    kind
        Its type: ``str``, ``int``, ``float`` or ``path``.
    default
        Its value when not given.
    help
        One line for ``--help``.
    """

    flag: str
    name: str
    kind: str
    default: Any
    help: str


@dataclass(frozen=True)
class Submitting:
    """A launcher that submits a run to be run elsewhere, imported only when chosen.

    Attributes
    ----------
    launcher
        ``module:Class``; the class has ``from_options(options)`` (see
        :func:`make_launcher`) and ``recorded``, the ``config.json`` keys its
        :meth:`Launcher.record` writes.
    options
        ``module:NAME`` of its :class:`LauncherOption` tuple, in a module light to
        import (``fedstruct run --help`` reads it without importing the launcher).
    """

    launcher: str
    options: str


#: Launchers that submit a run to be run elsewhere, by ``--backend`` name.
SUBMITTING: dict[str, Submitting] = {
    "flower": Submitting(
        "fedstruct.deployment.launcher:FlowerLauncher",
        "fedstruct.deployment.options:LAUNCHER_OPTIONS",
    ),
}


@dataclass(frozen=True)
class PreparedRun:
    """A run whose settings are resolved and whose ``config.json`` is written.

    Attributes
    ----------
    method
        The method's name.
    settings
        The resolved settings (the method's settings dataclass).
    out
        The run's folder.
    control
        How the run is driven (:class:`~fedstruct.runs.control.RunControl`),
        as given to :func:`~fedstruct.runs.contract.execute`.
    here
        Runs it in this process on the given backend and writes its results.
    """

    method: str
    settings: Any
    out: Path
    control: RunControl
    here: Callable[[Backend], RunOutcome]


class Launcher(Protocol):
    """Where a run runs: here on a backend, or submitted elsewhere."""

    #: What ``config.json`` records as the run's ``backend`` (and ``--backend`` names).
    name: str
    #: Whether ``--resume`` finds the run's checkpoint on this machine.
    checkpoint_here: bool

    def check(self, settings: Any) -> None:
        """Refuse settings this launcher cannot run (a :class:`ConfigError`)."""
        ...

    def record(self) -> dict[str, Any]:
        """What this launcher adds to ``config.json`` (its options, for ``--resume``)."""
        ...

    def resumed(self, config: Mapping[str, Any], out: Path) -> Launcher:
        """This launcher with the options the ``config.json`` of ``out`` records."""
        ...

    def launch(self, run: PreparedRun) -> RunOutcome:
        """Run ``run`` and return its outcome."""
        ...


@dataclass(frozen=True)
class LocalLauncher:
    """Runs here, on the grid of backend ``name`` (``local``, ``flower-sim``, ...)."""

    name: str = "local"
    checkpoint_here: bool = True

    @classmethod
    def from_options(cls, name: str, options: Mapping[str, Any]) -> LocalLauncher:
        """The launcher of backend ``name`` (a run here takes no launcher options)."""
        return cls(name)

    def check(self, settings: Any) -> None:
        """Refuse ``--node-site``: such sites' files are only on their own SuperNodes."""
        if settings.node_sites:
            raise ConfigError(
                "--node-site names sites whose files stay on their own SuperNodes: add "
                "--backend flower (for files on this machine use --site PATH)"
            )

    def record(self) -> dict[str, Any]:
        """Nothing: the backend's name is all a run here needs."""
        return {}

    def resumed(self, config: Mapping[str, Any], out: Path) -> LocalLauncher:
        """Itself: a run here has no options to restore.

        Raises
        ------
        ConfigError
            If ``config`` holds the options of a launcher that submits elsewhere.
        """
        for name in SUBMITTING:
            for key in _submitting_class(name).recorded:
                if key in config:
                    raise ConfigError(
                        f"{out / 'config.json'}: {key!r} is not an option of backend "
                        f"{self.name!r} (only of {name!r}); the file was changed by hand"
                    )
        return self

    def launch(self, run: PreparedRun) -> RunOutcome:
        """Run here on the backend's grid."""
        return run.here(get_backend(self.name))


def launcher_names() -> tuple[str, ...]:
    """What ``--backend`` accepts: the backends, and the launchers that submit, sorted."""
    return tuple(sorted({*backend_names(), *SUBMITTING}))


def make_launcher(name: str, options: Mapping[str, Any] | None = None) -> Launcher:
    """The launcher ``--backend name`` chooses, reading its own ``options`` (the run
    command's launcher flags, by parameter name; a launcher ignores those not its own).

    Raises
    ------
    ConfigError
        For a name that is neither a backend nor a launcher (listing the valid ones),
        or options the launcher refuses.
    """
    options = options or {}
    if name in SUBMITTING:
        return _submitting_class(name).from_options(options)  # type: ignore[no-any-return]
    if name not in backend_names():
        raise ConfigError(unknown_choice_message("backend", name, launcher_names()))
    return LocalLauncher.from_options(name, options)


def launcher_options() -> dict[str, tuple[LauncherOption, ...]]:
    """The options of every launcher that reads any, by ``--backend`` name (each
    launcher's options module imported, not the launcher)."""
    return {name: _imported(entry.options) for name, entry in SUBMITTING.items()}


def _submitting_class(name: str) -> Any:
    """The class of the submitting launcher ``name`` (its module imported now)."""
    return _imported(SUBMITTING[name].launcher)


def _imported(target: str) -> Any:
    """The object ``module:NAME`` names, its module imported."""
    module, _, name = target.partition(":")
    return getattr(import_module(module), name)
