"""Settings of ``fedstruct run cafe`` (defaults: digits-LT, Dir 0.1, CF 0.1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from fedstruct.constraints import Interval, OneOf, check_fields
from fedstruct.data.datasets.images import IMAGE_DATASETS
from fedstruct.errors import ConfigError
from fedstruct.methods.cafe import CafeConfig
from fedstruct.runs.contract import FederationSettings

if TYPE_CHECKING:
    from fedstruct.methods.cafe.sources import SiteImages, SiteTable, SplitImages

__all__ = ["CafeRun"]


@dataclass(frozen=True)
class CafeRun(FederationSettings, CafeConfig):
    """Settings of ``fedstruct run cafe`` (defaults: digits-LT, Dir 0.1, CF 0.1).

    Parameters
    ----------
    dataset
        ``digits`` or ``mnist`` (shipped), ``fmnist``, ``cifar10`` or ``cifar100``
        (read from ``data_dir``).
    data_dir
        Folder with the data set's standard files (Fashion-MNIST idx, CIFAR batches).
    skew_alpha
        Concentration of the Dirichlet that splits the labels over the clients (Dir).
    imbalance_factor
        Ratio of the largest to the smallest class of the long-tailed training set;
        empty: no long tail.
    min_per_client
        Fewest training images a client may get.
    test_fraction
        With a user's sites: share of each site's images (or rows) kept out of
        training to score the final model on.
    target
        With a user's table sites: the class column (categorical or ordinal); empty:
        the manifest's ``target``. Its features are the other columns, encoded from
        federated statistics (docs/cafe.md, "CAFE on a table").
    knowledge
        Not taken: cafe learns no graph, so background knowledge has nothing to act
        on (a value is refused; docs/knowledge.md lists the methods that take it).
    """

    method_name: ClassVar[str] = "cafe"
    bootstrap_refusal: ClassVar[str] = (
        "CAFE trains a drift-aware classifier and learns no graph whose edges a resample "
        "could count; --bootstrap is for the discovery methods fedcdnv and fedcd"
    )

    secure_aggregation_refusal: ClassVar[str] = ""  # weights, drift, prototypes: sums

    dataset: str = "digits"
    data_dir: str | None = None
    clients: int = 100
    rounds: int = 100
    sample_rate: float = 0.1
    report_rate: float = 0.1
    always_report: float = 0.2
    skew_alpha: float = 0.1
    imbalance_factor: float | None = 10.0
    min_per_client: int = 1
    test_fraction: float = 0.2
    target: str = ""
    knowledge: str | None = None

    def estimator_params(self, source: SplitImages | SiteImages | SiteTable) -> dict[str, Any]:
        """The settings' estimator parameters for the source's images or table
        (``data_params``: the ``target`` setting names a table's column, images have
        none); on a user's sites each client keeps ``test_fraction`` of its images or
        rows out to score the final model on, the paper's split has a server-side test
        set."""
        return {
            **super().estimator_params(source),
            "target": None,
            **source.data_params(),
            "test_fraction": source.held_out,
            "participation": self.participation(source.names),
        }

    def __post_init__(self) -> None:
        if self.knowledge:
            raise ConfigError(
                f"cafe learns no graph, so --knowledge {self.knowledge} has nothing to act "
                "on: drop it (docs/knowledge.md lists the methods that take it)"
            )
        if self.truth:
            raise ConfigError(
                f"cafe learns no graph, so --truth {self.truth} has nothing to score: drop it"
            )
        super().__post_init__()
        check_fields(self, _CONSTRAINTS, "cafe")
        self.check_one_source("dataset", "data_dir", "skew_alpha")
        if self.target and not self.from_files:
            raise ConfigError(
                f"--set target={self.target} names a table's class column, but the run "
                f"reads the {self.dataset} images: give the table sites with --site/--sites"
            )


_CONSTRAINTS = {
    "dataset": OneOf(IMAGE_DATASETS),
    "skew_alpha": Interval(float, 0, closed="neither"),
    "imbalance_factor": Interval(float, 1, allow_none=True),
    "min_per_client": Interval(int, 1),
    "test_fraction": Interval(float, 0, 1, closed="neither"),
}
