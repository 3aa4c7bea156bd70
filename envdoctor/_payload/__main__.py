"""Launcher: ``python <envdoctor/_payload> --task NAME [options]``, run by the *target* interpreter (3.8+, stdlib).

The folder is run as a script, not as ``python -m envdoctor._payload``: the target need not have envdoctor
installed (its site-packages are the user's), so nothing may be imported through the name ``envdoctor``. Python
puts this folder first on sys.path, where our module names (tasks, bench, elf...) would shadow top-level names for
everything imported later, torch included: it is taken off, and the folder is imported as a package under a name
nothing else uses, so that its modules import one another relatively and shadow nothing.
"""

import importlib
import importlib.util
import os
import sys

PACKAGE = "_envdoctor_payload"  # the name the folder is imported under in the target


def load_package() -> str:
    """Import this folder as a package (once) and return its name: ``envdoctor._payload`` when envdoctor's own
    interpreter runs ``-m envdoctor._payload``, else PACKAGE, loaded from this folder by path."""
    if __package__:
        return __package__
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        del sys.path[0]
    if PACKAGE not in sys.modules:
        spec = importlib.util.spec_from_file_location(PACKAGE, os.path.join(here, "__init__.py"),
                                                      submodule_search_locations=[here])
        if spec is None or spec.loader is None:
            raise ImportError("cannot load envdoctor's payload from " + here)
        module = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = module
        spec.loader.exec_module(module)
    return PACKAGE


def main(argv: list) -> int:
    package = load_package()
    if len(argv) >= 2 and argv[0] == "--task" and argv[1] == "bench":
        return int(importlib.import_module(package + ".bench_run").main(argv[2:]))
    return int(importlib.import_module(package + ".tasks").main(argv))


def exit_now(rc: int) -> None:
    """Leave without the interpreter's teardown, once everything is said: with torch imported, tearing it down
    takes 0.7-1.5 s (CUDA venv here, `python -c "import torch"` against the same plus ``os._exit(0)``), and
    envdoctor waits for this process to end. The answer is written with os.write (unbuffered); what Python
    buffers is flushed first. Nothing of the user's is torn down: this process is envdoctor's."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # a closed or broken stream: nothing left to say on it
            pass
    os._exit(rc)


if __name__ == "__main__":
    exit_now(main(sys.argv[1:]))
