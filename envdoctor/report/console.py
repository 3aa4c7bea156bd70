"""The console renderer: header, key facts, a doctor-style checklist, findings with fixes, a verdict."""

from __future__ import annotations

import io
import json
import os
import textwrap
from typing import IO, Any, Dict, List, Tuple

from rich import box
from rich.console import Console, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from ..domain.variants import is_cpu_build
from ..facts import Facts, Gpu, ProbeStatus, PythonEnv
from ..findings import CheckResult, CheckStatus, Finding, Report, Severity

UNKNOWN = "unknown"

# How a section that was not read is named: never "N/A", always the status and its reason.
_STATUS_WORDS = {
    ProbeStatus.ABSENT: "not found",
    ProbeStatus.FAILED: "could not be read",
    ProbeStatus.UNSUPPORTED: "not supported here",
    ProbeStatus.SKIPPED: "not checked",
}

_CHECK_SYMBOLS = {  # (symbol, style)
    "passed": ("✓", "green"),
    CheckStatus.NOTED: ("i", "cyan"),  # ran, but a note or another check's finding speaks against its title
    "warning": ("!", "yellow"),
    "error": ("✗", "red"),
    CheckStatus.SKIPPED: ("-", "dim"),
    CheckStatus.ERRORED: ("E", "magenta"),
}

_SEVERITY_SYMBOLS = {
    Severity.ERROR: ("✗", "bold red"),
    Severity.WARNING: ("!", "bold yellow"),
    Severity.INFO: ("i", "cyan"),
}

_ASCII_MARKS = {"✓": "+", "✗": "x", "≤": "<=", "—": "-", "·": "|", "…": "..."}


def to_ascii_marks(text: str) -> str:
    """The report's marks in ASCII: '+' passed, 'x' error, '!' warning, '-' skipped."""
    for mark, plain in _ASCII_MARKS.items():
        text = text.replace(mark, plain)
    return text


COMMAND_INDENT = 6  # columns before a fix command
MAX_EVIDENCE = 2  # evidence lines of a problem shown without -v
MIN_WIDTH = 60  # narrower than this, the checklist and commands are unreadable anyway
DEFAULT_WIDTH = 100  # not a terminal and no $COLUMNS: a width that pastes well into an issue


def terminal_width() -> int:
    """The console's width: $COLUMNS, else the terminal's, else 100; never below 60 columns."""
    import shutil

    return max(MIN_WIDTH, shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns)
_CONTINUATION = 4  # extra columns for the continuation lines of a long command


# --------------------------------------------------------------------------- small formatters


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


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


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


def key_fact_rows(facts: Facts) -> List[Tuple[str, str]]:
    """(label, value) rows of the key facts, shared by the console and Markdown renderers."""
    paste = facts.paste
    if paste is not None and paste.machines:
        # a paste holding several machines' reports: each machine's facts under its label, then what differed
        rows: List[Tuple[str, str]] = []
        for m in paste.machines:
            label = (m.paste.reports or ["report"])[0] if m.paste is not None else "report"
            head, _, where = label.partition(" (")
            rows.append((head.capitalize(), where.rstrip(")") or label))
            rows.extend((f"  {k}", v) for k, v in key_fact_rows(m))
        rows.extend(("Conflict", c) for c in paste.conflicts or [])
        return rows
    rows = []
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
            rows.append((label, _at(fmt(env.python_version), where) + whose))
        rows.append(("  torch", _torch_line(env)))
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


def check_symbol(check: CheckResult) -> Tuple[str, str]:
    if check.status in (CheckStatus.SKIPPED, CheckStatus.ERRORED, CheckStatus.NOTED):
        return _CHECK_SYMBOLS[check.status]
    severities = {f.severity for f in check.findings}
    if Severity.ERROR in severities:
        return _CHECK_SYMBOLS["error"]
    if Severity.WARNING in severities or check.status == CheckStatus.FAILED:
        return _CHECK_SYMBOLS["warning"]
    return _CHECK_SYMBOLS["passed"]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def interrupted_probes(report: Report) -> List[str]:
    """The probes a SIGINT/SIGTERM cut short (a partial report), by name."""
    return [p.name for p in report.facts.probes if (p.reason or "").startswith("interrupted by ")]


