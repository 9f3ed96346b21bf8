"""A client's data: its name, its variables, its rows, and what it supervises or intervened on."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.errors import DataError, NonFiniteDataError, UnknownVariableError
from fedstruct.graphs.graph import Graph

if TYPE_CHECKING:
    from fedstruct.data.sites.schema import FederationSchema

__all__ = [
    "OBSERVATIONAL",
    "RESAMPLE_EVIDENCE",
    "ClientData",
    "ClientsOnDemand",
    "check_federation",
]

#: Value of :attr:`ClientData.intervention` for a row sampled without intervention.
OBSERVATIONAL = -1
#: How much a row of a bootstrap resample counts as evidence in a CI test
#: (:meth:`ClientData.resampled`, docs/confidence.md "Which resampling").
RESAMPLE_EVIDENCE = 0.5
#: Most float values :class:`ClientData` checks for NaN and inf at a time.
_CHECK_CELLS = 1 << 20


@dataclass(frozen=True, eq=False)
class ClientData:
    """The data one client holds. It never leaves the client.

    Parameters
    ----------
    name
        The client's name, used in every message about it (e.g. ``"hospital-2"``).
    rows
        One row per sample, one numeric column per variable. Categorical variables
        are integer state codes ``0..k-1``; ``-1`` marks a missing label of a
        supervised column. NaN and infinite values are rejected.
    supervised
        Columns whose labels this client supervises (concepts, tasks, class labels).
    intervention
        For interventional data: per row, the column index of the variable that
        was intervened on when the row was sampled, or :data:`OBSERVATIONAL` (-1).
        ``None`` means all rows are observational.
    graph
        The client's own structural knowledge, a DAG over variables it supervises
        (e.g. the concept graph an F-CMs client proposes). It may be noisy; it is
        validated here only for naming variables the client does not supervise.
    missing_values
        Whether the rows may hold missing values: NaN in a float column, ``-1`` in a
        code column (the site reader's ``missing="keep"``, for methods that use
        incomplete rows: FedCDnv's test-wise deletion, FedAvg's imputation from
        federated statistics). Infinite values are still rejected.
    evidence
        How much one row counts as evidence in the client's CI tests, in ``(0, 1]``: 1
        for a sample; a bootstrap resample's rows count :data:`RESAMPLE_EVIDENCE`
        (:meth:`resampled`; :attr:`fedstruct.discovery.CITest.evidence`).
    schema
        The federation codebook the rows were coded with when they were read from a
        user's file (:func:`fedstruct.data.read_federation`); ``None`` for rows given as
        codes. An estimator fitted on such clients reads new rows by its level names.

    Raises
    ------
    NonFiniteDataError
        If ``rows`` holds infinite values, or NaN without ``missing_values`` (the message
        names the column).
    UnknownVariableError
        If ``supervised`` names a column ``rows`` does not have, or ``graph`` names a
        variable the client does not supervise.
    DataError
        For an empty name, no rows, duplicate or non-string column names,
        non-numeric columns, or a malformed ``intervention`` array.
    """

    name: str
    rows: pd.DataFrame
    supervised: tuple[str, ...] = ()
    intervention: NDArray[np.int64] | None = field(default=None, repr=False)
    graph: Graph | None = field(default=None, repr=False)
    missing_values: bool = field(default=False, repr=False)
    evidence: float = field(default=1.0, repr=False)
    schema: FederationSchema | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise DataError(f"client name must be a non-empty string, got {self.name!r}")
        rows = self.rows
        if not isinstance(rows, pd.DataFrame):
            raise DataError(f"client {self.name!r}: rows must be a pandas DataFrame")
        if len(rows) == 0:
            raise DataError(f"client {self.name!r} has no rows; give every client at least one")
        if not 0 < self.evidence <= 1:
            raise DataError(
                f"client {self.name!r}: evidence = {self.evidence!r}; give how much one row "
                "counts in its tests, in (0, 1] (1 for a sample)"
            )
        cols = list(rows.columns)
        if any(not isinstance(c, str) for c in cols) or len(set(cols)) != len(cols):
            raise DataError(f"client {self.name!r}: column names must be unique strings")
        for col, dtype in rows.dtypes.items():  # not rows[col]: thousands of pixel columns
            if not pd.api.types.is_numeric_dtype(dtype):
                raise DataError(
                    f"client {self.name!r}: column {col!r} has dtype {dtype}; "
                    "encode categorical values as integer codes 0..k-1"
                )
        _check_finite(self.name, rows, allow_nan=self.missing_values)
        object.__setattr__(self, "supervised", tuple(self.supervised))
        for var in self.supervised:
            if var not in rows.columns:
                raise UnknownVariableError(
                    f"client {self.name!r} supervises {var!r}, which is not one of its columns"
                )
        if self.graph is not None:
            if not isinstance(self.graph, Graph):
                raise DataError(f"client {self.name!r}: graph must be a fedstruct Graph")
            unsupervised = [v for v in self.graph.names if v not in self.supervised]
            if unsupervised:
                raise UnknownVariableError(
                    f"client {self.name!r}: its graph names {unsupervised}, which it does not "
                    "supervise; drop those nodes from its graph or add their labels"
                )
        if self.intervention is not None:
            iv = np.asarray(self.intervention)
            if iv.shape != (len(rows),) or iv.dtype.kind not in "iu":
                raise DataError(
                    f"client {self.name!r}: intervention must be one integer per row "
                    f"({len(rows)}), got shape {iv.shape} of dtype {iv.dtype}"
                )
            if iv.size and (iv.min() < OBSERVATIONAL or iv.max() >= len(cols)):
                raise DataError(
                    f"client {self.name!r}: intervention codes must lie in -1..{len(cols) - 1}"
                )
            iv = iv.astype(np.int64, copy=True)
            iv.setflags(write=False)
            object.__setattr__(self, "intervention", iv)

    # ----------------------------------------------------------------- views
    @property
    def variables(self) -> tuple[str, ...]:
        """The client's variable names (its columns), in order."""
        return tuple(self.rows.columns)

    @property
    def n_rows(self) -> int:
        """Number of samples."""
        return len(self.rows)

    def regimes(self) -> NDArray[np.int64]:
        """Per-row intervention code (``-1`` = observational), all ``-1`` if none given."""
        if self.intervention is None:
            return np.full(self.n_rows, OBSERVATIONAL, dtype=np.int64)
        return self.intervention

    @property
    def intervention_targets(self) -> tuple[str, ...]:
        """Names of the variables this client has interventional rows for."""
        codes = np.unique(self.regimes())
        return tuple(self.variables[c] for c in codes if c != OBSERVATIONAL)

    def observational(self) -> pd.DataFrame:
        """The rows sampled without intervention."""
        return self.rows[self.regimes() == OBSERVATIONAL]

    def interventional(self, variable: str) -> pd.DataFrame:
        """The rows sampled under an intervention on ``variable``.

        Raises
        ------
        UnknownVariableError
            If the client has no such variable or no rows intervening on it.
        """
        if variable not in self.rows.columns:
            raise UnknownVariableError(f"client {self.name!r} has no variable {variable!r}")
        code = self.variables.index(variable)
        mask = self.regimes() == code
        if not mask.any():
            raise UnknownVariableError(
                f"client {self.name!r} has no interventional rows on {variable!r}; "
                f"its intervention targets are {list(self.intervention_targets)}"
            )
        return self.rows[mask]

    def resampled(
        self,
        rng: np.random.Generator,
        fraction: float | None = None,
        *,
        correct_duplicates: bool = True,
    ) -> ClientData:
        """The same client with a resample of its own rows only (docs/confidence.md).

        Without ``fraction``, a bootstrap sample: as many rows, drawn with replacement;
        with ``correct_duplicates`` each of them counts :data:`RESAMPLE_EVIDENCE` of a
        row in the CI tests (:attr:`evidence`). Why a half: under independence a test
        statistic on ``n`` rows is about ``|Z|²``, with ``Z`` the sample's deviation
        from the population times ``√n``, a standard normal vector on the test's
        degrees of freedom; a bootstrap sample adds its own deviation ``Z*`` around the
        sample, of the same law and independent of ``Z``, so its statistic is about
        ``|Z + Z*|²``: twice a χ² variable. The plain bootstrap's tests thus find
        dependences that are not there (measured: 32 % of independent pairs rejected
        at ``alpha = 0.05``) and its graphs are denser than the sample's — the bias
        Steck & Jaakkola (2003, "Bias-corrected bootstrap and model uncertainty",
        NIPS 16) found in bootstrapped Bayesian networks. Halved, the statistic is a
        χ² variable again under independence, with the power of ``n/2`` rows, as a
        subsample of half the rows has. Counting only the distinct rows (about
        ``0.632 n``) would not do: ``0.632 · 2χ²`` still rejects about 12 %.

        With ``fraction`` in ``(0, 1)``, a subsample: that share of the rows (rounded,
        at least one per regime), drawn without replacement, each a full row of
        evidence (a subsample is a sample of the population itself: Politis & Romano
        1994, *Ann. Statist.* 22(4)). Rows of each regime (observational, or under one
        intervention) are drawn from that regime's rows, so the sample keeps the
        client's design.
        """
        regimes = self.regimes()
        if fraction is None:
            rows = np.empty(self.n_rows, dtype=np.int64)
            for regime in np.unique(regimes):
                where = np.flatnonzero(regimes == regime)
                rows[where] = rng.choice(where, size=where.size, replace=True)
        else:
            kept = []
            for regime in np.unique(regimes):
                where = np.flatnonzero(regimes == regime)
                size = max(1, round(fraction * where.size))
                kept.append(rng.choice(where, size=size, replace=False))
            rows = np.sort(np.concatenate(kept))
        repeated = fraction is None and correct_duplicates
        return replace(
            self,
            rows=self.rows.iloc[rows].reset_index(drop=True),
            intervention=None if self.intervention is None else self.intervention[rows],
            evidence=self.evidence * RESAMPLE_EVIDENCE if repeated else self.evidence,
        )

    def select(self, variables: Sequence[str]) -> ClientData:
        """The same client restricted to ``variables``, in that order.

        Rows sampled under an intervention on a removed variable cannot be relabelled
        (they are not observational), so removing such a variable is an error.

        Raises
        ------
        UnknownVariableError
            If a variable is not one of the client's.
        DataError
            If rows intervene on a variable being removed.
        """
        missing = [v for v in variables if v not in self.rows.columns]
        if missing:
            raise UnknownVariableError(f"client {self.name!r} has no variables {missing}")
        intervention = None
        if self.intervention is not None:
            removed = set(self.intervention_targets) - set(variables)
            if removed:
                raise DataError(
                    f"client {self.name!r} has interventional rows on {sorted(removed)}; "
                    "keep those variables or drop the rows first"
                )
            new_code = {self.variables.index(v): k for k, v in enumerate(variables)}
            new_code[OBSERVATIONAL] = OBSERVATIONAL
            intervention = np.array([new_code[c] for c in self.intervention], dtype=np.int64)
        return replace(
            self,
            rows=self.rows.loc[:, list(variables)],
            supervised=tuple(v for v in self.supervised if v in variables),
            intervention=intervention,
            graph=None
            if self.graph is None
            else self.graph.restrict([v for v in self.graph.names if v in variables]),
        )


