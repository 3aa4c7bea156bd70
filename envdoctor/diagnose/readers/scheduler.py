"""Reader for job launches a paste shows (issue 29): a command run under a batch scheduler's launcher and what it
printed there, next to the same command run outside it.

Slurm gives a job step the GPUs it asked for and no others: `srun`/`salloc`/`sbatch` (or the script's `#SBATCH`
lines) with `--gres=gpu:N`, `--gpus`, `--gpus-per-node`/`-task`/`-socket`, `-G N` or `--tres-per-task=gres/gpu:N`.
Without any of them the step's cgroup holds no GPU device, so inside it `torch.cuda.is_available()` is False,
`nvidia-smi` finds no device or fails, while the login or staging node outside it sees its GPUs
(https://slurm.schedmd.com/gres.html, https://slurm.schedmd.com/srun.html).

Signals (diagnose/fields.py, ``paste.job.``): ``scheduler`` ("slurm"), ``gpus_requested`` (True when any launch
line or directive asks for a GPU, False when launches are shown and none does), ``cuda_available`` (what
`is_available()` printed under the launcher, False also when nvidia-smi there found no device) and
``outside_cuda_available`` (the same command's answer outside the launcher). Outputs are read from the lines
right after the command, bare or as a comment (``# False``), as people paste them.
"""

from __future__ import annotations

import re
from typing import List, Optional

from .base import REPL, Acc, Paste

_LAUNCH = re.compile(r"^\s*(?:[$>%]\s*|\(\S+\)\s*|\S+@\S+[:~\w/]*[$#]\s*)?(?P<tool>srun|salloc|sbatch)\s(?P<args>.*)$")
_DIRECTIVE = re.compile(r"^\s*#SBATCH\s+(?P<args>.*)$")
_GPU_REQUEST = re.compile(r"--gres[= ](?:\S*,)?gpu\b|--gpus(?:-per-(?:node|task|socket))?[= ]?\d|--gpus[= ]\S|"
                          r"(?:^|\s)-G\s*\d|--tres-per-\w+[= ]\S*gres/gpu")
_RUN = re.compile(r"^\s*(?:[$>%]\s*|\(\S+\)\s*|\S+@\S+[:~\w/]*[$#]\s*)?(?:python\d?(?:\.\d+)?|python3?)\s+-c\b")
_BOOL = re.compile(r"^\s*(?:#\s*|>>>\s*)?(True|False)\s*$")
_NO_DEVICE = re.compile(r"No devices were found|couldn't communicate with the NVIDIA driver|"
                        r"no CUDA-capable device is detected|No CUDA GPUs are available", re.I)


def _answer(lines: List[str], i: int) -> Optional[bool]:
    """What the command on line ``i`` printed: True/False of is_available(), False when no device was found."""
    asks = "is_available" in lines[i]
    for line in lines[i + 1:i + 5]:
        if _LAUNCH.match(line) or _RUN.match(line):
            break
        m = _BOOL.match(line)
        if m and asks:
            return m.group(1) == "True"
        if _NO_DEVICE.search(line):
            return False
    return None


def _joined(lines: List[str], i: int) -> str:
    """Line ``i`` with the lines its trailing backslashes continue (`srun \\` and its options below it)."""
    out = lines[i][:2000]
    j = i
    while out.rstrip().endswith("\\") and j + 1 < len(lines) and j - i < 30:
        j += 1
        out = out.rstrip()[:-1] + " " + lines[j].strip()[:2000]
    return out


def read_jobs(paste: Paste, acc: Acc) -> None:
    lines = paste.lines
    hits = paste.distinct(paste.with_any(["srun", "salloc", "sbatch"]), head=200, tail=50)
    launches = [(i, m) for i in hits for m in [_LAUNCH.match(_joined(lines, i))] if m]
    directives = [(i, m) for i in hits for m in [_DIRECTIVE.match(lines[i][:2000])] if m]
    if not launches and not directives:
        return
    acc.put("paste.job.scheduler", "slurm", REPL, (launches or directives)[0][1].group(0).strip()[:160])
    asked = [i for i, m in launches + directives if _GPU_REQUEST.search(m.group("args"))]
    if asked:
        acc.put("paste.job.gpus_requested", True, REPL, lines[asked[0]].strip()[:160])
    else:
        acc.put("paste.job.gpus_requested", False, REPL, lines[(launches or directives)[0][0]].strip()[:160])
    for i, _m in launches:
        answer = _answer(lines, i)
        if answer is not None:
            acc.put("paste.job.cuda_available", answer, REPL, lines[i].strip()[:160])
            break
    launch_lines = {i for i, _ in launches}
    for i in paste.with_any(["is_available"])[:50]:
        if i not in launch_lines and _RUN.match(lines[i]):
            answer = _answer(lines, i)
            if answer is not None:
                acc.put("paste.job.outside_cuda_available", answer, REPL, lines[i].strip()[:160])
                break
    acc.add_found("a Slurm job launch (srun/salloc/sbatch) and what it printed")
