"""`envdoctor update-data`: fetch, verify and install a newer matrix (the only network use; the work is in
envdoctor.services.update_data)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from .common import EXIT_CODES_HELP, EXIT_OK, EXIT_USAGE, UsageError, emit, query_command, write


def add_parsers(sub: Any) -> None:
    p = query_command(sub, "update-data", "fetch a newer matrix (the only network use)", EXIT_CODES_HELP,
                      description="Download a matrix manifest (version, as_of, sha256 per file) from --url or "
                                  "$ENVDOCTOR_DATA_URL, verify and validate every file, and install it "
                                  "atomically into the cache ($ENVDOCTOR_CACHE_DIR, $XDG_CACHE_HOME/envdoctor "
                                  "or ~/.cache/envdoctor). It is used only while newer than the bundled matrix.")
    p.add_argument("--url", help="manifest URL (default: $ENVDOCTOR_DATA_URL)")
    p.add_argument("--offline", action="store_true",
                   help="touch no network: say which matrix is in use and whether the installed update is valid")
    p.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS", help="per request (default: 30)")


def cmd_update_data(args) -> int:
    from ..services.update_data import UpdateError, offline_status, update_from_url

    if args.offline:
        payload, text = offline_status()
        emit(payload, text, args.format)
        return EXIT_OK
    url = args.url or os.environ.get("ENVDOCTOR_DATA_URL")
    if not url:
        raise UsageError("update-data needs a manifest URL: --url URL or ENVDOCTOR_DATA_URL "
                         "(no default location is published yet)")
    try:
        payload, text = update_from_url(url, timeout_s=args.timeout)
    except UpdateError as e:
        if args.format == "json":
            write(json.dumps({"updated": False, "reason": str(e), **e.status}, indent=2), None)
        else:
            sys.stderr.write(f"envdoctor: update-data: {e}\n")
        return EXIT_USAGE  # an unreadable download is unreadable input (README exit codes)
    emit(payload, text, args.format)
    return EXIT_OK


COMMANDS = {"update-data": cmd_update_data}
