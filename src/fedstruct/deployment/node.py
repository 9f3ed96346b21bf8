"""What a SuperNode offers, as its node config carries it: its name and its data sets.

``fedstruct flower supernode --data PATH [--name SITE]`` offers one data set,
``--data NAME=PATH`` repeated or ``--manifest FILE`` several
(:mod:`fedstruct.data.catalogue`). The command writes a :class:`NodeOffer` into the
node config (:meth:`NodeOffer.to_config`: ``site``, the node's name, and
``datasets``, one JSON text); the node's ClientApp reads it back
(:meth:`NodeOffer.from_config`) for every message. A run names the data set it uses
at each node (``--node-site SITE:DATASET``: the ``node_datasets`` setting);
:meth:`NodeOffer.dataset` picks it, or refuses in one line. Light to import: a node
reads it before anything of a method or of its data is imported.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fedstruct.errors import ConfigError

if TYPE_CHECKING:
    from fedstruct.data.sites import SiteSpec

__all__ = ["DATASETS", "SITE", "NodeOffer", "Offered"]

#: The node-config key of the node's name (the site a run names with ``--node-site``).
SITE = "site"
#: The node-config key of the node's data sets (:meth:`NodeOffer.to_config`).
DATASETS = "datasets"


@dataclass(frozen=True)
class Offered:
    """One data set a node offers.

    Parameters
    ----------
    name
        Its name (``--node-site SITE:NAME``).
    path
        Its file (absolute).
    graph
        Its site's own graph file (F-CMs), or ``""``.
    share
        What its catalogue may say beyond names, kinds and rows
        (:data:`fedstruct.data.catalogue.SHARES`).
    """

    name: str
    path: str
    graph: str = ""
    share: tuple[str, ...] = ()

    def spec(self, site: str) -> SiteSpec:
        """The data set as site ``site``'s file (a run's site is the node's name)."""
        from fedstruct.data.sites import SiteSpec

        return SiteSpec(site, Path(self.path), {"graph": self.graph} if self.graph else {})


@dataclass(frozen=True)
class NodeOffer:
    """A SuperNode's name and the data sets it offers (at least one)."""

    name: str
    datasets: tuple[Offered, ...]

    def to_config(self) -> dict[str, str]:
        """The node-config entries: ``site`` and ``datasets`` (ASCII JSON without a
        ``'``, so that Flower's ``--node-config`` parser reads it as one TOML literal
        string)."""
        entries = [
            {"name": d.name, "path": d.path, "graph": d.graph, "share": list(d.share)}
            for d in self.datasets
        ]
        text = json.dumps(entries, separators=(",", ":"), ensure_ascii=True)
        return {SITE: self.name, DATASETS: text.replace("'", "\\u0027")}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> NodeOffer | None:
        """The offer in a node config (``None``: a node hosting a built-in partition).

        Raises
        ------
        ConfigError
            If ``datasets`` is not what :meth:`to_config` writes.
        """
        if DATASETS not in config:
            return None
        try:
            entries = json.loads(str(config[DATASETS]))
            datasets = tuple(
                Offered(str(e["name"]), str(e["path"]), str(e["graph"]), tuple(e["share"]))
                for e in entries
            )
        except (ValueError, TypeError, KeyError):
            raise ConfigError(
                "this SuperNode's node config 'datasets' is not fedstruct's; start it with "
                "'fedstruct flower supernode --data ...'"
            ) from None
        if not datasets:
            raise ConfigError("this SuperNode offers no data set; give --data or --manifest")
        return cls(str(config.get(SITE) or datasets[0].name), datasets)

    @property
    def names(self) -> list[str]:
        """The names of the data sets offered."""
        return [d.name for d in self.datasets]

    def dataset(self, requested: str | None) -> Offered:
        """The data set a run asks of this node (``None``: the node's only one).

        Raises
        ------
        ConfigError
            One line naming the node and what it offers: ``requested`` is not one of
            its data sets, or none is named and it offers several.
        """
        found = {d.name: d for d in self.datasets}
        if requested is None and len(self.datasets) == 1:
            return self.datasets[0]
        if requested is None:
            raise ConfigError(
                f"SuperNode {self.name!r} offers several data sets ({', '.join(self.names)}); "
                f"name the one this run uses: --node-site {self.name}:DATASET"
            )
        if requested not in found:
            raise ConfigError(
                f"SuperNode {self.name!r} offers no data set {requested!r}; it offers "
                f"{', '.join(self.names)}: fix --node-site {self.name}:DATASET "
                "('fedstruct flower catalogue' lists what each node offers)"
            )
        return found[requested]
