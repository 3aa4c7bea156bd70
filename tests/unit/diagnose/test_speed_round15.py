"""Issue 42, round 15 (helper speed): the speed symptoms of pasted reports judged by the watch checks.

- the time-shape of a slowdown: full speed first, then long stops with the GPU at 0%, in a run over several
  machines (watch.bottleneck/reported-drained, SLOW_STORAGE, low): the input ran dry once the page cache and the
  loader's prefetch were used up, and the data those machines share is the likely limit. The same words on one
  machine, a slowdown that creeps, busy CPUs or a checkpoint beside the stops keep the generic reported-stalls
  (INPUT_BOUND) or stay quiet;
- one GPU said to work while several were given ("only one gpu working while requesting 4", "tune will only run
  on 1 GPU"): the others idle (watch.idle-gpu/reported-unused, GPU_IDLE_UNUSED, low); a GPU count seen is not it.

Excerpts are real reports' (the corpus's rows, ../shared/examples/reports-batch5/414.txt) except one constructed
variant, marked as such: the drained shape on several machines rests on one labelled report (horovod#824)."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.diagnose.readers.base import Paste, clean_lines
from envdoctor.diagnose.readers.speed_words import said_symptoms
from tests.paths import SHARED
from tests.unit.diagnose.pastes import asks, corpus_row, serious_by_code

REPORT_414 = SHARED / "examples" / "reports-batch5" / "414.txt"


def _serious(text: str) -> dict:
    return serious_by_code(text, load_compat())


# ---------------------------------------------------------------------------- full speed, then stops: drained

DRAINED = {
    # horovod/horovod#824 (reports-batch5/414): NFS shared by both servers
    "horovod": "I use 8 GPUs on 2 servers to train the model, at first the training speed can reach near 200 "
               "images/sec, then after several steps, the training process get stunned for a long time(during which "
               "the GPU capacity drop to 0%)",
    # a constructed variant in other words (nodes, "freezes", "pauses"): no second labelled report shows this shape
    # on several machines; public threads with stops at 0% on all GPUs and a storage cause are one-machine ones
    # (tensorpack/tensorpack#321: the data on a network mount; ylsung/VL_adapter#12: hdf5 reads), which keep the
    # generic finding here
    "variant": "Training on 2 nodes with 4 GPUs each: at the beginning it runs at full speed, then it freezes for "
                  "several minutes at a time and nvidia-smi shows the GPU util goes to 0% during the pauses.",
}


@pytest.mark.parametrize("name", sorted(DRAINED))
def test_full_speed_then_long_stops_at_0_on_several_machines_name_the_storage(name) -> None:
    found = _serious(DRAINED[name])
    f = found["watch.bottleneck/reported-drained"]
    assert (f.severity, f.category, f.confidence) == ("warning", "SLOW_STORAGE", "low")
    assert "several machines" in f.summary and "likely limit" in f.summary
    assert asks(f, "df -hT") and asks(f, "iostat -x 1")
    assert "slower peer" in (f.detail or "")  # the other reading, said
    assert "watch.bottleneck/reported-stalls" not in found


@pytest.mark.skipif(not REPORT_414.exists(), reason="../shared/examples not present (a bare clone)")
def test_the_shared_example_414_is_right() -> None:
    found = _serious(REPORT_414.read_text(encoding="utf-8"))
    assert {f.category for f in found.values()} == {"SLOW_STORAGE"}


@pytest.mark.parametrize("text", [
    # one machine: where the data lives is anyone's guess, the generic stall finding stays
    "At first training runs at 180 images/sec, then it gets stuck for a long time and the GPU util drops to 0%.",
    # a checkpoint written beside the stops (CHECKPOINT_STALL's shape), on two servers
    "On 2 servers, at first it is fast, then it stalls for several minutes while saving the checkpoint, the GPU "
    "util goes to 0%.",
    # the CPUs said busy during the stops, on two nodes
    "With 2 nodes, at first the speed is fine, then it hangs for a long time, GPU util drops to 0% and the CPU is "
    "at 100%.",
])
def test_the_same_stops_elsewhere_keep_the_generic_finding(text) -> None:
    found = _serious(text)
    assert "watch.bottleneck/reported-drained" not in found, text
    assert found["watch.bottleneck/reported-stalls"].category == "INPUT_BOUND"


@pytest.mark.parametrize("tracker,rid", [("centernet", "centernet-001"),      # CPU_CONTENDED: "longer and longer"
                                         ("tensorflow", "tensorflow-025"),    # GPU_THROTTLED: "deteriorates"
                                         ("horovod", "horovod-002"),          # HEALTHY: a hang
                                         ("pytorch-caney", "pytorch-caney-001")])  # CPU_STARVED: Lustre blamed
def test_slowdowns_with_another_label_do_not_name_the_storage(tracker, rid) -> None:
    found = _serious(corpus_row(tracker, rid))
    assert "SLOW_STORAGE" not in {f.category for f in found.values()}, rid


def test_a_slowdown_said_to_creep_is_not_the_drained_shape() -> None:
    s = said_symptoms(Paste(clean_lines(
        "On 2 servers, at first it is fast, then the step time goes longer and longer and it gets stuck for a long "
        "time and the GPU util drops to 0%.")))
    assert s is not None and s.get("gradual")
    assert "watch.bottleneck/reported-drained" not in _serious(
        "On 2 servers, at first it is fast, then the step time goes longer and longer and it gets stuck for a long "
        "time and the GPU util drops to 0%.")


# ---------------------------------------------------------------------------- one GPU works of several given

ONLY_ONE = {
    "adaface-001": ("adaface", "only one gpu working while requesting 4 with slurm", 3),
    "ray-006": ("ray", "There are 4 gpus and I am specifying that in the config file. I am able to successfully run "
                       "the script with no errors but tune will only run on 1 GPU (verified through nvidia-smi).", 3),
}


@pytest.mark.parametrize("rid", sorted(ONLY_ONE))
def test_one_gpu_said_to_work_of_several_given_is_gpus_left_idle(rid) -> None:
    _, text, idle = ONLY_ONE[rid]
    f = _serious(text)["watch.idle-gpu/reported-unused"]
    assert (f.category, f.confidence) == ("GPU_IDLE_UNUSED", "low")
    assert f.summary.startswith(f"{idle} GPUs given to the run do no work")


def test_the_adaface_row_is_right() -> None:
    f = _serious(corpus_row("adaface", "adaface-001"))["watch.idle-gpu/reported-unused"]
    assert f.category == "GPU_IDLE_UNUSED" and "srun" in (f.fix.summary if f.fix else "")


@pytest.mark.parametrize("text", [
    "and `torch.cuda.device_count()` shows only one gpu. How could I solve it?",  # mig-003: visibility, not use
    "I only have one GPU, is 4 hours per epoch normal?",
    "only one gpu working, is that expected?",  # no count of GPUs given
    "Only 1 GPU is used because I set CUDA_VISIBLE_DEVICES=0; there is nothing wrong, the speed is fine.",
])
def test_one_gpu_words_without_several_given_stay_quiet(text) -> None:
    s = said_symptoms(Paste(clean_lines(text))) or {}
    assert not s.get("others_idle"), text


# ---------------------------------------------------------------------------- loader workers far beyond the CPUs

WORKERS = {
    # facebookresearch/deit#81 (torch-downstream-015): the fix was --num_workers 4
    "deit": ("We use 32 cpu and 8 gpu, the total memory(RAM) is 200G. The training command line is\n"
             "`python -m torch.distributed.launch \\\n--nproc_per_node=8 --use_env main.py \\\n--num_workers 32 \\\n"
             "--model deit_tiny_patch16_224 \\\n--batch-size 128`", (8, 32, 32)),
    # open-mmlab/mmdetection#353's words ("I set workers_per_gpu=20 and the speed come slower"; the maintainer:
    # "workers_per_gpu=20 requires 20*8=160 cpu cores"), with its 8-GPU launch and a CPU count written in (constructed:
    # the thread gives neither in the reporter's paste)
    "mmdetection": ("I set workers_per_gpu=20 and the speed come slower. The server has 32 CPU cores.\n"
                    "./tools/dist_train.sh configs/ssd300_coco.py 8", (8, 20, 32)),
}


@pytest.mark.parametrize("name", sorted(WORKERS))
def test_loader_workers_far_beyond_the_cpus_are_input_bound_on_the_cpu(name) -> None:
    text, (procs, workers, cpus) = WORKERS[name]
    f = _serious(text)["watch.bottleneck/reported-workers"]
    assert (f.category, f.confidence) == ("INPUT_CPU_BOUND", "low")
    assert f"{procs * workers} loader processes for the {cpus} CPUs" in f.summary
    assert f.fix is not None and f.fix.commands == [f"--num_workers {cpus // procs - 1}   # {cpus} CPUs for {procs} "
                                                    "processes per node"]


def test_the_deit_row_is_right() -> None:
    found = _serious(corpus_row("torch-downstream", "torch-downstream-015"))
    assert found["watch.bottleneck/reported-workers"].category == "INPUT_CPU_BOUND"


@pytest.mark.parametrize("text", [
    # workers that fit: 8 processes x 4 workers on 64 cores
    "We have 64 cores and 8 GPUs: python -m torch.distributed.launch --nproc_per_node=8 main.py --num_workers 4",
    # no CPU count said: the oversubscription cannot be computed
    "python -m torch.distributed.launch --nproc_per_node=8 main.py --num_workers 32",
    # one process: num_workers alone against the CPUs is PyTorch's own warning's business, not this rule's
    "We use 8 cpu. python train.py --num_workers 16",
    # CUDA cores are no CPUs
    "The card has 640 CUDA cores; torchrun --nproc_per_node=2 train.py --num_workers 8",
])
def test_workers_that_fit_or_cannot_be_counted_stay_quiet(text) -> None:
    s = said_symptoms(Paste(clean_lines(text))) or {}
    assert not s.get("workers_over"), text