def verdict(report: Report, where: str = "above") -> str:
    """"2 errors, 1 warning — see fixes above" or "No problems found".

    One root cause is one problem: its consequences are named after it, not counted as errors of their own.
    """
    problems = report.problems
    consequences = sum(1 for f in report.findings if f.caused_by is not None)
    errors = sum(1 for f in problems if f.severity == Severity.ERROR)
    warnings = sum(1 for f in problems if f.severity == Severity.WARNING)
    errored = sum(1 for c in report.checks if c.status == CheckStatus.ERRORED)
    tail = f"; {_plural(errored, 'check')} could not run (errored)" if errored else ""
    if consequences:
        tail = f" ({_plural(consequences, 'consequence')} listed under {'it' if len(problems) == 1 else 'them'})" \
            + tail
    cut = interrupted_probes(report)
    if cut:  # a partial report: what was not read cannot be called fine
        tail += f"; partial report: interrupted before {', '.join(cut)} finished"
        if not (errors or warnings):
            return f"No problems in what was read before the interruption{tail}"
    if not report.judged and not (errors or warnings):
        n = len(report.checks)
        if not n:
            return f"Nothing could be judged: no check ran{tail}"
        return (f"Nothing could be judged: {'the check' if n == 1 else f'all {n} checks'} skipped, the facts "
                f"{'it needs' if n == 1 else 'they need'} missing (reasons {where}){tail}")
    if errors or warnings:
        parts = []
        if errors:
            parts.append(_plural(errors, "error"))
        if warnings:
            parts.append(_plural(warnings, "warning"))
        return f"{', '.join(parts)} — see fixes {where}{tail}"
    return f"No problems found{tail}"


def header_line(report: Report) -> str:
    origin = report.facts.origin
    if report.facts.collected_at:
        origin += f", collected {report.facts.collected_at}"
    targets = getattr(report.facts, "targets", None)
    if targets is not None:
        origin += f" + declared targets ({targets.source or 'given'})"
    data = getattr(report, "compat_source", None)
    return (
        f"envdoctor {report.envdoctor_version} · facts: {origin} · "
        f"compat matrix as of {fmt(report.compat_as_of)}" + (f" ({data})" if data else "")
    )


# --------------------------------------------------------------------------- commands


def _split_unquoted(line: str) -> List[str]:
    """Split a shell line at spaces outside quotes, keeping the quotes in the tokens."""
    tokens: List[str] = []
    current: List[str] = []
    quote: str | None = None
    escaped = False
    for ch in line:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\" and quote != "'":
            current.append(ch)
            escaped = True
        elif quote:
            current.append(ch)
            if ch == quote:
                quote = None
        elif ch in "'\"":
            current.append(ch)
            quote = ch
        elif ch == " ":
            if current:
                tokens.append("".join(current))
                current = []
        else:
            current.append(ch)
    if current:
        tokens.append("".join(current))
    return tokens


def split_comment(line: str) -> Tuple[str, str | None]:
    """(code, comment) of a shell line: the comment starts at the first unquoted ``#`` that begins a word."""
    quote: str | None = None
    escaped = False
    for i, ch in enumerate(line):
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line, None


def _comment_lines(text: str, width: int, pad: str) -> List[str]:
    return textwrap.wrap(text, width=max(width, len(pad) + 20), initial_indent=pad + "# ",
                         subsequent_indent=pad + "# ", break_long_words=False, break_on_hyphens=False) \
        or [pad + "#"]


