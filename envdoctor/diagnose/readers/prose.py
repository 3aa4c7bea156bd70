"""Reader for versions stated in prose, quotes and start-up banners (gap 14 of round 3).

Users write facts into sentences ("my env is `torch.__version__ = 2.3.1+cu121`", "torch.__version__ is 2.4.0"),
frameworks print a banner at start-up with the torch build and the device it chose (YOLOv5/Ultralytics:
"YOLOv5 2022-4-22 torch 1.11.0+cpu CPU", "torch 2.0.1+cu118 CUDA:0 (NVIDIA GeForce RTX 3090, 24268MiB)"), and a
command names the version it installs (`pip install torch==2.3.1`). Each is a fact at the priority its source
deserves: a banner is printed by the running torch (REPL), a sentence is typed (LOOSE), a command is a request
(BARE). A GPU named in prose ("my gpu (gtx 1080)") is a low-priority GPU name.
"""

from __future__ import annotations

import re

from .base import BARE, LOOSE, REPL, Acc, Paste

_TV = r"\d+\.\d+(?:\.\d+)?(?:(?:a|b|rc|\.dev|\.post)\d*)*(?:\+[\w.]+)?"
# torch.__version__ = 2.4.0+cu124 / torch.__version__: '2.3.1' / torch.__version__ is 2.1.0
_DUNDER = re.compile(rf"\btorch\.__version__\s*(?:==?|:|is|->|returns?)\s*['\"]?({_TV})\b")
_CUDA_DUNDER = re.compile(r"\btorch\.version\.cuda\s*(?:==?|:|is|->|returns?)\s*['\"]?(\d+\.\d+)\b")
# a framework banner: "<name> <version or date> torch X.Y.Z+tag CPU" / "... torch X CUDA:0 (GPU name, 24268MiB)"
_BANNER = re.compile(rf"\b(?:torch|pytorch)[ -]({_TV})\s+(?:(CPU)\b|CUDA:(\d+) \(([^,()]{{3,60}}), (\d+)\s?Mi?B\))",
                     re.I)
_PIN = re.compile(rf"\b(?:pip3?|uv pip|python -m pip)\s+install\b[^\n]*?\btorch==({_TV})(?![\w.])")
# a GPU named in a sentence, often lower-case: "my gpu (gtx 1080 )", "on an rtx 3090", "with a GeForce GTX 1660"
_PROSE_GPU = re.compile(r"\b(?:my|the|a|an|with|on|have|using)\s+(?:nvidia\s+)?(?:gpu|graphics card|card)?\s*\(?\s*"
                        r"((?:geforce\s+)?(?:rtx|gtx|gt)\s?\d{3,4}(?:\s?(?:ti|super))?)\b", re.I)

# ... or an item of a hardware list, in capitals: "**Setup:** i7-8750H, GTX 1070, 16 GB RAM." (issue 42, archdriver)
_LISTED_GPU = re.compile(r"(?:^|[,:;]\s*)(?:\*\*\s*)?((?:GeForce\s+)?(?-i:RTX|GTX|GT)\s?\d{3,4}(?:\s?(?:Ti|SUPER))?)"
                         r"\s*(?=,|;|$)", re.I)
# ... or with the series after the number: "not working with 5090 rtx", "GPU: 3060 RTX 12 GB"
_REVERSED_GPU = re.compile(r"\b(\d{3,4})\s?(rtx|gtx)\b(?!\s?\d)", re.I)

# is_available() said to be False in a sentence or a message: "but cuda.is_available() returns false",
# "torch.cuda.is_available=**False**", torch's own "... but torch.cuda.is_available() is False." (not open3d's
# o3d.core.cuda.is_available(), and not a condition in code: "if torch.cuda.is_available() == False:")
# a misspelt name in the reporter's own sentence counts ("torch.cuda.is_avaiable() return False",
# kubeflow/community-distribution#2683)
_AVAILABLE_FALSE = re.compile(r"(?<![\w.])(?:torch\.)?cuda\.is_ava(?:ilable|iable|liable|ilble)(?:\(\))?`?\s*"
                              r"(?:\*\*)?\s*"
                              r"(?:(?:still|always|now|also)\s+)?(?:returns?|returned|returning|gives?|gave|is|was|"
                              r"shows?|showed|prints?|printed|outputs?|==?|:|->)\s*(?:(?:still|always|now|also)\s+)?"
                              r"[*`'\"]*\s*false\b", re.I)
_CODE_CONDITION = re.compile(r"\b(?:if|elif|while|assert|and|or|not)\s+(?:\(\s*)?(?:torch\.)?cuda\.is_ava", re.I)

_WORDS = ["torch.__version__", "torch.version.cuda", "torch ", "torch-", "pytorch ", "torch==", "gtx", "rtx", " gt ",
          "is_ava"]


def _gpu_name(raw: str) -> str:
    m = re.match(r"(?:geforce\s+)?(rtx|gtx|gt)\s?(\d{3,4})(?:\s?(ti|super))?", raw.strip(), re.I)
    if not m:
        return raw.strip()
    tail = {"ti": " Ti", "super": " SUPER"}.get((m.group(3) or "").lower(), "")
    return f"GeForce {m.group(1).upper()} {m.group(2)}{tail}"


