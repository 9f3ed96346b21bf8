"""A local run loads no Flower code (Flower is an optional extra for other backends),
and FedAvg's training no ``torch._dynamo`` (nor Opacus, without DP)."""

import subprocess
import sys

import pytest

SCRIPT = """
import sys
from pathlib import Path
from fedstruct.runs import execute, runnable
execute("fedavg", [dict(runnable("fedavg").quick)], Path(sys.argv[1]))
flower = sorted(m for m in sys.modules if m == "flwr" or m.startswith("flwr."))
print("torch._dynamo" in sys.modules, "opacus" in sys.modules)
print(len(flower), ",".join(sorted(m for m in sys.modules if m.startswith("fedstruct.fl.flower"))))
"""


@pytest.mark.deploy
def test_a_local_run_imports_no_flower_code_nor_torch_dynamo(tmp_path):
    """A deployed FedAvg node starts a ClientApp process per message: building a
    ``torch.optim`` optimizer there would import ``torch._dynamo`` (~1.3 s of CPU)
    in every training message (docs/changelog/benchmarks.md, "the slowest tests, session 15")."""
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "run")],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    *_, dynamo, last = out.stdout.strip().splitlines()
    assert dynamo == "False False", "a FedAvg run without DP imported torch._dynamo or Opacus"
    count, modules = last.split(" ")
    assert count == "0", out.stdout
    assert (tmp_path / "run" / "metrics.json").is_file()
    # only the registry package and the process-command helpers, no Flower module
    assert set(modules.split(",")) <= {"fedstruct.fl.flower", "fedstruct.fl.flower.cluster"}


#: What the ClientApp of a message answered without the method's client imports.
CLIENT_FREE_STAGE = """
import sys
import fedstruct.deployment.app
from fedstruct.fl.secagg import client
heavy = {"matplotlib", "networkx", "pandas", "torch", "scipy", "sklearn"}
print(sorted({m.split('.')[0] for m in sys.modules} & heavy))
print(sorted(m for m in sys.modules if m.startswith(("fedstruct.data", "fedstruct.methods",
                                                      "fedstruct.runs.contract"))))
"""


def test_a_deployments_client_app_loads_no_plotting_data_or_method_code():
    """Every Flower message starts a ClientApp process: it draws nothing, so it must
    not pay for matplotlib or networkx (about a second of its start-up); and one that
    answers without the method's client (HELLO; secure aggregation's keys, shares and
    unmask stages) needs the secure-aggregation session only, not the method, the data
    or pandas and torch (0.5-0.8 s of CPU per process; docs/benchmarks.md, "Session
    19")."""
    out = subprocess.run([sys.executable, "-c", CLIENT_FREE_STAGE], capture_output=True,
                         text=True, check=True, timeout=300)  # fmt: skip
    assert out.stdout.strip().splitlines() == ["[]", "[]"], out.stdout
