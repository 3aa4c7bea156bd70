"""The watch's parts: the step timer, the bounded recorder, the phases of a series, the GPU reader on a fake
NVML, the process tree on real child processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from envdoctor.domain.recording import analyze, pct, summarize
from envdoctor.watch import timer
from envdoctor.watch.record import Recorder
from envdoctor.watch.sample import GpuReader, HostReader, ProcessTree, Unseen
from tests.fakes.nvml_lib import FakeNvmlLib, h100_sxm, installed
from tests.paths import REPO


class _FakeClock:
    """timer's `time`: a clock the test advances, so that the fraction does not depend on the machine's load."""

    def __init__(self) -> None:
        self.now = 1000.0

    def perf_counter(self) -> float:
        return self.now

    monotonic = perf_counter
    time = perf_counter


def test_timed_measures_the_wait_and_writes_for_a_running_watch(tmp_path, monkeypatch):
    monkeypatch.setattr(timer, "_REPORTER", None)
    monkeypatch.setenv("ENVDOCTOR_WATCH_DIR", str(tmp_path))
    (tmp_path / timer.watch_mark(os.getpid())).touch()  # a running watch's mark (this process stands in for it)
    clock = _FakeClock()
    monkeypatch.setattr(timer, "time", clock)

    def slow():
        for i in range(12):
            clock.now += 0.02  # the batch takes 20 ms to come
            yield i

    got = []
    for b in timer.timed(slow(), name="slow"):
        got.append(b)
        clock.now += 0.005  # the step's compute
    assert got == list(range(12))
    loops = timer.read_reports(str(tmp_path), [os.getpid()])
    assert len(loops) == 1 and loops[0]["steps"] == 12 and loops[0]["name"] == "slow"
    assert abs(loops[0]["data_wait_fraction"] - 0.8) < 1e-3  # 20 ms of each 25 ms step
    assert loops[0]["wait_p50_ms"] == 20.0 and loops[0]["step_p50_ms"] == 25.0
    assert timer.read_reports(str(tmp_path), [os.getpid() + 1]) == []


def test_a_loop_left_with_break_prints_no_traceback_at_exit(tmp_path):
    # the generator outlives the loop (a global set in a function) and is closed while the interpreter tears the
    # modules down: its `finally` used to write the summary again then, "NameError: name 'open' is not defined"
    script = tmp_path / "train.py"
    script.write_text("from envdoctor.watch import timed\n\n\n"
                      "def main():\n    global it\n    it = timed(range(10), name='loader')\n"
                      "    for b in it:\n        break\n\n\nmain()\n")
    watching = tmp_path / "watch"
    watching.mkdir()  # a watch is running: the summary goes to its folder
    (watching / timer.watch_mark(os.getpid())).touch()  # its mark (this test process stands in for it)
    env = dict(os.environ, ENVDOCTOR_WATCH_DIR=str(watching), PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    loops = timer.read_reports(str(watching))
    assert [(x["name"], x["steps"]) for x in loops] == [("loader", 1)]


def test_timed_prints_a_summary_at_exit_when_no_watch_runs(tmp_path):
    code = ("import time\nfrom envdoctor.watch import timed\n"
            "for b in timed(range(5)):\n    time.sleep(0.001)\n")
    env = dict(os.environ, ENVDOCTOR_WATCH_DIR=str(tmp_path / "absent"))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0 and "envdoctor timed(range): 5 steps, waiting for data" in proc.stderr


def test_timed_imports_nothing_heavy():
    code = "import sys; from envdoctor.watch import timed; print(sorted(m for m in sys.modules if m.startswith(('psutil', 'pynvml', 'envdoctor.'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).stdout
    assert json.loads(out.replace("'", '"')) == ["envdoctor.watch", "envdoctor.watch.timer"]


def test_recorder_halves_its_rate_instead_of_growing():
    r = Recorder(max_samples=16)
    for i in range(1000):
        r.add({"t_s": i})
    assert len(r.samples) < 16 and r.every == 128  # 1000 ticks in at most 16 samples
    assert r.samples[0]["t_s"] == 0 and r.samples[-1]["t_s"] >= 1000 - 128


def test_percentiles_and_phases():
    assert pct([1, 2, 3, 4], 0.5) == 2.5 and pct([], 0.5) is None
    samples = [{"t_s": i * 0.5, "gpus": [{"index": 0, "util_pct": u}]}
               for i, u in enumerate([0, 0, 0, 0, 90, 92, 95, 0, 0, 0, 0, 0, 93, 94, 91, 0])]
    a = analyze(samples)
    assert a.warmup_s == 2.0  # until the GPU first works
    assert len(a.stalls) == 1 and a.stalls[0].samples == 5  # the mid-run gap, not the warm-up
    assert a.gpus[0].util_p50 > 90  # the steady state leaves both out
    s = summarize(samples, 0.5, [{"steps": 10, "wait_s": 1.0, "step_s": 4.0}])
    assert s["data_wait_fraction"] == 0.25 and s["step_count"] == 10 and s["sample_count"] == 16


def test_gpu_reader_on_a_fake_nvml():
    # the stand-in libnvidia-ml under the real pynvml
    lib = FakeNvmlLib([h100_sxm(0, nvmlDeviceGetUtilizationRates={"gpu": 87, "memory": 40},
                                nvmlDeviceGetPcieThroughput={0: 1000, 1: 250000}, processes=[(4242, 1 << 30)])])
    unseen = Unseen()
    with installed(lib) as nvml:
        r = GpuReader(unseen, nvml, host_pids=False)  # the host's PID namespace
        g = r.read()[0]
        r.close()
    assert (g["util_pct"], g["mem_util_pct"], g["power_w"], g["sm_clock_mhz"]) == (87, 40, 72.0, 1980)
    assert g["mem_total_mib"] == 81559 and g["pids"] == [4242] and g["pcie_rx_mbps"] == 250.0
    assert g["throttle_reasons"] == ["gpu_idle"] and unseen.lines == []
    assert r.local_pids([g]) == {4242} and "pids_are_host" not in g
    assert "nvmlShutdown" in lib.called


def test_gpu_reader_in_a_container_keeps_host_pids_out_of_the_process_tree():
    # in a container's PID namespace NVML lists the host's PIDs (as `check` reads them: probes/nvml.py): 4242 names
    # no process here, or another one, so the sampler counts it but never matches it to /proc
    lib = FakeNvmlLib([h100_sxm(0, processes=[(4242, 1 << 30)])])
    unseen = Unseen()
    with installed(lib) as nvml:
        r = GpuReader(unseen, nvml, host_pids=True)
        g = r.read()[0]
        r.close()
    assert g["pids"] == [4242] and g["pids_are_host"] is True
    assert r.local_pids([g]) == set()
    assert unseen.lines == ["GPU process IDs are the host's (this runs in a container's PID namespace): they are "
                            "counted, not matched to processes here; name the command or --pid to watch it"]


def test_gpu_reader_without_nvml_says_why():
    unseen = Unseen()
    with installed(FakeNvmlLib([], init_error="DRIVER_NOT_LOADED")) as nvml:
        r = GpuReader(unseen, nvml)
        assert r.read() == [] and "NVML init failed (DRIVER_NOT_LOADED)" in unseen.lines[0]


def test_process_tree_counts_fork_workers_not_the_resource_tracker():
    code = ("import multiprocessing as mp, time\n"
            "def f(_):\n    time.sleep(300)\n"
            "if __name__ == '__main__':\n"
            "    ctx = mp.get_context('fork')\n    ps = [ctx.Process(target=f, args=(i,)) for i in range(3)]\n"
            "    [p.start() for p in ps]\n    [p.join() for p in ps]\n")
    # the workers live far longer than the wait for them (a loaded machine may take seconds to fork three), and
    # the whole group goes at the end
    child = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        tree = ProcessTree(Unseen(), child.pid)
        deadline = time.monotonic() + 120
        info = tree.read()
        while info["workers"] < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
            info = tree.read()
        assert info["workers"] == 3 and info["trainers"] == 1 and info["count"] == 4
        assert info["torch_trainers"] == 0
    finally:
        import signal

        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait()


def test_host_reader_reads_cpu_memory_and_shm():
    h = HostReader(Unseen(), [os.getcwd()])
    time.sleep(0.2)
    s = h.read()
    assert 0 <= s["cpu_busy_pct"] <= 100 and "mem_used_pct" in s and "disks" in s


class _Tty:
    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_live_view_draws_one_line_per_gpu_cpu_and_disk_only_on_a_terminal():
    from envdoctor.report.watch import timeline
    from envdoctor.report.watch_live import Live

    tty = _Tty()
    live = Live(stream=tty, in_place=True, interval_s=0.5)
    samples = [{"t_s": i * 0.5, "gpus": [{"index": 0, "util_pct": 50 + i, "mem_used_mib": 100, "mem_total_mib": 200}],
                "host": {"cpu_busy_pct": 20.0, "cpu_iowait_pct": 1.0, "disks": {"nvme0n1": {"read_mbps": 5.0}}},
                "procs": {"workers": 2}} for i in range(6)]
    for s in samples:
        live.update(s)
    lines = live.lines()
    assert [ln.split()[0] for ln in lines] == ["envdoctor", "GPU", "CPU", "nvme0n1"]
    assert "workers 2" in lines[2] and "\x1b[" in tty.text  # redrawn in place
    live.close()
    piped = _Tty()
    piped.isatty = lambda: False
    quiet = Live(stream=piped)
    quiet.update(samples[0])
    assert piped.text == ""
    assert any(ln.lstrip().startswith("GPU 0 util %") for ln in timeline(samples))


# --------------------------------------------------------------------------- the live view: a verdict, 80 columns


class _Terminal:
    def __init__(self) -> None:
        self.parts = []

    def isatty(self) -> bool:
        return True

    def write(self, s: str) -> None:
        self.parts.append(s)

    def flush(self) -> None:
        pass


def _verdict_so_far(*recorded):
    """The live view's verdict as a watch makes it: the recording so far (watch/, below the judge), judged by the
    watch checks (services/watch.py), its headline (report/watch_live.py); None when nothing is judged yet."""
    from envdoctor.model.facts import Facts
    from envdoctor.report.watch_live import headline_of
    from envdoctor.services.watch import judge_recording
    from envdoctor.watch.command import recording_so_far

    w = recording_so_far(*recorded)
    return headline_of(judge_recording(Facts(watch=w))) if w is not None else None


def test_live_view_states_the_verdict_so_far_within_80_columns():
    from envdoctor.report.watch_live import Live

    samples = []
    for i in range(30):
        samples.append({"t_s": i * 0.5,
                        "gpus": [{"index": 0, "util_pct": 30.0 + (i % 2), "mem_used_mib": 80000.0,
                                  "mem_total_mib": 81559.0, "power_w": 700.0, "temperature_c": 80.0}],
                        "host": {"cpu_busy_pct": 20.0, "cpu_iowait_pct": 45.0,
                                 "disks": {"nvme10n1": {"read_mbps": 2500.0, "iops": 9000.0, "await_ms": 12.0,
                                                        "util_pct": 100.0}}},
                        "procs": {"count": 5, "trainers": 1, "torch_trainers": 1, "workers": 4, "cpu_pct": 120.0,
                                  "main_cpu_pct": 40.0, "worker_cpu_pct": [20.0] * 4}})
    code, text = _verdict_so_far(samples, 0.5, "", set(), None, 8.0)
    assert code == "watch.bottleneck/storage" and "INPUT_STORAGE_BOUND" in text and len(text) < 120
    tty = _Terminal()
    live = Live(stream=tty, in_place=True, interval_s=0.5, columns=80)
    live.set_verdict(text)
    for s in samples:
        live.update(s)
    lines = live.lines()
    assert lines[1].startswith("  now: ") and "INPUT_STORAGE_BOUND" in lines[1] or lines[1].endswith("…")
    assert all(len(line) <= 80 for line in lines), [len(x) for x in lines]
    assert any("GPU 0" in line for line in lines) and any("nvme10n1" in line for line in lines)


def test_no_verdict_yet_is_no_line():
    assert _verdict_so_far([], 0.5, "", set(), None, None) is None


def test_the_live_verdict_changes_only_when_two_updates_agree():
    """Issue 41: the live view's verdict flipped on every update while the evidence hovered at a threshold."""
    from envdoctor.report.watch_live import StableVerdict

    st = StableVerdict()
    assert st.offer(None) is None
    assert st.offer(("watch.bottleneck/cpu", "CPU 90%")) == "CPU 90%"  # the first verdict shows at once
    assert st.offer(("watch.bottleneck/cpu", "CPU 95%")) == "CPU 95%"  # same verdict, new numbers: at once
    assert st.offer(("watch.bottleneck/gpu-bound", "GPU")) == "CPU 95%"  # one update is not enough
    assert st.offer(("watch.bottleneck/cpu", "CPU 91%")) == "CPU 91%"
    assert st.offer(("watch.bottleneck/gpu-bound", "GPU")) == "CPU 91%"
    assert st.offer(None) == "CPU 91%"  # nothing judged: what is shown stays
    flips = [st.offer(("watch.bottleneck/gpu-bound" if i % 2 else "watch.bottleneck/cpu", str(i)))
             for i in range(10)]
    assert all(not f.startswith("GPU") for f in flips)  # alternating evidence never flips it
    assert st.offer(("watch.bottleneck/cpu", "CPU 80%")) == "CPU 80%"
    assert st.offer(("watch.bottleneck/gpu-bound", "GPU a")) == "CPU 80%"
    assert st.offer(("watch.bottleneck/gpu-bound", "GPU b")) == "GPU b"  # two in a row: it changes


