"""docs/index.md maps every page of docs/: each docs/**/*.md but the index itself is
linked from it, and each of its relative links names a file that exists (and, with a
``#fragment``, a heading of that file)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

#: A Markdown inline link, ``[text](target)``; the target up to its first space or ``)``.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)")

#: A Markdown heading line, ``#`` to ``######`` then its text.
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def relative_links(text: str) -> list[str]:
    """The link targets of ``text`` that point into the repository (no scheme, no
    ``mailto:``, not a bare ``#fragment``)."""
    return [
        target
        for target in LINK.findall(text)
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")
    ]


def anchor(heading: str) -> str:
    """The fragment GitHub gives ``heading``: lower case, inline code marks and
    punctuation dropped (hyphens and underscores kept), each space a hyphen."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The fragments of ``page``'s headings (outside fenced code blocks)."""
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {anchor(heading) for heading in HEADING.findall(text)}


@pytest.fixture
def docs(repo: Path) -> Path:
    return repo / "docs"


def test_every_page_of_docs_is_linked_from_the_index(docs: Path) -> None:
    index = docs / "index.md"
    linked = {
        (docs / target.split("#")[0]).resolve()
        for target in relative_links(index.read_text(encoding="utf-8"))
    }
    pages = {page.resolve() for page in docs.rglob("*.md")} - {index.resolve()}
    missing = sorted(str(page.relative_to(docs.resolve())) for page in pages - linked)
    assert not missing, f"docs/index.md links no line to: {', '.join(missing)}"


def test_every_link_of_the_index_resolves(docs: Path) -> None:
    index = docs / "index.md"
    targets = relative_links(index.read_text(encoding="utf-8"))
    assert len(targets) > 20
    broken = []
    for target in targets:
        path, _, fragment = target.partition("#")
        page = docs / path
        if not page.is_file():
            broken.append(f"{target} (no such file)")
        elif fragment and fragment not in anchors(page):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"docs/index.md: broken links: {', '.join(broken)}"


@pytest.mark.parametrize("name", ["benchmarks.md", "changelog/benchmarks.md"])
def test_the_benchmark_pages_links_resolve(docs: Path, name: str) -> None:
    """The current figures and their history link into each other by headings."""
    page = docs / name
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)", page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue
        path, _, fragment = target.partition("#")
        linked = (page.parent / path) if path else page
        if not linked.is_file() or (fragment and fragment not in anchors(linked)):
            broken.append(target)
    assert not broken, f"docs/{name}: broken links: {', '.join(broken)}"


def test_readme_links_the_index(repo: Path) -> None:
    head = (repo / "README.md").read_text(encoding="utf-8").splitlines()[:15]
    assert any("docs/index.md" in line for line in head)


def test_the_link_checks_catch_what_they_should(tmp_path: Path) -> None:
    """The helpers see a missing page, a broken fragment and skip external links."""
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## The `slowest` tests (2 cores)\n\n```\n# not a heading\n```\n")
    assert anchors(page) == {"title", "the-slowest-tests-2-cores"}
    text = "[a](page.md#title) [b](https://x.org/y.md) [c](#local) [d](gone.md) [e](mailto:z)"
    assert relative_links(text) == ["page.md#title", "gone.md"]
