"""A GPU that only some torch builds carry kernels for, said not to work, where the paste does not show torch's
build (issue 42, helper archdriver).

torch.gpu-arch judges the GPU against torch's architecture list when the paste gives torch's build. Many reports
give only the GPU and the words that it is not supported ("no compatible GPU available", "installed versions of
torch that did not support this card", "Found no NVIDIA driver" on an RTX 5090). Whether that can be the build
depends on the GPU: a compute capability that every current default build of torch runs (compat_data/torch.json's
arch lists; sm_86 SASS runs on 8.9, by domain/arch.arch_runs) is no lead, while one that the default build of some
current release lacks is: Blackwell (sm_120) before the CUDA 12.8 builds, Maxwell/Pascal (sm_5x/6x) and then Volta
after the CUDA 12.8 and 13 builds dropped them. "Current" are the releases whose default build uses the matrix's
newest CUDA major or the one before it. Then a low-confidence warning names the releases that lack it and asks
for torch's build; it never says which build the paste has.
"""

from __future__ import annotations

import re
from typing import List, Tuple

from ..compat.signatures import signature_context
from ..domain.arch import arch_runs, parse_cc, sm_name
from ..domain.variants import cuda_of_variant
from ..model.findings import Evidence, Finding, Fix
from ..queries import gpu_capabilities
from ._paste import paste_or_skip
from ._paste_roles import prov
from .base import PASTE_ONLY, Check, CheckContext, Findings, SkipCheck, registrar

CHECKS: List[Check] = []
check = registrar(CHECKS, applies=PASTE_ONLY)

EDGE = Findings("diagnose.gpu-arch-build-unknown", "GPU_ARCH_NOT_IN_TORCH_BUILD", kinds=("only-some-builds",))
SETTLE = ('python -c "import torch; print(torch.__version__, torch.cuda.get_arch_list())"; '
          "nvidia-smi --query-gpu=name,compute_cap --format=csv")


def _torch_build_known(ctx: CheckContext) -> bool:
    py = ctx.facts.pythons[0] if ctx.facts.pythons else None
    t = py.torch if py else None
    pkg = py.package("torch") if py else None
    tag = "+" in ((t.version if t else "") or "") or "+" in ((pkg.version if pkg else "") or "")
    return bool((t is not None and t.cuda) or tag)


def _known_message(ctx: CheckContext) -> bool:
    """A message of the paste that a catalogue row of this category recognises ("sm_120 is not compatible with the
    current PyTorch installation", "no kernel image is available"): that finding says it, with its own fix."""
    msgs = ctx.facts.paste.messages if ctx.facts.paste else []
    rows = [sig for sig in (ctx.compat.signatures or []) if sig.category == EDGE.category]
    return any(sig.search(m) for sig in rows for m in msgs)


def _current_defaults(ctx: CheckContext) -> List[Tuple[str, str, List[str]]]:
    """(release, default variant, arch list) of the releases whose default build uses the newest CUDA major of
    the matrix's defaults or the one before it."""
    rows = []
    for r in ctx.compat.torch_releases():
        cuda = cuda_of_variant(r.default_variant) if r.default_variant else None
        arch = ctx.compat.torch_arch_list(r.minor, r.default_variant) if cuda and r.default_variant else None
        if cuda and arch:
            rows.append((r.minor, r.default_variant, arch, int(cuda.split(".")[0])))
    if not rows:
        return []
    newest = max(m for *_, m in rows)
    return [(minor, variant, arch) for minor, variant, arch, m in rows if m >= newest - 1]


