"""Writing a file all or nothing: a temporary file beside it, then a rename.

A checkpoint's three files and a trigger budget's state file are replaced this way, so a reader
(or a run killed mid-write) never sees half a file. Torch-free: the decision package writes its
budget state with it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write `data` to `path` through a temporary file and a rename: all or nothing. `mode`:
    the new file's permission bits (default: mkstemp's 0o600)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        if mode is not None:
            os.fchmod(handle, mode)
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
