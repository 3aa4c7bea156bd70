"""The services: what a command does, as a Python call, between the judge and the command line.

``collect`` (probe a machine into facts, and ``doctor``/``judge`` over them), ``check`` (`envdoctor check`: this
machine's facts or a snapshot's, judged), ``diagnose`` (pasted text judged), ``assertions`` (`envdoctor assert`:
an image against declared targets), ``node_health``, ``explain``, ``list_checks``, ``preflight``
(``envdoctor.preflight()``), ``recommend``, ``matrix`` and ``matrix_bench`` (questions to the compatibility matrix)
and ``update_data`` (a newer matrix). Each takes options and returns facts, a report or an answer; none prints,
writes to the terminal or handles a signal (tests/unit/test_layers.py): a wait reads the stop the command line's
handler records (probes.runner.INTERRUPT) and unwinds with ``Interrupted``. The cli/ modules parse arguments, own
the process (signals: cli/signals.py; progress, exit codes) and render what these return.
"""
