"""The shared encoding of mixed data: standardised reals, one-hot categoricals.

NGM-generic (Shrivastava & Chajewska 2023, §3 of the FedNGM paper): "the categorical
input was converted to its one-hot vector representation and added to the
real-valued features". Every model of a federation uses the same :class:`Schema`,
built by the master from per-client summaries (counts, means, variances, the set of
categories and their counts; never rows), so that encoded columns line up.

Kinds: ``real`` and ``ordinal`` are continuous columns, standardised with the pooled
mean and standard deviation (an ordinal keeps its set of levels, over which sampled
values are drawn); ``binary`` and ``categorical`` are integer codes encoded one-hot
over the union of the categories any client has.

A strongly right-skewed non-negative continuous variable (a count such as doctor
visits) can be modelled on the ``log1p`` scale (:data:`TRANSFORMS`): the master picks
the transform from pooled aggregates (:func:`pool_summaries`, ``log_skew``), every
model encodes ``log(1 + x)`` standardised, and decoding, predictions and samples go
back to the data's scale with ``exp(z) - 1``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.errors import ConfigError, DataError, ProtocolError, UnknownVariableError

__all__ = [
    "CATEGORICAL_KINDS",
    "CONTINUOUS_KINDS",
    "KINDS",
    "TRANSFORMS",
    "Schema",
    "VariableSpec",
    "missing_as_nan",
    "pool_summaries",
    "pooled_moments",
    "skewness",
    "summarise",
]

CONTINUOUS_KINDS = ("real", "ordinal")
CATEGORICAL_KINDS = ("binary", "categorical")
KINDS = CONTINUOUS_KINDS + CATEGORICAL_KINDS
#: Transforms of a continuous variable before standardisation: none or ``log(1 + x)``.
TRANSFORMS = ("", "log1p")


@dataclass(frozen=True)
class VariableSpec:
    """How one variable is encoded.

    Parameters
    ----------
    name, kind
        The variable and its kind (:data:`KINDS`).
    mean, std
        Standardisation of a continuous variable (of its transformed values).
    levels
        An ordinal's sorted level values (on the data's scale).
    categories
        A categorical's codes, sorted (the one-hot columns, in order).
    frequencies
        Marginal frequency of each category (initial values for inference), or of
        each ordinal level (the base measure of its Gibbs draws).
    transform
        ``""`` or ``"log1p"`` (:data:`TRANSFORMS`): what is standardised.
    data_mean
        Mean of a continuous variable on the data's scale (``None``: ``mean``, i.e.
        no transform); the "predict the mean" baseline.
    """

    name: str
    kind: str
    mean: float = 0.0
    std: float = 1.0
    levels: tuple[float, ...] = ()
    categories: tuple[int, ...] = ()
    frequencies: tuple[float, ...] = ()
    transform: str = ""
    data_mean: float | None = None

    def __post_init__(self) -> None:
        if self.transform not in TRANSFORMS:
            raise ConfigError(
                f"variable {self.name!r} has transform {self.transform!r}; use one of "
                f"{list(TRANSFORMS)}"
            )

    @property
    def is_categorical(self) -> bool:
        """Whether the variable is one-hot encoded."""
        return self.kind in CATEGORICAL_KINDS

    @property
    def width(self) -> int:
        """Number of encoded columns."""
        return len(self.categories) if self.is_categorical else 1

    @property
    def scale_mean(self) -> float:
        """The mean on the data's scale."""
        return self.mean if self.data_mean is None else self.data_mean

    def transformed(self, values: NDArray) -> NDArray[np.float64]:
        """``values`` on the modelled scale (``log(1 + x)`` or unchanged), unstandardised."""
        v = np.asarray(values, dtype=np.float64)
        return np.log1p(v) if self.transform == "log1p" else v

    def standardise(self, values: NDArray) -> NDArray[np.float64]:
        """A continuous variable's data values to its encoded column."""
        return (self.transformed(values) - self.mean) / self.std

    def unstandardise(self, encoded: NDArray) -> NDArray[np.float64]:
        """Inverse of :meth:`standardise`: encoded values back on the data's scale (a
        ``log1p`` variable is non-negative, so ``exp(z) - 1`` is clipped at 0)."""
        v = np.asarray(encoded, dtype=np.float64) * self.std + self.mean
        return np.maximum(np.expm1(v), 0.0) if self.transform == "log1p" else v

    @property
    def encoded_levels(self) -> NDArray[np.float64]:
        """An ordinal's levels on the encoded scale (sorted; empty for other kinds)."""
        return self.standardise(np.asarray(self.levels, dtype=np.float64))


