"""What a variable's value means as its owner documents it (envdoctor/domain/envvars.py)."""

from __future__ import annotations

import pytest

from envdoctor.domain.envvars import (
    alloc_conf_problems,
    arch_entry_cc,
    arch_entry_targets,
    arch_list_entries,
    ifname_matches,
    visible_devices,
)


@pytest.mark.parametrize("value", [
    "", "expandable_segments:True", "backend:native", "backend:cudaMallocAsync",
    "max_split_size_mb:128,garbage_collection_threshold:0.6", "roundup_power2_divisions:4",
    "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", "pinned_use_cuda_host_register:True,pinned_num_register_threads:8",
    " expandable_segments:False , max_non_split_rounding_mb:1024 ",
])
def test_alloc_conf_accepted(value):
    assert alloc_conf_problems(value) == []


@pytest.mark.parametrize("value,words", [
    ("expandable_segments:true", "True or False (exactly)"),
    ("max_split_size_mb=128", "has no ':'"),
    ("max_split_size_mb:20", "more than 20 MB"),
    ("garbage_collection_threshold:1", "between 0.0 and 1.0"),
    ("backend:cudaMalloc", "is not one of native, cudaMallocAsync"),
    ("roundup_power2_divisions:[256-1]", "a number or a list"),
    ("expandible_segments:True", "'expandible_segments' is not an allocator option"),
    ("expandable_segments:True,", "a stray comma"),
])
def test_alloc_conf_refused_with_the_reason(value, words):
    problems = alloc_conf_problems(value)
    assert len(problems) == 1 and words in problems[0], problems


@pytest.mark.parametrize("value,selected", [
    ("eth", ["eth0", "eth1"]), ("=eth0", ["eth0"]), ("=eth", []), ("ib,eth1", ["eth1", "ib0"]),
    ("^docker", ["eth0", "eth1", "ib0"]),  # exclusion never selects loopback
    ("^=eth0", ["docker0", "eth1", "ib0"]), ("lo", ["lo"]), ("enp", []),
])
def test_nccl_socket_ifname(value, selected):
    assert ifname_matches(value, ["docker0", "eth0", "eth1", "ib0", "lo"]) == selected


UUIDS = ["GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", "GPU-89aa0000-0000-0000-0000-000000000000"]


@pytest.mark.parametrize("value,count,seen,stop", [
    ("", 2, [], None),
    ("-1", None, [], "-1"),  # hides every GPU whatever the machine has
    ("1,0", 2, [1, 0], None),
    ("0,2,-1,1", 3, [0, 2], "-1"),  # the programming guide's own example
    ("0,5", 2, [0], "5"),
    ("0", None, None, None),  # an index without the GPU list: unknown
    ("GPU-8932f937", 2, [0], None),  # a unique prefix
    ("GPU-89", 2, [], "GPU-89"),  # a prefix two GPUs share names none
    ("MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/2", 2, None, None),
    ("none", 2, [], "none"),
])
def test_cuda_visible_devices(value, count, seen, stop):
    assert visible_devices(value, count, UUIDS[:count] if count else []) == (seen, stop)


def test_torch_cuda_arch_list():
    assert arch_list_entries(" 8.0 8.6+PTX;9.0a ") == ["8.0", "8.6+PTX", "9.0a"]
    assert [arch_entry_cc(e) for e in ("8.6+PTX", "9.0a", "12.0f", "Ampere")] == ["8.6", "9.0", "12.0", None]
    assert arch_entry_targets("8.6+PTX") == ["sm_86", "compute_86"]
    assert arch_entry_targets("9.0a") == ["sm_90a"] and arch_entry_targets("Hopper") == []
