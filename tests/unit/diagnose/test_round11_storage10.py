"""Issue 42, corpus round 10 misses, helper storage10: two complaints said in words.

- Training bound by its storage: the data said on a hard disk or a network share (a file the reporter names put
  there, "I store mv_images.h5 on HDD not SSD"), beside the run said slow (duoduoclip-001, 3dlg-hcvc/DuoduoCLIP#9;
  torch-downstream-041's "I suspect the issue is that the data is in a HDD drive", right before and kept right):
  INPUT_STORAGE_BOUND at low confidence, asking for iostat. A slow run with no storage named (nnunet-001,
  mil-nce-001) says nothing of the storage and stays unjudged.
- A GPU held by a leftover process: the memory said not released after the program ended (xlm-001,
  facebookresearch/XLM#40), still occupied after it finished with no process in nvidia-smi (the reporter of
  apache/mxnet#17837, mxnet-004's thread), not freed by a failing run (madhawav/YOLO3-4-Py#108, cuda-apps-013's
  thread), zombie processes on the GPU: GPU_BUSY at low confidence (checks/diagnose_gpu_held.py). Memory still
  allocated in a live notebook (torchsharp-001), a GPU in use while it works (demucs-001), the GSP firmware's
  256 MB with no process (nvidia-driver-007) and a bare out-of-memory are not.
"""

from __future__ import annotations

import pytest

from tests.unit.diagnose.pastes import serious as _serious

# ---- training bound by storage, said in words (INPUT_STORAGE_BOUND; readers/speed.py said_storage/said_slow_run)


@pytest.mark.parametrize("text,quote", [
    # duoduoclip-001 (3dlg-hcvc/DuoduoCLIP#9): a file name (its dot) between the verb and the disk
    ("Regarding your training speed, I found it pretty slow using 4 x 4090, all pretraining data and configuration "
     "is default, the training time takes 0.13 it/s and one single epoch takes ~1h. Is it because I store "
     "mv_images.h5 on HDD not SSD, the mv_images.h5 is too large ~1.5T to store on an SSD.\n", "mv_images.h5 on HDD"),
    # mil-nce-001's thread (antoine77340/MIL-NCE_HowTo100M#18): the reporter's later words, a cloud bucket
    ("It takes around 2.5 hours to train epoch and seems much slower than the normal case. I keep the videos in a "
     "mounted bucket because I cannot use local SSD.\n", "mounted bucket"),
    # torch-downstream-041: the reporter's suspicion, right before this change too
    ("I am facing a typical GPU-Util too low and memory-usage high issue.\nI suspect the issue is that the data is "
     "in a HDD drive, not SSD.\n", "HDD"),
])
def test_storage_said_beside_a_slow_run_is_input_bound_on_storage(text, quote, compat) -> None:
    f = _serious(text, compat).get("INPUT_STORAGE_BOUND")
    assert f is not None, sorted(_serious(text, compat))
    assert f.confidence == "low" and quote in f.summary
    assert any("iostat" in c for c in f.fix.commands)


@pytest.mark.parametrize("text", [
    # nnunet-001 and mil-nce-001 as pasted: slow, storage never named
    "But epoch is taking too long to run as shown below\n",
    "Currently, it takes around 2.5 hours to train epoch and seems much slower than the normal case. (Total batch "
    "size 2048, 4 x 8V100, 32G)\n",
    # the storage said fast, or said not to be the disk
    "Training is slow: 2 it/s. I store the dataset on an NVMe SSD.\n",
    "Training is slow. The data is not on NFS, I copied it to local disk.\n",
    # a slow disk named with no word on the run's speed
    "I store the checkpoints on HDD.\n",
    # the data on NFS, and an install said slow, not the run
    "Our datasets are on NFS. The pip install is very slow behind the proxy.\n",
])
def test_near_miss_no_storage_or_no_complaint_is_not_storage_bound(text, compat) -> None:
    assert "INPUT_STORAGE_BOUND" not in _serious(text, compat)


# ---- a GPU held by a leftover process (GPU_BUSY; readers/gpu_held.py, checks/diagnose_gpu_held.py)


