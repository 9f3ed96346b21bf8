"""FedCDnv-vote with secure aggregation: G0, FedG, the status matrices and the vote's
values equal the plain run's, the server never holds a client's PAG, and TPSS and
FCI-base refuse the option with their reason."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tests.methods.fedcdnv.test_protocol import TRUTH, OracleFedCDnv

from fedstruct.data import ClientData
from fedstruct.errors import ConfigError
from fedstruct.fl.secagg import protocol as p
from fedstruct.methods.fedcdnv import FedCDnv
from fedstruct.methods.fedcdnv.client import NAMES


def oracle_data(name: str, variables: list[str], rows: int) -> ClientData:
    ordered = [v for v in TRUTH.names if v in variables]
    values = 5 + (np.arange(rows)[:, None] + np.arange(len(ordered))[None, :]) % 4
    return ClientData(name, pd.DataFrame(values, columns=ordered))


def test_fedcdnv_vote_is_the_same_with_secure_aggregation(recording_backend):
    """Z is hidden from a and c (X <-> Y there), seen by b: the pair X-Y is disputed
    and decided by the rows, 12 + 9 against 20."""
    clients = [
        oracle_data("a", ["U", "X", "Y", "V"], 12),
        oracle_data("b", ["X", "Z", "Y"], 20),
        oracle_data("c", ["X", "Y", "V"], 9),
    ]
    plain = OracleFedCDnv(strategy="vote").fit(clients)
    backend = recording_backend()
    secure = OracleFedCDnv(strategy="vote", secure_aggregation=True)
    secure.fit(clients, backend=backend)
    assert secure.initial_graph_ == plain.initial_graph_
    assert secure.graph_ == plain.graph_
    assert secure.status_.equals(plain.status_)
    assert secure.decisions_.keys() == plain.decisions_.keys() and plain.decisions_
    for pair, value in plain.decisions_.items():
        assert secure.decisions_[pair] == pytest.approx(value, rel=1e-12)
    assert secure.local_graphs_ == {}  # no client's PAG reaches the server
    assert {m.kind for _, m in backend.received} == {NAMES, p.KEYS, p.SHARE, p.MASK, p.UNMASK}
    # round 2 runs fewer tests securely: the vote needs no p-values (the evidence
    # tests of the scaled p-values are TPSS's)
    for a, b in zip(plain.history_, secure.history_, strict=True):
        assert {k: a[k] for k in b if k != "tests"} == {k: v for k, v in b.items() if k != "tests"}


@pytest.mark.parametrize(("strategy", "reason"), [("tpss", "TPSS reads"), ("largest", "maximum")])
def test_tpss_and_fci_base_refuse_it(strategy, reason):
    with pytest.raises(ConfigError, match=reason):
        FedCDnv(strategy=strategy, secure_aggregation=True).prepare()
