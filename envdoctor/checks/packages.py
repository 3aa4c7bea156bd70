"""Package checks: companions paired with torch, one CUDA variant across packages, extensions built for this torch."""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from ..domain.variants import (
    cuda_of_variant,
    is_cpu_build,
    local_tag,
    nvidia_wheel,
    nvidia_wheel_cuda_major,
    variant_cuda_major,
    variant_kind,
)
from ..domain.versions import base_version, major_minor, mm_str, parse_version
from ..model.facts import Package, PythonEnv
from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import pip_install
from ..remedies.extensions import extension_fix
from ..remedies.torch_plan import COMPANIONS, target_variant
from ._companions import VISION_README, companion_set_fix
from ._extension_arch import ArchTarget, judge_extensions
from ._interpreter import split_companions
from ._shadowing import or_origin_fix
from ._util import package_variant, torch_envs_or_skip
from .base import EVERYWHERE, CheckContext, Findings, SkipCheck, registrar

CHECKS: list = []
check = registrar(CHECKS)

TRITON_NAMES = ("triton", "pytorch-triton")


def _same_variant(a: str, b: str) -> bool:
    ka, kb = variant_kind(a), variant_kind(b)
    if ka != kb:
        return False
    if ka == "cuda":
        ma, mb = variant_cuda_major(a), variant_cuda_major(b)
        if cuda_of_variant(a) is None or cuda_of_variant(b) is None:  # only the major is known on one side
            return ma == mb
        return a == b
    return a == b


CUDA_VARIANT = Findings("packages.cuda-variant", "CUDA_VARIANT_MIXED", kinds=("mixed",))


@check("packages.cuda-variant", "torch-family packages share one CUDA variant", categories=("CUDA_VARIANT_MIXED",), applies=EVERYWHERE)
def check_cuda_variant(ctx: CheckContext) -> List[Finding]:
    envs = torch_envs_or_skip(ctx.facts)
    findings = []
    judged = False  # a variant compared with another package's: else nothing to judge (no check mark)
    for i, py in envs:
        torch_pkg = py.package("torch") or Package(name="torch", version=py.torch.version)
        tv, tv_ev, t_certain = package_variant(ctx, py, torch_pkg)
        if is_cpu_build(py.torch) and py.torch.arch_list is not None:  # torch itself said so at import
            tv, tv_ev, t_certain = "cpu", "torch.version.cuda is None", True
        if tv is None:
            continue
        mixed = []
        for name in COMPANIONS:
            pkg = py.package(name)
            if pkg is None:
                continue
            v, ev, certain = package_variant(ctx, py, pkg)
            judged = judged or v is not None
            if v and not _same_variant(tv, v):
                mixed.append((pkg, v, ev, certain))
        # nvidia-* runtime wheels for another CUDA major than torch's (e.g. nvidia-cudnn-cu11 next to cu12 torch)
        tmajor = variant_cuda_major(tv)
        wheels = []
        for pkg in py.packages:
            major = nvidia_wheel_cuda_major(pkg.name)
            judged = judged or bool(major is not None and tmajor is not None)
            if major is not None and tmajor is not None and major != tmajor and _required_by_torch(py, pkg.name):
                wheels.append(pkg)
        if not mixed and not wheels:
            continue
        # the summary keeps the first piece of evidence; the whole text is in the evidence list
        parts = [f"{p.name} {p.version} is {v} ({ev.split(';')[0]})" for p, v, ev, _ in mixed]
        parts += [f"{p.name} {p.version} is for CUDA {p.name.rsplit('-cu', 1)[1]}" for p in wheels]
        certain = t_certain and all(c for *_, c in mixed)
        evidence = [Evidence(f"pythons[{i}].torch.version", py.torch.version, source=tv_ev)]
        for p, _v, ev, _ in mixed:
            evidence.append(Evidence(f"pythons[{i}].packages.{p.name}", p.version,
                                     expected=f"the {tv} build", source=ev))
        for p in wheels:
            evidence.append(Evidence(f"pythons[{i}].packages.{p.name}", p.version, expected=f"cu{tmajor} wheels"))
        findings.append(CUDA_VARIANT(
            "mixed", Severity.ERROR if certain else Severity.WARNING,
            summary=f"torch {py.torch.version} is {tv} but " + "; ".join(parts),
            detail=("torchvision and torchaudio contain compiled operators linked against one specific torch "
                    "build; a CUDA build next to a CPU torch (or another CUDA version) fails at import, e.g. "
                    "'operator torchvision::nms does not exist'. This happens when torch comes from the "
                    "PyTorch index and a companion from PyPI (or the reverse)."),
            evidence=evidence,
            fix=companion_set_fix(ctx, py),
            confidence=None if certain else "medium",
        ))
    if not findings and not judged:
        raise SkipCheck("no torchvision/torchaudio or nvidia-* wheel of known variant next to torch: "
                        "nothing to compare torch's variant with", not_applicable="no torchvision/torchaudio")
    return findings