class ClientsOnDemand(Sequence[ClientData]):
    """A federation's clients, each built the first time it is read.

    The built-in federations decide for every client at once which rows and variables
    it gets (a split draws over all of them), then build client ``k``'s
    :class:`ClientData` only when ``clients[k]`` is read. A deployment's node that
    hosts built-in partition ``k`` reads ``clients[k]`` only, so no other client's
    data is built in its process, and a simulation that draws each client's rows on
    their own (FedCDnv) never draws the others'.

    Parameters
    ----------
    names
        The clients' names, in order (known without building any client).
    build
        ``build(k)``: client ``k``'s data, called at most once per client (kept).

    Raises
    ------
    DataError
        When a built client's name is not ``names[k]``.
    """

    def __init__(self, names: Sequence[str], build: Callable[[int], ClientData]) -> None:
        self.names = tuple(names)
        self._build = build
        self._built: dict[int, ClientData] = {}

    def __len__(self) -> int:
        return len(self.names)

    @overload
    def __getitem__(self, index: int) -> ClientData: ...

    @overload
    def __getitem__(self, index: slice) -> list[ClientData]: ...

    def __getitem__(self, index: int | slice) -> ClientData | list[ClientData]:
        if isinstance(index, slice):
            return [self[k] for k in range(*index.indices(len(self)))]
        k = operator.index(index)
        k = k + len(self) if k < 0 else k
        if not 0 <= k < len(self):
            raise IndexError(f"client index {index} out of range for {len(self)} clients")
        if k not in self._built:
            client = self._build(k)
            if client.name != self.names[k]:
                raise DataError(
                    f"client {k} was built as {client.name!r}, expected {self.names[k]!r}"
                )
            self._built[k] = client
        return self._built[k]

    def map(self, change: Callable[[ClientData], ClientData]) -> ClientsOnDemand:
        """These clients with ``change`` applied to each when it is built."""
        return ClientsOnDemand(self.names, lambda k: change(self[k]))

    def __repr__(self) -> str:
        return f"ClientsOnDemand({list(self.names)}, built={sorted(self._built)})"


