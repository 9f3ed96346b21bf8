"""The codebook a run read its sites' files with: level names in, level names out.

A run on a user's files codes every categorical and ordinal column by the
federation's codebook (:class:`~fedstruct.data.sites.FederationSchema`; an image
federation's class names) and saves it in ``model.json``'s ``data``. A model loaded
from that run reads new rows the same way — a table's level names become the codes
the model was trained on — and names its predicted states by level again. One
piece of code for ``fedstruct predict`` and the estimators' ``prediction``,
``predict`` and ``score`` (:class:`~fedstruct.estimators.prediction.Predictor`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data.images import LABEL
from fedstruct.data.sites import FederationSchema, encode_site
from fedstruct.errors import DataError

__all__ = ["Codebook"]


@dataclass(frozen=True)
class Codebook:
    """How a run's files named their levels.

    Parameters
    ----------
    schema
        The federation schema of a table run: variables, kinds and level names in
        code order (``None`` for an image run).
    classes
        The class names of an image run, in code order (``None`` for a table run).
    """

    schema: FederationSchema | None = None
    classes: tuple[str, ...] | None = None

    @classmethod
    def from_saved(cls, data: Mapping[str, Any] | None) -> Codebook | None:
        """The codebook ``model.json``'s ``data`` records (the estimator's ``data_``);
        ``None`` for a run on built-in data, whose rows are codes already."""
        if not data:
            return None
        if "variables" in data:
            variables = tuple(data["variables"])
            saved = data.get("levels", {})
            levels = {v: tuple(str(x) for x in names) for v, names in saved.items()}
            return cls(schema=FederationSchema(variables, dict(data["kinds"]), levels, {}, {}))
        if "classes" in data:
            return cls(classes=tuple(str(c) for c in data["classes"]))
        return None

    def levels(self, variable: str) -> tuple[str, ...] | None:
        """The level names of ``variable`` in code order (``None``: it has none, e.g. a
        continuous variable)."""
        if self.classes is not None:
            return self.classes if variable == LABEL else None
        assert self.schema is not None
        return self.schema.levels.get(variable)

    def encode(
        self,
        frame: pd.DataFrame,
        *,
        labels: Sequence[str] = (),
        source: str | Path | None = None,
        missing: str = "error",
    ) -> pd.DataFrame:
        """``frame`` coded as the run's sites were (same index, same columns).

        A table's columns must be variables of the run. A missing value is an error,
        but in a column of ``labels`` (what the model predicts), where it is coded
        ``-1`` (a label the rows do not give), and with ``missing="keep"`` (a model
        that imputes them), where it stays (``-1``, NaN). An image table's ``label`` column, if
        any, holds class names.

        Raises
        ------
        DataError
            For a level (or class) the run's files never had, or text in a continuous
            column.
        """
        if self.classes is not None:
            return self._encode_labels(frame, source)
        assert self.schema is not None
        given = [c for c in labels if c in frame.columns and c in self.schema.levels]
        site = encode_site(
            "input", frame, self.schema, supervised=given, source=source, missing=missing
        )
        return site.client.rows.set_axis(frame.index)

    def _encode_labels(self, frame: pd.DataFrame, source: str | Path | None) -> pd.DataFrame:
        if LABEL not in frame.columns:
            return frame
        assert self.classes is not None
        codes = {name: code for code, name in enumerate(self.classes)}
        names = frame[LABEL].map(_class_name)
        unknown = sorted(set(names) - set(codes))
        if unknown:
            where = "the rows" if source is None else str(source)
            raise DataError(
                f"{where}: column {LABEL!r} holds classes {unknown[:5]} the run never had; "
                f"its classes are {list(self.classes)}"
            )
        return frame.assign(**{LABEL: names.map(codes).astype(np.int64)})

    def names(self, variable: str, states: Sequence[Any] | NDArray[Any]) -> NDArray[Any]:
        """``states`` (codes) of ``variable`` by level name; unchanged for a variable
        without levels."""
        levels = self.levels(variable)
        values = np.asarray(states)
        if levels is None:
            return values
        return np.array([_name(levels, state) for state in values], dtype=object)


def _name(levels: Sequence[str], state: Any) -> Any:
    code = int(state)
    return levels[code] if 0 <= code < len(levels) else state


def _class_name(value: Any) -> str:
    """A label as the run named classes: a whole number without its ``.0``."""
    if isinstance(value, float | np.floating) and np.isfinite(value) and value == int(value):
        return str(int(value))
    if isinstance(value, np.generic):
        return str(value.item())
    return str(value)
