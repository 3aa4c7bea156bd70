"""Speed symptoms in a paste (issue 42) judged by the watch checks: nvidia-smi tables, a training log's data_time,
PyTorch Lightning's worker warning, a reporter's utilisation figure. The tables are made from a real capture
(tests/paths SHARED fixtures/real/nvidia-smi-table, or the one copied into tests/fixtures) with its figures changed."""

from __future__ import annotations

from envdoctor.compat import load_compat
from envdoctor.services.diagnose import diagnose_report
from tests.paths import FIXTURES

TABLE = (FIXTURES / "nvidia-smi-table" / "geforce-24gb_525.125.06_fan-err.txt").read_text()  # 2021 / 23028 MiB, 0%


def _table(util: int, used: int, stamp: str = "") -> str:
    t = TABLE.replace("|   2021MiB / 23028MiB |      0%   E. Process |",
                      f"|  {used:>5}MiB / 23028MiB |    {util:>3}%   E. Process |")
    assert t != TABLE or (util, used) == (0, 2021)
    return (stamp + "\n" if stamp else "") + t + "\n"


def _report(text: str):
    return diagnose_report([text], load_compat())


def _codes(report) -> dict:
    return {f.code: f for f in report.all_findings}


def test_one_idle_table_with_the_memory_held_is_weak_evidence_and_asks_for_dmon() -> None:
    report = _report("Training is very slow, nvidia-smi shows:\n" + _table(0, 21500))
    w = report.facts.watch
    assert w is not None and w.summary["snapshots"] == 1 and len(w.samples) == 1
    f = _codes(report)["watch.idle-gpu/all-idle"]
    assert (f.severity, f.confidence, f.category) == ("warning", "low", "GPU_IDLE_UNUSED")
    assert f.summary.startswith("One nvidia-smi table shows GPU 0 at 0% holding 21500 MiB")
    assert "weak evidence" in f.summary
    assert any(e.path == "paste.settle" and e.value.startswith("nvidia-smi dmon -s u") for e in f.evidence)
    # memory taken by an idle GPU is reserved, not pressure: no GPU_MEMORY_PRESSURE from one table
    assert "watch.gpu-memory/nearly-full" not in _codes(_report(_table(0, 22900)))


def test_an_idle_machine_table_or_a_busy_one_is_no_recording() -> None:
    assert _report(_table(0, 2021)).facts.watch is None  # nothing held: nobody is training
    assert _report(_table(99, 21500)).facts.watch is None  # one busy moment is no symptom
    assert not any(f.code.startswith("watch.") for f in _report(_table(0, 2021)).all_findings)


def test_several_tables_are_a_series_timed_by_their_date_lines() -> None:
    figures = [(0, 21500), (100, 21500), (3, 21500), (0, 21500), (97, 21500), (2, 21500), (0, 21500)]
    text = "".join(_table(u, m, f"Mon Dec  7 08:02:{10 + 2 * k:02d} 2026") for k, (u, m) in enumerate(figures))
    report = _report(text)
    w = report.facts.watch
    assert w is not None and w.summary["snapshots"] == 7 and w.interval_s == 2.0
    assert [s["t_s"] for s in w.samples] == [0, 2, 4, 6, 8, 10, 12]
    f = _codes(report)["watch.bottleneck/input-pattern"]
    assert (f.severity, f.category) == ("warning", "INPUT_BOUND")
    assert "jumps between high and low" in f.summary


def test_tables_without_a_held_gpu_are_no_recording() -> None:
    assert _report(_table(0, 2021) + _table(1, 2030)).facts.watch is None


_MM = ("2023-05-10 10:0{k}:12,345 - mmdet - INFO - Epoch [1][{it}/7330]\tlr: 1.000e-02, eta: 2 days, 1:02:03, "
       "time: {t}, data_time: {d}, memory: 3456, loss_rpn_cls: 0.5, loss: 1.9\n")


