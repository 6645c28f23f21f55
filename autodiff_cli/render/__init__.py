"""Renderers: evaluations, explanations, checks and graphs as text, bytes or Rich renderables.

Pure: nothing here prints or chooses where output goes.  ``report`` (eval's table,
plain text, JSON, CSV), ``explain`` and ``check`` (their commands' outputs), ``dot``
(Graphviz DOT text, ``draw_dot``) and ``backends`` (DOT laid out as SVG/PNG/PDF).
"""
