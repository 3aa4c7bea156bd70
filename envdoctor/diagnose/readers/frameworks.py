"""Frameworks other than torch as a paste names them (issue 42): TensorFlow's release and the platform from its issue
template (``### TensorFlow version`` then ``tf 2.16``, ``### OS platform and distribution`` then ``win10``), a
pinned install or a mention (``tensorflow==2.16``), and the line ``tf.__version__`` printed (``TensorFlow version:
2.16.1``). The package goes into the interpreter's packages (priority LOOSE: a package list says more), the
platform into ``host.os`` when the field names Windows; ``diagnose.framework-platform`` judges them."""

from __future__ import annotations

import re

from ...model.facts import Package
from .base import LOOSE, Acc, Paste

# a template field name alone on its line (Markdown heading or bold, optionally with a colon)
_FIELD = re.compile(r"^\s*(?:#{1,6}\s*)?(?:\*\*)?(?P<name>tensorflow version|os platform and distribution)"
                    r"\s*(?:\*\*)?\s*:?\s*$", re.I)
# the field's TensorFlow value: "tf 2.16", "2.16.1", "TensorFlow 2.15", "tensorflow-gpu 2.10.0", "v2.12"
_TF_VALUE = re.compile(r"^\s*(?:[-*]\s*)?`?(?:(?:tf|tensorflow(?:-gpu|-cpu)?)[\s=]*)?v?(?P<v>2\.\d{1,2}(?:\.\d+)?)\b",
                       re.I)
# anywhere: a pin (tensorflow==2.16.1, tensorflow[and-cuda]==2.15) or the version printed
_TF_INLINE = re.compile(r"\btensorflow(?P<extra>-gpu|-cpu)?(?:\[[\w,-]+\])?\s*==\s*(?P<v>\d+\.\d+(?:\.\d+)?)\b|"
                        r"\bTensorFlow [Vv]ersion\s*(?:is\s*)?[:=]?\s*\(?['\"]?(?P<v2>\d+\.\d+(?:\.\d+)?)\b|"
                        # a typed setting item ("TensorFlow: 2.16.1 installed with pip", "- tf: 2.15", "TF version
                        # = 2.12") and tf.__version__ with its value on the line ("tf.__version__ -> '2.16.1'")
                        r"^\W*(?:\d{1,2}[.)]\s*)?(?:tensorflow(?P<extra3>-gpu|-cpu)?|tf)(?:\s+version)?\s*[:=]\s*v?"
                        r"(?P<v3>2\.\d{1,2}(?:\.\d+)?)\b|"
                        r"\btf\.__version__\W{1,12}(?P<v4>2\.\d{1,2}(?:\.\d+)?)\b", re.I)
_WINDOWS = re.compile(r"^\s*(?:[-*]\s*)?`?(?:microsoft\s+)?win(?:dows)?\s*-?\s*(?:10|11|server|\d{2})?\b", re.I)
_LOOKAHEAD = 4  # lines under a field name that may hold its value (blank lines between)


def read_frameworks(paste: Paste, acc: Acc) -> None:
    lines = paste.lines
    for i in paste.with_any(["tensorflow", "os platform", "tf"]):
        line = lines[i]
        f = _FIELD.match(line)
        if f:
            value = next((nxt for nxt in lines[i + 1:i + 1 + _LOOKAHEAD] if nxt.strip()), "")
            how = f"{line.strip()} / {value.strip()}"[:160]
            if f.group("name").lower().startswith("tensorflow"):
                m = _TF_VALUE.match(value)
                if m:
                    acc.add_package(Package(name="tensorflow", version=m.group("v")), LOOSE)
                    acc.put("paste.tensorflow", m.group("v"), LOOSE, how)
            elif _WINDOWS.match(value) and not acc.get("host.wsl"):
                acc.put("host.os", "Windows", LOOSE, how)
            continue
        m = _TF_INLINE.search(line)
        if m:
            version = m.group("v") or m.group("v2") or m.group("v3") or m.group("v4")
            extra = m.group("extra") or m.group("extra3") or ""
            name = "tensorflow" + extra.lower()
            acc.add_package(Package(name=name, version=version), LOOSE)
            acc.put("paste.tensorflow", version, LOOSE, line.strip()[:160])
