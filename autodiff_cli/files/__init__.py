"""Everything that reads or writes the user's files and streams.

``text`` decodes what is read and parses numbers; ``values`` reads a values file (JSON) with the
places of its keys; ``rows`` reads and writes rows (CSV/TSV, JSON Lines, Parquet); ``streams``
says what a path or a standard stream is (a descriptor, a pipe, a terminal); ``stdout`` writes
standard output; ``atomic`` writes files whole or not at all; ``formats`` is the
file-format-by-extension rule.

Nothing here prints or exits: a notice for the person at the terminal goes to a callback, and
warnings are returned for the command to show.  The submodules are imported on demand (the
rows' readers need NumPy, which ``eval`` never imports).
"""
