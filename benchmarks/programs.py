"""The generated programs the benchmarks run: deterministic, and as big as asked.

* ``network(statements)``: what an unrolled model looks like, and what the end-to-end
  benchmark runs: 100 weights and 100 biases with defaults, then statements cycling
  through four shapes (a product and a sum, a tanh, a difference with a quotient, a
  Gaussian bump and a skip connection), each using the last few results.  About 30
  characters and 3 instructions per statement.
* ``statements(size)``: ``size`` characters of ``v123 = tanh(v122*0.5 + w3) - v120/2``
  lines (7 instructions each).
* ``long_sum(size)``: one expression of ``size`` characters, ``y = x0*1.5 - x1*2.5 + ...``.
"""

from __future__ import annotations


def network(statements: int) -> str:
    lines = [f"w{k} = {0.5 + k / 1000}" for k in range(100)] + [f"b{k} = {k / 100 - 0.5}" for k in range(100)]
    lines += ["h0 = 0.5", "h1 = 0.25", "h2 = 0.125"]
    for i in range(3, max(3, statements - 200)):
        shape = i % 4
        if shape == 0:
            lines.append(f"h{i} = h{i - 1}*w{i % 100} + b{i % 100}")
        elif shape == 1:
            lines.append(f"h{i} = tanh(h{i - 1})")
        elif shape == 2:
            lines.append(f"h{i} = h{i - 1} - h{i - 2}/3")
        else:
            lines.append(f"h{i} = exp(-h{i - 1}**2) + 0.5*h{i - 3}")
    return "\n".join(lines) + "\n"


def statements(size: int) -> str:
    lines = ["v0 = 0.5", "v1 = 0.25", "v2 = 0.125"]
    total = sum(len(line) + 1 for line in lines)
    i = 3
    while total < size:
        line = f"v{i} = tanh(v{i - 1}*0.5 + w{i % 10}) - v{i - 3}/2"
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines) + "\n"


def long_sum(size: int) -> str:
    parts = ["y = x0*1.5"]
    total = len(parts[0])
    i = 1
    while total < size:
        term = f" {'+-'[i % 2]} x{i % 1000}*{i % 9 + 1}.5"
        parts.append(term)
        total += len(term)
        i += 1
    return "".join(parts)
