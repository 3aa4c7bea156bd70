"""Lines that quote an NVIDIA library status (compat_data/status_codes.json) are messages, whatever their words.

The message reader keeps a line on its trigger words ("Error", "failed" ...); a status is often quoted without one
("Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED" on an info line, "NVML_ERROR_GPU_IS_LOST" in a
tool's table, "CUBLAS_STATUS_EXECUTION_FAILED when calling ..."). This reader adds each line that quotes a status
the table knows (by name, by number beside its library's words, or by its standard message) to the paste's
messages, so that the status check (checks/messages_status.py) can explain it. It runs after the message reader:
the messages that reader assembled keep their places.
"""

from __future__ import annotations

from typing import Any

from ...compat.status_codes import status_table, statuses_in
from .base import Acc, Paste

# every status name, library word and standard message holds one of these (lower-case); a line without any is not
# read further
_KEYWORDS = ["cuda", "cudnn", "cublas", "nccl", "nvml", "nvrtc", "cusolver", "cufft", "curand", "cusparse",
             "illegal memory access", "kernel image", "launch failure", "device-side assert"]
MAX_LINES = 400  # lines of a long log read for statuses, the first and the last ones


def read_status_lines(paste: Paste, acc: Acc, compat: Any) -> None:
    table = status_table(compat) if compat is not None else None
    if not table:
        return
    lines = paste.lines
    for i in paste.distinct(paste.with_any(_KEYWORDS), head=MAX_LINES // 2, tail=MAX_LINES // 2):
        line = lines[i][:2000]
        if any(m.row.kind != "success" for m in statuses_in(line, table)):
            acc.add_message(line.strip())

