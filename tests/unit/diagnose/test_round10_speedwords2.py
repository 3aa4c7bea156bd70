"""Round 10 speed and memory wordings said in a paste (issue 42), judged by the watch checks at low confidence
(diagnose/readers/speed_words.py reads them, checks/_watch_words.py judges them). Excerpts of real reports from
tests/fixtures/corpus, two trackers or more per kind, and near misses from the corpus's healthy rows:

- the reporter suspects the CPU's part of the input (decoding, augmentation; the input pipeline where the paste
  says augmentation runs on the CPU) while the GPU is said idle or bursty: INPUT_CPU_BOUND (keras-001, whisper-010);
- the CPUs said at 100% and the GPU at 0% where the GPU stack is said to work with another model: INPUT_CPU_BOUND
  (tf-pose-estimation-001; byteps-001 and torch-downstream-017 were the earlier trackers of that rule);
- utilisation low most of the time and higher now and then: bursty, INPUT_BOUND (tensorflow-024, beside
  whisper-010's "very low ... for large periods of time, then a spike");
- a run several times slower on Windows with a memory-heavy load: the driver's shared-memory fallback,
  GPU_MEMORY_PRESSURE (invokeai-009, sd-webui-012); comfyui-022 (HEALTHY, 1.4x slower) stays quiet.
"""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from tests.unit.diagnose.pastes import asks, corpus_row, serious_by_code


def _serious(text: str) -> dict:
    return serious_by_code(text, load_compat())


def _categories(text: str) -> set:
    return {f.category for f in _serious(text).values()}


# ---------------------------------------------------------------------------- the input's CPU work suspected

CPU_WORK = {
    "keras-001": "I run the ssd300_train.py with VOC07-12 dataset with three GTX1080, but the each GPU-Util is always "
                 "shown  zero, as shown bellow.\nI was firstly wondering the data input pipiline is more slower than "
                 "the training operation on GPU, but the keras  says model.fit_generator,  \"The generator is run in "
                 "parallel to the model, for efficiency. For instance, this allows you to do real-time data "
                 "augmentation on images on CPU in parallel to training your model on GPU.\"",
    "whisper-010": "If I watch nvidia-smi dmon while the batch processing runs, I see very low GPU memory/core usage for "
                   "large periods of time, then a spike in both, followed by a batch of text. \n\nI speculated that "
                   "there was a bottleneck in the decoding of the audio files into mels - but it looks to me like you "
                   "do that at the start.",
}


@pytest.mark.parametrize("rid", sorted(CPU_WORK))
def test_the_inputs_cpu_work_suspected_with_the_gpu_waiting_is_input_cpu_bound(rid) -> None:
    found = _serious(CPU_WORK[rid])
    f = found["watch.bottleneck/reported-cpu"]
    assert (f.severity, f.category, f.confidence) == ("warning", "INPUT_CPU_BOUND", "low")
    assert "reporter suspects the CPU's work on the input" in f.summary
    assert asks(f, "envdoctor watch --") and asks(f, "iostat -x 1")  # the measurement that settles it
    assert "INPUT_BOUND" not in {x.category for x in found.values()}  # one verdict, the named side


def test_the_suspicion_without_the_gpu_waiting_or_without_the_cpu_work_stays_quiet() -> None:
    quiet = [
        # the GPU not said to wait: a question about speed, no symptom
        "I speculated that there was a bottleneck in the decoding of the audio files into mels.",
        # the pipeline suspected with the GPU idle, but nothing says its work is on the CPU (disk or CPU unknown)
        "The GPU-Util is always shown zero. I was wondering whether the data input pipeline is slower than the "
        "training operation on GPU.",
        # decoding named, not suspected
        "GPU-Util is always shown zero. We use ffmpeg for decoding the audio files.",
    ]
    for text in quiet:
        assert "INPUT_CPU_BOUND" not in _categories(text), text[:80]


def test_cpu_at_100_and_gpu_at_0_with_the_gpu_stack_said_to_work_is_input_cpu_bound() -> None:
    text = ("I can get the GPU's fully loaded with data (Batch size 96), but the model training isn't executing on "
            "the GPU - I see GPU utilization 0%.  I can validate that my GPU configuration works well with an MNIST "
            "pipeline and it seems to work just fine.  Any thoughts on why I can't seem to get the train steps to "
            "execute on a GPU? I stall out after \"Training started\" with CPU utilization 100%.")
    f = _serious(text)["watch.bottleneck/reported-cpu"]
    assert (f.category, f.confidence) == ("INPUT_CPU_BOUND", "low")
    assert "CPU-only build" in (f.detail or "")
    # the same figures without the GPU stack said to work: a run on the CPU altogether (deepface-001,
    # tensorflow-014 HEALTHY, lightgbm-001 HEALTHY) says nothing of its input
    bare = text.replace("I can validate that my GPU configuration works well with an MNIST pipeline and it seems to "
                        "work just fine.", "")
    assert "INPUT_CPU_BOUND" not in _categories(bare)
    for tracker, rid in [("tensorflow", "tensorflow-014"), ("lightgbm", "lightgbm-001"), ("deepface", "deepface-001"),
                         ("whisper", "whisper-011")]:
        assert not {"INPUT_CPU_BOUND", "INPUT_BOUND"} & _categories(corpus_row(tracker, rid)), rid


# ---------------------------------------------------------------------------- low most of the time, now and then more

