"""Hyper-parameters of CAFE and of the baselines that run on its harness.

CAFE's formulas were lost from the paper's text; the defaults below follow the
reconstruction in ``METHODS.md § CAFE`` (built on Tang, Huang & Zhang 2020, "Long-
tailed classification by keeping the good and removing the bad momentum causal
effect"). Every ambiguous choice is a parameter; ``docs/cafe.md`` explains each.
The baselines keep their published defaults: FedProx (Li et al. 2020), MOON (Li, He
& Song 2021), FedProto (Tan et al. 2022).
"""

from __future__ import annotations

from dataclasses import dataclass

from fedstruct.constraints import Interval, OneOf, check_fields
from fedstruct.errors import ConfigError
from fedstruct.fl.device import AUTO, DeviceName
from fedstruct.privacy.settings import CentralDPSettings, DPSGDSettings

__all__ = [
    "ALGORITHMS",
    "BACKBONES",
    "CATEGORICAL_IMPUTATIONS",
    "CENTRAL_DP_REFUSALS",
    "DP_REFUSALS",
    "CafeConfig",
    "continuous_target_message",
]

#: The algorithms the harness runs: CAFE and its four baselines (§VI-A).
ALGORITHMS = ("cafe", "fedavg", "fedprox", "moon", "fedproto")
#: The algorithms that refuse DP-SGD, and why: what they upload besides the weights
#: is computed from the rows outside DP-SGD, which protects only the weights.
DP_REFUSALS = {
    "cafe": "its upload carries the local drift d_l, a mean of its rows' features that "
    "DP-SGD does not protect",
    "fedproto": "its upload is the class prototypes, means of its rows' features that "
    "DP-SGD does not protect (its weights never leave the site)",
}
#: The algorithms that refuse central DP, and why: the server's step must be a
#: post-processing of the noised sum of clipped weight updates (docs/privacy.md).
CENTRAL_DP_REFUSALS = {
    "cafe": "its upload also carries the local drift d_l (a mean of its rows' features), "
    "whose unclipped, un-noised sum forms the released drift d_g",
    "fedproto": "it shares no weights: its upload is the class prototypes (means of its "
    "rows' features), which no clipped weight update bounds",
}
#: Feature extractors: a small CNN (8x8, 28x28 and 32x32 inputs) or an MLP; ``auto``:
#: the CNN for images, the MLP for a table's rows (:mod:`.networks`).
BACKBONES = ("auto", "cnn", "mlp")
#: What a missing categorical value of a table becomes (:mod:`fedstruct.fl.features`'
#: choices, named here so that a run's settings import no torch).
CATEGORICAL_IMPUTATIONS = ("missing-level", "mode")


