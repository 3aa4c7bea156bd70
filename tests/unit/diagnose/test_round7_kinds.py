"""Issue 42, corpus round 7 (helper corpus7): the kind fixed after the first-sight score (FIRST_SIGHT_M.md).

NCCL's bare "unhandled system error" (ncclSystemError: a system call failed) with no NCCL WARN naming the network
transport was read as an INTERCONNECT error. Three corpus threads from three trackers that show nothing more were
all fixed by giving the container /dev/shm (--ipc=host): nccl-001 (NVIDIA/nccl#473, nccl-tests in a container),
vllm-021 (MiniMax-AI/MiniMax-01#42, vLLM's image), dekr-001 (HRNet/DEKR#18, a training container); sglang-003 shows
the /dev/shm segment itself. The line alone is now a SHM_TOO_SMALL lead (a warning, medium confidence); a NCCL WARN
about NET/Socket, IB or a connect call beside it, or a pasted `docker run` that did give --shm-size / --ipc=host,
keeps it INTERCONNECT; a /dev/shm segment NCCL could not create stays a SHM_TOO_SMALL error.

Each case on invented lines of the same shape, on the corpus rows, and on a healthy NCCL log that must stay quiet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.diagnose.pastes import serious as _serious

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "corpus"




# invented lines of the shapes NCCL and torch print (not the corpus pastes)
_BARE = ("torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1691, "
         "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.19.3\n"
         "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n")


@pytest.mark.parametrize("text", [
    _BARE,
    "RuntimeError: NCCL Error 2: unhandled system error\n",
    "worker3: Test NCCL failure common.cu:891 'unhandled system error'\n",
])
def test_the_bare_system_error_is_a_shm_lead_not_an_interconnect_error(text, compat) -> None:
    got = _serious(text, compat)
    assert got["SHM_TOO_SMALL"].severity == "warning" and got["SHM_TOO_SMALL"].confidence == "medium"
    assert "INTERCONNECT" not in got


@pytest.mark.parametrize("transport", [
    "gpu07:2211:2290 [1] NCCL WARN NET/Socket : Connect to 10.3.0.12<51022> failed : No route to host\n",
    "gpu07:2211:2290 [1] NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory\n",
    "gpu07:2211:2290 [1] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.3.0.12<34919> failed : "
    "Connection refused\n",
])
def test_a_transport_named_beside_it_keeps_it_interconnect(transport, compat) -> None:
    got = _serious(transport + _BARE, compat)
    assert "INTERCONNECT" in got and "SHM_TOO_SMALL" not in got


def test_a_container_given_shared_memory_keeps_it_interconnect(compat) -> None:
    launch = "$ docker run --gpus all --shm-size=32g -v /data:/data trainer:latest torchrun --nproc_per_node 4 t.py\n"
    got = _serious(launch + _BARE, compat)
    assert "INTERCONNECT" in got and "SHM_TOO_SMALL" not in got


def test_the_segment_nccl_could_not_create_is_still_a_shm_error(compat) -> None:
    text = _BARE + "Last error:\nError while creating shared memory segment /dev/shm/nccl-aB3dEf (size 9637888)\n"
    assert _serious(text, compat)["SHM_TOO_SMALL"].severity == "error"


def test_a_working_nccl_log_stays_quiet(compat) -> None:
    text = ("node1:311:402 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>\n"
            "node1:311:402 [0] NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)\n"
            "node1:311:402 [0] NCCL INFO Channel 00/02 : 0 1\n"
            "node1:311:402 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n")
    got = _serious(text, compat)
    assert "SHM_TOO_SMALL" not in got and "INTERCONNECT" not in got


def _row(folder: str, rid: str):
    rows = json.loads((CORPUS / folder / "labels.json").read_text(encoding="utf-8"))
    row = next(r for r in rows if r["id"] == rid)
    return row, (CORPUS / folder / f"{rid}.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("folder,rid", [("nccl", "nccl-001"), ("vllm", "vllm-021"), ("dekr", "dekr-001")])
def test_corpus_rows_of_this_kind(folder: str, rid: str, compat) -> None:
    row, text = _row(folder, rid)
    assert row["labels"] == ["SHM_TOO_SMALL"]
    got = _serious(text, compat)
    assert got["SHM_TOO_SMALL"].code == "messages.signature/nccl-unhandled-system-error"
    assert "INTERCONNECT" not in got