def wrap_command(command: str, width: int, indent: int = COMMAND_INDENT) -> List[str]:
    """Lay a shell command out in ``width`` columns without breaking it.

    A line that fits is kept as is. A longer one is broken only between words, with a trailing
    `` \\`` (shell line continuation), so the lines still paste as one command. A trailing
    ``# comment`` never takes a continuation (after ``#`` a ``\\`` is comment text and the next line
    would run on its own): it moves to comment lines of its own above the command. A single word
    longer than the width (a very long URL) is never cut: it stays whole on its own line.
    """
    pad = " " * indent
    out: List[str] = []
    for raw in command.splitlines() or [""]:
        line = raw.rstrip()
        if len(pad) + len(line) <= width:
            out.append(pad + line)
            continue
        code, comment = split_comment(line)
        if comment is not None:
            out.extend(_comment_lines(comment, width, pad))
        if not code.strip():
            continue
        if len(pad) + len(code) <= width:
            out.append(pad + code)
            continue
        cont = pad + " " * _CONTINUATION
        prefix, current = pad + code[: len(code) - len(code.lstrip())], ""
        for token in _split_unquoted(code):
            if not current:
                current = token
            elif len(prefix) + len(current) + 1 + len(token) + 2 <= width:
                current += " " + token
            else:
                out.append(f"{prefix}{current} \\")
                prefix, current = cont, token
        out.append(prefix + current)
    return out


# --------------------------------------------------------------------------- the renderables


def _heading(text: str) -> Text:
    return Text(text, style="bold underline")


def _key_facts(facts: Facts) -> Padding:
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for label, value in key_fact_rows(facts):
        table.add_row(label, value)
    return Padding(table, (0, 0, 0, 2))


def _checklist(report: Report) -> List[RenderableType]:
    areas: Dict[str, List[CheckResult]] = {}
    for check in report.checks:
        areas.setdefault(check.area, []).append(check)
    out: List[RenderableType] = []
    for area, checks in areas.items():
        out.append(Text(f"  {area}", style="bold"))
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True)
        grid.add_column(overflow="fold")
        for check in checks:
            symbol, style = check_symbol(check)
            text = Text(check.headline)
            text.append(f" ({check.id})", style="dim")
            if check.status == CheckStatus.SKIPPED:
                text.append(f" — skipped: {check.reason or 'no reason given'}", style="dim")
            elif check.status == CheckStatus.ERRORED:
                text.append(f" — check errored: {check.reason or 'no reason given'}", style="magenta")
            else:
                counted = [f for f in check.findings if f.severity != Severity.INFO]
                if counted:
                    text.append(f" — {_plural(len(counted), 'finding')}", style=style)
            grid.add_row(Text(symbol, style=style), text)
        out.append(Padding(grid, (0, 0, 0, 4)))
    return out


# Why a check was skipped, as the few words of the "did not apply here" line: (words in its reason, label).
# A reason that names none of them is a fact that could not be read, listed by check id instead.
_NOT_APPLICABLE = (
    (("pasted", "a paste"), "judged in pastes only"),
    (("no requirements declared", "no target gpus declared"), "no requirements declared"),
    (("no benchmark ran",), "no benchmark ran"),
    (("not wsl",), "not WSL"),
    (("infiniband",), "no InfiniBand"),
    (("--no-torch", "torch was not imported"), "torch not imported (--no-torch)"),
    (("no cuda build of torch",), "no CUDA build of torch"),
    (("no torchvision",), "no torchvision/torchaudio"),
    (("torch is not installed", "torch absent"), "torch not installed"),
    (("no compiled extension",), "no torch extensions"),
    (("nothing to judge",), "nothing of the kind here"),
    (("no watch recording",), "no watch recording"),
    (("pins a cuda library wheel",), "no CUDA library pins"),
    (("no fleet run",), "not a fleet run"),
)
_NO_GPU_WORDS = ("nvidia", "nvml", "gpu", "driver")


def skip_label(check: CheckResult, facts: Facts) -> str | None:
    """The short "did not apply" label of a skipped check, or None when it is a fact that could not be read."""
    reason = (check.reason or "").lower()
    for words, label in _NOT_APPLICABLE:
        if any(w in reason for w in words):
            return label
    if not facts.driver.gpus and any(w in reason for w in _NO_GPU_WORDS):
        return "no NVIDIA GPU"  # nothing to judge on a machine (or paste) without one
    return None