@dataclass(frozen=True)
class CafeConfig(CentralDPSettings, DPSGDSettings):
    """Every hyper-parameter of the drift-aware classification harness.

    DP-SGD at the sites (``dp_*``) and central DP on the aggregate
    (``central_dp_*``) are the shared settings of :class:`DPSGDSettings` and
    :class:`CentralDPSettings` (:mod:`fedstruct.privacy.settings`), which declare,
    document and check them; as base classes, their fields come first. Only
    ``fedavg``, ``fedprox`` (whose proximal term, free of the rows, is added to the
    noised gradient) and ``moon`` take them: ``cafe`` and ``fedproto`` refuse
    DP-SGD (:data:`DP_REFUSALS`) and central DP (:data:`CENTRAL_DP_REFUSALS`).
    Under central DP every site clips its update ``Δ_k``, the server divides the
    noised sum by the number of sites asked (uniform weights, not ``n_k``) and
    steps ``θ ← θ + η_g Δ``; late updates are ignored (the estimator refuses
    ``staleness_exponent`` when clients report late).

    Parameters
    ----------
    algorithm
        ``"cafe"`` or a baseline: ``"fedavg"``, ``"fedprox"``, ``"moon"`` (the three
        that take DP-SGD and central DP) or ``"fedproto"``.
    rounds
        Communication rounds (the paper: 300; §VI-A).
    local_epochs
        Local passes per round (the paper: 5, also 10 and 20; Table IV).
    batch_size
        Images per step of local SGD with momentum ("MGD", §VI-A).
    learning_rate
        Step size of local SGD (the paper's 0.001 is for 300 rounds of a larger
        network; ours defaults to 0.01 for 100 rounds).
    momentum
        Momentum of local SGD.
    weight_decay
        L2 weight decay of local SGD.
    backbone
        The feature extractor: ``"cnn"``, ``"mlp"`` or ``"auto"`` (the CNN for images,
        the MLP for a table's encoded rows, which are vectors).
    feature_dim
        Width of the feature vector the backbone emits.
    heads
        K, heads of the cosine classifier; ``feature_dim`` must be divisible by it.
    tau
        τ, the logit scale of the cosine classifier.
    gamma
        γ in the Parameter Calibration norm ``‖w‖ + γ``.
    local_drift_momentum
        μ, moving-average factor of a client's local drift direction d_l (the mean
        feature of its training batches).
    global_drift_momentum
        β_g, the server's moving-average factor of the global drift direction d_g.
    lambda_global
        λ_g: how much of a feature's projection on the global drift direction d_g
        Feature Calibration removes during training.
    lambda_local
        λ_l: how much of a feature's projection on the client's drift direction d_l
        Feature Calibration removes during training. METHODS.md reconstructs ``λ_l = 1``;
        the default is 0 because under Dir 0.1 a client's mean feature is nearly its
        one class's direction, and removing it erases what the client can learn
        (digits-LT, CF 0.1, 200 rounds, 2 seeds: accuracy 0.10-0.46 at λ_l = 1,
        0.80 at 0.3, 0.86 at 0; docs/cafe.md). ``d_l`` still forms ``d_g``.
    history_momentum
        β_h of the History-Aware Average ``v ← β_h v + (1-β_h) Δ`` (0 is FedAvg).
    server_learning_rate
        η_g in ``θ ← θ + η_g v``.
    tde_alpha
        α of drift-free (TDE) inference; 0 gives back the training logits.
    feature_calibration
        CAFE's Feature Calibration module; false is the paper's ablation "w/o FC".
    parameter_calibration
        CAFE's Parameter Calibration module; false is the paper's ablation "w/o PC".
    history_average
        CAFE's History-Aware Average; false is the paper's ablation "w/o HA".
    prox_mu
        FedProx's μ of ``(μ/2)‖w - θ^t‖²`` (Li et al. 2020 tune it in {0.001, 0.01,
        0.1, 1}; 0.01 is MOON's choice for FedProx).
    moon_mu
        MOON's loss weight μ (5 for 10-class sets; Li, He & Song 2021, §4).
    moon_temperature
        MOON's temperature of the contrastive loss (0.5).
    moon_projection
        Width of MOON's projection head (256).
    proto_lambda
        FedProto's λ on the distance to the global prototypes (Tan et al. 2022).
    staleness_exponent
        ``a`` of the weight ``n_k (1 + staleness)^-a`` of an update that arrives
        late (communication frequency, METHODS.md); ``None`` ignores late updates.
    eval_every
        Evaluate on the server's test set every this many rounds (and at the end).
    categorical_imputation
        On a table: how a missing categorical or ordinal value is imputed,
        ``"missing-level"`` (no level; its missing indicator acts as one) or
        ``"mode"`` (the federated mode); continuous values take the federated mean,
        both with a missing-indicator input (:mod:`fedstruct.fl.features`).
    test_fraction
        Share of each client's images it keeps out of training (drawn with the seed
        and its name, :func:`~fedstruct.fl.holdout_split`); after the last round the
        server sends the final model (FedProto: the prototypes, for the client's own
        model) and every available client answers how many of those images it
        classifies right (``CAFE.site_scores_``; scored where the images lie). 0
        (the paper's protocol, with a server-side test set): no site scoring.
    device
        Where the clients train: ``auto`` (a CUDA GPU when torch finds one, else
        the CPU), ``cpu``, ``cuda`` or ``cuda:N`` (:mod:`fedstruct.fl.device`;
        docs/runtime.md). Messages and saved models hold CPU arrays whatever it is.
    """

    algorithm: str = "cafe"
    rounds: int = 100
    local_epochs: int = 5
    batch_size: int = 32
    learning_rate: float = 0.01
    momentum: float = 0.9
    weight_decay: float = 5e-4
    backbone: str = "auto"
    feature_dim: int = 128
    heads: int = 2
    tau: float = 16.0
    gamma: float = 1.0 / 32.0
    local_drift_momentum: float = 0.9
    global_drift_momentum: float = 0.9
    lambda_global: float = 1.0
    lambda_local: float = 0.0
    history_momentum: float = 0.5
    server_learning_rate: float = 1.0
    tde_alpha: float = 1.0
    feature_calibration: bool = True
    parameter_calibration: bool = True
    history_average: bool = True
    prox_mu: float = 0.01
    moon_mu: float = 5.0
    moon_temperature: float = 0.5
    moon_projection: int = 256
    proto_lambda: float = 1.0
    staleness_exponent: float | None = 0.5
    eval_every: int = 10
    categorical_imputation: str = "missing-level"
    test_fraction: float = 0.0
    device: str = AUTO

    def __post_init__(self) -> None:
        check_fields(self, _CONSTRAINTS, "cafe")
        if self.feature_dim % self.heads:
            raise ConfigError(
                f"cafe feature_dim = {self.feature_dim} is not divisible by heads = "
                f"{self.heads}: the cosine classifier splits the feature vector into equal "
                "heads; choose heads that divide feature_dim"
            )
        if self.dp_epsilon is not None and self.algorithm in DP_REFUSALS:
            raise ConfigError(
                f"cafe algorithm {self.algorithm!r} cannot train with DP-SGD (dp_epsilon): "
                f"{DP_REFUSALS[self.algorithm]}; use fedavg, fedprox or moon with DP-SGD"
            )
        super().__post_init__()  # the DP settings' own checks
        if self.central_dp() is not None and self.algorithm in CENTRAL_DP_REFUSALS:
            raise ConfigError(
                f"cafe algorithm {self.algorithm!r} cannot take central DP (central_dp_noise): "
                f"{CENTRAL_DP_REFUSALS[self.algorithm]}; use fedavg, fedprox or moon with "
                "central DP"
            )

    @property
    def causal(self) -> bool:
        """Whether the model uses CAFE's causal classifier (else a linear one)."""
        return self.algorithm == "cafe"


