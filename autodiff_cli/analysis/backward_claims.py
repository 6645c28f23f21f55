"""A manual backward pass checked line by line: ``autodiff check PROGRAM --claims FILE``.

The file holds gradient lines in the order a person derives them, as in the "backprop ninja"
exercise: ``dprobs = (1/probs) * dlogprobs``, ``dcounts += ...`` for a second contribution.
``dNAME`` is the gradient of the program's output (the loss) with respect to its variable
``NAME``, and a line may use the program's variables and the gradients of the lines above it.

Every line is judged twice, at the given values and at random points around them (on a scalar
program, a line that gives a whole gradient is also proved symbolically where it can be, as a
``--claim`` is):

* **with the true gradients it uses**: the ``dNAME`` on its right-hand side take the values of
  the program's own reverse sweep, so one slip does not spill into the lines after it;
* **in the person's own chain**: the values their earlier lines gave, fed forward, as the
  exercise runs them.

A gradient given in several lines (``=`` then ``+=``) is judged use by use: each line must be
the contribution of some uses of the variable (the vector-Jacobian product through those
statements, with the true gradient of each statement), and the lines together all of them.
A wrong line gets the first entry that differs, the largest error and, where one explains it
at every point, the slip named: a missing sum over a broadcast axis, a missing contribution,
a transposed result or product, a sign, a factor (n against n - 1 where a variance is on the path, the 2 of a square, 1/n), a wrong local
derivative (``backward_claim_slips`` finds them).  Lines of a tensor program are judged by their
values, never proved symbolically.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..engine.registry import ENTRIES
from ..engine.tensor_ops import unbroadcast
from ..errors import AutodiffError, InputError, ParseError, Position, ShapeError, Source, variables_hint
from ..execute.columns import entry_column
from ..execute.interpreter import TensorRun, input_arrays, run_forward
from ..language.program import CONST, Program
from ..language.shapes import shape_text
from .backward_claim_slips import (
    OPERATOR_SLIPS,
    axis_changes,
    broadcasts,
    constant_ratio,
    entries_close,
    evaluate_formula,
    operand_text,
    shape_slip,
    sign_slip,
    transposed_slip,
    with_names,
    with_product,
)
from .claim_text import RESULT_PREFIX, parse_right_hand_side
from .claims import (
    AGREES,
    INCONCLUSIVE,
    PROVED,
    WRONG,
    WRONG_RULES,
    Slip,
    UnjudgedClaim,
    proves_gradient_line,
    ratio_text,
    runs_around,
)

__all__ = ["BackwardReport", "GradientLine", "LineResult", "LineVerdict", "UnjudgedLine", "check_backward",
           "read_backward"]

POINTS = 8  # the given values and this many less one random points around them
MAX_PROVED_PROGRAM = 2_000  # a scalar program larger than this many operations: lines sampled, not proved
MAX_SUBSETS_OF = 6  # a variable used more often is matched whole, one statement or one use at a time

_HEAD = re.compile(r"\s*d([A-Za-z_][A-Za-z0-9_]*)(?:\s*/\s*d([A-Za-z_][A-Za-z0-9_]*))?\s*(\+=|=)")


# --- reading --------------------------------------------------------------------------------------


@dataclass
class GradientLine:
    """One line of a backward pass: ``gradient`` (``dNAME``) of the program's ``variable``,
    given (``=``) or added to (``+=``, ``accumulates``) by ``expression``."""

    variable: str
    gradient: str
    accumulates: bool
    expression: Program
    rhs: str
    written: str
    where: str  # FILE:LINE
    line: int
    source: Source
    rhs_offset: int  # where the right-hand side starts in the line (0-based: the column of '=' or '+=''s end)
    uses: list[str] = field(default_factory=list)  # the gradients it uses, as variable names

    @property
    def operator(self) -> str:
        return "+=" if self.accumulates else "="


def read_backward(source: Source, program: Program, output: str) -> list[GradientLine]:
    """Every gradient line of ``source``; a ParseError or InputError at its FILE:LINE:COLUMN."""
    variables = set(program.variables)
    given: dict[str, str] = {}  # gradient name -> variable, for the lines below
    lines: list[GradientLine] = []
    for number, raw in enumerate(source.text.split("\n"), start=1):
        content = raw.rstrip("\r").split("#", 1)[0]
        if not content.strip():
            continue
        head = _HEAD.match(content)
        if head is None:
            start = len(content) - len(content.lstrip())
            raise ParseError("expected a gradient line, 'dNAME = expression' or 'dNAME += expression'",
                             Position(number, start + 1, max(1, len(content.strip().split("=")[0].strip()))),
                             source, "e.g. dprobs = (1/probs) * dlogprobs, where probs is a variable of the program")
        variable = _variable(source, number, head, program, output)
        gradient = f"d{variable}"
        accumulates = head.group(3) == "+="
        if accumulates and gradient not in given:
            raise ParseError(f"'{gradient} +=' adds to a gradient that no line above gives", _at(number, head, 3),
                             source, f"give its first contribution with '{gradient} = ...' first")
        if not accumulates and gradient in given:
            raise ParseError(f"{gradient} is given a second time with '=', which would lose the first "
                             f"contribution", _at(number, head, 3), source,
                             f"add a second contribution with '{gradient} += ...'")
        # Gradients not given yet are read too, so that using one says where it must come from.
        pending = {f"d{name}" for name in variables} - variables - set(given)
        rhs = content[head.end():]
        expression = parse_right_hand_side(source, number, content, head.end(), variables | set(given) | pending)
        _refuse_unclear_names(source, number, head.end(), expression, variables, given, pending)
        uses = [given[v.name] for v in expression.inputs if v.name in given]
        given[gradient] = variable
        lines.append(GradientLine(variable, gradient, accumulates, expression, rhs.strip(), content.strip(),
                                  f"{source.name}:{number}", number, source, head.end(), uses))
    if not lines:
        raise ParseError("no gradient line here: a line is 'dNAME = expression', e.g. 'dprobs = dlogprobs / probs'",
                         Position(1, 1), source)
    return lines


def _refuse_unclear_names(source: Source, number: int, offset: int, expression: Program, variables: set[str],
                          given: Mapping[str, str], pending: set[str]) -> None:
    """An error at the first name of the right-hand side that is a gradient no line above gives,
    or both a variable of the program and a gradient given above (after 'dL/dx = ...', 'dx')."""
    for used in expression.inputs:
        where = Position(number, offset + max(1, used.position.column - len(RESULT_PREFIX)), used.position.width)
        if used.name in pending:
            raise InputError(f"'{used.name}' is not a variable of the program (nor defined above)", where, source,
                             f"{used.name} is the gradient of {used.name[1:]}, which no line above gives: the lines "
                             f"go from the loss back, so write '{used.name} = ...' before this line")
        if used.name in given and used.name in variables:
            raise ParseError(f"'{used.name}' is ambiguous: it is a variable of the program and, since a line "
                             f"above, the gradient of {given[used.name]}", where, source,
                             f"rename the program's variable {used.name}")


def _at(number: int, match: re.Match[str], group: int) -> Position:
    return Position(number, match.start(group) + 1, max(1, match.end(group) - match.start(group)))


def _variable(source: Source, number: int, head: re.Match[str], program: Program, output: str) -> str:
    """The variable a head ``dNAME`` (or ``dLOSS/dNAME``) names, or an error at its place."""
    variables = program.variables
    if head.group(2) is not None:
        if head.group(1) != output:
            raise InputError(f"'d{head.group(1)}/...': a backward pass is of the output, {output}",
                             _at(number, head, 1), source, f"write d{output}/d{head.group(2)}, or d{head.group(2)}")
        name, group = head.group(2), 2
    else:
        name, group = head.group(1), 1
        if f"d{name}" in variables and name in variables:
            raise ParseError(f"'d{name}' is ambiguous: the program has variables named both d{name} and {name}",
                             _at(number, head, 1), source, f"write d{output}/d{name} for the gradient of {name}")
    if name not in variables:
        raise InputError(f"'d{name}' names the gradient of '{name}', which is not a variable of the program",
                         Position(number, head.start(group), len(name) + 1), source,
                         variables_hint(sorted(variables), [name]))
    return name


# --- judging --------------------------------------------------------------------------------------


@dataclass
class Entry:
    """Where a line and the gradient differ: the entry (``dW[1, 0]``), both values, their difference."""

    entry: str
    claimed: float | None
    correct: float
    difference: float | None


@dataclass
class LineVerdict:
    """A line's verdict in one reading (with the true gradients, or in the person's chain)."""

    verdict: str
    reason: str = ""
    first: Entry | None = None  # the first entry that differs (in reading order)
    largest: Entry | None = None  # the entry that differs most
    where: str = ""  # "at the given values", "at a random point near the given values"
    slip: Slip | None = None
    causes: list[int] = field(default_factory=list)  # in the chain: the file's lines whose error spills into this one
    note: str = ""  # in the chain: a gradient used before a later line adds to it


@dataclass
class LineResult:
    line: GradientLine
    covers: str  # what the line is judged against: "the whole gradient", "the contribution through ..."
    given: LineVerdict
    chain: LineVerdict


@dataclass
class BackwardReport:
    results: list[LineResult]
    output: str
    points: int

    @property
    def verdict(self) -> str:
        verdicts = {r.given.verdict for r in self.results} | {r.chain.verdict for r in self.results}
        for worst in (WRONG, INCONCLUSIVE):
            if worst in verdicts:
                return worst
        return AGREES


@dataclass(frozen=True)
class _Use:
    """One use of a variable: operand ``slot`` of the instruction at ``register``, in the statement
    that defines ``statement`` (``h2 = h * h`` uses h twice, as explain and micrograd count it).
    The output's own seed is the use at register -1."""

    statement: str
    register: int
    slot: int