# the nvidia-*-cuXX families torch's CUDA wheels require (their Requires-Dist, as pip lists them "from torch":
# torch 2.8 cu128 and 2.9; nvshmem from 2.9): with torch's own requirements unknown (a pasted package list), a
# wheel of another family (nvidia-cutlass-dsl-libs-cu13, pulled by vLLM or FlashInfer) is not torch's, and its
# CUDA major says nothing about torch's variant (issue 42, round 15: vllm-017)
TORCH_NVIDIA_FAMILIES = frozenset({
    "cuda-nvrtc", "cuda-runtime", "cuda-cupti", "cudnn", "cublas", "cufft", "curand", "cusolver", "cusparse",
    "cusparselt", "nccl", "nvtx", "nvjitlink", "cufile", "nvshmem"})


def _required_by_torch(py: PythonEnv, name: str) -> bool:
    torch_pkg = py.package("torch")
    if torch_pkg is None or not torch_pkg.requires:
        wheel = nvidia_wheel(name)
        return wheel is None or wheel[0] in TORCH_NVIDIA_FAMILIES
    return any(r.lower().replace("_", "-").startswith(name) for r in torch_pkg.requires)


# a kind per companion: the package it is about
COMPANION = Findings("packages.companions", "COMPANION_VERSION_MISMATCH", kinds=COMPANIONS + ("triton",))


@check("packages.companions", "torchvision/torchaudio/triton pair with torch", categories=("COMPANION_VERSION_MISMATCH",), applies=EVERYWHERE)
def check_companions(ctx: CheckContext) -> List[Finding]:
    envs = torch_envs_or_skip(ctx.facts)
    findings = []
    present = []  # the companions there were to judge
    for i, py in envs:
        tver = base_version(py.torch.version) or ""
        comp = ctx.compat.companions(tver)
        # a companion a venv takes from its base, built for the base's torch: packages.system-site names both sets
        split = {s.package.name for s in split_companions(ctx.compat, py)}
        for name in COMPANIONS + TRITON_NAMES:
            pkg = py.package(name)
            if pkg is None:
                continue
            present.append(pkg.name)
            if pkg.name in split:
                continue
            have = base_version(pkg.version)
            want = None
            if comp is not None:
                want = comp.triton if name in TRITON_NAMES else getattr(comp, name)
            if name in TRITON_NAMES:
                if not py.torch.cuda:
                    continue  # CPU/ROCm torch wheels do not pin NVIDIA triton
                if want is None:
                    continue
                # torch pins triton exactly; pytorch-triton nightlies carry +git tags
                if parse_version(have) != parse_version(want):
                    findings.append(_companion_finding(ctx, i, py, pkg, tver, want, "triton"))
                continue
            if want is not None:
                if parse_version(have) != parse_version(want):
                    findings.append(_companion_finding(ctx, i, py, pkg, tver, want, name))
                continue
            # torch release unknown to the companion table: ask which torch this companion pairs with
            pairs_with = ctx.compat.torch_for_companion(name, have or "")
            if pairs_with and mm_str(pairs_with) != mm_str(tver):
                findings.append(_companion_finding(ctx, i, py, pkg, tver, None, name, pairs_with))
    if not present:
        raise SkipCheck("no torchvision, torchaudio or triton installed: nothing to pair with torch", not_applicable="no torchvision/torchaudio")
    return findings