@pytest.mark.parametrize("text", [
    # xlm-001 (facebookresearch/XLM#40)
    "Hi, when the program ends, the memory of the GPU0 is released, but the other GPUs are not released. Why that ?\n",
    # apache/mxnet#17837 (mxnet-004's thread), the reporter's words
    "Finally I found the error. After the program finishes, the gpu memory is still occupied by the process. "
    "However when I use nvidia-smi, there is no process shown.\n",
    # madhawav/YOLO3-4-Py#108 (cuda-apps-013's thread)
    "102 CUDA Error: out of memory\nThe failing execution did not free the GPU memory.\n",
    # the words of a killed run's orphans
    "After I killed the training with kill -9 there are zombie processes holding GPU memory.\n",
    "nvidia-smi shows 10.5GiB used on GPU 1 but no process is listed.\n",
])
def test_a_gpu_said_held_after_its_program_is_gone_is_busy(text, compat) -> None:
    f = _serious(text, compat).get("GPU_BUSY")
    assert f is not None, sorted(_serious(text, compat))
    assert f.code == "diagnose.gpu-held/reported-leftover" and f.confidence == "low"
    assert any("fuser -v /dev/nvidia" in c for c in f.fix.commands)


@pytest.mark.parametrize("text", [
    # torchsharp-001 (HEALTHY): memory kept by a live notebook's process
    "my GPU monitoring seems to show that the memory that was allocated during execution (in a jupyter notebook) "
    "is still allocated despite the fact that I've done all I know to do to have intermediate tensors disposed\n",
    # demucs-001 (HEALTHY): in use while it runs
    "I notice the GPU is locked / still in use while it's doing that, but I'm not sure it needs it.\n",
    # nvidia-driver-007 (HEALTHY): the GSP firmware's carve-out, no process
    "GPU is passthrough in VMM. NVIDIA-smi show 256MB is used, but no process is running on GPU.\n",
    # a bare out-of-memory, as in the HEALTHY models too big for their GPU
    "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total capacity)\n",
    # memory given back when the program ends
    "When the program ends, all GPU memory is released.\n",
    # a version still in use after a crash, not memory
    "After the job crashed I am still using CUDA 11.8 on the GPU server.\n",
])
def test_near_miss_a_live_process_or_a_bare_oom_is_not_busy(text, compat) -> None:
    assert "GPU_BUSY" not in _serious(text, compat)


def test_a_pasted_table_leaves_it_to_gpu_busy(compat) -> None:
    """With the GPUs' memory readings and their process list in the paste, the live check judges the table; the
    words add no second finding. A table cut before its Processes box leaves the memory's owner unknown: the words
    are judged then."""
    table = (
        "Even after the program ends the memory is not released:\n"
        "+-----------------------------------------------------------------------------+\n"
        "| NVIDIA-SMI 410.48                 Driver Version: 410.48                    |\n"
        "|-------------------------------+----------------------+----------------------+\n"
        "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
        "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
        "|===============================+======================+======================|\n"
        "|   0  Tesla P100-SXM2...  Off  | 00000000:05:00.0 Off |                    0 |\n"
        "| N/A   36C    P0    41W / 300W |  12799MiB / 16280MiB |      0%      Default |\n"
        "+-------------------------------+----------------------+----------------------+\n")
    f = _serious(table, compat).get("GPU_BUSY")
    # the table is cut before its Processes box: no process list, so the words are judged (not gpu.busy's
    # "no visible process", which needs the list)
    assert f is not None and f.code == "diagnose.gpu-held/reported-leftover"
    listed = table + ("\n+-----------------------------------------------------------------------------+\n"
                      "| Processes:                                                       GPU Memory |\n"
                      "|  GPU       PID   Type   Process name                             Usage      |\n"
                      "|=============================================================================|\n"
                      "|  No running processes found                                                 |\n"
                      "+-----------------------------------------------------------------------------+\n")
    f = _serious(listed, compat).get("GPU_BUSY")
    assert f is not None and f.code.startswith("gpu.busy/")
