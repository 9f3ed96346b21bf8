"""Matrix products of the discrete tests on one BLAS thread."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

__all__ = ["one_blas_thread"]

_BLAS: list = []  # the threadpoolctl controller, made on first use


def one_blas_thread() -> AbstractContextManager:
    """Run the enclosed matrix products on one BLAS thread.

    They are products of a few hundred columns: OpenBLAS' threads cost more than they
    give there (10,000 x 280 on the 2-core machine: 130 ms with 2 threads, 9.5 ms
    with 1), and the Possible-D-SEP phase uses the cores with processes instead.
    A no-op without ``threadpoolctl`` (installed with scikit-learn).
    """
    if not _BLAS:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - scikit-learn brings it
            _BLAS.append(None)
        else:
            _BLAS.append(ThreadpoolController())
    controller = _BLAS[0]
    return nullcontext() if controller is None else controller.limit(limits=1, user_api="blas")
