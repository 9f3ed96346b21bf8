"""Each variable's kind for the CI tests, and the test ``ci_test="auto"`` chooses from them.

The discovery layer sees numbers only; a variable's kind says what its numbers mean:

- ``"categorical"``: integer codes of unordered categories (alias ``"binary"``);
- ``"ordinal"``: integer codes (or level values) of ordered levels;
- ``"continuous"``: real numbers (alias ``"real"``).

The aliases are :class:`~fedstruct.data.mixed.MixedDataset`'s kind names. A caller
that knows the kinds (the data layer's ``FederationSchema.kinds``) passes them as a
``kinds`` mapping ``name -> kind``; every variable it leaves out gets the kind of its
dtype, the rule the data layer's encoding follows (categorical and ordinal columns are
``int64`` codes there, continuous ones ``float64``): an integer or boolean column is
categorical, a float column continuous. A plain array has one dtype, so all its
columns get one kind unless ``kinds`` says otherwise.

:func:`auto_test` is the choice ``ci_test="auto"`` makes:

- every variable categorical or ordinal -> ``"g2"`` (ordinal codes taken as
  categories, as G² always did: bnlearn's networks keep their results);
- no categorical variable -> ``"fisherz"`` (ordinal codes taken as scores);
- otherwise -> ``"cg"``, the conditional-Gaussian likelihood-ratio test
  (:mod:`fedstruct.discovery.conditional_gaussian`; ordinal codes taken as scores). It
  beat the degenerate-Gaussian test ``"dg"``, Fisher-z on codes and G² on binned data
  in every cell of benchmarks/mixed_ci.py (PC and FCI, n = 2,000 and 10,000) and runs
  FCI within 3x of Fisher-z (docs/benchmarks.md); ``"dg"`` stays available by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from fedstruct.data.client import ClientData
from fedstruct.errors import ConfigError, UnknownVariableError, unknown_choice_message

__all__ = ["KIND_ALIASES", "VARIABLE_KINDS", "auto_test", "resolve_kinds"]

#: The kinds the CI tests distinguish.
VARIABLE_KINDS = ("categorical", "ordinal", "continuous")
#: Accepted kind names -> the kind they mean (MixedDataset's names included).
KIND_ALIASES: dict[str, str] = {
    "categorical": "categorical",
    "binary": "categorical",
    "ordinal": "ordinal",
    "continuous": "continuous",
    "real": "continuous",
}


def _dtype_kinds(data: object, n_columns: int) -> list[str]:
    """The kind each column's dtype implies (integer or bool: categorical, else continuous)."""
    if isinstance(data, ClientData):
        data = data.rows
    if isinstance(data, pd.DataFrame):
        dtypes = list(data.dtypes)
    else:
        dtypes = [np.asarray(data).dtype] * n_columns
    return [
        "categorical"
        if pd.api.types.is_integer_dtype(t) or pd.api.types.is_bool_dtype(t)
        else "continuous"
        for t in dtypes
    ]


def resolve_kinds(
    data: object, names: Sequence[str], kinds: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """Every variable's kind, in ``names`` order: ``kinds`` first, else its dtype's.

    Parameters
    ----------
    data
        The data the names belong to (``ClientData``, ``DataFrame`` or array).
    names
        The variable names, in column order (as :func:`~fedstruct.discovery.dataset.as_matrix`
        returns them).
    kinds
        Name -> kind (a name of :data:`KIND_ALIASES`) for some or all variables.

    Raises
    ------
    UnknownVariableError
        If ``kinds`` names a variable the data do not have.
    ConfigError
        If ``kinds`` gives an unknown kind.
    """
    given = dict(kinds or {})
    index = set(names)
    for name, kind in given.items():
        if name not in index:
            raise UnknownVariableError(
                f"kinds names {name!r}, which is not a variable of the data; its variables "
                f"are {list(names)[:10]}{' ...' if len(names) > 10 else ''}"
            )
        if kind not in KIND_ALIASES:
            raise ConfigError(
                f"variable {name!r}: " + unknown_choice_message("kind", kind, KIND_ALIASES)
            )
    inferred = _dtype_kinds(data, len(names))
    return tuple(
        KIND_ALIASES[given[name]] if name in given else kind
        for name, kind in zip(names, inferred, strict=True)
    )


def auto_test(kinds: Sequence[str]) -> str:
    """The CI test ``ci_test="auto"`` runs on variables of these kinds (module docstring)."""
    present = set(kinds)
    if present <= {"categorical", "ordinal"}:
        return "g2"
    if "categorical" not in present:
        return "fisherz"
    return "cg"
