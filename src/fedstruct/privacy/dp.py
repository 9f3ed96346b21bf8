"""Differential-privacy budgets for DP-SGD, accounted across every round.

A client that trains with DP-SGD (Abadi et al. 2016) in several rounds composes the
privacy loss of all its steps: the ε it may report is the ε of the whole run, not of
one round. :class:`PrivacyLedger` keeps the steps a client has taken, as
``(noise multiplier, sampling rate, steps)`` entries, and composes them with the
Rényi-DP accountant of Opacus (Mironov 2017; the subsampled Gaussian of Mironov et
al. 2019). :class:`DPBudget` calibrates the noise so that a planned number of steps
stays within ``(ε, δ)``. :class:`PrivateSGD` and :func:`private_schedule` are the
DP-SGD settings and step schedule that every method training with DP-SGD shares
(F-CMs, FedAvg, the CAFE harness's weight-sharing baselines), and
:class:`SitePrivacy` is one site's budget, noise and ledger across rounds, which
refuses a round that would exceed the budget before training it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from fedstruct.constraints import Interval, check_fields
from fedstruct.errors import ConfigError, FedstructWarning

if TYPE_CHECKING:
    import torch

__all__ = [
    "DPBudget",
    "PrivacyLedger",
    "PrivateSGD",
    "SitePrivacy",
    "epsilon_report",
    "make_private",
    "private_schedule",
    "site_budget",
    "spent_epsilons",
]

# Opacus (and the torch.distributed it pulls in, ~1.5 s) is imported where it is
# used: most runs train without DP, and every process of a Flower deployment pays
# the import time of this module.


@lru_cache(maxsize=1)
def _orders() -> tuple[float, ...]:
    """Rényi orders of the accountant (Opacus' defaults)."""
    from opacus.accountants import RDPAccountant

    return tuple(RDPAccountant.DEFAULT_ALPHAS)


@lru_cache(maxsize=1024)
def _rdp_per_step(noise_multiplier: float, sample_rate: float) -> tuple[float, ...]:
    """RDP of one subsampled-Gaussian step at every order (composition adds them)."""
    from opacus.accountants.analysis.rdp import compute_rdp

    rdp = compute_rdp(q=sample_rate, noise_multiplier=noise_multiplier, steps=1, orders=_orders())
    return tuple(float(v) for v in np.atleast_1d(rdp))


#: What the accountant's bound at the edge of its Rényi orders means, by the edge
#: Opacus names ("Optimal order is the smallest alpha"): one line each, said once per
#: process (:data:`_SAID`; every site and round of a run would repeat it).
LOOSE_BOUND = {
    "smallest": (
        "DP accounting: the ε reported is a loose upper bound (the Rényi accountant's best "
        "order is its smallest): the noise is so small, or the steps so many, that the run "
        "is barely private"
    ),
    "largest": (
        "DP accounting: the ε reported is a loose upper bound (the Rényi accountant's best "
        "order is its largest): the noise is so large that the true ε is smaller still"
    ),
}


#: The edges of :data:`LOOSE_BOUND` already said in this process.
_SAID: set[str] = set()


@contextmanager
def _accountant_warnings() -> Iterator[None]:
    """Opacus' two-line warnings that its Rényi bound is loose (the best order at the
    edge of its range, at an extreme noise or budget) as one :class:`FedstructWarning`
    line (:data:`LOOSE_BOUND`), once per process; other warnings pass as they are."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    edges = []
    for warning in caught:
        text = str(warning.message)
        edge = next((e for e in LOOSE_BOUND if f"Optimal order is the {e} alpha" in text), None)
        if edge is None:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )
        elif edge not in edges and edge not in _SAID:
            edges.append(edge)
    for edge in edges:
        _SAID.add(edge)
        warnings.warn(LOOSE_BOUND[edge], FedstructWarning, stacklevel=3)


#: The largest noise multiplier Opacus' calibration tries (``MAX_SIGMA``).
MAX_NOISE_MULTIPLIER = 1e6


@lru_cache(maxsize=256)
def _calibrate(epsilon: float, delta: float, sample_rate: float, steps: int) -> float:
    """Opacus' search for the noise multiplier; its probes of very large or small
    noise, whose best Rényi order is at the edge of the range, warn about a loose
    bound that concerns the probe only (the ledger's ε of the noise found warns on its
    own if it is loose: :func:`_accountant_warnings`).

    Raises
    ------
    ConfigError
        If no noise multiplier up to :data:`MAX_NOISE_MULTIPLIER` spends as little as
        ``epsilon`` (Opacus: "The privacy budget is too low.").
    """
    from opacus.accountants.utils import get_noise_multiplier

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Optimal order is the")
        try:
            return float(
                get_noise_multiplier(
                    target_epsilon=epsilon,
                    target_delta=delta,
                    sample_rate=sample_rate,
                    steps=steps,
                    accountant="rdp",
                )
            )
        except ValueError:
            raise ConfigError(
                f"DP-SGD: dp_epsilon = {epsilon:g} (δ = {delta:.3g}) is too small a budget for "
                f"{steps} steps at sampling rate {sample_rate:.3g}: even a noise multiplier of "
                f"{MAX_NOISE_MULTIPLIER:g} would spend more; raise dp_epsilon, or train fewer "
                "rounds or local epochs"
            ) from None


_BUDGET_CONSTRAINTS = {
    "epsilon": Interval(float, 0, closed="neither"),
    "delta": Interval(float, 0, 1, closed="neither"),
    "max_grad_norm": Interval(float, 0, closed="neither"),
}


@dataclass(frozen=True)
class DPBudget:
    """A client's ``(ε, δ)`` budget for the whole run and its clipping norm.

    Parameters
    ----------
    epsilon
        Total ε over every round.
    delta
        δ (the F-CMs experiments use 1e-5).
    max_grad_norm
        Per-sample gradient clipping norm ``C`` (App. E.4, eq. 4: 1.0).
    """

    epsilon: float
    delta: float = 1e-5
    max_grad_norm: float = 1.0

    def __post_init__(self) -> None:
        check_fields(self, _BUDGET_CONSTRAINTS, "DP")

    def noise_multiplier(self, sample_rate: float, steps: int) -> float:
        """The smallest noise multiplier (to Opacus' tolerance) with which ``steps``
        steps at sampling rate ``sample_rate`` spend at most ``ε``."""
        if not 0 < sample_rate <= 1 or steps < 1:
            raise ConfigError(
                f"need 0 < sample_rate <= 1 and steps >= 1, got {sample_rate}, {steps}"
            )
        return _calibrate(self.epsilon, self.delta, float(sample_rate), int(steps))


def site_budget(
    epsilon: float | None, delta: float | None, max_grad_norm: float, n_rows: int
) -> DPBudget | None:
    """A site's DP-SGD budget for its ``n_rows`` training rows, or ``None`` without DP
    (``epsilon`` is ``None``). ``delta=None`` gives ``δ = 1 / n_k``, the usual choice
    of a δ below one over the number of records protected (``1/2`` for a site of one
    row, which any δ < 1 would refuse)."""
    if epsilon is None:
        return None
    chosen = delta if delta is not None else 1.0 / max(int(n_rows), 2)
    return DPBudget(float(epsilon), float(chosen), float(max_grad_norm))


class PrivacyLedger:
    """The DP-SGD steps one client has taken, across rounds.

    Parameters
    ----------
    history
        Earlier ``(noise multiplier, sampling rate, steps)`` entries (a client's
        saved state).
    """

    def __init__(self, history: Iterable[tuple[float, float, int]] = ()) -> None:
        self.history = [(float(s), float(q), int(n)) for s, q, n in history]

    def record(self, noise_multiplier: float, sample_rate: float, steps: int) -> None:
        """Add ``steps`` steps taken with this noise and sampling rate."""
        self.history.append((float(noise_multiplier), float(sample_rate), int(steps)))

    def epsilon(self, delta: float, extra: tuple[float, float, int] | None = None) -> float:
        """ε spent so far (plus a hypothetical ``extra`` entry) at ``delta``."""
        entries = self.history + ([extra] if extra is not None else [])
        if not entries:
            return 0.0
        from opacus.accountants.analysis.rdp import get_privacy_spent

        rdp = sum(n * np.asarray(_rdp_per_step(s, q)) for s, q, n in entries)
        with _accountant_warnings():
            eps, _ = get_privacy_spent(orders=list(_orders()), rdp=rdp, delta=delta)
        return float(eps)

    def allows(
        self, budget: DPBudget, noise_multiplier: float, sample_rate: float, steps: int
    ) -> bool:
        """Whether ``steps`` more steps keep the total within ``budget.epsilon``."""
        extra = (noise_multiplier, sample_rate, steps)
        return self.epsilon(budget.delta, extra) <= budget.epsilon


@dataclass(frozen=True)
class PrivateSGD:
    """DP-SGD settings (Abadi et al. 2016, Algorithm 1): noise multiplier ``σ`` and
    per-sample gradient clipping norm ``C`` (the noise on a batch's summed clipped
    gradients has standard deviation ``σ C``)."""

    noise_multiplier: float
    max_grad_norm: float


def make_private(
    module: torch.nn.Module,
    optimiser: torch.optim.Optimizer,
    dataset: torch.utils.data.Dataset,
    batch_size: int,
    private: PrivateSGD,
) -> tuple[Any, Any, Any]:
    """Opacus' DP-SGD (Abadi et al. 2016) around ``module`` and ``optimiser`` over
    ``dataset``: Poisson-sampled batches of expected size ``batch_size``
    (:func:`private_schedule`), every sample's gradient clipped to
    ``private.max_grad_norm``, Gaussian noise ``σ C`` on their sum. Returns Opacus'
    module, optimiser and data loader; the privacy cost is the caller's to account.

    The batches and the noise are drawn from generators seeded by the operating
    system's entropy (:func:`secrets.randbits`; the noise's on the module's device),
    not the run's seed: whoever knows the seed (the server, a reader of the run's
    ``config.json``) could otherwise regenerate the noise and subtract it, or know
    which rows each batch drew. A run with DP is therefore not bit-reproducible.
    """
    import secrets

    import torch
    from opacus import PrivacyEngine  # only with DP (its import costs ~1.5 s)
    from torch.utils.data import DataLoader

    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=True,
        generator=torch.Generator().manual_seed(secrets.randbits(62)),
    )
    device = next(module.parameters()).device
    return PrivacyEngine(accountant="rdp").make_private(
        module=module,
        optimizer=optimiser,
        data_loader=loader,
        noise_multiplier=private.noise_multiplier,
        max_grad_norm=private.max_grad_norm,
        noise_generator=torch.Generator(device).manual_seed(secrets.randbits(62)),
    )


def private_schedule(n: int, batch_size: int, epochs: int) -> tuple[float, int]:
    """DP-SGD's sampling rate and step count for ``epochs`` epochs over ``n`` rows.

    Poisson sampling as in Opacus: ``ceil(n / batch)`` expected batches per epoch,
    each row drawn with probability ``q = 1 / ceil(n / batch)``.
    """
    per_epoch = max(1, math.ceil(n / batch_size))
    return 1.0 / per_epoch, per_epoch * int(epochs)


class SitePrivacy:
    """One site's DP-SGD across a run: its budget, the noise of every round, its ledger.

    The noise multiplier is the one given, or else calibrated
    (:meth:`DPBudget.noise_multiplier`) so that ``rounds`` rounds of ``steps``
    Poisson-sampled steps spend the budget's ε: a site that takes part in every round
    ends just under it, one sampled in fewer rounds below it. With a given noise
    multiplier whose ``rounds`` rounds would spend more than ε, the site is refused
    when it is built, before any training; and :meth:`next_round` refuses a round
    that would exceed the budget (a run resumed with more rounds) before it trains.

    Parameters
    ----------
    site
        The site's name (for messages).
    budget
        Its ``(ε, δ)`` and clipping norm.
    n_rows, batch_size, epochs
        Its training rows, the expected batch size and local epochs per round
        (:func:`private_schedule`).
    rounds
        Rounds the noise is planned for.
    noise_multiplier
        A fixed ``σ`` instead of the calibrated one.
    ledger
        The steps it took in earlier rounds (a restored client).

    Raises
    ------
    ConfigError
        If ``rounds`` rounds at the given noise multiplier exceed the budget.
    """

    def __init__(
        self,
        site: str,
        budget: DPBudget,
        *,
        n_rows: int,
        batch_size: int,
        epochs: int,
        rounds: int,
        noise_multiplier: float | None = None,
        ledger: PrivacyLedger | None = None,
    ) -> None:
        self.site = site
        self.budget = budget
        self.rounds = int(rounds)
        self.sample_rate, self.steps = private_schedule(n_rows, batch_size, epochs)
        planned = self.rounds * self.steps
        if noise_multiplier is None:
            noise_multiplier = budget.noise_multiplier(self.sample_rate, planned)
        self.noise_multiplier = float(noise_multiplier)
        self.ledger = ledger if ledger is not None else PrivacyLedger()
        whole = PrivacyLedger().epsilon(
            budget.delta, (self.noise_multiplier, self.sample_rate, planned)
        )
        if whole > budget.epsilon:
            raise ConfigError(
                f"site {site!r}: {self.rounds} rounds of DP-SGD at noise multiplier "
                f"{self.noise_multiplier:g} spend ε = {whole:.3g} > dp_epsilon = "
                f"{budget.epsilon:g} (δ = {budget.delta:.3g}, {n_rows} rows); raise the noise "
                "multiplier or dp_epsilon, or train fewer rounds"
            )

    def next_round(self, rnd: int) -> PrivateSGD:
        """The DP-SGD settings of round ``rnd``, after checking that its steps keep the
        site within its budget.

        Raises
        ------
        ConfigError
            If they would not (before the site trains the round).
        """
        if not self.ledger.allows(self.budget, self.noise_multiplier, self.sample_rate, self.steps):
            after = self.ledger.epsilon(
                self.budget.delta, (self.noise_multiplier, self.sample_rate, self.steps)
            )
            raise ConfigError(
                f"site {self.site!r}: training round {rnd} would spend ε = {after:.3g} > "
                f"dp_epsilon = {self.budget.epsilon:g} (δ = {self.budget.delta:.3g}; "
                f"{self.epsilon:.3g} spent so far); the site refuses: stop the run here, or "
                "start a new run with a larger budget"
            )
        return PrivateSGD(self.noise_multiplier, self.budget.max_grad_norm)

    def record_round(self) -> float:
        """Record the steps of a round just trained; the ε spent so far."""
        self.ledger.record(self.noise_multiplier, self.sample_rate, self.steps)
        return self.epsilon

    @property
    def epsilon(self) -> float:
        """ε spent so far at the budget's δ."""
        return self.ledger.epsilon(self.budget.delta)


def spent_epsilons(replies: Iterable[tuple[str, Mapping[str, float]]]) -> dict[str, float]:
    """A round's record of the ε each DP-SGD site reports having spent so far
    (``dp_epsilon_<site>``) from ``(site, reply metrics)`` pairs; sites whose reply
    carries no ``epsilon`` (no DP) give nothing."""
    spent: dict[str, float] = {}
    for site, metrics in replies:
        if "epsilon" in metrics:
            key = f"dp_epsilon_{site}"
            spent[key] = max(spent.get(key, 0.0), float(metrics["epsilon"]))
    return spent


def epsilon_report(
    history: Sequence[Mapping[str, float]], sites: Iterable[str]
) -> dict[str, float]:
    """A run's metrics for DP-SGD: the ε each site spent over the run
    (``dp_epsilon_<site>``: the largest it reported, 0 for a site that never trained)
    and their maximum (``dp_epsilon_max``)."""
    spent = {
        f"dp_epsilon_{site}": max(
            (float(h[f"dp_epsilon_{site}"]) for h in history if f"dp_epsilon_{site}" in h),
            default=0.0,
        )
        for site in sites
    }
    return {**spent, "dp_epsilon_max": max(spent.values(), default=0.0)}
