"""The typed settings of `python -m training.evaluate` (SPEC §10): one frozen dataclass per mode.

`EvaluateConfig` is the zero-shot calibration run, `E2EConfig` the end-to-end benchmark
(`--e2e`). Invalid values raise `ConfigError` naming the field and its command-line flag.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from imad.critique.call import CONFIDENCE_SOURCES
from imad.errors import ConfigError
from imad.llm.cache import CACHE_MODES
from training.evaluation.e2e_methods import E2E_METHODS

DEFAULT_CORPUS_DIR = "corpus"
DEFAULT_OUT = "runs/evaluate"
DEFAULT_FEATURE_CACHE = "runs/feature-cache"
DEFAULT_E2E_CACHE = "runs/e2e-calls.sqlite"
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
        _check_common(self)
        if self.workers < 1:
            raise ConfigError("workers (--workers)", f"must be ≥ 1, got {self.workers}")
        for name in ("llm", "corpus_dir", "out"):
            if not str(getattr(self, name)).strip():
                raise ConfigError(f"{name} (--{name.replace('_', '-')})", "must not be empty")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["datasets"] = list(self.datasets)
        data["train_corpus"] = list(self.train_corpus)
        return data


@dataclass(frozen=True)
class E2EConfig:
    """Everything one end-to-end run (`python -m training.evaluate --e2e`) depends on."""

    datasets: tuple[str, ...]
    """Registered dataset names or generic .jsonl files, as for the calibration run."""
    router: str | None = None
    """Checkpoint of the iMAD methods' router (None: the shipped one); unused without them."""
    llm: str = "local"
    """Chat back-end spec (`imad.llm.spec`) that every method calls."""
    limit: int | None = None
    methods: tuple[str, ...] = tuple(E2E_METHODS)
    """Names in `training.evaluation.e2e_methods.E2E_METHODS`, run in this order."""
    cache: str = DEFAULT_E2E_CACHE
    """The SQLite record/replay cache every call goes through (`imad.llm.cache.CachedChat`)."""
    cache_mode: str = "record"
    """record: replay hits, call the model on misses; replay: never call the model;
    refresh: call the model for every request and overwrite."""
    tau: float | None = None
    """Override the router's τ for the iMAD methods (None: the checkpoint's)."""
    backend_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per debate back-end (`imad.debate.BACKENDS` name), config fields overriding its
    defaults; they apply wherever that back-end runs (alone, or as iMAD's target)."""
    corpus_dir: str | None = DEFAULT_CORPUS_DIR
    """Where the calibration run cached its self-critique answers; the iMAD methods reuse
    those that fit exactly (None: never)."""
    out: str = DEFAULT_OUT
    data_dir: str | None = None
    max_tokens: int = 512
    """Completion limit of the self-critique call (the same as the calibration run's)."""
    confidence_source: str | None = None
    progress: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "datasets", tuple(str(d) for d in self.datasets))
        object.__setattr__(self, "methods", tuple(str(m) for m in self.methods))
        object.__setattr__(self, "backend_options",
                           {str(k): dict(v) for k, v in sorted(self.backend_options.items())})
        _check_common(self)
        if not self.methods:
            raise ConfigError("methods (--methods)", f"name at least one of {list(E2E_METHODS)}")
        unknown = [m for m in self.methods if m not in E2E_METHODS]
        if unknown or len(set(self.methods)) != len(self.methods):
            raise ConfigError("methods (--methods)", f"unknown or repeated {unknown or self.methods}; "
                              f"choose from {list(E2E_METHODS)}")
        if self.cache_mode not in CACHE_MODES:
            raise ConfigError("cache_mode (--e2e-cache-mode)",
                              f"must be one of {CACHE_MODES}, got {self.cache_mode!r}")
        if self.tau is not None and not 0.0 <= self.tau <= 1.0:
            raise ConfigError("tau (--tau)", f"must be in [0, 1], got {self.tau}")
        from imad.debate import make_config

        for backend, fields in self.backend_options.items():
            try:
                make_config(backend, **fields)  # unknown back-ends, fields and values fail here
            except ConfigError as error:
                raise ConfigError("backend_options (--backend-option)", str(error)) from error
        for name in ("llm", "cache", "out"):
            if not str(getattr(self, name)).strip():
                flag = "--e2e-cache" if name == "cache" else f"--{name}"
                raise ConfigError(f"{name} ({flag})", "must not be empty")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["datasets"], data["methods"] = list(self.datasets), list(self.methods)
        return data


def _check_common(config: EvaluateConfig | E2EConfig) -> None:
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