def _area_lines(report: Report) -> List[RenderableType]:
    """flutter doctor's shape: one line per area with what was judged (✓ / ! / ✗ with counts), then one line
    for the checks that did not apply and one for those whose facts could not be read."""
    areas: Dict[str, List[CheckResult]] = {}
    for check in report.checks:
        areas.setdefault(check.area, []).append(check)
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    rank = {"✓": 0, "-": 0, "!": 2, "E": 2, "✗": 3}
    not_applied: Dict[str, int] = {}
    unread: List[str] = []
    for area, checks in areas.items():
        counts = {"error": 0, "warning": 0, "errored": 0, "noted": 0, "passed": 0}
        worst = ("✓", "green")
        for check in checks:
            if check.status == CheckStatus.SKIPPED:
                label = skip_label(check, report.facts)
                if label is None:
                    unread.append(check.id)
                else:
                    not_applied[label] = not_applied.get(label, 0) + 1
                continue
            symbol = check_symbol(check)
            if rank.get(symbol[0], 1) > rank.get(worst[0], 1):
                worst = symbol
            if check.status == CheckStatus.ERRORED:
                counts["errored"] += 1
            elif symbol[0] == "✗":
                counts["error"] += 1
            elif symbol[0] == "!":
                counts["warning"] += 1
            elif check.status == CheckStatus.NOTED:  # judged, with a note a ✓ would contradict
                counts["noted"] += 1
            else:
                counts["passed"] += 1
        if not any(counts.values()):
            continue  # nothing judged here: counted in the lines below
        parts = [_plural(counts["error"], "error")] if counts["error"] else []
        parts += [_plural(counts["warning"], "warning")] if counts["warning"] else []
        errored = [c for c in checks if c.status == CheckStatus.ERRORED]
        parts += [f"{len(errored)} could not run ({'; '.join(f'{c.id}: {c.reason}' for c in errored)})"] \
            if errored else []
        parts += [f"{counts['noted']} noted"] if counts["noted"] else []
        parts += [f"{counts['passed']} passed"] if counts["passed"] else []
        grid.add_row(Text(worst[0], style=worst[1]), Text(area, style="bold"), Text(", ".join(parts)))
    out: List[RenderableType] = [Padding(grid, (0, 0, 0, 2))]
    if not_applied:
        n = sum(not_applied.values())
        why = ", ".join(label for label, _ in sorted(not_applied.items(), key=lambda kv: -kv[1]))
        out.append(Padding(Text(f"{_plural(n, 'check')} did not apply here ({why}); -v shows all", style="dim"),
                           (0, 0, 0, 2)))
    if unread:
        out.append(Padding(Text(f"{_plural(len(unread), 'check')} could not be judged (facts unknown): "
                                f"{', '.join(unread)}; -v says why"), (0, 0, 0, 2)))
    return out


def console_header(report: Report) -> str:
    """header_line, shorter: "envdoctor 0.1.0 · facts: live 2026-12-01 20:24 UTC · compat matrix as of ..."."""
    facts = report.facts
    when = facts.collected_at or ""
    if len(when) >= 16 and when[10:11] == "T" and when.endswith(("+00:00", "Z")):
        when = f"{when[:10]} {when[11:16]} UTC"
    origin = ", ".join(x for x in (facts.origin, when) if x)
    targets = getattr(facts, "targets", None)
    if targets is not None:
        origin += f" + declared targets ({targets.source or 'given'})"
    data = getattr(report, "compat_source", None)
    return (f"envdoctor {report.envdoctor_version} · facts: {origin} · compat matrix as of "
            f"{fmt(report.compat_as_of)}" + (f" ({data})" if data else ""))


def _header_lines(report: Report, width: int) -> List[str]:
    """The header, broken between its " · " parts (not inside a date or a phrase) to fit ``width``."""
    lines: List[str] = []
    for part in console_header(report).split(" · "):
        if lines and len(lines[-1]) + 3 + len(part) <= width:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    return lines