@check(EDGE, "A GPU only some torch builds carry, said not to work (torch's build not in the paste)")
def check_gpu_arch_build_unknown(ctx: CheckContext) -> List[Finding]:
    paste_or_skip(ctx)
    said = prov(ctx.facts).get("paste.gpu_unsupported_said")
    if not said:
        raise SkipCheck("the paste does not say the GPU is unsupported or not working")
    if _torch_build_known(ctx):
        raise SkipCheck("torch's build is in the paste (torch.gpu-arch judges it)")
    if _known_message(ctx):
        raise SkipCheck("a known message of the paste already says the build lacks the GPU (messages.signatures)")
    gpus = [g for g in gpu_capabilities(ctx.facts, ctx.compat) if g[1]]
    named = re.search(r"\bsm_(\d)(\d)\b", str(said.get("reader") or ""))
    if not gpus and named:  # no GPU named, but the words name its architecture ("has no sm_60 kernels")
        gpus = [("the GPU the paste names by its architecture",
                 f"{named.group(1)}.{named.group(2)}", "paste.gpu_unsupported_said")]
    if not gpus:
        raise SkipCheck("no GPU with a known compute capability in the paste")
    defaults = _current_defaults(ctx)
    if not defaults:
        raise SkipCheck("no current torch build's architecture list in this matrix")
    out: List[Finding] = []
    for label, cc, path in gpus[:1]:
        lacking = [f"{minor} ({variant})" for minor, variant, arch in defaults if not arch_runs(arch, cc)[0]]
        having = [f"{minor} ({variant})" for minor, variant, arch in defaults if arch_runs(arch, cc)[0]]
        if not lacking or not having:
            return []  # every current build runs it (no lead), or none does (torch.gpu-arch's verdict, not a guess)
        sm = sm_name(cc)
        out.append(EDGE.warning(
            "only-some-builds", confidence="low",
            summary=(f"{label} (compute capability {cc}, {sm}) has kernels only in some torch builds (the default "
                     f"builds of {_span(lacking)} lack it, those of {_span(having)} carry it), and the paste says "
                     f"\u201c{said.get('value')}\u201d; torch's build is not in the paste"),
            detail=("Each torch build carries kernels for a list of GPU architectures; on a GPU outside it every "
                    "CUDA kernel fails ('no kernel image is available'), torch warns that the GPU 'is not compatible "
                    "with the current PyTorch installation', and programs built on it may report no usable GPU. "
                    "Whether that is the cause here depends on the build the program installed, which the paste "
                    "does not show."),
            evidence=[Evidence(path, cc, source="the paste's words" if path.startswith("paste.") else
                               "compat_data/gpus.json"),
                      Evidence("paste.gpu_unsupported_said", said.get("value"), source=str(said.get("reader", ""))),
                      Evidence("pythons[0].torch.arch_list", None, expected=f"{sm} (SASS) or PTX <= compute_{sm[3:]}",
                               source="compat_data/torch.json (default builds: " + ", ".join(lacking) + " lack it)"),
                      Evidence("paste.settle", SETTLE)],
            fix=Fix(f"Check torch's build (the first command); if {sm} is not in its list, install a torch build "
                    f"that carries it (one of {_span(having)})", [SETTLE],
                    "https://pytorch.org/get-started/locally/"),
        ))
    return out


# ---- a library with its own CUDA build, named in the paste, on a GPU below the oldest architecture that build
# compiles for (issue 42, round 11: NCCL's "unhandled cuda error" on a Quadro K4200, NVIDIA/nccl#112; LightGBM's
# device='cuda' crashing on a Tesla M60, LightGBM#6705): the cited rows of context.library_min_compute_capability

LIBRARY = Findings("diagnose.library-gpu-arch", "GPU_ARCH_NOT_IN_TORCH_BUILD", kinds=("below-library-floor",))


@check(LIBRARY, "Each library the paste names has kernels for the paste's GPUs")
def check_library_gpu_arch(ctx: CheckContext) -> List[Finding]:
    paste_or_skip(ctx)
    named = str(prov(ctx.facts).get("paste.library_builds", {}).get("value") or "").split()
    rows = [r for r in ((signature_context(ctx.compat, "library_min_compute_capability") or {}).get("value") or [])
            if isinstance(r, dict) and r.get("library") in named]
    if not rows:
        raise SkipCheck("the paste names no library listed with the oldest architecture its CUDA build compiles for",
                        not_applicable="no listed library named")
    gpus = [g for g in gpu_capabilities(ctx.facts, ctx.compat) if g[1] and re.fullmatch(r"\d+\.\d+", g[1])]
    if not gpus:
        raise SkipCheck("no GPU with a known compute capability in the paste")
    out: List[Finding] = []
    for r in rows:
        below = [(label, cc, path) for label, cc, path in gpus if parse_cc(cc) < parse_cc(r["min_cc"])]
        if not below:
            continue
        label, cc, path = below[0]
        out.append(LIBRARY.warning(
            "below-library-floor", confidence="medium",
            summary=(f"{r['name']} has no kernels for {label} (compute capability {cc}): its builds compile by default "
                     f"for compute capability {r['min_cc']} and newer"),
            detail=("A CUDA library runs only on the architectures its build compiled kernels (or PTX) for; on an "
                    "older GPU its first kernel launch fails (NCCL: 'unhandled cuda error') or the program crashes, "
                    "whatever the driver and torch."),
            evidence=[Evidence(path, cc, expected=f">= {r['min_cc']}", source=str(r["source"])),
                      Evidence("paste.library_builds", r["library"])],
            fix=Fix(f"Run {r['name']} on a GPU of compute capability {r['min_cc']} or newer, or build it from source "
                    f"with kernels for compute capability {cc} where the library still supports it (the cited "
                    "thread says how)", [], str(r["source"]).split(" ")[0])))
    return out


def _span(items: List[str]) -> str:
    return items[0] if len(items) == 1 else f"{items[0]} .. {items[-1]}"
