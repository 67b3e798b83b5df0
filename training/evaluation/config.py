"""The typed settings of `python -m training.evaluate` (SPEC §10): one frozen dataclass.

Invalid values raise `ConfigError` naming the field and its command-line flag.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from imad.critique.call import CONFIDENCE_SOURCES
from imad.errors import ConfigError

DEFAULT_CORPUS_DIR = "corpus"
DEFAULT_OUT = "runs/evaluate"
DEFAULT_FEATURE_CACHE = "runs/feature-cache"
BUILT_IN_DATASETS = ("medqa", "gsm8k", "mmlu", "mmlu_pro", "bbh", "scienceqa")
"""The zero-shot datasets SPEC §10 names; any registered name or generic .jsonl file works."""


@dataclass(frozen=True)
class EvaluateConfig:
    """Everything one evaluation run depends on."""

    datasets: tuple[str, ...]
    """Registered dataset names (`training.data.DATASETS`) or generic .jsonl files."""
    router: str | None = None
    """Checkpoint directory (None: the shipped `checkpoints/imad-router-v1`)."""
    llm: str = "local"
    """Chat back-end spec (`imad.llm.spec`) that answers the self-critique calls."""
    limit: int | None = None
    """Questions per dataset (a seeded, stratified sample for the built-in datasets)."""
    corpus_dir: str = DEFAULT_CORPUS_DIR
    """Response cache root: answers go to CORPUS_DIR/<model>/eval/<dataset>.jsonl."""
    train_corpus: tuple[str, ...] = ()
    """The router's training corpus, for the logistic-regression baseline (default: the
    files recorded in the checkpoint)."""
    out: str = DEFAULT_OUT
    """Report directory: report.md, report.json, reliability-<dataset>.png."""
    data_dir: str | None = None
    max_tokens: int = 512
    confidence_source: str | None = None
    """verbal | token_probability (None: the one the router was trained with)."""
    workers: int = 1
    progress: bool = True
    feature_cache: str | None = DEFAULT_FEATURE_CACHE

    def __post_init__(self) -> None:
        object.__setattr__(self, "datasets", tuple(str(d) for d in self.datasets))
        object.__setattr__(self, "train_corpus", tuple(str(p) for p in self.train_corpus))
        if not self.datasets:
            raise ConfigError("datasets (--dataset)", "name at least one dataset, e.g. "
                              f"--dataset {BUILT_IN_DATASETS[1]} or --dataset my_questions.jsonl")
        if len(set(self.datasets)) != len(self.datasets):
            raise ConfigError("datasets (--dataset)", f"a dataset is named twice: {self.datasets}")
        names = [dataset_name(d) for d in self.datasets]
        if len(set(names)) != len(names):
            raise ConfigError("datasets (--dataset)", f"two datasets share the name {names}; rename "
                              "one of the files")
        if self.limit is not None and (isinstance(self.limit, bool) or self.limit < 1):
            raise ConfigError("limit (--limit)", f"must be ≥ 1, got {self.limit!r}")
        if self.max_tokens < 32:
            raise ConfigError("max_tokens (--max-tokens)", f"must be ≥ 32, got {self.max_tokens}")
        if self.workers < 1:
            raise ConfigError("workers (--workers)", f"must be ≥ 1, got {self.workers}")
        if self.confidence_source is not None and self.confidence_source not in CONFIDENCE_SOURCES:
            raise ConfigError("confidence_source (--confidence-source)",
                              f"must be one of {CONFIDENCE_SOURCES}, got {self.confidence_source!r}")
        for name in ("llm", "corpus_dir", "out"):
            if not str(getattr(self, name)).strip():
                raise ConfigError(f"{name} (--{name.replace('_', '-')})", "must not be empty")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["datasets"] = list(self.datasets)
        data["train_corpus"] = list(self.train_corpus)
        return data


def dataset_name(dataset: str) -> str:
    """The report and cache name of a dataset: the registered name, or a file's stem."""
    return Path(dataset).stem if dataset.endswith((".jsonl", ".json")) else dataset
