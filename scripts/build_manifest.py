"""Build an update-data manifest from compat_data/: copy the files and write manifest.json with their sha256.

    python scripts/build_manifest.py OUT_DIR --version 2026.12.05 [--source compat_data] [--as-of YYYY-MM-DD]

Publish OUT_DIR as it is (manifest.json beside the files); `envdoctor update-data --url .../manifest.json`
installs it. The files are validated with envdoctor's own loader first, so a broken matrix is never published.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from envdoctor.compat import CompatDataError  # noqa: E402
from envdoctor.services.update_data import build_manifest  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--version", required=True, help="the matrix version, e.g. 2026.12.05")
    ap.add_argument("--source", type=Path, default=ROOT / "compat_data")
    ap.add_argument("--as-of", help="YYYY-MM-DD (default: the newest as_of of the files)")
    args = ap.parse_args()
    try:
        manifest = build_manifest(args.source, args.out_dir, args.version, args.as_of)
    except (CompatDataError, ValueError) as e:
        print(f"build_manifest: {e}", file=sys.stderr)
        return 2
    print(f"{args.out_dir / 'manifest.json'}: version {manifest['version']}, as of {manifest['as_of']}, "
          f"{len(manifest['files'])} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
