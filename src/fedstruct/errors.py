"""The exceptions fedstruct raises for bad input.

Every message is one line that names the culprit (the client, the variable, the
file, the key) and says how to fix it. The command line prints the message and
exits with code 2 for any :class:`FedstructError`.

The classes also derive from the matching built-in exception (``ValueError``,
``KeyError``-like lookups stay ``ValueError``), so ``except ValueError`` keeps
working for callers that do not know fedstruct.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = [
    "ArtifactError",
    "CheckpointError",
    "ConfigError",
    "CyclicGraphError",
    "DataError",
    "DeploymentError",
    "FedstructError",
    "FedstructWarning",
    "GraphError",
    "KnowledgeError",
    "NoAnswerError",
    "NonFiniteDataError",
    "NotFittedError",
    "PartitionError",
    "PrivacyViolationError",
    "ProtocolError",
    "SampleSizeError",
    "SecureAggregationError",
    "UnknownNetworkError",
    "UnknownVariableError",
    "unknown_choice_message",
]


class FedstructError(Exception):
    """Base class of every error fedstruct raises on bad input."""


class FedstructWarning(UserWarning):
    """Input fedstruct accepts but that is likely a mistake (e.g. two sites coding one
    column with different level names); the command line prints it as one line."""


class ConfigError(FedstructError, ValueError):
    """A configuration key or value is not valid (unknown key, wrong type, out of range)."""


class DataError(FedstructError, ValueError):
    """A data set, a client's data or a sampling request is not valid."""


class NonFiniteDataError(DataError):
    """A client's data holds NaN or infinite values."""


class UnknownVariableError(DataError):
    """A variable name is not known where it is used (a client, a graph, a federation)."""


class SampleSizeError(DataError):
    """A sample count is zero, negative or otherwise unusable."""


class PartitionError(DataError):
    """Data cannot be split over clients as requested."""


class UnknownNetworkError(DataError):
    """A benchmark network name is not one that fedstruct ships."""


class KnowledgeError(ConfigError):
    """A background-knowledge file or object is not valid: a wrong type, an unknown
    variable, or statements that contradict each other (a cycle of required edges, a
    required edge against the tiers or a forbidden one)."""


class GraphError(FedstructError, ValueError):
    """A graph is malformed (bad marks, asymmetric edges, duplicate names)."""


class CyclicGraphError(GraphError):
    """A graph has a directed cycle where a DAG is required."""


class ProtocolError(FedstructError, ValueError):
    """A federated message breaks the protocol (unknown kind, bad payload types)."""


class SecureAggregationError(ProtocolError):
    """A secure-aggregation round cannot complete: more clients dropped out than its
    threshold tolerates, too few took part to hide each one, or a value is beyond the
    fixed-point range (the run resumes from its last checkpoint)."""


class PrivacyViolationError(FedstructError):
    """A message would carry rows of a client's data, or more entries than declared."""


class DeploymentError(FedstructError):
    """A distributed deployment cannot run: a SuperLink out of reach, a refused node."""


class NoAnswerError(FedstructError):
    """No client answered in any round of a run: nothing was learned from the clients."""


class CheckpointError(FedstructError):
    """A checkpoint is missing, unreadable, or belongs to a different run."""


class ArtifactError(FedstructError, ValueError):
    """A run folder's saved model cannot be used: missing, from a newer fedstruct,
    changed or truncated, or given input that does not match its schema."""


class NotFittedError(FedstructError, ValueError, AttributeError):
    """An estimator was asked for what it learns (``predict``, ``score``, a learned
    attribute such as ``model_``) before ``fit`` or ``fedstruct.load``. Like
    scikit-learn's ``NotFittedError``, it is a ``ValueError`` and an
    ``AttributeError`` (so ``hasattr(model, "model_")`` stays false)."""


def unknown_choice_message(
    what: str, value: object, valid: Iterable[object], *, suggest: bool = False
) -> str:
    """Format the one-line message for a value that is not among the valid choices.

    Parameters
    ----------
    what
        What the value names, e.g. ``"network"``.
    value
        The value given.
    valid
        The valid choices; they are listed, sorted, in the message.
    suggest
        Name the closest valid choice, if one is close (a likely typo):
        ``unknown fedcd parameter 'roundz' (did you mean 'rounds'?); valid ...``.

    Returns
    -------
    str
        ``unknown network 'nosuch'; valid networks: alarm, asia, ...``.
    """
    names = sorted(str(v) for v in valid)
    close = difflib.get_close_matches(str(value), names, n=1) if suggest else []
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown {what} {value!r}{hint}; valid {what}s: {', '.join(names)}"
