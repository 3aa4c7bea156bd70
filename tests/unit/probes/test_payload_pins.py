"""The payload folder runs in the target, where envdoctor cannot be imported, so it keeps stdlib copies of a few of
envdoctor's rules. These tests hold each copy to the rule it copies: the same answers on the same inputs."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

from envdoctor._payload import common, elf, libraries
from envdoctor.checks import _shadowing
from envdoctor.domain import arch, pci
from envdoctor.model.facts import normalize_name
from envdoctor.probes import cudnn

NAMES = ["torch", "Flash_Attn", "flash-attn", "nvidia.cudnn--cu12", "  Torch  ", "a-_.b", "zope.interface",
         "PyYAML", "ruamel.yaml.clib", "x__y", "-lead", "trail_", "Ünïcode_Pkg", "a..b--c__d"]


@pytest.mark.parametrize("name", NAMES)
def test_pep503_names_as_facts_normalises_them(name: str) -> None:
    assert common.normalize_name(name) == normalize_name(name)


# (domain, bus, device) as torch's device properties give them; 0x10000: Intel VMD's domain (five hex digits)
ADDRESSES = [(0, 0x3B, 0), (0, 0, 0), (1, 0xFF, 0x1F), (0x10000, 0x01, 0x00), (0xFFFF, 0x8A, 0x02)]


@pytest.mark.parametrize("dom, bus, dev", ADDRESSES)
def test_pci_key_is_domain_bus_key(dom: int, bus: int, dev: int) -> None:
    props = types.SimpleNamespace(pci_domain_id=dom, pci_bus_id=bus, pci_device_id=dev)
    key = common.pci_key(props)
    # the key the payload writes is already bus_key's normal form, and names the same device as NVML's spelling
    assert pci.bus_key(key) == key
    assert key == pci.bus_key(f"{dom:08X}:{bus:02X}:{dev:02X}.0")
    assert pci.parse_bdf(key)[:3] == (dom, bus, dev)


def test_pci_key_without_the_fields_is_unknown() -> None:
    assert common.pci_key(types.SimpleNamespace(name="old torch")) is None


@pytest.mark.parametrize("sm", [35, 50, 61, 70, 75, 80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121])
def test_fatbin_arch_names_read_as_domain_arch_names(sm: int) -> None:
    """What the payload names an architecture found in a fat binary is what domain.arch reads back and writes."""
    scan = {"fatbins": 3, "sass": {sm: 3}, "ptx": {sm: 1}}  # PTX in one kernel of three: set apart
    main, partial = elf.arch_list_from_fatbin(scan)
    assert main == [f"sm_{sm}"] and partial == [f"compute_{sm}"]
    cc = arch.arch_cc(main[0])
    assert cc == f"{sm // 10}.{sm % 10}" and arch.arch_cc(partial[0]) == cc
    assert arch.sm_name(cc) == main[0]


# one file name per family the payload reads, as the wheels, conda and the CUDA toolkit name them
FAMILY_FILES = {
    "cudnn": ["libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_ops_infer.so.8.9.7"],
    "cublas": ["libcublas.so.12", "libcublasLt.so.13.1.0.3"], "nccl": ["libnccl.so.2", "libnccl.so.2.27.7"],
    "nvjitlink": ["libnvJitLink.so.13"], "cudart": ["libcudart.so.12", "libcudart-d0da41ae.so.11.0"],
    "cufft": ["libcufft.so.11"], "curand": ["libcurand.so.10"], "cusparse": ["libcusparse.so.12"],
    "cusparselt": ["libcusparseLt.so.0"], "cusolver": ["libcusolver.so.11"], "nvrtc": ["libnvrtc.so.13"],
    "nvshmem": ["libnvshmem_host.so.3"],
}


@pytest.mark.parametrize("family", sorted(FAMILY_FILES))
def test_library_families_are_the_ones_the_shadowing_check_knows(family: str) -> None:
    for name in FAMILY_FILES[family]:
        assert libraries.lib_family(name) == family, name
    assert family in _shadowing.WHEELS
    assert set(FAMILY_FILES) == set(_shadowing.WHEELS)  # and no family of the check is missing here


@pytest.mark.parametrize("name, family, text", [
    ("libcublasLt.so.12.4.5.8", "cublas", b""),
    ("libnccl.so.2", "nccl", b"\0junk NCCL version 2.27.7+cuda12.9\0"),
    ("libnccl.so.2.21.5", "nccl", b"no text"),
    ("libcudnn.so.9", "cudnn", b"nothing"),
])
def test_library_versions_as_envdoctors_own_reader_reads_them(tmp_path: Path, name: str, family: str,
                                                              text: bytes) -> None:
    """Copies outside the wheels (no owning wheel): the payload's library_version and probes/cudnn's
    library_file_version (envdoctor's own process, for system copies) give the same version from the same file."""
    path = tmp_path / name
    path.write_bytes(b"\x7fELF" + text)
    assert libraries.library_version(str(path), family)[0] == cudnn.library_file_version(str(path), family)[0]


TORCH_LIBRARY_NAMES = ["libc10.so", "libc10_cuda.so", "libtorch.so", "libtorch_cpu.so", "libtorch_cuda.so",
                       "libtorch_python.so", "libshm.so", "libtorch_global_deps.so", "libc10.so.1", "libcudart.so.12",
                       "libtorchvision.so", "libc.so.6", "libstdc++.so.6", "libtorch-x.so"]


@pytest.mark.parametrize("name", TORCH_LIBRARY_NAMES)
def test_torch_library_names_as_the_extension_check_reads_them(name: str) -> None:
    # the payload loads (and resolves against) the libraries the check calls torch's own in an extension's DT_NEEDED
    from envdoctor._payload import extension_build
    from envdoctor.checks import packages_extension_build

    assert bool(extension_build.TORCH_LIBRARY.match(name)) == bool(packages_extension_build._TORCH_LIB.match(name))
