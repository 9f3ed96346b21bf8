"""The pooled-discovery client: a site's schema, then sums over its rows, on request.

Three kinds of message, each answered from the site's own rows and never with a row:

- ``fedfci.describe`` (in the clear, as any federation's schema handshake): the site's
  variable names, their kinds and its number of rows;
- ``fedfci.margins`` (summable): per variable of the federation's frame, the rows
  missing it (all the site's rows for a variable it lacks), the observed values' sum
  and sum of squares, and per pair of variables the rows missing one of them, and
  each discrete variable's rows per code (the pooled means and deviations centre the
  later sums; the pairs' rows let ``ci_test="auto"`` choose as a one-process search
  does; the codes give each variable's number of levels);
- ``fedfci.stats`` (summable): the sufficient statistics of a batch of CI tests
  (:mod:`fedstruct.discovery.statistics`), over the rows complete on each test's
  variables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from fedstruct.data.client import ClientData
from fedstruct.discovery.kinds import resolve_kinds
from fedstruct.discovery.statistics import Frame, Plan, SiteTable, site_statistics
from fedstruct.errors import DataError
from fedstruct.fl import Client, Message, from_json_bytes, handles, json_bytes
from fedstruct.methods.fedfci.config import FedFCIConfig
from fedstruct.methods.fedfci.privacy import StatisticsPrivacy
from fedstruct.privacy.dp import PrivacyLedger

__all__ = [
    "DESCRIBE",
    "FRAME",
    "LEVELS",
    "MARGINS",
    "STATS",
    "FedFCIClient",
    "decode_plan",
    "encode_plan",
]

DESCRIBE = "fedfci.describe"
MARGINS = "fedfci.margins"
STATS = "fedfci.stats"
#: The config entry naming the federation's variables (``fedfci.margins``) or holding
#: its frame (``fedfci.stats``).
FRAME = "frame"
#: The config entry of ``fedfci.margins`` bounding a discrete variable's codes.
LEVELS = "levels"


def encode_plan(plan: Plan) -> Message:
    """The ``fedfci.stats`` request of ``plan``: the frame as JSON, the requests as
    the plan's three integer arrays (sizes, members, forms)."""
    frame = plan.frame
    arrays = {"sizes": plan.sizes, "members": plan.members, "forms": plan.forms}
    config = {
        FRAME: json_bytes(
            {
                "names": list(frame.names),
                "discrete": list(frame.discrete),
                "cards": list(frame.cards),
                "centre": list(frame.centre),
                "scale": list(frame.scale),
            }
        )
    }
    return Message(STATS, arrays=arrays, config=config)


def decode_plan(message: Message) -> Plan:
    """The :class:`~fedstruct.discovery.statistics.Plan` of a ``fedfci.stats`` request."""
    raw = from_json_bytes(message.config[FRAME])  # type: ignore[arg-type]
    frame = Frame(
        tuple(raw["names"]),
        tuple(bool(v) for v in raw["discrete"]),
        tuple(int(v) for v in raw["cards"]),
        tuple(float(v) for v in raw["centre"]),
        tuple(float(v) for v in raw["scale"]),
    )
    arrays = message.arrays
    return Plan(frame, arrays["sizes"], arrays["members"], arrays["forms"])


def _describe_bound(client: FedFCIClient, _: Message) -> int:
    d = len(client.data.variables)
    return client.names_entries + 2 * d + 4


def _margins_bound(client: FedFCIClient, message: Message) -> int:
    d = len(message.config[FRAME])  # type: ignore[arg-type]
    return d * (3 + d + int(message.config[LEVELS])) + 4  # type: ignore[arg-type]


def _stats_bound(client: FedFCIClient, message: Message) -> int:
    plan = decode_plan(message)
    return plan.n_counts + plan.n_sums + 4