def _companion_finding(ctx: CheckContext, i: int, py: PythonEnv, pkg: Package, tver: str,
                       want: Optional[str], name: str, pairs_with: Optional[str] = None) -> Finding:
    built_for = pairs_with or ctx.compat.torch_for_companion(name, base_version(pkg.version) or "")
    target = target_variant(ctx.facts, ctx.compat, py, tver)
    pin = f"{pkg.name}=={want}" if want else pkg.name
    expected = f"{want} (pairs with torch {tver})" if want else f"the {name} release for torch {mm_str(tver)}"
    tail = f", which pairs with torch {built_for}" if built_for else ""
    return COMPANION.error(
        name,
        summary=f"{pkg.name} {pkg.version} does not pair with torch {py.torch.version}: expected {expected}"
                + (f"; {pkg.version}{tail}" if tail else ""),
        detail=("torchvision and torchaudio are released in lockstep with torch and pin an exact torch "
                "version; triton is pinned by the torch wheel and torch.compile breaks with another one "
                "(\"cannot import name 'triton_key'\")."),
        evidence=[Evidence(f"pythons[{i}].packages.{pkg.name}", pkg.version, expected=expected),
                  Evidence(f"pythons[{i}].torch.version", py.torch.version)],
        fix=or_origin_fix(py, Fix(f"Install the {name} that pairs with torch {tver}",
                                  [pip_install(ctx.facts, py, [f"torch=={tver}", pin],
                                               target if name != "triton" else None)], VISION_README)),
    )


_EXTENSIONS = ("flash-attn", "xformers", "bitsandbytes", "apex", "deepspeed", "vllm", "torch-scatter",
               "torch-sparse", "torch-geometric", "mmcv", "detectron2", "pytorch3d", "torchtext", "torchdata",
               "transformer-engine", "causal-conv1d", "mamba-ssm")
_TAG = re.compile(r"(?:cu(?P<cu>\d+))?torch(?P<torch>\d+\.\d+)(?:cxx11abi(?P<abi>true|false))?", re.I)


def _pypi_cxx11_abi(py: PythonEnv) -> Tuple[Optional[bool], str]:
    """The C++ ABI of a pip-installed Linux x86_64 torch wheel, when the facts lack torch's own answer (a paste):
    pre-C++11 up to 2.5, the C++11 ABI from 2.7 (pytorch/pytorch#143962: "we do expect 2.7 to be cxx11 ABI by
    default"; #123649 moved the wheels to manylinux_2_28). 2.6 differs by variant (its cu126 wheels were the
    first C++11 ones, pytorch/xla#8641), so it is not told. conda builds are not PyPI wheels: not told."""
    pkg = py.package("torch")
    tag = local_tag(pkg.version)
    if pkg is None or pkg.installer == "conda" or tag is not None and variant_kind(tag) not in ("cpu", "cuda"):
        return None, ""
    mm = major_minor(pkg.version)
    if mm is None:
        return None, ""
    if mm <= (2, 5):
        return False, f"torch {pkg.version} (a PyPI wheel)"
    if mm >= (2, 7):
        return True, f"torch {pkg.version} (a PyPI wheel)"
    return None, ""


# what a distribution was built for (a kind per package), and its kernels against the GPUs (_extension_arch)
EXTENSIONS = Findings("packages.extensions", "THIRD_PARTY_EXTENSION_MISMATCH",
                      kinds=("{package}", "missing", "ptx-only", "partial"))


@check("packages.extensions", "Compiled extensions match torch and CUDA",
       categories=("THIRD_PARTY_EXTENSION_MISMATCH",), applies=EVERYWHERE)