def _mm(rows) -> str:
    return "".join(_MM.format(k=k, it=50 * (k + 1), t=t, d=d) for k, (t, d) in enumerate(rows))


def test_an_mmdet_log_whose_steps_wait_for_data_is_input_bound() -> None:
    rows = [(3.1, 2.9), (1.912, 1.403), (1.870, 1.372), (1.884, 1.390), (1.901, 1.399), (1.893, 1.388)]
    report = _report(_mm(rows))
    w = report.facts.watch
    # the first logged interval (the loader's start) is left out
    assert w is not None and w.summary["step_log_lines"] == 5 and w.samples == []
    assert abs(w.summary["data_wait_fraction"] - round(sum(d for _, d in rows[1:]) / sum(t for t, _ in rows[1:]), 4)) < 1e-9
    f = _codes(report)["watch.bottleneck/input"]
    assert (f.severity, f.category, f.confidence) == ("warning", "INPUT_BOUND", "high")
    assert f.summary.startswith("Input-bound: steps wait for their batch 73.")
    assert "is not in the recording" in f.summary  # no host samples: nothing claimed about the disk or CPU


def test_an_mmdet_log_that_keeps_up_is_no_problem() -> None:
    report = _report(_mm([(0.5, 0.2), (0.512, 0.012), (0.508, 0.010), (0.511, 0.011), (0.509, 0.009)]))
    f = _codes(report)["watch.bottleneck/input-keeps-up"]
    assert f.severity == "info"
    assert not [x for x in report.all_findings if x.code.startswith("watch.") and x.severity != "info"]


def test_a_detectron2_line_is_read_and_last_data_time_is_not_data_time() -> None:
    line = ("[05/10 10:01:{s:02d} d2.utils.events]:  eta: 1 day, 2:03:04  iter: {it}  total_loss: 1.2  time: 0.9{s:02d}0  "
            "last_time: 0.8  data_time: 0.7{s:02d}0  last_data_time: 0.01  lr: 0.02  max_mem: 5123M\n")
    report = _report("".join(line.format(s=10 + k, it=20 * (k + 1)) for k in range(5)))
    w = report.facts.watch
    assert w is not None and 0.7 < w.summary["data_wait_fraction"] < 0.8
    assert _codes(report)["watch.bottleneck/input"].category == "INPUT_BOUND"


LIGHTNING = ("/usr/lib/python3.10/site-packages/pytorch_lightning/trainer/connectors/data_connector.py:432: "
             "PossibleUserWarning: The dataloader, train_dataloader, does not have many workers which may be a "
             "bottleneck. Consider increasing the value of the `num_workers` argument` (try 16 which is the number "
             "of cpus on this machine) in the `DataLoader` init to improve performance.\n")


def test_lightnings_warning_beside_an_idle_gpu_is_input_bound_at_low_confidence() -> None:
    report = _report(LIGHTNING + _table(0, 21500))
    f = _codes(report)["watch.bottleneck/input"]
    assert (f.severity, f.category, f.confidence) == ("warning", "INPUT_BOUND", "low")
    assert "train_dataloader has few workers (at most 2, on a machine with 16 CPUs)" in f.summary
    assert "num_workers=15" in f.fix.commands[0]


def test_lightnings_warning_alone_makes_no_watch_verdict() -> None:
    report = _report(LIGHTNING)
    w = report.facts.watch
    assert w is not None and w.summary["loader_warning"]["cpus"] == 16
    assert not any(f.code.startswith("watch.") for f in report.all_findings)


def test_a_reporters_figure_is_one_reported_moment() -> None:
    text = "When I check nvidia-smi the Memory-Usage is full but Volatile GPU-util indicates 0% while training.\n"
    report = _report(text)
    w = report.facts.watch
    assert w is not None and w.summary["reported"].startswith("When I check nvidia-smi")
    f = _codes(report)["watch.idle-gpu/all-idle"]
    assert f.confidence == "low" and f.summary.startswith("The reporter gives the GPU's utilisation as 0%")
    # a figure of a busy GPU is not a symptom
    assert _report("GPU-Util is 98% all the time\nRuntimeError: CUDA error: out of memory\n").facts.watch is None


