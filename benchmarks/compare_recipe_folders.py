"""Compare two folders of recipe results file by file (a layout change must not change
a number).

Usage::

    python benchmarks/compare_recipe_folders.py BEFORE AFTER [--mask]

``BEFORE`` and ``AFTER`` each hold one folder per recipe (``fedstruct reproduce NAME
--quick --seeds 1 --out BEFORE/NAME``, run once on each tree). Every ``.json``,
``.csv``, ``.md`` and ``.txt`` file of a recipe is compared byte for byte, except
``run.json`` and ``recipe.json`` (timings). With ``--mask`` the two folders' own paths
are masked first, and the lines left differing are printed (a recipe that passes a run
folder's path on, e.g. a discovered graph's file, records that path).
"""

from __future__ import annotations

import argparse
from pathlib import Path

SUFFIXES = {".json", ".csv", ".md", ".txt"}
TIMINGS = {"run.json", "recipe.json"}


def compared_files(folder: Path) -> set[Path]:
    """The files of ``folder`` that hold results (relative paths)."""
    return {
        p.relative_to(folder)
        for p in folder.rglob("*")
        if p.is_file() and p.suffix in SUFFIXES and p.name not in TIMINGS
    }


def masked_lines(path: Path, root: Path) -> list[str]:
    """``path``'s lines with ``root`` (its results folder) replaced by ``ROOT``."""
    return path.read_text().replace(str(root), "ROOT").splitlines()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--mask", action="store_true", help="mask the folders' own paths")
    args = parser.parse_args()
    for recipe in sorted(p.name for p in args.before.iterdir() if p.is_dir()):
        b, a = args.before / recipe, args.after / recipe
        if not a.is_dir():
            print(f"{recipe}: not in {args.after}")
            continue
        files_b, files_a = compared_files(b), compared_files(a)
        both = files_b & files_a
        differ = sorted(f for f in both if (b / f).read_bytes() != (a / f).read_bytes())
        metrics = sum(f.name == "metrics.json" for f in files_b)
        print(f"{recipe}: {len(files_b)} files ({metrics} metrics.json), {len(differ)} differ,"
              f" {len(files_b ^ files_a)} on one side only")  # fmt: skip
        for f in differ if args.mask else []:
            left = set(masked_lines(b / f, args.before)) ^ set(masked_lines(a / f, args.after))
            for line in sorted(left)[:4]:
                print(f"    {f}: {line.strip()}")


if __name__ == "__main__":
    main()
