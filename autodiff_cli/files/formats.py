"""The file-format-by-extension rule, and the formats of rows.

A file's extension (case aside) names its format in a table the command gives; a name whose
extension is in no table says nothing, and the command decides (a default, or a usage error).
"""

from __future__ import annotations

import os

__all__ = ["ROW_EXTENSIONS", "ROW_FORMATS", "extension_of", "format_by_extension", "row_format", "sniffs"]

ROW_FORMATS = ("csv", "tsv", "jsonl", "parquet")
ROW_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl",
                  ".parquet": "parquet", ".pq": "parquet"}


def extension_of(path: str) -> str:
    """'.csv' of 'Rows.CSV': the extension, lower case ('' for none)."""
    return os.path.splitext(path)[1].lower()


def format_by_extension(path: str, extensions: dict[str, str]) -> str | None:
    """The format ``extensions`` gives ``path``'s extension, or None."""
    return extensions.get(extension_of(path))


def row_format(path: str | None, given: str | None) -> str:
    """The format of rows: ``given`` (--from/--to), else the file's extension, else CSV."""
    if given:
        return given
    if path and path != "-":
        return format_by_extension(path, ROW_EXTENSIONS) or "csv"
    return "csv"


def sniffs(path: str | None, given: str | None) -> bool:
    """Whether rows read from ``path`` are told apart by their first character (CSV, or JSON Lines
    when it is '{'): stdin and names whose extension says nothing, when --from is not given."""
    if given:
        return False
    return not path or path == "-" or extension_of(path) not in ROW_EXTENSIONS
