"""Where things are (source and build directory), logging, and skipping.

SOURCE_DIR is the checkout this package belongs to; BUILD_DIR is $VXFED_BUILD_DIR or
SOURCE_DIR/build (meson sets both for its tests). Entry points with a --build-dir option pass
their directory on to the classes that start binaries instead of changing BUILD_DIR.

Skipping: a test that cannot run on this machine calls `skip(reason)`. That exits 77 (meson
reports "skipped") unless VXFED_REQUIRE_ALL=1 (set by scripts/test.sh, i.e. in CI), where it
exits 1: CI has no skipped tests.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Callable, Optional

SKIP_EXIT = 77

SOURCE_DIR = Path(os.environ.get("VXFED_SOURCE_DIR") or Path(__file__).resolve().parents[2])
BUILD_DIR = Path(os.environ.get("VXFED_BUILD_DIR") or SOURCE_DIR / "build")
SCRIPTS_DIR = SOURCE_DIR / "scripts"


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def skip(reason: str) -> None:
    """Skips the test, or fails it where every test must run (CI)."""
    if os.environ.get("VXFED_REQUIRE_ALL") == "1" or os.environ.get("CI") == "true":
        print(f"FAIL (cannot run, and skipping is not allowed here): {reason}", file=sys.stderr)
        sys.exit(1)
    print(f"SKIP: {reason}", file=sys.stderr)
    sys.exit(SKIP_EXIT)


def require_root() -> None:
    if os.geteuid() != 0:
        skip("needs root (network namespaces)")


def binary(rel: str | Path, build_dir: Optional[Path] = None) -> Path:
    """A build output by its path below the build directory (absolute paths pass through)."""
    p = Path(rel)
    return p if p.is_absolute() else Path(build_dir or BUILD_DIR) / p


def require_binary(path: str | Path, build_dir: Optional[Path] = None) -> Path:
    p = binary(path, build_dir)
    if not p.exists():
        skip(f"{p} is not built")
    return p


def require_program(name: str) -> str:
    found = shutil.which(name)
    if not found:
        skip(f"{name} is not installed (scripts/install-deps.sh installs it)")
    return found


def main_wrapper(test_main: Callable[[], None]) -> None:
    """Runs a test's main, turning exceptions into a clear failure with exit code 1."""
    try:
        test_main()
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - report everything
        traceback.print_exc()
        print(f"FAIL: {exc}", file=sys.stderr)
        sys.exit(1)
    print("PASS")
