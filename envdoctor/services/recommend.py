"""`envdoctor recommend`: the newest torch (with companions) whose CUDA variant runs on a driver and has kernels for
the GPUs, for a Python; the rule that makes it fit, what that rule does not cover, and the pip/uv commands.

Every verdict uses the matrix's own rules and queries: the GA minimum driver of the variant's CUDA (release
notes Table 3), CUDA minor-version compatibility (the major's floor; SASS only, never newer PTX), the GPU
architecture's driver branches (driver_gpu_support.json) and ``arch_runs`` over the variant's arch list.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Dict, List, Optional, Tuple

from ..compat import load_compat
from ..domain.arch import arch_runs, sm_name
from ..domain.fastclass import dataclass
from ..domain.variants import CPU, cuda_of_variant, variant_of_cuda
from ..domain.versions import mm_str, release
from ..model.targets import GpuTarget, TargetError, check_driver_version, resolve_gpu


class RecommendError(ValueError):
    """Bad input to recommend (an unknown GPU, a malformed version); one line."""


def _rel(text: Optional[str]) -> Tuple[int, ...]:
    return release(text, strict=True)


@dataclass
class Verdict:
    torch: str  # minor "2.13"
    variant: str
    fits: bool
    rule: Optional[str] = None  # why it runs
    not_covered: List[str] = field(default_factory=list)  # what that rule does not cover
    why_not: Optional[str] = None
    unknown: List[str] = field(default_factory=list)  # what could not be judged


def _driver_rule(compat: Any, driver: Optional[str], cuda: str, os: str,
                 ptx_only: List[str]) -> Tuple[Optional[bool], str, List[str]]:
    """(runs?, the rule, what the rule does not cover); runs None when the driver is unknown."""
    req = compat.cuda_requirement(cuda, os)
    if req is None:
        return None, f"CUDA {cuda} is not in the matrix", []
    if driver is None:
        need = f">= {req.min_driver}" if req.min_driver else "a driver whose minimum is not confirmed in the matrix"
        return None, f"driver unknown: CUDA {cuda} needs {need}" + (
            f" (or >= {req.minor_compat_min_driver} under minor-version compatibility)"
            if req.minor_compat_min_driver and _rel(cuda)[0] >= 11 else ""), []
    if req.min_driver and _rel(driver) >= _rel(req.min_driver):
        return True, f"driver {driver} >= {req.min_driver}, CUDA {req.cuda}'s GA minimum [{req.source}]", []
    floor = req.minor_compat_min_driver if _rel(cuda)[0] >= 11 else None
    if floor and _rel(driver) >= _rel(floor):
        if ptx_only:
            return False, (f"{variant_of_cuda(cuda)} needs driver >= {req.min_driver}; this driver is {driver}, "
                           f"and minor-version compatibility cannot JIT its PTX for {', '.join(ptx_only)}"), []
        limits = [lim.rule for lim in compat.minor_compat_limits() if lim.rule]
        return True, (f"CUDA minor-version compatibility: driver {driver} >= {floor}, the CUDA "
                      f"{_rel(cuda)[0]}.x floor [{req.minor_compat_source}]"), limits
    minimum = req.min_driver or floor
    if minimum is None:
        # NVIDIA's table gives no minimum here (Windows for CUDA 13.x is "N/A"): unknown, not a verdict
        return None, f"the minimum {os} driver for CUDA {req.cuda} is not in the matrix: driver {driver} not judged", []
    return False, f"{variant_of_cuda(cuda)} needs driver >= {minimum}; this driver is {driver}", []


def _branch_span(compat: Any, table: Any, g: GpuTarget, os: str) -> Tuple[Optional[int], str, Optional[int], str]:
    """(lowest branch known to drive ``g``, how that is known, last branch that drives it, its architecture).

    driver_gpu_support.json gives the last branch, and the first where confirmed; where the first is not
    confirmed, the branch of the GA driver of the architecture's first CUDA (arch_support.json, Table 3) is
    the first known to drive it: no earlier branch is confirmed to."""
    row = table.for_cc(g.cc)
    name = row.architecture if row is not None else f"compute capability {g.cc}"
    last = row.last_branch if row is not None else None
    if row is not None and row.first_branch is not None:
        return row.first_branch, f"{name}: R{row.first_branch}+ [{row.source}]", last, name
    a = compat.arch_support(g.cc)
    req = compat.cuda_requirement(a.first_cuda, os) if a is not None and a.first_cuda else None
    if req is not None and req.min_driver:
        lo = _rel(req.min_driver)[0]
        return lo, (f"{name} ({sm_name(g.cc)}) first appears in CUDA {a.first_cuda}, whose driver is "
                    f"{req.min_driver} (R{lo}); no earlier branch is confirmed to drive it [{a.source}; {req.source}]"), \
            last, name
    return None, "", last, name


def _branch_rule(compat: Any, driver: Optional[str], gpus: List[GpuTarget], os: str = "linux") -> Optional[str]:
    """Why this driver cannot drive one of the GPUs (its architecture's branches), or why no one driver can
    drive all of them when no driver is given; else None."""
    from ..compat.driver_gpu import driver_gpu_table

    try:
        table = driver_gpu_table(compat)
    except Exception:  # noqa: BLE001 - optional table: without it the branch limit is not judged
        return None
    spans = [(g, *_branch_span(compat, table, g, os)) for g in gpus]
    if driver is None:
        lows = [(lo, why, g) for g, lo, why, _hi, _n in spans if lo is not None]
        highs = [(hi, g, name) for g, _lo, _why, hi, name in spans if hi is not None]
        if lows and highs:
            first, why, g_lo = max(lows, key=lambda x: x[0])
            last, g_hi, name = min(highs, key=lambda x: x[0])
            if first > last:
                return (f"no driver drives both {g_hi.label} and {g_lo.label}: R{last} is the last branch for "
                        f"{name}, and {why}")
        return None
    branch = _rel(driver)[0]
    for g, lo, why, _hi, _name in spans:
        row = table.for_cc(g.cc)
        if row is not None and row.supports(branch) is False:
            span = (f"R{row.first_branch}" if row.first_branch else "first branch unknown") + (
                f"..R{row.last_branch}" if row.last_branch else ("+" if row.first_branch else ""))
            return (f"driver branch R{branch} does not drive {g.label} ({row.architecture}: {span}; "
                    f"{row.source})")
        if lo is not None and branch < lo:
            return f"driver branch R{branch} is not known to drive {g.label}: {why}"
    return None


def _kernels_by_rule(compat: Any, variant: str, cuda: str, g: GpuTarget) -> Tuple[Optional[bool], str]:
    """Whether a build whose arch list is not in the matrix can hold SASS for ``g``: False when its CUDA is outside
    the toolkits that compile that architecture (arch_support.json: first and last CUDA), None when inside (its
    kernels are then unknown, never assumed)."""
    sm = sm_name(g.cc)
    a = compat.arch_support(g.cc)
    if a is None:
        return None, f"{variant}'s arch list is not in the matrix, nor is compute capability {g.cc} ({g.label})"
    first, last = a.first_cuda, a.last_cuda
    if first and _rel(cuda)[:2] < _rel(first)[:2]:
        return False, (f"{variant} has no {sm} kernels ({g.label}): {sm} first appears in CUDA {first}, and "
                       f"CUDA {cuda} predates it [{a.source}]")
    if last and _rel(cuda)[:2] > _rel(last)[:2]:
        return False, (f"{variant} has no {sm} kernels ({g.label}): CUDA {last} is the last toolkit that compiles "
                       f"{sm} [{a.source}]")
    span = f"CUDA {first}..{last or 'now'}" if first else f"first CUDA unknown, last {last or 'now'}"
    return None, (f"{variant}'s arch list is not in the matrix: whether it has {sm} kernels ({g.label}) is "
                  f"unknown (CUDA {cuda} is within {sm}'s toolkits, {span})")


def judge_variant(compat: Any, rel: Any, variant: str, driver: Optional[str], gpus: List[GpuTarget],
                  os: str) -> Verdict:
    cuda = cuda_of_variant(variant)
    assert cuda is not None
    arch = rel.arch_lists.get(variant)
    ptx_only: List[str] = []
    if gpus:
        if not arch:
            # no arch list: the matrix's own rules still say which builds cannot have the kernels; a build
            # whose kernels are merely unknown is never proposed (a wrong "fits" is worse than none)
            unknown = []
            for g in gpus:
                has, why = _kernels_by_rule(compat, variant, cuda, g)
                if has is False:
                    return Verdict(rel.minor, variant, False, why_not=why)
                unknown.append(why)
            return Verdict(rel.minor, variant, False, why_not="; ".join(unknown), unknown=unknown)
        for g in gpus:
            if not arch_runs(arch, g.cc)[0]:
                return Verdict(rel.minor, variant, False,
                               why_not=f"{variant} has no {sm_name(g.cc)} kernels ({g.label}): "
                                       f"arch list {' '.join(arch)}")
            if not arch_runs([a for a in arch if a.startswith("sm_")], g.cc)[0]:
                ptx_only.append(g.label)
    runs, rule, limits = _driver_rule(compat, driver, cuda, os, ptx_only)
    if runs is False:
        return Verdict(rel.minor, variant, False, why_not=rule)
    notes = list(limits)
    if ptx_only:
        notes.append(f"{', '.join(ptx_only)}: PTX only, JIT-compiled at start-up (minutes, a large JIT cache)")
    if runs is None:
        return Verdict(rel.minor, variant, True, rule=None, not_covered=notes, unknown=[rule])
    return Verdict(rel.minor, variant, True, rule=rule, not_covered=notes)


def _latest_patch(compat: Any, minor: str) -> Optional[Any]:
    rows = [c for c in compat.companion_rows() if mm_str(c.torch) == minor]
    return max(rows, key=lambda c: _rel(c.torch)) if rows else None


def commands(compat: Any, minor: str, variant: str, python: Optional[str], os: str = "linux") -> Dict[str, Any]:
    from ..remedies import POSIX, POWERSHELL, Installer, pip_command
    from ..remedies.python import LEGACY_FIND_LINKS, TORCH_FAMILY, index_url_for

    comp = _latest_patch(compat, minor)
    version = comp.torch if comp else f"{minor}.*"
    pins = [f"torch=={version}"]
    if comp and comp.torchvision:
        pins.append(f"torchvision=={comp.torchvision}")
    if comp and comp.torchaudio:
        pins.append(f"torchaudio=={comp.torchaudio}")
    args: List[str] = list(pins)
    if _rel(version)[:2] and _rel(version)[:2] < (1, 13):
        # before 1.13 there was no per-variant index (https://pytorch.org/get-started/previous-versions/)
        args = [f"{p}+{variant}" if p.split("==")[0] in TORCH_FAMILY else p for p in args] + ["-f", LEGACY_FIND_LINKS]
    else:
        args += ["--index-url", index_url_for(variant)]
    # planning a rental: no interpreter path to name, so the Python version stands for it
    index = None if "-f" in args else index_url_for(variant)
    shell = POWERSHELL if os == "windows" else POSIX
    pip = pip_command(Installer("pip", f"python{python}" if python and shell == POSIX else None, shell),
                      "install", *args)
    uv = pip_command(Installer("uv", python, shell), "install", *args)
    return {"torch": version, "torchvision": comp.torchvision if comp else None,
            "torchaudio": comp.torchaudio if comp else None,
            # the triton pin is read from the Linux CUDA wheel's Requires-Dist; Windows and CPU wheels do not
            # require it
            "triton": comp.triton if comp and os != "windows" and variant != CPU else None,
            "companions_source": comp.source if comp else None, "pip": pip, "uv": uv,
            # the resolver's answer for a script: the packages and pip's arguments as a list (no shell quoting)
            "packages": pins, "index_url": index, "pip_args": args}


def recommend(compat: Any, driver: Optional[str], gpus: List[GpuTarget], python: Optional[str],
              os: str = "linux", cpu_box: Optional[str] = None) -> Dict[str, Any]:
    """``cpu_box``: why the machine planned for has no NVIDIA hardware (read from it, no --driver or --gpu
    given); the CPU build is then the recommendation, and the CUDA builds are listed for a GPU machine."""
    releases = [r for r in compat.torch_releases() if r.cuda_variants]
    skipped: List[str] = []
    candidates: List[Tuple[Any, Verdict]] = []
    rejected: List[Dict[str, Any]] = []
    branch_problem = _branch_rule(compat, driver, gpus, os)
    for rel in sorted(releases, key=lambda r: _rel(r.minor), reverse=True):
        if python:
            if not rel.python_min or not rel.python_max:
                skipped.append(f"torch {rel.minor}: Python range not in the matrix")
                continue
            if not (_rel(rel.python_min) <= _rel(python)[:2] <= _rel(rel.python_max)):
                continue
        for variant in rel.cuda_variants:
            if not cuda_of_variant(variant):
                continue
            v = judge_variant(compat, rel, variant, driver, gpus, os)
            if v.fits and branch_problem is None:
                candidates.append((rel, v))
            else:
                rejected.append({"torch": rel.minor, "variant": variant,
                                 "why_not": v.why_not or branch_problem})

    def rank(item: Tuple[Any, Verdict]) -> Tuple:
        rel, v = item
        return (_rel(rel.minor), not v.unknown, variant_is_default(rel, v.variant),
                _rel(cuda_of_variant(v.variant)))

    best = max(candidates, key=rank) if candidates else None
    why_none = None if best else _why_none(compat, python, gpus, skipped, rejected, branch_problem)
    per_cuda: Dict[str, Tuple[Any, Verdict]] = {}
    for rel, v in candidates:
        if v.variant not in per_cuda or rank((rel, v)) > rank(per_cuda[v.variant]):
            per_cuda[v.variant] = (rel, v)

    def entry(rel: Any, v: Verdict) -> Dict[str, Any]:
        return {"torch_minor": rel.minor, "variant": v.variant, "cuda": cuda_of_variant(v.variant),
                "arch_list": rel.arch_lists.get(v.variant), "rule": v.rule, "not_covered": v.not_covered, "unknown": v.unknown,
                "torch_source": rel.source, **commands(compat, rel.minor, v.variant, python, os)}

    cpu = _cpu_entry(compat, python, os, cpu_box) if cpu_box and not gpus and driver is None else None
    if cpu is not None:
        why_none = None
    elif cpu_box and not gpus and driver is None:
        why_none = f"no torch release in the matrix (as of {compat.as_of}) is made for Python {python}"
    out: Dict[str, Any] = {
        "query": "recommend", "driver": driver, "gpus": [g.label for g in gpus], "python": python, "os": os,
        "recommendation": cpu if cpu_box and not gpus and driver is None else (entry(*best) if best else None),
        "why_none": why_none,
        "cpu_box": cpu_box,
        "per_cuda_variant": [entry(*per_cuda[k]) for k in sorted(per_cuda, key=lambda k: _rel(cuda_of_variant(k)),
                                                                  reverse=True)
                             if best is None or k != best[1].variant or per_cuda[k][0].minor != best[0].minor
                             or cpu is not None],
        "newer_not_fitting": [r for r in rejected if best is None or _rel(r["torch"]) >= _rel(best[0].minor)],
        "driver_cannot_drive_gpu": branch_problem,
        "skipped": skipped,
        "gpu_notes": _gpu_notes(compat, gpus, releases),
        "as_of": compat.as_of,
    }
    out["driver_change"] = _driver_change(compat, driver, gpus, python, os) if branch_problem else None
    out["install"] = install_plan(out)
    return out


def _driver_change(compat: Any, driver: Optional[str], gpus: List[GpuTarget], python: Optional[str],
                   os: str) -> Optional[Dict[str, Any]]:
    """When the driver is newer than the last branch that drives a GPU given (R580 for a Tesla K80: Kepler ends
    at R470, driver_gpu_support.json): that branch, and what to install once it is there, judged with the newest
    driver of it the matrix has seen (cuda_driver.json observed_drivers); when no CUDA build fits that branch
    and the GPUs, the CPU build. None for any other driver problem (too old for a GPU: upgrade)."""
    from ..compat.driver_gpu import driver_gpu_table

    if driver is None or not gpus:
        return None
    try:
        table = driver_gpu_table(compat)
    except LookupError:
        return None
    branch = _rel(driver)[0]
    rows = [(g, table.for_cc(g.cc)) for g in gpus]
    lasts = [(row.last_branch, g, row) for g, row in rows if row is not None and row.last_branch is not None]
    if not lasts:
        return None
    last, g_last, row = min(lasts, key=lambda x: x[0])
    if branch <= last:
        return None  # not a driver past the GPU's last branch
    why = f"R{last} is the last driver branch for {row.architecture} ({g_last.label}); this driver is R{branch}"
    others = [g for g, r in rows if r is not None and r.supports(last) is False]
    if others:  # that branch does not drive another GPU given: no driver drives them all
        return {"install_branch": None, "why": f"{why}, and R{last} does not drive "
                f"{', '.join(g.label for g in others)}: no one driver drives these GPUs [{row.source}]",
                "judged_with_driver": None, "recommendation": None, "why_none": None, "cpu_build": None}
    why += f" [{row.source}]"
    newest = compat.newest_observed_driver(last)
    sub = recommend(compat, newest, gpus, python, os) if newest else None
    rec = sub["recommendation"] if sub else None
    cpu = _cpu_entry(compat, python, os, f"no torch CUDA build in the matrix runs on R{last} with kernels for "
                                          f"{', '.join(g.label for g in gpus)}")
    if cpu is not None and rec is not None:  # the alternative to changing the driver: no GPU use at all
        cpu["rule"] = "without the GPU: the CPU build runs on this machine as it is (no driver change)"
    return {"install_branch": last, "why": why, "judged_with_driver": newest,
            "recommendation": rec, "why_none": sub["why_none"] if sub and rec is None else None,
            "cpu_build": cpu}


def install_plan(out: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """What an install script needs, from recommend's answer: the driver branch to install first (None: the
    driver in place runs it), the torch build (version, variant, index URL, packages) and pip's arguments; None
    when nothing fits (``why_none`` says why)."""
    rec, branch, why = out["recommendation"], None, None
    change = out.get("driver_change")
    if rec is None and change and change["install_branch"] is not None:
        rec = change["recommendation"] or change["cpu_build"]
        branch, why = change["install_branch"], change["why"]
    if rec is None:
        return None
    return {"driver_branch": branch, "driver_why": why, "torch": rec["torch"], "variant": rec["variant"],
            "cuda": rec["cuda"], "arch_list": rec["arch_list"], "index_url": rec["index_url"], "packages": rec["packages"],
            "pip_args": rec["pip_args"], "gpus": out["gpus"]}


def pip_args_line(out: Dict[str, Any]) -> Tuple[Optional[str], str]:
    """(pip's arguments as one shell-quoted line, or None; what to say on stderr): the line only when the build
    installs as the machine is (no driver to change first), so that `pip install $(...)` never installs a build
    that cannot run yet."""
    import shlex

    plan = out.get("install")
    if plan is None:
        return None, f"no torch build fits: {out.get('why_none') or 'see recommend --format json'}"
    line = " ".join(shlex.quote(a) for a in plan["pip_args"])
    if plan["driver_branch"] is not None:
        return None, (f"install the R{plan['driver_branch']} driver first ({plan['driver_why']}); then: "
                      f"pip install {line}")
    return line, ""


def _cpu_entry(compat: Any, python: Optional[str], os: str, why: str) -> Optional[Dict[str, Any]]:
    """The newest torch for ``python`` as its CPU build (download.pytorch.org/whl/cpu): what a machine without
    NVIDIA hardware runs, without the CUDA libraries a CUDA build downloads (GBs) that nothing there can load."""
    fitting = [r for r in compat.torch_releases()
               if python is None or (r.python_min and r.python_max
                                     and _rel(r.python_min) <= _rel(python)[:2] <= _rel(r.python_max))]
    if not fitting:
        return None
    rel = max(fitting, key=lambda r: _rel(r.minor))
    return {"torch_minor": rel.minor, "variant": CPU, "cuda": None, "arch_list": None,
            "rule": f"{why}: the CPU build (no CUDA libraries to download, none could be used here)",
            "not_covered": [], "unknown": [], "torch_source": rel.source, **commands(compat, rel.minor, CPU, python, os)}


def _why_none(compat: Any, python: Optional[str], gpus: List[GpuTarget], skipped: List[str],
              rejected: List[Dict[str, Any]], branch_problem: Optional[str]) -> str:
    """One line: why no build fits (the driver cannot drive the GPUs, no torch for this Python, or every build
    for it lacks the kernels or the driver)."""
    if branch_problem:
        return branch_problem
    if not rejected:
        for_py = f" for Python {python}" if python else ""
        return f"no torch build in the matrix (as of {compat.as_of}) is made{for_py}" + (
            f" ({len(skipped)} releases without a Python range not judged)" if skipped else "")
    newest = max((r["torch"] for r in rejected), key=_rel)
    reasons: List[str] = []
    for r in rejected:
        short = (r["why_not"] or "").split(" [", 1)[0]  # the citation stays in the per-build list
        if r["torch"] == newest and short not in reasons:
            reasons.append(short)
    text = f"no build of torch {newest}{f' (the newest for Python {python})' if python else ''} fits: " \
        + "; ".join(reasons)
    return text + "".join(f"; {n}" for n in _first_with_kernels(compat, gpus, rejected))


def _first_with_kernels(compat: Any, gpus: List[GpuTarget], rejected: List[Dict[str, Any]]) -> List[str]:
    """For a GPU no judged build has kernels for: the first torch in the matrix that has them, and its Pythons."""
    from .matrix import torch_builds_for

    out = []
    for g in gpus:
        if not any(sm_name(g.cc) in (r["why_not"] or "") and "has no" in (r["why_not"] or "") for r in rejected):
            continue
        builds = torch_builds_for(compat, g.cc)
        if not builds:
            out.append(f"no torch build in the matrix has kernels for {g.label}")
            continue
        first = min(builds, key=lambda b: _rel(b["torch"]))
        rel = compat.torch_release(first["torch"])
        pys = f", for Python {rel.python_min}..{rel.python_max}" if rel and rel.python_min else ""
        out.append(f"the first torch with {sm_name(g.cc)} kernels is {first['torch']} ({first['variant']}{pys})")
    return out


def variant_is_default(rel: Any, variant: str) -> bool:
    return rel.default_variant == variant


def _gpu_notes(compat: Any, gpus: List[GpuTarget], releases: List[Any]) -> List[str]:
    """For a GPU no current wheel serves: the last torch with kernels for it, or that none has them."""
    notes: List[str] = []
    known = [r for r in releases if r.arch_lists]
    if not known:
        return notes
    newest = max(known, key=lambda r: _rel(r.minor))
    for g in gpus:
        if any(arch_runs(a, g.cc)[0] for a in newest.arch_lists.values() if a):
            continue
        serving = [(r, v) for r in known for v, a in r.arch_lists.items() if a and arch_runs(a, g.cc)[0]]
        if serving:
            last = max(serving, key=lambda rv: _rel(rv[0].minor))[0]
            variants = sorted(v for r, v in serving if r.minor == last.minor)
            notes.append(f"No current torch ({newest.minor}) has kernels for {g.label}; the last with them is "
                         f"torch {last.minor} ({', '.join(variants)})")
        else:
            notes.append(f"No torch build in the matrix (as of {compat.as_of}) has kernels for {g.label}: "
                         "none can run it")
    return notes


@dataclass(frozen=True)
class RecommendOptions:
    """`envdoctor recommend`'s question: what was given by hand; what is None (or empty) is read from this machine."""

    driver: Optional[str] = None  # --driver
    gpus: List[str] = field(default_factory=list)  # --gpu, each a model name, sm_XX or a comma-separated list
    python_version: Optional[str] = None  # --python X.Y
    os: Optional[str] = None  # "linux" or "windows" (default: this machine's)


def recommend_for(options: RecommendOptions) -> Dict[str, Any]:
    """The answer (report/recommend_view.render_recommendation prints it); RecommendError for a bad input."""
    import platform

    compat = load_compat()
    try:
        driver = check_driver_version(options.driver, compat) if options.driver is not None else None
        gpus = [resolve_gpu(compat, g) for given in options.gpus for g in given.split(",") if g.strip()]
    except TargetError as e:
        raise RecommendError(str(e)) from None
    python = options.python_version
    if python and (not _rel(python) or len(_rel(python)) < 2):
        raise RecommendError(f"--python {python!r}: give a Python version such as 3.11")
    os_name = options.os or ("windows" if platform.system() == "Windows" else "linux")
    notes: List[str] = []
    cpu_box: List[str] = []
    if options.driver is None or not options.gpus or python is None:
        driver, gpus, python = _from_machine(compat, driver, gpus, python, need_driver=options.driver is None,
                                             need_gpus=not options.gpus, need_python=python is None, notes=notes,
                                             cpu_box=cpu_box)
    if python:
        python = ".".join(str(p) for p in _rel(python)[:2])
    out = recommend(compat, driver, gpus, python, os_name, cpu_box=cpu_box[0] if cpu_box else None)
    out["from_this_machine"] = notes
    out["compat_data"] = getattr(compat, "label", None)
    return out


def this_machine() -> Any:
    """The facts recommend reads here: the driver probe, and the PCI devices of vendor 0x10de (sysfs)."""
    from ..model.facts import Driver, Facts, ProbeStatus, Topology
    from ..probes.driver import probe_driver
    from ..probes.pcie import nvidia_pci_devices
    from ..probes.registry import guarded
    from ..probes.runner import Runner

    d = guarded(lambda: probe_driver(Runner()), lambda r: Driver(status=ProbeStatus.FAILED, reason=r), "driver")
    devices = guarded(nvidia_pci_devices, lambda r: None, "topology")
    return Facts(driver=d, topology=Topology(nvidia_pci_devices=devices))


def _from_machine(compat: Any, driver: Optional[str], gpus: List[GpuTarget], python: Optional[str],
                  need_driver: bool, need_gpus: bool, need_python: bool, notes: List[str],
                  cpu_box: Optional[List[str]] = None):
    """Fill what was not given from this machine (driver probe; the active interpreter's version); with
    neither --driver nor --gpu, a machine without NVIDIA hardware (the same rule as preflight's CPU box,
    judging.machine_setting) appends why to ``cpu_box``."""
    if need_driver or need_gpus:
        from ..judging import STATIC, machine_setting

        facts = this_machine()
        d = facts.driver
        if need_driver and need_gpus and cpu_box is not None and machine_setting(facts) == STATIC:
            pci = "no PCI device of vendor 0x10de" if facts.topology.nvidia_pci_devices == [] else \
                "its PCI devices unreadable"
            cpu_box.append(f"no NVIDIA hardware on this machine (no NVIDIA driver, {pci})")
        if need_driver and d.version:
            driver = d.version
            notes.append(f"driver {d.version} read from this machine")
        elif need_driver:
            notes.append(f"no --driver given and none read here (driver probe {d.status}"
                         + (f": {d.reason}" if d.reason else "") + ")")
        if need_gpus:
            for gpu in d.gpus:
                cc = gpu.compute_capability or (compat.gpu_compute_capability(gpu.name) if gpu.name else None)
                if cc:
                    gpus.append(GpuTarget(gpu.name or f"GPU {gpu.index}",
                                          f"{gpu.name or 'GPU'} (compute capability {cc})", cc, gpu.name, "model"))
    if need_python:
        from ..probes.python_env import default_interpreter
        from ..probes.runner import Runner

        exe, how = default_interpreter()
        try:
            res = Runner().run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], timeout=10)
            text = (getattr(res, "stdout", "") or "").strip()
            python = text if _rel(text) else None
            if python:
                notes.append(f"Python {python} from {exe} ({how})")
        except Exception:  # noqa: BLE001 - the probe boundary: an interpreter that fails leaves Python unknown
            python = None
    return driver, gpus, python
