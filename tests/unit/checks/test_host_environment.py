"""host.environment: every row of compat_data/env_vars.json judged on facts the host probe recorded from a fake
environment and a temporary /sys (envdoctor/checks/host_environment.py, envdoctor/probes/host.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Dict, Optional

import pytest

from envdoctor.checks import all_checks, run_checks
from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts, Host, PasteSource, ProbeStatus, PythonEnv
from envdoctor.model.findings import CheckStatus
from envdoctor.probes.host import probe_host
from tests import machines as m
from tests.fakes.runner import FakeRunner

UUID0 = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6"
UUID1 = "GPU-1b2c3d4e-0000-1111-2222-333344445555"


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def _w(root: Path, rel: str, text: str = "") -> None:
    p = root / rel.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def probed_host(root: Path, env: Dict[str, str], ifaces=("lo", "eth0"), ib: bool = False,
                quota: Optional[float] = None) -> Host:
    """The host section as `envdoctor check` records it: probe_host over a temporary root and ``env``."""
    cpuinfo = "".join(f"processor\t: {i}\nmodel name\t: Xeon\nphysical id\t: 0\ncore id\t\t: {i}\n\n" for i in range(8))
    _w(root, "/proc/cpuinfo", cpuinfo)
    _w(root, "/proc/meminfo", "MemTotal:       16384 kB\nMemAvailable:    8192 kB\n")
    _w(root, "/etc/os-release", 'ID=ubuntu\nVERSION_ID="22.04"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\n')
    (root / "sys/class/net").mkdir(parents=True, exist_ok=True)
    for name in ifaces:
        (root / "sys/class/net" / name).mkdir()
    if ib:
        (root / "sys/class/infiniband/mlx5_0").mkdir(parents=True)
    if quota is not None:
        _w(root, "/sys/fs/cgroup/cgroup.controllers", "cpu memory\n")
        _w(root, "/proc/self/cgroup", "0::/\n")
        _w(root, "/sys/fs/cgroup/cpu.max", f"{int(quota * 100000)} 100000\n")
    return probe_host(FakeRunner(strict=False), root=str(root), env=env)


def a100s(n: int = 2):
    return [m.gpu(i, "NVIDIA A100-SXM4-80GB", "8.0", uuid=(UUID0, UUID1)[i]) for i in range(n)]


def machine(tmp_path: Path, env: Dict[str, str], gpus=None, nvcc=("12.4", "12.4.131"), **host_kw) -> Facts:
    """A GPU machine whose host section was probed with ``env``; torch 2.5.1+cu124, nvcc on PATH."""
    root = tmp_path / f"root{len(list(tmp_path.iterdir()))}"
    h = probed_host(root, env, **host_kw)
    f = m.facts(m.driver("550.54.15", "12.4", a100s() if gpus is None else gpus),
                [m.torch_env("2.5.1+cu124", "12.4", m.ARCH_2_1_TO_2_7)], host=h)
    return m.with_nvcc(f, *nvcc) if nvcc else f


def judge(f: Facts, compat):
    (res,) = run_checks(f, compat, [c for c in all_checks() if c.id == "host.environment"])
    assert res.status != CheckStatus.ERRORED, res.reason
    return res


MIXED = [m.gpu(0, "NVIDIA A100-SXM4-80GB", "8.0"), m.gpu(1, "Tesla T4", "7.5", mem_gib=16)]

# rule id -> (variable, harmful value, machine options, severity, category, fix commands, the value after the fix)
# (None as a value: the variable unset)
CASES = {
    "cuda-launch-blocking": ("CUDA_LAUNCH_BLOCKING", "1", {}, "warning", "ENV_VAR_HARMFUL",
                             ["unset CUDA_LAUNCH_BLOCKING"], None),
    "cuda-visible-devices-hides-all": ("CUDA_VISIBLE_DEVICES", "", {}, "error", "NO_GPU_VISIBLE",
                                       ["unset CUDA_VISIBLE_DEVICES", "export CUDA_VISIBLE_DEVICES=0,1"], "0,1"),
    "cuda-visible-devices-missing-gpu": ("CUDA_VISIBLE_DEVICES", "0,5", {}, "warning", "NO_GPU_VISIBLE",
                                         ["export CUDA_VISIBLE_DEVICES=0,1", "unset CUDA_VISIBLE_DEVICES"], "0,1"),
    "cuda-device-order-mixed-gpus": ("CUDA_DEVICE_ORDER", None, {"gpus": MIXED}, "info", "ENV_VAR_HARMFUL",
                                     ["export CUDA_DEVICE_ORDER=PCI_BUS_ID"], "PCI_BUS_ID"),
    "cuda-module-loading-eager": ("CUDA_MODULE_LOADING", "EAGER", {}, "info", "ENV_VAR_HARMFUL",
                                  ["unset CUDA_MODULE_LOADING"], "LAZY"),
    "cuda-cache-disable": ("CUDA_CACHE_DISABLE", "1", {}, "info", "ENV_VAR_HARMFUL",
                           ["unset CUDA_CACHE_DISABLE"], "0"),
    "cuda-force-ptx-jit": ("CUDA_FORCE_PTX_JIT", "1", {}, "warning", "ENV_VAR_HARMFUL",
                           ["unset CUDA_FORCE_PTX_JIT"], None),
    "torch-cuda-arch-list-unbuildable": ("TORCH_CUDA_ARCH_LIST", "3.5 8.0", {}, "warning", "ENV_VAR_HARMFUL",
                                         ["export TORCH_CUDA_ARCH_LIST=8.0", "unset TORCH_CUDA_ARCH_LIST"], "8.0"),
    "torch-cuda-arch-list-misses-gpus": ("TORCH_CUDA_ARCH_LIST", "7.0", {}, "warning", "ENV_VAR_HARMFUL",
                                         ["export TORCH_CUDA_ARCH_LIST=8.0", "unset TORCH_CUDA_ARCH_LIST"], "8.0"),
    "omp-num-threads-above-cores": ("OMP_NUM_THREADS", "999", {}, "warning", "ENV_VAR_HARMFUL",
                                    ["export OMP_NUM_THREADS=8"], "8"),
    "omp-num-threads-invalid": ("OMP_NUM_THREADS", "auto", {}, "info", "ENV_VAR_HARMFUL",
                                ["export OMP_NUM_THREADS=8", "unset OMP_NUM_THREADS"], "4,2"),
    "mkl-num-threads-above-cores": ("MKL_NUM_THREADS", "16", {}, "warning", "ENV_VAR_HARMFUL",
                                    ["export MKL_NUM_THREADS=8"], "8"),
    "nccl-p2p-disable": ("NCCL_P2P_DISABLE", "1", {}, "warning", "INTERCONNECT", ["unset NCCL_P2P_DISABLE"], "0"),
    "nccl-shm-disable": ("NCCL_SHM_DISABLE", "1", {}, "info", "INTERCONNECT", ["unset NCCL_SHM_DISABLE"], None),
    "nccl-ib-disable": ("NCCL_IB_DISABLE", "1", {"ib": True}, "warning", "INTERCONNECT",
                        ["unset NCCL_IB_DISABLE"], None),
    "nccl-socket-ifname-no-interface": ("NCCL_SOCKET_IFNAME", "eth1", {}, "error", "INTERCONNECT",
                                        ["unset NCCL_SOCKET_IFNAME"], "eth"),
    "nccl-socket-ifname-loopback": ("NCCL_SOCKET_IFNAME", "lo", {}, "warning", "INTERCONNECT",
                                    ["unset NCCL_SOCKET_IFNAME"], "=eth0"),
    "nccl-debug-verbose": ("NCCL_DEBUG", "INFO", {}, "info", "ENV_VAR_HARMFUL",
                           ["export NCCL_DEBUG=WARN", "unset NCCL_DEBUG"], "WARN"),
    "pytorch-cuda-alloc-conf-syntax": ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:true", {}, "error",
                                       "ENV_VAR_HARMFUL", ["unset PYTORCH_CUDA_ALLOC_CONF"],
                                       "expandable_segments:True,max_split_size_mb:128"),
    "pytorch-alloc-conf-syntax": ("PYTORCH_ALLOC_CONF", "garbage_collection_threshold:1.5", {}, "error",
                                  "ENV_VAR_HARMFUL", ["unset PYTORCH_ALLOC_CONF"], "garbage_collection_threshold:0.6"),
    "pytorch-no-cuda-memory-caching": ("PYTORCH_NO_CUDA_MEMORY_CACHING", "1", {}, "warning", "ENV_VAR_HARMFUL",
                                       ["unset PYTORCH_NO_CUDA_MEMORY_CACHING"], None),
    "torch-distributed-debug-detail": ("TORCH_DISTRIBUTED_DEBUG", "DETAIL", {}, "info", "ENV_VAR_HARMFUL",
                                       ["unset TORCH_DISTRIBUTED_DEBUG"], "INFO"),
    "cudnn-loglevel-dbg": ("CUDNN_LOGLEVEL_DBG", "3", {}, "info", "ENV_VAR_HARMFUL", ["unset CUDNN_LOGLEVEL_DBG"], "0"),
    "cudnn-loginfo-dbg": ("CUDNN_LOGINFO_DBG", "1", {}, "info", "ENV_VAR_HARMFUL", ["unset CUDNN_LOGINFO_DBG"], "0"),
}


def test_every_row_of_the_table_has_a_case(compat):
    assert [r.id for r in compat.env_vars.rows] == list(CASES)


@pytest.mark.parametrize("rule_id", list(CASES))
def test_each_row_fails_with_its_whole_finding_and_passes_once_fixed(rule_id, tmp_path, compat):
    var, value, opts, severity, category, commands, fixed = CASES[rule_id]
    row = next(r for r in compat.env_vars.rows if r.id == rule_id)
    res = judge(machine(tmp_path, {var: value} if value is not None else {}, **opts), compat)
    (f,) = [x for x in res.findings if x.code == f"host.environment/{rule_id}"]
    # an info is a note: category NOTE, about the row's category
    if severity == "info":
        assert (f.category, f.about, f.severity) == ("NOTE", category, severity)
    else:
        assert (f.category, f.severity) == (category, severity)
    shown = f"{var}={value!r}" if value is not None else f"{var} unset"
    assert f.summary == f"{shown}: {row.why}"
    assert f.detail.startswith(row.does)
    ev = f.evidence[0]
    assert (ev.path, ev.value, ev.source) == (f"host.env.{var}", value, f"compat_data/env_vars.json row {rule_id}")
    assert f.fix.commands == commands and f.fix.url and f.fix.url in row.source
    # the fix applied: the same machine, the variable unset or set to the value the fix gives
    after = judge(machine(tmp_path, {var: fixed} if fixed is not None else {}, **opts), compat)
    assert [x.code for x in after.findings if x.code.startswith("host.environment/")] == []
    assert after.status == CheckStatus.PASSED


@pytest.mark.parametrize("var,value,opts", [
    ("CUDA_LAUNCH_BLOCKING", "0", {}),
    ("CUDA_VISIBLE_DEVICES", "GPU-8932f937", {}),  # a unique UUID prefix names GPU 0
    ("CUDA_VISIBLE_DEVICES", "1,0", {}),
    ("CUDA_VISIBLE_DEVICES", "MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/2", {}),  # cannot be told: not judged
    ("CUDA_DEVICE_ORDER", "FASTEST_FIRST", {}),  # same GPUs: the order does not matter
    ("TORCH_CUDA_ARCH_LIST", "7.0+PTX", {}),  # PTX 7.0 JIT-compiles for 8.0
    ("TORCH_CUDA_ARCH_LIST", "Ampere", {}),  # a named arch: torch.utils.cpp_extension knows them
    ("TORCH_CUDA_ARCH_LIST", "8.0;9.0a", {}),
    ("OMP_NUM_THREADS", "4,2", {}),
    ("NCCL_SOCKET_IFNAME", "^docker", {}),
    ("NCCL_SOCKET_IFNAME", "=eth0", {}),
    ("PYTORCH_CUDA_ALLOC_CONF", "backend:cudaMallocAsync", {}),
    ("PYTORCH_CUDA_ALLOC_CONF", "roundup_power2_divisions:[256:1,512:2,>:8],max_split_size_mb:512", {}),
    ("TORCH_DISTRIBUTED_DEBUG", "INFO", {}),
])
def test_harmless_values_pass(var, value, opts, tmp_path, compat):
    res = judge(machine(tmp_path, {var: value}, **opts), compat)
    assert res.status == CheckStatus.PASSED, [f.summary for f in res.findings]


@pytest.mark.parametrize("env,opts,code,severity", [
    ({"OMP_NUM_THREADS": "4"}, {"quota": 2.0}, "omp-num-threads-above-cores", "warning"),  # the cgroup quota caps
    ({"CUDA_VISIBLE_DEVICES": "-1"}, {}, "cuda-visible-devices-hides-all", "error"),
    ({"CUDA_VISIBLE_DEVICES": "GPU-deadbeef"}, {}, "cuda-visible-devices-hides-all", "error"),
    ({"CUDA_VISIBLE_DEVICES": "0,-1,1"}, {}, "cuda-visible-devices-missing-gpu", "warning"),
    ({"NCCL_P2P_DISABLE": "1"}, {"gpus": a100s(1)}, "nccl-p2p-disable", "info"),  # one GPU: nothing to peer with
    ({"NCCL_IB_DISABLE": "1"}, {"ib": False}, "nccl-ib-disable", "info"),  # no InfiniBand here
    ({"NCCL_SOCKET_IFNAME": "^eth,lo"}, {}, "nccl-socket-ifname-no-interface", "error"),  # excludes all there is
    ({"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb=128"}, {}, "pytorch-cuda-alloc-conf-syntax", "error"),
    ({"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:10"}, {}, "pytorch-cuda-alloc-conf-syntax", "error"),
    ({"PYTORCH_CUDA_ALLOC_CONF": "expandible_segments:True"}, {}, "pytorch-cuda-alloc-conf-syntax", "error"),
])
def test_the_condition_reads_the_machine(env, opts, code, severity, tmp_path, compat):
    res = judge(machine(tmp_path, env, **opts), compat)
    got = {f.code: f for f in res.findings}
    assert got[f"host.environment/{code}"].severity == severity


def test_hiding_gpus_on_a_machine_without_one_is_a_note(tmp_path, compat):
    f = machine(tmp_path, {"CUDA_VISIBLE_DEVICES": ""}, gpus=[])
    f = dataclasses.replace(f, driver=dataclasses.replace(f.driver, status=ProbeStatus.ABSENT))
    (x,) = judge(f, compat).findings
    assert (x.code, x.severity, x.about) == ("host.environment/cuda-visible-devices-hides-all", "info",
                                             "NO_GPU_VISIBLE")


def test_the_allocator_configuration_says_what_is_wrong(tmp_path, compat):
    env = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:true,max_split_size_mb=128,garbage_collection_threshold:2"}
    (f,) = judge(machine(tmp_path, env), compat).findings
    assert ("Not accepted: expandable_segments takes True or False (exactly), not 'true'; 'max_split_size_mb=128' has no ':' (the "
            "format is option:value); garbage_collection_threshold takes a number between 0.0 and 1.0 (exclusive), "
            "not '2'.") in f.detail


def test_cores_come_from_the_cgroup_quota(tmp_path, compat):
    res = judge(machine(tmp_path, {"OMP_NUM_THREADS": "4"}, quota=2.0), compat)
    (f,) = res.findings
    assert f.fix.commands == ["export OMP_NUM_THREADS=2"]
    assert [(e.path, e.value) for e in f.evidence[1:]] == [("host.cpu_logical_count", 8),
                                                          ("host.cgroup_cpu_quota", 2.0)]
    assert "4 threads for 2 usable CPUs." in f.detail


def test_unknown_facts_leave_a_row_unjudged(tmp_path, compat):
    # no nvcc on PATH: whether the arch list builds is unknown; no GPU list: the indices cannot be checked
    f = machine(tmp_path, {"TORCH_CUDA_ARCH_LIST": "3.5", "CUDA_VISIBLE_DEVICES": "0,5"}, gpus=[], nvcc=None)
    f = dataclasses.replace(f, driver=dataclasses.replace(f.driver, status=ProbeStatus.ABSENT))
    assert judge(f, compat).status == CheckStatus.PASSED
    h = machine(tmp_path, {"NCCL_SOCKET_IFNAME": "eth9"})
    h = dataclasses.replace(h, host=dataclasses.replace(h.host, network_interfaces=None))
    assert judge(h, compat).status == CheckStatus.PASSED


def test_skipped_when_the_environment_was_not_recorded(compat):
    failed = Facts(host=Host(status=ProbeStatus.FAILED, reason="crashed: OSError"))
    res = judge(failed, compat)
    assert res.status == CheckStatus.SKIPPED and "host probe did not run (failed: crashed: OSError)" in res.reason
    old = Facts(origin="snapshot", host=Host(status=ProbeStatus.OK, env={}))
    res = judge(old, compat)
    assert res.status == CheckStatus.SKIPPED and "older than compat_data/env_vars.json" in res.reason
    paste = Facts(origin="paste", paste=PasteSource(), pythons=[PythonEnv(status=ProbeStatus.OK,
                                                                       env={"LD_LIBRARY_PATH": "/x"})])
    res = judge(paste, compat)
    assert res.status == CheckStatus.SKIPPED and "the pasted text shows none" in res.reason


def test_an_older_snapshot_is_judged_on_what_it_recorded(compat):
    # envdoctor before the table recorded OMP_NUM_THREADS among a few others, not CUDA_LAUNCH_BLOCKING
    old = m.facts(m.driver("550.54.15", "12.4", a100s()), [],
                  host=m.host(cpu_logical_count=8, env={"OMP_NUM_THREADS": "64", "NCCL_DEBUG": None}))
    res = judge(old, compat)
    assert [f.code for f in res.findings] == ["host.environment/omp-num-threads-above-cores"]


def test_a_paste_is_judged_from_the_interpreter_section(compat):
    paste = Facts(origin="paste", paste=PasteSource(), pythons=[PythonEnv(
        status=ProbeStatus.OK, env={"CUDA_LAUNCH_BLOCKING": "1"})])
    (f,) = judge(paste, compat).findings
    assert f.code == "host.environment/cuda-launch-blocking"
    assert (f.evidence[0].path, f.evidence[0].value) == ("pythons[0].env.CUDA_LAUNCH_BLOCKING", "1")


def test_explain_reads_the_row():
    from envdoctor.checks.catalog import UnknownCode, explain_lines

    lines = explain_lines("host.environment/nccl-ib-disable", load_compat)
    assert lines[0] == "host.environment/nccl-ib-disable: NCCL_IB_DISABLE (host.environment, a row of " \
                       "compat_data/env_vars.json)"
    assert "When: NCCL_IB_DISABLE is 1, when InfiniBand/RoCE devices are present (otherwise: info)" in lines
    assert "How to fix: unset it" in lines
    assert any(x.startswith("Source: https://docs.nvidia.com/deeplearning/nccl/") for x in lines)
    more = explain_lines("host.environment/omp-num-threads-above-cores", load_compat)
    assert "How to fix: export OMP_NUM_THREADS=<the usable CPUs>" in more
    with pytest.raises(UnknownCode, match="has no row 'bogus'"):
        explain_lines("host.environment/bogus", load_compat)


def test_powershell_fix_on_windows(tmp_path, compat):
    f = machine(tmp_path, {"CUDA_LAUNCH_BLOCKING": "1"})
    f = dataclasses.replace(f, host=dataclasses.replace(f.host, os="Windows"))
    (x,) = judge(f, compat).findings
    assert x.fix.commands == ["Remove-Item Env:CUDA_LAUNCH_BLOCKING"]
