"""Run every reader over a paste and turn what they saw into Facts (origin "paste")."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Dict, List, Optional, Tuple

from ..compat.signatures import signatures_from
from ..domain.arch import cc_str
from ..domain.variants import cuda_of_variant, local_tag
from ..model.facts import (
    Container,
    CudaToolkit,
    Driver,
    Facts,
    Gpu,
    Host,
    Package,
    PasteSource,
    ProbeStatus,
    PythonEnv,
    SystemLibraries,
    Toolkits,
    Topology,
    TorchInfo,
    normalize_name,
)
from . import fields
from .readers import (
    banners,
    blocks,
    collect_env,
    contexts,
    cuda_named,
    devices_said,
    driver_words,
    ds_report,
    env_vars,
    frameworks,
    gpu_discovery,
    gpu_held,
    gpu_said,
    host_lines,
    imports,
    loose_lines,
    messages,
    nccl_log,
    nvidia_smi,
    p2p_said,
    package_logs,
    packages,
    paste_date,
    prose,
    python_lines,
    recording,
    repl,
    scheduler,
    speed,
    status_codes,
    toolchain,
)
from .readers.base import BARE, LOOSE, REPL, STRUCTURED, Acc, Paste, clean_lines

NOT_IN_PASTE = "not in the pasted text"
MAX_LINE = 20000  # longer lines are cut: no reader needs more, and it bounds regex work

def _transform(value: str, how: Optional[str]) -> Any:
    if how == "cuda_api":  # cuDriverGetVersion(): 1000 * major + 10 * minor (11040 -> "11.4")
        n = int(value)
        return f"{n // 1000}.{(n % 1000) // 10}"
    if how == "sm_cc":  # "sm_120" -> "12.0", "sm_86" -> "8.6", "sm_90a" -> "9.0"
        return cc_str(value)
    if how == "words":
        return value.split()
    return value


def dedupe_paragraphs(lines: List[str]) -> Tuple[List[str], int]:
    """Drop repeated blocks (runs of 3+ non-blank lines seen before): a report pasted twice, a log repeating
    the same traceback. Readers keep the first value they see, so a repeat can add nothing. Short runs stay:
    a REPL's "False" after another statement is a different fact. Returns (lines, blocks dropped)."""
    out: List[str] = []
    seen: set = set()
    dropped = 0
    block: List[str] = []

    def flush() -> None:
        nonlocal dropped
        if len(block) >= 3:
            key = "\n".join(block)
            if key in seen:
                dropped += 1
                block.clear()
                return
            seen.add(key)
        out.extend(block)
        block.clear()

    for line in lines:
        if line.strip():
            block.append(line)
        else:
            flush()
            out.append(line)
    flush()
    return out, dropped


def read_all(text: str, compat: Any) -> Acc:
    """Every reader over one text, then the facts its messages quote."""
    acc = read_raw(text, compat)
    finish(acc, compat)
    return acc


def read_raw(text: str, compat: Any = None, recordings: bool = True) -> Acc:
    """Every reader over one text; the facts quoted in messages are added by ``finish`` (after merging the
    parts of a paste, so a message in one part can complete a GPU named in another). ``recordings=False``: a unit
    of a paste, whose recording is read across all units once they are merged (``read_recordings``)."""
    acc = Acc()
    lines, dropped = dedupe_paragraphs([ln[:MAX_LINE] for ln in clean_lines(text)])
    paste = Paste(lines)
    collect_env.read(paste, acc)
    nvidia_smi.read_nvidia_smi(paste, acc)
    gpu_discovery.read_gpu_discovery(paste, acc)
    blocks.read(paste, acc)
    packages.read(paste, acc)
    repl.read_repl(paste, acc)
    toolchain.read_toolchain(paste, acc)
    env_vars.read_env(paste, acc, env_vars.table_names(compat))
    loose_lines.read_loose(paste, acc)
    prose.read_prose(paste, acc)
    prose.read_hangs(paste, acc)
    devices_said.read_devices_said(paste, acc)
    nccl_log.read_nccl_log(paste, acc)
    banners.read_banners(paste, acc)
    python_lines.read_python_lines(paste, acc)
    frameworks.read_frameworks(paste, acc)
    ds_report.read_ds_report(paste, acc)
    scheduler.read_jobs(paste, acc)
    host_lines.read_host(paste, acc)
    contexts.read_contexts(paste, acc)
    contexts.read_l4t_container(paste, acc)
    package_logs.read_package_logs(paste, acc)
    package_logs.read_pip_replaced(paste, acc)
    package_logs.read_extension_index(paste, acc)
    package_logs.read_pip_resolved(paste, acc)
    paste_date.read_date(paste, acc)
    cuda_named.read_cuda_named(paste, acc)
    gpu_said.read_gpu_said(paste, acc)
    driver_words.read_driver_words(paste, acc)
    gpu_held.read_gpu_held(paste, acc)
    p2p_said.read_p2p_said(paste, acc)
    cuda_named.read_cudnn_named(paste, acc)
    if recordings:
        _recordings(paste, acc)
    imports.read_imports(paste, acc)
    messages.read(paste, acc, signatures_from(compat))
    status_codes.read_status_lines(paste, acc, compat)
    acc.repeated_blocks = dropped
    return acc