def test_low_most_of_the_time_and_higher_now_and_then_is_bursty() -> None:
    text = ("When i'm using tensorflow for face recognition with facenet, it's very very slow. And when i check for "
            "GPU during execution, i saw that the big part of the time only 1% of GPU is ised and sometimes 29% but "
            "just one 1second.")
    f = _serious(text)["watch.bottleneck/reported-input"]
    assert (f.category, f.confidence) == ("INPUT_BOUND", "low")
    assert "big part of the time only 1%" in f.summary
    # a share of the time with one figure, or a loss that varies, is no utilisation pattern
    for quiet in ["Most of the time the GPU is at 95% utilisation.",
                  "Most of the time the loss is 2.3% lower and sometimes 5% higher than the baseline."]:
        assert not _categories(quiet) & {"INPUT_BOUND", "INPUT_CPU_BOUND"}, quiet


# ---------------------------------------------------------------------------- Windows' shared GPU memory

SPILL = {
    "invokeai-009": "### Operating system\n\nWindows\n\n### GPU model\n\nRTX3050\n\n### GPU VRAM\n\n6GB\n\n### What "
                    "happened\n\nI have an RTX 3050 and the normal generation is very fast, but the moment I add a "
                    "global IP adapter, 1 generation takes about 15 minutes. Am I doing something wrong?",
    "sd-webui-012": "I noticed this version runs slower than the gradio 4 version. The gradio 4 version runs at about "
                    "1.8-1.9 it/s , but this runs at 4s/it. I use SDXL models at 1024x1024.\n\nAlso, I get the "
                    "NORMAL_VRAM prompt when loading the bat file.",
}


@pytest.mark.parametrize("rid", sorted(SPILL))
def test_several_times_slower_on_windows_with_a_memory_heavy_load_is_the_shared_memory_fallback(rid) -> None:
    f = _serious(SPILL[rid])["watch.gpu-memory/reported-shared"]
    assert (f.severity, f.category, f.confidence) == ("warning", "GPU_MEMORY_PRESSURE", "low")
    assert "shared system memory" in f.summary and "Sysmem Fallback Policy" in f.fix.summary
    assert asks(f, "memory.used,memory.total")
    if rid == "sd-webui-012":
        assert "7.2x slower" in f.summary  # 1.8 it/s against 1/4 it/s


def test_the_fallback_needs_windows_a_large_slowdown_a_memory_load_and_no_out_of_memory() -> None:
    sd = SPILL["sd-webui-012"]
    quiet = [
        corpus_row("comfyui", "comfyui-022"),  # HEALTHY: Windows, 6 GB, VRAM, 1.1 it/s against 1.25 s/it (1.4x)
        sd.replace("4s/it", "1.2 it/s"),  # 1.5x: not the fallback's cliff
        sd.replace("bat file", "launcher"),  # Windows not said
        sd.replace("I use SDXL models at 1024x1024.", "").replace("NORMAL_VRAM prompt", "prompt"),  # no memory load
        sd + "\ntorch.cuda.OutOfMemoryError: CUDA out of memory.",  # the fallback not taken: an OOM
    ]
    for text in quiet:
        assert "GPU_MEMORY_PRESSURE" not in _categories(text), text[:80]


def test_shared_gpu_memory_said_in_use_beside_a_slow_run_is_the_spill_itself() -> None:
    # Task Manager's own term, said with an amount; the same kind's direct wording (the two rows above show it only
    # through their maintainers)
    f = _serious("Generation got very slow after the update. Task Manager shows 3.5 GB of shared GPU memory in use "
                 "on my RTX 3060.")["watch.gpu-memory/reported-shared"]
    assert (f.category, f.confidence) == ("GPU_MEMORY_PRESSURE", "low")
    assert "spill into shared system memory" in f.summary
    quiet = [
        "Task Manager shows 3.5 GB of shared GPU memory in use.",  # no slow run said
        "It is slow. Task manager: Shared GPU memory 0.0/15.9 GB",  # said not in use
        "It is slow, and it is not using shared GPU memory.",
        "Generation is very slow. I set the CUDA Sysmem Fallback Policy to Prefer No Sysmem Fallback.",  # said off
        "DataLoader is slow: shared memory (shm) is only 64 MB.",  # /dev/shm, not the GPU's
        SPILL["sd-webui-012"] + "\nSysmem fallback is disabled.",  # the fallback said off: not the cause
    ]
    for text in quiet:
        assert "GPU_MEMORY_PRESSURE" not in _categories(text), text[:80]


def test_the_whole_rows_are_right_and_the_healthy_near_misses_quiet() -> None:
    for tracker, rid, category in [("keras", "keras-001", "INPUT_CPU_BOUND"),
                                   ("whisper", "whisper-010", "INPUT_CPU_BOUND"),
                                   ("tf-pose-estimation", "tf-pose-estimation-001", "INPUT_CPU_BOUND"),
                                   ("tensorflow", "tensorflow-024", "INPUT_BOUND"),
                                   ("invokeai", "invokeai-009", "GPU_MEMORY_PRESSURE"),
                                   ("sd-webui", "sd-webui-012", "GPU_MEMORY_PRESSURE")]:
        assert category in _categories(corpus_row(tracker, rid)), rid
    # healthy rows with an out-of-memory on a card too small for the model: no memory-pressure verdict from words
    for tracker, rid in [("whisper", "whisper-001"), ("diffusers", "diffusers-002"), ("comfyui", "comfyui-020"),
                         ("torch-downstream", "torch-downstream-019")]:
        assert "GPU_MEMORY_PRESSURE" not in _categories(corpus_row(tracker, rid)), rid
