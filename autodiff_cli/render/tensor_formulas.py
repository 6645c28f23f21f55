"""Derivative programs of tensor programs (``execute.tensor_symbolic``) as text, program text,
LaTeX in matrix notation and a Python (NumPy) module.

One writer serves the three syntaxes: it lays each ``Term`` out bottom-up from an explicit
stack (no recursion, however deep an expression), with how tightly it binds, and puts
parentheses where an operand binds more loosely than its place needs (the precedence levels
of ``render.formulas``).  Pure: returns text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..engine.ops import OPS, short_number
from ..engine.tensor_ops import TENSOR_OPS, format_shape, latex_form, numpy_form, write
from ..errors import ProgramError
from ..execute.tensor_symbolic import NAME, NUMBER, TensorDerivatives, Term, fold_term
from ..language.program import ArrayLiteral, Initializer
from .formulas import ATOM, FRACTION, POWER, PRODUCT, SUM, UNARY, latex_name

__all__ = ["tensor_json", "tensor_latex", "tensor_program", "tensor_python", "tensor_text"]

Part = tuple[float, str, str]  # binding, text, its first character ("-" matters)


def _wrap(part: Part, at_least: float, open_: str = "(", close: str = ")", minus: bool = False) -> str:
    binding, text, first = part
    if binding < at_least or (minus and first == "-"):
        return f"{open_}{text}{close}"
    return text


def _nested(values: ArrayLiteral, number: Callable[[float], str]) -> str:
    items: list[Any] = [number(v) for v in values.values]
    for size in reversed(values.shape[1:]):
        items = ["[" + ", ".join(items[i:i + size]) + "]" for i in range(0, len(items), size)]
    return "[" + ", ".join(items) + "]" if values.shape else items[0]


COMPARISON = 0.5  # how tightly a comparison binds: looser than a sum


def _is_operator(op: str) -> bool:
    """A tensor op written between its operands (``a < b``), other than ``@``."""
    return op != "@" and TENSOR_OPS[op].written == f"{{x}} {op} {{y}}"


class _Syntax:
    """The language's own syntax; the others override what differs."""

    open, close = "(", ")"

    def name(self, text: str) -> str:
        return text

    def number(self, value: float) -> Part:
        text = short_number(value)
        return (UNARY if text.startswith("-") else ATOM), text, text[0]

    def literal(self, values: ArrayLiteral) -> str:
        if not values.values and values.shape:  # no entries: the language has no `[]`, but slices an empty one
            empty = "[0][0:0]"
            return empty if len(values.shape) == 1 else f"reshape({empty}, {list(values.shape)})"
        return _nested(values, short_number)

    def wrap(self, part: Part, at_least: float, minus: bool = False) -> str:
        return _wrap(part, at_least, self.open, self.close, minus)

    def operator(self, op: str, term: Term, parts: list[Part]) -> tuple[float, str]:
        if op in ("+", "-"):
            return SUM, f"{self.wrap(parts[0], SUM)} {op} {self.wrap(parts[1], PRODUCT, True)}"
        if op in ("*", "/", "@"):
            return PRODUCT, f"{self.wrap(parts[0], PRODUCT)} {op} {self.wrap(parts[1], UNARY, True)}"
        if op == "neg":
            return UNARY, "-" + self.wrap(parts[0], UNARY, True)
        if op == "**c":
            exponent = short_number(term.param)
            return POWER, f"{self.wrap(parts[0], ATOM)}**{f'({exponent})' if term.param < 0 else exponent}"
        if op == "**":
            return POWER, f"{self.wrap(parts[0], ATOM)}**{self.wrap(parts[1], POWER)}"
        if op == "=":
            return parts[0][0], parts[0][1]
        if op == "index":
            return ATOM, write("index", [self.wrap(parts[0], ATOM)], term.param)
        if op in TENSOR_OPS and _is_operator(op):  # a comparison: below every arithmetic operator
            return COMPARISON, f"{self.wrap(parts[0], SUM)} {op} {self.wrap(parts[1], SUM)}"
        if op in TENSOR_OPS:
            texts = [p[1] for p in parts]
            if TENSOR_OPS[op].written.startswith("{x}["):  # a subscript (C[X]): its operand binds as an atom
                texts[0] = self.wrap(parts[0], ATOM)
            return ATOM, write(op, texts, term.param)
        return ATOM, OPS[op].written.format(x=parts[0][1], y=parts[1][1] if len(parts) > 1 else "")

    def layout(self, term: Term, parts: list[Part]) -> Part:
        binding, text = self.operator(term.op, term, parts)
        return binding, text, text[:1]

    def expression(self, term: Term) -> str:
        def leaf(node: Term) -> Part:
            if node.op == NUMBER:
                return self.number(node.param)
            text = self.name(node.param) if node.op == NAME else self.literal(node.param)
            return (ATOM, text, text[:1])

        return fold_term(term, leaf, self.layout)[1]  # type: ignore[no-any-return]