class _Point:
    """One run of the program: its values, true gradients and each use's contribution."""

    def __init__(self, run: TensorRun, output: str, given: bool) -> None:
        self.run = run
        self.given = given
        self.output = output
        self.adjoints = run.adjoints(output)
        self.statements = _statements(run.program)
        self._contributions: dict[str, dict[_Use, Any]] = {}

    def value(self, name: str) -> Any:
        return self.run.value(name)

    def truth(self, variable: str) -> Any:
        register = self.run.register(variable)
        found = self.adjoints.get(register)
        return np.zeros_like(self.run.values[register]) if found is None else found

    def contributions(self, variable: str) -> dict[_Use, Any]:
        """Each use of ``variable`` (in program order) and the share of the gradient that comes
        through it; the output's own share is its seed, 1."""
        if variable in self._contributions:
            return self._contributions[variable]
        run = self.run
        register = run.register(variable)
        shares: dict[_Use, Any] = {}
        if variable == self.output:
            shares[_Use(variable, -1, -1)] = np.ones_like(run.values[register])
        with np.errstate(all="ignore"):
            for consumer, (_, first, second, _, _) in enumerate(run.rows):
                if register not in (first, second) or self.adjoints.get(consumer) is None:
                    continue
                grads = run.vjp(consumer, self.adjoints[consumer])
                operands = (first,) if second < 0 else (first, second)
                for slot, (operand, grad) in enumerate(zip(operands, grads)):
                    if operand == register and grad is not None:
                        shares[_Use(self.statements[consumer], consumer, slot)] = grad
        self._contributions[variable] = shares
        return shares


