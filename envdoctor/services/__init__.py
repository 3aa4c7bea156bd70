"""The services: what a command does, as a Python call, between the judge and the command line.

``collect`` (probe a machine into facts, and ``doctor``/``judge`` over them), ``assertions`` (`envdoctor assert`:
an image against declared targets), ``preflight`` (``envdoctor.preflight()``), ``recommend``, ``matrix`` and
``matrix_bench`` (questions to the compatibility matrix) and ``update_data`` (a newer matrix). Each takes options
and returns facts, a report or an answer; none prints. The cli/ modules parse arguments and print what these return.
"""
