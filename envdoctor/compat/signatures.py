"""The error-signature catalogue (compat_data/error_signatures.json): known messages mapped to categories."""

from __future__ import annotations

import re
from dataclasses import field
from typing import Any, Dict, List, Optional, Tuple

from ..domain.fastclass import dataclass
from ..model.catalogue import CATEGORIES
from ._parse import loaded

STEM = "error_signatures"
SEVERITIES = ("error", "warning", "info")
CONFIDENCES = ("high", "medium", "low")
_WS = re.compile(r"\s+")


# the fact paths a row's "facts" may set (diagnose/engine.py maps them to its reader keys), and the predicate
# names its alternatives may use (checks/_paste.py holds()): anything else is a typo that would silently never
# apply, so the loader rejects it
FACT_PATHS = ("driver.cuda_driver_version", "pythons[0].torch.arch_list", "pythons[0].torch.cuda",
              "pythons[0].torch.version", "toolkits.on_path.version", "gpu.name", "gpu.compute_capability")
PREDICATES = ("wsl", "in_container", "in_container_no_gpu", "variants_differ", "not_torch_import",
              "mig_enabled", "nvidia_wheels_two_majors", "python_outside_requested_torch",
              "driver_packages_changed",
              # context qualifiers added in round 3 (checks/_paste.py holds() says what each reads)
              "always", "torch_import", "windows_build_named", "wsl_kernel_too_old", "lib_in_pip_wheel",
              "lib_in_system_path", "lib_cuda_major_differs", "container_started_without_gpus",
              # issue 29: a third-party runtime's library of an older CUDA major; a `docker run` without shm
              "older_major_build", "docker_run_without_shm",
              # issue 29: the failing compiled file belongs to a torch companion (torchvision, torchaudio), or
              # the paste's failing import is a third-party torch extension (compat_data/torch_family.json)
              "lib_of_companion", "extension_import",
              # issue 29: the library version a message says was loaded is a pip nvidia-* wheel's in the paste
              "loaded_lib_is_pip_wheel",
              # issue 29 (kinds C): NCCL's last error is a /dev/shm segment; nvidia-smi's CUDA above its own branch
              "nccl_shm_segment_failed", "driver_cuda_above_branch",
              # a pasted scheduler launch (srun/salloc/sbatch) that asked for no GPU
              "job_without_gpus",
              # issue 42: a Kubernetes pod or cluster named in the paste; cuDNN's own "Memory usage" line shows
              # most of the GPU's memory free
              "in_kubernetes", "gpu_memory_mostly_free",
              # issue 42: the paste shows the host's driver missing beside a container runtime's failure
              "host_driver_missing",
              # issue 42: a vGPU named in the paste (a profile name, a GRID driver, "vGPU") or a GPU in vGPU mode
              "vgpu_named",
              # issue 42 (round 7): the library a program other than torch could not load is cuDNN (libcudnn*)
              "cudnn_missing_outside_torch",
              # issue 42: the library a message says was loaded is newer than the one the program was built
              # against (the loaded/compiled captures): a build for another release, not an older copy in front
              "loaded_newer_than_built",
              # issue 42 (round 7): NCCL's generic system error beside a NCCL WARN naming its network transport;
              # a pasted `docker run` that did give --shm-size or --ipc=host
              "nccl_transport_failed", "docker_run_with_shm",
              # the paste says the machine has no NVIDIA GPU (a reporter's sentence, or macOS): a CPU build of
              # torch is the right one there, and code that asks for CUDA is what fails
              "no_nvidia_gpu_said",
              # issue 42 (round 13): the driver's CUDA ceiling reaches torch's build CUDA, so PTX it cannot JIT
              # is an extension's built on the machine (checks/_paste_roles.py)
              "driver_cuda_covers_torch_cuda",
              # issue 42 (round 8): NVRM's open nvidia.ko refused the GPU (the data-center gate, no GSP): a
              # RmInitAdapter failure beside it follows from that, not from the firmware's BAR
              "open_module_refused_gpu",
              # issue 42 (kbsys): NVRM found no GSP firmware image of the module's version: the RmInitAdapter
              # failure after it is that missing firmware, not the firmware's BAR
              "gsp_firmware_missing",
              # issue 42 (round 8 after first sight): the paste's driver runs every CUDA runtime of the major the
              # program needs, so an "insufficient driver" error is not the driver's age
              "driver_runs_program_cuda",
              # xformers says its C++/CUDA operators did not load: its per-operator capability reasons follow
              "xformers_not_built_for_torch",
              # issue 42 (archdriver): the paste's build may be a torch extension's (torch, setup.py, cpp_extension)
              "extension_build_named",
              # a CPU build said in words is torch's: the matched line names torch and no other framework
              "cpu_build_said_of_torch",
              # issue 42 (round 10): the paste's failing import is a torch companion (torchvision, torchaudio)
              "companion_import",
              # round 10: the cuDNN the reporter names as installed is the one loaded, older than the build's
              "cudnn_named_is_loaded",
              # round 10: which onnxruntime packages the paste's package list holds (both, the CPU one alone, none)
              "ort_both_packages_shown", "ort_cpu_package_alone_shown", "ort_packages_not_shown",
              # round 15: the program ran in a Jetson L4T container (readers/contexts.py read_l4t_container)
              "l4t_container",
              # round 15: the "no kernel image" line names the failing site, compiled code other than torch's
              "kernel_site_not_torch",
              # round 15: the installed torch is the +cpu build of the very release an extension was built for
              "have_cpu_build_of_built",
              # round 19: the pip line's PyTorch index names a CUDA variant the requested release was not built for
              "index_variant_not_published",
              # round 25: the paste's GPU is below the SM a kernel-library message names (SageAttention's "SM89
              # kernel is not available" on a GTX 1080): the GPU is too old, not the library's build
              "gpu_below_named_sm",
              # rounds 26-27: in a container, no CUDA named for the program, no driver shown or one that runs every
              # runtime of the major before the newest: an insufficient-driver error may be the container as much
              "container_driver_age_unproven")


