"""Every printed pip line runs on its target (issue 38): PEP 668's marker, a pip too old for manylinux_x_y tags,
no pip and no ensurepip, uv venvs. Real interpreters: tests/integration/test_static38_envs.py."""

from __future__ import annotations

from envdoctor.model.facts import Facts, Host, Package, ProbeStatus, PythonEnv, VenvConfig
from envdoctor.remedies import pip_install
from envdoctor.remedies.python import PEP668_NOTE, installer_for, pip_command

PY = "/usr/bin/python3"
DEBIAN = Facts(host=Host(status=ProbeStatus.OK, os="Linux", distro_id="debian", distro_version="12"))


def env(pip="23.0.1", **kw) -> PythonEnv:
    pkgs = [Package("torch", "2.13.0+cpu", installer="pip")] + ([Package("pip", pip)] if pip else [])
    base = dict(status=ProbeStatus.OK, executable=PY, python_version="3.11.2", platform="linux-x86_64",
                has_pip=bool(pip), has_ensurepip=True, packages=pkgs)
    base.update(kw)
    return PythonEnv(**base)


def test_an_externally_managed_python_gets_the_override_and_says_why() -> None:
    line = pip_install(DEBIAN, env(externally_managed=True), ["typing-extensions>=4.10.0"])
    assert line == f"{PY} -m pip install 'typing-extensions>=4.10.0' --break-system-packages   # {PEP668_NOTE}"
    inst = installer_for(DEBIAN, env(externally_managed=True))
    assert pip_command(inst, "uninstall", "-y", "torch").startswith(f"{PY} -m pip uninstall -y torch "
                                                                    "--break-system-packages")
    assert pip_command(inst, "check") == f"{PY} -m pip check"  # reading is allowed
    # pip before 23.0 does not read the marker (and 23.0.1 added the option): nothing to add
    assert pip_install(DEBIAN, env("22.3.1", externally_managed=True), ["x"]) == f"{PY} -m pip install x"
    # pip 23.0 reads it but has no override (packages.pip says no pip fix can run there): no unknown option
    assert pip_install(DEBIAN, env("23.0", externally_managed=True), ["x"]) == f"{PY} -m pip install x"
    assert pip_install(DEBIAN, env(externally_managed=False), ["x"]) == f"{PY} -m pip install x"


def test_a_pip_too_old_for_manylinux_x_y_tags_is_upgraded_first() -> None:
    line = pip_install(DEBIAN, env("20.2.4"), ["torch==2.13.0"])
    assert line == f"{PY} -m pip install --upgrade pip && {PY} -m pip install torch==2.13.0"
    assert pip_install(DEBIAN, env("20.3"), ["torch==2.13.0"]) == f"{PY} -m pip install torch==2.13.0"
    inst = installer_for(DEBIAN, env("20.2.4"))
    assert pip_command(inst, "uninstall", "-y", "torch") == f"{PY} -m pip uninstall -y torch"


def test_no_pip_ensurepip_where_it_can_run_else_the_distributions_package() -> None:
    assert pip_install(DEBIAN, env(None), ["x"]) == f"{PY} -m ensurepip --upgrade && {PY} -m pip install x"
    no_ensurepip = env(None, has_ensurepip=False)
    assert pip_install(DEBIAN, no_ensurepip, ["x"]) == f"sudo apt-get install -y python3-pip && {PY} -m pip install x"
    # a venv whose base lacks ensurepip: Debian ships it in python3.X-venv
    venv = env(None, has_ensurepip=False, is_venv=True, executable="/srv/v/bin/python")
    assert pip_install(DEBIAN, venv, ["x"]) == ("sudo apt-get install -y python3.11-venv && /srv/v/bin/python -m "
                                               "ensurepip --upgrade --default-pip && /srv/v/bin/python -m pip "
                                               "install x")
    # ensurepip has no --break-system-packages (cpython#118384): a managed Python gets the distribution's pip
    managed = env(None, externally_managed=True)
    assert pip_install(DEBIAN, managed, ["x"]) == (f"sudo apt-get install -y python3-pip && {PY} -m pip install x "
                                                  f"--break-system-packages   # {PEP668_NOTE}")


def test_uv_environments() -> None:
    made_by_uv = env(None, is_venv=True, executable="/srv/v/bin/python", packages=[],
                     venv=VenvConfig(root="/srv/v", cfg={"uv": "0.5.4", "version_info": "3.11.2"}))
    assert pip_install(DEBIAN, made_by_uv, ["x"]) == "uv pip install --python /srv/v/bin/python x"
    uv_managed = env(externally_managed=True, packages=[Package("torch", "2.13.0", installer="uv")])
    assert pip_install(DEBIAN, uv_managed, ["x"]) == (f"uv pip install --python {PY} x --break-system-packages   "
                                                     f"# {PEP668_NOTE}")
