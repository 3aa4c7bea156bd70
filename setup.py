"""Build glue for what pyproject.toml cannot say: the package list, and a build_py that starts from a clean slate.

The packages are discovered, so a new subpackage under envdoctor/ can never be left out of the wheel again,
plus envdoctor.compat_data, which is compat_data/ at the top level mapped in by [tool.setuptools.package-dir]
(setuptools' `packages.find` only finds directories under their own names, so it cannot list a mapped one).
"""

import shutil
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


class CleanBuildPy(build_py):
    """build_py that empties its staging copy of the package first: setuptools builds the wheel from
    build/lib, so a module left there by an earlier build (deleted or renamed since, or dropped in by hand)
    would otherwise ship in every later wheel built from this checkout."""

    def run(self) -> None:
        staged = Path(self.build_lib).resolve() / "envdoctor"
        if staged.is_dir() and HERE not in (staged, staged.parent):  # never the source tree itself
            shutil.rmtree(staged)
        super().run()


setup(
    packages=[*find_packages(include=["envdoctor", "envdoctor.*"]), "envdoctor.compat_data"],
    cmdclass={"build_py": CleanBuildPy},
)
