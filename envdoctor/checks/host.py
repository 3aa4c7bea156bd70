"""Host checks (host.*): /dev/shm size, CPUs per GPU and cgroup CPU quota, RAM per GPU, NUMA locality."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable, List, Optional, Tuple

from ..compat.health import GIB, HealthTable, health_table
from ..domain.pci import bus_key
from ..model.facts import Facts, Gpu, ProbeStatus
from ..model.findings import Evidence, Finding, Fix, Severity
from ..remedies import command, export, placeholder_flag
from ._gpus import given_gpus_only
from .base import NO_GPU, Check, CheckContext, Findings, SkipCheck, registrar, section_reason

if TYPE_CHECKING:
    from ..compat.queries import Compat

CHECKS: List[Check] = []
check = registrar(CHECKS)


MIB = 2**20


def _table(compat: Compat) -> HealthTable:
    try:
        return health_table(compat)
    except LookupError as e:
        raise SkipCheck(f"resource guidance unknown: {e}") from None


def _host(facts: Facts, what: str):
    if facts.host.status != ProbeStatus.OK:
        raise SkipCheck(section_reason(facts.host, what))
    return facts.host


def _gpus(facts: Facts) -> List[Gpu]:
    return list(facts.driver.gpus) if facts.driver.status == ProbeStatus.OK else []


def _memory_of(compat: Compat, g: Gpu) -> Optional[int]:
    if g.memory_total_bytes:
        return g.memory_total_bytes
    spec = compat.gpu(g.name) if g.name else None
    return spec.memory_bytes if spec is not None else None


def _ask_for(docker_flag: str, srun_flag: str, value: str) -> List[str]:
    """The container's and the Slurm job's way to ask for more of a resource."""
    return [command("docker", "run", placeholder_flag(docker_flag, value), "..."),
            command("srun", placeholder_flag(srun_flag, value), "...")]


def _needs(table: HealthTable, compat: Compat, gpus: List[Gpu]) -> Tuple[float, float, float, float, str]:
    """Sum over the GPUs of (cpu min, cpu recommended, ram GiB min, ram GiB recommended), and the rows' source."""
    cmin = crec = rmin = rrec = 0.0
    classes = []
    for g in gpus:
        row = table.resources_for(_memory_of(compat, g))
        cmin += row.cpu_cores_per_gpu_min
        crec += row.cpu_cores_per_gpu_recommended
        rmin += row.ram_gib_per_gpu_min
        rrec += row.ram_gib_per_gpu_recommended
        classes.append(row.gpu_class)
    summary = ", ".join(f"{classes.count(c)} {c}-class" for c in dict.fromkeys(classes))
    return cmin, crec, rmin, rrec, f"compat health.json rows ({summary})"


# --------------------------------------------------------------------------- SHM_TOO_SMALL


SHM = Findings("host.shm", "SHM_TOO_SMALL", kinds=("too-small",))


@check(SHM, "/dev/shm is large enough for DataLoader workers")
def shm(ctx: CheckContext) -> List[Finding]:
    host = _host(ctx.facts, "/dev/shm size")
    if host.os not in (None, "Linux"):
        raise SkipCheck(f"/dev/shm is a Linux thing (this is {host.os})")
    if host.shm_total_bytes is None:
        raise SkipCheck("/dev/shm size unknown: the host probe could not read it")
    table = _table(ctx.compat)
    floor = table.threshold("shm_min_bytes")
    size = host.shm_total_bytes
    if size >= floor:
        return []
    container = host.container
    runtime = (container.runtime if container else None) or ""
    if runtime == "kubernetes":
        commands = ["# pod spec: volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 16Gi}}]",
                    "# container: volumeMounts: [{name: dshm, mountPath: /dev/shm}]"]
    elif runtime:
        commands = ["docker run --shm-size=16g ...", "docker run --ipc=host ..."]
    else:
        commands = ["sudo mount -o remount,size=16G /dev/shm"]
    return [SHM.warning(
        "too-small",
        f"/dev/shm is {size / MIB:.0f} MiB (below {floor / MIB:.0f} MiB)"
        + (f"; {runtime} containers get 64 MB unless told otherwise" if runtime else ""),
        detail="DataLoader workers hand batches to the main process through /dev/shm; when it fills up they "
               "die with 'bus error' or 'unable to write to file </torch_...>'.",
        evidence=[Evidence("host.shm_total_bytes", size, expected=f">= {int(floor)}",
                           source="compat health.json thresholds.shm_min_bytes")],
        fix=Fix("Give the container more shared memory (or share the host's IPC namespace)", commands=commands,
                url="https://github.com/pytorch/pytorch#using-pre-built-images"),
    )]