@dataclass(frozen=True)
class Schema:
    """The variables of a model and their encoding, in column order."""

    variables: tuple[VariableSpec, ...]
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "variables", tuple(self.variables))
        object.__setattr__(self, "_index", {v.name: i for i, v in enumerate(self.variables)})

    # ------------------------------------------------------------------ views
    @property
    def names(self) -> tuple[str, ...]:
        """Variable names, in order."""
        return tuple(v.name for v in self.variables)

    def __len__(self) -> int:
        return len(self.variables)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def spec(self, name: str) -> VariableSpec:
        """The spec of ``name``.

        Raises
        ------
        UnknownVariableError
            If the schema has no such variable.
        """
        if name not in self._index:
            raise UnknownVariableError(
                f"unknown variable {name!r}; the model's variables are {list(self.names)}"
            )
        return self.variables[self._index[name]]

    def position(self, name: str) -> int:
        """Index of ``name`` among the variables."""
        self.spec(name)
        return self._index[name]

    @cached_property
    def widths(self) -> list[int]:
        """Encoded columns per variable."""
        return [v.width for v in self.variables]

    @property
    def n_columns(self) -> int:
        """Total number of encoded columns."""
        return sum(self.widths)

    @cached_property
    def groups(self) -> list[slice]:
        """Per variable, its slice of encoded columns."""
        out, start = [], 0
        for w in self.widths:
            out.append(slice(start, start + w))
            start += w
        return out

    def column_owner(self) -> NDArray[np.int64]:
        """Per encoded column, the index of its variable."""
        return np.repeat(np.arange(len(self)), self.widths)

    def restrict(self, names: Sequence[str]) -> Schema:
        """The schema of ``names`` only, in that order."""
        return Schema(tuple(self.spec(n) for n in names))

    def extend(self, other: Schema) -> Schema:
        """This schema followed by ``other``'s variables (used by stitching)."""
        clash = [n for n in other.names if n in self]
        if clash:
            raise ConfigError(f"variables {clash} are already in the schema")
        return Schema(self.variables + other.variables)

    # --------------------------------------------------------------- encoding
    def encode(
        self, frame: pd.DataFrame, names: Sequence[str] | None = None, missing: bool = False
    ) -> NDArray:
        """Encode ``frame``'s columns ``names`` (default: every variable) to float32.

        Returns an ``(n, n_columns)`` array whose columns of variables not in ``names``
        are zero (callers fill them); each continuous column is standardised, each
        categorical one-hot. With ``missing`` (a client's training rows read with
        ``missing="keep"``), a missing entry (NaN) is NaN in every encoded column of
        its variable, for the masked loss (:func:`~fedstruct.methods.fedngm.train.fill_missing`).

        Raises
        ------
        UnknownVariableError
            If a name is not in the schema or not a column of ``frame``.
        DataError
            If a categorical value was never seen in training (names the variable and
            the value) or a value is not finite.
        """
        names = self.names if names is None else tuple(names)
        out = np.zeros((len(frame), self.n_columns), dtype=np.float32)
        groups = self.groups
        for name in names:
            spec = self.spec(name)
            if name not in frame.columns:
                raise UnknownVariableError(f"the data have no column {name!r}")
            values = frame[name].to_numpy()
            gaps = np.isnan(values.astype(np.float64)) if missing else None
            if gaps is not None and gaps.any():
                out[gaps, groups[self._index[name]]] = np.nan
                values, rows = values[~gaps], ~gaps
            else:
                rows = slice(None)
            if not np.all(np.isfinite(values.astype(np.float64))):
                raise DataError(f"variable {name!r} has NaN or infinite values")
            g = groups[self._index[name]]
            if spec.is_categorical:
                out[rows, g] = one_hot(values, spec)
            else:
                if spec.transform == "log1p" and (values < 0).any():
                    raise DataError(
                        f"variable {name!r} is modelled as log(1 + x) but has negative value "
                        f"{float(values[values < 0][0])!r}; give non-negative values"
                    )
                out[rows, g.start] = spec.standardise(values)
        return out

    @cached_property
    def _initial_row(self) -> NDArray:
        row = np.zeros(self.n_columns, dtype=np.float32)
        for spec, g in zip(self.variables, self.groups, strict=True):
            if spec.is_categorical:
                row[g] = np.asarray(spec.frequencies, dtype=np.float32)
        return row

    def initial(self, n: int) -> NDArray:
        """``n`` rows of the encoded marginal means: 0 for continuous columns, the
        category frequencies for one-hot groups (starting values for inference)."""
        return np.tile(self._initial_row, (n, 1))

    def decode(self, encoded: NDArray, probabilities: bool = True) -> pd.DataFrame:
        """Decoded values: continuous columns back on their scale (an ordinal snapped to
        its nearest level), categoricals as their most likely code.

        ``encoded`` holds one-hot groups as probabilities (or one-hot rows).
        """
        cols = {}
        for spec, g in zip(self.variables, self.groups, strict=True):
            block = np.asarray(encoded[:, g], dtype=np.float64)
            if spec.is_categorical:
                cols[spec.name] = np.asarray(spec.categories)[block.argmax(axis=1)]
            else:
                value = spec.unstandardise(block[:, 0])
                if spec.kind == "ordinal" and spec.levels:
                    value = snap(value, spec.levels)
                cols[spec.name] = value
        return pd.DataFrame(cols)

    # ---------------------------------------------------------------- transfer
    def to_json(self) -> list[dict]:
        """A JSON-ready description (for messages and saved models)."""
        return [
            {
                "name": v.name,
                "kind": v.kind,
                "mean": v.mean,
                "std": v.std,
                "levels": list(v.levels),
                "categories": list(v.categories),
                "frequencies": list(v.frequencies),
                "transform": v.transform,
                "data_mean": v.data_mean,
            }
            for v in self.variables
        ]

    @classmethod
    def from_json(cls, data: Sequence[Mapping]) -> Schema:
        """Inverse of :meth:`to_json`."""
        return cls(
            tuple(
                VariableSpec(
                    name=str(d["name"]),
                    kind=str(d["kind"]),
                    mean=float(d["mean"]),
                    std=float(d["std"]),
                    levels=tuple(float(x) for x in d["levels"]),
                    categories=tuple(int(x) for x in d["categories"]),
                    frequencies=tuple(float(x) for x in d["frequencies"]),
                    transform=str(d.get("transform", "")),
                    data_mean=None if d.get("data_mean") is None else float(d["data_mean"]),
                )
                for d in data
            )
        )

    @classmethod
    def from_frame(
        cls, frame: pd.DataFrame, kinds: Mapping[str, str], *, log_skew: float | None = None
    ) -> Schema:
        """The schema of one data set (its own summaries pooled alone; ``log_skew`` as
        in :func:`pool_summaries`)."""
        return pool_summaries([summarise(frame, kinds)], log_skew=log_skew)


