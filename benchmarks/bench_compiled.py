"""The measurement behind "the engine stays pure Python" (ARCHITECTURE.md): a mypyc build of Value.

mypyc cannot compile ``engine/value.py`` as it is (its methods are made from the op
table by factories, and ``ops.py``'s ``Op`` and ``DomainError`` are beyond it), so this
script writes what a compiled engine would have to look like, into a temporary
directory: a typed ``Value`` with one method per op used by ``bench_engine.py``'s
shapes and the same backward pass, in two variants:

* ``value``: the kernels stay the op table's, interpreted (called through Python);
* ``value+kernels``: the kernels' source, taken from ``ops.py`` with ``inspect``, compiled
  along with ``Value`` (the arrangement a compiled build would need).

Each is compiled with mypyc and run through ``bench_engine.py`` in place of our engine,
against micrograd, in the same way.  Needs ``pip install mypy`` (which brings mypyc) and
a C compiler; nothing here is installed or shipped.

    python benchmarks/bench_compiled.py [--nodes 10000 100000] [--gc on off] [--repeat 3]
"""

from __future__ import annotations

import importlib
import inspect
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

KERNELS = ("_add", "_sub", "_mul", "_relu", "_tanh", "_exp")

VALUE = '''\
"""A typed Value for mypyc (see benchmarks/bench_compiled.py)."""

from __future__ import annotations

from typing import List, Optional, Set, Union

from {kernels} import _add, _exp, _mul, _relu, _sub, _tanh


class Value:
    data: float
    grad: float
    label: str
    _op: str
    _a: Optional[Value]
    _da: float
    _b: Optional[Value]
    _db: float

    def __init__(self, data: float, _children: tuple = (), _op: str = "", label: str = "") -> None:
        self.data = data
        self.grad = 0.0
        self._op = _op
        self.label = label
        self._a = None
        self._b = None
        self._da = 0.0
        self._db = 0.0

    @property
    def _prev(self) -> tuple:
        a = self._a
        if a is None:
            return ()
        b = self._b
        return (a,) if b is None else (a, b)

{binary}
    def __radd__(self, other: float) -> Value:
        return Value(float(other)) + self

    def __rmul__(self, other: float) -> Value:
        return Value(float(other)) * self

{unary}
    def backward(self) -> None:
        order = topological_order(self)
        self.grad = 1.0
        for i in range(len(order) - 1, -1, -1):
            node = order[i]
            a = node._a
            if a is not None:
                g = node.grad
                a.grad += node._da * g
                b = node._b
                if b is not None:
                    b.grad += node._db * g


def topological_order(root: Value) -> List[Value]:
    order: List[Value] = []
    done: Set[Value] = set()
    stack: List[Value] = [root]
    while stack:
        node = stack[-1]
        a = node._a
        if a is not None and a not in done:
            if a._a is None:
                done.add(a)
                order.append(a)
            else:
                stack.append(a)
                continue
        b = node._b
        if b is not None and b not in done:
            if b._a is None:
                done.add(b)
                order.append(b)
            else:
                stack.append(b)
                continue
        stack.pop()
        if node not in done:
            done.add(node)
            order.append(node)
    return order
'''

BINARY = '''\
    def {method}(self, other: Union[Value, float]) -> Value:
        o = other if isinstance(other, Value) else Value(float(other))
        data, da, db = {kernel}(self.data, o.data)
        out = Value(data)
        out._op = "{op}"
        out._a = self
        out._da = da
        out._b = o
        out._db = db
        return out

'''

UNARY = '''\
    def {op}(self) -> Value:
        data, da = _{op}(self.data)
        out = Value(data)
        out._op = "{op}"
        out._a = self
        out._da = da
        return out

'''


def write_variant(directory: Path, kernels_compiled: bool) -> list[Path]:
    """The variant's modules; those mypyc compiles."""
    from autodiff_cli.engine import ops

    binary = "".join(BINARY.format(method=method, kernel=kernel, op=op)
                     for method, kernel, op in (("__add__", "_add", "+"), ("__sub__", "_sub", "-"),
                                                ("__mul__", "_mul", "*")))
    unary = "".join(UNARY.format(op=op) for op in ("relu", "tanh", "exp"))
    if kernels_compiled:
        source = "\n\n".join(inspect.getsource(getattr(ops, name)) for name in KERNELS)
        (directory / "kernels.py").write_text(
            "from __future__ import annotations\n\nimport math\n\n"
            "from autodiff_cli.engine.ops import DomainError\n\n\n" + source)
        (directory / "value.py").write_text(VALUE.format(kernels=".kernels", binary=binary, unary=unary))
        return [directory / "kernels.py", directory / "value.py"]
    (directory / "value.py").write_text(VALUE.format(kernels="autodiff_cli.engine.ops", binary=binary,
                                                     unary=unary))
    return [directory / "value.py"]


def main() -> int:
    if shutil.which("mypyc") is None:
        print("mypyc is not installed; pip install mypy (and have a C compiler)", file=sys.stderr)
        return 2
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_engine

    for name, kernels_compiled in (("value", False), ("value+kernels", True)):
        with tempfile.TemporaryDirectory() as temporary:
            package = Path(temporary) / f"compiled_{name.replace('+', '_')}"
            package.mkdir()
            (package / "__init__.py").write_text("")
            modules = write_variant(package, kernels_compiled)
            subprocess.run(["mypyc", "--follow-imports=skip", "--ignore-missing-imports",
                            *[str(path.relative_to(temporary)) for path in modules]],
                           cwd=temporary, check=True, capture_output=True)
            sys.path.insert(0, temporary)
            compiled = importlib.import_module(f"{package.name}.value")
            assert compiled.__file__ and not compiled.__file__.endswith(".py"), "not compiled"
            print(f"\n=== mypyc build: {name} ===")
            bench_engine.import_our_value = lambda compiled=compiled: compiled.Value
            status = bench_engine.main(sys.argv[1:])
            sys.path.remove(temporary)
            if status:
                return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
