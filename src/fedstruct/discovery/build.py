"""Building a CI test from a client's data by name, and accepting data or a test in learners."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fedstruct.discovery.citest import CITest
from fedstruct.discovery.conditional_gaussian import ConditionalGaussianTest
from fedstruct.discovery.dataset import DataLike
from fedstruct.discovery.degenerate import DegenerateGaussianTest
from fedstruct.discovery.discrete import DiscreteTest, SmallSampleRule
from fedstruct.discovery.fisherz import FisherZTest
from fedstruct.discovery.kinds import CG_MIN_ROWS, choose_ci_test
from fedstruct.errors import ConfigError, unknown_choice_message

__all__ = ["CI_TESTS", "as_ci_test", "choose_ci_test", "make_ci_test"]

CI_TESTS = ("g2", "chi2", "fisherz", "dg", "cg", "auto")
"""Names :func:`make_ci_test` accepts (``"auto"``: :func:`choose_ci_test`, in kinds.py)."""


def make_ci_test(
    data: DataLike,
    test: str = "g2",
    *,
    names: Sequence[str] | None = None,
    kinds: Mapping[str, str] | None = None,
    cardinalities: Mapping[str, int] | Sequence[int] | None = None,
    small_sample: str | SmallSampleRule = "toolbox",
    dof: str = "adjusted",
    missing: str = "testwise",
    cg_min_rows: int = CG_MIN_ROWS,
    evidence: float = 1.0,
    device: str | None = None,
) -> CITest:
    """A cached CI test over ``data``.

    Parameters
    ----------
    data
        A ``ClientData``, ``DataFrame`` or 2-D array.
    test
        ``"g2"`` (default), ``"chi2"`` (discrete data), ``"fisherz"`` (continuous),
        ``"cg"`` (the conditional-Gaussian test, mixed data:
        :class:`~fedstruct.discovery.conditional_gaussian.ConditionalGaussianTest` with
        its defaults), ``"dg"`` (the degenerate-Gaussian test, mixed data:
        :class:`~fedstruct.discovery.degenerate.DegenerateGaussianTest`)
        or ``"auto"`` (one of these from the variables' kinds and, for mixed data,
        the rows: :func:`~fedstruct.discovery.kinds.choose_ci_test`; the learners'
        and FedCDnv's default).
    names
        Variable names for an array.
    kinds
        Name -> kind (``"categorical"``, ``"ordinal"``, ``"continuous"``) for some or
        all variables, read by ``"cg"``, ``"dg"`` and ``"auto"``; the others get their dtype's
        kind (integer or bool: categorical; float: continuous).
    cardinalities, small_sample, dof
        Options of the discrete tests (see
        :class:`~fedstruct.discovery.discrete.DiscreteTest`); ignored by
        Fisher-z.
    missing
        ``"testwise"`` (default: NaN, and ``-1`` in an integer column, are missing
        values; each test uses the rows complete on its own variables,
        :mod:`fedstruct.discovery.missing`) or ``"error"`` (refuse them).
    cg_min_rows
        ``"auto"`` on mixed data: ``"cg"`` from this median of rows per variable
        pair, ``"dg"`` below (:data:`~fedstruct.discovery.kinds.CG_MIN_ROWS`).
    evidence
        How much one row counts as evidence, in ``(0, 1]``
        (:attr:`~fedstruct.discovery.citest.CITest.evidence`): 1 for a sample, the
        default; ``ClientData.evidence`` for a bootstrap resample's rows.
    device
        Where G² and χ² compute their batched counts: ``None`` (default) numpy on the
        CPU, or a torch device setting (``"cuda"``, ``"cuda:N"``, ``"cpu"``,
        ``"auto"``; :mod:`~fedstruct.discovery.device_counts`: the same p-values).
        The other tests compute on the CPU.

    Raises
    ------
    ConfigError
        For an unknown test name, or ``evidence`` outside ``(0, 1]``.
    DataError, NonFiniteDataError
        For bad data (the message names the variable).
    """
    if not 0 < evidence <= 1:
        raise ConfigError(
            f"CI test evidence = {evidence!r}: give how much one row counts, in (0, 1] "
            "(1 for a sample)"
        )
    test = _built_test(
        data, test, names, kinds, cardinalities, small_sample, dof, missing, cg_min_rows, device
    )
    if evidence != 1.0:
        test.evidence = float(evidence)
    return test


def _built_test(
    data: DataLike,
    test: str,
    names: Sequence[str] | None,
    kinds: Mapping[str, str] | None,
    cardinalities: Mapping[str, int] | Sequence[int] | None,
    small_sample: str | SmallSampleRule,
    dof: str,
    missing: str,
    cg_min_rows: int,
    device: str | None = None,
) -> CITest:
    """The test :func:`make_ci_test` returns, before its evidence is set."""
    if test == "auto":
        test = choose_ci_test(data, names=names, kinds=kinds, cg_min_rows=cg_min_rows)
    if test in ("g2", "chi2"):
        return DiscreteTest(
            data,
            statistic=test,
            names=names,
            cardinalities=cardinalities,
            small_sample=small_sample,
            dof=dof,
            missing=missing,
            device=device,
        )
    if test == "fisherz":
        return FisherZTest(data, names=names, missing=missing)
    if test == "dg":
        return DegenerateGaussianTest(data, names=names, kinds=kinds, missing=missing)
    if test == "cg":
        return ConditionalGaussianTest(data, names=names, kinds=kinds, missing=missing)
    raise ConfigError(unknown_choice_message("CI test", test, CI_TESTS))


def as_ci_test(source: CITest | DataLike, test: str = "auto") -> CITest:
    """``source`` itself if it is a :class:`CITest`, else ``make_ci_test(source, test)``."""
    if isinstance(source, CITest):
        return source
    return make_ci_test(source, test)