class SignatureError(ValueError):
    """A malformed row in error_signatures.json (the message names the row and the problem)."""


@dataclass(frozen=True)
class Alternative:
    category: str
    when: str  # a predicate name the messages check knows ("wsl", "in_container", "capture:lib~regex" ...)
    confidence: str = "medium"
    # where the context changes what the message means, not only its category, the alternative says so itself
    # (None: the row's own): "Torch not compiled with CUDA enabled" on a machine the paste says has no NVIDIA GPU
    # is code asking for CUDA, and "reinstall torch from the CUDA index" would be wrong advice there
    severity: Optional[str] = None
    explanation: Optional[str] = None
    fix: Optional[str] = None
    settle: Optional[str] = None  # ... and what settles it, where the row's command asks about another component


@dataclass(frozen=True)
class Signature:
    id: str
    pattern: str
    regex: Any  # compiled re.Pattern
    category: str
    severity: str
    confidence: str
    explanation: str
    fix: str
    source: str
    as_of: Optional[str] = None
    captures: Dict[str, str] = field(default_factory=dict)
    facts: Dict[str, str] = field(default_factory=dict)  # capture -> "fact.path|transform"
    alternatives: Tuple[Alternative, ...] = ()
    settle: Optional[str] = None  # the one command whose output would settle it
    # further categories the same message proves (each its own finding), tried with their own qualifier:
    # "an extension built for +cu124 on +cu126" is a third-party mismatch AND a CUDA variant mix
    also: Tuple[Alternative, ...] = ()
    # the literals the messages reader looks for on a line (lower-case), where the pattern's own longest word is
    # too short or too common to find it ("/dev/dxg is not available": "available" is everywhere)
    words: Tuple[str, ...] = ()
    # the finding's headline where the category's title would not name the subject: a CPU-only build of DGL, Faiss
    # or JAX under FRAMEWORK_CPU_ONLY_BUILD, whose title names no framework (None: the category's title)
    title: Optional[str] = None
    # a message family (a row with "family" instead of "pattern"): words that say a cause in any program's terms,
    # read only where no other row and no NVIDIA status explains the message (checks/_paste.py signature_hits);
    # always a warning at low confidence, since it is a reading of the words, not a message envdoctor knows
    family: bool = False

    def search(self, message: str) -> Optional[Any]:
        return self.regex.search(normalise(message))