def read_prose(paste: Paste, acc: Acc) -> None:
    lines = paste.lines
    for i in paste.distinct(paste.with_any(_WORDS), head=2000, tail=500):
        line = lines[i][:2000]
        m = _DUNDER.search(line)
        if m:
            acc.put("torch.version", m.group(1), LOOSE, f"torch.__version__ in the text: {line.strip()[:120]}")
        m = _CUDA_DUNDER.search(line)
        if m:
            acc.put("torch.cuda", m.group(1), LOOSE, f"torch.version.cuda in the text: {line.strip()[:120]}")
        m = _BANNER.search(line)
        if m:
            how = f"start-up banner: {m.group(0).strip()[:120]}"
            acc.put("torch.version", m.group(1), REPL, how)
            if m.group(2):  # the framework chose the CPU: with a +cpu build that is all torch can do
                acc.put("torch.cuda_available", False, LOOSE, how)
            else:
                acc.put("torch.cuda_available", True, REPL, how)
                acc.put("gpu.loose_name", m.group(4).strip(), REPL, how)
            acc.add_found("a framework start-up banner (torch build and device)")
        m = _PIN.search(line)
        # a pin the package reader already took (or saw fail: "No matching distribution found for torch==X")
        # is not stated again here; a failed install is not the installed torch
        if m and "torch" not in acc.packages and "torch" not in acc.requested and not re.search(
                r"(?:No matching distribution found for|satisfies the requirement) torch\b", paste.text):
            acc.put("torch.version", m.group(1), BARE, f"pip install torch=={m.group(1)}")
        m = _AVAILABLE_FALSE.search(line)
        if m and not _CODE_CONDITION.search(line):
            acc.put("torch.cuda_available", False, LOOSE, f"is_available() False in the text: {line.strip()[:120]}")
        m = _PROSE_GPU.search(line) or _LISTED_GPU.search(line.strip())
        r = None if m else _REVERSED_GPU.search(line)
        if (m or r) and "|" not in line:
            raw = m.group(1) if m else f"{r.group(2)} {r.group(1)}"
            acc.put("gpu.loose_name", _gpu_name(raw), BARE, f"GPU named in the text: {line.strip()[:120]}")


# collectives that hang between some GPUs: "NCCL hangs between GPU0 and GPU1", "all_reduce_perf works fine only with
# those linked through SYS. The rest will result in hanging", "GPU 2 and 3 deadlock, 0 and 2 work"
# a hang in other words: "spin at 100% SM utilization ... indefinitely, no forward progress" (NVIDIA/nccl#2079)
_HANG = re.compile(r"\b(?:hang|hangs|hanging|hung|stuck|freez\w*|deadlock\w*|never (?:finish|return|complete)s?|"
                   r"indefinitely|forever|no (?:forward )?progress)\b", re.I)
_PAIR = re.compile(r"\bGPUs? ?(\d{1,2}) ?(?:and|&|,|-|/|<->|<-->|to|with) ?(?:GPU ?)?(\d{1,2})\b", re.I)
_WORKS = re.compile(r"\b(?:works?|working|fine|ok|okay|succeeds?|passes)\b", re.I)
_LINK = re.compile(r"\b(SYS|NODE|PHB|PXB|PIX|NV\d+)\b")


def read_hangs(paste: Paste, acc: Acc) -> None:
    """Which GPU pairs (or link types) a collective hangs on and which work, as the user reports them."""
    hang_pairs, ok_pairs, hang_links, ok_links, said = set(), set(), set(), set(), []
    for i in paste.distinct(paste.with_any(["hang", "hung", "stuck", "freez", "deadlock", "never finish",
                                            "never return", "never complete", "indefinitely", "forever",
                                            "no progress", "no forward progress"]), head=300, tail=100):
        # the sentence with the hang word, and the one next to it (works / the rest hang)
        text = " ".join(paste.lines[j].strip() for j in range(max(0, i - 1), min(len(paste.lines), i + 2)))
        for sentence in re.split(r"(?<=[.;!?])\s+", text):
            hang, works = bool(_HANG.search(sentence)), bool(_WORKS.search(sentence))
            if not (hang or works):
                continue
            pairs = {tuple(sorted((int(a), int(b)))) for a, b in _PAIR.findall(sentence) if a != b}
            links = set(_LINK.findall(sentence))
            if hang and not works:
                hang_pairs |= pairs
                hang_links |= links
            elif works and not hang:
                ok_pairs |= pairs
                ok_links |= links
            if hang:
                said.append(sentence.strip()[:200])
    collective = re.compile(r"\bNCCL\b|all[_ -]?reduce|all[_ -]?gather|collective|DistributedDataParallel|\bDDP\b|"
                            r"torchrun|multi-?gpu|multiple gpus|\bp2p\b|peer[- ]to[- ]peer|nccl-tests|GPU ?\d+ (?:and|&) ",
                            re.I)
    if said and not (hang_pairs or hang_links or any(collective.search(x) for x in said)):
        said = []  # a hang with nothing multi-GPU about it ("the download hung") is not this story
    if said:
        # plain strings (provenance keeps primitives): "PIX PXB", pairs as "0-1 2-3"
        acc.put("paste.collective_hang", "; ".join(said[:3]), LOOSE, said[0])
        acc.put("paste.collective_hang.hang_links", " ".join(sorted(hang_links)), LOOSE, said[0])
        acc.put("paste.collective_hang.ok_links", " ".join(sorted(ok_links)), LOOSE, said[0])
        acc.put("paste.collective_hang.hang_pairs", " ".join(f"{a}-{b}" for a, b in sorted(hang_pairs)), LOOSE, said[0])
        acc.put("paste.collective_hang.ok_pairs", " ".join(f"{a}-{b}" for a, b in sorted(ok_pairs)), LOOSE, said[0])