def snap(values: NDArray, levels: Sequence[float]) -> NDArray:
    """Each value replaced by the nearest of the sorted ``levels``."""
    lv = np.asarray(levels, dtype=np.float64)
    pos = np.clip(np.searchsorted(lv, values), 1, len(lv) - 1) if len(lv) > 1 else None
    if pos is None:
        return np.full_like(values, lv[0], dtype=np.float64)
    left, right = lv[pos - 1], lv[pos]
    return np.where(np.abs(values - left) <= np.abs(right - values), left, right)


def one_hot(values: NDArray, spec: VariableSpec) -> NDArray:
    """One-hot rows of categorical ``values`` over ``spec.categories``.

    Raises
    ------
    DataError
        If a value is not one of the categories seen in training.
    """
    cats = np.asarray(spec.categories)
    codes = np.asarray(values)
    pos = np.searchsorted(cats, codes)
    pos_c = np.clip(pos, 0, len(cats) - 1)
    unseen = cats[pos_c] != codes
    if unseen.any():
        bad = codes[unseen][0]
        raise DataError(
            f"variable {spec.name!r} has value {bad.item()!r}, never seen in training "
            f"(known categories: {list(spec.categories)}); recode it to a known category"
        )
    out = np.zeros((len(codes), len(cats)), dtype=np.float32)
    out[np.arange(len(codes)), pos_c] = 1.0
    return out


