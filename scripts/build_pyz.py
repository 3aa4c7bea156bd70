"""Build envdoctor.pyz: envdoctor and its pure-Python dependencies in one zip that any Python on a box runs.

    python scripts/build_pyz.py [-o dist/envdoctor.pyz] [--for-python 3.9 | --wheels DIR] [--compile]

What goes in (zipapp, PEP 441; https://docs.python.org/3/library/zipapp.html):
- this tree's ``envdoctor/`` package (no __pycache__), and ``compat_data/`` as ``envdoctor/compat_data/``: the
  matrix is read inside the zip (compat/datadir.py ``ZipPath``); the payload folder is copied to a temporary
  directory when a target interpreter must run it (probes/payload_launch.py ``payload_path``);
- the pure-Python distributions envdoctor imports (VENDOR), taken from the interpreter running this script
  (its installed files, as their RECORD lists them) or, for a name given there, from a ``*-py3-none-any.whl``
  in ``--wheels DIR``; a distribution with compiled files (``.so``, ``.pyd``) is refused. psutil is compiled and
  left out: only ``envdoctor watch`` uses it, and it says so when it is missing.
- a ``__main__.py`` that refuses, with one line, a Python older than every vendored distribution's
  Requires-Python allows, and runs envdoctor's command line.

The oldest Python the zip runs on is the newest Requires-Python lower bound among what it vendors (printed, and
written into the zip's ``__main__.py``). The building interpreter's own copies may need a newer Python than the
boxes do (packaging 26.4 needs 3.10): ``--for-python 3.9`` asks the package index (``pip download --no-deps
--only-binary :all: --python-version 3.9``) for the newest pure wheel of each vendored distribution that Python
takes, tomli included (TOML configuration on 3.9/3.10), and vendors those; that is how a release zip is built.
``--wheels DIR`` vendors wheels you downloaded yourself (an offline build). tomli is otherwise vendored where it
is found.
"""

from __future__ import annotations

import argparse
import email.parser
import importlib.metadata as metadata
import py_compile
import re
import shutil
import sys
import tempfile
import zipapp
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

REPO = Path(__file__).resolve().parent.parent

# distribution name -> required? (the pyproject dependencies that are pure Python, and what they need:
# rich needs pygments and markdown-it-py (mdurl); rich < 13.8 and others take typing-extensions on old Pythons)
VENDOR: Dict[str, bool] = {
    "packaging": True,
    "rich": True,
    "pygments": True,
    "markdown-it-py": True,
    "mdurl": True,
    "distro": True,
    "nvidia-ml-py": True,  # pynvml.py: NVML through ctypes, pure Python
    "prometheus-client": True,
    "tomli": False,  # Python 3.9/3.10 only (3.11+ has tomllib); taken when found
    "typing-extensions": False,  # needed by some versions of the above on old Pythons; taken when found
}
COMPILED = (".so", ".pyd", ".dll", ".dylib")
FLOOR = (3, 9)  # envdoctor's own requires-python


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _lower_bound(requires_python: Optional[str]) -> Tuple[int, ...]:
    """The lowest Python a Requires-Python allows, read from its >= / > / ~= / == clauses (enough for the
    specifiers these distributions publish: '>=3.10', '>=3.9.0', '>=3.8')."""
    best: Tuple[int, ...] = FLOOR
    for m in re.finditer(r"(>=|~=|==|>)\s*(\d+(?:\.\d+)*)", requires_python or ""):
        v = tuple(int(x) for x in m.group(2).split(".")[:2])
        best = max(best, v)
    return best


