"""Redaction of anything meant to be shared: host names, home paths, GPU UUIDs and serials."""

from __future__ import annotations

import re
from typing import Any, Dict, Iterable, List

from ..facts import Facts, from_dict, to_dict
from ..findings import CheckResult, Report

REDACTED = "<redacted>"
GPU_REDACTED = "GPU-<redacted>"

# Keys whose whole value identifies the machine.
_HOSTNAME_KEYS = frozenset({"hostname"})
_GPU_ID_KEYS = frozenset({"uuid", "serial"})

# GPU-8a2f...-... and MIG-... identifiers as NVML / nvidia-smi print them (also inside free text,
# e.g. CUDA_VISIBLE_DEVICES=GPU-... or an error message quoting a device).
_GPU_UUID_RE = re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4,}){1,}(?:/\d+/\d+)?")

# Home directories. The negative look-behind keeps "/var/home/..." style paths whole-word safe,
# and "/rootfs" is not "/root".
_POSIX_HOME_RE = re.compile(r"(?<![\w.~-])/(?:home|Users)/[^/\s\"'`:;,)\]}>]+(/|(?=[\s\"'`:;,)\]}>]|$))")
_ROOT_HOME_RE = re.compile(r"(?<![\w.~-])/root(/|(?=[\s\"'`:;,)\]}>]|$))")
_WINDOWS_HOME_RE = re.compile(r"\b[A-Za-z]:\\Users\\[^\\\s\"']+(\\|(?=[\s\"']|$))")


def _home_sub(match: re.Match) -> str:
    return "~" + match.group(1)


# A shell prompt "alice@gpu-node-17:~/src$" names the user and the host even when the facts do not (pastes).
_PROMPT_RE = re.compile(r"(?<![\w.@-])[a-z_][\w.-]{0,31}@[A-Za-z0-9][\w.-]{0,62}(?=:[~/])")


def redact_text(text: str, hostnames: Iterable[str] = ()) -> str:
    """Redact home paths, GPU UUIDs, shell prompts' user@host and the given host names in free text."""
    out = _GPU_UUID_RE.sub(lambda m: f"{m.group(1)}-<redacted>", text)
    out = _PROMPT_RE.sub(f"{REDACTED}@{REDACTED}", out)
    out = _POSIX_HOME_RE.sub(_home_sub, out)
    out = _ROOT_HOME_RE.sub(_home_sub, out)
    out = _WINDOWS_HOME_RE.sub(_home_sub, out)
    for name in sorted({h for h in hostnames if h}, key=len, reverse=True):
        # Whole-name matches only: "gpu1" must not eat "gpu10" or "mygpu1.example".
        pattern = r"(?<![\w-])" + re.escape(name) + r"(?![\w-])"
        out = re.sub(pattern, REDACTED, out)
    return out


def _find_hostnames(obj: Any, found: List[str]) -> None:
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in _HOSTNAME_KEYS and isinstance(value, str) and value and value != REDACTED:
                found.append(value)
                # "node7.cluster.example.org" also leaks as "node7" in prompts and logs.
                short = value.split(".", 1)[0]
                if short and short != value:
                    found.append(short)
            else:
                _find_hostnames(value, found)
    elif isinstance(obj, list):
        for value in obj:
            _find_hostnames(value, found)


def _redact(obj: Any, hostnames: List[str], key: str | None = None) -> Any:
    if isinstance(obj, dict):
        return {k: _redact(v, hostnames, k) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_redact(v, hostnames, key) for v in obj]
    if isinstance(obj, str):
        if key in _HOSTNAME_KEYS:
            return REDACTED
        if key in _GPU_ID_KEYS:
            return GPU_REDACTED
        return redact_text(obj, hostnames)
    return obj


def redact_facts_dict(d: Dict[str, Any], hostnames: Iterable[str] = ()) -> Dict[str, Any]:
    """A redacted deep copy of a facts dict (or a whole report dict); the input is not changed.

    ``hostname`` values become ``<redacted>``, GPU ``uuid``/``serial`` values ``GPU-<redacted>``;
    in every other string, home directories (``/home/NAME/``, ``/Users/NAME/``, ``/root/``,
    ``C:\\Users\\NAME\\``) become ``~/``, GPU/MIG UUIDs are masked, and any host name found in
    the dict (or passed in ``hostnames``) is replaced. ``None`` stays ``None`` (unknown).
    """
    found: List[str] = list(hostnames)
    _find_hostnames(d, found)
    return _redact(d, found)


def redact_report(report: Report) -> Report:
    """The same report with its facts, check reasons and findings redacted (for Markdown)."""
    facts_dict = report.facts.to_dict()
    hostnames: List[str] = []
    _find_hostnames(facts_dict, hostnames)
    facts = Facts.from_dict(redact_facts_dict(facts_dict, hostnames))
    checks = [from_dict(CheckResult, redact_facts_dict(to_dict(c), hostnames), "checks") for c in report.checks]
    return Report(
        facts=facts,
        checks=checks,
        envdoctor_version=report.envdoctor_version,
        compat_as_of=report.compat_as_of,
        schema_version=report.schema_version,
        compat_source=report.compat_source,
    )
