"""A training step recorded once as a CUDA graph, then replayed (issue 35).

At the sizes of ENCO's networks (d = 20, batches of 128) one training step is some
180 small operations; dispatched one at a time from Python, their launches take
longer than the GPU's arithmetic, so the GPU idles (docs/benchmarks.md, "GPU"). A
CUDA graph (``torch.cuda.CUDAGraph``) records the kernels of one step once; each
later step is one replay of that record, with no Python, dispatcher or launch cost
per operation.

A step recorded here must keep to the rules of CUDA graphs:

* it reads and writes only tensors that stay where they are: parameters, optimiser
  states (an optimiser built with ``capturable=True``) and input buffers the caller
  refills in place (``buffer.copy_(new)``) before each call;
* its shapes and its Python control flow are the same at every call;
* it never waits for the GPU (no ``.item()``, no host copy, no boolean indexing);
* its random draws come from the CUDA generators it is given: each replay advances
  them, so every step draws new numbers (they differ from the op-by-op run's, like
  another seed's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

__all__ = ["ReplayedStep"]


class ReplayedStep:
    """``step()`` run op by op ``warmup`` times, then recorded once and replayed.

    Parameters
    ----------
    step
        One training step, a function of no arguments that keeps the rules of this
        module's docstring.
    generators
        The CUDA generators ``step`` draws from (registered with the recording).
    warmup
        Calls run op by op, on a side stream, before the recording (CUDA graphs need
        lazily built state, such as optimiser moments and library handles, to exist
        before recording). They are real steps: no step is skipped or repeated.

    Examples
    --------
    >>> train = ReplayedStep(one_step, [generator])  # doctest: +SKIP
    >>> for batch in batches:  # doctest: +SKIP
    ...     rows.copy_(batch)
    ...     train()
    """

    def __init__(
        self,
        step: Callable[[], None],
        generators: Sequence[torch.Generator] = (),
        warmup: int = 2,
    ) -> None:
        self._step = step
        self._generators = tuple(generators)
        self._warmup = warmup
        self._graph: torch.cuda.CUDAGraph | None = None

    @property
    def recorded(self) -> bool:
        """Whether the step has been recorded (later calls replay it)."""
        return self._graph is not None

    def __call__(self) -> None:
        """Run one step: op by op while warming up, then recorded, then replayed."""
        if self._graph is not None:
            self._graph.replay()
        elif self._warmup > 0:
            self._warmup -= 1
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                self._step()
            torch.cuda.current_stream().wait_stream(side)
        else:
            graph = torch.cuda.CUDAGraph()
            for generator in self._generators:
                graph.register_generator_state(generator)
            with torch.cuda.graph(graph):
                self._step()
            graph.replay()  # recording ran nothing: this replay is the step
            self._graph = graph
