"""envdoctor: will this GPU machine run your deep-learning stack, and at the speed you pay for?"""

__version__ = "0.1.0"

__all__ = ["CollectOptions", "PreflightError", "__version__", "doctor", "preflight"]

# name -> the services module that holds it (envdoctor/services/)
_LAZY = {"preflight": "preflight", "PreflightError": "preflight", "doctor": "collect", "CollectOptions": "collect"}


# no `typing` import here: a typing.py in the directory of `python -m envdoctor` would break this module before
# envdoctor/__main__.py takes that directory off sys.path
def __getattr__(name: str) -> object:
    # `import envdoctor` stays free of side effects and cheap: the public API loads on first use
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.services.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'envdoctor' has no attribute {name!r}")
