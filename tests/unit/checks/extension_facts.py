"""What the tests of the extension checks share (requirements.extensions-gpus, packages.extensions): extension
libraries with given SASS and PTX, facts that carry them, declared target GPUs, and reading a report."""

from __future__ import annotations

from dataclasses import replace
from typing import List, Optional

from envdoctor.model.facts import ExtensionLibrary, ExtensionScan, Facts, Targets
from envdoctor.model.targets import resolve_gpus
from envdoctor.services.assertions import declared_driver
from tests import machines


def lib(dist: str, sass: List[str], ptx: List[str] = (), name: str = "_C.so", **kw) -> ExtensionLibrary:
    base = dict(distribution=dist, version="2.7.0", path=f"/venv/lib/{dist}/{name}", sass=list(sass), ptx=list(ptx),
                fatbins=4)
    base.update(kw)
    return ExtensionLibrary(**base)


def with_extensions(f: Facts, libs: List[ExtensionLibrary], truncated: Optional[str] = None) -> Facts:
    py = replace(f.pythons[0], extensions=ExtensionScan(libraries=libs, truncated=truncated, read_libraries=len(libs)))
    return replace(f, pythons=[py] + list(f.pythons[1:]))


def assert_facts(compat, libs: List[ExtensionLibrary], gpus: List[str], env=None) -> Facts:
    """What `envdoctor assert --target-gpus` judges: declared GPUs, a torch (``env``, by default 2.5.1+cu124 with
    SASS for sm_80, sm_86 and sm_90) and its extensions ``libs``."""
    targets = resolve_gpus(compat, gpus)
    base = env or machines.torch_env("2.5.1+cu124", "12.4", ["sm_80", "sm_86", "sm_90"])
    f = Facts(driver=declared_driver(None, targets), pythons=[base],
              targets=Targets(target_gpus=[g.given for g in targets], source="test"))
    return with_extensions(f, libs)


def of(report, check_id: str):
    return [x for x in report.findings if x.code.startswith(check_id + "/")]


def status(report, check_id: str):
    return next(c for c in report.checks if c.id == check_id)
