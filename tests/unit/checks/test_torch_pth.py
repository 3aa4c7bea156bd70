"""torch.pth-exec (issue 30) on snapshots, and the payload's replay of .pth lines on a real interpreter."""

from __future__ import annotations

import pytest

from envdoctor.compat import load_compat
from envdoctor.model.facts import Facts, ProbeStatus, PthExecLine, PthPathEntry, PythonEnv, TorchInfo
from envdoctor.services.collect import judge

PY = "/srv/venv/bin/python"
OWN = "/srv/venv/lib/python3.12/site-packages"
PTH = f"{OWN}/zz-base.pth"


@pytest.fixture(scope="module")
def compat():
    return load_compat()


def env(lines) -> PythonEnv:
    return PythonEnv(status=ProbeStatus.OK, executable=PY, python_version="3.12.3", site_packages=[OWN],
                     torch=TorchInfo(version="2.5.1+cpu", arch_list=[], imported=True), pth_exec=lines)


def line(added, file_lines=1, line_no=1, file=PTH) -> PthExecLine:
    return PthExecLine(file=file, line_no=line_no, line="import sys; sys.path.insert(0, '/usr/lib/python3/dist-packages')",
                       file_lines=file_lines, added=added)


BASE_FIRST = PthPathEntry("/usr/lib/python3/dist-packages", index=0, before_own_site=True, site_packages=True,
                          holds_torch=False)


def result(report):
    return next(c for c in report.checks if c.id == "torch.pth-exec")


def test_a_line_putting_another_site_packages_first_is_an_error_with_its_removal(compat) -> None:
    report = judge(Facts(pythons=[env([line([BASE_FIRST])])]), compat)
    (f,) = [f for f in report.findings if f.category == "PTH_EXEC_SYS_PATH"]
    assert (f.code, f.severity) == ("torch.pth-exec/reorders-sys-path", "error")
    assert f.summary == (f"{PTH} line 1 runs code at every start of {PY} that puts /usr/lib/python3/dist-packages "
                         "(sys.path[0]) before its own site-packages")
    assert (f.evidence[0].path, f.evidence[0].source) == ("pythons[0].pth_exec[0].line", f"{PTH}:1")
    assert f.fix.commands == [f"rm -- {PTH}"]
    # a line among others: only that line goes; a path with a space is quoted
    spaced = "/srv/my venv/lib/python3.12/site-packages/zz.pth"
    (g,) = [f for f in judge(Facts(pythons=[env([line([BASE_FIRST], file_lines=3, line_no=2, file=spaced)])]),
                             compat).findings if f.category == "PTH_EXEC_SYS_PATH"]
    assert g.fix.commands == [f"sed -i 2d -- '{spaced}'"]


def test_what_the_line_does_decides_not_its_name(compat) -> None:
    hook = PthPathEntry("__editable__.pkg.finder.__path_hook__", index=4, before_own_site=False,
                        site_packages=False, holds_torch=False)
    appended = PthPathEntry("/usr/lib/python3/dist-packages", index=5, before_own_site=False, site_packages=True,
                            holds_torch=False)
    source_dir = PthPathEntry("/src/tool", index=0, before_own_site=True, site_packages=False, holds_torch=False)
    harmless = [line([]), line([hook]), line([appended]), line([source_dir])]
    assert result(judge(Facts(pythons=[env(harmless)]), compat)).status == "passed"
    # a directory without dist-infos is still a finding when torch is in it
    torch_dir = PthPathEntry("/src/pytorch", index=0, before_own_site=True, site_packages=False, holds_torch=True)
    report = judge(Facts(pythons=[env([line([torch_dir])])]), compat)
    assert [f.code for f in report.findings if f.category == "PTH_EXEC_SYS_PATH"] == ["torch.pth-exec/reorders-sys-path"]


def test_not_replayed_is_skipped(compat) -> None:
    res = result(judge(Facts(pythons=[env(None)]), compat))
    assert res.status == "skipped" and "not replayed" in res.reason
    assert result(judge(Facts(pythons=[env([])]), compat)).status == "passed"
