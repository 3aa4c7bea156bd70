"""Test fakes: a runner keyed by argv, a filesystem root, NVML from data."""

from .runner import FakeRunner, UnexpectedCommand  # noqa: F401
