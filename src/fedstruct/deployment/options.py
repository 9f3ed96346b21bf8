"""The options of ``fedstruct run METHOD --backend flower``, declared by the Flower
launcher (:class:`~fedstruct.deployment.launcher.FlowerLauncher` reads them by name)
and mounted by the command line (:func:`fedstruct.runs.launch.launcher_options`).

This module imports nothing of Flower: ``fedstruct run --help`` reads it.
"""

from __future__ import annotations

from fedstruct.runs.launch import LauncherOption

__all__ = ["LAUNCHER_OPTIONS"]

#: What ``--backend flower`` reads; kept in ``config.json`` under ``deployment``.
LAUNCHER_OPTIONS = (
    LauncherOption("superlink", "superlink", "str", "127.0.0.1:9091", "the SuperLink's host:port."),
    LauncherOption(
        "root-certificates", "root_certificates", "path", None,
        "CA certificate of a TLS SuperLink.",
    ),
    LauncherOption(
        "min-nodes", "min_nodes", "int", 0, "nodes to wait for before round 1 (0: all).",
    ),
    LauncherOption(
        "reply-timeout", "reply_timeout", "float", 600.0, "seconds to wait for one exchange.",
    ),
    LauncherOption(
        "control-key", "control_key", "path", None,
        "private control key the SuperLink accepts (fedstruct flower control-key).",
    ),
)  # fmt: skip
