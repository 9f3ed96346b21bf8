"""A run's background knowledge: checked against the run's variables, saved with it.

``fedstruct run METHOD --knowledge FILE`` (the methods that learn or take a graph:
docs/knowledge.md) reads the file here, checks its names and consistency against the
variables the run learns over before anything is fitted, and writes it to the run
folder as knowledge.json (which ``fedstruct show`` prints).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fedstruct.discovery.knowledge import KNOWLEDGE_FILE, Knowledge, load_knowledge

__all__ = ["save_knowledge"]


def save_knowledge(
    value: Knowledge | str | Path | None, variables: Sequence[str] | None, out: Path
) -> Knowledge | None:
    """Read ``value`` (a file path or a Knowledge), check it against ``variables``
    (``None``: the names are checked where the method meets the data) and write it
    to ``out / knowledge.json``; ``None`` without knowledge.

    Raises
    ------
    KnowledgeError, UnknownVariableError
        For a bad file, an unknown name or a contradiction (one line).
    """
    knowledge = load_knowledge(value)
    if knowledge is None:
        return None
    if variables is not None:
        knowledge.resolve(tuple(variables))
    knowledge.write(out / KNOWLEDGE_FILE)
    return knowledge
