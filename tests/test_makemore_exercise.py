"""The backprop-ninja exercise (samples/makemore/ninja.ad): its forward loss and every gradient
eval reports equal PyTorch's on the same batch and parameters (where torch is installed), and
HIPS autograd's always; the expected values come from those libraries, not from this one."""

from __future__ import annotations

from pathlib import Path

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

from autodiff_cli.execute.interpreter import evaluate_tensors, input_arrays
from autodiff_cli.language import parse

NINJA = Path(__file__).resolve().parent.parent / "samples" / "makemore" / "ninja.ad"
PARAMETERS = ("C", "W1", "b1", "W2", "b2", "bngain", "bnbias")


def the_run():
    program = parse(NINJA.read_text(), str(NINJA))
    values = input_arrays(program, {}, seed=0)
    return program, values, evaluate_tensors(program, {}, seed=0)


def reference_loss(xp, C, W1, b1, W2, b2, bngain, bnbias, Xb, Yb):
    """The exercise's forward pass, as makemore writes it, in autograd's (or NumPy's) ops."""
    n = Xb.shape[0]
    emb = C[Xb]
    embcat = xp.reshape(emb, (n, -1))
    hprebn = embcat @ W1 + b1
    bnmeani = xp.sum(hprebn, 0, keepdims=True) / n
    bndiff = hprebn - bnmeani
    bnvar = xp.sum(bndiff**2, 0, keepdims=True) / (n - 1)
    bnraw = bndiff * (bnvar + 1e-5) ** -0.5
    h = xp.tanh(bngain * bnraw + bnbias)
    logits = h @ W2 + b2
    norm_logits = logits - np.max(autograd.tracer.getval(logits), 1, keepdims=True)  # detached, as in the post
    counts = xp.exp(norm_logits)
    probs = counts / xp.sum(counts, 1, keepdims=True)
    return -xp.mean(xp.log(probs)[np.arange(n), Yb])


def test_the_loss_and_every_parameters_gradient_equal_autograds():
    _, values, evaluation = the_run()
    Xb, Yb = values["Xb"].astype(int), values["Yb"].astype(int)
    params = [values[name] for name in PARAMETERS]
    loss = lambda *ps: reference_loss(anp, *ps, Xb, Yb)  # noqa: E731
    assert float(evaluation.run.value("loss")) == pytest.approx(float(loss(*params)), rel=1e-12)
    for k, name in enumerate(PARAMETERS):
        want = autograd.grad(loss, k)(*params)
        np.testing.assert_allclose(evaluation.derivatives[name], want, rtol=1e-11, atol=1e-15)


def test_the_loss_and_every_gradient_equal_pytorchs_backward():
    torch = pytest.importorskip("torch")
    program, values, evaluation = the_run()
    t = {name: torch.tensor(values[name], dtype=torch.float64, requires_grad=name in PARAMETERS)
         for name in (*PARAMETERS, "Xb", "Yb")}
    Xb, Yb = t["Xb"].long(), t["Yb"].long()
    n = Xb.shape[0]
    emb = t["C"][Xb]
    embcat = emb.view(n, -1)
    hprebn = embcat @ t["W1"] + t["b1"]
    bnmeani = 1 / n * hprebn.sum(0, keepdim=True)
    bndiff = hprebn - bnmeani
    bndiff2 = bndiff**2
    bnvar = 1 / (n - 1) * bndiff2.sum(0, keepdim=True)
    bnvar_inv = (bnvar + 1e-5) ** -0.5
    bnraw = bndiff * bnvar_inv
    hpreact = t["bngain"] * bnraw + t["bnbias"]
    h = torch.tanh(hpreact)
    logits = h @ t["W2"] + t["b2"]
    logit_maxes = logits.max(1, keepdim=True).values
    norm_logits = logits - logit_maxes
    counts = norm_logits.exp()
    counts_sum = counts.sum(1, keepdims=True)
    counts_sum_inv = counts_sum**-1
    probs = counts * counts_sum_inv
    logprobs = probs.log()
    loss = -logprobs[range(n), Yb].mean()
    intermediates = {"emb": emb, "embcat": embcat, "hprebn": hprebn, "bnmeani": bnmeani, "bndiff": bndiff,
                     "bndiff2": bndiff2, "bnvar": bnvar, "bnvar_inv": bnvar_inv, "bnraw": bnraw,
                     "hpreact": hpreact, "h": h, "logits": logits, "logit_maxes": logit_maxes,
                     "norm_logits": norm_logits, "counts": counts, "counts_sum": counts_sum,
                     "counts_sum_inv": counts_sum_inv, "probs": probs, "logprobs": logprobs}
    for tensor in intermediates.values():
        tensor.retain_grad()
    loss.backward()
    assert float(evaluation.run.value("loss")) == pytest.approx(loss.item(), rel=1e-12, abs=0)
    for name, tensor in {**{p: t[p] for p in PARAMETERS}, **intermediates}.items():
        np.testing.assert_allclose(evaluation.derivatives[name], tensor.grad.numpy(), rtol=1e-11, atol=1e-15,
                                   err_msg=name)


def run_check(claims: str):
    from click.testing import CliRunner

    from autodiff_cli.cli import main

    return CliRunner().invoke(main, ["check", str(NINJA), "--claims", str(NINJA.parent / claims), "--format", "plain"])


def test_the_exercises_backward_pass_agrees_line_by_line():
    result = run_check("ninja.txt")
    assert result.exit_code == 0, result.output
    assert "30 lines, each judged with the true gradients it uses" in result.output
    assert "30 agree; in your own chain: 30 agree" in result.output


@pytest.mark.parametrize("line, slip", [
    (7, "a missing contribution: counts is also used"),
    (14, "the line is transposed"),
    (15, "a missing sum over the broadcast axis 0"),
    (16, "written as 1 - hpreact**2 instead of 1 - tanh(hpreact)**2"),
    (23, "off by a factor of 31/32"),
    (26, "the sign is flipped"),
])
def test_each_seeded_slip_is_found_on_its_own_line_and_named(line, slip):
    result = run_check("ninja_wrong.txt")
    assert result.exit_code == 1
    said = result.output.split(f"ninja_wrong.txt:{line}: ", 1)[1].split("ninja_wrong.txt:", 1)[0]
    assert ": WRONG" in said.splitlines()[0] and slip in said
    assert "23 agree, 6 wrong" in result.output


def test_fit_learns_the_next_character_from_the_rows(tmp_path):
    """mlp.ad on train.csv: the validation loss falls well below log(27) = 3.30, a uniform guess."""
    from click.testing import CliRunner

    from autodiff_cli.cli import main

    history = tmp_path / "history.csv"
    result = CliRunner().invoke(main, ["fit", str(NINJA.parent / "mlp.ad"), "--data", str(NINJA.parent / "train.csv"),
                                       "--validation-data", str(NINJA.parent / "dev.csv"), "--optimizer", "adam",
                                       "--lr", "0.01", "--batch-size", "32", "--steps", "400", "-o",
                                       str(tmp_path / "v.json"), "--history", str(history)])
    assert result.exit_code == 0, result.output
    final = result.output.strip().splitlines()[-1]
    validation = float(final.split("validation loss ")[1].split()[0].rstrip(","))
    assert validation < 2.6, final