def fmt_opt(value: Optional[int]) -> str:
    return "unknown" if value is None else str(value)


# --------------------------------------------------------------------------- CPU_STARVED


CPU = Findings("host.cpu", "CPU_STARVED", kinds=("cgroup-quota", "per-gpu", "per-gpu-below-recommended"))


@check(CPU, "Enough CPU cores per GPU for data loading")
def cpu(ctx: CheckContext) -> List[Finding]:
    host = _host(ctx.facts, "CPU count")
    counts = [c for c in (host.cpu_logical_count, host.cpu_affinity_count) if c]
    if not counts and host.cgroup_cpu_quota is None:
        raise SkipCheck("CPU count unknown: the host probe reported neither os.cpu_count() nor the affinity")
    table = _table(ctx.compat)
    visible = min(counts) if counts else None  # what os.cpu_count()/sched_getaffinity tell DataLoader code
    quota = host.cgroup_cpu_quota
    usable = min([c for c in (visible, quota) if c is not None])
    out: List[Finding] = []
    if quota is not None and visible is not None and quota < visible:
        frac = table.threshold("cgroup_quota_fraction_warn")
        sev = Severity.WARNING if quota <= frac * visible else Severity.INFO
        out.append(CPU(
            "cgroup-quota", sev,
            f"cgroup CPU quota is {quota:g} CPUs but os.cpu_count() reports {host.cpu_logical_count}"
            + (f" (affinity {host.cpu_affinity_count})" if host.cpu_affinity_count != host.cpu_logical_count else ""),
            detail="Code that sizes num_workers or thread pools from os.cpu_count() starts more workers than "
                   "the quota can run; they throttle each other (CFS throttling) and feed the GPUs slower.",
            evidence=[Evidence("host.cgroup_cpu_quota", quota, expected=f">= {visible}"),
                      Evidence("host.cpu_logical_count", host.cpu_logical_count)],
            fix=Fix(f"Size workers from the quota ({math.floor(quota)} CPUs), or ask for more CPUs",
                    commands=[export("OMP_NUM_THREADS", max(1, math.floor(quota))),
                              f"# DataLoader(num_workers={max(1, math.floor(quota) - 1)}, ...)",
                              command("docker", "run", placeholder_flag("--cpus", "<n>"), "...",
                                      comment="or the pod's resources.limits.cpu")]),
        ))
    gpus = _gpus(ctx.facts)
    if not gpus:
        if out:  # the quota was judged against os.cpu_count(); the per-GPU ratio has nothing to judge
            return out
        raise SkipCheck(
            f"no GPU to judge the per-GPU ratio against ({usable:g} CPUs usable: os.cpu_count() "
            f"{fmt_opt(host.cpu_logical_count)}, affinity {fmt_opt(host.cpu_affinity_count)}"
            + (f", cgroup quota {quota:g}" if quota is not None else ", no cgroup quota") + ")", not_applicable=NO_GPU)
    cmin, crec, _, _, src = _needs(table, ctx.compat, gpus)
    n = len(gpus)
    # the evidence names the fact the usable count came from (the quota, the affinity mask or os.cpu_count())
    path = ("host.cgroup_cpu_quota" if quota is not None and quota == usable
            else "host.cpu_affinity_count" if host.cpu_affinity_count == usable else "host.cpu_logical_count")
    have = f"{usable:g} usable CPUs for {n} GPUs ({usable / n:.1f} per GPU)"
    return out + _per_gpu(
        CPU, usable, n, (cmin, crec), path, src, expected=lambda need: f">= {need:g}",
        warn=f"{have}; data loading needs at least {cmin / n:g} per GPU ({cmin:g} in all), {crec / n:g} recommended",
        info=f"{have}; {crec / n:g} per GPU recommended for image/video pipelines",
        detail="Decoding and augmenting batches on too few cores leaves the GPUs waiting.",
        fix=Fix("Ask for more CPUs per GPU (or fewer GPUs), and set num_workers to the CPUs you have",
                commands=_ask_for("--cpus", "--cpus-per-gpu", "<n>")))