def check_extensions(ctx: CheckContext) -> List[Finding]:
    envs = torch_envs_or_skip(ctx.facts)
    findings = []
    judged = False  # an extension pinned to torch, a known extension, or an import error seen
    for i, py in envs:
        t = py.torch
        tver = base_version(t.version) or ""
        for pkg in py.packages:
            if pkg.name in ("torch", "torchvision", "torchaudio") or pkg.name.startswith("nvidia-"):
                continue
            judged = judged or pkg.name in _EXTENSIONS or any(
                re.match(r"\s*torch\b", r) for r in pkg.requires or []) or pkg.name in py.import_errors
            problems: List[str] = []
            evidence: List[Evidence] = []
            # 1. an exact torch pin in Requires-Dist (xformers, torchtext, ... pin torch==X)
            for req in pkg.requires or []:
                m = re.match(r"\s*torch\s*==\s*([0-9][^;,\s]*)", req)
                if m and "extra ==" not in req and parse_version(m.group(1)) is not None and \
                        parse_version(base_version(m.group(1))) != parse_version(tver):
                    problems.append(f"requires torch=={m.group(1)}")
                    evidence.append(Evidence(f"pythons[{i}].packages.{pkg.name}.requires", req,
                                             expected=f"torch=={tver}"))
            # 2. a local tag naming the torch / CUDA / ABI it was built for (flash-attn wheels: +cu122torch2.3cxx11abiFALSE)
            tag = local_tag(pkg.version)
            m = _TAG.search(tag or "")
            if m and pkg.name in _EXTENSIONS:
                if m.group("torch") and m.group("torch") != mm_str(tver):
                    problems.append(f"built for torch {m.group('torch')}")
                built_cu = "cu" + m.group("cu") if m.group("cu") else None
                if built_cu and major_minor(t.cuda) and variant_cuda_major(built_cu) != major_minor(t.cuda)[0]:
                    problems.append(f"built for CUDA {cuda_of_variant(built_cu) or variant_cuda_major(built_cu)}")
                abi, abi_why = (t.cxx11_abi, "torch's own") if t.cxx11_abi is not None else _pypi_cxx11_abi(py)
                if m.group("abi") and abi is not None and (m.group("abi").lower() == "true") != abi:
                    problems.append(f"built with cxx11abi={m.group('abi')} ({abi_why} C++ ABI is "
                                    f"{'the C++11' if abi else 'the pre-C++11'} one)")
                if problems:
                    evidence.append(Evidence(f"pythons[{i}].packages.{pkg.name}", pkg.version,
                                             expected=f"torch {mm_str(tver)}, CUDA {t.cuda}"))
            # 3. the import already failed with an ABI symptom
            err = py.import_errors.get(pkg.name) or py.import_errors.get(pkg.name.replace("-", "_"))
            if err and ("undefined symbol" in err or "ABI" in err or "was compiled against" in err):
                problems.append("its import fails: " + err.strip().splitlines()[-1][:160])
                evidence.append(Evidence(f"pythons[{i}].import_errors.{pkg.name}", err))
            if not problems:
                continue
            findings.append(EXTENSIONS.error(
                pkg.name,
                summary=f"{pkg.name} {pkg.version} does not match torch {t.version}: " + "; ".join(problems),
                detail=("Compiled extensions link against torch's C++ symbols and one CUDA runtime; built for "
                        "another torch they fail to import with 'undefined symbol' errors (or fall back to "
                        "slow paths)."),
                evidence=evidence,
                # never a plain reinstall: the newest wheel may be built for yet another torch
                fix=extension_fix(ctx.facts, py, pkg),
            ))
    # on a live machine, the extensions' kernels against the GPUs present (assert and preflight judge the
    # declared target GPUs in requirements.extensions-gpus instead)
    live = _live_gpus(ctx)
    if live:
        arch_findings, arch_judged, _unread = judge_extensions(ctx, live, EXTENSIONS)
        findings += arch_findings
        judged = judged or arch_judged > 0
    if not findings and not judged:
        if any(lib.fatbins for _i, py in envs if py.extensions for lib in py.extensions.libraries):
            t = ctx.facts.targets
            raise SkipCheck("no installed extension says which torch or CUDA it was built for (a torch pin, a "
                            "local version tag)" + (
                                "; their GPU kernels are judged against the declared target GPUs by "
                                "requirements.extensions-gpus" if t is not None and t.target_gpus else
                                ", and no GPU is seen to judge their kernels against"))
        raise SkipCheck("no compiled extension that depends on torch (flash-attn, xformers, ...) installed: "
                        "nothing to judge", not_applicable="no torch extensions")
    return findings


def _live_gpus(ctx: CheckContext) -> List[ArchTarget]:
    from ..queries import gpu_capabilities

    t = ctx.facts.targets
    if ctx.facts.driver.source == "declared" or (t is not None and t.target_gpus):
        return []
    return [ArchTarget(label, cc, Evidence(path, cc)) for label, cc, path in gpu_capabilities(ctx.facts, ctx.compat) if cc]
