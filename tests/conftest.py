"""Suite-wide pytest hooks."""

from __future__ import annotations

import torch


def pytest_report_header() -> str:
    """Say which torch kernels and thread count ran: trained numbers depend on them."""
    return (
        f"torch {torch.__version__}: CPU kernels {torch.backends.cpu.get_cpu_capability()}, "
        f"{torch.get_num_threads()} threads (make test-cpus runs the other settings)"
    )
