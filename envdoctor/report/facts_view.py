"""The key facts as (label, value) rows and the small formatters of fact values, shared by every renderer."""

from __future__ import annotations

from typing import Any, List, Tuple

from ..domain.variants import is_cpu_build
from ..model.facts import Facts, Gpu, ProbeStatus, PythonEnv

UNKNOWN = "unknown"

# How a section that was not read is named: never "N/A", always the status and its reason.
_STATUS_WORDS = {
    ProbeStatus.ABSENT: "not found",
    ProbeStatus.FAILED: "could not be read",
    ProbeStatus.UNSUPPORTED: "not supported here",
    ProbeStatus.SKIPPED: "not checked",
}


def fmt(value: Any) -> str:
    """A fact value as text: ``None`` is "unknown" (never "N/A"), booleans are yes/no."""
    if value is None:
        return UNKNOWN
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def fmt_gib(num_bytes: int | None) -> str:
    if num_bytes is None:
        return f"{UNKNOWN} GiB"
    return f"{num_bytes / 2**30:.1f} GiB"


def section_state(section: Any) -> str | None:
    """None when the section was read; else "not found — <reason>" and the like."""
    status = getattr(section, "status", ProbeStatus.OK)
    if status == ProbeStatus.OK:
        return None
    word = _STATUS_WORDS.get(status, status)
    reason = getattr(section, "reason", None)
    return f"{word} — {reason}" if reason else word


def _link(gen: int | None, width: int | None) -> str:
    if gen is None and width is None:
        return UNKNOWN
    return f"{f'Gen{gen}' if gen is not None else 'gen unknown'} {f'x{width}' if width is not None else 'width unknown'}"


def _pcie(gpu: Gpu) -> str:
    current = _link(gpu.pcie_gen_current, gpu.pcie_width_current)
    best = _link(gpu.pcie_gen_max, gpu.pcie_width_max)
    if current == UNKNOWN and best == UNKNOWN:
        return f"PCIe {UNKNOWN}"
    return f"PCIe {current} (max {best})"


def _gpu_line(gpu: Gpu) -> str:
    nvml_error = getattr(gpu, "nvml_error", None)
    if nvml_error and gpu.compute_capability is None and gpu.memory_total_bytes is None:
        return f"{fmt(gpu.name)} · could not be read: {nvml_error}"
    line = " · ".join([
        fmt(gpu.name),
        f"compute {fmt(gpu.compute_capability)}",
        fmt_gib(gpu.memory_total_bytes),
        _pcie(gpu),
    ])
    if nvml_error:
        line += f" · could not be read: {nvml_error}"
    return line


FACT_ERROR_CHARS = 160  # a key-facts row quotes an error's first sentence; the finding's evidence has it whole


def _first_line(text: str) -> str:
    """An error's first line, cut after its first sentence when that line runs on (torch's 'driver too old'
    warning is one 400-character line: six lines of the facts table), and at FACT_ERROR_CHARS with ' …'."""
    line = text.strip().splitlines()[0] if text.strip() else text
    if len(line) <= FACT_ERROR_CHARS:
        return line
    end = line.find(". ", 40)
    if 0 < end < FACT_ERROR_CHARS:
        return line[:end + 1] + " …"
    cut = line[:FACT_ERROR_CHARS - 2]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + " …"


def _torch_line(env: PythonEnv) -> str:
    torch = env.torch
    if torch is None:
        return "not installed"
    if torch.import_error:
        return f"{fmt(torch.version)}: import failed — {_first_line(torch.import_error)}"
    if torch.cuda is not None:
        build = f"torch CUDA {torch.cuda}"
    elif torch.hip is not None:
        build = f"ROCm {torch.hip}"
    elif is_cpu_build(torch):  # the rule torch.cuda-build judges by, not only a +cpu tag
        build = "CPU build"
    else:
        build = f"torch CUDA {UNKNOWN}"
    available = f"cuda available: {fmt(torch.cuda_available)}"
    if torch.imported is False and env.torch_inspected is False:
        available = "not imported (--no-torch): build read from its files"
    elif torch.cuda_available is False and torch.cuda_init_error:
        available += f" — {_first_line(torch.cuda_init_error)}"
    elif torch.cuda_available and torch.device_count is not None:
        available += f" ({torch.device_count} device{'s' if torch.device_count != 1 else ''})"
    return " · ".join([fmt(torch.version), build, available])


