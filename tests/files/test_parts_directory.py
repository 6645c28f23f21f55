"""``files.partitions.PartsDirectory``: a directory of parts that appears whole or not at all,
and leaves nothing behind when the run fails or is stopped, even by a late Ctrl-C or SIGTERM."""

from __future__ import annotations

import os
import shutil
import signal

import pytest

from autodiff_cli.files.partitions import PartsDirectory


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_parts_are_removed_leaves_nothing(tmp_path, monkeypatch, signum) -> None:
    """The run failed, and as it removes the parts a Ctrl-C (or SIGTERM) lands: it takes effect
    once the removal is done, not half-way through."""
    def stop() -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, lambda *_: stop())
    remove = shutil.rmtree

    def removed_with_a_signal(path, *args, **kwargs):  # the signal arrives as the removal starts
        signal.raise_signal(signum)
        return remove(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", removed_with_a_signal)
    try:
        with pytest.raises(KeyboardInterrupt):
            with PartsDirectory(str(tmp_path / "out"), replace=False) as directory:
                for name in ("part-00000.csv", "part-00001.csv"):
                    with open(directory.path_of(name), "w") as part:
                        part.write("x\n1\n")
                raise ValueError("a bad cell in a late partition")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert os.listdir(tmp_path) == []


def test_a_directory_published_holds_only_the_parts(tmp_path) -> None:
    with PartsDirectory(str(tmp_path / "out"), replace=False) as directory:
        for name in ("part-00000.csv", "part-00001.csv", "stray.tmp"):
            with open(directory.path_of(name), "w") as part:
                part.write("x\n")
        directory.publish(["part-00000.csv", "part-00001.csv"])
    assert sorted(os.listdir(tmp_path)) == ["out"]
    assert sorted(os.listdir(tmp_path / "out")) == ["part-00000.csv", "part-00001.csv"]