def _recordings(paste: Paste, acc: Acc) -> None:
    recording.read(paste, acc)
    speed.read_speed(paste, acc)


def read_recordings(text: str, acc: Acc) -> None:
    """The recordings and speed symptoms of the whole text into ``acc.watch``: a paste cut into units (each
    nvidia-smi table is one, diagnose/machines.py) is one recording across them, which no unit's reading sees."""
    acc.watch = None  # type: ignore[attr-defined]
    lines, _ = dedupe_paragraphs([ln[:MAX_LINE] for ln in clean_lines(text)])
    _recordings(Paste(lines), acc)


def finish(acc: Acc, compat: Any) -> None:
    if acc.repeated_blocks:
        acc.notes.append(f"{acc.repeated_blocks} repeated block(s) read once")
    _facts_from_messages(acc, compat)


def _facts_from_messages(acc: Acc, compat: Any) -> None:
    """Numbers inside messages are facts too ("found version 11040" is the driver's CUDA 11.4 ceiling)."""
    sigs = signatures_from(compat)
    for message in acc.messages:
        for sig in sigs:
            if not sig.facts:
                continue
            m = sig.search(message)
            if not m:
                continue
            gpu_name, gpu_cc = None, None
            for group, spec in sig.facts.items():
                value = m.group(group)
                if not value:
                    continue
                path, _, how = spec.partition("|")
                val = _transform(value, how or None)
                if path == "gpu.name":
                    gpu_name = val
                elif path == "gpu.compute_capability":
                    gpu_cc = val
                elif fields.key_of_path(path):
                    acc.put(fields.key_of_path(path), val, REPL, f"message: {sig.id}")
            if gpu_name or gpu_cc:
                _gpu_from_message(acc, gpu_name, gpu_cc)


def _same_gpu(a: Optional[str], b: str) -> bool:
    if not a:
        return False
    a, b = a.strip().lower(), b.strip().lower()
    if a.endswith("..."):
        return b.startswith(a[:-3].strip())
    return a == b or a.endswith(b) or b.endswith(a)


def _gpu_from_message(acc: Acc, name: Optional[str], cc: Optional[str]) -> None:
    gpus = list(acc.gpus)
    for i, g in enumerate(gpus):
        if (name and _same_gpu(g.name, name)) or (not name and len(gpus) == 1):
            gpus[i] = Gpu(**{**g.__dict__, "compute_capability": g.compute_capability or cc,
                             "name": g.name or name})
            acc.gpus = gpus
            return
    if name:
        acc.gpus = gpus + [Gpu(index=len(gpus), name=name, compute_capability=cc)]
        acc.gpus_priority = max(acc.gpus_priority, REPL)


def _section_status(seen: bool) -> Dict[str, Any]:
    return {"status": ProbeStatus.OK, "reason": "from the pasted text"} if seen else \
        {"status": ProbeStatus.SKIPPED, "reason": NOT_IN_PASTE}


