"""The typed settings of the zero-shot calibration run, `python -m training.evaluate` (SPEC §10).

`EvaluateConfig` is frozen and checked on creation: invalid values raise `ConfigError` naming
the field and its command-line flag. The checks every run over datasets shares
(`check_run_settings`) are also those of the end-to-end benchmark (`training.e2e.config`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

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
    """Checkpoint directory (None: the shipped default, `checkpoints/imad-router-v2`)."""
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
    recalibrate: int | None = None
    """N: also recalibrate p on N labelled answers of each dataset and score the rest
    (`training.evaluation.recalibration`); None: zero-shot only."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "datasets", tuple(str(d) for d in self.datasets))
        object.__setattr__(self, "train_corpus", tuple(str(p) for p in self.train_corpus))
        check_run_settings(self)
        if self.workers < 1:
            raise ConfigError("workers (--workers)", f"must be ≥ 1, got {self.workers}")
        if self.recalibrate is not None and (type(self.recalibrate) is not int or self.recalibrate < 10):
            raise ConfigError("recalibrate (--recalibrate)", "must be a whole number of labelled "
                              f"answers ≥ 10, got {self.recalibrate!r}")
        for name in ("llm", "corpus_dir", "out"):
            if not str(getattr(self, name)).strip():
                raise ConfigError(f"{name} (--{name.replace('_', '-')})", "must not be empty")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["datasets"] = list(self.datasets)
        data["train_corpus"] = list(self.train_corpus)
        return data


class RunSettings(Protocol):
    """The settings every run over datasets has (`EvaluateConfig`, `E2EConfig`)."""

    @property
    def datasets(self) -> tuple[str, ...]: ...
    @property
    def limit(self) -> int | None: ...
    @property
    def max_tokens(self) -> int: ...
    @property
    def confidence_source(self) -> str | None: ...


def check_run_settings(config: RunSettings) -> None:
    """The checks both run modes share: datasets, --limit, --max-tokens, --confidence-source."""
    if not config.datasets:
        raise ConfigError("datasets (--dataset)", "name at least one dataset, e.g. "
                          f"--dataset {BUILT_IN_DATASETS[1]} or --dataset my_questions.jsonl")
    if len(set(config.datasets)) != len(config.datasets):
        raise ConfigError("datasets (--dataset)", f"a dataset is named twice: {config.datasets}")
    names = [dataset_name(d) for d in config.datasets]
    if len(set(names)) != len(names):
        raise ConfigError("datasets (--dataset)", f"two datasets share the name {names}; rename "
                          "one of the files")
    if config.limit is not None and (isinstance(config.limit, bool) or config.limit < 1):
        raise ConfigError("limit (--limit)", f"must be ≥ 1, got {config.limit!r}")
    if config.max_tokens < 32:
        raise ConfigError("max_tokens (--max-tokens)", f"must be ≥ 32, got {config.max_tokens}")
    if config.confidence_source is not None and config.confidence_source not in CONFIDENCE_SOURCES:
        raise ConfigError("confidence_source (--confidence-source)",
                          f"must be one of {CONFIDENCE_SOURCES}, got {config.confidence_source!r}")


def dataset_name(dataset: str) -> str:
    """The report and cache name of a dataset: the registered name, or a file's stem."""
    return Path(dataset).stem if dataset.endswith((".jsonl", ".json")) else dataset