def _per_gpu(rule: Findings, usable: float, n: int, need: Tuple[float, float], path: str, src: str, *,
             expected: Callable[[float], str], warn: str, info: str, detail: str, fix: Fix) -> List[Finding]:
    """The per-GPU rule CPUs and RAM share: a warning below the minimum, a note below the recommendation."""
    least, recommended = need
    if usable < least:
        return [rule.warning("per-gpu", warn, detail=detail, fix=fix,
                             evidence=[Evidence(path, usable, expected=expected(least), source=src),
                                       Evidence("driver.gpus", n)])]
    if usable < recommended:
        return [rule.info("per-gpu-below-recommended", info,
                          evidence=[Evidence(path, usable, expected=expected(recommended), source=src)])]
    return []


# --------------------------------------------------------------------------- HOST_MEMORY_LOW


MEMORY = Findings("host.memory", "HOST_MEMORY_LOW", kinds=("per-gpu", "per-gpu-below-recommended"))


@check(MEMORY, "Enough host RAM per GPU")
def memory(ctx: CheckContext) -> List[Finding]:
    host = _host(ctx.facts, "host memory")
    if host.memory_total_bytes is None and host.cgroup_memory_limit_bytes is None:
        raise SkipCheck("host memory unknown: the host probe could not read it")
    table = _table(ctx.compat)
    limit = host.cgroup_memory_limit_bytes
    total = host.memory_total_bytes
    usable = min(v for v in (total, limit) if v is not None)
    # a cgroup limit above physical memory means "no limit" (cgroup v1 prints a huge number)
    limited = limit is not None and (total is None or limit < total)
    src_path = "host.cgroup_memory_limit_bytes" if limited else "host.memory_total_bytes"
    gpus = _gpus(ctx.facts)
    if not gpus:
        raise SkipCheck(
            f"no GPU to judge the per-GPU ratio against ({usable / GIB:.1f} GiB of RAM usable"
            + (f": cgroup limit of {total / GIB:.1f} GiB physical" if limited and total else "") + ")",
            not_applicable=NO_GPU)
    _, _, rmin, rrec, src = _needs(table, ctx.compat, gpus)
    n = len(gpus)
    gib = usable / GIB
    have = f"{gib:.1f} GiB of RAM{' (cgroup limit)' if limited else ''} for {n} GPUs ({gib / n:.1f} GiB per GPU)"
    return _per_gpu(
        MEMORY, usable, n, (rmin * GIB, rrec * GIB), src_path, src, expected=lambda need: f">= {int(need)}",
        warn=f"{have}; at least {rmin / n:g} GiB per GPU needed, {rrec / n:g} recommended",
        info=f"{gib:.1f} GiB of RAM for {n} GPUs ({gib / n:.1f} GiB per GPU); {rrec / n:g} GiB per GPU recommended",
        detail="DataLoader workers, pinned-memory buffers and checkpoint loading all live in host RAM; "
               "short of it the kernel's OOM killer ends workers ('DataLoader worker killed').",
        fix=Fix("Ask for more memory, or lower num_workers / prefetch_factor",
                commands=_ask_for("--memory", "--mem-per-gpu", "<size>")))