def smoke_line(smoke: Any) -> str:
    """The smoke tier in one line: which tier, how its steps went (the ones that did not pass by name), and what it
    did not try (the facts' `smoke.steps` list every step; -v shows them with the checks)."""
    if smoke.tier == "off":
        return "smoke tier off (--smoke off): nothing was tried"
    counts: dict = {}
    for step in smoke.steps:
        counts[step.status] = counts.get(step.status, 0) + 1
    parts = []
    for status, n in sorted(counts.items(), key=lambda x: x[0] != "ok"):
        names = [s.name for s in smoke.steps if s.status == status]
        parts.append(f"{n} {status}" + ("" if status in ("ok", "skipped") else f" ({', '.join(names)})"))
    # how long it took is in the JSON (smoke.duration_s) and each step's: the row keeps to what ran and what not
    text = f"{smoke.tier} tier: {', '.join(parts) or 'no step'}"
    if smoke.not_tried:
        text += "; not tried: " + ", ".join(_grouped(smoke.not_tried))
    if smoke.errors:
        text += "; " + "; ".join(smoke.errors)
    return text


def _grouped(items: list) -> list:
    """Items that end in the same "(why)" said once: "torch.compile (--smoke thorough)" and "a DataLoader holding
    64 tensors (--smoke thorough)" -> "torch.compile, a DataLoader holding 64 tensors (--smoke thorough)"."""
    order: list = []
    by_why: dict = {}
    for item in items:
        head, sep, why = item.rpartition(" (")
        key = ("(" + why) if sep and why.endswith(")") else None
        if key is None:
            order.append((item, None))
            continue
        if key not in by_why:
            by_why[key] = []
            order.append((None, key))
        by_why[key].append(head)
    return [item if key is None else f"{', '.join(by_why[key])} {key}" for item, key in order]


def _host_line(facts: Facts) -> str:
    host = facts.host
    os_name = host.distro_name or " ".join(x for x in (host.distro_id, host.distro_version) if x) or None
    os_text = fmt(os_name or host.os)
    if host.kernel:
        os_text += f" ({host.os or 'kernel'} {host.kernel})"
    cpus = f"{fmt(host.cpu_logical_count)} CPUs"
    if host.cpu_affinity_count is not None and host.cpu_affinity_count != host.cpu_logical_count:
        cpus += f" ({host.cpu_affinity_count} usable)"
    ram = f"{fmt_gib(host.memory_total_bytes)} RAM"
    if host.container is None:
        container = f"container: {UNKNOWN}"
    elif host.container.runtime:
        container = f"container: {host.container.runtime}"
    else:
        container = "no container"
    parts = [os_text, cpus, ram, container]
    if host.wsl:
        parts.append(f"WSL{fmt(host.wsl_version) if host.wsl_version else ''}")
    return " · ".join(parts)


def _at(what: str, where: str | None) -> str:
    """"3.11.7 at /usr/bin/python3"; with no path, "3.11.7 (path unknown)", never "at unknown"."""
    return f"{what} at {where}" if where else f"{what} (path unknown)"


def summary_rows(facts: Facts) -> List[Tuple[str, str]]:
    """The key-fact rows of a several-machine paste: each machine's label, then what differed (each machine's own
    facts are in its section)."""
    paste = facts.paste
    rows: List[Tuple[str, str]] = []
    for m in (paste.machines or []) if paste is not None else []:
        label = (m.paste.reports or ["report"])[0] if m.paste is not None else "report"
        head, _, where = label.partition(" (")
        rows.append((head.capitalize(), where.rstrip(")") or label))
    rows.extend(("Conflict", c) for c in (paste.conflicts or []) if paste is not None)
    return rows


