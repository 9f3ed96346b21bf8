"""A mixed-type model with linear-Gaussian continuous variables and a known DAG.

:class:`ConditionalGaussianSCM` samples a DAG whose variables are ``real`` or
``categorical`` (``binary`` for two categories):

- a ``real`` variable is linear in its parents plus Gaussian noise, so given its
  parents it is Gaussian with a mean shifted by each categorical parent's category
  (the conditional-Gaussian form of Lauritzen & Wermuth 1989, as in Andrews, Ramsey &
  Cooper 2019, §5, "categorical parents shift continuous children's means"):
  ``x = c (s - m) + sqrt(1 - r²) ε``, ``s = Σ_p w_p x_p + Σ_q e_q[code_q]`` with
  ``w_p = ±U(0.5, 1.5)`` for a real parent and per-category offsets ``e_q ~ N(0, 1)``
  for a categorical one; ``c`` and ``m`` (fixed on a pilot sample) give the signal
  mean 0 and variance ``r² ~ U(r2_range)``, so ``Var x ≈ 1``. A root is ``N(0, 1)``.
- a ``categorical`` variable with ``k`` categories is multinomial-logistic in its
  parents: ``P(x = c) = softmax(β + Σ_p u_p x_p + Σ_q G_q[code_q])_c`` with
  ``β ~ N(0, 0.5²)``, ``u_p ~ N(0, γ²)`` per category and ``G_q ~ N(0, γ²)`` per parent
  category and category.

Unlike :class:`~fedstruct.data.mixed.MixedSCM` (monotone non-linear mechanisms),
every continuous mechanism here is linear, the setting of the mixed-data CI tests of
Andrews et al. (2019); benchmarks/mixed_ci.py and tests/discovery/test_degenerate.py
use it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from fedstruct.data._shared import SeedLike, check_sample_size, make_rng, softmax
from fedstruct.data.checks import integer_at_least
from fedstruct.data.discrete import UNIFORM, inverse_cdf
from fedstruct.data.mixed import MixedDataset, check_model_settings
from fedstruct.errors import ConfigError, UnknownVariableError
from fedstruct.graphs.graph import Graph
from fedstruct.graphs.undirected import moral_graph

__all__ = ["ConditionalGaussianSCM"]


class ConditionalGaussianSCM:
    """Linear-Gaussian continuous and logistic categorical variables on a DAG.

    Parameters
    ----------
    dag
        The causal DAG.
    kinds
        Every variable's kind: ``"real"``, ``"binary"`` or ``"categorical"``.
    seed
        Seed of the parameters and of the pilot sample.
    n_categories
        Categories of a ``categorical`` variable (>= 3).
    r2_range
        Range of the share of a real variable's variance its parents explain.
    logit_scale
        ``γ``, the standard deviation of the logistic weights.
    pilot_size
        Rows of the pilot sample that fixes the real variables' scales.

    Raises
    ------
    GraphError, CyclicGraphError
        If ``dag`` is not a DAG.
    UnknownVariableError
        If ``kinds`` misses a variable or names one the DAG does not have.
    ConfigError
        For an unknown kind or an out-of-range setting.
    """

    def __init__(
        self,
        dag: Graph,
        kinds: Mapping[str, str],
        *,
        seed: SeedLike,
        n_categories: int = 3,
        r2_range: tuple[float, float] = (0.3, 0.6),
        logit_scale: float = 1.0,
        pilot_size: int = 20_000,
    ) -> None:
        checked, (lo, hi) = check_model_settings(
            dag,
            kinds,
            r2_range,
            what="the conditional-Gaussian model's graph",
            allowed=("real", "binary", "categorical"),
        )
        if not logit_scale > 0:
            raise ConfigError(f"logit_scale is {logit_scale}; give a positive number")
        k = integer_at_least(n_categories, "n_categories", 3)
        self.dag = dag
        self.kinds = checked
        self.cardinalities = {
            v: (2 if kind == "binary" else k) for v, kind in self.kinds.items() if kind != "real"
        }
        rng = make_rng(seed)
        index = {v: i for i, v in enumerate(dag.names)}
        self._order = [index[v] for v in dag.topological_order()]
        self._parents = [tuple(index[p] for p in dag.parents(v)) for v in dag.names]
        self._params = [self._draw(j, rng, (lo, hi), logit_scale) for j in range(len(index))]
        self._affine: dict[int, tuple[float, float]] = {}
        self._forward(integer_at_least(pilot_size, "pilot_size", 100), rng, calibrate=True)

    def _card(self, j: int) -> int:
        return self.cardinalities.get(self.dag.names[j], 0)

    def _draw(
        self, j: int, rng: np.random.Generator, r2: tuple[float, float], gamma: float
    ) -> dict[str, object]:
        """The random parameters of variable ``j``'s mechanism."""
        weights: list[NDArray[np.float64]] = []
        k = self._card(j)
        for p in self._parents[j]:
            kp = self._card(p)
            if k == 0 and kp == 0:
                sign = rng.choice([-1.0, 1.0])
                weights.append(np.array([sign * rng.uniform(0.5, 1.5)]))
            elif k == 0:
                weights.append(rng.standard_normal(kp))
            elif kp == 0:
                weights.append(rng.normal(0.0, gamma, k))
            else:
                weights.append(rng.normal(0.0, gamma, (kp, k)))
        return {
            "weights": weights,
            "r2": float(rng.uniform(*r2)),
            "intercept": rng.normal(0.0, 0.5, k) if k else None,
        }

    def _forward(
        self,
        n: int,
        rng: np.random.Generator,
        *,
        calibrate: bool,
        fixed: Mapping[int, float | None] | None = None,
    ) -> NDArray[np.float64]:
        """``n`` rows in the DAG's order; ``fixed``: variable index -> its intervened
        value, or ``None`` for a uniform intervention (:meth:`sample`)."""
        d = len(self._parents)
        values = np.empty((n, d))
        eps = rng.standard_normal((n, d))
        u = rng.random((n, d))
        fixed = fixed or {}
        for j in self._order:
            params = self._params[j]
            k = self._card(j)
            if j in fixed:
                value = fixed[j]
                uniform = np.floor(u[:, j] * k) if k else eps[:, j]
                values[:, j] = uniform if value is None else value
                continue
            parts = []
            for p, w in zip(self._parents[j], params["weights"], strict=True):  # type: ignore[call-overload]
                if self._card(p):
                    parts.append(w[values[:, p].astype(np.int64)])
                elif k:
                    parts.append(values[:, p, None] * w)
                else:
                    parts.append(values[:, p] * w[0])
            if k:
                logits = params["intercept"] + sum(parts, np.zeros((n, k)))  # type: ignore[operator]
                cum = np.cumsum(softmax(logits), axis=1)
                cum[:, -1] = 1.0
                values[:, j] = inverse_cdf(cum, u[:, j])
                continue
            signal = sum(parts, np.zeros(n))
            if calibrate:
                sd = float(signal.std())
                scale = np.sqrt(params["r2"]) / sd if sd > 1e-12 else 0.0  # type: ignore[operator]
                self._affine[j] = (float(scale), float(signal.mean()))
            scale, shift = self._affine[j]
            noise = np.sqrt(1.0 - params["r2"]) if scale > 0.0 else 1.0  # type: ignore[operator]
            values[:, j] = scale * (signal - shift) + noise * eps[:, j]
        return values

    def _interventions(self, given: Mapping[str, object]) -> dict[int, float | None]:
        """``{variable: value}`` as ``{index: value or None (uniform)}`` (:meth:`sample`)."""
        names = list(self.dag.names)
        out: dict[int, float | None] = {}
        for variable, value in given.items():
            if variable not in names:
                raise UnknownVariableError(
                    f"cannot intervene on {variable!r}: the model's variables are {names}"
                )
            j, k = names.index(variable), self.cardinalities.get(variable, 0)
            if isinstance(value, str) and value == UNIFORM:
                out[j] = None
            elif isinstance(value, int | float) and (not k or value in range(k)):
                out[j] = float(value)
            else:
                states = f"a code 0..{k - 1}" if k else "a number"
                raise ConfigError(
                    f"intervention on {variable!r}: value {value!r}; give {states} or 'uniform'"
                )
        return out

    def sample(
        self, n: int, *, seed: SeedLike, interventions: Mapping[str, object] | None = None
    ) -> MixedDataset:
        """``n`` rows: real columns ``float64``, categorical ones ``int64`` codes.

        The data set's ``graph`` is the DAG's moral graph (its conditional-independence
        graph); the DAG itself is :attr:`dag`.

        Parameters
        ----------
        n
            Rows.
        seed
            Seed of the draws.
        interventions
            Perfect interventions, variable -> value: a number sets the variable to it
            (a category code for a categorical one); ``"uniform"`` cuts it from its
            parents and draws it at random, its categories equally likely, or a real
            one ``N(0, 1)``, its observational scale (a stochastic perfect
            intervention, as ENCO's and FED-CD's interventional data, Lippe et al.
            2021, §4.1). The other variables' draws are those of the same seed
            without the intervention.

        Raises
        ------
        UnknownVariableError
            If an intervention names a variable the DAG does not have.
        ConfigError
            If a value is neither ``"uniform"`` nor a number (a category code of a
            categorical variable).
        """
        n = check_sample_size(n)
        fixed = self._interventions(interventions or {})
        values = self._forward(n, make_rng(seed), calibrate=False, fixed=fixed)
        columns = {
            v: values[:, j].astype(np.int64) if kind != "real" else values[:, j]
            for j, (v, kind) in enumerate(self.kinds.items())
        }
        return MixedDataset(
            pd.DataFrame(columns),
            kinds=dict(self.kinds),
            cardinalities=dict(self.cardinalities),
            graph=moral_graph(self.dag),
            name="conditional-gaussian",
        )