def _evidence_lines(finding: Finding) -> List[Text]:
    lines = []
    for ev in finding.evidence:
        value = json.dumps(ev.value) if isinstance(ev.value, str) else fmt(ev.value)
        text = Text(f"{ev.path} = {value}")
        if ev.expected:
            text.append(f"; expected {ev.expected}")
        if ev.source:
            text.append(f"; source: {ev.source}", style="dim")
        lines.append(text)
    return lines


def _consequence(finding: Finding, verbose: bool) -> List[Tuple[RenderableType, bool]]:
    """A consequence under its root cause: what it is, not a fix of its own (fixing the root fixes it)."""
    symbol, style = _SEVERITY_SYMBOLS.get(finding.severity, ("?", ""))
    head = Table.grid(padding=(0, 1))
    head.add_column(no_wrap=True)
    head.add_column(overflow="fold")
    head.add_row(Text("↳", style="dim"), Text(f"{symbol} {finding.summary}", style=style))
    out: List[Tuple[RenderableType, bool]] = [(Padding(head, (0, 0, 0, 2)), False)]
    meta = f"follows from the above · {finding.severity} · {finding.category} · {finding.code}"
    out.append((Padding(Text(meta, style="dim"), (0, 0, 0, 6)), False))
    if verbose and finding.evidence:
        for line in _evidence_lines(finding):
            out.append((Padding(line, (0, 0, 0, 6)), False))
    return out


def _finding(finding: Finding, verbose: bool, width: int, show_subject: bool = False,
             evidence: bool | None = None) -> List[Tuple[RenderableType, bool]]:
    """Renderables for one finding; the flag marks pre-laid-out command lines (never re-wrapped)."""
    out: List[Tuple[RenderableType, bool]] = []
    symbol, style = _SEVERITY_SYMBOLS.get(finding.severity, ("?", ""))
    head = Table.grid(padding=(0, 1))
    head.add_column(no_wrap=True)
    head.add_column(overflow="fold")
    head.add_row(Text(symbol, style=style), Text(finding.summary, style="bold"))
    out.append((head, False))
    meta = f"{finding.severity} · {finding.category} · {finding.code}"
    if finding.about:
        meta += f" · about {finding.about}"
    if finding.confidence:
        meta += f" · confidence {finding.confidence}"
    if show_subject and finding.subject:
        # several interpreters were judged: say which one this finding (and its fix) is about
        meta += f" · in {finding.subject}"
    brief = not verbose and finding.severity == Severity.INFO  # a note: its detail and fix under -v
    out.append((Padding(Text(meta, style="dim"), (0, 0, 0, 2)), False))
    if brief:
        return out
    if finding.detail:
        out.append((Padding(Text(finding.detail), (0, 0, 0, 2)), False))
    if finding.fix is not None:
        fix_text = Text("Fix: ", style="bold green")
        fix_text.append(finding.fix.summary)
        out.append((Padding(fix_text, (0, 0, 0, 2)), False))
        for command in finding.fix.commands:
            for line in wrap_command(command, width):
                out.append((Text(line, style="cyan"), True))
        if finding.fix.url:
            out.append((Padding(Text(f"More: {finding.fix.url}"), (0, 0, 0, 2)), False))
    if (verbose if evidence is None else evidence) and finding.evidence:
        lines = _evidence_lines(finding)
        shown = lines if verbose else lines[:MAX_EVIDENCE]
        out.append((Padding(Text("Evidence:", style="bold"), (0, 0, 0, 2)), False))
        for line in shown:
            out.append((Padding(line, (0, 0, 0, 4)), False))
    return out


