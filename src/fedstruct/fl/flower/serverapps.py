"""The SuperLink's warm ServerApps: what ``fedstruct flower superlink`` runs beside Flower.

Its SuperLink runs with ``--isolation process``: Flower then starts no
``flower-superexec`` (which looks for a run to start every quarter second and starts a
cold ``flwr-serverapp`` process for each). Instead the guard's process
(:mod:`fedstruct.fl.flower.guard`) runs a :class:`~fedstruct.fl.flower.dispatch.Dispatcher`
whose workers are warm ServerApps (:mod:`fedstruct.fl.flower.serverapp_worker`): one is
kept ready, its imports done, and given the next run the SuperLink accepts.

The SuperLink serves the asks for a run to start on its public port. Flower's SuperLink
leaves that ask open in its default mode (whoever reaches the port could take a run's
ServerApp token); here it is given a secret (:func:`write_secret`: random, made when the
SuperLink starts, in a folder only its user reads, removed when it ends), and refuses an
ask not signed with it, as Flower's SuperExec signs it. Only this process holds it.
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedstruct.fl.flower import adapter
from fedstruct.fl.flower.dispatch import Dispatcher

__all__ = ["LOOK_EVERY", "SuperLinkRuntime", "serverapp_dispatcher", "write_secret"]

#: Seconds between the dispatcher's looks for a run to start when it is not woken (a
#: run the SuperLink holds from before a restart); a run it accepts wakes it at once.
LOOK_EVERY = 3.0


@dataclass(frozen=True)
class SuperLinkRuntime:
    """Where this machine reaches the SuperLink's Runtime API: ``address`` and, for a TLS
    SuperLink, its CA certificate (``None``: plain text, ``--insecure``)."""

    address: str
    ca_certificate: Path | None

    @classmethod
    def of(cls, argv: Sequence[str]) -> SuperLinkRuntime | None:
        """The Runtime API of the SuperLink whose ``flower-superlink`` arguments are
        ``argv``, if it runs with ``--isolation process`` and names its ``--port`` (as
        :func:`~fedstruct.fl.flower.cluster.superlink_command` makes it); else ``None``
        (Flower starts its own SuperExec)."""
        parser = argparse.ArgumentParser(add_help=False)
        parser.add_argument("--isolation")
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port")
        parser.add_argument("--ssl-ca-certfile")
        known, _ = parser.parse_known_args(list(argv))
        if known.isolation != adapter.CLIENTAPP_ISOLATION or not known.port:
            return None
        address = adapter.superlink_runtime_address(known.host, int(known.port))
        ca = Path(known.ssl_ca_certfile) if known.ssl_ca_certfile else None
        return cls(address, ca)


def write_secret(secret: bytes) -> Path:
    """Write ``secret`` into a new folder only this user can read, removed when this
    process ends; the file's path (``flower-superlink``'s
    :data:`~fedstruct.fl.flower.adapter.SUPEREXEC_SECRET_FLAG`)."""
    folder = Path(tempfile.mkdtemp(prefix="fedstruct-superlink-"))  # mode 0700
    atexit.register(shutil.rmtree, folder, True)
    path = folder / "superexec.secret"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(secret)
    return path


class _RunsToStart:
    """Asks the SuperLink for a run's ServerApp task, signed with its secret; the
    client is made again after a failure (the SuperLink not up yet)."""

    def __init__(self, runtime: SuperLinkRuntime, secret: bytes) -> None:
        self.runtime = runtime
        self.secret = secret
        self._client: Any = None

    def __call__(self) -> tuple[str, int] | None:
        from fedstruct.files import read_bytes

        if self._client is None:
            ca = self.runtime.ca_certificate
            self._client = adapter.runtime_client(
                self.runtime.address,
                "SuperExec",
                root_certificates=None if ca is None else read_bytes(ca, "--ssl-ca-certfile"),
                auth_secret=self.secret,
            )
        try:
            return adapter.acquire_serverapp_task(self._client)
        except Exception:
            self._client.close()
            self._client = None
            raise


def serverapp_dispatcher(runtime: SuperLinkRuntime, secret: bytes) -> Dispatcher:
    """The dispatcher that hands each run the SuperLink accepts to a warm ServerApp
    (not started)."""

    def spawn(report: int) -> subprocess.Popen[bytes]:
        ca = [] if runtime.ca_certificate is None else [str(runtime.ca_certificate)]
        command = [sys.executable, "-m", "fedstruct.fl.flower.serverapp_worker"]
        return subprocess.Popen(
            [*command, runtime.address, str(report), *ca],
            stdin=subprocess.PIPE,
            pass_fds=(report,),
        )

    return Dispatcher(
        runtime.address,
        spawn=spawn,
        acquire=_RunsToStart(runtime, secret),
        look_every=LOOK_EVERY,
    )