_program = _Syntax()


def _default_text(default: Any) -> str | None:
    if default is None:
        return None
    if isinstance(default, Initializer):
        return default.written()
    if isinstance(default, ArrayLiteral):
        return _program.literal(default)
    return short_number(float(default))


def tensor_program(result: TensorDerivatives) -> str:
    """The derivative program in the language: the inputs with their values, the forward
    values the derivatives read, the adjoints, and (as a rule) the output last, so that eval of
    it shows every gradient.  Feed it to eval, graph (``--output dL_dW --no-grad`` for a
    gradient) or diff."""
    lines = [f"{n} = {text}" for n, default in result.inputs if (text := _default_text(default)) is not None]
    lines.extend(f"{n} = {_program.expression(term)}" for n, term in result.statements)
    return "\n".join(lines) + "\n"


def _as_number(term: Term) -> Term:
    """``2 + 0`` (a constant the program text keeps computed) as the number it is."""
    if term.op == "+" and term.args[0].op == NUMBER and term.args[1].op == NUMBER and term.args[1].param == 0:
        return term.args[0]
    return term


def tensor_text(result: TensorDerivatives) -> str:
    """The statements with the shape of each (inputs' values left out, constants as numbers):
    what the derivatives are."""
    rows = [(f"{n} = {_program.expression(_as_number(term))}", format_shape(result.shapes[n]))
            for n, term in result.statements]
    inputs = ", ".join(f"{n} {format_shape(result.shapes[n])}" for n, _ in result.inputs)
    width = min(max((len(text) for text, _ in rows), default=0), 60)
    lines = [f"# inputs: {inputs}"]
    lines.extend(f"{text.ljust(width)}  # {shape}" for text, shape in rows)
    what = _what(result, "Hessian-vector products H v")
    if result.hessian:
        lines.append("# H_W_U holds d2/dW dU: a row per entry of W (row-major), each shaped like U")
    elif result.order == 2:
        lines.append(f"# {result.directional} = the derivative of {result.output} along v; "
                     f"d2_NAME is its adjoint of NAME")
    lines.append(f"# {what}: " + ", ".join(f"{w} -> {d}" for w, d in result.derivatives.items()))
    return "\n".join(lines) + "\n"


def _what(result: TensorDerivatives, products: str) -> str:
    return "Hessian blocks" if result.hessian else products if result.order == 2 else "gradients"


def tensor_json(result: TensorDerivatives) -> str:
    """One JSON object: what was differentiated, the shapes, each statement as an expression of
    the language, which statement holds each derivative, and the whole program."""
    import json

    document = {
        "of": result.output,
        "wrt": list(result.wrt),
        "order": result.order,
        "derivatives": dict(result.derivatives),
        "directions": dict(result.directions),
        "inputs": [{"name": n, "shape": list(result.shapes[n])} for n, _ in result.inputs],
        "statements": [{"name": n, "shape": list(result.shapes[n]), "expression": _program.expression(term)}
                       for n, term in result.statements],
        "program": tensor_program(result),
    }
    return json.dumps(document, indent=2) + "\n"


# --- LaTeX ---------------------------------------------------------------------------------------


