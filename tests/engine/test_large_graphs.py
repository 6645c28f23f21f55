"""Deep and wide graphs, traversal order, and micrograd-style surface and accumulation semantics."""

import gc
import math
import sys

import pytest
from _shared import karpathy_graph

from autodiff_cli.engine import DERIVATIVE_RULES, Value, iter_edges, topological_order
from autodiff_cli.engine.graph import paused_cycle_collector as _no_cycle_collection

N = 1_000_000


@pytest.fixture
def no_cycle_collector():
    """Build big graphs without the cycle collector rescanning millions of live nodes.

    The graphs are acyclic, so nothing is lost; this only keeps the file fast (with the
    collector on, building the 3,000,000-node sum takes ~4x longer).  Everything is still
    freed by reference counting when the test ends.
    """
    with _no_cycle_collection():
        yield


def test_chain_of_a_million_multiplications(no_cycle_collector):
    # y = x * k * k * ... * k (N times):  y = x k**N,  dy/dx = k**N
    k = 1.0000001
    x = Value(1.0, label="x")
    y = x
    for _ in range(N):
        y = y * k
    assert sys.getrecursionlimit() < N  # a recursive traversal could not do this
    y.backward()
    # N roundings of relative size <= 2**-53 each: |error| <= N * 1.2e-16 ~ 1.2e-10 relative
    assert math.isclose(x.grad, k**N, rel_tol=1e-9)
    assert math.isclose(y.data, k**N, rel_tol=1e-9)
    # with x = 1 the backward pass multiplies the same numbers in the same order as the forward
    assert x.grad == y.data
    del y
    gc.collect()  # freeing a million-deep chain must not overflow the C stack either


def test_chain_of_a_million_additions(no_cycle_collector):
    # y = x + 1 + 1 + ... (N times) = x + N exactly; dy/dx = 1 exactly
    x = Value(0.5)
    y = x
    for _ in range(N):
        y = y + 1.0
    y.backward()
    assert y.data == 0.5 + N
    assert x.grad == 1.0


