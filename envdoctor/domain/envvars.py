"""What an environment variable's value means, as its owner documents it: the syntax of PyTorch's allocator
configuration, NCCL's interface filter, CUDA's device list and TORCH_CUDA_ARCH_LIST (pure, no envdoctor import)."""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence, Tuple

# --------------------------------------------------------------------------- PYTORCH_CUDA_ALLOC_CONF

# The options PyTorch documents for PYTORCH_CUDA_ALLOC_CONF (alias of PYTORCH_ALLOC_CONF since 2.9), with the
# value each takes: docs/source/notes/cuda.rst "Optimizing memory usage with PYTORCH_CUDA_ALLOC_CONF"
# (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf).
# c10/cuda/CUDAAllocatorConfig.cpp raises "Unrecognized CachingAllocator option" for any other key and a
# TORCH_CHECK error for a value of the wrong kind, at the first CUDA allocation.
ALLOC_CONF_OPTIONS: Dict[str, str] = {
    "backend": "backend",  # native | cudaMallocAsync
    "max_split_size_mb": "size_mb",  # MB, > 20 (the allocator's 20 MB large-block floor)
    "max_non_split_rounding_mb": "int",
    "roundup_power2_divisions": "divisions",  # N, or [256:1,512:2,1024:4,>:8]
    "garbage_collection_threshold": "fraction",  # 0.0 < x < 1.0
    "expandable_segments": "bool",  # True | False, exactly
    "pinned_use_cuda_host_register": "bool",
    "pinned_num_register_threads": "int",
    "pinned_use_background_threads": "bool",
    # not in the notes, but parsed by CUDAAllocatorConfig.cpp (a value it accepts is no error)
    "release_lock_on_cudamalloc": "bool",
}
_BACKENDS = ("native", "cudaMallocAsync")
_INT = re.compile(r"^\d+$")
_FLOAT = re.compile(r"^\d*\.?\d+(?:[eE][-+]?\d+)?$")


def _split_top(text: str) -> List[str]:
    """Split on commas outside brackets: "a:1,b:[256:1,>:8]" -> ["a:1", "b:[256:1,>:8]"]."""
    out, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def _alloc_value_problem(key: str, kind: str, value: str) -> Optional[str]:
    if kind == "backend":
        return None if value in _BACKENDS else f"backend:{value} is not one of {', '.join(_BACKENDS)}"
    if kind == "bool":
        return None if value in ("True", "False") else f"{key} takes True or False (exactly), not {value!r}"
    if kind == "int":
        return None if _INT.match(value) else f"{key} takes a whole number, not {value!r}"
    if kind == "size_mb":
        if not _INT.match(value):
            return f"{key} takes a whole number of MB, not {value!r}"
        return None if int(value) > 20 else f"{key}:{value} is too small (PyTorch requires more than 20 MB)"
    if kind == "fraction":
        if not _FLOAT.match(value) or not 0.0 < float(value) < 1.0:
            return f"{key} takes a number between 0.0 and 1.0 (exclusive), not {value!r}"
        return None
    if kind == "divisions":
        if _INT.match(value):
            return None
        m = re.fullmatch(r"\[(.*)\]", value)
        pairs = _split_top(m.group(1)) if m else []
        if not m or not pairs or not all(re.fullmatch(r"(?:\d+|>):\d+", p.strip()) for p in pairs):
            return f"{key} takes a number or a list such as [256:1,512:2,>:8], not {value!r}"
        return None
    return None


def alloc_conf_problems(value: str) -> List[str]:
    """Why ``value`` is not a PYTORCH_CUDA_ALLOC_CONF PyTorch accepts (``<option>:<value>,...``); [] when it is."""
    text = value.strip()
    if not text:
        return []
    problems: List[str] = []
    for item in _split_top(text):
        item = item.strip()
        if not item:
            problems.append("an empty item (a stray comma)")
            continue
        key, sep, val = item.partition(":")
        key, val = key.strip(), val.strip()
        if not sep:
            problems.append(f"{item!r} has no ':' (the format is option:value)")
            continue
        kind = ALLOC_CONF_OPTIONS.get(key)
        if kind is None:
            problems.append(f"{key!r} is not an allocator option PyTorch documents")
            continue
        bad = _alloc_value_problem(key, kind, val)
        if bad:
            problems.append(bad)
    return problems


