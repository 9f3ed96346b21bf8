"""fedCI's side of benchmarks/fedci_compare.py: run in the fedCI environment only.

Usage: ``benchmarks/.venv-fedci/bin/python benchmarks/fedci_side.py [--ordinal-check] FOLDER``

Reads ``FOLDER/job.json`` (per graph: the variables' kinds and the sites' CSV files,
written by fedci_compare.py), runs every CI test fedCI's own ``Server.run`` would run
(each pair, every conditioning set of the other variables) with the package's defaults
(``Server(clients)``: no masking, no heterogeneity, ridge 0.01, line search), and writes
``FOLDER/fedci.json``: per test its p-value, both directions' likelihood-ratio
statistics, the server-site round trips it took and its CPU time. A round trip is one
call of ``FederatedModel._map`` (the server sends one request to every site and waits
for all replies), counted by wrapping it; the CPU time is ``time.process_time()``
around ``Server.test`` (every site and the server are in this one process, one
thread). No pickle: JSON and CSV only.

``--ordinal-check`` writes ``FOLDER/ordinal.json`` instead: fedCI's test with an ordinal
response on synthetic data (:func:`ordinal_check`), as shipped and with the response's
levels aligned in its log-likelihood.
"""

from __future__ import annotations

import inspect
import json
import platform
import sys
import time
import warnings
from collections import Counter
from importlib.metadata import version
from pathlib import Path

import numpy as np
import polars as pl
from fedci import Client, Server
from fedci.computing import OrdinalComputeUnit, _eta
from fedci.modeling import FederatedModel
from fedci.server import get_all_possible_tests

DTYPES = {"continuous": pl.Float64, "binary": pl.Boolean, "ordinal": pl.Int32, "nominal": pl.String}
#: The site calls a round trip can make (``FederatedModel._map``'s callables name one).
CALLS = (
    "get_fisher_info_and_working_response",
    "get_loglik",
    "get_sum_sq_residuals",
    "get_n_observations",
    "update_local_alpha",
    "get_local_edf_contribution",
    "adjust_local_alpha",
)
ROUNDS: Counter[str] = Counter()
_map = FederatedModel._map


def _counted_map(self: FederatedModel, fn):
    named = [name for name in fn.__code__.co_names if name in CALLS]
    ROUNDS[named[0] if named else "other"] += 1
    return _map(self, fn)


FederatedModel._map = _counted_map  # type: ignore[method-assign]


def _direction(result, kinds: dict[str, str], response: str) -> dict[str, object]:
    return {
        "response": response,
        "kind": kinds[response],
        "statistic": result.test_statistic,
        "dof": result.delta_dof,
        "p": result.p_value,
    }


def run_graph(folder: Path, graph: dict) -> dict:
    """Every test of one graph's federation."""
    kinds: dict[str, str] = graph["kinds"]
    clients = []
    for k, name in enumerate(graph["sites"]):
        header = (folder / name).read_text().splitlines()[0].split(",")
        frame = pl.read_csv(folder / name, schema={c: DTYPES[kinds[c]] for c in header})
        clients.append(Client(f"site{k}", frame))
    server = Server(clients)
    tests = []
    for first, second, given in get_all_possible_tests(set(server.schema), None):
        ROUNDS.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cpu, wall = time.process_time(), time.perf_counter()
            result = server.test(first, second, set(given))
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        lrt = result.lrt
        tests.append(
            {
                "x": first,
                "y": second,
                "s": sorted(given),
                "p": result.p_value,
                "n": lrt.forward.n_samples,
                "forward": _direction(lrt.forward, kinds, first),
                "backward": _direction(lrt.backward, kinds, second),
                "rounds": sum(ROUNDS.values()),
                "rounds_by_call": dict(ROUNDS),
                "cpu_s": cpu,
                "wall_s": wall,
                "warnings": len(caught),
            }
        )
    return {"id": graph["id"], "tests": tests}


def _aligned_loglik(self: OrdinalComputeUnit, y, X, beta, local_alpha=None):
    """0.2.4's ordinal log-likelihood with the indicator of the last level (the one the
    response's expansion leaves out) paired with ``P(last level)``; 0.2.4 puts it first,
    against ``P(first level)``."""
    mu = self._inverse_link(_eta(X, beta, local_alpha))
    mu = np.column_stack([mu, np.ones(mu.shape[0])])
    mu[:, 1:] = np.diff(mu)
    y_full = np.column_stack([y, ~np.any(y, axis=1)])
    return np.sum(y_full * np.log(np.clip(mu, 1e-12, None)))


def ordinal_check(repeats: int = 20, seed: int = 1) -> dict:
    """fedCI's test of ``X ⊥ Y | Z`` with ``X`` ordinal (4 levels, a function of ``Z``),
    ``Y`` continuous and a function of ``X`` in every other repeat, 600 rows over two
    sites: the direction with ``X`` as response, as shipped and aligned."""
    rng = np.random.default_rng(seed)
    shipped = OrdinalComputeUnit.get_loglik
    out: dict[str, list] = {"dependent": [], "shipped": [], "aligned": []}
    for rep in range(repeats):
        z = rng.normal(size=600)
        x = np.digitize(0.8 * z + rng.normal(size=600), [-1.0, 0.0, 1.0]) + 1
        y = (0.5 * x if rep % 2 else 0.0) + rng.normal(size=600)
        rows = pl.DataFrame({"X": x.astype(np.int32), "Y": y, "Z": z})
        out["dependent"].append(bool(rep % 2))
        for name, loglik in (("shipped", shipped), ("aligned", _aligned_loglik)):
            OrdinalComputeUnit.get_loglik = loglik  # type: ignore[method-assign]
            server = Server([Client("s0", rows[:300]), Client("s1", rows[300:])])
            lrt = server.test("X", "Y", {"Z"}).lrt
            out[name].append(
                {
                    "statistic": lrt.forward.test_statistic,
                    "p_x_response": lrt.forward.p_value,
                    "p": lrt.p_value,
                }
            )
    OrdinalComputeUnit.get_loglik = shipped  # type: ignore[method-assign]
    return out


def main() -> None:
    if sys.argv[1] == "--ordinal-check":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = ordinal_check()
        (Path(sys.argv[2]) / "ordinal.json").write_text(json.dumps(found))
        return
    folder = Path(sys.argv[1])
    job = json.loads((folder / "job.json").read_text())
    masking = inspect.signature(Server.__init__).parameters["additive_masking"].default
    out = {
        "fedci_version": version("python-fedci"),
        "python": platform.python_version(),
        "additive_masking_default": masking,
        "graphs": [],
    }
    for k, graph in enumerate(job["graphs"]):
        out["graphs"].append(run_graph(folder, graph))
        print(f"fedci: graph {k + 1}/{len(job['graphs'])}", file=sys.stderr, flush=True)
    (folder / "fedci.json").write_text(json.dumps(out))


if __name__ == "__main__":
    main()