# --------------------------------------------------------------------------- NUMA locality (CPU_STARVED)


def parse_cpulist(text: Optional[str]) -> Optional[set]:
    """Kernel cpulist "0-3,8,10-11" -> {0, 1, 2, 3, 8, 10, 11}; None when it does not parse."""
    if text is None:
        return None
    cpus = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if "-" in part:
                lo, hi = part.split("-", 1)
                cpus.update(range(int(lo), int(hi) + 1))
            else:
                cpus.add(int(part))
        except ValueError:
            return None
    return cpus


NUMA = Findings("host.numa", "CPU_STARVED", kinds=("remote-gpu",))


@check(NUMA, "The process may run on CPUs local to each GPU")
def numa(ctx: CheckContext) -> List[Finding]:
    facts = ctx.facts
    host = _host(facts, "CPU affinity")
    locality = facts.topology.gpu_locality
    if not locality:
        raise SkipCheck("GPU NUMA locality unknown: " + ("no NVIDIA GPU in sysfs" if locality == []
                                                         else "sysfs local_cpulist was not read"),
                        not_applicable=NO_GPU if locality == [] else None)
    allowed = parse_cpulist(host.cpu_affinity_list)
    if not allowed:
        raise SkipCheck("the CPUs this process may use are unknown (no sched_getaffinity / Cpus_allowed_list)")
    by_bus = {bus_key(g.pci_bus_id): g for g in _gpus(facts)}
    remote = []
    for i, loc in enumerate(locality):
        local = parse_cpulist(loc.local_cpulist)
        if not local or (loc.numa_node is not None and loc.numa_node < 0):
            continue  # no NUMA information for this device: every CPU is as close as any other
        if bus_key(loc.pci_bus_id) not in by_bus and given_gpus_only(facts):
            continue  # a GPU of the host that this container (pod) was not given
        if not local & allowed:
            remote.append((i, loc, by_bus.get(bus_key(loc.pci_bus_id))))
    if not remote:
        return []
    names = "; ".join(
        (f"GPU {g.index} ({loc.pci_bus_id})" if g is not None else f"GPU at {loc.pci_bus_id}")
        + f" is local to NUMA node {loc.numa_node} (CPUs {loc.local_cpulist})" for _, loc, g in remote)
    nodes = sorted({loc.numa_node for _, loc, _ in remote if loc.numa_node is not None})
    return [NUMA.warning(
        "remote-gpu",
        f"This process may only run on CPUs {host.cpu_affinity_list}, none of them local to: {names}",
        detail="Every host<->GPU copy and kernel launch for those GPUs crosses the socket interconnect "
               "(UPI/Infinity Fabric) and pinned buffers land in remote memory: lower copy bandwidth and "
               "higher latency. Usually a cpuset/taskset or a scheduler that placed the job on the wrong socket.",
        evidence=[Evidence("host.cpu_affinity_list", host.cpu_affinity_list,
                           expected=f"overlaps {loc.local_cpulist}")
                  for _, loc, _ in remote[:1]]
                 + [Evidence(f"topology.gpu_locality[{i}].local_cpulist", loc.local_cpulist,
                             source=f"/sys/bus/pci/devices/{loc.pci_bus_id}/local_cpulist") for i, loc, _ in remote],
        fix=Fix("Run the job on the GPU's NUMA node (or give it CPUs there); with several GPUs, one rank per "
                "GPU bound to that GPU's node",
                commands=[f"numactl --cpunodebind={nodes[0]} --membind={nodes[0]} python train.py" if nodes
                          else command("numactl", placeholder_flag("--cpunodebind", "<node>"),
                                       placeholder_flag("--membind", "<node>"), "python", "train.py"),
                          "nvidia-smi topo -m   # the 'CPU Affinity' and 'NUMA Affinity' columns",
                          "srun --cpu-bind=closest ...   # Slurm"],
                url="https://docs.nvidia.com/deploy/nvidia-smi/index.html"),
    )]
