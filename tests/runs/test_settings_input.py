"""Issue 49, item 2: ``--set`` values and ``--config`` files read as YAML 1.2 plain
data through :mod:`fedstruct.files` (numbers as numbers, no aliases, bounded nesting)."""

import pytest

from fedstruct.errors import ConfigError
from fedstruct.methods.fedavg import FedAvgRun
from fedstruct.runs.settings import apply_settings, load_config_file, parse_assignments


@pytest.mark.parametrize(
    ("raw", "value"), [("1e-5", 1e-5), ("1e30", 1e30), ("1.0e6", 1e6), ("-2E-3", -2e-3)]
)
def test_set_reads_exponent_numbers_as_numbers(raw, value):
    assert parse_assignments([f"dp_delta={raw}"]) == {"dp_delta": value}


def test_set_dp_delta_in_exponent_form_is_a_float_setting():
    given = parse_assignments(["dp_epsilon=3", "dp_delta=1e-5"])
    settings = apply_settings(FedAvgRun(), given, method="fedavg")
    assert settings.dp_delta == 1e-5


def test_set_keeps_text_and_other_scalars():
    assert parse_assignments(["a=3", "b=0.5", "c=true", "d=none", "e=", "f=[1, 2]"]) == {
        "a": 3, "b": 0.5, "c": True, "d": "none", "e": "", "f": [1, 2],
    }  # fmt: skip


def test_config_file_reads_exponent_numbers(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("dp_delta: 1e-5\nlearning_rate: 1.0e-2\n")
    assert load_config_file(path) == {"dp_delta": 1e-5, "learning_rate": 0.01}


def test_config_file_with_aliases_is_refused_at_once(tmp_path):
    """A "billion laughs" file: 9 levels of 10 aliases each would expand to 10^9 items."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for k in range(1, 10):
        refs = ", ".join([f"*a{k - 1}"] * 10)
        lines.append(f"a{k}: &a{k} [{refs}]")
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"laughs.yaml is not valid YAML: aliases .* line 2"):
        load_config_file(path)


def test_config_file_nested_too_deeply_is_one_line(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text("rounds: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match=r"deep\.yaml") as caught:
        load_config_file(path)
    assert "\n" not in str(caught.value)


def test_config_file_key_given_twice_is_refused(tmp_path):
    path = tmp_path / "twice.yaml"
    path.write_text("rounds: 3\nrounds: 5\n")
    with pytest.raises(ConfigError, match="key 'rounds' is given twice"):
        load_config_file(path)


def test_config_file_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    import os

    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    with pytest.raises(ConfigError, match="is a named pipe"):
        load_config_file(path)


def test_a_learning_rate_that_diverges_is_one_line_naming_it(tmp_path):
    """``--set learning_rate=1e30`` was a traceback (a NaN metric); now it stops in the
    round the weights overflow, with the cause."""
    from typer.testing import CliRunner

    from fedstruct.cli import app

    out = tmp_path / "run"
    args = [
        "run",
        "fedavg",
        "--network",
        "asia",
        "--clients",
        "2",
        "--rounds",
        "3",
        "--quiet",
        "--set",
        "samples=200",
        "--set",
        "test_samples=100",
        "--set",
        "learning_rate=1e30",
    ]
    result = CliRunner().invoke(app, [*args, "--out", str(out)])  # fmt: skip
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "fedavg diverged: in round 1 the global model's weight" in text
    assert "learning_rate = 1e+30 is too large for these data: lower it" in text
    assert "Traceback" not in result.output
