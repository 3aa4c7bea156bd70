"""Redaction of anything meant to be shared: host names, home paths, GPU UUIDs and serials."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Dict, Iterable, List

from ..model.facts import Facts, from_dict, to_dict
from ..model.findings import CheckResult, MachineReport, Report

REDACTED = "<redacted>"
GPU_REDACTED = "GPU-<redacted>"

# Keys whose whole value identifies the machine.
_HOSTNAME_KEYS = frozenset({"hostname"})
_GPU_ID_KEYS = frozenset({"uuid", "serial"})

# GPU-8a2f...-... and MIG-... identifiers as NVML / nvidia-smi print them (also inside free text,
# e.g. CUDA_VISIBLE_DEVICES=GPU-... or an error message quoting a device).
_GPU_UUID_RE = re.compile(r"\b(GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4,}){1,}(?:/\d+/\d+)?")

# Home directories, also under the prefixes clusters and macOS put them in (/private/home, /gpfs/home,
# /var/home on Fedora Silverblue, /mnt/home, /data/home); "/rootfs" is not "/root", "/homework" not "/home".
_POSIX_HOME_RE = re.compile(r"(?<![\w.~-])(?:/(?:private|gpfs|var|mnt|data|nfs|lustre))?/(?:home|Users|u|homes)/"
                            r"[^/\s\"'`:;,)\]}>]+(/|(?=[\s\"'`:;,)\]}>]|$))")
_ROOT_HOME_RE = re.compile(r"(?<![\w.~-])/root(/|(?=[\s\"'`:;,)\]}>]|$))")
_WINDOWS_HOME_RE = re.compile(r"\b[A-Za-z]:\\Users\\[^\\\s\"']+(\\|(?=[\s\"']|$))")


def _home_sub(match: re.Match) -> str:
    return "~" + match.group(1)


# A shell prompt "alice@gpu-node-17:~/src$" names the user and the host even when the facts do not (pastes).
_PROMPT_RE = re.compile(r"(?<![\w.@-])[a-z_][\w.-]{0,31}@[A-Za-z0-9][\w.-]{0,62}(?=:[~/])")


# Secrets: credentials in URLs (https://user:token@host, pip's https://__token__:pypi-...@...), variables
# whose name ends in TOKEN/PASSWORD/SECRET/KEY written as NAME=value or "name: value", and the token shapes of
# the hubs users paste from (Hugging Face hf_..., GitHub ghp_/github_pat_, OpenAI sk-..., AWS AKIA...).
_URL_CREDENTIALS_RE = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@\"'<>]+@")
_SECRET_NAME = r"[A-Za-z0-9_.-]*(?:TOKEN|PASSWORD|PASSWD|PASSPHRASE|SECRET|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)"
_SECRET_ASSIGN_RE = re.compile(r"(?i)\b(" + _SECRET_NAME + r")(\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s\"',;]+)")
_TOKEN_SHAPES_RE = re.compile(r"\b(?:hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
                              r"|sk-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|xox[abpr]-[A-Za-z0-9-]{10,})\b")
# a GPU's serial as nvidia-smi -q prints it ("Serial Number : 1650321012345"), also in pasted text
_SERIAL_RE = re.compile(r"(?i)(\bserial(?:[ _]number)?\s*[:=]\s*)(?!N/A\b)([0-9A-Za-z-]{6,})")
_SECRET_KEY_RE = re.compile(r"(?i)^" + _SECRET_NAME + r"$")


def _local_homes() -> List[tuple]:
    """(directory, replacement) for this machine's own home ($HOME, whatever its prefix: ~) and the
    per-user scratch directories of clusters (/scratch/$USER: /scratch/<redacted>)."""
    import os

    out = []
    home = (os.environ.get("HOME") or "").rstrip("/")
    if home.startswith("/") and home not in ("", "/root"):
        out.append((home, "~"))
    user = os.environ.get("USER") or os.environ.get("LOGNAME") or ""
    if user and user != "root" and re.fullmatch(r"[\w.-]+", user):
        for base in ("/scratch", "/gpfs/scratch", "/lustre/scratch", "/scratch1", "/local/scratch", "/work"):
            out.append((f"{base}/{user}", f"{base}/{REDACTED}"))
    return out


def _redact_dir(text: str, directory: str, replacement: str) -> str:
    return re.sub(r"(?<![\w.~/-])" + re.escape(directory) + r"(?=/|[\s\"'`:;,)\]}>]|$)",
                  lambda _m: replacement, text)


def csv_serials(text: str) -> List[str]:
    """GPU serials in a `nvidia-smi --query-gpu=...,serial,... --format=csv` table: the values under its
    "serial" column (the rows repeat them bare, with no "Serial Number :" label to find them by)."""
    if "serial" not in text.lower():
        return []
    out: List[str] = []
    column, width = None, 0
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        names = [c.lower().split(" [", 1)[0] for c in cells]
        if "serial" in names and len(cells) > 1:
            column, width = names.index("serial"), len(cells)
            continue
        if column is not None and (len(cells) == width or len(cells) > column + 1):  # (a cut excerpt)
            value = cells[column]
            if len(value) >= 6 and not value.startswith(("[", "N/A")):
                out.append(value)
        elif column is not None and line.strip():
            column = None  # the table ended
    return out


# a --query-gpu CSV row quoted without its header (a paste reader's evidence): a row that names a GPU UUID, and
# a cell of 12 to 14 digits in it, is the board serial nvidia-smi prints (13 digits)
_CSV_ROW_SERIAL_RE = re.compile(r"(?:(?<=^)|(?<=,))(\s*)\d{12,14}(\s*)(?=,|$)", re.M)


def _csv_row_serials(text: str) -> str:
    if "," not in text or not _GPU_UUID_RE.search(text):
        return text
    return "\n".join(_CSV_ROW_SERIAL_RE.sub(lambda m: f"{m.group(1)}{REDACTED}{m.group(2)}", line)
                     if _GPU_UUID_RE.search(line) else line for line in text.split("\n"))


def prompt_hosts(text: str) -> List[str]:
    """The host names shell prompts in ``text`` name ("alice@gpu-node-17:~$" -> "gpu-node-17"): redacted
    wherever else they appear too (a log line quoting the host)."""
    if "@" not in text:
        return []
    return [m.group(0).split("@", 1)[1] for m in _PROMPT_RE.finditer(text)]


# Every pattern above needs one of these characters, or 15 characters at least (the shortest token shape,
# xoxa- and 10 more); a shorter string without them (a version, a package name: most strings of a report) can
# only hold a given host name. tests/unit/report/test_redact_fast_path.py compares both paths.
_PATTERN_CHARS = frozenset("@/\\:=,")
_SHORTEST_PATTERN = 15


def redact_text(text: str, hostnames: Iterable[str] = (), homes: Any = None) -> str:
    """Redact home paths, GPU UUIDs and serials, secrets, shell prompts' user@host and the given host names
    (and those the prompts name), wherever they appear. ``homes``: _sorted_homes(), when the caller redacts
    many strings at once."""
    if len(text) < _SHORTEST_PATTERN and _PATTERN_CHARS.isdisjoint(text):
        hostnames = list(hostnames)
        if not any(h and h in text for h in hostnames):
            return text
    return _redact_text(text, hostnames, homes)


_SECRET_WORDS = ("token", "pass", "secret", "key", "credential")  # every _SECRET_NAME holds one (lower case)
_TOKEN_PREFIXES = ("hf_", "gh", "sk-", "AKIA", "xox")  # every _TOKEN_SHAPES_RE match starts with one
_HOME_PARTS = ("/home/", "/Users/", "/u/", "/homes/")  # every _POSIX_HOME_RE match holds one


def _redact_text(text: str, hostnames: Iterable[str] = (), homes: Any = None) -> str:
    # each pattern runs only where a substring it cannot match without is present: a report holds thousands
    # of strings and most hold none (the results are the same; tests/unit/report/test_redact_fast_path.py)
    hostnames = list(hostnames) + prompt_hosts(text) + csv_serials(text)
    out = _csv_row_serials(text)
    lower = out.lower()
    if "GPU-" in out or "MIG-" in out:
        out = _GPU_UUID_RE.sub(lambda m: f"{m.group(1)}-<redacted>", out)
    if "://" in out and "@" in out:
        out = _URL_CREDENTIALS_RE.sub(lambda m: f"{m.group(1)}{REDACTED}@", out)
    if ("=" in out or ":" in out) and any(w in lower for w in _SECRET_WORDS):
        out = _SECRET_ASSIGN_RE.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", out)
    if any(t in out for t in _TOKEN_PREFIXES):
        out = _TOKEN_SHAPES_RE.sub(REDACTED, out)
    if "serial" in lower:
        out = _SERIAL_RE.sub(lambda m: f"{m.group(1)}{REDACTED}", out)
    if "@" in out:
        out = _PROMPT_RE.sub(f"{REDACTED}@{REDACTED}", out)
    for directory, replacement in (_sorted_homes() if homes is None else homes):
        if directory in out:
            out = _redact_dir(out, directory, replacement)
    if any(h in out for h in _HOME_PARTS):
        out = _POSIX_HOME_RE.sub(_home_sub, out)
    if "/root" in out:
        out = _ROOT_HOME_RE.sub(_home_sub, out)
    if ":\\Users\\" in out:
        out = _WINDOWS_HOME_RE.sub(_home_sub, out)
    for name in sorted({h for h in hostnames if h}, key=len, reverse=True):
        if name in out:
            # Whole-name matches only: "gpu1" must not eat "gpu10" or "mygpu1.example".
            pattern = r"(?<![\w-])" + re.escape(name) + r"(?![\w-])"
            out = re.sub(pattern, REDACTED, out)
    return out


def _sorted_homes() -> List[tuple]:
    """_local_homes(), longest first (a nested directory before the one holding it)."""
    return sorted(_local_homes(), key=lambda d: len(d[0]), reverse=True)


def _find_hostnames(obj: Any, found: List[str]) -> None:
    """Values that identify the machine wherever they are repeated: host names (and the short name of a dotted
    one, and those shell prompts name) and GPU serials (a --query-gpu CSV in a paste repeats them bare)."""
    if isinstance(obj, str):
        found.extend(prompt_hosts(obj) + csv_serials(obj))
    elif isinstance(obj, dict):
        for key, value in obj.items():
            if key == "serial" and isinstance(value, str) and len(value) >= 6 and value != GPU_REDACTED:
                found.append(value)
            elif key in _HOSTNAME_KEYS and isinstance(value, str) and value and value != REDACTED:
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


def _redact(obj: Any, hostnames: List[str], key: str | None = None, homes: Any = None) -> Any:
    if isinstance(obj, dict):
        # an environment variable holding a secret (HF_TOKEN, WANDB_API_KEY): its whole value goes
        return {k: (REDACTED if isinstance(v, str) and isinstance(k, str) and _SECRET_KEY_RE.match(k)
                    else _redact(v, hostnames, k, homes)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_redact(v, hostnames, key, homes) for v in obj]
    if isinstance(obj, str):
        if key in _HOSTNAME_KEYS:
            return REDACTED
        if key in _GPU_ID_KEYS:
            return GPU_REDACTED
        return redact_text(obj, hostnames, homes)
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
    return _redact(d, list(dict.fromkeys(found)), homes=_sorted_homes())


def redact_report(report: Report) -> Report:
    """The same report with its facts, check reasons and findings redacted (for Markdown)."""
    facts_dict = report.facts.to_dict()
    hostnames: List[str] = []
    _find_hostnames(facts_dict, hostnames)
    facts = Facts.from_dict(redact_facts_dict(facts_dict, hostnames))
    checks = [from_dict(CheckResult, redact_facts_dict(to_dict(c), hostnames), "checks") for c in report.checks]
    machines = [redact_report(dataclasses.replace(report, facts=m.facts, checks=m.checks, machines=[]))
                for m in report.machines]
    return Report(
        facts=facts,
        checks=checks,
        envdoctor_version=report.envdoctor_version,
        compat_as_of=report.compat_as_of,
        schema_version=report.schema_version,
        compat_source=report.compat_source,
        machines=[MachineReport(m.label, r.facts, r.checks) for m, r in zip(report.machines, machines)],
    )