_CONSTRAINTS = {
    "algorithm": OneOf(ALGORITHMS),
    "backbone": OneOf(BACKBONES),
    "categorical_imputation": OneOf(CATEGORICAL_IMPUTATIONS),
    **dict.fromkeys(
        (
            "rounds",
            "local_epochs",
            "batch_size",
            "feature_dim",
            "heads",
            "moon_projection",
            "eval_every",
        ),
        Interval(int, 1),
    ),
    **dict.fromkeys(
        ("learning_rate", "tau", "server_learning_rate", "moon_temperature"),
        Interval(float, 0, closed="neither"),
    ),
    **dict.fromkeys(
        ("momentum", "local_drift_momentum", "global_drift_momentum", "history_momentum"),
        Interval(float, 0, 1, closed="left"),
    ),
    **dict.fromkeys(
        (
            "weight_decay",
            "gamma",
            "lambda_global",
            "lambda_local",
            "tde_alpha",
            "prox_mu",
            "moon_mu",
            "proto_lambda",
        ),
        Interval(float, 0),
    ),
    "staleness_exponent": Interval(float, 0, allow_none=True),
    "test_fraction": Interval(float, 0, 1, closed="left"),
    "device": DeviceName(),
}


def continuous_target_message(target: str) -> str:
    """What to say when a table's class column is continuous."""
    return (
        f"CAFE classifies, and its target {target!r} is continuous: pick a categorical "
        f"or ordinal column, or, if the values of {target!r} are class codes, declare it "
        f"with --set kinds.{target}=categorical"
    )
