"""compat_data/ against ../shared/reference/ where both speak, and consistency across the compat files."""

from __future__ import annotations

import json
import re

import pytest

from envdoctor.compat import arch_runs, bundled_dir, cuda_of_variant, load_compat
from tests.paths import SHARED

REFERENCE = SHARED / "reference"


@pytest.fixture(scope="module")
def bundled():
    return load_compat(bundled_dir())  # the bundled matrix, whatever update a cache might hold


def _ref(name: str) -> dict:
    if not (REFERENCE / name).is_file():
        pytest.skip(f"{REFERENCE / name} absent (a bare clone has no ../shared/reference)")
    return json.loads((REFERENCE / name).read_text(encoding="utf-8"))


def _release(text: str) -> str:
    m = re.search(r"Update (\d+)", text)
    if m:
        return f"Update {m.group(1)}"
    return "RC" if " RC" in text else "GA"


def test_every_cuda_min_driver_equals_nvidias_table(bundled):
    ref = _ref("cuda_driver.json")
    rows = {(r.cuda, r.release): r for r in bundled.cuda_releases()}
    compared = 0
    for r in ref["rows"]:
        linux, windows = r["linux_x86_64_min_driver"], r["windows_x86_64_min_driver"]
        if linux is None:
            continue  # the reference could not confirm it either
        key = (r["cuda_version"], _release(r["release"]))
        assert key in rows, key
        assert rows[key].linux_min_driver == linux, key
        if windows and windows != "N/A":
            assert rows[key].windows_min_driver == windows, key
        compared += 1
    assert compared >= 50
    # and the query people use answers with the GA row
    for r in ref["rows"]:
        if r["linux_x86_64_min_driver"] and _release(r["release"]) == "GA":
            assert bundled.cuda_requirement(r["cuda_version"]).min_driver == r["linux_x86_64_min_driver"]


def test_minor_version_floors_and_branch_ceilings(bundled):
    ref = _ref("cuda_driver.json")
    for r in ref["minor_version_compatibility"]:
        m = re.match(r"(\d+)\.x$", r["cuda_major"])
        if not m:
            continue
        floor = bundled.minor_compat_floor(int(m.group(1)))
        assert floor is not None and floor[0] == r["min_driver_linux_exact"], r["cuda_major"]
    for r in ref["nvidia_smi_cuda_version_by_branch"]:
        got = bundled.driver_max_cuda(f"{r['driver_branch']}.0")
        assert got is not None and got[0] == r["nvidia_smi_cuda_version"], r["driver_branch"]


def _sass(arch):
    return sorted(a.replace("+PTX", "") for a in arch if a.startswith("sm_"))


def test_torch_builds_agree(bundled):
    ref = _ref("torch_builds.json")
    for r in ref["rows"]:
        rel = bundled.torch_release(r["torch"])
        if rel is None or not rel.cuda_variants:
            continue
        assert rel.cuda_variants == r["cuda_variants"], r["torch"]
        assert rel.default_variant == r["default_pypi_variant"], r["torch"]
        low = re.search(r">=(\d+\.\d+)", r["python"]).group(1)
        assert rel.python_min == low, r["torch"]
        # the upper bound: the supported one, or the experimental one RELEASE.md names (the corrected rows)
        highs = re.findall(r"(\d+\.\d+)", r["python"])
        assert rel.python_max in highs, (r["torch"], rel.python_max, r["python"])
        for variant, arch in (r.get("arch_lists") or {}).items():
            ours = rel.arch_lists.get(variant)
            assert ours is not None, (r["torch"], variant)
            assert _sass(ours) == _sass(arch), (r["torch"], variant)  # SASS equal; PTX noted per row


def test_companions_agree(bundled):
    ref = _ref("torch_companions.json")
    for r in ref["rows"]:
        ours = bundled.companions(r["torch"])
        if ours is None:
            continue
        for pkg in ("torchvision", "torchaudio", "triton"):
            # the reference writes triton as its pin ("==3.1.0", "~=3.8.0") and explains gaps in prose
            m = re.fullmatch(r"(?:==|~=)?(\d+(?:\.\d+)+)", str(r.get(pkg) or ""))
            if m:
                assert getattr(ours, pkg) == m.group(1), (r["torch"], pkg)


def test_arch_rows_agree(bundled):
    ref = _ref("arch_support.json")
    for r in ref["rows"]:
        ours = bundled.arch_support(r["cc"])
        assert ours is not None, r["cc"]
        last = r.get("last_cuda")
        if last and re.fullmatch(r"\d+\.\d+", str(last)):
            assert ours.last_cuda == last, r["cc"]
        first = str(r.get("first_cuda") or "")
        if "renamed sm_110 in 13.0" in first:
            assert ours.first_cuda == "13.0"  # 12.8 knew the chip as sm_101 (CC 10.1)


def test_gpu_compute_capabilities_agree(bundled):
    ref = _ref("gpus.json")
    compared = 0
    for r in ref["rows"]:
        cc = bundled.gpu_compute_capability(r["name"])
        if cc is None:
            continue
        assert cc == r["compute_capability"].split()[0], r["name"]  # "8.9 (inferred: AD102 ...)"
        compared += 1
    assert compared >= 30


# --------------------------------------------------------------------------- consistency across files


def test_every_torch_cuda_variant_has_a_driver_row(bundled):
    missing = [(rel.minor, v) for rel in bundled.torch_releases() for v in rel.cuda_variants
               if cuda_of_variant(v) and bundled.cuda_requirement(cuda_of_variant(v)) is None]
    assert missing == []


def test_every_gpu_compute_capability_has_an_arch_row(bundled):
    missing = sorted({(g.name, g.compute_capability) for g in bundled.gpus()
                      if g.compute_capability and bundled.arch_support(g.compute_capability) is None})
    assert missing == []


def test_every_driver_branch_of_a_cuda_minimum_has_a_branch_row(bundled):
    branches = {int(r["branch"]) for r in bundled.table("cuda_driver")["driver_branches"]}
    need = {int(r.linux_min_driver.split(".")[0]) for r in bundled.cuda_releases()
            if r.linux_min_driver and int(r.cuda.split(".")[0]) >= 11}
    assert need - branches == set()


def test_arch_lists_name_architectures_the_arch_table_knows(bundled):
    for rel in bundled.torch_releases():
        for variant, arch in rel.arch_lists.items():
            for a in arch:
                digits = re.match(r"(?:sm|compute)_(\d+)", a).group(1)
                cc = f"{int(digits[:-1])}.{digits[-1]}"
                assert bundled.arch_support(cc) is not None, (rel.minor, variant, a)
                assert arch_runs([a], cc)[0], (rel.minor, variant, a)