def _statements(program: Program) -> list[str]:
    """For each register, the variable of the statement that computes it."""
    ends = sorted((v.register, v.name) for v in program.variables.values())
    owners: list[str] = []
    at = 0
    for register in range(len(program.instructions)):
        while at < len(ends) - 1 and ends[at][0] < register:
            at += 1
        owners.append(ends[at][1])
    return owners


def check_backward(program: Program, values: Mapping[str, Any], lines: Sequence[GradientLine], output: str, *,
                   seed: int = 0) -> BackwardReport:
    """Each line's verdict with the true gradients it uses and in the person's own chain.  An
    error of the program at the given values is raised as it is (it is the program's)."""
    base = input_arrays(program, values, seed)
    first = run_forward(program, base)
    if np.ndim(first.value(output)):
        variable = program.variables[output]
        raise UnjudgedClaim(f"'{output}' has shape {shape_text(np.shape(first.value(output)))}: a backward pass "
                            "starts from a number, the loss", variable.position, program.source,
                            f"name the loss with --output, or end the program with sum({output}) or mean({output})")
    points = [_Point(first, output, True)]
    points += [_Point(run, output, False) for run in runs_around(program, base, first, seed, 0.5, POINTS)]
    judge = _Judge(program, lines, points)
    judge.symbolic = (not program.has_tensors and len(program.instructions) <= MAX_PROVED_PROGRAM
                      and all(np.ndim(v) == 0 for v in first.values))
    return BackwardReport(judge.run(), output, len(points))