def normalise(message: str) -> str:
    """Collapse whitespace (messages wrap across lines in pastes) so one pattern matches all layouts."""
    return _WS.sub(" ", message).strip()


def _qualified(row: Dict[str, Any], key: str, default_when: str, where: str) -> List[Alternative]:
    """A row's qualified categories ("alternatives" replace the category, "also" add one), each checked: a
    known category and a known predicate (or a capture test), never silently False."""
    out = []
    for alt in row.get(key, []) or []:
        if alt.get("category") not in CATEGORIES:
            raise SignatureError(f"{where}: {key} with unknown category {alt.get('category')!r}")
        when = str(alt.get("when", default_when))
        if when not in PREDICATES and not (when.startswith("capture:") and "~" in when):
            raise SignatureError(f"{where}: {key} with unknown predicate {when!r} (known: {PREDICATES})")
        severity = alt.get("severity")
        if severity is not None and severity not in SEVERITIES:
            raise SignatureError(f"{where}: {key} severity must be one of {SEVERITIES}")
        for text in ("explanation", "fix", "settle"):
            if alt.get(text) is not None and (not isinstance(alt[text], str) or not alt[text].strip()):
                raise SignatureError(f"{where}: {key} {text} must be a non-empty string")
        out.append(Alternative(alt["category"], when, alt.get("confidence", "medium"), severity,
                               alt.get("explanation"), alt.get("fix"), alt.get("settle")))
    return out


def family_pattern(spec: Any, where: str) -> str:
    """The pattern of a message family: every regex of ``all`` somewhere in the message, none of ``none``, and not
    a question (lookaheads over the whitespace-normalised message, so the parts may come in any order)."""
    if not isinstance(spec, dict) or not isinstance(spec.get("all"), list) or not spec["all"]:
        raise SignatureError(f"{where}: 'family' needs a non-empty 'all' list of patterns")
    parts = []
    for key, look in (("all", "?="), ("none", "?!")):
        for p in spec.get(key) or []:
            if not isinstance(p, str) or not p.strip():
                raise SignatureError(f"{where}: family {key!r} holds an empty pattern")
            parts.append(f"({look}.*?(?:{p}))")
    # a message with a question ("Is my driver too old? ...") is a person asking, not a program saying it
    return "^" + "".join(parts) + r"(?!.*?\?(?:\s|$))"


