"""Run `envdoctor ARGS` as `python -m envdoctor` does and send this process a signal at one chosen function call.

Deterministic: the AT-th call (sys.settrace counts calls) after START, or the first call of AT_CODE
("file.py:function"), so a test can interrupt start-up anywhere, including inside an import's class creation.
Used by tests/unit/test_cli_startup_signals.py; prints "HARNESS: ..." lines on stderr.
"""
import atexit
import os
import runpy
import sys

AT = int(os.environ.get("AT", "0"))  # the AT-th function call after start
SIG = int(os.environ.get("SIG", "2"))
AT_CODE = os.environ.get("AT_CODE")  # "file.py:function": its first call after start
START = os.environ.get("START", "imports")  # "imports": once envdoctor holds signals; "main": once cli.main runs
state = {"on": False, "n": 0, "in_run": None, "sent": False}
SEP = os.sep


def _is(code, path, name):
    return code.co_name == name and code.co_filename.endswith(path.replace("/", SEP))


def local(frame, event, arg):
    if event == "return":
        if frame.f_code.co_name == "hold_signals" and START == "imports":
            state["on"] = True
        elif frame.f_code.co_name == "run":
            state["in_run"] = state["n"]
    return None


def tracer(frame, event, arg):
    code = frame.f_code
    if _is(code, "envdoctor/__main__.py", "leave_now") and state["in_run"] is None:
        # run() ends the process in leave_now (os._exit once the report is out) without returning: the calls up
        # to there are the run's
        state["in_run"] = state["n"]
    if _is(code, "envdoctor/__main__.py", "hold_signals") or _is(code, "envdoctor/__main__.py", "run"):
        return local
    if not state["on"] and (_is(code, "envdoctor/cli/__init__.py", "main") if START == "main" else
                            _is(code, "envdoctor/cli/__init__.py", "<module>")):
        state["on"] = True
    if state["on"] and not state["sent"]:
        state["n"] += 1
        if state["n"] == AT or (AT_CODE and _is(code, *AT_CODE.split(":"))):
            state["sent"] = True
            sys.stderr.write(f"HARNESS: sent at call {state['n']} ({code.co_name} in {code.co_filename})\n")
            os.kill(os.getpid(), SIG)
    return None


atexit.register(lambda: sys.stderr.write(f"HARNESS: calls in run {state['in_run']}\n"))
sys.argv = ["envdoctor", *sys.argv[1:]]
sys.settrace(tracer)
runpy.run_module("envdoctor", run_name="__main__", alter_sys=True)