def _from_wheel(wheel: Path, dest: Path) -> Tuple[str, str, Optional[str]]:
    """Unpack a pure wheel into ``dest``; (name, version, Requires-Python)."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        bad = [n for n in names if n.endswith(COMPILED)]
        if bad:
            raise SystemExit(f"{wheel.name}: compiled files ({bad[0]}): not a pure-Python wheel")
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(zf.read(meta_name).decode("utf-8"))
        for n in names:
            if n.endswith("/") or n.split("/", 1)[0].endswith(".data"):  # scripts, headers: not importable
                continue
            target = dest / n
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(n))
    return meta["Name"], meta["Version"], meta.get("Requires-Python")


def _from_installed(dist: metadata.Distribution, dest: Path) -> Tuple[str, str, Optional[str]]:
    """Copy an installed distribution's importable files (and its .dist-info) into ``dest``."""
    files = dist.files or []
    copied = 0
    for f in files:
        parts = Path(str(f)).parts
        if not parts or parts[0] == ".." or "__pycache__" in parts or str(f).endswith(".pyc"):
            continue  # console scripts (../../bin), byte code
        if str(f).endswith(COMPILED):
            raise SystemExit(f"{dist.metadata['Name']}: compiled file {f}: not pure Python")
        src = Path(str(dist.locate_file(f)))
        if not src.is_file():
            continue
        target = dest / Path(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
        copied += str(f).endswith(".py")
    if not copied:  # no RECORD (a distribution package's install), or its files are gone
        raise SystemExit(f"{dist.metadata['Name']}: its installed files are not listed (no RECORD) or not there: "
                         "give its wheel with --wheels")
    return dist.metadata["Name"], dist.version, dist.metadata.get("Requires-Python")


MAIN = '''"""envdoctor.pyz: envdoctor and its pure-Python dependencies (built by scripts/build_pyz.py)."""
import sys

MIN_PYTHON = {min_python!r}  # the newest Requires-Python lower bound of what this zip vendors
VENDORED = {vendored!r}

if sys.version_info[:2] < (3, 9):
    sys.stderr.write("envdoctor.pyz: envdoctor needs Python >= 3.9 (this is %d.%d)\\n" % tuple(sys.version_info[:2]))
    sys.exit(2)
if sys.version_info[:2] < MIN_PYTHON:
    sys.stderr.write("envdoctor.pyz: needs Python >= %d.%d (this is %d.%d): it was built with %s; build one for "
                     "this Python with scripts/build_pyz.py --wheels (see its help)\\n"
                     % (MIN_PYTHON + tuple(sys.version_info[:2]) + (", ".join(VENDORED),)))
    sys.exit(2)
sys.dont_write_bytecode = True  # nothing beside the zip: zipimport compiles in memory

from envdoctor.__main__ import run  # noqa: E402

sys.exit(run())
'''


def build(output: Path, wheels: Optional[Path] = None, source: Path = REPO,
          compile_for_this_python: bool = False) -> Dict[str, object]:
    """Build the zip at ``output``; what went in (vendored distributions, the oldest Python it runs on)."""
    wheel_for: Dict[str, Path] = {}
    if wheels is not None:
        for w in sorted(wheels.glob("*.whl")):
            if not w.name.endswith("-none-any.whl"):
                raise SystemExit(f"{w.name}: not a pure-Python wheel (py3-none-any)")
            wheel_for[_norm(w.name.split("-", 1)[0])] = w
    with tempfile.TemporaryDirectory(prefix="envdoctor-pyz-") as tmp:
        stage = Path(tmp) / "app"
        shutil.copytree(source / "envdoctor", stage / "envdoctor",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo"))
        data = stage / "envdoctor" / "compat_data"
        data.mkdir()
        for f in sorted((source / "compat_data").iterdir()):
            if f.suffix in (".json", ".md"):
                shutil.copyfile(f, data / f.name)
        vendored: List[str] = []
        missing: List[str] = []
        min_python = FLOOR
        for name, required in VENDOR.items():
            if _norm(name) in wheel_for:
                got = _from_wheel(wheel_for[_norm(name)], stage)
            else:
                try:
                    dist = metadata.distribution(name)
                except metadata.PackageNotFoundError:
                    if required:
                        raise SystemExit(f"{name} is not installed in {sys.executable} and no wheel of it is in "
                                         "--wheels: install envdoctor's dependencies first") from None
                    missing.append(name)
                    continue
                got = _from_installed(dist, stage)
            vendored.append(f"{got[0]} {got[1]}")
            min_python = max(min_python, _lower_bound(got[2]))
        if compile_for_this_python:
            # byte code beside each module (foo.pyc, the layout zipimport reads), for this Python only: another
            # Python sees a foreign magic number and compiles the source as without it (zipimport._unmarshal_code);
            # unchecked hashes, so no source timestamp is compared
            for f in sorted(stage.rglob("*.py")):
                py_compile.compile(str(f), cfile=str(f) + "c", doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        (stage / "__main__.py").write_text(MAIN.format(min_python=min_python, vendored=vendored),
                                           encoding="utf-8")
        output.parent.mkdir(parents=True, exist_ok=True)
        zipapp.create_archive(stage, output, interpreter="/usr/bin/env python3", compressed=True)
    return {"output": str(output), "bytes": output.stat().st_size, "vendored": vendored,
            "not_found": missing, "min_python": ".".join(map(str, min_python))}


def fetch_wheels(python: str, dest: Path) -> Path:
    """The newest pure wheel of every vendored distribution that Python ``python`` takes, from the package index
    (pip resolves each name against its Requires-Python as it would on that Python), into ``dest``."""
    import subprocess

    if not re.fullmatch(r"3\.\d+", python) or tuple(map(int, python.split("."))) < FLOOR:
        raise SystemExit(f"--for-python {python}: give a Python version 3.X of at least {FLOOR[0]}.{FLOOR[1]}")
    argv = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
            "--python-version", python, "--implementation", "py", "--abi", "none", "--platform", "any",
            "-d", str(dest), *VENDOR]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SystemExit(f"--for-python {python}: pip download did not finish ({e})") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise SystemExit(f"--for-python {python}: pip download failed: " + " | ".join(tail))
    return dest


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("-o", "--output", default=str(REPO / "dist" / "envdoctor.pyz"))
    p.add_argument("--wheels", metavar="DIR", help="pure wheels (*-none-any.whl) to vendor instead of the "
                                                  "installed distributions of the same names")
    p.add_argument("--for-python", metavar="3.X", help="vendor the newest pure wheels that Python 3.X takes, "
                                                         "from the package index (a release zip: --for-python 3.9)")
    p.add_argument("--source", default=str(REPO), help="the envdoctor tree to pack (default: this one)")
    p.add_argument("--compile", action="store_true",
                   help="add byte code for the Python running this script (faster start-up on that Python only; "
                        "a larger file)")
    args = p.parse_args(argv)
    if args.for_python and args.wheels:
        p.error("--for-python and --wheels both say where the dependencies come from: give one")
    with tempfile.TemporaryDirectory(prefix="envdoctor-wheels-") as tmp:
        wheels = fetch_wheels(args.for_python, Path(tmp)) if args.for_python else \
            (Path(args.wheels) if args.wheels else None)
        got = build(Path(args.output), wheels, Path(args.source), args.compile)
    print(f"{got['output']}: {got['bytes']:,} bytes; runs on Python >= {got['min_python']}")
    print(f"  vendored: {', '.join(got['vendored'])}")  # type: ignore[arg-type]
    if got["not_found"]:
        print(f"  not found (optional): {', '.join(got['not_found'])}"  # type: ignore[arg-type]
              + (" - TOML configuration then needs Python >= 3.11" if "tomli" in got["not_found"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
