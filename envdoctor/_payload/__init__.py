"""The payloads: stdlib-only modules run inside the interpreter being diagnosed (the *target*), never in envdoctor's.

Run as a directory: ``python <this folder> --task inspect|pcie-load|bench [options]`` (``__main__.py`` is the
launcher). Every module here runs under the target Python (3.8+), possibly much older than envdoctor's own, so:
stdlib only, typing-module annotations (no ``list[str]``, no ``from __future__ import annotations``), no syntax
newer than 3.8, relative imports between these modules and never an import of envdoctor (the target does not have
it). Importing this package does nothing: each task imports what it needs.
"""
