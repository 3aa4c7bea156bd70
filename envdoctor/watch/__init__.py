"""`envdoctor watch`: sample a training run (GPUs, its process tree, the host) and say what limits it.

``from envdoctor.watch import timed`` is the only thing a training script imports: the step timer, stdlib only,
so importing it loads nothing else of envdoctor (no NVML, no psutil).
"""

from .timer import timed

__all__ = ["timed"]
