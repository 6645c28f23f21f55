"""What the library works out about an evaluated graph, as data for the renderers.

``graph_model`` (one walk: order, kinds, names), ``steps`` (the backward pass as
chain-rule steps, for ``explain``) and ``check`` (gradients against finite differences).
"""