def _row(row: Dict[str, Any], i: int) -> Signature:
    where = f"{STEM}.json: rows[{i}] ({row.get('id', '?')})"
    family = "family" in row
    if family:
        if "pattern" in row:
            raise SignatureError(f"{where}: a row has a 'pattern' or a 'family', not both")
        if row.get("severity") != "warning" or row.get("confidence") != "low" or not row.get("word"):
            raise SignatureError(f"{where}: a family is a warning at low confidence with its 'word' literals")
        row = dict(row, pattern=family_pattern(row["family"], where))
    for key in ("id", "pattern", "category", "severity", "explanation", "fix", "source"):
        if not isinstance(row.get(key), str) or not row[key].strip():
            raise SignatureError(f"{where}: missing {key!r}")
    if row["category"] not in CATEGORIES:
        raise SignatureError(f"{where}: unknown category {row['category']!r}")
    if row["severity"] not in SEVERITIES:
        raise SignatureError(f"{where}: severity must be one of {SEVERITIES}")
    confidence = row.get("confidence", "medium")
    if confidence not in CONFIDENCES:
        raise SignatureError(f"{where}: confidence must be one of {CONFIDENCES}")
    try:
        regex = re.compile(row["pattern"], re.IGNORECASE)
    except re.error as exc:
        raise SignatureError(f"{where}: bad pattern: {exc}") from None
    alternatives = _qualified(row, "alternatives", "", where)
    also = _qualified(row, "also", "always", where)
    for cap, spec in (row.get("facts") or {}).items():
        if str(spec).partition("|")[0] not in FACT_PATHS:
            raise SignatureError(f"{where}: facts[{cap!r}] sets unknown fact path {spec!r} (known: {FACT_PATHS})")
    for cap in list(row.get("captures", {}) or {}) + list(row.get("facts", {}) or {}):
        if cap not in regex.groupindex:
            raise SignatureError(f"{where}: capture {cap!r} is not a named group of the pattern")
    word = row.get("word")
    given = [word] if isinstance(word, str) else word if isinstance(word, list) else [] if word is None else [None]
    literal = re.sub(r"\\(.)", r"\1", row["pattern"]).lower()  # the pattern's text with its escapes undone
    words: List[str] = []
    for w in given:
        if not isinstance(w, str) or len(w.strip()) < 3 or w.strip().lower() not in literal:
            raise SignatureError(f"{where}: 'word' must be literals of 3 or more characters the pattern holds")
        words.append(w.strip().lower())
    return Signature(
        id=row["id"], pattern=row["pattern"], regex=regex, category=row["category"],
        severity=row["severity"], confidence=confidence, explanation=row["explanation"], fix=row["fix"],
        source=row["source"], as_of=row.get("as_of"), captures=dict(row.get("captures") or {}),
        facts=dict(row.get("facts") or {}), alternatives=tuple(alternatives), settle=row.get("settle"),
        also=tuple(also), words=tuple(words), title=_title(row, where), family=family,
    )


def _title(row: Dict[str, Any], where: str) -> Optional[str]:
    title = row.get("title")
    if title is not None and (not isinstance(title, str) or not title.strip()):
        raise SignatureError(f"{where}: 'title' must be a non-empty string")
    return title


class SignatureList(list):
    """The parsed rows, and the document's ``context`` table: the cited facts its context qualifiers compare
    with (the minimum WSL kernel for GPU compute ...), each {"value", "source"}."""

    context: Dict[str, Dict[str, Any]] = {}


def parse_signatures(doc: Dict[str, Any]) -> List[Signature]:
    """Build the signatures from the parsed JSON document; raise SignatureError on a bad row."""
    rows = doc.get("rows")
    if not isinstance(rows, list):
        raise SignatureError(f"{STEM}.json: no 'rows' list")
    out = [_row(r, i) for i, r in enumerate(rows)]
    ids = [s.id for s in out]
    dupes = {x for x in ids if ids.count(x) > 1}
    if dupes:
        raise SignatureError(f"{STEM}.json: duplicate ids {sorted(dupes)}")
    context = doc.get("context") or {}
    for key, row in context.items():
        if not isinstance(row, dict) or not str(row.get("value", "")).strip() or not str(row.get("source", "")).strip():
            raise SignatureError(f"{STEM}.json: context[{key!r}] needs a 'value' and a 'source'")
    listed = SignatureList(out)
    listed.context = dict(context)
    return listed


def signature_context(compat: Any, key: str) -> Optional[Dict[str, Any]]:
    """One row of the catalogue's context table ({"value", "source"}), None when absent."""
    try:
        sigs = loaded(compat, STEM)
    except LookupError:
        return None
    return getattr(sigs, "context", {}).get(key)


def signatures_from(compat: Any) -> List[Signature]:
    """The signatures of a loaded Compat, parsed at load (no file is read here); [] when its data has none."""
    try:
        return list(loaded(compat, STEM))
    except LookupError:
        return []
