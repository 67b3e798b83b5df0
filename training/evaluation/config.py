"""The typed settings of the zero-shot calibration run, `python -m training.evaluate`.

`EvaluateConfig` is frozen and checked on creation: invalid values raise `ConfigError` naming
the field and its command-line flag. The checks every run over datasets shares
(`check_run_settings`) are also those of the end-to-end benchmark (`training.e2e.config`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from imad.constraints import (
    MAX_COMPLETION_TOKENS,
    Boolean,
    Constraints,
    Integer,
    Options,
    Text,
    Texts,
    check_fields,
)
from imad.critique.call import CONFIDENCE_SOURCES
from imad.errors import ConfigError

DEFAULT_CORPUS_DIR = "corpus"
DEFAULT_OUT = "runs/evaluate"
DEFAULT_FEATURE_CACHE = "runs/feature-cache"
BUILT_IN_DATASETS = ("medqa", "gsm8k", "mmlu", "mmlu_pro", "bbh", "scienceqa")
"""The zero-shot datasets SPEC §10 names; any registered name or generic .jsonl file works."""


RUN_SETTINGS: Constraints = {
    "datasets": Texts(Text(path=True), max_items=100, empty=True),  # none: a hint below
    "router": (None, Text(path=True)),
    "llm": Text(),
    "limit": (None, Integer(1, 1_000_000)),
    "out": Text(path=True),
    "data_dir": (None, Text(path=True)),
    "max_tokens": Integer(32, MAX_COMPLETION_TOKENS),
    "confidence_source": (None, Options(*CONFIDENCE_SOURCES)),
    "progress": Boolean(),
}
"""The constraints rows both run modes share (`EvaluateConfig`, `E2EConfig`)."""

_FLAGS = {"datasets": "--dataset", "cache": "--e2e-cache", "cache_mode": "--e2e-cache-mode",
          "backend_options": "--backend-option", "progress": "--no-progress"}


def run_flag(name: str) -> str:
    """`field (--flag)`, how a run's config errors name a field."""
    return f"{name} ({_FLAGS.get(name, '--' + name.replace('_', '-'))})"


@dataclass(frozen=True)
class RunConfig:
    """The settings every run over datasets has (`EvaluateConfig`, `E2EConfig`), their rows
    and their checks; each mode adds its own fields after these."""

    datasets: tuple[str, ...]
    """Registered dataset names (`training.data.DATASETS`) or generic .jsonl files."""
    router: str | None = None
    """Checkpoint directory (None: the shipped default, `checkpoints/imad-router-v2`)."""
    llm: str = "local"
    """Chat back-end spec (`imad.llm.spec`) that answers every call."""
    limit: int | None = None
    """Questions per dataset (a seeded, stratified sample for the built-in datasets)."""
    out: str = DEFAULT_OUT
    """Report directory."""
    data_dir: str | None = None
    max_tokens: int = 512
    """Completion limit of the self-critique call."""
    confidence_source: str | None = None
    """verbal | token_probability (None: the one the router was trained with)."""
    progress: bool = True

    constraints: ClassVar[Constraints] = RUN_SETTINGS

    def __post_init__(self) -> None:
        check_fields(self, label=run_flag)
        check_run_settings(self)
        self.check()

    def check(self) -> None:
        """A mode's checks across its fields, beyond each one's row."""

    def to_dict(self) -> dict[str, Any]:
        """The settings as JSON (tuples as lists), in field order."""
        return {key: list(value) if isinstance(value, tuple) else value
                for key, value in asdict(self).items()}


@dataclass(frozen=True)
class EvaluateConfig(RunConfig):
    """Everything one evaluation run depends on (`out`: report.md, report.json and
    reliability-<dataset>.png)."""

    corpus_dir: str = DEFAULT_CORPUS_DIR
    """Response cache root: answers go to CORPUS_DIR/<model>/eval/<dataset>.jsonl."""
    train_corpus: tuple[str, ...] = ()
    """The router's training corpus, for the logistic-regression baseline (default: the
    files recorded in the checkpoint)."""
    workers: int = 1
    feature_cache: str | None = DEFAULT_FEATURE_CACHE
    recalibrate: int | None = None
    """N: also recalibrate p on N labelled answers of each dataset and score the rest
    (`training.evaluation.recalibration`); None: zero-shot only."""

    constraints: ClassVar[Constraints] = {
        "corpus_dir": Text(path=True),
        "train_corpus": Texts(Text(path=True), empty=True),
        "workers": Integer(1, 256),  # concurrent self-critique calls
        "recalibrate": (None, Integer(10, 1_000_000)),  # labelled answers per dataset
        "feature_cache": (None, Text(path=True)),
    }

    def check(self) -> None:
        if self.recalibrate is not None and self.limit is not None \
                and self.recalibrate > self.limit - MIN_HELD_OUT:
            raise ConfigError(run_flag("recalibrate"), recalibrate_refusal(
                self.recalibrate, f"--limit {self.limit} questions per dataset"))


MIN_HELD_OUT = 10
"""Fewest answers a recalibration study scores after fitting on N (and fewest it fits on)."""


def recalibrate_refusal(n_labels: int, available: str) -> str:
    """Why `--recalibrate N` cannot run on a set of `available` answers (one message for the
    check before any call and the one on the parsed answers)."""
    return (f"needs 10 ≤ N ≤ answers − {MIN_HELD_OUT} to fit on N and score the rest; got N = "
            f"{n_labels} with {available}")


def check_run_settings(config: RunConfig) -> None:
    """The checks both run modes share beyond their rows: datasets named, and distinct."""
    if not config.datasets:
        raise ConfigError("datasets (--dataset)", "name at least one dataset, e.g. "
                          f"--dataset {BUILT_IN_DATASETS[1]} or --dataset my_questions.jsonl")
    if len(set(config.datasets)) != len(config.datasets):
        raise ConfigError("datasets (--dataset)", f"a dataset is named twice: {config.datasets}")
    names = [dataset_name(d) for d in config.datasets]
    if len(set(names)) != len(names):
        raise ConfigError("datasets (--dataset)", f"two datasets share the name {names}; rename "
                          "one of the files")


def dataset_name(dataset: str) -> str:
    """The report and cache name of a dataset: the registered name, or a file's stem."""
    return Path(dataset).stem if dataset.endswith((".jsonl", ".json")) else dataset