class _Latex(_Syntax):
    open, close = r"\left(", r"\right)"

    def __init__(self, result: TensorDerivatives) -> None:
        self.result = result

    def name(self, text: str) -> str:
        label = self.result.labels.get(text)
        if label is not None:
            return rf"\frac{{\partial {latex_name(label[0])}}}{{\partial {latex_name(label[1])}}}"
        return latex_name(text)

    def number(self, value: float) -> Part:
        binding, text, first = super().number(value)
        mantissa, e, exponent = text.partition("e")
        if e:
            return PRODUCT, rf"{mantissa} \times 10^{{{int(exponent)}}}", first
        return binding, text, first

    def literal(self, values: ArrayLiteral) -> str:
        rows = [values.values] if len(values.shape) <= 1 else [
            values.values[i:i + values.shape[1]] for i in range(0, len(values.values), values.shape[1])]
        body = r" \\ ".join(" & ".join(short_number(v) for v in row) for row in rows)
        if len(values.shape) == 1:  # a vector is a column on paper
            body = r" \\ ".join(short_number(v) for v in values.values)
        return r"\begin{bmatrix}" + body + r"\end{bmatrix}"

    def operator(self, op: str, term: Term, parts: list[Part]) -> tuple[float, str]:
        if op == "*":
            scalar = any(a.op == NUMBER for a in term.args)
            joint = r" \cdot " if scalar else r" \odot "
            return PRODUCT, f"{self.wrap(parts[0], PRODUCT)}{joint}{self.wrap(parts[1], PRODUCT, True)}"
        if op == "@":
            return PRODUCT, f"{self.wrap(parts[0], PRODUCT)} {self.wrap(parts[1], POWER, True)}"
        if op == "/":
            return FRACTION, rf"\frac{{{parts[0][1]}}}{{{parts[1][1]}}}"
        if op == "**c":
            return POWER, f"{self.wrap(parts[0], ATOM)}^{{{short_number(term.param)}}}"
        if op == "**":
            return POWER, f"{self.wrap(parts[0], ATOM)}^{{{parts[1][1]}}}"
        if op == "index":
            base = self.wrap(parts[0], ATOM)
            if "_" in base:  # t_{1} or a fraction: a second subscript is TeX's "Double subscript" error
                base = rf"\left({base}\right)"
            return ATOM, f"{base}_{{{write('index', [''], term.param)[1:-1]}}}"
        if op in TENSOR_OPS:
            return self.entry_form(latex_form(op, term.param), term, parts)
        if op in ("+", "-", "neg", "="):
            return super().operator(op, term, parts)
        return ATOM, _fill(OPS[op].latex, parts)


    def entry_form(self, form: str, term: Term, parts: list[Part]) -> tuple[float, str]:
        """An entry's LaTeX form, laid out by its shape: a postfix (``{x}^\\top``) binds as a
        power and a prefix (``\\sum{axis} {x}``) as a product, each around an atom; a call
        (``\\operatorname{softmax}\\left({x}\\right)``) is an atom of its own."""
        form = form.replace("{param}", str(term.param))  # an op's own constant (scatter's size)
        if form.startswith("{x}^"):
            return POWER, _fill(form, [(ATOM, self.wrap(parts[0], ATOM), "")])
        if form.endswith(" {x}"):
            return PRODUCT, _fill(form, [(ATOM, self.wrap(parts[0], ATOM), "")])
        return ATOM, _fill(form, parts)


def _fill(template: str, parts: list[Part]) -> str:
    """A table's LaTeX template with its operands (``str.format`` would read ``\\operatorname{relu}``)."""
    template = template.replace("{operands}", ", ".join(part[1] for part in parts))  # stack, concat
    for field, part in zip(("{x}", "{y}", "{z}"), parts):
        template = template.replace(field, part[1])
    return template


def tensor_latex(result: TensorDerivatives) -> str:
    """An ``aligned`` block in matrix notation (``X^\\top``, ``\\odot`` for elementwise
    products): the forward values the derivatives read, then the adjoints."""
    syntax = _Latex(result)
    lines = [f"{syntax.name(n)} &= {syntax.expression(term)}" for n, term in result.statements]
    return "\\begin{aligned}\n" + " \\\\\n".join(lines) + "\n\\end{aligned}\n"


# --- Python (NumPy) ----------------------------------------------------------------------------------