class _Judge:
    """The two readings of a backward pass, line after line."""

    def __init__(self, program: Program, lines: Sequence[GradientLine], points: list[_Point]) -> None:
        self.program = program
        self.lines = list(lines)
        self.points = points
        self.sizes = sorted({size for p in points[:1] for v in p.run.values for size in np.shape(v) if size > 1})
        self.remaining: dict[str, list[_Use]] = {}  # each variable's uses no line has covered yet
        self.mine: list[dict[str, Any]] = [{} for _ in points]  # the person's chain: gradient -> value
        self.last_line: dict[str, int] = {}  # gradient -> the index of the line that last set it
        self.chain_ok: dict[int, bool] = {}
        self.symbolic = False  # a scalar program: a line that gives a whole gradient may be proved

    def run(self) -> list[LineResult]:
        results = []
        for index, line in enumerate(self.lines):
            last = not any(later.gradient == line.gradient for later in self.lines[index + 1:])
            results.append(self._line(index, line, last))
        return results

    # -- the reading with the true gradients

    def _line(self, index: int, line: GradientLine, last: bool) -> LineResult:
        shares = [p.contributions(line.variable) for p in self.points]
        if line.variable not in self.remaining:
            self.remaining[line.variable] = list(shares[0])
        remaining = self.remaining[line.variable]
        claimed = [self._evaluate(line, p, {g: p.truth(v) for g, v in _gradients(line)}) for p in self.points]
        if line.accumulates and not remaining:  # every use already counted: this adds one twice
            return self._extra(index, line, claimed, shares)
        shape_error = next((c for c in claimed if isinstance(c, ShapeError)), None)
        options = _subsets(remaining, whole_first=last)
        matched = None
        covered: Sequence[_Use]
        if shape_error is None:
            matched = next((s for s in options if self._agrees(claimed, self._target(shares, s, line))), None)
        if matched is not None and (not last or len(matched) == len(remaining)):
            verdict = self._agreement(self._target(shares, matched, line))
            covered = matched
            whole = last and not line.accumulates and len(matched) == len(shares[0])
            if whole and self.symbolic and proves_gradient_line(self.program, self.points[0].output, line.variable,
                                                                line.expression, dict(_gradients(line))):
                verdict = LineVerdict(PROVED, "the line minus the gradient simplifies to 0")
        elif matched is not None:  # right as far as it goes, but a use is left out
            covered = remaining
            missing = [s for s in remaining if s not in matched]
            verdict = self._differ(claimed, self._target(shares, covered, line), line)
            verdict.slip = self._missing(line, missing)
        else:
            covered, verdict = self._wrong(line, claimed, shares, remaining, options, last, shape_error)
        self.remaining[line.variable] = [s for s in remaining if s not in covered]
        chain = self._chain(index, line, self._target(shares, covered, line))
        return LineResult(line, self._covers(line, covered, shares), verdict, chain)

    def _extra(self, index: int, line: GradientLine, claimed: list[Any], shares: Sequence[Mapping[_Use, Any]]
               ) -> LineResult:
        """A '+=' line after the lines above have counted every use: it should add nothing."""
        zeros = self._target(shares, (), line)
        if self._agrees(claimed, zeros):
            verdict = self._agreement(zeros)
        else:
            verdict = self._differ(claimed, zeros, line)
            verdict.slip = Slip("extra contribution", f"an extra contribution: the lines above already count every "
                                                      f"use of {line.variable}, so this one counts a use twice")
        return LineResult(line, "nothing (every use is counted above)", verdict, self._chain(index, line, zeros))

    def _evaluate(self, line: GradientLine, point: _Point, gradients: Mapping[str, Any]) -> Any:
        """The line's value at ``point``, or the error that stops it (a ShapeError, undefined)."""
        inputs = {}
        for variable in line.expression.inputs:
            inputs[variable.name] = gradients[variable.name] if variable.name in gradients else \
                point.value(variable.name)
        try:
            value = np.asarray(run_forward(line.expression, inputs).value(line.expression.result), dtype=float)
        except AutodiffError as error:
            return error
        shape = np.shape(point.value(line.variable))
        if line.accumulates and np.shape(value) != shape and broadcasts(np.shape(value), shape):
            return np.broadcast_to(value, shape)  # '+=' stretches what it adds, as in NumPy and PyTorch
        return value

    def _target(self, shares: Sequence[Mapping[_Use, Any]], uses: Sequence[_Use], line: GradientLine) -> list[Any]:
        """The sum of the contributions of ``uses`` at each point (zeros for none)."""
        targets = []
        for point, share in zip(self.points, shares):
            total = np.zeros_like(point.value(line.variable))
            for use in uses:
                total = total + share[use]
            targets.append(total)
        return targets

    def _agrees(self, claimed: Sequence[Any], targets: Sequence[Any]) -> bool:
        compared = 0
        for value, target in zip(claimed, targets):
            if not np.all(np.isfinite(target)):
                continue
            if isinstance(value, AutodiffError) or np.shape(value) != np.shape(target):
                return False
            if not np.all(entries_close(value, target)):
                return False
            compared += 1
        return compared > 0

    def _agreement(self, targets: Sequence[Any]) -> LineVerdict:
        """AGREES, or INCONCLUSIVE where only the given values could be compared: one point cannot
        tell a line right there alone from a right one (as check --claim says)."""
        compared = sum(bool(np.all(np.isfinite(t))) for t in targets)
        if compared < 2:
            return LineVerdict(INCONCLUSIVE, "agrees only at the given values: no random point around them could be "
                                             "compared (the program or its gradient is undefined there), and one "
                                             "point cannot tell a line right there alone from a right one")
        return LineVerdict(AGREES, f"equal at {compared} points (sampled, not proved)")

    def _wrong(self, line: GradientLine, claimed: list[Any], shares: Sequence[Mapping[_Use, Any]], remaining: list[_Use],
               options: list[tuple[_Use, ...]], last: bool, shape_error: ShapeError | None
               ) -> tuple[Sequence[_Use], LineVerdict]:
        """A line no set of uses explains: the slip, against the uses it most likely meant."""
        default = tuple(remaining) if last else tuple(remaining[-1:])
        for statements in [default] + [s for s in options if s != default]:
            targets = self._target(shares, statements, line)
            slip = self._slip(line, claimed, targets, shares, statements)
            if slip is not None:
                break
        else:
            statements, targets, slip = default, self._target(shares, default, line), None
        if shape_error is not None and slip is None:
            raise _located(shape_error, line)
        verdict = self._differ(claimed, targets, line)
        verdict.slip = slip or verdict.slip
        return statements, verdict

    def _differ(self, claimed: Sequence[Any], targets: Sequence[Any], line: GradientLine) -> LineVerdict:
        """WRONG, with the first entry that differs and the largest difference at the first point
        where they differ; INCONCLUSIVE where no point could be compared."""
        for point, value, target in zip(self.points, claimed, targets):
            if not np.all(np.isfinite(target)):
                continue
            where = "at the given values" if point.given else "at a random point near the given values"
            if isinstance(value, ShapeError):  # its shapes do not fit: no entry to show
                return LineVerdict(WRONG, f"the line cannot be computed: {value.message}", where=where,
                                   slip=Slip("shape", f"the line cannot be computed: {value.message}"))
            if isinstance(value, AutodiffError):
                entry = Entry(entry_column(line.gradient, (0,) * np.ndim(target)), None, float(np.ravel(target)[0]), None)
                return LineVerdict(WRONG, f"the line is undefined {where}: {value.message}", entry, entry, where,
                                   Slip("undefined", f"the line is undefined {where} ({value.message}), where "
                                                     f"{line.gradient} is defined"))
            if np.shape(value) != np.shape(target):
                return LineVerdict(WRONG, f"the line has shape {shape_text(np.shape(value))}; {line.gradient} has "
                                          f"{line.variable}'s shape, {shape_text(np.shape(target))}", where=where,
                                   slip=Slip("shape", f"the line has shape {shape_text(np.shape(value))}, and "
                                                      f"{line.gradient} has {line.variable}'s shape, "
                                                      f"{shape_text(np.shape(target))}"))
            close = entries_close(value, target)
            if np.all(close):
                continue
            gap = np.where(close, 0.0, np.abs(value - target))
            first = np.unravel_index(int(np.argmax(~close)), np.shape(close)) if np.ndim(close) else ()
            worst = np.unravel_index(int(np.argmax(gap)), np.shape(gap)) if np.ndim(gap) else ()
            return LineVerdict(WRONG, "", _entry_at(line.gradient, value, target, first),
                               _entry_at(line.gradient, value, target, worst), where)
        return LineVerdict(INCONCLUSIVE, "no point tried gives a finite gradient to compare with")

    def _missing(self, line: GradientLine, missing: Sequence[_Use]) -> Slip:
        described = " and ".join(self._statement(s) for s in dict.fromkeys(u.statement for u in missing))
        return Slip("missing contribution",
                    f"a missing contribution: {line.variable} is also used {described}, and no line adds "
                    f"that use's share (a second '{line.gradient} += ...')")

    def _statement(self, name: str) -> str:
        variable = self.program.variables[name]
        number = variable.position.line
        return f"at line {number} ({self.program.source.line(number).strip()})"

    def _covers(self, line: GradientLine, uses: Sequence[_Use], shares: Sequence[Mapping[_Use, Any]]) -> str:
        if len(uses) == len(shares[0]) or not uses:
            return "the whole gradient"
        parts = []
        for statement in dict.fromkeys(u.statement for u in uses):
            where = f"line {self.program.variables[statement].position.line} ({statement} = ...)"
            covered = sum(u.statement == statement for u in uses)
            total = sum(u.statement == statement for u in shares[0])
            if covered < total:
                count = "one" if covered == 1 else str(covered)
                where = f"{count} of the {total} uses of {line.variable} at {where}"
            parts.append(where)
        return "the contribution through " + " and ".join(parts)

    # -- naming the slip

    def _slip(self, line: GradientLine, claimed: list[Any], targets: list[Any],
              shares: Sequence[Mapping[_Use, Any]], statements: Sequence[_Use]) -> Slip | None:
        pairs = [(c, t) for c, t in zip(claimed, targets) if np.all(np.isfinite(t))]
        if not pairs:
            return None
        if any(isinstance(c, ShapeError) for c, _ in pairs):
            return self._transposed_product(line, targets)
        if any(isinstance(c, AutodiffError) for c, _ in pairs):
            return None
        if any(np.shape(c) != np.shape(t) for c, t in pairs):
            slip = shape_slip(line, pairs)
            return (self._wrong_axis(line, targets, slip.message) or slip) if slip.kind == "shape" else slip
        for finder in (transposed_slip, sign_slip, self._factor):
            slip = finder(line, pairs)
            if slip is not None:
                return slip
        return (self._wrong_axis(line, targets, "") or self._local(line, claimed, targets, shares, statements)
                or self._transposed_product(line, targets))

    def _factor(self, line: GradientLine, pairs: Sequence[tuple[Any, Any]]) -> Slip | None:
        ratio = constant_ratio(pairs)
        if ratio is None:
            return None
        ops = self._downstream(line.variable)
        said = self._factor_causes(ops)
        for value, written, text in said:
            if abs(ratio - value) <= 1e-9 * value:
                return Slip("factor", f"off by a factor of {written}: the line is {written} times "
                                      f"{line.gradient} ({text})")
        written = ratio_text(ratio) or f"{ratio:g}"
        return Slip("factor", f"off by a factor of {written}: the line is {written} times {line.gradient}")

    def _factor_causes(self, ops: Sequence[Any]) -> list[tuple[float, str, str]]:
        """The factors a slip on this path could put in, each with its name: n against n - 1 only
        where a variance is on the path (var, std, or a sum divided by n - 1), the 2 of a square
        where a square is, a mean's 1/n for every size."""
        constants = {i: ins.param for i, ins in enumerate(self.program.instructions) if ins.op == CONST}
        divisors = {constants[ins.args[1]] for ins in ops if ins.op == "/" and ins.args[1] in constants}
        divisors |= {1 / constants[a] for ins in ops if ins.op == "*" for a in ins.args
                     if constants.get(a) not in (None, 0)}
        variance = any(_corrected(ins.op) for ins in ops)
        found = []
        for n in self.sizes:
            if variance or any(abs(d - (n - 1)) <= 1e-9 * n for d in divisors):
                found += [(n / (n - 1), f"{n}/{n - 1}", f"n - 1 = {n - 1} where n = {n} belongs"),
                          ((n - 1) / n, f"{n - 1}/{n}", f"n = {n} where n - 1 = {n - 1} belongs")]
        if any((ins.op == "**c" and ins.param == 2) or (ins.op == "*" and ins.args[0] == ins.args[1]) for ins in ops):
            found += [(0.5, "1/2", "the 2 of a square left out"), (2.0, "2", "the 2 of a square counted twice")]
        for n in self.sizes:
            found += [(1 / n, f"1/{n}", f"a 1/n too many, n = {n}"), (float(n), f"{n}", f"a 1/n missing, n = {n}")]
        return found

    def _downstream(self, variable: str) -> list[Any]:
        """The instructions that read ``variable``, directly or through others: its path to the output."""
        instructions = self.program.instructions
        reached = {self.program.variables[variable].register}
        found = []
        for register in range(min(reached), len(instructions)):
            instruction = instructions[register]
            if any(a in reached for a in instruction.args):
                reached.add(register)
                found.append(instruction)
        return found

    def _local(self, line: GradientLine, claimed: list[Any], targets: list[Any], shares: Sequence[Mapping[_Use, Any]],
               uses: Sequence[_Use]) -> Slip | None:
        """A wrong local derivative at one use: the line equals the right contribution with one
        use's local derivative replaced by a usual wrong one (or left out)."""
        for consumer, slot in ((u.register, u.slot) for u in uses if u.register >= 0):
            for wrong_values, message in self._wrong_locals(line, consumer, slot):
                candidate = [t - self._share(p, consumer, slot) + w for p, t, w in zip(self.points, targets, wrong_values)]
                if self._agrees(claimed, candidate):
                    return Slip("local derivative", message)
        return None

    def _share(self, point: _Point, consumer: int, slot: int) -> Any:
        g = point.adjoints.get(consumer)
        if g is None:
            return 0.0
        with np.errstate(all="ignore"):
            grad = point.run.vjp(consumer, g)[slot]
        return 0.0 if grad is None else grad

    def _wrong_locals(self, line: GradientLine, consumer: int, slot: int) -> list[tuple[list[Any], str]]:
        """Each usual wrong local derivative of the op at ``consumer`` in operand ``slot`` (check
        --claim's table, ``claims.WRONG_RULES``, and a derivative left out): its share at every
        point, and the sentence that names it."""
        run = self.points[0].run
        op, first, second, param, _ = run.rows[consumer]
        entry = ENTRIES[op]
        if not entry.elementwise:  # a tensor op: its local derivative is not one formula, but it may be left out
            return self._tensor_local_left_out(consumer, first, op, param)
        names = self.program.names_by_register()
        words = {"x": names.get(first, "u"), "y": names.get(second, "v"),
                 "c": f"{param:g}" if isinstance(param, (int, float)) else "c"}
        statement = self._statement(self.points[0].statements[consumer])
        written = entry.written.format(**words)
        right = with_names(entry.rule[slot], words, written)
        rules = [*WRONG_RULES.get((op, slot), ()), *OPERATOR_SLIPS.get((op, slot), ()), ("1", "1")]
        found = []
        for formula, spelled in rules:
            shares = []
            for point in self.points:
                r = point.run
                given = {"x": r.values[first], "out": r.values[consumer],
                         "y": r.values[second] if second >= 0 else 0.0, "c": param if param is not None else 0.0}
                local = evaluate_formula(formula, given)
                g = point.adjoints.get(consumer)
                if local is None:
                    break
                with np.errstate(all="ignore"):
                    shares.append(0.0 if g is None else
                                  unbroadcast(np, g * local, np.shape(r.values[(first, second)[slot]]), 0))
            else:
                what = f"the local derivative of {written}, {statement},"
                if formula == "1":
                    message = f"{what} is left out: the line passes the upstream gradient through unchanged, " \
                              f"where it is {right}"
                else:
                    message = f"{what} written as {with_names(spelled, words, written)} instead of {right}"
                found.append((shares, message))
        return found

    def _tensor_local_left_out(self, consumer: int, operand: int, op: str, param: Any) -> list[tuple[list[Any], str]]:
        """A one-operand tensor op that keeps its operand's shape (log_softmax, softmax, a transpose
        of a square matrix) with its local derivative left out: the upstream gradient passed through."""
        tensor_op = ENTRIES[op]
        runs = [point.run for point in self.points]
        if tensor_op.arity != 1 or any(np.shape(r.values[consumer]) != np.shape(r.values[operand]) for r in runs):
            return []
        shares = [np.zeros_like(r.values[operand]) if p.adjoints.get(consumer) is None else p.adjoints[consumer]
                  for r, p in zip(runs, self.points)]
        name = self.program.names_by_register().get(operand, "u")
        written = tensor_op.written_param if param is not None and tensor_op.written_param else tensor_op.written
        written = written.format(x=name, axis=param, index=param)
        statement = self._statement(self.points[0].statements[consumer])
        message = (f"the local derivative of {written}, {statement}, is left out: the line passes the upstream "
                   "gradient through unchanged")
        return [(shares, message)]

    def _transposed_product(self, line: GradientLine, targets: list[Any]) -> Slip | None:
        """A product ``a @ b`` of the line written with an operand transposed (or not transposed):
        the line with one of its products changed that way agrees."""
        expression = line.expression
        for register, instruction in enumerate(expression.instructions):
            if instruction.op != "@":
                continue
            a, b = instruction.args
            for change, spelled in ((lambda x, y: x.T @ y, "transpose({a}) @ {b}"),
                                    (lambda x, y: x @ y.T, "{a} @ transpose({b})"),
                                    (lambda x, y: x.T @ y.T, "transpose({a}) @ transpose({b})"),
                                    (lambda x, y: (x @ y).T, "transpose({a} @ {b})"),
                                    (lambda x, y: y.T @ x.T, "transpose({b}) @ transpose({a})")):
                candidate = []
                for point in self.points:
                    inputs = {v.name: point.truth(_variable_of(line, v.name)) if _is_gradient(line, v.name)
                              else point.value(v.name) for v in expression.inputs}
                    candidate.append(with_product(expression, register, inputs, change))
                if self._agrees(candidate, targets):
                    names = [operand_text(expression, r) for r in (a, b)]
                    position = self._column(line, expression.source.position(instruction.position).column)
                    return Slip("transposed product",
                                f"a transposed product: {names[0]} @ {names[1]} (column {position}) should be "
                                + spelled.format(a=names[0], b=names[1]))
        return None

    def _wrong_axis(self, line: GradientLine, targets: list[Any], shapes: str) -> Slip | None:
        """A reduction of the line over the wrong axis: with that axis changed, the line agrees
        (``shapes``: what its shape and the gradient's are, where they differ)."""
        inputs = [{v.name: point.truth(_variable_of(line, v.name)) if _is_gradient(line, v.name)
                   else point.value(v.name) for v in line.expression.inputs} for point in self.points]
        for register, axis, other, changed in axis_changes(line.expression, inputs[0]):
            candidate = []
            for given in inputs:
                try:
                    candidate.append(np.asarray(run_forward(changed, given).value(changed.result), dtype=float))
                except AutodiffError as error:
                    candidate.append(error)
            if self._agrees(candidate, targets):
                instruction = line.expression.instructions[register]
                column = self._column(line, line.expression.source.position(instruction.position).column)
                said = f"{shapes}; " if shapes else ""
                return Slip("wrong axis", f"summed over the wrong axis: {said}{instruction.op}(..., {axis}) (column "
                                          f"{column}) should be over axis {other}, {instruction.op}(..., {other})")
        return None

    def _column(self, line: GradientLine, column: int) -> int:
        return _file_column(line, column)

    # -- the person's own chain

    def _chain(self, index: int, line: GradientLine, targets: list[Any]) -> LineVerdict:
        unset = [g for g, _ in _gradients(line) if any(g not in mine for mine in self.mine)]
        if unset:  # an earlier line of the chain could not be computed: nothing to feed forward
            for mine in self.mine:
                mine.pop(line.gradient, None)
            self.chain_ok[index] = False
            self.last_line[line.gradient] = index
            causes = sorted({self.lines[self.last_line[g]].line for g in unset})
            return LineVerdict(INCONCLUSIVE, f"cannot be judged: {', '.join(unset)} could not be computed in your "
                                             "chain", causes=causes)
        values = []
        for point, mine in zip(self.points, self.mine):
            value = self._evaluate(line, point, {g: mine[g] for g, _ in _gradients(line)})
            values.append(value)
            if isinstance(value, AutodiffError):
                mine.pop(line.gradient, None)  # no value to feed forward: the lines using it cannot be judged
            else:
                mine[line.gradient] = value if not line.accumulates or line.gradient not in mine else \
                    mine[line.gradient] + value
        causes = sorted({self.lines[self.last_line[g]].line for g, _ in _gradients(line)
                         if not self.chain_ok.get(self.last_line[g], True)})
        self.last_line[line.gradient] = index
        failed = next((v for v in values if isinstance(v, AutodiffError)), None)
        if failed is not None and causes:
            self.chain_ok[index] = False
            return LineVerdict(INCONCLUSIVE, f"cannot be judged: {failed.message}", causes=causes)
        ok = self._agrees(values, targets)
        self.chain_ok[index] = ok
        if ok:
            return self._agreement(targets)
        verdict = self._differ(values, targets, line)
        verdict.slip = None
        verdict.causes = causes
        verdict.note = self._used_early(index, line)
        return verdict

    def _used_early(self, index: int, line: GradientLine) -> str:
        """Which gradients the line uses before a later '+=' line completes them, said as a note."""
        notes = []
        for gradient, _ in _gradients(line):
            later = next((other for other in self.lines[index + 1:] if other.gradient == gradient), None)
            if later is not None and gradient != line.gradient:
                notes.append(f"{gradient} is used here before line {later.line} adds to it")
        return "; ".join(notes)


