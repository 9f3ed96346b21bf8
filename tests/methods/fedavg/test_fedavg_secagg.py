"""FedAvg with secure aggregation: the same model as without it (to the quantisation
bound), its statistics step through two secure sums, a round that fails above the
dropout threshold resumes from its checkpoint, and the options that cannot take it are
refused with their reason."""

from __future__ import annotations

import json
from collections.abc import Mapping

import numpy as np
import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.data import ClientData
from fedstruct.data.datasets.tables import breast_cancer_sites
from fedstruct.errors import ConfigError, SecureAggregationError
from fedstruct.fl import LocalBackend, LocalGrid, Message, Participation
from fedstruct.fl.secagg import SecAggConfig
from fedstruct.fl.secagg import protocol as p
from fedstruct.fl.secagg.quantize import Layout, dequantise
from fedstruct.methods.fedavg import FedAvg
from fedstruct.methods.fedcdnv import FedCDnv
from fedstruct.runs.contract import execute

ALARM = {"network": "alarm", "clients": 3, "rounds": 2, "samples": 600, "test_samples": 300}


def test_fedavg_on_alarm_is_the_same_with_secure_aggregation(tmp_path):
    """``fedstruct run fedavg --secure-aggregation`` gives the plain run's accuracy to 4
    decimals (the fixed-point error is ~1e-8 per weight)."""
    plain = execute("fedavg", [ALARM], tmp_path / "plain").metrics
    args = [
        f"--{k.replace('_', '-')}={v}"
        for k, v in ALARM.items()
        if k in ("network", "clients", "rounds")
    ]
    extra = [f"--set={k}={v}" for k, v in ALARM.items() if k.endswith("samples")]
    out = tmp_path / "secure"
    result = CliRunner().invoke(
        app, ["run", "fedavg", *args, *extra, "--secure-aggregation", "--quiet", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    secure = json.loads((out / "metrics.json").read_text())
    for name in ("test_accuracy", "test_loss"):
        assert round(secure[name], 4) == round(plain[name], 4)
    assert secure["mean_clients_answered"] == plain["mean_clients_answered"] == 3
    assert secure["bytes_up"] > plain["bytes_up"]  # the protocol's keys and shares
    config = json.loads((out / "config.json").read_text())
    assert config["settings"]["secure_aggregation"] is True


def cancer_clients() -> list[ClientData]:
    sites = [s.assign(diagnosis=(s["diagnosis"] == "malignant").astype(np.int64))
             for s in breast_cancer_sites()[:3]]  # fmt: skip
    return [ClientData(f"h{k}", s) for k, s in enumerate(sites)]


def four_clients() -> list[ClientData]:
    """The three hospitals and a fourth holding the first one's rows."""
    clients = cancer_clients()
    return [*clients, ClientData("h3", clients[0].rows)]


def cancer_model(**params) -> FedAvg:
    features = tuple(c for c in cancer_clients()[0].rows.columns if c != "diagnosis")
    return FedAvg("diagnosis", {"diagnosis": 2}, continuous=features, hidden=0, **params)


def test_the_statistics_step_sums_securely_to_the_pooled_statistics():
    clients = cancer_clients()
    plain = cancer_model(rounds=1).fit(clients)
    secure = cancer_model(rounds=1, secure_aggregation=True).fit(clients)
    a, b = plain.statistics_, secure.statistics_
    assert a.rows == b.rows and np.array_equal(a.count, b.count)
    np.testing.assert_allclose(b.mean, a.mean, rtol=1e-9, atol=3 * 2.0**-25)
    # the stated bound: N 2^-(s+1) on each sum (s = 24), divided by the count
    assert np.all(np.abs(b.variance - a.variance) <= 1e-9 * a.variance + 3 * 2.0**-25 / a.count)
    for name, value in plain.params_.items():
        np.testing.assert_allclose(secure.params_[name], value, atol=1e-4)
    assert round(secure.history_[-1]["client_accuracy"], 4) == round(
        plain.history_[-1]["client_accuracy"], 4
    )


class _FailingOnce(LocalBackend):
    """A local backend on which, in round ``fail_round``, node 0 stops answering after
    sending its shares and nodes 1-2 before the last stage: node 3 alone is left to
    remove the masks, above the threshold of a 4-client federation (t = 2 of 3)."""

    def __init__(self, fail_round: int) -> None:
        self.fail_round = fail_round

    def run(self, server_fn, method, clients, participation, seed):
        built = [method.make_client(c) for c in clients]
        fail_round = self.fail_round

        class Grid(LocalGrid):
            def _exchange(self, messages: Mapping[int, Message]) -> dict[int, Message]:
                kind = next(iter(messages.values())).kind
                if self.round == fail_round and kind in (p.MASK, p.UNMASK):
                    keep = {1, 2, 3} if kind == p.MASK else {3}
                    messages = {n: m for n, m in messages.items() if n in keep}
                return super()._exchange(messages)

        return server_fn(Grid(built, participation, seed))


def test_a_round_above_the_dropout_threshold_fails_and_the_run_resumes(tmp_path):
    clients = four_clients()
    path = tmp_path / "checkpoint.safetensors"
    model = cancer_model(rounds=3, seed=1, secure_aggregation=True)
    with pytest.raises(SecureAggregationError, match=r"neighbours answered.*--resume"):
        model.fit(clients, backend=_FailingOnce(fail_round=2), checkpoint=path)
    resumed = cancer_model(rounds=3, seed=1, secure_aggregation=True)
    resumed.fit(clients, checkpoint=path, resume=True)
    full = cancer_model(rounds=3, seed=1, secure_aggregation=True).fit(clients)
    assert [h["round"] for h in resumed.history_] == [1, 2, 3]
    for name, value in full.params_.items():
        np.testing.assert_allclose(resumed.params_[name], value, atol=1e-6)


def test_what_cannot_take_secure_aggregation_is_refused_with_its_reason():
    with pytest.raises(ConfigError, match="late answers cannot be merged"):
        FedAvg("y", {"y": 2}, staleness_exponent=0.5, secure_aggregation=True).prepare()
    with pytest.raises(ConfigError, match="TPSS reads every client's PAG"):
        FedCDnv(secure_aggregation=True).prepare()
    model = FedAvg("y", {"y": 2}, secure_aggregation=SecAggConfig(fractional_bits=20))
    assert model.prepare().secure_aggregation_ == SecAggConfig(fractional_bits=20)
    assert model.get_params()["secure_aggregation"] == SecAggConfig(fractional_bits=20)
    assert (
        FedAvg("y", {"y": 2}).prepare().fingerprint()
        == FedAvg("y", {"y": 2}).set_params(secure_aggregation=False).prepare().fingerprint()
    )


@pytest.mark.parametrize(
    ("method", "reason"),
    [("fedcdnv", "TPSS reads"), ("fedngm", "distils")],
)
def test_the_run_option_is_refused_by_methods_that_cannot_take_it(tmp_path, method, reason):
    with pytest.raises(ConfigError, match=f"--secure-aggregation: .*{reason}"):
        execute(method, [{"secure_aggregation": True}], tmp_path / method)


def test_the_command_line_refuses_it_in_one_line(tmp_path):
    out = str(tmp_path / "run")
    result = CliRunner().invoke(app, ["run", "fedcdnv", "--secure-aggregation", "--out", out])
    assert result.exit_code == 2
    assert "TPSS reads every client's PAG" in result.output


def test_the_server_never_holds_a_sites_fedavg_reply_in_the_clear(recording_backend):
    """The audit, end to end: with secure aggregation every reply FedAvg's server
    receives (statistics, training, evaluation) is a protocol message, and each masked
    answer, read as the site's values, is not the site's (its sample count differs)."""
    clients = cancer_clients()
    backend = recording_backend()
    cancer_model(rounds=1, secure_aggregation=True).fit(clients, backend=backend)
    kinds = {m.kind for _, m in backend.received}
    assert kinds == {p.KEYS, p.SHARE, p.MASK, p.UNMASK}
    masked = [(n, m) for n, m in backend.received if m.kind == p.MASK]
    assert len(masked) == 3 * (2 + 1 + 1)  # statistics twice, training, evaluation
    for node, message in masked:
        layout = Layout.from_bytes(message.config[p.LAYOUT])
        _, metrics = dequantise(message.arrays[p.MASKED], layout, 24)
        if "n" in metrics:
            assert metrics["n"] != clients[node].n_rows
    plain = recording_backend()
    cancer_model(rounds=1).fit(clients, backend=plain)
    assert {m.kind for _, m in plain.received} >= {"fedavg.fit", "fedavg.statistics"}


def test_dropouts_of_the_participation_model_and_a_withheld_round():
    """Sites the participation model drops never join a session, so the secure run sums
    the plain run's sites; a round left with one site is withheld (its sum would be that
    site's reply): the model stays, and the record says so."""
    clients = four_clients()
    part = Participation(dropout=0.3)
    plain = cancer_model(rounds=3, seed=2, participation=part).fit(clients)
    secure = cancer_model(rounds=3, seed=2, participation=part, secure_aggregation=True)
    secure.fit(clients)
    answered = [h["clients_answered"] for h in plain.history_]
    assert answered == [3, 2, 1]  # seed 2: one site drops in round 2, two in round 3
    assert [h["clients_answered"] for h in secure.history_] == [3, 2, 0]
    assert secure.history_[2]["withheld_answers"] == 1
    two_rounds = cancer_model(rounds=2, seed=2, participation=part).fit(clients)
    for name, value in two_rounds.params_.items():
        np.testing.assert_allclose(secure.params_[name], value, atol=1e-5)


def test_the_run_settings_of_the_methods_that_take_it_accept_it():
    from fedstruct.methods.cafe.settings import CafeRun
    from fedstruct.methods.fcm.settings import FCMRun
    from fedstruct.methods.fedcd.settings import FedCDRun
    from fedstruct.methods.fedcdnv.settings import FedCDnvRun

    for settings in (CafeRun, FCMRun, FedCDRun):
        assert settings(secure_aggregation=True).secure_aggregation is True
    assert FedCDnvRun(strategy="vote", secure_aggregation=True).secure_aggregation is True
    with pytest.raises(ConfigError, match=r"--secure-aggregation: FCI-base.*maximum"):
        FedCDnvRun(strategy="largest", secure_aggregation=True)
