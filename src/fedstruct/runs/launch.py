"""Launchers: where ``fedstruct run`` runs a method, chosen once from ``--backend``.

A *backend* (:mod:`fedstruct.fl.backend`) provides the grid a server algorithm talks
to; a *launcher* decides where the run happens and reads its own options:

- :class:`LocalLauncher`: runs here, through a backend's grid (``local``,
  ``flower-sim``, any registered backend);
- a launcher that submits the run elsewhere, imported only when chosen
  (:data:`SUBMITTING`): ``flower`` sends it to a SuperLink
  (:class:`fedstruct.deployment.launcher.FlowerLauncher`).

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
    "LocalLauncher",
    "PreparedRun",
    "launcher_names",
    "make_launcher",
]

#: Launchers that submit a run to be run elsewhere: name -> ``module:Class``, imported
#: when chosen. The class has ``from_options(options)`` (see :func:`make_launcher`) and
#: ``recorded``, the ``config.json`` keys its :meth:`Launcher.record` writes.
SUBMITTING: dict[str, str] = {
    "flower": "fedstruct.deployment.launcher:FlowerLauncher",
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

    @property
    def resume(self) -> bool:
        """``control.resume``, what a launcher that submits passes on."""
        return self.control.resume

    @property
    def progress(self) -> bool:
        """``control.progress``."""
        return self.control.progress

    @property
    def stop_after(self) -> int | None:
        """``control.stop_after``."""
        return self.control.stop_after


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


def _submitting_class(name: str) -> Any:
    """The class of the submitting launcher ``name`` (its module imported now)."""
    module, _, cls = SUBMITTING[name].partition(":")
    return getattr(import_module(module), cls)