def build_facts(acc: Acc, text: str) -> Facts:
    g = acc.get
    # ---- driver
    gpus = list(acc.gpus)
    if acc.nvlinks:
        # `nvidia-smi nvlink --status` numbers GPUs like the table and -q do; alone it names them too
        if not gpus:
            gpus = [Gpu(index=i, name=acc.nvlink_names.get(i)) for i in sorted(acc.nvlinks)]
        gpus = [dataclasses.replace(gp, nvlinks=acc.nvlinks[gp.index]) if gp.index in acc.nvlinks else gp
                for gp in gpus]
    if not gpus and g("gpu.loose_name"):
        gpus = [Gpu(index=0, name=g("gpu.loose_name"))]
    if len(gpus) == 1 and g("gpu.capability") and not gpus[0].compute_capability:
        gpus = [Gpu(**{**gpus[0].__dict__, "compute_capability": g("gpu.capability")})]
    if g("driver.no_devices"):
        gpus = []
    smi_error = g("driver.smi_error")
    smi_missing = next((m for m in acc.messages if re.search(
        r"nvidia-smi\b[^\n]{0,40}?\b(?:command )?not found|'nvidia-smi' is not recognized", m, re.I)), None)
    # Xid lines are printed by the loaded NVIDIA kernel module: a driver is there
    driver_seen = any(acc.has(k) for k in ("driver.version", "driver.seen", "driver.cuda")) or bool(gpus) \
        or bool(acc.xid_events)
    if smi_error and g("driver.nvml_error") == "DRIVER_NOT_LOADED":
        status, reason = ProbeStatus.ABSENT, smi_error
    elif smi_error:
        status, reason = ProbeStatus.FAILED, smi_error
    elif driver_seen:
        status, reason = ProbeStatus.OK, "from the pasted text (" + (acc.how("driver.version") or "GPU list") + ")"
    elif smi_missing:
        status, reason = ProbeStatus.ABSENT, smi_missing[:200]
    else:
        status, reason = ProbeStatus.SKIPPED, NOT_IN_PASTE
    driver = Driver(**{
        **fields.values(Driver, acc),
        "status": status, "reason": reason, "source": "paste" if status != ProbeStatus.SKIPPED else None,
        "nvidia_smi_error": smi_error or (smi_missing if status == "absent" else None),
        "gpus": gpus if status == ProbeStatus.OK else ([] if status != ProbeStatus.SKIPPED else gpus),
        "xid_events": acc.xid_events, "kernel_log_readable": True if acc.xid_events else None,
        "kernel_log_source": "the pasted kernel log" if acc.xid_events else None,
    })
    if status == ProbeStatus.ABSENT and gpus:
        # GPUs named in the paste (a collect_env list, a message) exist even though the driver is not usable
        driver = Driver(**{**driver.__dict__, "gpus": gpus})

    # ---- python / torch / packages
    pkgs: List[Package] = [p for _, p in acc.packages.values()]
    torch_pkg = acc.packages.get("torch")
    torch_version = g("torch.version") or (torch_pkg[1].version if torch_pkg else None)
    torch_cuda = g("torch.cuda")
    tag_cuda = cuda_of_variant(local_tag(torch_version))
    if torch_cuda is None and tag_cuda:
        # the wheel's local tag names the CUDA it was built with: +cu124 is torch.version.cuda == "12.4"
        torch_cuda = tag_cuda
    cpu_build = bool(g("torch.cpu_build")) and not torch_cuda
    torch_keys = [k for k in acc.values if k.startswith("torch.")]
    torch = None
    if torch_version or torch_keys:
        arch = g("torch.arch_list")
        if arch is None and cpu_build:
            arch = []  # a CPU build's torch.cuda.get_arch_list() is empty
        init_err = next((m for m in acc.messages if "CUDA initialization" in m or "cudaGetDeviceCount" in m
                         or "is too old (found version" in m), None)
        torch = TorchInfo(**{
            **fields.values(TorchInfo, acc), "version": torch_version, "cuda": torch_cuda, "arch_list": arch,
            "cuda_init_error": init_err, "warnings": [m for m in acc.messages if "Warning" in m][:20],
        })
        if torch_version and torch_pkg is None:
            pkgs.append(Package(name="torch", version=torch_version,
                                variant="cpu" if cpu_build and not local_tag(torch_version) else None,
                                variant_evidence=acc.how("torch.cpu_build") if cpu_build else None))
    python_seen = bool(torch or pkgs or acc.has("python.version") or acc.env)
    pythons: List[PythonEnv] = []
    if python_seen:
        pythons.append(PythonEnv(**{
            **fields.values(PythonEnv, acc), **_section_status(True), "requested_as": "paste",
            "packages": sorted(pkgs, key=lambda p: normalize_name(p.name)), "torch": torch, "env": dict(acc.env),
        }))

    # ---- toolkit, libraries
    tk_version = g("toolkit.version")
    toolkits = Toolkits(**_section_status(bool(tk_version)))
    if tk_version:
        tk = CudaToolkit(**fields.values(CudaToolkit, acc), found_via="paste")
        toolkits = Toolkits(status=ProbeStatus.OK, reason=f"from the pasted text ({acc.how('toolkit.version')})",
                            on_path=tk, installed=[tk], cuda_home_env=acc.env.get("CUDA_HOME"))
    libs = SystemLibraries(**_section_status(bool(acc.libraries)))
    if acc.libraries:
        libs = SystemLibraries(status=ProbeStatus.OK, reason="from the pasted text",
                               cudnn_version=acc.libraries[0].version, cudnn_path=acc.libraries[0].path,
                               libraries=list(acc.libraries))

    # ---- host
    container = None
    if g("container.runtime"):
        requested = g("container.gpus_requested")
        container = Container(**{**fields.values(Container, acc), "evidence": acc.how("container.runtime"),
                                 "gpu_device_nodes": [] if requested is False else None})
    host_keys = [k for k in acc.values if k.startswith("host.")]
    host = Host(**_section_status(bool(host_keys or container)))
    if host_keys or container:
        host = Host(**{
            **fields.values(Host, acc), "status": ProbeStatus.OK, "reason": "from the pasted text",
            "container": container, "virtualization": "microsoft" if g("host.wsl") else None,
        })
    topology = Topology(**_section_status(bool(acc.topology_matrix or acc.pcie_links)))
    if acc.topology_matrix or acc.pcie_links:
        topology = Topology(status=ProbeStatus.OK, reason="from the pasted text", gpu_matrix=acc.topology_matrix,
                            pcie_links=list(acc.pcie_links))

    # ---- what the paste did not show
    not_found = []
    if driver.status == ProbeStatus.SKIPPED or not driver.version:
        not_found.append("driver version")
    if not driver.gpus and not g("driver.no_devices"):
        not_found.append("GPU model")
    if not torch_version:
        not_found.append("torch version")
    elif not torch_cuda and not cpu_build and not local_tag(torch_version):
        not_found.append("torch CUDA version (torch.version.cuda)")
    if not g("python.version"):
        not_found.append("Python version")
    if not tk_version:
        not_found.append("nvcc version")
    said = []
    if acc.messages:
        said = ["error/warning messages" if not acc.dropped_messages else
                f"error/warning messages ({acc.message_lines} lines; the first and last {len(acc.messages)} "
                "distinct kept)"]
    paste = PasteSource(found=list(acc.found) + said + list(acc.notes),
                        not_found=not_found, messages=list(acc.messages), text_excerpt=text[:400])
    date = g("paste.date")
    return Facts(origin="paste", collected_at=f"{date}T00:00:00Z" if date else None, driver=driver, toolkits=toolkits, system_libraries=libs, pythons=pythons,
                 host=host, topology=topology, paste=paste, watch=getattr(acc, "watch", None))