def test_a_failed_command_line_read_is_read_again(monkeypatch):
    # cached for good, one failed read made a trainer's command line () for the whole run: its fork workers (whose
    # command line is its own) were never counted, and a watch test waited out its 120 s for them (issue 40)
    import psutil

    from envdoctor.watch import sample

    real = psutil.Process.cmdline
    calls = []

    def flaky(self):
        calls.append(self.pid)
        if len(calls) == 1:
            raise psutil.AccessDenied(self.pid)
        return real(self)

    monkeypatch.setattr(sample.psutil.Process, "cmdline", flaky)
    tree = ProcessTree(Unseen(), os.getpid())
    me = psutil.Process().name()
    assert tree._cmd_of(os.getpid(), me) == ()
    assert tree._cmd_of(os.getpid(), me) == tuple(real(psutil.Process())) != ()
    assert tree._cmd_of(os.getpid(), me) and len(calls) == 2  # read, then kept
    assert tree._cmd_of(os.getpid(), "python3.12") and len(calls) == 3  # a new name: an exec since, read again


def test_the_training_process_state_is_sampled_between_ticks():
    """Issue 41: the main thread's state letters (N: in a sleep, F: on a futex) and its I/O since the last tick,
    from /proc on a real child process."""
    from envdoctor.watch.sample import main_state

    code = ("import threading, time, sys\n"
            "if sys.argv[1] == 'sleep':\n    time.sleep(60)\n"
            "else:\n    l = threading.Lock(); l.acquire(); l.acquire()\n")
    for mode, letter in (("sleep", "N"), ("lock", "F")):
        child = subprocess.Popen([sys.executable, "-c", code, mode])
        try:
            time.sleep(0.5)
            if main_state(child.pid) == "S":  # a kernel that hides wchan: the letters cannot be told apart
                continue
            tree = ProcessTree(Unseen(), child.pid)
            tree.read()
            tree.wait_until(time.monotonic() + 0.3)
            main = tree.read()["main"]
            assert main["pid"] == child.pid and main["states"] and set(main["states"]) <= {letter, "R"}, main
            assert "wchar" in main and "run_ms" in main, main  # /proc/PID/io and schedstat deltas
        finally:
            child.kill()
            child.wait()


