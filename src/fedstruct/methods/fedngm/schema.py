"""The shared encoding of mixed data: standardised reals, one-hot categoricals.

NGM-generic (Shrivastava & Chajewska 2023, §3 of the FedNGM paper): "the categorical
input was converted to its one-hot vector representation and added to the
real-valued features". Every model of a federation uses the same :class:`Schema`,
built by the master from per-client summaries (counts, means, variances, the set of
categories and their counts; never rows), so that encoded columns line up.

Kinds: ``real`` and ``ordinal`` are continuous columns, standardised with the pooled
mean and standard deviation (an ordinal keeps its set of levels, to which sampled
values are snapped); ``binary`` and ``categorical`` are integer codes encoded one-hot
over the union of the categories any client has.
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
    "Schema",
    "VariableSpec",
    "pool_summaries",
    "summarise",
]

CONTINUOUS_KINDS = ("real", "ordinal")
CATEGORICAL_KINDS = ("binary", "categorical")
KINDS = CONTINUOUS_KINDS + CATEGORICAL_KINDS


@dataclass(frozen=True)
class VariableSpec:
    """How one variable is encoded.

    Parameters
    ----------
    name, kind
        The variable and its kind (:data:`KINDS`).
    mean, std
        Standardisation of a continuous variable.
    levels
        An ordinal's sorted level values.
    categories
        A categorical's codes, sorted (the one-hot columns, in order).
    frequencies
        Marginal frequency of each category (initial values for inference).
    """

    name: str
    kind: str
    mean: float = 0.0
    std: float = 1.0
    levels: tuple[float, ...] = ()
    categories: tuple[int, ...] = ()
    frequencies: tuple[float, ...] = ()

    @property
    def is_categorical(self) -> bool:
        """Whether the variable is one-hot encoded."""
        return self.kind in CATEGORICAL_KINDS

    @property
    def width(self) -> int:
        """Number of encoded columns."""
        return len(self.categories) if self.is_categorical else 1


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
    def encode(self, frame: pd.DataFrame, names: Sequence[str] | None = None) -> NDArray:
        """Encode ``frame``'s columns ``names`` (default: every variable) to float32.

        Returns an ``(n, n_columns)`` array whose columns of variables not in ``names``
        are zero (callers fill them); each continuous column is standardised, each
        categorical one-hot.

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
            if not np.all(np.isfinite(values.astype(np.float64))):
                raise DataError(f"variable {name!r} has NaN or infinite values")
            g = groups[self._index[name]]
            if spec.is_categorical:
                out[:, g] = one_hot(values, spec)
            else:
                out[:, g.start] = (values.astype(np.float64) - spec.mean) / spec.std
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
                value = block[:, 0] * spec.std + spec.mean
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
                )
                for d in data
            )
        )

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, kinds: Mapping[str, str]) -> Schema:
        """The schema of one data set (its own summaries pooled alone)."""
        return pool_summaries([summarise(frame, kinds)])


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


def summarise(frame: pd.DataFrame, kinds: Mapping[str, str]) -> dict[str, dict]:
    """A client's aggregate statistics per variable (no rows): count, mean and sum of
    squared deviations of a continuous column, the levels of an ordinal, the count of
    each category of a categorical one.

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
            entry = {"kind": kind, "n": len(v), "mean": float(v.mean()),
                     "m2": float(((v - v.mean()) ** 2).sum())}  # fmt: skip
            if kind == "ordinal":
                entry["levels"] = np.unique(v).tolist()
            out[name] = entry
    return out


def pool_summaries(
    summaries: Sequence[Mapping[str, Mapping]], names: Sequence[str] | None = None
) -> Schema:
    """The federation's schema from client summaries (:func:`summarise`).

    Continuous: the pooled mean and standard deviation (Chan et al. 1979's parallel
    variance). Ordinal levels and categories: the union over clients (value sets may
    differ between clients, §2 "Data Setup"); category frequencies pooled.

    Parameters
    ----------
    summaries
        One mapping per client.
    names
        The variables to keep, in order (default: those of the first summary that
        every client has).

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
            n = sum(e["n"] for e in entries)
            mean = sum(e["n"] * e["mean"] for e in entries) / n
            m2 = sum(e["m2"] + e["n"] * (e["mean"] - mean) ** 2 for e in entries)
            std = float(np.sqrt(m2 / n)) if m2 > 0 else 1.0
            levels: tuple[float, ...] = ()
            if kind == "ordinal":
                levels = tuple(sorted({float(x) for e in entries for x in e["levels"]}))
            specs.append(VariableSpec(name, kind, mean=float(mean), std=std, levels=levels))
    return Schema(tuple(specs))
