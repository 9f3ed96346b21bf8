"""Inference in an NGM: predict unknown variables from evidence (NGM paper, §3.2).

Both of the NGM paper's procedures:

* ``"message"`` (default): fix the evidence, start the unknowns at their marginal
  means (category frequencies for one-hot groups), then repeatedly replace the
  unknowns by the model's prediction until they stop moving — message passing over
  the neural view. More stable than the gradient variant (METHODS.md).
* ``"gradient"``: treat the unknown inputs as free parameters and minimise the
  regression loss on the evidence columns, ``‖x_E - f(x)_E‖²``, by Adam; the answer
  is ``f(x)`` on the unknown columns.
"""

from __future__ import annotations

import numpy as np
import torch
from numpy.typing import NDArray

from fedstruct.methods.fedngm.network import NeuralView
from fedstruct.methods.fedngm.schema import Schema
from fedstruct.methods.fedngm.train import _Columns, output_transform, regression_loss

__all__ = ["infer"]

#: Message passing stops when no unknown encoded value moves by more than this.
TOLERANCE = 1e-4


def infer(
    view: NeuralView,
    schema: Schema,
    x: NDArray[np.float32],
    known: NDArray[np.bool_],
    *,
    method: str = "message",
    steps: int = 20,
    learning_rate: float = 0.1,
) -> NDArray[np.float32]:
    """Complete encoded rows ``x`` whose columns ``known`` hold evidence.

    Parameters
    ----------
    view, schema
        The model.
    x
        ``(n, D)`` encoded rows; unknown columns are overwritten.
    known
        ``(D,)`` mask of evidence columns (a variable's whole group at once).
    method, steps
        ``"message"`` (iterations) or ``"gradient"`` (Adam steps).
    learning_rate
        Step size of the gradient variant.

    Returns
    -------
    ndarray
        The completed rows: evidence unchanged, unknown continuous columns predicted
        (standardised scale), unknown one-hot groups as probabilities.
    """
    known_t = torch.as_tensor(np.asarray(known, dtype=bool))
    start = torch.as_tensor(np.where(known, x, schema.initial(len(x))), dtype=torch.float32)
    if known.all():
        return start.numpy()
    with torch.no_grad():
        if method == "message":
            cur = start
            for _ in range(steps):
                pred = output_transform(view(cur), schema)
                nxt = torch.where(known_t, cur, pred)
                moved = float((nxt - cur).abs().max())
                cur = nxt
                if moved < TOLERANCE:
                    break
            return cur.numpy()
    return _gradient(view, schema, start, known_t, steps, learning_rate)


def _gradient(
    view: NeuralView,
    schema: Schema,
    start: torch.Tensor,
    known: torch.Tensor,
    steps: int,
    learning_rate: float,
) -> NDArray[np.float32]:
    """The gradient variant (see the module docstring)."""
    cols = _Columns(schema)
    on_evidence = torch.tensor([float(bool(known[schema.groups[i]].all())) for i in cols.order])
    free = start.clone().requires_grad_(True)
    opt = torch.optim.Adam([free], lr=learning_rate)
    for _ in range(steps):
        opt.zero_grad()
        x = torch.where(known, start, free)
        loss = (regression_loss(view(x), x, cols, per_variable=True) * on_evidence).sum()
        loss.backward()
        opt.step()
    with torch.no_grad():
        x = torch.where(known, start, free)
        pred = output_transform(view(x), schema)
        return torch.where(known, start, pred).numpy()
