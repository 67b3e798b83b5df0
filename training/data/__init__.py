"""Dataset loaders: each turns a local file (or a hub copy) into `Question`s.

`load_questions(name_or_path)` takes a registered name (`pubmedqa`, `gqa`, `medqa`, …) or the
path of a generic JSONL file (see `training.data.generic`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from imad.errors import ConfigError
from imad.question import Question
from training.data.bbh import load_bbh
from training.data.generic import load_generic_jsonl
from training.data.gqa import load_gqa
from training.data.gsm8k import load_gsm8k
from training.data.location import resolve_data_dir
from training.data.medqa import load_medqa
from training.data.mmlu import load_mmlu
from training.data.mmlu_pro import load_mmlu_pro
from training.data.pubmedqa import load_pubmedqa
from training.data.scienceqa import load_scienceqa

DATASETS: dict[str, Callable[..., list[Question]]] = {
    "pubmedqa": load_pubmedqa,
    "gqa": load_gqa,
    "medqa": load_medqa,
    "gsm8k": load_gsm8k,
    "mmlu": load_mmlu,
    "mmlu_pro": load_mmlu_pro,
    "bbh": load_bbh,
    "scienceqa": load_scienceqa,
}


def load_questions(name_or_path: str, *, data_dir: str | Path | None = None,
                   limit: int | None = None, image_dir: str | Path | None = None) -> list[Question]:
    """Questions of a registered dataset or of a generic JSONL file.

    A name that is neither registered nor a file is a `ConfigError` (a usage mistake, exit 2);
    a file that is missing or malformed is a `DatasetError` naming file and line (exit 3).
    """
    if limit is not None and (isinstance(limit, bool) or limit < 1):
        raise ConfigError("limit (--limit)", f"must be ≥ 1, got {limit!r}")
    loader = DATASETS.get(name_or_path)
    if loader is None:
        path = Path(name_or_path)
        if path.suffix in (".jsonl", ".json") or path.exists():
            return load_generic_jsonl(path, limit, Path(image_dir) if image_dir else None)
        raise ConfigError("dataset (--dataset)", f"unknown dataset {name_or_path!r}: use one of "
                          f"{sorted(DATASETS)} or the path of a generic .jsonl file")
    kwargs = {"image_dir": Path(image_dir)} if image_dir and name_or_path == "gqa" else {}
    return loader(resolve_data_dir(data_dir), limit=limit, **kwargs)


__all__ = ["DATASETS", "load_questions", "resolve_data_dir"]
