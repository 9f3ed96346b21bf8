"""Building a CI test from a client's data by name, and accepting data or a test in learners."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fedstruct.discovery.citest import CITest
from fedstruct.discovery.dataset import DataLike
from fedstruct.discovery.discrete import DiscreteTest, SmallSampleRule
from fedstruct.discovery.fisherz import FisherZTest
from fedstruct.errors import ConfigError, unknown_choice_message

__all__ = ["CI_TESTS", "as_ci_test", "make_ci_test"]

CI_TESTS = ("g2", "chi2", "fisherz")
"""Names :func:`make_ci_test` accepts."""


def make_ci_test(
    data: DataLike,
    test: str = "g2",
    *,
    names: Sequence[str] | None = None,
    cardinalities: Mapping[str, int] | Sequence[int] | None = None,
    small_sample: str | SmallSampleRule = "toolbox",
    dof: str = "adjusted",
) -> CITest:
    """A cached CI test over ``data``.

    Parameters
    ----------
    data
        A ``ClientData``, ``DataFrame`` or 2-D array.
    test
        ``"g2"`` (default), ``"chi2"`` (discrete data) or ``"fisherz"`` (continuous).
    names
        Variable names for an array.
    cardinalities, small_sample, dof
        Options of the discrete tests (see
        :class:`~fedstruct.discovery.discrete.DiscreteTest`); ignored by
        Fisher-z.

    Raises
    ------
    ConfigError
        For an unknown test name.
    DataError, NonFiniteDataError
        For bad data (the message names the variable).
    """
    if test in ("g2", "chi2"):
        return DiscreteTest(
            data,
            statistic=test,
            names=names,
            cardinalities=cardinalities,
            small_sample=small_sample,
            dof=dof,
        )
    if test == "fisherz":
        return FisherZTest(data, names=names)
    raise ConfigError(unknown_choice_message("CI test", test, CI_TESTS))


def as_ci_test(source: CITest | DataLike, test: str = "g2") -> CITest:
    """``source`` itself if it is a :class:`CITest`, else ``make_ci_test(source, test)``."""
    if isinstance(source, CITest):
        return source
    return make_ci_test(source, test)