def key_fact_rows(facts: Facts) -> List[Tuple[str, str]]:
    """(label, value) rows of the key facts, shared by the console and Markdown renderers."""
    paste = facts.paste
    if paste is not None and paste.machines:
        # a paste holding several machines' reports: their labels and what differed (each machine's facts are
        # in its section, report/machines.py)
        return summary_rows(facts)
    rows: List[Tuple[str, str]] = []
    driver = facts.driver
    state = section_state(driver)
    for gpu in driver.gpus:
        rows.append((f"GPU {gpu.index}", _gpu_line(gpu)))
    if state is None:
        if not driver.gpus and facts.paste is not None and "driver.gpus" not in (facts.paste.provenance or {}):
            rows.append(("GPUs", "not in the paste"))
        elif not driver.gpus:
            rows.append(("GPUs", "none visible to the driver"))
        ceiling = (
            f"CUDA ≤ {driver.cuda_driver_version} (the driver's ceiling, not a toolkit)"
            if driver.cuda_driver_version
            else f"CUDA ceiling {UNKNOWN}"
        )
        rows.append(("Driver", f"{fmt(driver.version)} · {ceiling}"))
    else:
        rows.append(("Driver", state))

    toolkits = facts.toolkits
    state = section_state(toolkits)
    if state is not None:
        rows.append(("nvcc", state))
    elif toolkits.on_path is not None:
        tk = toolkits.on_path
        version = fmt(tk.version_full or tk.version)
        rows.append(("nvcc", _at(version, tk.nvcc_path or tk.path)))
    else:
        installed = ", ".join(_at(fmt(t.version), t.path) for t in toolkits.installed)
        rows.append(("nvcc", "not on PATH" + (f" (installed: {installed})" if installed else "")))

    if not facts.pythons:
        rows.append(("Python", "not inspected"))
    for i, env in enumerate(facts.pythons):
        label = "Python" if len(facts.pythons) == 1 else f"Python {i}"
        state = section_state(env)
        where = env.executable or env.requested_as
        if state is not None:
            rows.append((label, (f"{where}: " if where else "") + state))
            if env.torch is None:
                continue  # (a crash inside `import torch` still has the build read from torch's files)
        else:
            whose = " (envdoctor's own environment)" if env.own_environment else \
                " (system Python, PEP 668)" if env.externally_managed else ""
            if env.requested_as == "paste" and not env.executable:
                # a paste names no interpreter path: "unknown at paste" said nothing
                rows.append((label, env.python_version or "version not in the paste"))
            else:
                rows.append((label, _at(fmt(env.python_version), where) + whose))
        # a paste that shows no torch does not show that none is installed (issue 42: "not installed" was said
        # of a paste whose Dockerfile pinned torch)
        rows.append(("  torch", "not in the paste" if env.torch is None and env.requested_as == "paste"
                     else _torch_line(env)))
        # nothing tried because there is no torch: the torch row says so already (the not-applicable list names
        # the smoke checks), so the row would only repeat it
        if env.smoke is not None and (env.smoke.steps or env.torch is not None or env.smoke.tier == "off"):
            rows.append(("  tried", smoke_line(env.smoke)))
        if env.torch is not None and env.torch.arch_list:
            from_files = " (read from libtorch_cuda.so)" if env.torch.arch_list_source == "fatbin" else ""
            rows.append(("  arch", " ".join(env.torch.arch_list) + from_files))

    state = section_state(facts.host)
    rows.append(("Host", state if state is not None else _host_line(facts)))

    if facts.paste is not None and facts.paste.not_found:
        conflicts = facts.paste.conflicts or []
        missing = [n for n in facts.paste.not_found if n not in conflicts]
        if missing:
            rows.append(("Not in paste", ", ".join(missing)))
        rows.extend(("Conflict", c) for c in conflicts)
    if facts.paste is not None and facts.paste.settle:
        rows.append(("To settle", "; ".join(facts.paste.settle)))
    return rows