def missing_as_nan(frame: pd.DataFrame, kinds: Mapping[str, str]) -> pd.DataFrame:
    """``frame`` with every missing entry as NaN: a code column's ``-1`` (how site files
    read with ``missing="keep"`` mark a missing category or level) becomes NaN; a
    continuous column's NaN stays. ``frame`` itself when nothing is missing."""
    coded = [
        n for n in frame.columns
        if kinds.get(n) != "real" and frame[n].dtype.kind in "iu" and (frame[n] < 0).any()
    ]  # fmt: skip
    if not coded:
        return frame
    out = frame.copy()
    for n in coded:
        out[n] = out[n].where(out[n] >= 0).astype(np.float64)
    return out


def summarise(frame: pd.DataFrame, kinds: Mapping[str, str]) -> dict[str, dict]:
    """A client's aggregate statistics per variable (no rows).

    A continuous column gives its count ``n``, mean, sums of squared and cubed
    deviations ``m2``, ``m3``, whether all values are non-negative (``nonneg``) and,
    if so, the same moments of ``log(1 + x)`` (``log_mean``, ``log_m2``, ``log_m3``:
    what the master needs to choose and standardise the ``log1p`` transform); an
    ordinal also its levels and their counts. A categorical column gives the count
    of each category. Missing entries (NaN, :func:`missing_as_nan`) are left out of
    every statistic, so ``n`` counts the observed values and the pooled means and
    standard deviations are those of the observed values (available-case moments).

    Raises
    ------
    UnknownVariableError
        If a column has no kind.
    ConfigError
        If a kind is not one of :data:`KINDS`.
    DataError
        If a categorical column holds non-integer codes.
    """
    out: dict[str, dict] = {}
    for name in frame.columns:
        if name not in kinds:
            raise UnknownVariableError(
                f"variable {name!r} has no kind; give kinds[{name!r}] one of {list(KINDS)}"
            )
        kind = kinds[name]
        if kind not in KINDS:
            raise ConfigError(f"variable {name!r} has kind {kind!r}; use one of {list(KINDS)}")
        values = frame[name].to_numpy()
        if values.dtype.kind == "f":
            values = values[~np.isnan(values)]  # missing entries (missing="keep")
        if kind in CATEGORICAL_KINDS:
            if values.dtype.kind == "f" and not np.all(values == np.round(values)):
                raise DataError(
                    f"categorical variable {name!r} holds non-integer values; "
                    "encode its categories as integer codes"
                )
            cats, counts = np.unique(values.astype(np.int64), return_counts=True)
            out[name] = {"kind": kind, "categories": cats.tolist(), "counts": counts.tolist()}
        else:
            v = values.astype(np.float64)
            dev = v - v.mean()
            entry = {"kind": kind, "n": len(v), "mean": float(v.mean()),
                     "m2": float((dev**2).sum()), "m3": float((dev**3).sum()),
                     "nonneg": bool((v >= 0).all())}  # fmt: skip
            if entry["nonneg"]:
                lv = np.log1p(v)
                ldev = lv - lv.mean()
                entry["log_mean"] = float(lv.mean())
                entry["log_m2"] = float((ldev**2).sum())
                entry["log_m3"] = float((ldev**3).sum())
            if kind == "ordinal":
                levels, counts = np.unique(v, return_counts=True)
                entry["levels"], entry["level_counts"] = levels.tolist(), counts.tolist()
            out[name] = entry
    return out


def pooled_moments(
    parts: Sequence[tuple[float, float, float, float]],
) -> tuple[float, float, float, float]:
    """``(n, mean, m2, m3)`` of the union of groups given as ``(n, mean, m2, m3)``
    (sums of squared and cubed deviations from each group's mean).

    With ``d_k = mean_k - mean``: ``m2 = Σ m2_k + n_k d_k²`` (Chan, Golub & LeVeque
    1979) and ``m3 = Σ m3_k + 3 d_k m2_k + n_k d_k³`` (expand ``(x - mean_k + d_k)³``;
    the pairwise form is Pébay 2008, eq. 2.7).
    """
    n = sum(p[0] for p in parts)
    mean = sum(p[0] * p[1] for p in parts) / n
    m2 = m3 = 0.0
    for nk, mk, m2k, m3k in parts:
        d = mk - mean
        m2 += m2k + nk * d * d
        m3 += m3k + 3.0 * d * m2k + nk * d**3
    return float(n), float(mean), float(m2), float(m3)


