"""Reader for REPL and `python -c` output: torch.__version__, torch.version.cuda, is_available() and friends."""

from __future__ import annotations

import re
from typing import List

from ...model.facts import Gpu
from .base import REPL, Acc, Paste

# The torch queries people print, in the order they appear in one statement
_EXPRS = [
    ("torch.version", re.compile(r"torch\.__version__")),
    ("torch.cuda", re.compile(r"torch\.version\.cuda")),
    ("torch.hip", re.compile(r"torch\.version\.hip")),
    ("torch.cuda_available", re.compile(r"torch\.cuda\.is_available\(\)")),
    ("torch.arch_list", re.compile(r"torch\.cuda\.get_arch_list\(\)")),
    ("torch.cudnn", re.compile(r"torch\.backends\.cudnn\.version\(\)")),
    ("torch.device_count", re.compile(r"torch\.cuda\.device_count\(\)")),
    ("torch.device_name", re.compile(r"torch\.cuda\.get_device_name\([^)]*\)")),
    ("torch.capability", re.compile(r"torch\.cuda\.get_device_capability\([^)]*\)")),
]
_ANY_EXPR = re.compile("|".join(p.pattern for _, p in _EXPRS))
_TOKEN = re.compile(r"\[[^\]]*\]|\([^)]*\)|'[^']*'|\"[^\"]*\"|\S+")
_PROMPT = re.compile(r"^\s*(?:>>>|\.\.\.|In \[\d+\]:|\$|#|\(\S+\)\s*\S*[$#]|PS [A-Z]:)")
_OUT = re.compile(r"^\s*Out\[\d+\]:\s*")
_GPUISH = re.compile(r"NVIDIA|GeForce|Tesla|Quadro|RTX|GTX|TITAN|Radeon|Instinct|\b[AHBLT]\d{1,3}\b", re.I)


def _value_like(order: List[str], out: str) -> bool:
    """Does this line look like what the statement prints (a version, True/False, a count, a GPU name, a list),
    rather than the prose after a code listing?"""
    if len(out) > 200:
        return False
    if len(order) > 1:
        return True  # several values in one line are checked by count below
    key = order[0]
    v = out.strip().strip("'\"")
    if key in ("torch.version", "torch.cuda", "torch.hip"):
        return bool(re.match(r"^\d+\.\d+", v)) or v == "None"
    if key == "torch.cuda_available":
        return v in ("True", "False")
    if key in ("torch.cudnn", "torch.device_count"):
        return v.isdigit()
    if key == "torch.device_name":
        return bool(_GPUISH.search(v)) and len(v.split()) <= 8
    return True


def _parse_value(key: str, raw: str):
    v = raw.strip().strip(",").strip()
    if len(v) >= 2 and v[0] in "'\"" and v[-1] == v[0]:
        v = v[1:-1]
    if v in ("None", ""):
        return None
    if key == "torch.cuda_available":
        return {"True": True, "False": False}.get(v)
    if key == "torch.arch_list":
        return re.findall(r"(?:sm|compute)_\d+[a-z]?", v) if v.startswith("[") else None
    if key in ("torch.cudnn", "torch.device_count"):
        return int(v) if v.isdigit() else None
    if key == "torch.capability":
        m = re.match(r"\((\d+),\s*(\d+)\)", v)
        return f"{m.group(1)}.{m.group(2)}" if m else None
    if key in ("torch.version", "torch.cuda", "torch.hip"):
        return v if re.match(r"^\d+\.\d+", v) else None
    return v


def read_repl(paste: Paste, acc: Acc) -> None:
    seen = False
    lines = paste.lines
    n = len(lines)
    done: set = set()
    # every hit (bounded by with_any), not each distinct line once: the same statement printing two values
    # ("before" and "after" an upgrade) is two observations, and diagnose/machines.py must see both
    for i in paste.with_any(["torch."], case=True):
        line = lines[i]
        pair = (line, lines[i + 1] if i + 1 < n else "")
        if pair in done:
            continue
        done.add(pair)
        if not _ANY_EXPR.search(line):
            continue
        keys = [(m.start(), key) for key, pat in _EXPRS for m in pat.finditer(line)]
        keys.sort()
        order = [k for _, k in keys]
        # the output: a value in a trailing comment (`print(f"{torch.cuda.is_available()}")  # False`), else the
        # next non-empty line that is not another statement (IPython's "Out[3]: False" without its label)
        comment = re.search(r"\)\s*#\s*(\S.*)$", line)
        if comment and len(order) == 1:
            out = comment.group(1).strip()
        else:
            j = i + 1
            while j < n and not lines[j].strip():
                j += 1
            if j >= n or _PROMPT.match(lines[j]) or _ANY_EXPR.search(lines[j]) or "Traceback" in lines[j]:
                continue
            out = _OUT.sub("", lines[j]).strip()
            if not _PROMPT.match(line) and not _OUT.match(lines[j]) and not _value_like(order, out):
                continue  # a statement in a code listing, then prose: not its output
        if len(order) == 1:
            values = [out]
        else:
            if out.startswith("(") and out.endswith(")"):  # a REPL tuple: ('2.7.1+cu128', '12.8', True)
                out = out[1:-1].replace(", ", " ").replace(",", " ")
            values = _TOKEN.findall(out)
            if len(values) != len(order):
                continue
        for key, raw in zip(order, values):
            val = _parse_value(key, raw)
            if key == "torch.cuda" and raw.strip() == "None":
                acc.put("torch.cpu_build", True, REPL, "torch.version.cuda printed None")
            if key == "torch.device_name" and val:
                acc.set_gpus([Gpu(index=0, name=val)], REPL)
            elif key == "torch.capability" and val:
                acc.put("gpu.capability", val, REPL, "torch.cuda.get_device_capability()")
            else:
                acc.put(key, val, REPL, "python output")
            seen = True
    if seen:
        acc.add_found("Python/REPL output of torch queries")