# real logs from issues whose slowness was not the input (the data wait the log measured is small)
# https://github.com/open-mmlab/mmdetection/issues/4090 (a comment's log, five lines)
MMDET_4090 = """\
2020-11-11 18:20:40,841 - mmdet - INFO - Epoch [1][1050/29317]\tlr: 2.000e-02, eta: 1 day, 18:57:37, time: 0.387, data_time: 0.008, memory: 3946, loss_rpn_cls: 0.1105, loss_rpn_bbox: 0.0975, loss_cls: 0.4957, acc: 91.4482, loss_bbox: 0.2994, loss: 1.0031
2020-11-11 18:21:00,468 - mmdet - INFO - Epoch [1][1100/29317]\tlr: 2.000e-02, eta: 1 day, 18:44:28, time: 0.393, data_time: 0.009, memory: 3946, loss_rpn_cls: 0.1194, loss_rpn_bbox: 0.0822, loss_cls: 0.5477, acc: 90.7676, loss_bbox: 0.3243, loss: 1.0736
2020-11-11 18:21:20,083 - mmdet - INFO - Epoch [1][1150/29317]\tlr: 2.000e-02, eta: 1 day, 18:32:17, time: 0.392, data_time: 0.009, memory: 3946, loss_rpn_cls: 0.0969, loss_rpn_bbox: 0.0887, loss_cls: 0.5287, acc: 90.5693, loss_bbox: 0.3296, loss: 1.0439
2020-11-11 18:21:39,969 - mmdet - INFO - Epoch [1][1200/29317]\tlr: 2.000e-02, eta: 1 day, 18:22:26, time: 0.398, data_time: 0.009, memory: 3946, loss_rpn_cls: 0.1171, loss_rpn_bbox: 0.0973, loss_cls: 0.5065, acc: 90.6416, loss_bbox: 0.3247, loss: 1.0456
2020-11-11 18:21:59,852 - mmdet - INFO - Epoch [1][1250/29317]\tlr: 2.000e-02, eta: 1 day, 18:13:10, time: 0.397, data_time: 0.009, memory: 3946, loss_rpn_cls: 0.0949, loss_rpn_bbox: 0.0808, loss_cls: 0.4891, acc: 90.6943, loss_bbox: 0.3254, loss: 0.9902
"""
# https://github.com/open-mmlab/mmyolo/issues/789 (YOLOX's own trainer, three lines)
YOLOX_789 = """\
2023-05-25 09:04:19.163 | INFO     | yolox.core.trainer:after_iter:282 - epoch: 1/20, iter: 10/1051, gpu mem: 20839Mb, mem: 46.8Gb, iter_time: 2.561s, data_time: 0.332s, total_loss: 8.9, iou_loss: 2.6, l1_loss: 0.0, conf_loss: 3.1, cls_loss: 3.3, lr: 4.527e-07, size: 640, ETA: 14:56:42
2023-05-25 09:04:33.144 | INFO     | yolox.core.trainer:after_iter:282 - epoch: 1/20, iter: 20/1051, gpu mem: 20839Mb, mem: 46.9Gb, iter_time: 1.397s, data_time: 0.003s, total_loss: 8.8, iou_loss: 2.7, l1_loss: 0.0, conf_loss: 3.2, cls_loss: 2.9, lr: 1.811e-06, size: 640, ETA: 11:32:38
2023-05-25 09:04:48.760 | INFO     | yolox.core.trainer:after_iter:282 - epoch: 1/20, iter: 30/1051, gpu mem: 20839Mb, mem: 46.9Gb, iter_time: 1.561s, data_time: 0.002s, total_loss: 7.0, iou_loss: 2.3, l1_loss: 0.0, conf_loss: 2.7, cls_loss: 2.0, lr: 4.074e-06, size: 640, ETA: 10:43:31
"""


