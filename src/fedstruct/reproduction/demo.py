"""``fedstruct demo``: the library's showcase, small enough for two minutes on 2 cores."""

from __future__ import annotations

from pathlib import Path

from fedstruct.runs.compare import compare_variants
from fedstruct.runs.recipes import RecipeReport

__all__ = ["run_demo"]

#: A hospital-like federation: 6 sites with skewed labels, under realistic participation.
DEMO_VARIANTS: dict[str, dict[str, object]] = {
    "all sites, every round": {},
    "dropout 30% + stragglers": {"dropout": 0.3, "straggler_rate": 0.3, "deadline": 2.0},
    "late joiners, CF 0.5": {
        "late_fraction": 0.5,
        "report_rate": 0.5,
        "always_report": 0.3,
        "staleness_exponent": 0.5,
    },
}


def run_demo(out: Path) -> RecipeReport:
    """Run the showcase into ``out`` and return its table."""
    common = {
        "network": "asia",
        "clients": 6,
        "rounds": 12,
        "partition": "label-skew",
        "skew_alpha": 0.5,
        "samples": 6000,
    }
    fedavg = compare_variants("fedavg", DEMO_VARIANTS, [0], out / "fedavg", common=common)
    metrics = ["test_accuracy", "majority_accuracy", "mean_clients_answered", "bytes_up"]
    fedavg.save(out / "fedavg", metrics, "test_accuracy", "FedAvg on asia (dysp), 6 sites")
    return RecipeReport(fedavg.table(metrics, "fedstruct demo: FedAvg on asia, 6 sites"), out)