_CONFIDENCE = {STRUCTURED + 1: "high", STRUCTURED: "high", REPL: "high", LOOSE: "medium", BARE: "low"}


def provenance(acc: Acc, where: Any) -> Dict[str, Dict[str, Any]]:
    """Where each recovered fact came from: fact path -> {where ("001.txt line 3"), reader, confidence}.

    Checks read these fields (is there a GPU list at all? how sure is the driver version?), never the prose of
    ``found`` / ``not_found``. A fact quoted inside an error message is medium confidence: the message may be
    about another install.
    """
    out: Dict[str, Dict[str, str]] = {}
    for key, (prio, value, how) in acc.values.items():
        conf = "medium" if str(how).startswith("message:") else _CONFIDENCE.get(prio, "low")
        out[fields.provenance_path(key)] = {"where": where(value), "reader": str(how), "confidence": conf,
                                     "value": value if isinstance(value, (str, int, float, bool)) else str(value)}
    if acc.gpus:
        out["driver.gpus"] = {"where": where(acc.gpus[0].name or ""), "reader": "GPU list",
                              "confidence": _CONFIDENCE.get(acc.gpus_priority, "medium")}
    elif acc.values.get("gpu.loose_name"):
        out["driver.gpus"] = dict(out["driver.gpus[0].name"])
    if acc.get("driver.no_devices"):
        out["driver.gpus"] = {"where": where("No devices were found"), "reader": "nvidia-smi", "confidence": "high"}
    for name, (prio, how, line) in acc.env_how.items():
        out[f"pythons[0].env.{name}"] = {"where": where(line or name), "reader": how,
                                         "confidence": _CONFIDENCE.get(prio, "low"), "value": acc.env.get(name)}
    for name, (prio, pkg) in acc.packages.items():
        # a name with its version is never a bare number: a pip install line or a typed "name: version" is medium
        out[f"pythons[0].packages.{name}"] = {"where": where(pkg.version), "reader": "package list",
                                              "confidence": "high" if prio >= STRUCTURED - 1 else "medium",
                                              "value": pkg.version}
        if name == "torch" and "pythons[0].torch.version" not in out:
            out["pythons[0].torch.version"] = dict(out[f"pythons[0].packages.{name}"], reader="package metadata")
    return out
