"""envdoctor: will this GPU machine run your deep-learning stack, and at the speed you pay for?"""

from typing import Any

__version__ = "0.1.0"

__all__ = ["PreflightError", "__version__", "preflight"]


def __getattr__(name: str) -> Any:
    # `import envdoctor` stays free of side effects and cheap: the preflight API loads on first use
    if name in ("preflight", "PreflightError"):
        from . import _preflight

        return getattr(_preflight, name)
    raise AttributeError(f"module 'envdoctor' has no attribute {name!r}")
