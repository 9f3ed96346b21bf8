"""FedAvg's recipe: the runtime showcase under the participation regimes of real federations."""

from __future__ import annotations

from pathlib import Path

from fedstruct.runs.compare import compare_variants
from fedstruct.runs.recipes import Recipe, RecipeReport, register_recipe

__all__ = ["PARTICIPATION_VARIANTS"]

#: FedAvg under the participation regimes of real federations.
PARTICIPATION_VARIANTS: dict[str, dict[str, object]] = {
    "full participation": {},
    "50% sampled per round": {"sample_rate": 0.5},
    "30% dropout": {"dropout": 0.3},
    "stragglers past deadline": {"straggler_rate": 0.3, "deadline": 2.0},
    "late joiners + leavers": {"late_fraction": 0.5, "leave_fraction": 0.25},
    "CF 0.3, stale merged": {"report_rate": 0.3, "always_report": 0.25, "staleness_exponent": 0.5},
    "CF 0.3, stale ignored": {"report_rate": 0.3, "always_report": 0.25},
}


def _fedavg_participation(quick: bool, out: Path, seeds: range) -> RecipeReport:
    common = {
        "network": "alarm",
        "clients": 10,
        "partition": "label-skew",
        "skew_alpha": 0.3,
        "rounds": 10 if quick else 30,
        "samples": 5000 if quick else 20000,
    }
    comparison = compare_variants("fedavg", PARTICIPATION_VARIANTS, seeds, out, common=common)
    metrics = ["test_accuracy", "mean_clients_answered", "bytes_up"]
    comparison.save(
        out, metrics, "test_accuracy", "FedAvg on alarm (BP) under participation regimes"
    )
    return RecipeReport(comparison.table(metrics, "fedavg-participation"), out)


register_recipe(
    Recipe(
        "fedavg-participation",
        "FedAvg on alarm/BP, 10 label-skewed clients, under sampling, dropout, "
        "stragglers, late joiners and communication frequency (runtime showcase)",
        _fedavg_participation,
        seed_counts=(1, 3),
    )
)