FUNCTION_NAME = "derivatives"
class _Python(_Syntax):
    def __init__(self, rename: Callable[[str], str]) -> None:
        self.rename = rename
        self.used: dict[str, str] = {}  # the generated module's helper functions, by name

    def name(self, text: str) -> str:
        return self.rename(text)

    def number(self, value: float) -> Part:
        text = repr(float(value))
        return (UNARY if text.startswith("-") else ATOM), text, text[0]

    def literal(self, values: ArrayLiteral) -> str:
        if not values.values and values.shape:
            return f"np.zeros({tuple(values.shape)!r})"
        return f"np.array({_nested(values, lambda v: repr(float(v)))})"

    def operator(self, op: str, term: Term, parts: list[Part]) -> tuple[float, str]:
        entry = OPS.get(op) or TENSOR_OPS.get(op)
        form = getattr(entry, "numpy", None)
        if form is None:
            if op in OPS and OPS[op].is_function:
                raise ProgramError(f"the op '{op}' has no NumPy form, so it cannot be written as Python",
                                   hint="choose another --format, or give its registry entry a numpy form")
            return super().operator(op, term, parts)
        for helper, source in entry.numpy_helpers:
            self.used[helper] = source
        return ATOM, numpy_form(op, [p[1] for p in parts], term.param) if op in TENSOR_OPS else \
            form.format(**dict(zip("xy", (p[1] for p in parts))))


_PYTHON_TAKEN = frozenset({"np", FUNCTION_NAME, "seed", *(name for entry in (*OPS.values(), *TENSOR_OPS.values())
                                                          for name, _ in entry.numpy_helpers)})


def tensor_python(result: TensorDerivatives) -> str:
    """A Python module with one function, ``derivatives``, computing them with NumPy.

    Every input is a keyword parameter, by default the program's value (initializers drawn as
    eval draws them, from ``seed``); the function returns a dict from each variable's name to
    its gradient (order 1) or Hessian-vector product (order 2) as an array."""
    import keyword

    renamed: dict[str, str] = {}
    used = set(_PYTHON_TAKEN) | set(keyword.kwlist)
    for n in result.names:
        new = n
        while new in used:
            new += "_"
        renamed[n] = new
        used.add(new)
    syntax = _Python(renamed.__getitem__)
    parameters, body = [], []
    draws = [(n, d) for n, d in result.inputs if isinstance(d, Initializer)]
    for n, default in result.inputs:
        if default is None:
            parameters.append(renamed[n])
            continue
        parameters.append(f"{renamed[n]}=None")
        if isinstance(default, Initializer):
            continue
        value = syntax.literal(default) if isinstance(default, ArrayLiteral) else repr(float(default))
        body.append(f"    {renamed[n]} = {value} if {renamed[n]} is None else {renamed[n]}")
    if draws:
        body.append("    generator = np.random.default_rng(seed)  # drawn in order, as autodiff eval --seed draws")
        for n, init in draws:
            if init.kind == "normal":
                call = f"generator.normal(0.0, {init.arguments[0]!r}, {init.shape!r})"
            elif init.kind == "uniform":
                call = f"generator.uniform({init.arguments[0]!r}, {init.arguments[1]!r}, {init.shape!r})"
            else:
                call = f"np.zeros({init.shape!r})"
            body.append(f"    drawn = {call}")
            body.append(f"    {renamed[n]} = drawn if {renamed[n]} is None else {renamed[n]}")
    body.extend(f"    {renamed[n]} = np.asarray({renamed[n]}, dtype=np.float64)" for n, _ in result.inputs)
    if result.inputs:  # the statements hold for these shapes only: another would broadcast to a wrong answer
        expected = ", ".join(f"({n!r}, {renamed[n]}, {tuple(result.shapes[n])!r})" for n, _ in result.inputs)
        body.append(f"    for name, given, shape in ({expected},):")
        body.append("        if given.shape != shape:")
        body.append('            raise ValueError(f"{name} has shape {given.shape}, but these derivatives were written '
                    'for shape {shape}: run autodiff diff with --set of that shape")')
    body.extend(f"    {renamed[n]} = {syntax.expression(term)}" for n, term in result.statements)
    returned = ", ".join(f'"{w}": {renamed[d]}' for w, d in result.derivatives.items())
    body.append(f"    return {{{returned}}}")
    what = _what(result, "Hessian-vector products")
    doc = (f'    """The {what} of {result.output} with respect to {", ".join(result.wrt)} '
           '(written by autodiff diff)."""')
    seed = ", seed=0" if draws else ""
    signature = f"def {FUNCTION_NAME}(*, {', '.join(parameters)}{seed}):" if parameters else f"def {FUNCTION_NAME}():"
    helpers = "".join(f"\n\n{syntax.used[name]}" for name in sorted(syntax.used))
    return "import numpy as np\n" + helpers + "\n\n" + signature + "\n" + doc + "\n" + "\n".join(body) + "\n"