def test_real_logs_whose_input_keeps_up_say_so_and_warn_of_nothing() -> None:
    for text, share in ((MMDET_4090, 0.0225), (YOLOX_789, 0.0611)):
        report = _report(text)
        w = report.facts.watch
        assert w is not None and abs(w.summary["data_wait_fraction"] - share) < 0.001, w.summary
        f = _codes(report)["watch.bottleneck/input-keeps-up"]
        assert f.severity == "info" and f.category == "NOTE"
        assert not [x for x in report.all_findings if x.code.startswith("watch.") and x.severity != "info"]


def test_a_table_pasted_for_another_reason_or_a_share_of_time_is_not_a_speed_symptom() -> None:
    # an out-of-memory report shows the GPU held and idle: no speed verdict without a word of speed
    assert _report("CUDA out of memory, even with nothing of mine running:\n" + _table(0, 21500)).facts.watch is None
    # "near maximum for 5% of the time" is a share of time, not a utilisation
    text = ("GPU utilization is only near maximum for maybe like 5% of the time the program is running\n"
            "RuntimeError: CUDA error: out of memory\n")
    assert _report(text).facts.watch is None


def test_the_reporters_words_on_storage_and_an_underused_gpu_are_storage_bound_at_low_confidence() -> None:
    text = ("Training is slow: the GPU utilization is very low most of the time.\n"
            "Our dataset is on an NFS share mounted at /mnt/datasets.\n")
    report = _report(text + "RuntimeWarning: overflow encountered in exp\n")
    w = report.facts.watch
    assert w is not None and w.summary["data_storage"]["kind"] == "network"
    f = _codes(report)["watch.bottleneck/storage"]
    assert (f.severity, f.category, f.confidence) == ("warning", "INPUT_STORAGE_BOUND", "low")
    assert "a network filesystem (“dataset is on an NFS”)" in f.summary
    assert any(e.path == "paste.settle" and e.value.startswith("iostat -x 1") for e in f.evidence)
    # beside a table of an idle GPU held by the run: the same verdict, the table's figure quoted
    f = _codes(_report("the training is slow, data on a HDD\n" + _table(0, 21500)))["watch.bottleneck/storage"]
    assert "the GPU is idle (GPU 0 at 0%)" in f.summary


def test_storage_named_without_a_speed_symptom_is_no_verdict() -> None:
    text = "I keep the conda envs and my data on an HDD.\nImportError: libcudart.so.12: cannot open shared object file\n"
    assert _report(text).facts.watch is None


DF_T = """\
$ df -T
Filesystem                  Type     1K-blocks      Used  Available Use% Mounted on
/dev/nvme0n1p2              ext4     491134192  88231244  377877100  19% /
tmpfs                       tmpfs     65893756         0   65893756   0% /dev/shm
fileserver:/export/shared   nfs4    7811938304 5712261120 2099677184  74% /mnt/shared
"""


def test_a_data_path_on_a_pasted_network_mount_is_a_fact_not_an_account() -> None:
    text = ("Training got really slow after we moved the data; GPU utilization stays very low.\n"
            "$ python train.py --data-path /mnt/shared/imagenet/train --workers 8\n" + DF_T)
    report = _report(text)
    w = report.facts.watch
    assert w is not None and w.data_paths == ["/mnt/shared/imagenet/train"]
    f = _codes(report)["watch.bottleneck/storage"]
    assert f.category == "INPUT_STORAGE_BOUND" and f.confidence == "low"
    assert "the data is on a network filesystem (/mnt/shared/imagenet/train on /mnt/shared, nfs4 from " \
           "fileserver:/export/shared)" in f.summary
    assert f.fix.commands[0].startswith("rsync -a /mnt/shared/imagenet/train/ ")
    # `mount`'s format too; a path on the local disk is no storage verdict
    mount = "fileserver:/export/shared on /mnt/shared type nfs4 (rw,relatime,vers=4.2)\n"
    assert _codes(_report(text.split("$ df")[0] + mount))["watch.bottleneck/storage"].category == "INPUT_STORAGE_BOUND"
    local = text.replace("--data-path /mnt/shared/imagenet/train", "--data-path /home/me/imagenet/train")
    assert "watch.bottleneck/storage" not in _codes(_report(local + "RuntimeError: CUDA error: out of memory\n"))


