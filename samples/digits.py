"""Write the handwritten digits of ``samples/digits.ad`` as two CSV files, a training and a held-out split.

    python samples/digits.py            # rewrites digits_train.csv and digits_test.csv next to this script
    python samples/digits.py --out DIR  # writes them somewhere else

Run once, by hand, with scikit-learn installed (in a throwaway environment: it is not a
dependency of autodiff-cli, and nothing else in the project needs it)::

    python3 -m venv /tmp/skl && /tmp/skl/bin/pip install scikit-learn
    /tmp/skl/bin/python samples/digits.py

Source: the test set of the UCI Machine Learning Repository's "Optical Recognition of
Handwritten Digits" data set, by E. Alpaydin and C. Kaynak (1998),
https://doi.org/10.24432/C50P49 (https://archive.ics.uci.edu/dataset/80), as scikit-learn
ships it (``sklearn.datasets.load_digits``): 1,797 images of 8 x 8 pixels, each pixel the
count of ink in a 4 x 4 block of a 32 x 32 bitmap, an integer from 0 to 16, and the digit
drawn, 0 to 9.

Licence: the UCI data set is licensed under Creative Commons Attribution 4.0 International
(CC BY 4.0, https://creativecommons.org/licenses/by/4.0/), which allows copying and
adapting it with attribution.  The CSV files written here are that data, rearranged (split
in two, one column per pixel), not autodiff-cli's MIT-licensed code; ``DIGITS-LICENSE.md``
next to this script says so and gives the attribution.

The split: the 1,797 images are split per class, 360 held out (about 20% of each digit,
rounded so that the counts add up to 360) and 1,437 for training, by a shuffle of each
class with Python's ``random.Random(SEED)`` (whose sequence Python keeps the same across
versions).  Each file keeps the images in scikit-learn's order.  Columns: ``x[0]`` ...
``x[63]``, the pixels row by row as integers (not scaled: the program divides by 16), the
vector input ``x`` of shape [64]; and ``label``, the digit.  The same bytes on every run.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = 0
TEST_ROWS = 360
PIXELS = 64
HEADER = [f"x[{i}]" for i in range(PIXELS)] + ["label"]


def split(labels: Sequence[int], test_rows: int = TEST_ROWS, seed: int = SEED) -> tuple[list[int], list[int]]:
    """Row indices of the training and the held-out split, each in ascending order.

    Every class gives the held-out split its share of ``test_rows`` (largest remainders
    round the shares to whole rows that add up to ``test_rows``), chosen by a seeded shuffle.
    """
    classes = sorted(set(labels))
    members = {c: [i for i, label in enumerate(labels) if label == c] for c in classes}
    exact = {c: len(members[c]) * test_rows / len(labels) for c in classes}
    counts = {c: int(exact[c]) for c in classes}
    short = test_rows - sum(counts.values())
    for c in sorted(classes, key=lambda c: (-(exact[c] - counts[c]), c))[:short]:
        counts[c] += 1
    rng = random.Random(seed)
    held_out: set[int] = set()
    for c in classes:
        chosen = list(members[c])
        rng.shuffle(chosen)
        held_out.update(chosen[:counts[c]])
    train = [i for i in range(len(labels)) if i not in held_out]
    return train, sorted(held_out)


def csv_text(pixels: Sequence[Sequence[int]], labels: Sequence[int], rows: Sequence[int]) -> str:
    lines = [",".join(HEADER)] + [",".join(map(str, [*pixels[i], labels[i]])) for i in rows]
    return "\n".join(lines) + "\n"


def load() -> tuple[list[list[int]], list[int]]:
    """scikit-learn's copy of the data: the pixels of each image (64 integers) and its digit."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    pixels = [[int(v) for v in row] for row in digits.data]
    assert all(float(v) == int(v) for row in digits.data for v in row)
    return pixels, [int(t) for t in digits.target]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="directory to write into (default: samples/)")
    args = parser.parse_args(argv)
    pixels, labels = load()
    train, test = split(labels)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("digits_train.csv", train), ("digits_test.csv", test)):
        (args.out / name).write_text(csv_text(pixels, labels, rows), encoding="utf-8", newline="\n")
        print(f"{args.out / name}: {len(rows)} rows")


if __name__ == "__main__":
    main()
