"""A run's background knowledge: checked against the run's variables, saved with it.

``fedstruct run METHOD --knowledge FILE`` (the methods that learn or take a graph:
docs/knowledge.md) reads the file here, checks its names and consistency against the
variables the run learns over before anything is fitted, and writes it to the run
folder as knowledge.json (which ``fedstruct show`` prints, with a one-line warning if
the file does not fit the graph shown: :func:`saved_knowledge_problem`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fedstruct.discovery.knowledge import KNOWLEDGE_FILE, Knowledge, load_knowledge
from fedstruct.errors import KnowledgeError

__all__ = ["save_knowledge", "saved_knowledge_problem"]


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


def saved_knowledge_problem(knowledge: Knowledge, names: Sequence[str]) -> str | None:
    """What is wrong with a run folder's knowledge.json against the graph over
    ``names`` that ``fedstruct show`` prints, in one clause (``None``: nothing): the
    variables it names that the graph lacks (a run checks them against its variables,
    so such a file was edited, copied from another run, or names columns the run left
    out), and the contradictions among its statements over the graph's variables."""
    problems = []
    unknown = sorted(knowledge.names() - set(names))
    if unknown:
        shown = ", ".join(unknown[:5]) + (
            f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        )
        problems.append(f"it names {shown}, not variables of this graph")
    try:
        knowledge.within(tuple(names)).resolve(tuple(names))
    except KnowledgeError as err:
        problems.append(f"it contradicts itself ({str(err).removeprefix('knowledge: ')})")
    return "; ".join(problems) or None