def _bar(points, unit="it/s") -> str:
    """tqdm's updates, joined by carriage returns as a terminal capture pastes them: (count, elapsed s)."""
    out = []
    for n, t in points:
        out.append(f"Epoch 1:  {n * 100 // 400:3d}%|####      | {n}/400 [{t // 60:02d}:{t % 60:02d}<00:10,  1.00{unit}, loss=0.5]")
    return "\r".join(out) + "\n"


def test_a_progress_bar_that_stops_every_hundred_steps_is_judged_by_watch_stalls() -> None:
    pts, t = [], 0
    for n in range(0, 401, 20):
        pts.append((n, t))
        t += 20 + (40 if n and n % 100 == 0 else 0)  # an evaluation of 40 s after steps 100, 200 and 300
    report = _report(_bar(pts))
    w = report.facts.watch
    assert w is not None and w.summary["step_stall_count"] == 3 and w.summary["step_stall_s"] == 120.0
    f = _codes(report)["watch.stalls/stall"]
    assert (f.severity, f.category) == ("warning", "CHECKPOINT_STALL")
    assert f.summary.startswith("The step loop stopped 3 times for 120 s in all (")


def test_a_steady_bar_or_a_short_one_is_no_stall() -> None:
    steady = _bar([(n, n) for n in range(0, 401, 20)])
    report = _report(steady + "RuntimeError: CUDA error: out of memory\n")
    assert report.facts.watch is not None and report.facts.watch.summary["step_stall_count"] == 0
    assert "watch.stalls/stall" not in _codes(report)
    short = _bar([(0, 0), (20, 20), (40, 100)])  # three updates: no typical pace to judge against
    assert _report(short + "RuntimeError: CUDA error: out of memory\n").facts.watch is None
    # two epochs' bars (the count starts again): each is a run of its own, none glued to the other
    two = _bar([(n, n) for n in range(0, 401, 40)]) + _bar([(n, n) for n in range(0, 401, 40)])
    assert _report(two + "RuntimeError: CUDA error: out of memory\n").facts.watch.summary["step_stall_count"] == 0


def test_a_dmon_recording_and_the_datas_network_mount_are_storage_bound() -> None:
    # a real dmon capture's format (tests/fixtures/timeseries) with the GPU underused, and the data on NFS
    dmon = "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec   mclk   pclk\n# Idx      W      C      C      %      %      %      %    MHz    MHz\n"
    dmon += "".join(f"    0     {60 + k % 3}     40      -     {(20, 35, 5, 40, 10, 30)[k % 6]}     10      0      0   5000   1400\n"
                    for k in range(30))
    text = "Training is slow.\n$ python train.py --data-path /mnt/shared/imagenet/train\n" + DF_T + dmon
    report = _report(text)
    w = report.facts.watch
    assert w is not None and w.source.startswith("nvidia-smi dmon") and "df -T / mount" in w.source
    f = _codes(report)["watch.bottleneck/storage"]
    assert f.category == "INPUT_STORAGE_BOUND" and "the data is on a network filesystem" in f.summary
    # the same recording with the reporter's words instead of the mount: the storage half is an account, low
    words = "Training is slow, our dataset is on an NFS share.\n" + dmon
    f = _codes(_report(words))["watch.bottleneck/storage"]
    assert f.confidence == "low" and "the reporter puts the data on a network filesystem" in f.summary
