"""Reading the files a user names, safely: regular files of bounded size, parsed as
plain data with bounded nesting.

Every file fedstruct reads on a user's word (a knowledge file, a settings file, a run's
own JSON records) goes through :func:`read_text` or :func:`read_bytes` (a file of any
size whose content is only digested, such as a run's input: :func:`file_digest`), and
YAML or JSON text through :func:`parse_yaml` or :func:`parse_json`:

- only a **regular file** is read: a FIFO, a device (``/dev/zero``), a socket or a
  folder is refused in one line before a byte is read. The file is opened without
  blocking and checked on the open descriptor, so a FIFO never blocks and a link to a
  device is caught after the link is followed;
- a file **larger than its limit** is refused, and never more than ``limit + 1`` bytes
  are read (a file that grows while it is read is caught too);
- YAML is read as plain data (PyYAML's safe loader, no object tags) with three more
  rules: **aliases** (``*name``) are refused, so a small file cannot expand into
  gigabytes ("billion laughs"); **numbers** follow YAML 1.2 (``1e-5``, ``1e30`` and
  ``1.0e6`` are floats, where YAML 1.1 reads them as strings); a **key given twice**
  in one mapping is refused (YAML 1.2 forbids it; PyYAML keeps the last in silence);
- JSON refuses a key given twice in one object too (Python keeps the last);
- nesting deeper than :data:`MAX_DEPTH` is refused in one line (not a
  ``RecursionError``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from fedstruct.errors import ConfigError, FedstructError

__all__ = [
    "MAX_DEPTH",
    "TEXT_LIMIT",
    "describe_mode",
    "file_digest",
    "parse_json",
    "parse_yaml",
    "parse_yaml_scalar",
    "read_bytes",
    "read_text",
    "regular_file_error",
]

#: The largest text file (settings, knowledge, a run's JSON records) read by default:
#: 16 MiB, thousands of times what any of them holds.
TEXT_LIMIT = 16 * 1024 * 1024
#: The deepest nesting of lists and mappings accepted in a YAML or JSON file.
MAX_DEPTH = 64

ErrorType = type[FedstructError]
T = TypeVar("T")


def describe_mode(mode: int) -> str:
    """What a file of ``os.stat`` mode ``mode`` is, when it is not a regular file."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def regular_file_error(path: str | Path, what: str) -> str | None:
    """Why ``path`` cannot be read as ``what`` (missing, or not a regular file), or
    ``None`` when it is a regular file. Does not open the file, so it never blocks."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return f"{what} {path} does not exist; check the path"
    except OSError as err:
        return f"{what} {path} cannot be read: {err.strerror}"
    if not stat.S_ISREG(mode):
        return f"{what} {path} is {describe_mode(mode)}; give a regular file"
    return None


def read_bytes(
    path: str | Path, what: str, *, limit: int = TEXT_LIMIT, error: ErrorType = ConfigError
) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Parameters
    ----------
    path
        The file.
    what
        What the file is, for messages (``"knowledge file"``).
    limit
        The largest size accepted, in bytes.
    error
        The exception raised (a :class:`~fedstruct.errors.FedstructError` subclass).

    Raises
    ------
    FedstructError
        ``error``: the file is missing, unreadable, not a regular file (a FIFO, a
        device, a folder) or larger than ``limit``.
    """
    data = _read_regular(path, what, error, lambda handle: handle.read(limit + 1))
    if len(data) > limit:
        raise error(
            f"{what} {path} is larger than {_size(limit)}, the most accepted; is it the right file?"
        )
    return data


def file_digest(path: str | Path, what: str, *, error: ErrorType = ConfigError) -> str:
    """The SHA-256 (hex) of the regular file ``path``'s content, read in blocks (a file of
    any size, never held whole).

    Raises
    ------
    FedstructError
        ``error``: the file is missing, unreadable or not a regular file.
    """

    def digest(handle: BinaryIO) -> str:
        return hashlib.file_digest(handle, "sha256").hexdigest()

    return _read_regular(path, what, error, digest)


