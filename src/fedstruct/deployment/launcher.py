"""The ``flower`` launcher: ``fedstruct run METHOD --backend flower`` submits the run to
a SuperLink (:func:`fedstruct.deployment.submit.submit`) instead of running it
here. Its options (``--superlink``, ``--root-certificates``, ``--min-nodes``,
``--reply-timeout``, ``--control-key``) are :class:`DeploymentOptions`, kept in
``config.json`` under ``deployment`` so that ``--resume`` submits to the same place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from fedstruct.errors import ConfigError
from fedstruct.fl.flower.cluster import DEFAULT_SUPERLINK, DeploymentOptions
from fedstruct.runs.launch import PreparedRun
from fedstruct.runs.outcome import RunOutcome
from fedstruct.runs.settings import settings_dict

__all__ = ["FlowerLauncher"]


@dataclass(frozen=True)
class FlowerLauncher:
    """Submits a run to a SuperLink; the SuperNodes hold the sites' data."""

    options: DeploymentOptions = field(default_factory=DeploymentOptions)
    name: str = "flower"
    #: The checkpoint is written by the SuperLink's ServerApp, maybe on another machine.
    checkpoint_here: bool = False
    #: The ``config.json`` keys :meth:`record` writes.
    recorded: ClassVar[tuple[str, ...]] = ("deployment",)

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> FlowerLauncher:
        """The launcher of the run command's deployment flags (absent ones: defaults).

        Raises
        ------
        ConfigError
            If the SuperLink's address is not ``host:port`` or a named key or
            certificate file does not exist.
        """
        certificates = options.get("root_certificates")
        control_key = options.get("control_key")
        deployment = DeploymentOptions(
            superlink=options.get("superlink") or DEFAULT_SUPERLINK,
            root_certificates=str(certificates) if certificates else None,
            min_nodes=options.get("min_nodes", 0),
            reply_timeout=options.get("reply_timeout", DeploymentOptions.reply_timeout),
            control_key=str(Path(control_key).resolve()) if control_key else None,
        )
        deployment.link()  # check the address and the key files before writing
        return cls(deployment)

    def check(self, settings: Any) -> None:
        """Refuse ``--site``/``--sites`` (a deployment's nodes read only their own files)
        and ``--bootstrap`` (its nodes do not resample their rows yet)."""
        if getattr(settings, "bootstrap", 0):
            from fedstruct.fl.bootstrap import deployment_refusal

            raise deployment_refusal(f"--bootstrap {settings.bootstrap} with --backend flower")
        if settings.sites or settings.manifest:
            raise ConfigError(
                "--site/--sites name files on this machine, which the SuperNodes of a "
                "deployment must not read; start each site's node with 'fedstruct flower "
                "supernode --data FILE --name SITE' and name the sites with --node-site SITE"
            )

    def record(self) -> dict[str, Any]:
        """The deployment options, under ``deployment``."""
        return {"deployment": dataclasses.asdict(self.options)}

    def resumed(self, config: Mapping[str, Any], out: Path) -> FlowerLauncher:
        """The launcher of the deployment options ``out/config.json`` records (this one's
        if it records none).

        Raises
        ------
        ConfigError
            If they are not the options this fedstruct writes.
        """
        saved = config.get("deployment")
        if saved is None:
            return self
        fields = {f.name for f in dataclasses.fields(DeploymentOptions)}
        if not isinstance(saved, dict) or not set(saved) <= fields:
            raise ConfigError(
                f"{out / 'config.json'}: 'deployment' is not an object of {sorted(fields)}; "
                "the file was changed by hand"
            )
        try:
            return dataclasses.replace(self, options=DeploymentOptions(**saved))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{out / 'config.json'}: 'deployment' is invalid ({exc})") from None

    def launch(self, run: PreparedRun) -> RunOutcome:
        """Submit ``run`` to the SuperLink, wait for it and read its results back."""
        from fedstruct.deployment.submit import submit

        return submit(
            run.method,
            run.out,
            settings_dict(run.settings),
            self.options,
            run.control,
        )
