"""How numbers are written in reports: round-trip text, rounded text, and JSON."""

from __future__ import annotations

import math

__all__ = ["NON_FINITE_JSON", "format_number", "json_number"]

# JSON has no NaN or infinity; they are written as these strings.
NON_FINITE_JSON = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def format_number(x: float, precision: int | None = None) -> str:
    """Shortest round-trip text by default; ``precision`` significant digits when given."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if precision is None:
        return repr(float(x))
    return f"{x:.{precision}g}"


def json_number(x: float) -> float | str:
    """x itself, or the string JSON needs for NaN and the infinities."""
    return x if math.isfinite(x) else NON_FINITE_JSON[repr(float(x))]
