"""Speed symptoms said in words, and a throughput log's stops (issue 42): diagnose/readers/speed_words.py reads them
into the paste's watch recording, checks/_watch_words.py judges them at low confidence with the measurement that
would settle it. The lines are real reports' (tests/fixtures/corpus/<tracker>/<id>.txt and
../shared/examples/reports-batch5/414.txt), several trackers per kind; the quiet cases are the corpus's healthy
rows and reports that talk about speed or utilisation without one of these patterns."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.diagnose.readers.base import Paste, clean_lines
from envdoctor.diagnose.readers.speed_words import said_symptoms, throughput
from tests.paths import FIXTURES, SHARED
from tests.unit.diagnose.pastes import asks, corpus_row, findings, serious_by_code

CORPUS = FIXTURES / "corpus"


def _serious(text: str) -> dict:
    return serious_by_code(text, load_compat())


# utilisation that comes and goes: the input-pattern rule, from words (four trackers)
BURSTY = {
    "preview-001": "Hi, Thank you for your codes. And I changed to another benchmark, but the volatile gpu-util is very "
                   "low and fluctuant.  Can yo give me some advice about it. Thank you very much!",
    "lingvo-001": "In locally sync mode, the GPU utilization is unstable (sometime 100%, sometime 0%), and the average "
                  "GPU utilization is about 60%. I think this question may caused by IO when data feeding. Any ways to "
                  "solve it?",
    "tensorflow-022": "I don't know, maybe I do something wrong but I have GeForce GTX 1080 and see periodicaly used gpu, "
                      "but not constantly usage and train process is too slow (ofcause with CPU it is tooo slow)",
    "whisper-010": "If I watch nvidia-smi dmon while the batch processing runs, I see very low GPU memory/core usage for "
                   "large periods of time, then a spike in both, followed by a batch of text. ",
}


@pytest.mark.parametrize("rid", sorted(BURSTY))
def test_utilisation_said_to_come_and_go_is_input_bound_at_low_confidence(rid) -> None:
    f = _serious(BURSTY[rid])["watch.bottleneck/reported-input"]
    assert (f.severity, f.category, f.confidence) == ("warning", "INPUT_BOUND", "low")
    assert "by the reporter's account" in f.summary
    assert asks(f, "nvidia-smi dmon") and asks(f, "iostat -x 1") and asks(f, "envdoctor watch --")


def test_the_whole_rows_are_right() -> None:
    for tracker, rid, code, category in [
            ("preview", "preview-001", "watch.bottleneck/reported-input", "INPUT_BOUND"),
            ("lingvo", "lingvo-001", "watch.bottleneck/reported-input", "INPUT_BOUND"),
            ("tensorflow", "tensorflow-022", "watch.bottleneck/reported-input", "INPUT_BOUND"),
            ("byteps", "byteps-001", "watch.bottleneck/reported-cpu", "INPUT_CPU_BOUND"),
            ("torch-downstream", "torch-downstream-017", "watch.bottleneck/reported-cpu", "INPUT_CPU_BOUND"),
            ("torch-downstream", "torch-downstream-016", "watch.dataloader/reported", "DATALOADER_IN_MAIN_PROCESS"),
            ("ray", "ray-006", "watch.idle-gpu/reported-unused", "GPU_IDLE_UNUSED")]:
        found = _serious(corpus_row(tracker, rid))
        assert code in found and found[code].category == category, (rid, sorted(found))
        assert not [f for f in found.values() if f.severity == "error"], rid


# the CPUs said busy while a GPU that the paste shows at work waits (two trackers)
CPU_BUSY = {
    "byteps-001": "Training runs on GPU normally. It is werid that as soon as invoking `evaluate`, CPU usage skyrockets "
                  "to ~87% (the worker has 48 CPUs) and there is no GPU usage. And It takes a long time to execute "
                  "`evaluate` function, which is too slow. This problem occurs every time.",
    "torch-downstream-017": "dataloader seems using only single process to handle image processing, num_workers "
                            "waiting 1 process. gpu is fast ,but the cpu is slow.\n\nwe are using SLURM . 8  A100 GPU "
                            ", each task with num_workers =8 . you can see in the snapshot only 8 cpu processes 100% "
                            "working",
}


@pytest.mark.parametrize("rid", sorted(CPU_BUSY))
def test_cpus_said_busy_while_a_working_gpu_waits_is_input_cpu_bound(rid) -> None:
    f = _serious(CPU_BUSY[rid])["watch.bottleneck/reported-cpu"]
    assert (f.category, f.confidence) == ("INPUT_CPU_BOUND", "low")
    assert asks(f, "envdoctor watch --")
    assert "CPU-only build" in (f.detail or "")  # the alternative the working GPU rules out is said


def test_cpu_busy_and_gpu_idle_without_the_gpu_at_work_stays_quiet() -> None:
    # the same figures are a run computing on the CPU altogether: no input verdict without the GPU seen at work
    quiet = [
        corpus_row("tensorflow", "tensorflow-014"),  # HEALTHY: stable-baselines RL, "CPU utilization reaches 100%,but GPU is very low"
        corpus_row("deepface", "deepface-001"),  # inference on the CPU: "the cpu usage is high and gpu usage ... is none"
        "When processing request, the cpu usage is high and gpu usage displayed with nvidia-smi is none.",
    ]
    for text in quiet:
        assert not [c for c in _serious(text) if c.startswith(("watch.bottleneck", "watch.dataloader"))], text[:80]


def test_num_workers_0_said_beside_a_slow_run_is_the_loader_in_the_main_process() -> None:
    f = _serious(corpus_row("torch-downstream", "torch-downstream-016"))["watch.dataloader/reported"]
    assert (f.category, f.confidence) == ("DATALOADER_IN_MAIN_PROCESS", "low")
    assert "num_workers to 0" in f.summary
    # num_workers 0 mentioned without a slow run, or another count, says nothing
    assert not findings("My DataLoader uses num_workers=0 and batch_size=32.", load_compat())
    assert not said_symptoms(Paste(["The training is slow. each task with num_workers =8 ."]))


def test_other_gpus_said_idle_is_a_gpu_that_does_no_work() -> None:
    f = _serious(corpus_row("ray", "ray-006"))["watch.idle-gpu/reported-unused"]
    assert (f.category, f.confidence) == ("GPU_IDLE_UNUSED", "low")
    assert f.summary.startswith("3 GPUs given to the run do no work") and "remain idle" in f.summary
    assert asks(f, "nvidia-smi dmon")
    # GPUs enumerated in another order than nvidia-smi's is no idle GPU (digits-001, HEALTHY)
    assert not [c for c in _serious(corpus_row("digits", "digits-001")) if c.startswith("watch.")]


REPORT_414 = SHARED / "examples" / "reports-batch5" / "414.txt"


def test_a_tf_cnn_benchmarks_log_gives_the_slow_span() -> None:
    lines = ["990     images/sec: 195.8 +/- 0.5 (jitter = 15.2)       7.106",
             "1000    images/sec: 195.8 +/- 0.5 (jitter = 15.1)       7.050",
             "1000    images/sec: 195.8 +/- 0.5 (jitter = 14.9)       7.049",
             "1010    images/sec: 186.6 +/- 0.5 (jitter = 14.8)       7.268"]
    tp = throughput(Paste(lines))
    # the figure is batch / mean step time: 1010/186.6 - 1000/195.8 batches' time for 10 steps, 10/195.8 usually
    assert tp is not None and (tp["from_step"], tp["to_step"]) == (1000, 1010)
    assert tp["slowdown_x"] == pytest.approx((1010 / 186.6 - 1000 / 195.8) / (10 / 195.8), abs=0.05)
    steady = [ln.replace("186.6", "195.8") for ln in lines]
    assert throughput(Paste(steady)) is None


@pytest.mark.skipif(not REPORT_414.exists(), reason="../shared/examples not present (a bare clone)")
def test_long_stops_with_the_gpu_at_0_after_a_fast_start_over_two_servers_name_the_storage() -> None:
    found = _serious(REPORT_414.read_text(encoding="utf-8"))
    f = found["watch.bottleneck/reported-drained"]  # the time-shape rule (test_speed_round15.py)
    assert (f.category, f.confidence) == ("SLOW_STORAGE", "low")
    assert "GPU at 0%" in f.summary and "about 6x" in f.summary and "several machines" in f.summary
    assert "network filesystem" in (f.detail or "") and "slower peer" in (f.detail or "")
    assert asks(f, "df -hT /path/to/data") and asks(f, "iostat -x 1")
    assert "watch.bottleneck/reported-stalls" not in found  # one root cause, one finding


def test_stops_said_without_the_gpu_idle_or_a_log_stay_quiet() -> None:
    for text in [corpus_row("horovod", "horovod-002"),  # HEALTHY: "gets stuck forever" (a hang, no speed pattern)
                 "The training hangs for several minutes at the first allreduce and then continues.",
                 "NCCL gets stuck for a long time and GPU utilization stays at 100%."]:
        assert not [c for c in _serious(text) if c.startswith("watch.")], text[:80]


@pytest.mark.parametrize("text", [
    "the loss is unstable (sometimes 2.3, sometimes 0.5) while training on the GPU",  # loss, not utilisation
    "I check the gpu-util when I run the code, while it reminds 4%?",  # torch-downstream-026: steady, a figure
    "the model was running with less than 10% GPU usage. Why is this happening",  # torch-downstream-027
    "I was expecting the gpu usage to shoot up to around 90-100%, as when i mine ether",  # cuda-apps-015
    "The other GPUs are used by another user.",
])
def test_speed_talk_that_is_none_of_these_patterns_stays_quiet(text) -> None:
    assert said_symptoms(Paste(clean_lines(text))) is None


def test_the_healthy_rows_stay_quiet() -> None:
    """Every HEALTHY row of the corpus, of the repository's own labelled pastes and of the shared examples (where
    present) says none of the judged patterns."""
    import json
    folders = [d for d in sorted(CORPUS.glob("*/")) + [FIXTURES / "pastes"] + sorted((SHARED / "examples").glob("*/"))
               if (d / "labels.json").exists()]
    paths = [d / f"{r['id']}.txt" for d in folders
             for r in json.loads((d / "labels.json").read_text(encoding="utf-8")) if "HEALTHY" in r["labels"]]
    assert len(paths) >= 30
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert said_symptoms(Paste(clean_lines(text))) is None, path


def test_a_speed_said_to_fall_with_the_gpu_at_0_is_the_same_stall_pattern() -> None:
    text = ("At first training runs at 180 images/sec, then the speed drops from 180 to 25 images/sec and "
            "nvidia-smi shows the GPU util drop to 0% for minutes at a time.")
    f = _serious(text)["watch.bottleneck/reported-stalls"]
    assert f.category == "INPUT_BOUND" and f.summary.startswith("The run's speed fell from 180 to 25")
    # a fall alone (a run that got slower) is no stall pattern: throttling, another job, a longer sequence...
    assert said_symptoms(Paste(["the speed drops from 180 to 25 images/sec after the first epoch."])) is None


def test_the_patterns_beside_the_data_on_a_network_share_are_storage_bound() -> None:
    # lingvo-001's words, with the data said to be on NFS (torch-downstream-040/041 say it of an HDD in the corpus)
    text = BURSTY["lingvo-001"] + "\nThe dataset is on an NFS share mounted from our file server."
    f = _serious(text)["watch.bottleneck/storage"]
    assert (f.category, f.confidence) == ("INPUT_STORAGE_BOUND", "low")
    assert "unstable" in str([e.value for e in f.evidence])
