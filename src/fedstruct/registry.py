"""Every method fedstruct can run or load, by name, with the modules that hold it.

A method has two parts (docs/architecture.md, "How methods are found"):

- its **estimator**, the class :func:`fedstruct.load` rebuilds a run's model with
  (``fedstruct/methods/NAME/estimator.py``). The class registers itself when it is
  defined: a class statement that names ``method=`` calls :func:`register_estimator`
  (:meth:`fedstruct.estimators.FederatedEstimator.__init_subclass__`);
- its **run** module (``fedstruct/methods/NAME/runnable.py``), whose import registers
  ``fedstruct run NAME`` (:func:`fedstruct.runs.contract.register`); the ``recipes``
  module in the run package or beside the run module, if there is one, registers its
  recipes.

The registry holds each method's two module names and imports a module only when
that method is used: ``fedstruct --help`` lists names without importing any method,
``fedstruct run fedavg`` imports FedAvg's run module and nothing of the others,
``fedstruct export DIR`` imports the estimator of the run in ``DIR`` only. A method
is found in one of three places, and none of them is a file to edit:

1. fedstruct's own: a package ``fedstruct/methods/NAME/`` with an ``estimator``
   module, a ``runnable`` module or both (listed, not imported);
2. an installed package: entry points in the groups ``fedstruct.methods`` (the
   estimator's module) and ``fedstruct.runs`` (the run module), in its
   ``pyproject.toml``::

       [project.entry-points."fedstruct.methods"]
       toy = "toy_method.estimator"
       [project.entry-points."fedstruct.runs"]
       toy = "toy_method.run"

3. this process: ``register_method("toy", estimator="toy_method.estimator",
   run="toy_method.run")``.

fedstruct's own names cannot be taken by another package; a name registered in this
process is used before an installed package's.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from fedstruct.errors import ConfigError, unknown_choice_message

__all__ = [
    "ESTIMATOR_GROUP",
    "RUN_GROUP",
    "MethodModules",
    "estimator_class",
    "import_part",
    "method_modules",
    "method_names",
    "register_estimator",
    "register_method",
]

#: The entry-point group naming a method's estimator module.
ESTIMATOR_GROUP = "fedstruct.methods"
#: The entry-point group naming a method's run module.
RUN_GROUP = "fedstruct.runs"

Part = Literal["estimator", "run"]


@dataclass(frozen=True)
class MethodModules:
    """The modules of one method.

    Parameters
    ----------
    name
        The method's name (``fedstruct run NAME``; an estimator's ``method``).
    estimator
        The module whose import defines the method's estimator, or ``None``.
    run
        The module whose import registers the method's ``fedstruct run``, or ``None``.
    origin
        Where the method was found: ``fedstruct``, ``package DIST`` (entry points) or
        ``register_method``.
    """

    name: str
    estimator: str | None = None
    run: str | None = None
    origin: str = "register_method"


_REGISTERED: dict[str, MethodModules] = {}
_ESTIMATORS: dict[str, type] = {}


def register_method(name: str, *, estimator: str | None = None, run: str | None = None) -> None:
    """Make method ``name`` known in this process by the modules that hold it.

    Parameters
    ----------
    name
        The method's name.
    estimator
        The module that defines its estimator (for :func:`fedstruct.load`).
    run
        The module that registers its ``fedstruct run`` (and beside which its
        ``recipes`` module lives, if any).

    Raises
    ------
    ConfigError
        If ``name`` is one of fedstruct's own methods, or no module is given.
    """
    if name in _builtin():
        raise ConfigError(
            f"method {name!r} is one of fedstruct's own; register yours under another name"
        )
    if estimator is None and run is None:
        raise ConfigError(
            f"register_method({name!r}): give its estimator module, run module or both"
        )
    _REGISTERED[name] = MethodModules(name, estimator, run)


def method_names(part: Part | None = None) -> tuple[str, ...]:
    """Every known method's name, sorted (imports none of them); with ``part``, those
    that have an ``estimator`` or a ``run`` module."""
    found = _all_methods()
    return tuple(sorted(n for n, m in found.items() if part is None or getattr(m, part)))


def method_modules(name: str, part: Part | None = None) -> MethodModules:
    """The modules of method ``name`` (fedstruct's own are found without listing the
    installed packages).

    Raises
    ------
    ConfigError
        For an unknown name (listing the known ones), or a method without the ``part``
        asked for.
    """
    modules = _builtin().get(name) or _REGISTERED.get(name)
    if modules is None:
        modules = _all_methods().get(name)
    if modules is None or (part is not None and getattr(modules, part) is None):
        raise ConfigError(unknown_choice_message("method", name, method_names(part)))
    return modules


def import_part(name: str, part: Part) -> ModuleType:
    """Import the ``part`` module of method ``name``.

    Raises
    ------
    ConfigError
        For an unknown method, or a module that is not installed.
    """
    module = getattr(method_modules(name, part), part)
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module == exc.name or module.startswith(exc.name + ".")):
            raise  # a module the method's module needs: its own error says which
        raise ConfigError(
            f"method {name!r}: its {part} module {module!r} cannot be imported (no module "
            f"{exc.name!r}); install the package that provides it"
        ) from None


def register_estimator(method: str, cls: type) -> None:
    """Record ``cls`` as the estimator of ``method`` (its class statement calls this)."""
    _ESTIMATORS[method] = cls


def estimator_class(name: str) -> type[Any]:
    """The estimator class of method ``name``, its module imported if needed.

    Raises
    ------
    ConfigError
        For an unknown method, or an estimator module that defines no estimator
        named ``name``.
    """
    if name not in _ESTIMATORS:
        module = import_part(name, "estimator").__name__
        if name not in _ESTIMATORS:
            raise ConfigError(
                f"method {name!r}: module {module!r} defines no estimator with "
                f"method={name!r} (a FederatedEstimator subclass's class statement names it)"
            )
    return _ESTIMATORS[name]


# ---------------------------------------------------------------- finding them
@cache
def _builtin() -> dict[str, MethodModules]:
    """fedstruct's own methods: the packages ``fedstruct/methods/NAME/``, with their
    ``estimator`` and ``runnable`` modules (found without importing any)."""
    found = {}
    for name, modules in _subpackages("fedstruct.methods").items():
        estimator = f"fedstruct.methods.{name}.estimator" if "estimator" in modules else None
        run = f"fedstruct.methods.{name}.runnable" if "runnable" in modules else None
        if estimator or run:
            found[name] = MethodModules(name, estimator, run, "fedstruct")
    return dict(sorted(found.items()))


def _subpackages(package: str) -> dict[str, set[str]]:
    """``package``'s sub-packages, each with the names of its modules, found without
    importing any of them."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.submodule_search_locations is None:
        return {}
    return {
        m.name: {
            inner.name
            for inner in pkgutil.iter_modules(
                [str(Path(location) / m.name) for location in spec.submodule_search_locations]
            )
        }
        for m in pkgutil.iter_modules(spec.submodule_search_locations)
        if m.ispkg
    }


def _installed() -> dict[str, MethodModules]:
    """The methods installed packages declare (entry points; read on each call).

    Raises
    ------
    ConfigError
        If a package declares one of fedstruct's own names.
    """
    from importlib.metadata import entry_points

    found: dict[str, MethodModules] = {}
    for group, part in ((ESTIMATOR_GROUP, "estimator"), (RUN_GROUP, "run")):
        for point in entry_points(group=group):
            origin = f"package {point.dist.name}" if point.dist is not None else "a package"
            if point.name in _builtin():
                raise ConfigError(
                    f"{origin} declares method {point.name!r} (entry point group {group!r}), "
                    "which is one of fedstruct's own; the package must choose another name"
                )
            modules = found.get(point.name, MethodModules(point.name, origin=origin))
            found[point.name] = replace(modules, **{part: point.module})
    return found


def _all_methods() -> dict[str, MethodModules]:
    """Every known method: installed, registered in this process, fedstruct's own
    (a later one replaces an earlier one of the same name)."""
    return {**_installed(), **_REGISTERED, **_builtin()}
