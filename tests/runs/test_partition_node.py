"""A deployment node hosting a built-in partition builds its own client's data only.

Every method's built-in federation is built as a SuperNode builds it
(:func:`fedstruct.deployment.app._partition`), in a fresh process as a node's
is, while every :class:`~fedstruct.data.ClientData` construction is recorded: only the
node's own client is built, and its data equal that client's in the whole in-process
federation.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from fedstruct.data import ClientData, ClientsOnDemand
from fedstruct.errors import DataError
from fedstruct.runs.contract import runnable, runnable_names
from fedstruct.runs.settings import apply_settings, settings_dict
from fedstruct.runs.source import checked_clients

#: Partition the node hosts (the second client).
OWN = 1

_NODE = """
import json, sys
import pandas as pd
import fedstruct.data.client as client_module
from fedstruct.deployment import app

built = []
check = client_module.ClientData.__post_init__
def recording(self):
    built.append(self.name)
    check(self)
client_module.ClientData.__post_init__ = recording

out = {}
for method, settings_json in json.loads(sys.argv[1]).items():
    built.clear()
    _, data = app._partition(method, settings_json, int(sys.argv[2]))
    rows = int(pd.util.hash_pandas_object(data.rows).sum())
    out[method] = {"built": sorted(set(built)), "name": data.name, "rows": rows}
print(json.dumps(out))
"""


def _quick(method: str):
    entry = runnable(method)
    return entry, apply_settings(entry.settings(), entry.quick, method=method)


@pytest.mark.deploy
def test_a_node_builds_its_own_partition_only():
    submitted = {
        m: json.dumps(settings_dict(_quick(m)[1]), sort_keys=True) for m in runnable_names()
    }
    done = subprocess.run(
        [sys.executable, "-c", _NODE, json.dumps(submitted), str(OWN)],
        capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    nodes = json.loads(done.stdout)
    for method in runnable_names():
        entry, settings = _quick(method)
        name = entry.client_names(settings)[OWN]
        whole = list(checked_clients(entry.resolve(settings)))
        assert nodes[method]["built"] == [name], method
        assert nodes[method]["name"] == whole[OWN].name == name
        assert nodes[method]["rows"] == int(pd.util.hash_pandas_object(whole[OWN].rows).sum())


def test_clients_on_demand_build_once_and_check_names():
    rows = pd.DataFrame({"x": [1.0, 2.0]})
    calls: list[int] = []

    def build(k: int) -> ClientData:
        calls.append(k)
        return ClientData("b" if k == 1 else "a", rows)

    clients = ClientsOnDemand(["a", "b", "c"], build)
    assert len(clients) == 3 and calls == []
    assert clients[-2] is clients[1] and calls == [1]
    assert [c.name for c in clients[:2]] == ["a", "b"] and calls == [1, 0]
    with pytest.raises(IndexError, match="client index 3 out of range for 3 clients"):
        clients[3]
    with pytest.raises(DataError, match="client 2 was built as 'a', expected 'c'"):
        clients[2]
    doubled = clients.map(lambda c: ClientData(c.name, rows * 2))
    assert doubled[0].rows["x"].tolist() == [2.0, 4.0]
