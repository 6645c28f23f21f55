"""The one-hidden-layer classifier several tests train: ``x`` of ``inputs`` entries, a hidden layer
of ``hidden`` units, ``classes`` logits and cross-entropy against ``label``."""


def mlp_program(inputs: int, hidden: int, classes: int, activation: str = "relu") -> str:
    return (f"x = zeros([{inputs}])\nlabel = 0\n"
            f"W1 = zeros([{hidden}, {inputs}])\nb1 = zeros([{hidden}])\n"
            f"W2 = zeros([{classes}, {hidden}])\nb2 = zeros([{classes}])\n"
            f"h = {activation}(W1 @ x + b1)\nz = W2 @ h + b2\nL = cross_entropy(z, label)\n")
