"""Write the character data set of ``samples/makemore/``: US Census first names, as makemore's.

    python samples/makemore/make_names.py              # from the installed ``names`` package
    python samples/makemore/make_names.py --from DIR   # from a folder with its two data files
    python samples/makemore/make_names.py --out DIR    # write somewhere else than next to this script

Run once, by hand, with the ``names`` package from PyPI in a throwaway environment (it is not a
dependency of autodiff-cli, and nothing else in the project needs it)::

    python3 -m venv /tmp/names && /tmp/names/bin/pip install names==0.3.0
    /tmp/names/bin/python samples/makemore/make_names.py

Source: the first-name lists of the 1990 US Census (the Census Bureau's "frequently occurring
names" files, ``dist.female.first``: 4,275 names; ``dist.male.first``: 1,219 names), as the
``names`` package (Trey Hunner, version 0.3.0, MIT licence) ships them.  The package's README
says of them: "Data in the following files are public domain (derived from 1990 Census data)".
NAMES-LICENSE.md next to this script says the same, with the attribution.

What is written (the same bytes on every run):

- ``names.txt``: every first name, in lower case, one a line, each once: the female list, then
  the male names not already in it, each list in the Census's order (most frequent first);
- ``train.csv``, ``dev.csv``, ``test.csv``: the names shuffled with Python's
  ``random.Random(SEED)`` (whose sequence Python keeps the same across versions) and split 80%,
  10%, 10%, as makemore splits them; then one row per character to predict, as makemore's
  ``build_dataset`` with ``block_size = 3``: ``x[0]``, ``x[1]``, ``x[2]``, the three characters
  before it, and ``y``, the character; characters are numbered ``.`` 0 (before a name's start,
  and its end), ``a`` 1 to ``z`` 26.  The columns ``x[0]`` to ``x[2]`` make a vector input
  ``x`` of shape [3] for ``fit --data``; ``y`` is a class number from 0 to 26.
"""

from __future__ import annotations

import argparse
import csv
import random
import string
from collections.abc import Iterable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 42
BLOCK_SIZE = 3
FILES = ("dist.female.first", "dist.male.first")
LETTERS = "." + string.ascii_lowercase  # the number of a character is its place here
HEADER = [f"x[{i}]" for i in range(BLOCK_SIZE)] + ["y"]


def read_census(lines: Iterable[str]) -> list[str]:
    """The names of one Census file, in its order: the first column of each line, in lower case."""
    found = []
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields:
            continue
        name = fields[0].lower()
        if not name or any(char not in string.ascii_lowercase for char in name):
            raise ValueError(f"line {number}: {fields[0]!r} is not a name of the letters A to Z")
        found.append(name)
    return found


def merged(lists: Sequence[Sequence[str]]) -> list[str]:
    """Every name of the lists, each once, in the order first met."""
    return list(dict.fromkeys(name for names in lists for name in names))


def split(names: Sequence[str], seed: int = SEED) -> tuple[list[str], list[str], list[str]]:
    """The names shuffled and cut 80% / 10% / 10%, as makemore cuts them."""
    shuffled = list(names)
    random.Random(seed).shuffle(shuffled)
    first, second = int(0.8 * len(shuffled)), int(0.9 * len(shuffled))
    return shuffled[:first], shuffled[first:second], shuffled[second:]


def rows(names: Iterable[str], block_size: int = BLOCK_SIZE) -> list[list[int]]:
    """One row per character to predict: the ``block_size`` characters before it, then it."""
    found = []
    for name in names:
        context = [0] * block_size
        for char in name + ".":
            number = LETTERS.index(char)
            found.append([*context, number])
            context = [*context[1:], number]
    return found


def write_rows(path: Path, table: Sequence[Sequence[int]]) -> None:
    with path.open("w", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(HEADER)
        writer.writerows(table)


def source_folder(given: str | None) -> Path:
    if given is not None:
        return Path(given)
    import names  # the PyPI package, installed by hand (see the module's docstring)

    return Path(names.__file__).resolve().parent


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--from", dest="source", help="a folder with dist.female.first and dist.male.first")
    parser.add_argument("--out", default=str(HERE), help="where to write (default: next to this script)")
    arguments = parser.parse_args(argv)
    folder = source_folder(arguments.source)
    lists = [read_census((folder / name).read_text(encoding="ascii").splitlines()) for name in FILES]
    names = merged(lists)
    out = Path(arguments.out)
    (out / "names.txt").write_text("".join(name + "\n" for name in names))
    for part, chosen in zip(("train", "dev", "test"), split(names)):
        write_rows(out / f"{part}.csv", rows(chosen))
    print(f"{len(names)} names: {', '.join(f'{len(p)} {n}' for n, p in zip(('train', 'dev', 'test'), split(names)))}")


if __name__ == "__main__":
    main()