class FedFCIClient(Client):
    """One site: its rows over its own variables.

    Parameters
    ----------
    data
        The site's rows: integer codes for categorical and ordinal variables (``-1``
        missing), numbers for continuous ones (NaN missing).
    config
        The run's hyper-parameters (the client reads ``min_contribution_rows``).
    seed
        The run's seed (the client draws nothing at random).
    kinds
        Variable -> kind (``"categorical"``, ``"ordinal"``, ``"continuous"``): the
        federation schema's on a user's files; the others get their dtype's kind.
    """

    def __init__(
        self,
        data: ClientData,
        *,
        config: FedFCIConfig,
        seed: int = 0,
        kinds: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(data, seed=seed)
        self.config = config
        columns = list(data.rows.columns)
        given = {v: k for v, k in (kinds or {}).items() if v in columns}
        self.kinds = resolve_kinds(data.rows, columns, given)
        self.names_entries = sum(max(1, math.ceil(len(v.encode()) / 8)) for v in columns)
        self._table: tuple[bytes, SiteTable] | None = None
        #: With ``dp_epsilon``: the budget of this site's releases and their record.
        self.privacy = (
            None
            if config.dp_epsilon is None
            else StatisticsPrivacy(config.dp_epsilon, config.dp_delta, config.dp_releases)
        )
        self.ledger = PrivacyLedger()

    def _codes(self, name: str) -> np.ndarray:
        """A column's observed values as floats (NaN where missing: NaN, or ``-1`` in
        an integer column)."""
        column = self.data.rows[name]
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
        if column.dtype.kind in "iub":
            values[values == -1] = np.nan
        return values

    @handles(DESCRIBE, max_entries=_describe_bound)
    def describe(self, msg: Message) -> Message:
        """The site's schema: its variables' names and kinds, and its rows."""
        return Message(
            DESCRIBE,
            config={"names": list(self.data.rows.columns), "kinds": list(self.kinds)},
            metrics={"n": self.data.n_rows, "evidence": float(self.data.evidence)},
        )

    @handles(
        MARGINS,
        max_entries=_margins_bound,
        summable=True,
        statistic_arrays=("missing", "total", "square", "apart", "levels"),
    )
    def margins(self, msg: Message) -> Message:
        """Over the frame's variables: the rows missing each (all the site's rows for a
        variable it lacks), the observed values' sum and sum of squares, the rows
        missing one of each pair, and per categorical or ordinal variable the rows of
        each code ``0..levels-1`` (the pooled levels follow).

        Raises
        ------
        DataError
            If a variable has a code outside ``0..levels-1``.
        """
        frame = [str(v) for v in msg.config[FRAME]]  # type: ignore[union-attr]
        top = int(msg.config[LEVELS])  # type: ignore[arg-type]
        d, n = len(frame), self.data.n_rows
        kinds = dict(zip(self.data.rows.columns, self.kinds, strict=True))
        observed = np.zeros((n, d), dtype=bool)
        values = np.zeros((n, d))
        levels = np.zeros((d, top), dtype=np.int64)
        for v, name in enumerate(frame):
            if name not in kinds:
                continue
            column = self._codes(name)
            observed[:, v] = ~np.isnan(column)
            seen = column[observed[:, v]]
            values[observed[:, v], v] = seen
            if kinds[name] != "continuous" and seen.size:
                if seen.min() < 0 or seen.max() >= top or (seen != np.round(seen)).any():
                    raise DataError(
                        f"site {self.data.name!r}: variable {name!r} ({kinds[name]}) holds a "
                        f"value outside the codes 0..{top - 1}; recode it, or give its kind as "
                        "continuous"
                    )
                levels[v] = np.bincount(seen.astype(np.int64), minlength=top)
        seen_rows = observed.astype(np.int64)
        counts = {
            "missing": n - seen_rows.sum(axis=0),
            "apart": n - seen_rows.T @ seen_rows,
            "levels": levels,
        }
        moments = {"total": values.sum(axis=0), "square": (values * values).sum(axis=0)}
        return Message(MARGINS, arrays={**counts, **moments}, metrics={"n": n})

    @handles(STATS, max_entries=_stats_bound, summable=True, statistic_arrays=("counts", "sums"))
    def stats(self, msg: Message) -> Message:
        """The sufficient statistics of the request's batch on this site's rows
        (:func:`~fedstruct.discovery.statistics.site_statistics`)."""
        plan = decode_plan(msg)
        key = msg.config[FRAME]
        if self._table is None or self._table[0] != key:
            least = self.config.min_contribution_rows if self.privacy is None else 1
            table = SiteTable(self.data.rows, plan.frame, least)
            self._table = (key, table)  # type: ignore[assignment]
        counts, sums = site_statistics(self._table[1], plan)  # type: ignore[index]
        arrays: dict[str, np.ndarray] = {"counts": counts, "sums": sums}
        if self.privacy is not None:  # G² and χ² only: R tables, one cell each per row
            arrays = self.privacy.release(
                self.ledger, arrays, math.sqrt(len(plan)), self.rng(msg), self.data.name
            )
        return Message(STATS, arrays=arrays)

    def get_state(self) -> dict[str, Any]:
        """The releases this site has made (its privacy ledger), for a resumed run."""
        return {"releases": [list(entry) for entry in self.ledger.history]}

    def set_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`get_state`."""
        self.ledger = PrivacyLedger(tuple(e) for e in state.get("releases", []))
