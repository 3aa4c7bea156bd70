"""The recording in memory: bounded for hours-long runs by halving the rate, never by cutting the start.

When ``max_samples`` are held, every other sample is dropped and from then on only every second tick is kept
(then every fourth ...): a day at 0.5 s (172,800 ticks) stays within 4,096 samples at one per 64 ticks, and
the phases (warm-up, stalls of a few seconds at the start) stay at the resolution the run's length allows.
"""

from __future__ import annotations

from typing import Any, Dict, List

MAX_SAMPLES = 4096


class Recorder:
    def __init__(self, max_samples: int = MAX_SAMPLES) -> None:
        self.max_samples = max(16, max_samples)
        self.samples: List[Dict[str, Any]] = []
        self.every = 1  # keep one tick in ``every``
        self.ticks = 0

    def add(self, sample: Dict[str, Any]) -> None:
        keep = self.ticks % self.every == 0
        self.ticks += 1
        if not keep:
            return
        self.samples.append(sample)
        if len(self.samples) >= self.max_samples:
            self.samples = self.samples[::2]
            self.every *= 2