def skewness(n: float, m2: float, m3: float) -> float:
    """The moment coefficient of skewness ``(m3 / n) / (m2 / n)^{3/2}`` (0 for a
    constant)."""
    return float((m3 / n) / (m2 / n) ** 1.5) if m2 > 0 else 0.0


def pool_summaries(
    summaries: Sequence[Mapping[str, Mapping]],
    names: Sequence[str] | None = None,
    *,
    log_skew: float | None = None,
) -> Schema:
    """The federation's schema from client summaries (:func:`summarise`).

    Continuous: the pooled mean and standard deviation (Chan et al. 1979's parallel
    variance, :func:`pooled_moments`). Ordinal levels and categories: the union over
    clients (value sets may differ between clients, §2 "Data Setup"); category and
    level frequencies pooled. A continuous variable that is non-negative at every client,
    whose pooled skewness exceeds ``log_skew`` and whose ``log(1 + x)`` has a
    skewness below ``log_skew`` in absolute value is modelled as ``log(1 + x)``,
    standardised with the pooled moments of ``log(1 + x)``: a heavy right tail (a
    count of visits: 4.8, then 0.5) is transformed, a rare positive value (a mostly
    zero 0/1 indicator: 2.3, then 2.3) is not.

    Parameters
    ----------
    summaries
        One mapping per client.
    names
        The variables to keep, in order (default: those of the first summary that
        every client has).
    log_skew
        Skewness threshold of the ``log1p`` transform (above); ``None``: never.

    Raises
    ------
    ProtocolError
        If clients disagree on a variable's kind.
    """
    if names is None:
        names = [n for n in summaries[0] if all(n in s for s in summaries)]
    specs = []
    for name in names:
        entries = [s[name] for s in summaries if name in s]
        kinds = {e["kind"] for e in entries}
        if len(kinds) != 1:
            raise ProtocolError(
                f"clients disagree on the kind of {name!r}: {sorted(kinds)}; "
                "declare the same kind everywhere"
            )
        kind = kinds.pop()
        if kind in CATEGORICAL_KINDS:
            total: dict[int, int] = {}
            for e in entries:
                for c, k in zip(e["categories"], e["counts"], strict=True):
                    total[int(c)] = total.get(int(c), 0) + int(k)
            cats = tuple(sorted(total))
            n = sum(total.values())
            specs.append(VariableSpec(
                name, kind, categories=cats, frequencies=tuple(total[c] / n for c in cats)
            ))  # fmt: skip
        else:
            specs.append(_continuous_spec(name, kind, entries, log_skew))
    return Schema(tuple(specs))


def _continuous_spec(
    name: str, kind: str, entries: Sequence[Mapping], log_skew: float | None
) -> VariableSpec:
    """A real or ordinal variable's spec from its client summaries (see
    :func:`pool_summaries`)."""
    n, mean, m2, m3 = pooled_moments([(e["n"], e["mean"], e["m2"], e["m3"]) for e in entries])
    levels: tuple[float, ...] = ()
    frequencies: tuple[float, ...] = ()
    if kind == "ordinal":
        total: dict[float, int] = {}
        for e in entries:
            for level, k in zip(e["levels"], e["level_counts"], strict=True):
                total[float(level)] = total.get(float(level), 0) + int(k)
        levels = tuple(sorted(total))
        frequencies = tuple(total[x] / n for x in levels)
    if log_skew is not None and all(e["nonneg"] for e in entries):
        _, log_mean, log_m2, log_m3 = pooled_moments(
            [(e["n"], e["log_mean"], e["log_m2"], e["log_m3"]) for e in entries]
        )
        if skewness(n, m2, m3) > log_skew > abs(skewness(n, log_m2, log_m3)):
            log_std = float(np.sqrt(log_m2 / n)) if log_m2 > 0 else 1.0
            return VariableSpec(name, kind, mean=log_mean, std=log_std, levels=levels,
                                frequencies=frequencies, transform="log1p",
                                data_mean=mean)  # fmt: skip
    std = float(np.sqrt(m2 / n)) if m2 > 0 else 1.0
    return VariableSpec(name, kind, mean=float(mean), std=std, levels=levels,
                        frequencies=frequencies)  # fmt: skip
