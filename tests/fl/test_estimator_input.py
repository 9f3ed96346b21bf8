"""Issue 49, item 5: the Python API refuses in one line what the command line refuses
(``fit(None)``, ``seed=-1``, ``participation="x"``, a device this machine lacks), and
a bootstrap says what it will cost and refuses more than it can bear."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from fedstruct.cli import app
from fedstruct.data import ClientData, load_network
from fedstruct.errors import ConfigError, DataError
from fedstruct.fl import Participation
from fedstruct.fl.bootstrap import MAX_REPLICATES, cost_estimate
from fedstruct.methods.fedavg import FedAvg
from fedstruct.methods.fedcdnv import FedCDnv

ASIA = load_network("asia")


def _clients() -> list[ClientData]:
    rows = ASIA.sample(300, seed=0)
    return [ClientData("a", rows.iloc[:150]), ClientData("b", rows.iloc[150:])]


def _model(**params) -> FedAvg:
    return FedAvg("dysp", ASIA.cardinalities, rounds=1, **params)


def _one_line(err: pytest.ExceptionInfo) -> str:
    assert "\n" not in str(err.value)
    return str(err.value)


@pytest.mark.parametrize(
    ("clients", "got"),
    [
        (None, "got NoneType"),
        ("site.csv", "got str"),
        (ASIA.sample(20, seed=0), "got DataFrame"),
        ([1, 2], "got a list holding int"),
    ],
)
def test_fit_on_what_is_not_clients_is_one_line(clients, got):
    with pytest.raises(DataError) as err:
        _model().fit(clients)
    message = _one_line(err)
    assert message.startswith("FedAvg.fit takes the clients: a list of ClientData, one per site")
    assert message.endswith(got)


@pytest.mark.parametrize("seed", [-1, 2**32, 1.5, True])
def test_a_seed_the_command_line_refuses_is_refused_here_too(seed):
    with pytest.raises(ConfigError) as err:
        _model(seed=seed).fit(_clients())
    assert _one_line(err) == f"fedavg seed must be an integer in [0, 4294967295], got {seed!r}"
    with pytest.raises(ConfigError, match="fedavg seed must be an integer"):
        _model().set_params(seed=seed).prepare()
    assert _model(seed=2**32 - 1).prepare().seed == 2**32 - 1


def test_a_participation_that_is_not_one_is_refused():
    with pytest.raises(ConfigError) as err:
        _model(participation="x").prepare()
    assert _one_line(err) == (
        "fedavg participation must be a fedstruct Participation (e.g. "
        "fedstruct.fl.Participation(dropout=0.1)) or None, got str 'x'"
    )
    assert _model(participation=Participation(dropout=0.1)).participation.dropout == 0.1


def test_a_device_this_machine_lacks_is_one_line_at_fit():
    with pytest.raises(ConfigError) as err:
        _model(device="cuda:999").fit(_clients())
    assert _one_line(err).startswith("device 'cuda:999': ")


# ------------------------------------------------------------------ bootstrap
def test_a_bootstrap_beyond_the_bound_is_refused_with_the_reason():
    with pytest.raises(ConfigError) as err:
        FedCDnv(bootstrap=1_000_000).prepare()
    message = _one_line(err)
    assert "fedcdnv bootstrap = 1000000: each replicate runs the whole federation again" in (
        message
    )
    assert f"give at most {MAX_REPLICATES:,}" in message
    assert FedCDnv(bootstrap=MAX_REPLICATES).bootstrap == MAX_REPLICATES


def test_the_command_line_refuses_it_before_making_the_folder(tmp_path):
    out = tmp_path / "run"
    args = ["run", "fedcdnv", "--network", "asia", "--bootstrap", "1000000", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "bootstrap = 1000000: each replicate runs the whole federation again" in (
        " ".join(result.output.split())
    )
    assert not out.exists()


def test_cost_estimate_counts_the_rounds_of_jobs():
    assert cost_estimate(1.5, 1000, 2) == "about 0:12:30 at 1.5 s a replicate"
    assert cost_estimate(2.0, 3, 2) == "about 0:00:04 at 2.0 s a replicate"


def test_the_bootstrap_progress_says_what_it_will_take(capsys):
    model = FedCDnv(bootstrap=2, jobs=1).fit(_clients(), progress=True)
    assert model.edge_frequencies_.replicates == 2
    err = capsys.readouterr().err
    assert "fedcdnv bootstrap (about 0:00:" in err and "s a replicate): replicate 1/2" in err