def test_the_sub_samples_carry_their_times_and_time_on_a_cpu():
    """Issue 41, round 3: each tick's letters carry when they were taken (states_t_s) and the share of each
    sub-interval the thread ran (oncpu, a digit per letter), and the I/O counters when they were read (io_t_s,
    later than the tick's t_s): a computing child is on a CPU, a sleeping one is not."""
    code = "import sys, time\nif sys.argv[1] == 'spin':\n    while True: pass\ntime.sleep(60)\n"
    got = {}
    for mode in ("spin", "sleep"):
        child = subprocess.Popen([sys.executable, "-c", code, mode])
        try:
            time.sleep(0.3)
            tree = ProcessTree(Unseen(), child.pid)
            tree.t0 = time.monotonic()
            tree.read()
            start = time.monotonic() - tree.t0
            tree.wait_until(time.monotonic() + 0.4, every=0.04)
            main = tree.read()["main"]
            end = time.monotonic() - tree.t0
            first, last = main["states_t_s"]
            assert start - 0.002 <= first <= last <= main["io_t_s"] <= end + 0.002, (start, main, end)  # ms rounding
            assert len(main["oncpu"]) == len(main["states"]) >= 3, main
            got[mode] = [int(c) for c in main["oncpu"] if c.isdigit()]
        finally:
            child.kill()
            child.wait()
    assert got["sleep"] and max(got["sleep"]) == 0, got  # asleep: never on a CPU
    assert got["spin"] and max(got["spin"]) >= 1, got  # spinning: on a CPU whenever the box gives it one