# --------------------------------------------------------------------------- NCCL_SOCKET_IFNAME


def ifname_matches(value: str, interfaces: Sequence[str]) -> List[str]:
    """The interfaces NCCL_SOCKET_IFNAME selects among ``interfaces`` (NCCL's env docs): a comma list of name
    prefixes, ``=name`` for an exact name, a leading ``^`` excludes what the list matches instead."""
    text = value.strip()
    exclude = text.startswith("^")
    if exclude:
        text = text[1:]
    items = [p.strip() for p in text.split(",") if p.strip()]

    def hit(name: str) -> bool:
        for p in items:
            if p.startswith("="):
                if name == p[1:]:
                    return True
            elif name.startswith(p):
                return True
        return False

    if exclude:
        # NCCL never picks the loopback interface unless it is named (NCCL env docs, NCCL_SOCKET_IFNAME)
        return [n for n in interfaces if not hit(n) and n != "lo"]
    return [n for n in interfaces if hit(n)]


# --------------------------------------------------------------------------- CUDA_VISIBLE_DEVICES


def visible_devices(value: str, gpu_count: Optional[int], uuids: Sequence[Optional[str]] = ()
                    ) -> Tuple[Optional[List[int]], Optional[str]]:
    """The GPU indices CUDA sees under CUDA_VISIBLE_DEVICES=``value``, and the first entry that stops the list.

    CUDA programming guide, "CUDA Environment Variables": an empty value hides every GPU; the list holds
    indices, UUIDs (``GPU-...``, a unique prefix is enough) or MIG identifiers; at the first invalid entry the
    list stops, only the entries before it are visible. (None, None) when it cannot be told: a MIG entry, or an
    index or UUID without the GPU list to check it against."""
    text = value.strip()
    if not text:
        return [], None
    seen: List[int] = []
    for raw in text.split(","):
        entry = raw.strip()
        if re.fullmatch(r"-?\d+", entry):
            idx = int(entry)
            if idx < 0:
                return seen, entry
            if gpu_count is None:
                return None, None
            if idx >= gpu_count:
                return seen, entry
            seen.append(idx)
        elif entry.upper().startswith("GPU-"):
            known = [(i, u) for i, u in enumerate(uuids) if u]
            if gpu_count is None or len(known) != gpu_count:
                return None, None
            hits = [i for i, u in known if u.lower().startswith(entry.lower())]
            if len(hits) != 1:
                return seen, entry
            seen.append(hits[0])
        elif entry.upper().startswith("MIG-"):
            return None, None
        else:
            return seen, entry
    return seen, None


# --------------------------------------------------------------------------- TORCH_CUDA_ARCH_LIST


def arch_list_entries(value: str) -> List[str]:
    """TORCH_CUDA_ARCH_LIST's entries: separated by spaces or semicolons ("8.0 8.6+PTX", "8.0;9.0")."""
    return [e for e in re.split(r"[\s;]+", value.strip()) if e]


def arch_entry_cc(entry: str) -> Optional[str]:
    """'8.6+PTX' -> '8.6', '9.0a' -> '9.0', '12.0f' -> '12.0'; None for what is not a capability."""
    m = re.fullmatch(r"(\d{1,2})\.(\d)[af]?(?:\+PTX)?", entry.strip(), re.IGNORECASE)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def arch_entry_targets(entry: str) -> List[str]:
    """What an entry builds, in get_arch_list() spelling: '8.6+PTX' -> ['sm_86', 'compute_86'], '9.0a' ->
    ['sm_90a']; [] for an unreadable entry."""
    m = re.fullmatch(r"(\d{1,2})\.(\d)([af]?)(\+PTX)?", entry.strip(), re.IGNORECASE)
    if not m:
        return []
    digits = f"{m.group(1)}{m.group(2)}{m.group(3).lower()}"
    return [f"sm_{digits}"] + ([f"compute_{digits}"] if m.group(4) else [])