def _probe_table(facts: Facts) -> Table:
    table = Table(box=box.SIMPLE, show_edge=False, pad_edge=False)
    table.add_column("probe", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("duration", justify="right", no_wrap=True)
    table.add_column("reason", overflow="fold")
    for probe in facts.probes:
        duration = f"{probe.duration_s:.2f} s" if probe.duration_s is not None else UNKNOWN
        table.add_row(probe.name, probe.status, duration, probe.reason or "")
    return table


def render_console(
    report: Report,
    verbose: bool = False,
    color: bool | None = None,
    width: int | None = None,
    file: IO[str] | None = None,
    bench_table: bool = True,
) -> str:
    """Render ``report`` for a terminal and return the text; also write it to ``file`` if given.

    ``color=None`` means colour only when ``file`` is a terminal. Every line fits ``width``
    columns, except a single shell word longer than that (never cut, so commands paste whole).
    ``width=None`` is the terminal's width ($COLUMNS, else the terminal's size, else 100), at least 60.
    """
    from .inert import inert_report

    report = inert_report(report)  # no escape sequence from a snapshot, a target or a paste reaches the terminal
    if width is None:
        width = terminal_width()
    if color is None:
        # https://no-color.org: NO_COLOR set to anything non-empty turns colour off
        isatty = getattr(file, "isatty", None)
        color = bool(isatty and isatty()) and not os.environ.get("NO_COLOR")
    buf = io.StringIO()
    console = Console(
        file=buf,
        width=width,
        force_terminal=color,
        color_system="standard" if color else None,
        no_color=not color,
        highlight=False,
        emoji=False,
        markup=False,
        legacy_windows=False,
        force_jupyter=False,
        force_interactive=False,
    )

    def pr(renderable: RenderableType = "") -> None:
        console.print(renderable)

    def raw(line: Text) -> None:
        # Commands are laid out by wrap_command: print each line as one line, never re-wrapped.
        console.print(line, no_wrap=True, overflow="ignore", crop=False, soft_wrap=True)

    for head in _header_lines(report, width):
        pr(Text(head, style="bold"))
    pr()
    pr(_heading("Key facts"))
    pr(_key_facts(report.facts))
    pr()
    pr(_heading("Checks"))
    if not report.checks:
        pr(Text("  no checks ran"))
    for item in (_checklist(report) if verbose else _area_lines(report) if report.checks else []):
        pr(item)
    findings = report.findings
    if findings:
        pr()
        pr(_heading("Findings"))
        codes = {f.code for f in findings}
        for i, finding in enumerate(findings):
            if finding.caused_by is not None and finding.caused_by in codes:
                for renderable, _ in _consequence(finding, verbose):
                    pr(renderable)
                continue
            if i:
                pr()
            for renderable, is_command in _finding(finding, verbose, width, len(report.facts.pythons) > 1,
                                                   evidence=verbose or finding.severity != Severity.INFO):
                if is_command:
                    raw(renderable)  # type: ignore[arg-type]
                else:
                    pr(renderable)
    if verbose and report.facts.probes:
        pr()
        pr(_heading("Probes"))
        pr(Padding(_probe_table(report.facts), (0, 0, 0, 2)))
    if report.facts.bench.results and bench_table:
        from ..compat import load_compat
        from .bench_view import bench_console_renderables

        pr()
        for renderable in bench_console_renderables(report.facts, load_compat(), width):
            pr(renderable)
    pr()
    worst = report.worst()
    if worst in (Severity.ERROR, Severity.WARNING):
        symbol, style = _SEVERITY_SYMBOLS[worst]
    elif interrupted_probes(report) or not report.judged:
        symbol, style = _SEVERITY_SYMBOLS[Severity.WARNING]
    else:
        symbol, style = "✓", "bold green"
    line = Text(f"{symbol} ", style=style)
    line.append(verdict(report), style="bold")
    pr(line)

    # Padded cells fill the width with spaces: drop them so pasted output stays clean.
    text = "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"
    if file is not None:
        try:
            file.write(text)
        except UnicodeEncodeError:
            # a terminal that cannot show ✓ or ≤ (a legacy Windows code page, PYTHONIOENCODING=ascii): use
            # ASCII marks that keep pass, error and warning distinct, then "?" for anything else
            encoding = getattr(file, "encoding", None) or "ascii"
            file.write(to_ascii_marks(text).encode(encoding, "replace").decode(encoding))
    return text