# --- helpers ---------------------------------------------------------------------------------------


def _gradients(line: GradientLine) -> list[tuple[str, str]]:
    """The gradients the line uses: (gradient name, variable)."""
    return [(f"d{v}", v) for v in dict.fromkeys(line.uses)]


def _corrected(op: str) -> bool:
    """An op that divides by n - correction (var, std), as its registry entry's arguments say."""
    return any(argument.name == "correction" for argument in getattr(ENTRIES.get(op), "arguments", ()))


def _is_gradient(line: GradientLine, name: str) -> bool:
    return name in {g for g, _ in _gradients(line)}


def _variable_of(line: GradientLine, name: str) -> str:
    return dict(_gradients(line))[name]


def _subsets(uses: Sequence[_Use], whole_first: bool) -> list[tuple[_Use, ...]]:
    """The sets of uses a line may cover, the likeliest first: all of them (for a gradient's last
    line), then one, two... (a variable used more than MAX_SUBSETS_OF times: one use, or the uses
    of some whole statements)."""
    items = list(uses)
    if len(items) > MAX_SUBSETS_OF:
        groups = [tuple(u for u in items if u.statement == s) for s in dict.fromkeys(u.statement for u in items)]
        sizes = range(1, len(groups) + 1) if len(groups) <= MAX_SUBSETS_OF else (1, len(groups))
        found = [(u,) for u in items]
        found += [tuple(u for group in c for u in group) for size in sizes for c in itertools.combinations(groups, size)]
    else:
        found = [c for size in range(1, len(items) + 1) for c in itertools.combinations(items, size)]
    found = [tuple(reversed(c)) for c in dict.fromkeys(found)]
    found.sort(key=len)
    if whole_first and items:
        found = [tuple(reversed(items))] + [c for c in found if len(c) != len(items)]
    return found or [()]


def _entry_at(name: str, value: Any, target: Any, index: tuple[Any, ...]) -> Entry:
    index = tuple(int(i) for i in index)
    claimed, correct = float(value[index]), float(target[index])
    return Entry(entry_column(name, index), claimed, correct, claimed - correct)


class UnjudgedLine(UnjudgedClaim):
    """A gradient line that cannot be computed with the true gradients it uses (a shape error)."""


def _located(error: ShapeError, line: GradientLine) -> AutodiffError:
    """A shape error of the line's right-hand side at its FILE:LINE:COLUMN."""
    position = error.position or Position(1, len(RESULT_PREFIX) + 1)
    column = _file_column(line, position.column)
    return UnjudgedLine(f"{line.gradient}: {error.message}", Position(line.line, column, position.width),
                        line.source, error.hint or f"a line of {line.gradient} has {line.variable}'s shape")


def _file_column(line: GradientLine, column: int) -> int:
    """The column in the file of ``column`` in the right-hand side as parsed (after RESULT_PREFIX)."""
    return line.rhs_offset + max(1, column - len(RESULT_PREFIX))


