"""Where datasets live: `--data-dir`, else `IMAD_DATA_DIR`, else `../shared/datasets`.

The default is tried relative to the working directory and then to the repository root, so the
commands work both from the checkout and from a sibling folder such as a CI clone.
"""

from __future__ import annotations

import os
from pathlib import Path

from imad.errors import DatasetError

DATA_DIR_ENV = "IMAD_DATA_DIR"
DEFAULT_DATA_DIR = Path("..") / "shared" / "datasets"
_REPO_ROOT = Path(__file__).resolve().parents[2]


def set_offline() -> None:
    """Keep HF libraries off the network unless the user explicitly turned that on."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    """The dataset folder to read from (see the module docstring)."""
    if data_dir is not None or os.environ.get(DATA_DIR_ENV):
        path = Path(data_dir if data_dir is not None else os.environ[DATA_DIR_ENV]).expanduser()
        if not path.is_dir():
            raise DatasetError(f"data directory {path} does not exist (from "
                               f"{'--data-dir' if data_dir is not None else DATA_DIR_ENV})")
        return path
    for candidate in (DEFAULT_DATA_DIR, _REPO_ROOT / DEFAULT_DATA_DIR):
        if candidate.is_dir():
            return candidate
    raise DatasetError(f"no data directory: {DEFAULT_DATA_DIR} is missing; pass --data-dir or set "
                       f"{DATA_DIR_ENV}")


def dataset_file(data_dir: Path, relative: str) -> Path:
    path = data_dir / relative
    if path.is_dir():
        raise DatasetError(f"dataset file {path} is a directory, not a file")
    if not path.is_file():
        raise DatasetError(f"dataset file {path} not found; is {data_dir} the shared datasets folder?")
    return path
