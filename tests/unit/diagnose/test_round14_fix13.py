"""Issue 42, corpus round 13's misses (helper fix13), each read as a kind.

- "the provided PTX was compiled with an unsupported toolchain" (CUDA_ERROR_UNSUPPORTED_PTX_VERSION) where the
  paste shows the driver's CUDA at or above torch's build CUDA: torch's own kernels load there, so the PTX the
  driver could not JIT is an extension's built on the machine (pointnet2-pytorch-001: pointnet2_ops built without
  8.6 in TORCH_CUDA_ARCH_LIST). Both readings (no SASS for this GPU; an nvcc newer than the driver) at warning,
  never the old-driver error on its own. Where the driver's CUDA is unknown or below torch's, or no torch is in
  the paste (cuda-apps, text-generation-inference, openmm, diffvg), the old-driver error stays.
- The facts it needs, said as settings: the driver's CUDA as "CUDA Driver Version: 11.4" (NVIDIA DeepStream's
  `deepstream-app --version-all`, deviceQuery-style samples, GPU miners' version blocks) or "Cuda driver in my
  Ubuntu machine: 11.3" (pointnet2-pytorch-001), and torch's CUDA on its settings item ("2. Pytorch: ver 1.9,
  with cuda 11.1"); the driver API's integer ("CUDA Driver Version: 13000", nvbandwidth) is not a release.
"""

from __future__ import annotations

from tests.unit.diagnose.pastes import findings as _findings
from tests.unit.diagnose.pastes import serious as _serious

PTX = "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.\n"
# pointnet2-pytorch-001 (erikwijmans/Pointnet2_PyTorch#175)
POINTNET2 = ("Thanks for the great work! I try to run the code, and get this error:\n"
             "```CUDA error: the provided PTX was compiled with an unsupported toolchain.```\n\n"
             "This error only happens when I import as ```from pointnet2_ops import pointnet2_utils```\n"
             "1. Python: ver 3.9\n2. Pytorch: ver 1.9, with cuda 11.1\n"
             "3. Cuda driver in my Ubuntu machine: 11.3\n")
# the driver's CUDA as DeepStream's `deepstream-app --version-all` prints it, beside a torch settings item
DEEPSTREAM = ("deepstream-app version 6.0.0\nDeepStreamSDK 6.0.0\nCUDA Driver Version: 11.4\n"
              "CUDA Runtime Version: 11.4\n- torch: 1.10.0 with CUDA 11.3\n" + PTX)


def _by_category(text, compat):
    return {f.category: f for f in _findings(text, compat)}


def test_ptx_toolchain_with_a_driver_new_enough_for_torch_is_the_extension_build_at_warning(compat) -> None:
    for text in (POINTNET2, DEEPSTREAM):
        got = _serious(text, compat)
        assert "THIRD_PARTY_EXTENSION_MISMATCH" in got, sorted(got)
        assert got["THIRD_PARTY_EXTENSION_MISMATCH"].severity == "warning"
        # the old-driver reading stays, as a warning beside it, never an error of its own
        assert got["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].severity == "warning"
        assert not [f for f in _findings(text, compat) if f.severity == "error"]
        fix = got["THIRD_PARTY_EXTENSION_MISMATCH"].fix.summary
        assert "TORCH_CUDA_ARCH_LIST" in fix and "driver" in fix


def test_near_miss_ptx_toolchain_without_the_drivers_cuda_above_torchs_stays_the_old_driver(compat) -> None:
    below = PTX + "2. Pytorch: ver 1.9, with cuda 11.1\n3. Cuda driver in my Ubuntu machine: 11.0\n"
    # text-generation-inference-001: a driver version, no torch CUDA; cuda-apps-006: no torch at all, and the
    # driver API's integer version
    tgi = PTX + "Driver Version: 450.80.02\n"
    nvbandwidth = ("CUDA Runtime Version: 13000\nCUDA Driver Version: 13000\nDriver Version: 580.126.09\n"
                   "[cudaErrorUnsupportedPtxVersion] the provided PTX was compiled with an unsupported toolchain. "
                   "in expression cudaGetLastError()\n")
    # diffvg-001: an extension built from source, torch named, the driver not shown
    diffvg = ("CUDA Runtime Error: the provided PTX was compiled with an unsupported toolchain. at "
              "diffvg/scene.cpp:35\n\nMy torch version is 1.8.1.\n")
    for text in (below, tgi, nvbandwidth, diffvg):
        got = _by_category(text, compat)
        assert got["DRIVER_TOO_OLD_FOR_TORCH_CUDA"].severity == "error", text
        assert "THIRD_PARTY_EXTENSION_MISMATCH" not in got, text


def test_settings_items_give_the_drivers_cuda_and_torchs_cuda_a_sentence_does_not(compat) -> None:
    from envdoctor.diagnose.engine import build_facts, read_all

    def facts(text):
        return build_facts(read_all(text, compat), text)

    f = facts(DEEPSTREAM)
    assert f.driver.cuda_driver_version == "11.4"
    assert f.pythons[0].torch.cuda == "11.3"
    f = facts(POINTNET2)
    assert f.driver.cuda_driver_version == "11.3" and f.pythons[0].torch.cuda == "11.1"
    f = facts("CUDA Driver Version: 13000\nThe README says to install Torch 1.13 with CUDA 11.8.\n")
    assert f.driver.cuda_driver_version is None
    assert not f.pythons or f.pythons[0].torch is None or f.pythons[0].torch.cuda is None
