"""Micro-benchmarks: kernels run in the target interpreter, disks here; results become facts that checks judge."""
