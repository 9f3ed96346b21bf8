"""Issue 49, item 4: secure-aggregation settings out of range are refused in one line,
and a secure run none of whose rounds released a sum fails as a run in which no
client answered does (it used to end "finished" with an untrained model)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.data import ClientData, load_network
from fedstruct.errors import ConfigError, NoAnswerError
from fedstruct.fl import Participation
from fedstruct.fl.secagg import SecAggConfig
from fedstruct.methods.fedavg import FedAvg


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"neighbours": 2, "threshold": 99}, "threshold must be in 1..neighbours = 1..2"),
        ({"threshold": 99, "neighbours": 3}, "threshold must be in 1..neighbours = 1..3"),
        ({"fractional_bits": 0}, "fractional_bits must be an integer in [8, 48], got 0"),
        ({"fractional_bits": 49}, "fractional_bits must be an integer in [8, 48], got 49"),
        ({"fractional_bits": 20.5}, "fractional_bits must be an integer in [8, 48]"),
        ({"neighbours": 0}, "neighbours must be an integer >= 1"),
        ({"threshold": 0}, "threshold must be an integer >= 1"),
        ({"min_clients": 1}, "min_clients must be >= 2 (a sum of one client is its value)"),
    ],
)
def test_settings_out_of_range_are_one_line_with_the_range(params, says):
    with pytest.raises(ConfigError) as err:
        SecAggConfig(**params)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_settings_in_range_stay_accepted():
    config = SecAggConfig(20, neighbours=12, threshold=7)
    assert (config.degree(20), config.reconstruction_threshold(20)) == (12, 7)
    assert SecAggConfig(fractional_bits=8).fractional_bits == 8


def _asia_clients(k: int) -> list[ClientData]:
    rows = load_network("asia").sample(150 * k, seed=0)
    return [ClientData(f"site-{i}", rows.iloc[i::k]) for i in range(k)]


def _asia_model(**params) -> FedAvg:
    return FedAvg("dysp", load_network("asia").cardinalities, rounds=2, hidden=0, **params)


def test_no_round_released_a_sum_fails_as_no_answer():
    """min_clients above the sites that answer: every round's sum is withheld."""
    model = _asia_model(secure_aggregation=SecAggConfig(min_clients=3))
    with pytest.raises(NoAnswerError) as err:
        model.fit(_asia_clients(2))
    message = str(err.value)
    assert message.startswith("secure aggregation released no sum in any of the 2 rounds")
    assert "fewer than min_clients = 3 clients left to sum (2 in the federation" in message
    assert "\n" not in message


def test_some_rounds_released_is_partial_participation_not_a_failure():
    """Seed 2, dropout 0.5: some rounds keep two sites (released), some one (withheld)."""
    part = Participation(dropout=0.5)
    model = _asia_model(secure_aggregation=True, participation=part, seed=2).set_params(rounds=4)
    model.fit(_asia_clients(3))
    answered = [h["clients_answered"] for h in model.history_]
    assert 0 in answered and max(answered) >= 2


def test_one_client_with_secure_aggregation_fails_on_the_command_line(tmp_path):
    out = tmp_path / "run"
    args = ["run", "fedavg", "--network", "asia", "--clients", "1", "--rounds", "2", "--quiet",
            "--set", "samples=200", "--set", "test_samples=100"]  # fmt: skip
    result = CliRunner().invoke(app, [*args, "--secure-aggregation", "--out", str(out)])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "secure aggregation released no sum in any of the 2 rounds" in text
    assert "(1 in the federation" in text and "Traceback" not in result.output
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "failed" and "NoAnswerError" in record["error"]
    assert not (out / "metrics.json").exists()
