"""Project configuration: `[tool.envdoctor]` in pyproject.toml or envdoctor.toml, found upward from a directory.

TOML is read with the standard library's tomllib on Python 3.11+, and with `tomli` (the package tomllib was
made from, a declared dependency for Python < 3.11) on 3.9/3.10, so every supported Python reads the same
TOML the same way; a hand-written reader would disagree with both on some valid file.
"""

from __future__ import annotations

import os
import sys
from dataclasses import field
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from envdoctor.domain.fastclass import dataclass

CONFIG_NAMES = ("envdoctor.toml", "pyproject.toml")  # envdoctor.toml wins when a directory has both

# Every key [tool.envdoctor] may hold; anything else is a usage error (a typo would otherwise be ignored
# and an assertion silently not made)
KNOWN_KEYS = ("require", "target-driver", "target-gpus", "expect-gpu", "fail-on", "only", "ignore")


class ConfigError(ValueError):
    """An unreadable or malformed project file; the message is one line naming the file."""


@dataclass(frozen=True)
class ProjectConfig:
    path: Optional[str] = None  # the file it came from; None: nothing found
    require: List[str] = field(default_factory=list)
    target_driver: Optional[str] = None
    target_gpus: List[str] = field(default_factory=list)
    expect_gpu: Optional[bool] = None
    fail_on: Optional[str] = None
    only: List[str] = field(default_factory=list)
    ignore: List[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.path} [tool.envdoctor]" if self.path else "no project file"


def _toml_loads(text: str, name: str) -> Dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.9/3.10
        try:
            import tomli as tomllib
        except ImportError:
            raise ConfigError(f"{name}: reading TOML on Python {sys.version_info[0]}.{sys.version_info[1]} "
                              "needs the 'tomli' package (pip install tomli)") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{name}: invalid TOML: {e}") from None


def read_file(path: Union[str, Path]) -> Optional[Dict[str, Any]]:
    """The envdoctor table of one file: ``[tool.envdoctor]`` (or, in envdoctor.toml, the top level too).

    None when a pyproject.toml has no such table; ConfigError when the file cannot be read or parsed.
    """
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read {p}: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{p}: not UTF-8 text") from None
    doc = _toml_loads(text, str(p))
    table = doc.get("tool", {}).get("envdoctor") if isinstance(doc.get("tool"), dict) else None
    if table is None and p.name != "pyproject.toml":
        table = {k: v for k, v in doc.items() if k != "tool"}
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{p}: [tool.envdoctor] must be a table")
    return table


def _mentions_our_table(path: Path) -> bool:
    try:
        return b"tool.envdoctor" in path.read_bytes()
    except OSError:
        return True  # unreadable: the ConfigError says why


def find_config(start: Optional[Union[str, Path]] = None) -> Optional[Path]:
    """The nearest envdoctor.toml, or pyproject.toml with a [tool.envdoctor] table, from ``start`` upward."""
    here = Path(start or os.getcwd()).resolve()
    for d in [here] + list(here.parents):
        for name in CONFIG_NAMES:
            candidate = d / name
            if not candidate.is_file():
                continue
            if name == "pyproject.toml":
                try:
                    table = read_file(candidate)
                except ConfigError as e:
                    if _mentions_our_table(candidate):
                        raise
                    # another tool's broken file is not ours to refuse: say so, keep looking upward
                    sys.stderr.write(f"envdoctor: warning: {e}; it has no [tool.envdoctor] table, so it is "
                                     "ignored\n")
                    continue
                if table is None:
                    continue  # a pyproject.toml without our table says nothing: keep looking upward
            return candidate
    return None


def _strings(value: Any, key: str, where: str) -> List[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConfigError(f"{where}: {key} must be a string or a list of strings")


def parse_table(table: Dict[str, Any], where: str) -> ProjectConfig:
    unknown = sorted(set(table) - set(KNOWN_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} in [tool.envdoctor] "
                          f"(known: {', '.join(KNOWN_KEYS)})")
    driver = table.get("target-driver")
    if driver is not None and not isinstance(driver, str):
        raise ConfigError(f"{where}: target-driver must be a string such as \"535.104.05\"")
    expect = table.get("expect-gpu")
    if expect is not None and not isinstance(expect, bool):
        raise ConfigError(f"{where}: expect-gpu must be true or false")
    fail_on = table.get("fail-on")
    if fail_on is not None and fail_on not in ("error", "warning"):
        raise ConfigError(f"{where}: fail-on must be \"error\" or \"warning\"")
    return ProjectConfig(
        path=where,
        require=_strings(table.get("require", []), "require", where),
        target_driver=driver,
        target_gpus=_strings(table.get("target-gpus", []), "target-gpus", where),
        expect_gpu=expect,
        fail_on=fail_on,
        only=_strings(table.get("only", []), "only", where),
        ignore=_strings(table.get("ignore", []), "ignore", where),
    )


def load_config(path: Optional[Union[str, Path]] = None, start: Optional[Union[str, Path]] = None
                ) -> ProjectConfig:
    """``--config FILE`` when given (it must exist and hold the table), else the nearest project file."""
    if path is not None:
        table = read_file(path)
        if table is None:
            raise ConfigError(f"{path}: has no [tool.envdoctor] table")
        return parse_table(table, str(path))
    found = find_config(start)
    if found is None:
        return ProjectConfig()
    return parse_table(read_file(found) or {}, str(found))
