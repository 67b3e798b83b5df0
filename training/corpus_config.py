"""The typed settings of a corpus run, `python -m training.corpus`.

`CorpusConfig` is frozen and checked on creation by its constraints table (`imad.constraints`);
a bad value raises `ConfigError` naming the field and its flag, before any dataset is read or
any model loaded. The rows a run over datasets shares are those of the evaluation run
(`training.evaluation.config.RUN_SETTINGS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from imad.constraints import MAX_SEED, Constraints, Integer, Options, Text, Texts, check_fields
from imad.critique.call import CONFIDENCE_SOURCES
from imad.critique.schema import DEFAULT_MAX_TEXT_CHARS, MAX_TEXT_CHARS_LIMIT, MIN_TEXT_CHARS
from training.evaluation.config import DEFAULT_CORPUS_DIR, RUN_SETTINGS

FLAGS = {"datasets": "--dataset", "progress": "--no-progress"}
"""The flag of each field whose flag is not `--` + its name with dashes."""


def corpus_flag(name: str) -> str:
    """The flag that sets a CorpusConfig field."""
    return FLAGS.get(name, "--" + name.replace("_", "-"))


def label(name: str) -> str:
    """`field (--flag)`, how a corpus run's config errors name a field."""
    return f"{name} ({corpus_flag(name)})"


@dataclass(frozen=True)
class CorpusConfig:
    """Everything one corpus run depends on (the flags of `python -m training.corpus`)."""

    datasets: tuple[str, ...]
    """Registered dataset names (`training.data.DATASETS`) or generic .jsonl files."""
    llm: str = "local"
    limit: int | None = None
    """Questions per dataset (the first of the seeded order); None: all."""
    order_seed: int | None = 0
    """Seed of the question order; None: file order."""
    out_dir: str = DEFAULT_CORPUS_DIR
    """Corpus root: files go to OUT_DIR/<model>/<dataset>.jsonl."""
    data_dir: str | None = None
    image_dir: str | None = None
    max_tokens: int = 512
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
    confidence_source: str = "verbal"
    workers: int = 1
    progress: bool = True

    constraints: ClassVar[Constraints] = {
        **{name: RUN_SETTINGS[name] for name in ("llm", "limit", "data_dir", "max_tokens", "progress")},
        "datasets": Texts(Text(path=True), max_items=100),
        "order_seed": (None, Integer(0, MAX_SEED)),
        "out_dir": Text(path=True),
        "image_dir": (None, Text(path=True)),
        "max_text_chars": Integer(MIN_TEXT_CHARS, MAX_TEXT_CHARS_LIMIT),
        "confidence_source": Options(*CONFIDENCE_SOURCES),
        "workers": Integer(1, 256),  # concurrent self-critique calls, as in training.evaluate
    }

    def __post_init__(self) -> None:
        check_fields(self, label=label)