def test_chain_of_half_a_million_tanh(no_cycle_collector):
    # t_{i+1} = tanh(t_i) from t_0 = 0: every t_i = 0 and every tanh' = 1, so dy/dx = 1 exactly.
    x = Value(0.0)
    y = x
    for _ in range(N // 2):
        y = y.tanh()
    y.backward()
    assert y.data == 0.0
    assert x.grad == 1.0


def test_sum_of_a_million_terms(no_cycle_collector):
    # s = sum over N terms of x*c  ->  ds/dx = N*c;  c = 0.75, x = 2: every partial sum is exact
    c = 0.75
    x = Value(2.0, label="x")
    s = Value(0.0)
    for _ in range(N):
        s = s + x * c
    s.backward()
    assert s.data == N * 2.0 * c
    assert x.grad == N * c
    assert len(topological_order(s)) == 3 * N + 2  # x, s0, and per term: constant, product, sum


def test_zero_grad_on_a_deep_chain(no_cycle_collector):
    x = Value(1.0)
    y = x
    for _ in range(N // 4):
        y = y * 1.0
    y.backward()
    y.zero_grad()
    assert x.grad == 0.0 and y.grad == 0.0
    y.backward()
    assert x.grad == 1.0


# ---------------------------------------------------------------------------------------------
# topological_order
# ---------------------------------------------------------------------------------------------


def _labelled_graph():
    return karpathy_graph()["L"]


def _bigger_graph():
    """Shared subexpressions, constants, unary and binary ops; every node labelled by position."""
    x, y = Value(0.3, label="x"), Value(-1.2, label="y")
    m = x * y
    n = m.tanh() + m.exp() * x
    p = (n - y) ** 2 + (x / (y * y + 1)).sigmoid()
    q = p * m + 2**x - n.abs().sqrt()
    out = q + q
    for i, node in enumerate(topological_order(out)):
        if not node.label:
            node.label = f"n{i}"
    return out


def _order_by_definition(root):
    """Depth-first from the root, operands in order, each node once, after its operands:
    the order topological_order promises, written the obvious (recursive) way."""
    order, seen = [], set()

    def visit(node):
        if node in seen:
            return
        for operand in node._prev:
            visit(operand)
        seen.add(node)
        order.append(node)

    visit(root)
    return order


def _random_graph(seed: int) -> Value:
    """Leaves, constants, shared subexpressions, x*x, diamonds and chains, at random."""
    rng = __import__("random").Random(seed)
    nodes = [Value(rng.uniform(-1, 1), label=f"x{i}") for i in range(rng.randrange(1, 5))]
    for _ in range(rng.randrange(1, 40)):
        a = rng.choice(nodes[-6:] if rng.random() < 0.7 else nodes)
        b = rng.choice(nodes)
        choice = rng.randrange(6)
        if choice == 0:
            nodes.append(a * b)
        elif choice == 1:
            nodes.append(a + rng.uniform(-1, 1))  # a constant operand
        elif choice == 2:
            nodes.append(a.tanh())
        elif choice == 3:
            nodes.append(a * a)
        elif choice == 4:
            nodes.append(rng.uniform(-1, 1) * a)  # a constant first operand
        else:
            nodes.append(a - b * a)
    return nodes[-1]


@pytest.mark.parametrize("seed", range(200))
def test_topological_order_is_the_depth_first_order_by_definition(seed):
    root = _random_graph(seed)
    assert topological_order(root) == _order_by_definition(root)


def test_topological_order_of_karpathy_graph_is_operands_first_left_to_right():
    # Depth-first, operands in order: a, b, then e = a*b, then c, d = e + c, then f, L = d*f.
    assert [n.label for n in topological_order(_labelled_graph())] == ["a", "b", "e", "c", "d", "f", "L"]


@pytest.mark.parametrize("make", [_labelled_graph, _bigger_graph], ids=["karpathy", "shared_subexpressions"])
def test_topological_order_is_deterministic(make):
    first = [(n.label, n._op, n.data) for n in topological_order(make())]
    second = [(n.label, n._op, n.data) for n in topological_order(make())]
    assert first == second


@pytest.mark.parametrize("make", [_labelled_graph, _bigger_graph], ids=["karpathy", "shared_subexpressions"])
def test_topological_order_puts_operands_before_results(make):
    root = make()
    order = topological_order(root)
    position = {id(n): i for i, n in enumerate(order)}
    assert len(position) == len(order), "a node appears twice"
    assert order[-1] is root
    for node in order:
        for child in node._prev:
            assert position[id(child)] < position[id(node)]
    # every node reachable from the root is in the order
    seen, stack = set(), [root]
    while stack:
        n = stack.pop()
        if id(n) not in seen:
            seen.add(id(n))
            stack.extend(n._prev)
    assert seen == set(position)


def test_shared_node_listed_once():
    a = Value(1.0, label="a")
    b = a * a + a
    order = topological_order(b)
    assert [n.label for n in order].count("a") == 1
    assert len(order) == 3


def test_iter_edges_follows_the_order():
    L = _labelled_graph()
    edges = [(c.label, p.label, d) for c, p, d in iter_edges(topological_order(L))]
    # d e / d a = b, d e / d b = a, d d / d e = d d / d c = 1, d L / d d = f, d L / d f = d
    assert edges == [
        ("a", "e", -3.0),
        ("b", "e", 2.0),
        ("e", "d", 1.0),
        ("c", "d", 1.0),
        ("d", "L", -2.0),
        ("f", "L", 4.0),
    ]


# ---------------------------------------------------------------------------------------------
# zero_grad and repeated backward
# ---------------------------------------------------------------------------------------------


def _grads(root):
    return [(n.label, n.grad) for n in topological_order(root)]


@pytest.mark.parametrize("make", [_labelled_graph, _bigger_graph], ids=["karpathy", "shared_subexpressions"])
def test_zero_grad_then_backward_gives_the_same_gradients(make):
    root = make()
    root.backward()
    first = _grads(root)
    root.zero_grad()
    assert all(g == 0.0 for _, g in _grads(root))
    root.backward()
    assert _grads(root) == first


def test_backward_twice_doubles_leaf_grads_of_a_single_op():
    # L = a*b: after one pass a.grad = b = -3, b.grad = a = 2; a second pass adds the same again.
    a, b = Value(2.0), Value(-3.0)
    L = a * b
    L.backward()
    L.backward()
    assert (a.grad, b.grad) == (-6.0, 4.0)
    assert L.grad == 1.0  # the root is re-seeded, not accumulated


def _sanity_graph(V):
    # micrograd's test_sanity_check graph: only + * relu, which micrograd implements natively,
    # so both libraries build node-for-node the same graph
    x = V(-4.0)
    z = 2 * x + 2 + x
    q = z.relu() + z * x
    h = (z * z).relu()
    y = h + q + q * x
    return y, x


def test_backward_twice_without_zero_grad_on_a_deeper_graph():
    # Without zero_grad, intermediate nodes keep their gradient too, and the second pass pushes
    # it again on top of the first.  L = (a*b)*c, e = a*b:
    #   pass 1: L.grad = 1, e.grad = c = 10, a.grad = b*e.grad = -30
    #   pass 2: L.grad = 1 (re-seeded), e.grad = 10 + 10 = 20, a.grad = -30 + b*20 = -90 = 3 * -30
    # (micrograd does exactly this; PyTorch keeps no .grad on non-leaf tensors, so there a.grad
    # would simply double to -60.)
    a, b, c = Value(2.0), Value(-3.0), Value(10.0)
    L = (a * b) * c
    L.backward()
    L.backward()
    assert a.grad == -90.0
    assert b.grad == 3 * 20.0
    assert c.grad == 2 * -6.0  # c hangs directly off the root: it only doubles


def test_backward_twice_without_zero_grad_matches_micrograd():
    # On a graph micrograd builds node-for-node the same way, repeated passes agree with it.
    # (Graphs using - / neg differ: micrograd builds those from extra * and ** nodes, and
    # those extra intermediates also keep and re-push their gradients.)
    mg = pytest.importorskip("micrograd.engine", reason="micrograd (a test extra) is not installed")
    ours, x = _sanity_graph(Value)
    theirs, mx = _sanity_graph(mg.Value)
    for _ in range(3):
        ours.backward()
        theirs.backward()
        assert x.grad == mx.grad


# ---------------------------------------------------------------------------------------------
# micrograd-style surface
# ---------------------------------------------------------------------------------------------


def test_constructor_label_data_grad():
    a = Value(2.0, label="a")
    assert (a.data, a.grad, a.label, a._op, a._prev) == (2.0, 0.0, "a", "", ())
    assert "data=2.0" in repr(a) and "label='a'" in repr(a)


def test_prev_is_an_ordered_tuple():
    a, b = Value(1.0, label="a"), Value(2.0, label="b")
    assert (a * b)._prev == (a, b)
    assert (b * a)._prev == (b, a)
    assert (a - b)._prev == (a, b)
    assert (a + a)._prev == (a, a)
    assert (-a)._prev == (a,)
    assert (a**2)._prev == (a,)
    assert (a**b)._prev == (a, b)
    assert a.tanh()._prev == (a,)
    for node in (a * b, a - b, -a, a.exp(), a**b):
        assert type(node._prev) is tuple
    # a number operand becomes a constant node in its own position
    two_minus_a = 2 - a
    assert two_minus_a._prev[1] is a
    assert two_minus_a._prev[0].data == 2.0 and two_minus_a._prev[0]._prev == ()


OPS = [
    ("a+b", lambda a, b: a + b, "+"),
    ("a-b", lambda a, b: a - b, "-"),
    ("a*b", lambda a, b: a * b, "*"),
    ("a/b", lambda a, b: a / b, "/"),
    ("a**b", lambda a, b: a**b, "**"),
    ("2**a", lambda a, b: 2**a, "**"),
    ("a**2", lambda a, b: a**2, "**2"),
    ("a**2.0", lambda a, b: a**2.0, "**2"),
    ("a**0.5", lambda a, b: a**0.5, "**0.5"),
    ("a**-1", lambda a, b: a**-1, "**-1"),
    ("-a", lambda a, b: -a, "neg"),
    ("identity", lambda a, b: a.identity(), "="),
    ("tanh", lambda a, b: a.tanh(), "tanh"),
    ("exp", lambda a, b: a.exp(), "exp"),
    ("log", lambda a, b: a.log(), "log"),
    ("sqrt", lambda a, b: a.sqrt(), "sqrt"),
    ("relu", lambda a, b: a.relu(), "relu"),
    ("sigmoid", lambda a, b: a.sigmoid(), "sigmoid"),
    ("sin", lambda a, b: a.sin(), "sin"),
    ("cos", lambda a, b: a.cos(), "cos"),
    ("abs", lambda a, b: a.abs(), "abs"),
]


@pytest.mark.parametrize("fn, op", [pytest.param(fn, op, id=name) for name, fn, op in OPS])
def test_op_strings(fn, op):
    out = fn(Value(1.5), Value(2.0))
    assert out._op == op
    key = "**c" if op.startswith("**") and op != "**" else op
    assert key in DERIVATIVE_RULES
    assert len(DERIVATIVE_RULES[key]) == len(out._prev)


def test_exponent_property():
    a = Value(1.5)
    assert (a**2).exponent == 2.0
    assert (a**-0.5).exponent == -0.5
    assert (a ** Value(2.0)).exponent is None
    assert a.exponent is None


def test_pos_returns_the_same_node_and_identity_a_new_one():
    a = Value(1.5)
    assert +a is a
    b = a.identity()
    assert b is not a and b.data == a.data and b._prev == (a,)
    b.backward()
    assert a.grad == 1.0


def test_single_backward_steps_as_in_the_video():
    # o = tanh(n), n = x1w1 + x2w2 + b; going down one _backward() at a time
    x1, x2, w1, w2 = (
        Value(2.0, label="x1"),
        Value(0.0, label="x2"),
        Value(-3.0, label="w1"),
        Value(1.0, label="w2"),
    )
    b = Value(6.8813735870195432, label="b")
    x1w1 = x1 * w1
    x2w2 = x2 * w2
    s = x1w1 + x2w2
    n = s + b
    o = n.tanh()
    o.grad = 1.0
    o._backward()
    assert math.isclose(n.grad, 0.5, abs_tol=1e-9)  # 1 - tanh(n)**2 = 1 - 1/2
    n._backward()
    assert s.grad == n.grad and b.grad == n.grad  # + passes the gradient through
    s._backward()
    assert x1w1.grad == n.grad and x2w2.grad == n.grad
    x1w1._backward()
    x2w2._backward()
    assert math.isclose(x1.grad, -1.5, abs_tol=1e-9)  # w1 * 0.5
    assert math.isclose(w1.grad, 1.0, abs_tol=1e-9)  # x1 * 0.5
    assert math.isclose(x2.grad, 0.5, abs_tol=1e-9)  # w2 * 0.5
    assert w2.grad == 0.0  # x2 * 0.5
    # a leaf's _backward does nothing
    x1._backward()
    assert x1.grad == pytest.approx(-1.5)


def test_single_backward_step_accumulates():
    a = Value(3.0)
    y = a * a
    y.grad = 1.0
    y._backward()
    assert a.grad == 6.0  # both operand slots are a: 3 + 3
    y._backward()
    assert a.grad == 12.0


def test_hand_built_node_has_no_local_derivatives():
    # micrograd-style Value(data, (children), op): the engine cannot know the derivatives,
    # and says so with NaN rather than a silently wrong number
    a, b = Value(1.0), Value(2.0)
    c = Value(3.0, (a, b), "+")
    assert c._prev == (a, b) and c._op == "+"
    assert all(math.isnan(d) for d in c._local)
    c.backward()
    assert math.isnan(a.grad) and math.isnan(b.grad)


def test_more_than_two_children_rejected():
    with pytest.raises(ValueError):
        Value(1.0, (Value(1.0), Value(2.0), Value(3.0)), "+")
