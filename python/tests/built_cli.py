"""Where a built ``numalab`` binary is, for the tests that compare the
Python package's output with the command line's."""

import os
import shutil
from pathlib import Path
from typing import Optional

#: The repository's root (python/tests/../..).
ROOT = Path(__file__).resolve().parents[2]


def find_cli() -> Optional[str]:
    """A built numalab binary: $NUMALAB_BIN, else the workspace's, else
    one on PATH; None if there is none."""
    for p in (
        os.environ.get("NUMALAB_BIN"),
        ROOT / "target/debug/numalab",
        ROOT / "target/release/numalab",
        shutil.which("numalab"),
    ):
        if p and Path(p).is_file() and os.access(p, os.X_OK):
            return str(p)
    return None
