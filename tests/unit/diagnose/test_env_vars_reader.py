"""diagnose reads the table's environment variables from a paste (export lines, a prompt's NAME=v cmd, collect_env)
into pythons[0].env with their provenance, and host.environment judges them as it judges a live machine."""

from __future__ import annotations

from envdoctor.diagnose import read_paste
from envdoctor.services.diagnose import diagnose_report

# PyTorch's own advice inside a CUDA error (as pasted in shared/examples/reports-batch2/107.txt): a mention, not a
# setting
TORCH_ERROR = """RuntimeError: CUDA error: uncorrectable ECC error encountered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""
JOB = """$ cat run.sh
export CUDA_LAUNCH_BLOCKING=1
export PYTORCH_CUDA_ALLOC_CONF="expandable_segments:true"
# export NCCL_P2P_DISABLE=1
$ NCCL_DEBUG=INFO torchrun --nproc_per_node=8 train.py
"""


def test_export_lines_land_in_the_facts_with_provenance(compat):
    facts, _ = read_paste([JOB], compat)
    env = facts.pythons[0].env
    assert env["CUDA_LAUNCH_BLOCKING"] == "1" and env["NCCL_DEBUG"] == "INFO"
    assert env["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:true"
    assert "NCCL_P2P_DISABLE" not in env  # commented out: not set
    prov = facts.paste.provenance["pythons[0].env.CUDA_LAUNCH_BLOCKING"]
    assert (prov["where"], prov["confidence"], prov["value"]) == ("line 2", "medium", "1")


def test_the_same_check_judges_the_paste(compat):
    report = diagnose_report([JOB], compat)
    got = {f.code: f for f in report.findings}
    f = got["host.environment/cuda-launch-blocking"]
    assert (f.category, f.severity) == ("ENV_VAR_HARMFUL", "warning")
    assert (f.evidence[0].path, f.evidence[0].value) == ("pythons[0].env.CUDA_LAUNCH_BLOCKING", "1")
    assert f.fix.commands == ["unset CUDA_LAUNCH_BLOCKING"]
    assert got["host.environment/pytorch-cuda-alloc-conf-syntax"].severity == "error"


def test_advice_inside_an_error_message_sets_nothing(compat):
    facts, _ = read_paste([TORCH_ERROR], compat)
    assert all("CUDA_LAUNCH_BLOCKING" not in py.env for py in facts.pythons)
    report = diagnose_report([TORCH_ERROR], compat)
    assert not [f for f in report.findings if f.code.startswith("host.environment/")]
    (res,) = [r for r in report.checks if r.id == "host.environment"]
    assert res.status == "skipped" and "the pasted text shows none" in res.reason


def test_collect_env_module_loading(compat):
    text = ("PyTorch version: 2.5.1+cu124\nIs debug build: False\nCUDA used to build PyTorch: 12.4\n"
            "CUDA_MODULE_LOADING set to: EAGER\n")
    facts, _ = read_paste([text], compat)
    assert facts.pythons[0].env["CUDA_MODULE_LOADING"] == "EAGER"
    assert facts.paste.provenance["pythons[0].env.CUDA_MODULE_LOADING"]["confidence"] == "high"
    codes = {f.code for f in diagnose_report([text], compat).findings}
    assert "host.environment/cuda-module-loading-eager" in codes


# reports-batch2/121: prose that mentions the command, then nvidia-smi's date line; read as CUDA_VISIBLE_DEVICES it
# was a NO_GPU_VISIBLE error ("CUDA sees no GPU") on a machine whose cause was MIG
PROSE_ECHO = ("First, I can echo $CUDA_VISIBLE_DEVICES and see nothing is set.\n\nWed Jul 24 16:03:06 2024\n"
              "+-----------------------------------------------------------------------------+\n")
PROMPT_ECHO = ("(py38) [0] user@gpu01:~/runs  $ echo $CUDA_VISIBLE_DEVICES\n2,3\nuser@gpu01:~$ echo $LD_LIBRARY_PATH\n"
               "/usr/local/cuda/lib64:/opt/My Libs/lib\n$ echo $OMP_NUM_THREADS\n\n$ python train.py\n"
               "RuntimeError: CUDA error: an illegal memory access was encountered\n")


def test_an_echo_is_read_only_as_a_command_with_a_value_after_it(compat):
    facts, _ = read_paste([PROMPT_ECHO], compat)
    env = facts.pythons[0].env if facts.pythons else {}
    assert env.get("CUDA_VISIBLE_DEVICES") == "2,3"
    assert env.get("LD_LIBRARY_PATH") == "/usr/local/cuda/lib64:/opt/My Libs/lib"  # a path list may hold spaces
    assert "OMP_NUM_THREADS" not in env  # a blank line after the command: empty, or skipped by the paste


def test_prose_about_echo_reads_no_value_and_gives_no_visibility_error(compat):
    facts, _ = read_paste([PROSE_ECHO], compat)
    env = facts.pythons[0].env if facts.pythons else {}
    assert "CUDA_VISIBLE_DEVICES" not in env
    report = diagnose_report([PROSE_ECHO], compat)
    assert not [f for f in report.findings if f.category == "NO_GPU_VISIBLE" and f.severity == "error"]
