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

:func:`choose_ci_test` is the choice ``ci_test="auto"`` makes, once per data set
(in a federation: once per site, on the site's own rows):

- every variable categorical or ordinal -> ``"g2"`` (ordinal codes taken as
  categories, as G² always did: bnlearn's networks keep their results);
- no categorical variable -> ``"fisherz"`` (ordinal codes taken as scores);
- otherwise (mixed) the rows decide, by the median over the variable pairs of the
  rows observed on both (complete data: every row; with missing values, what
  test-wise deletion leaves a pair):

  - at least ``cg_min_rows`` (default :data:`CG_MIN_ROWS` = 1,500) -> ``"cg"``, the
    conditional-Gaussian likelihood-ratio test
    (:mod:`fedstruct.discovery.conditional_gaussian`); it beat the
    degenerate-Gaussian test, Fisher-z on codes and G² on binned data in every cell of
    benchmarks/mixed_ci.py at n = 2,000 and 10,000 (PC and FCI);
  - fewer -> ``"dg"``, the degenerate-Gaussian test
    (:mod:`fedstruct.discovery.degenerate`): ``"cg"`` crosses the categorical
    variables into cells, ``(k - 1) m(Z)`` degrees of freedom where ``"dg"`` spends
    ``k - 1``, and that costs power on few rows (PC skeleton F1 on the benchmark's
    mixed models, cg against dg: 0.875 / 0.899 at n = 1,000, 0.910 / 0.922 at 1,250,
    0.909 / 0.899 at 1,500, 0.928 / 0.915 at 2,000; FCI alike). 1,500 is the smallest
    measured size where cg wins, kept rather than the interpolated ~1,350 because with
    missing values a test of more variables has fewer rows than its pair
    (docs/benchmarks.md). Both tests read ordinal codes as scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from fedstruct.data.client import ClientData
from fedstruct.discovery.dataset import DataLike, as_matrix
from fedstruct.errors import ConfigError, UnknownVariableError, unknown_choice_message

__all__ = [
    "CG_MIN_ROWS",
    "KIND_ALIASES",
    "VARIABLE_KINDS",
    "choose_ci_test",
    "median_pair_rows",
    "resolve_kinds",
]

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
#: ``ci_test="auto"`` on mixed data: ``"cg"`` from this many rows per variable pair
#: (median over the pairs), ``"dg"`` below (module docstring).
CG_MIN_ROWS = 1500


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


def median_pair_rows(data: DataLike, names: Sequence[str] | None = None) -> float:
    """The median, over the pairs of variables, of the rows observed on both.

    Complete data: the number of rows. Missing values (NaN, ``-1`` in an integer
    column: :mod:`fedstruct.discovery.dataset`) lower it to what test-wise deletion
    leaves a pair; a test that conditions on more variables has fewer still.
    """
    matrix = as_matrix(data, names, missing="testwise")
    if matrix.observed is None or matrix.values.shape[1] < 2:
        return float(matrix.values.shape[0])
    observed = matrix.observed.astype(np.float64)
    both = observed.T @ observed
    return float(np.median(both[np.triu_indices(both.shape[0], k=1)]))


def choose_ci_test(
    data: DataLike,
    *,
    names: Sequence[str] | None = None,
    kinds: Mapping[str, str] | None = None,
    cg_min_rows: int = CG_MIN_ROWS,
) -> str:
    """The test ``ci_test="auto"`` runs on ``data`` (the rule: module docstring).

    Parameters
    ----------
    data
        A ``ClientData``, ``DataFrame`` or 2-D array (one site's rows).
    names
        Variable names for an array.
    kinds
        Name -> kind for some or all variables; the others get their dtype's kind
        (integer or bool: categorical; float: continuous).
    cg_min_rows
        Mixed data: ``"cg"`` when :func:`median_pair_rows` is at least this, else
        ``"dg"`` (default :data:`CG_MIN_ROWS`; 0: always ``"cg"``).

    Returns
    -------
    str
        ``"g2"``, ``"fisherz"``, ``"cg"`` or ``"dg"``.
    """
    if isinstance(data, ClientData | pd.DataFrame):
        columns = list(data.variables if isinstance(data, ClientData) else data.columns)
    else:  # an array: as_matrix checks the names when the test is built
        width = np.shape(data)[1] if np.ndim(data) == 2 else 0
        columns = list(names) if names is not None else [f"X{k}" for k in range(width)]
    present = set(resolve_kinds(data, columns, kinds))
    if present <= {"categorical", "ordinal"}:
        return "g2"
    if "categorical" not in present:
        return "fisherz"
    return "cg" if median_pair_rows(data, names) >= cg_min_rows else "dg"