def _check_finite(name: str, rows: pd.DataFrame, allow_nan: bool = False) -> None:
    """Raise for the first float column (in column order) holding NaN (unless
    ``allow_nan``: missing values) or inf values.

    Integer and boolean columns cannot hold either, so only float columns are read:
    runs of adjacent columns of one float dtype, at most ``_CHECK_CELLS`` values at a
    time (a view of the frame's block when the run is one block, e.g. image pixels;
    else a copy that small), not a float64 copy of the whole table.

    Raises
    ------
    NonFiniteDataError
        Naming the column and its number of NaN or infinite values.
    """
    step = max(1, _CHECK_CELLS // len(rows))
    for start, stop, dtype in _float_runs(list(rows.dtypes)):
        for first in range(start, stop, step):
            part = rows.iloc[:, first : min(first + step, stop)]
            if isinstance(dtype, np.dtype):
                values = part.to_numpy()
            else:  # a nullable or pyarrow float column: a missing value is NaN
                values = part.to_numpy(dtype=np.float64, na_value=np.nan)
            if all_finite(values):
                continue
            counts = (np.isinf(values) if allow_nan else ~np.isfinite(values)).sum(axis=0)
            if not counts.any():
                continue
            j = int(np.flatnonzero(counts)[0])
            if allow_nan:
                raise NonFiniteDataError(
                    f"client {name!r}: column {part.columns[j]!r} has {int(counts[j])} "
                    "infinite values; replace them with finite numbers"
                )
            raise NonFiniteDataError(
                f"client {name!r}: column {part.columns[j]!r} has {int(counts[j])} NaN or "
                "infinite values; impute or drop those rows before federating"
            )


def _float_runs(dtypes: Sequence[Any]) -> list[tuple[int, int, Any]]:
    """(start, stop, dtype) of each run of adjacent columns of one float dtype."""
    runs: list[tuple[int, int, Any]] = []
    for j, dtype in enumerate(dtypes):
        if dtype.kind != "f":
            continue
        if runs and runs[-1][1] == j and runs[-1][2] == dtype:
            runs[-1] = (runs[-1][0], j + 1, dtype)
        else:
            runs.append((j, j + 1, dtype))
    return runs


def all_finite(values: NDArray[np.floating]) -> bool:
    """Whether every value is finite: their sum is, unless it overflows (then check all)."""
    with np.errstate(all="ignore"):
        if np.isfinite(values.sum()):
            return True
    return bool(np.isfinite(values).all())


def check_federation(clients: Iterable[ClientData], variables: Sequence[str] | None = None) -> None:
    """Check a list of clients before a federation starts.

    Parameters
    ----------
    clients
        The federation's clients.
    variables
        If given, every client variable must be one of these.

    Raises
    ------
    DataError
        If there are no clients or two clients share a name.
    UnknownVariableError
        If a client holds a variable outside ``variables`` (the message names both).
    """
    clients = list(clients)
    if not clients:
        raise DataError("a federation needs at least one client")
    names = [c.name for c in clients]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise DataError(f"client names must be unique; repeated: {dupes}")
    if variables is not None:
        allowed = set(variables)
        for c in clients:
            extra = [v for v in c.variables if v not in allowed]
            if extra:
                raise UnknownVariableError(
                    f"client {c.name!r} holds {extra}, which are not variables of the federation; "
                    "rename them or add them to the federation's variable list"
                )
