"""Names a package exports from its modules, imported when first read (PEP 562).

A method's package (``fedstruct.methods.fedavg``) and its run package
(``fedstruct.methods.fedavg``) export their classes and functions by name, but
importing the package must not import them all: ``fedstruct run fedavg --help`` needs
FedAvg's settings, not torch. A package lists what it exports and where::

    __getattr__, __dir__ = lazy_exports(__name__, {"FedAvg": "estimator", ...})

and ``fedstruct.methods.fedavg.FedAvg`` imports ``fedstruct.methods.fedavg.estimator``
when it is first read. :func:`lazy_function` does the same for one function that a
registration holds (a method's run) before anything calls it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports", "lazy_function"]


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module-level ``__getattr__`` and ``__dir__`` for ``exports``.

    Parameters
    ----------
    package
        The package's ``__name__``.
    exports
        Each exported name -> the package's sub-module that defines it (relative, e.g.
        ``"estimator"``).

    Raises
    ------
    ValueError
        If an exported name is also its sub-module's name: once the sub-module is
        imported, the package's attribute of that name is the module.

    Returns
    -------
    tuple
        ``__getattr__``, which imports the sub-module of a name on first read and keeps
        the value in the package (``AttributeError`` for any other name), and
        ``__dir__``, which lists the exported names too.
    """
    clashes = sorted(name for name, module in exports.items() if name == module)
    if clashes:  # the import system binds a loaded sub-module to its name in the package
        raise ValueError(f"{package}: {clashes} name sub-modules; export them under other names")
    package_module = importlib.import_module(package)

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
        setattr(package_module, name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(package_module), *exports})

    return __getattr__, __dir__


def lazy_function(module: str, name: str) -> Callable[..., Any]:
    """A function that calls ``module.name``, importing ``module`` on the first call."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"``{module}.{name}``, imported when first called."
    return call
