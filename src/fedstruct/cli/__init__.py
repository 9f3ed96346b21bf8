"""The ``fedstruct`` command line.

``fedstruct run METHOD ... --out DIR``, ``fedstruct status DIR``, ``fedstruct reproduce
RECIPE [--quick] [--seeds K]``, ``fedstruct datasets`` and ``fedstruct demo``. Bad input
exits with code 2 and a one-line reason; ``--help`` works everywhere. Each module adds
its commands to :data:`~fedstruct.cli.app.app`: :mod:`.run` (``run``), :mod:`.results` (``show``,
``predict``, ``sample``, ``query``, ``export``), :mod:`.status` (``status``),
:mod:`.reproduce` (``reproduce``, ``demo``, ``datasets``) and :mod:`.flower`
(``flower ...``).
"""

from fedstruct.cli import flower, reproduce, results, run, status  # noqa: F401  (they add their commands)
from fedstruct.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the ``fedstruct`` script."""
    app()
