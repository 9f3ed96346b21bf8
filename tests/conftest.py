"""Suite-wide pytest hooks."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import pytest
import torch

from fedstruct.fl.backend import LocalBackend
from fedstruct.fl.grid import LocalGrid
from fedstruct.fl.message import Message

#: Torch intra-op threads of the suite unless OMP_NUM_THREADS names them (``make
#: test-cpus`` runs 1 and 2). The tests' models are small: one thread is as fast as two
#: on an idle machine and many times faster on a busy one, whose two-thread pool
#: spin-waits (FedNGM's masked-training and two NGM-fit tests: 7-12 s with 1 thread,
#: 133-157 s with 2, same 2 loaded cores). Set in the environment too, for the CLI
#: subprocesses (their predictions are compared with this process's to 1e-12).
if "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)


#: Under pytest-xdist (``make test``: ``-n auto --dist loadfile``) each test file runs
#: on one worker, so its module- and class-scoped fixtures are built once; these files
#: are handed out first, in this order (the longest; they mostly wait on processes),
#: and those naming the same unit run together on one worker, one test at a time: the
#: Flower deployments, whose reply timeouts two deployments at once would stretch on a
#: 2-core machine. The flower-sim file (Ray) is a unit of its own: one Ray at a time.
FIRST_UNITS = {
    "tests/fl/test_flower_deploy.py": "flower deployments",
    "tests/runs/test_node_sites_deployed.py": "flower deployments",
    "tests/fl/test_flower_sim.py": "tests/fl/test_flower_sim.py",
}


def _test_file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadfile`` with the units of :data:`FIRST_UNITS`, handed out in
    collection order (:func:`pytest_collection_modifyitems` puts those units first).
    pytest-xdist's own ``loadgroup`` cannot group files under pytest 9.2: it renames a
    grouped test through an attribute pytest no longer reads (pytest-xdist issue 1386,
    open). Other ``--dist`` modes are pytest-xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LoadFileFirstUnits(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = _test_file(nodeid)
            return FIRST_UNITS.get(path, path)

    config.option.loadscopereorder = False
    return LoadFileFirstUnits(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist, the tests of :data:`FIRST_UNITS` first, in that order (each
    file's own order kept); a serial run keeps the plain order."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        rank = {path: k for k, path in enumerate(FIRST_UNITS)}
        items.sort(key=lambda item: rank.get(_test_file(item.nodeid), len(rank)))


def pytest_report_header() -> str:
    """Say which torch kernels and thread count ran: trained numbers depend on them."""
    return (
        f"torch {torch.__version__}: CPU kernels {torch.backends.cpu.get_cpu_capability()}, "
        f"{torch.get_num_threads()} threads (make test-cpus runs the other settings)"
    )


#: Smaller than the methods' quick settings, every round structure kept, for tests
#: whose check does not depend on the run's size (backend equivalence; a saved model
#: used in a fresh process). FedNGM's public-test bootstrap (200 resamples per target
#: and client) was two thirds of its quick run.
SMALLER_THAN_QUICK: dict[str, dict[str, Any]] = {
    "fedngm": {"clients": 2, "samples": 1500, "epochs": 2, "burn_in": 2, "fidelity_samples": 100},
    "fcm": {"samples": 800, "autoencoder_epochs": 2},
    "fedcd": {"model_steps": 20, "graph_steps": 4, "samples": 500, "samples_per_intervention": 20},
    "fedcdnv": {"max_samples": 300},
}


@pytest.fixture(scope="session")
def small_settings() -> Callable[[str], dict[str, Any]]:
    """A method's quick settings made smaller by :data:`SMALLER_THAN_QUICK`."""
    from fedstruct.runs import runnable

    def settings(method: str) -> dict[str, Any]:
        return {**runnable(method).quick, **SMALLER_THAN_QUICK.get(method, {})}

    return settings


class RecordingBackend(LocalBackend):
    """A local backend whose grid records every reply the server receives, as
    ``(node, message)`` pairs in ``received`` (the secure-aggregation audit tests:
    no summable payload may reach the server in the clear)."""

    def __init__(self) -> None:
        self.received: list[tuple[int, Message]] = []

    def run(self, server_fn, method, clients, participation, seed):
        built = [method.make_client(c) for c in clients]
        received = self.received

        class Grid(LocalGrid):
            def _exchange(self, messages: Mapping[int, Message]) -> dict[int, Message]:
                replies = super()._exchange(messages)
                received.extend(sorted(replies.items()))
                return replies

        return server_fn(Grid(built, participation, seed))


@pytest.fixture
def recording_backend() -> type[RecordingBackend]:
    """:class:`RecordingBackend`, to build one per run (``recording_backend()``)."""
    return RecordingBackend