def _read_regular(
    path: str | Path, what: str, error: ErrorType, read: Callable[[BinaryIO], T]
) -> T:
    """``read`` applied to the regular file ``path`` opened for binary reading. The file
    is opened without blocking and checked on the open descriptor (a FIFO, a device or
    a folder is refused before a byte is read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise error(f"{what} {path} does not exist; check the path") from None
    except IsADirectoryError:
        raise error(f"{what} {path} is a folder; give a regular file") from None
    except OSError as err:
        raise error(f"{what} {path} cannot be opened: {err.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{what} {path} is {describe_mode(mode)}; give a regular file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return read(handle)
    except OSError as err:
        raise error(f"{what} {path} cannot be read: {err.strerror}") from None
    finally:
        os.close(fd)


def read_text(
    path: str | Path, what: str, *, limit: int = TEXT_LIMIT, error: ErrorType = ConfigError
) -> str:
    """:func:`read_bytes` decoded as UTF-8 (a one-line ``error`` if it is not)."""
    data = read_bytes(path, what, limit=limit, error=error)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise error(
            f"{what} {path} is not UTF-8 text (byte {err.start}); save it as UTF-8"
        ) from None


def _size(n: int) -> str:
    return f"{n / 2**20:g} MiB" if n >= 2**20 else f"{n:,} bytes"


# ------------------------------------------------------------------------ YAML
def _yaml_loader() -> type:
    import yaml  # here: only YAML input needs it

    class Loader(yaml.SafeLoader):
        """PyYAML's safe loader with no aliases, YAML 1.2 floats, unique keys and
        bounded depth."""

        _depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None, None, "aliases (*name) are not accepted", event.start_mark
                )
            self._depth += 1
            try:
                if self._depth > MAX_DEPTH:
                    raise yaml.composer.ComposerError(
                        None,
                        None,
                        f"nesting deeper than {MAX_DEPTH} levels is not accepted",
                        self.peek_event().start_mark,
                    )
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    repeated = key in seen
                    seen.add(key)
                except TypeError:
                    continue  # an unhashable key: the safe constructor refuses it
                if repeated:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"key {key!r} is given twice", key_node.start_mark
                    )
            return super().construct_mapping(node, deep=deep)

    Loader.yaml_implicit_resolvers = {
        first: list(resolvers)
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    # YAML 1.2's float: an exponent needs no dot and its sign is optional (1e-5, 1e30).
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(
            r"""^(?:[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+
                |[-+]?\.[0-9_]+[eE][-+]?[0-9]+)$""",
            re.X,
        ),
        list("-+0123456789."),
    )
    return Loader


_LOADER: type | None = None


def parse_yaml(text: str, where: str, *, error: ErrorType = ConfigError) -> Any:
    """The plain data of YAML ``text`` (:mod:`module docstring <fedstruct.files>`'s rules).

    Raises
    ------
    FedstructError
        ``error``, one line naming ``where``, the line and column: not YAML, an alias,
        a key given twice, nesting deeper than :data:`MAX_DEPTH`.
    """
    import yaml

    global _LOADER
    if _LOADER is None:
        _LOADER = _yaml_loader()
    try:
        return yaml.load(text, Loader=_LOADER)  # a SafeLoader subclass: plain data only
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = "" if mark is None else f" at line {mark.line + 1}, column {mark.column + 1}"
        problem = getattr(err, "problem", None) or "cannot be parsed"
        raise error(f"{where} is not valid YAML: {problem}{at}") from None
    except RecursionError:
        raise error(f"{where} is nested too deeply to read") from None


def parse_yaml_scalar(raw: str) -> Any:
    """One ``--set key=value`` value read as YAML 1.2 plain data (``3``, ``0.5``,
    ``1e-5``, ``true``, ``[1, 2]``); the text itself when it is not YAML."""
    try:
        return parse_yaml(raw, "value") if raw.strip() else ""
    except ConfigError:
        return raw


# ------------------------------------------------------------------------ JSON
def parse_json(text: str | bytes, where: str, *, error: ErrorType = ConfigError) -> Any:
    """The data of JSON ``text``; a key given twice in one object and nesting deeper
    than :data:`MAX_DEPTH` are refused.

    Raises
    ------
    FedstructError
        ``error``, one line naming ``where`` and the place of the problem.
    """

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise error(f"{where}: key {key!r} is given twice in one object; keep one")
            out[key] = value
        return out

    try:
        data = json.loads(text, object_pairs_hook=unique)
    except json.JSONDecodeError as err:
        raise error(
            f"{where} is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}"
        ) from None
    except UnicodeDecodeError as err:
        raise error(f"{where} is not UTF-8 text (byte {err.start})") from None
    except RecursionError:
        raise error(f"{where} is nested too deeply to read") from None
    if _depth(data) > MAX_DEPTH:
        raise error(f"{where}: nesting deeper than {MAX_DEPTH} levels is not accepted")
    return data


def _depth(data: Any) -> int:
    """The nesting depth of lists and mappings in ``data`` (iterative: no recursion)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest
