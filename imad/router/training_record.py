"""The training record of a router checkpoint, typed: how the router was made (SPEC §7).

config.json holds, beside what rebuilds the router (`imad.router.config`), its provenance:
`seed`, `training` (loss, optimiser, the `training.fit` settings), `data` (the corpus summary,
its files and the split), `versions`, `metrics` (validation scores), `calibration` (how
`imad calibrate` chose τ), `recalibration` (what `imad calibrate --recalibrate` fitted) and
`ood_statistics` (what computed the OOD detector). `TrainingRecord` is that provenance as frozen
dataclasses, checked on load: a damaged section is refused with the field's path, a sound one
round-trips to the same JSON (`imad.router.record_schema` keeps each section's key order, so the
shipped v1 and v2 layouts re-save byte-identical).

Free-form, by design: a loss's parameters beyond FocusCal's, the `training.fit` settings other
than those read back (corpus, output, seeds, validation fraction, feature schema and cache), the τ
search's
`choice`, and any top-level section this imad does not know (`extra` of each section).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from imad.constraints import Boolean, Integer, Real
from imad.router.record_schema import (
    MAX_COUNT,
    MAX_MAGNITUDE,
    TEXT,
    Free,
    ListOf,
    MapOf,
    Nested,
    Nullable,
    Section,
    thaw,
)

COUNT = Integer(0, MAX_COUNT)
SEED = Integer(0, 2**32 - 1)  # numpy's and scikit-learn's seed range
TEXTS = ListOf(TEXT)
FLAG = Boolean()


def number(low: float = -MAX_MAGNITUDE, high: float = MAX_MAGNITUDE, **options: Any) -> Real:
    """A measurement's row: finite, bounded, and an int kept an int, so it is written back as
    it was read."""
    return Real(low, high, as_float=False, **options)


PROBABILITY = number(0.0, 1.0)
METRIC = number(nan=True)
"""A measured score: NaN where undefined on its rows (AUROC with one class)."""
POSITIVE = number(0.0, closed="right")


def _section(cls: type[Section]) -> Nested:
    return Nested(cls)


@dataclass(frozen=True, kw_only=True)
class DatasetCounts(Section):
    """Records of one dataset (or of the whole corpus): how many, labelled, and right."""

    records: int | None = None
    labelled: int | None = None
    parse_failures: int | None = None
    positive_rate: float | None = None
    """Share of the labelled answers that are right; null when none is labelled."""

    FIELDS = {"records": ("records", COUNT), "labelled": ("labelled", COUNT),
              "parse_failures": ("parse_failures", COUNT),
              "positive_rate": ("positive_rate", (None, PROBABILITY))}


@dataclass(frozen=True, kw_only=True)
class CorpusFile(Section):
    """One corpus file the router was trained on, as it was then."""

    path: str | None = None
    sha256: str | None = None
    records: int | None = None

    FIELDS = {"path": ("path", TEXT), "sha256": ("sha256", TEXT), "records": ("records", COUNT)}


@dataclass(frozen=True, kw_only=True)
class DataSplit(Section):
    """The stratified train/validation split the scaler, network and metrics used."""

    train: int | None = None
    validation: int | None = None
    seed: int | None = None
    stratify: str | None = None
    train_positive_rate: float | None = None
    validation_positive_rate: float | None = None

    FIELDS = {"train": ("train", COUNT), "validation": ("validation", COUNT),
              "seed": ("seed", SEED), "stratify": ("stratify", TEXT),
              "train_positive_rate": ("train_positive_rate", PROBABILITY),
              "validation_positive_rate": ("validation_positive_rate", PROBABILITY)}


@dataclass(frozen=True, kw_only=True)
class DataSummary(DatasetCounts):
    """The training corpus (`training.corpus_table.summarize_corpus`) and its split."""

    datasets: Mapping[str, DatasetCounts] | None = None
    model_ids: tuple[str, ...] | None = None
    prompt_versions: tuple[str, ...] | None = None
    confidence_sources: tuple[str, ...] | None = None
    modes: tuple[str, ...] | None = None
    files: tuple[CorpusFile, ...] | None = None
    split: DataSplit | None = None

    FIELDS = {**DatasetCounts.FIELDS,
              "datasets": ("datasets", MapOf(_section(DatasetCounts))),
              "model_ids": ("model_ids", TEXTS), "prompt_versions": ("prompt_versions", TEXTS),
              "confidence_sources": ("confidence_sources", TEXTS), "modes": ("modes", TEXTS),
              "files": ("files", ListOf(_section(CorpusFile))), "split": ("split", _section(DataSplit))}


@dataclass(frozen=True, kw_only=True)
class LossRecord(Section):
    """The training objective and its parameters (FocusCal's typed; another loss's in `extra`)."""

    name: str | None = None
    alpha0: float | None = None
    alpha1: float | None = None
    gamma: float | None = None
    tau: float | None = None
    lambda_cp: float | None = None
    mu_ece: float | None = None
    n_bins: int | None = None
    class_balanced_alpha: bool | None = None

    FIELDS = {"name": ("name", TEXT), "alpha0": ("alpha0", number(0.0)),
              "alpha1": ("alpha1", number(0.0)), "gamma": ("gamma", number(0.0)),
              "tau": ("tau", PROBABILITY), "lambda_cp": ("lambda_cp", number(0.0)),
              "mu_ece": ("mu_ece", number(0.0)), "n_bins": ("n_bins", Integer(1, MAX_COUNT)),
              "class_balanced_alpha": ("class_balanced_alpha", FLAG)}


@dataclass(frozen=True, kw_only=True)
class OptimizerRecord(Section):
    """The optimiser, its schedule, and which epoch was exported."""

    name: str | None = None
    learning_rate: float | None = None
    batch_size: int | None = None
    max_epochs: int | None = None
    epochs_run: int | None = None
    selected_epoch: int | None = None
    early_stopping: bool | None = None

    FIELDS = {"name": ("name", TEXT), "learning_rate": ("learning_rate", POSITIVE),
              "batch_size": ("batch_size", Integer(1, MAX_COUNT)), "max_epochs": ("max_epochs", COUNT),
              "epochs_run": ("epochs_run", COUNT),
              "selected_epoch": ("selected_epoch", Integer(-1, MAX_COUNT)),
              "early_stopping": ("early_stopping", FLAG)}


@dataclass(frozen=True, kw_only=True)
class FitSettings(Section):
    """The `training.fit` settings (JSON `training.config`): those read back typed, the other
    flags in `extra` as given (shown for reproducibility, read by nobody)."""

    corpus: tuple[str, ...] | None = None
    output: str | None = None
    seed: int | None = None
    split_seed: int | None = None
    validation_fraction: float | None = None
    feature_schema: int | None = None
    feature_cache: str | None = None

    FIELDS = {"corpus": ("corpus", TEXTS), "output": ("output", TEXT), "seed": ("seed", SEED),
              "split_seed": ("split_seed", SEED),
              "validation_fraction": ("validation_fraction", number(0.0, 1.0, closed="neither")),
              "feature_schema": ("feature_schema", Integer(1, MAX_COUNT)),
              "feature_cache": ("feature_cache", (None, TEXT))}


@dataclass(frozen=True, kw_only=True)
class TrainingSetup(Section):
    """How the network was trained (JSON `training`)."""

    loss: LossRecord | None = None
    optimizer: OptimizerRecord | None = None
    settings: FitSettings | None = None

    FIELDS = {"loss": ("loss", _section(LossRecord)),
              "optimizer": ("optimizer", _section(OptimizerRecord)),
              "config": ("settings", _section(FitSettings))}


@dataclass(frozen=True, kw_only=True)
class ScoreRow(Section):
    """One scorer's validation metrics (`training.metrics.score_report`)."""

    auroc: float | None = None
    ece: float | None = None
    adaptive_ece: float | None = None
    brier: float | None = None
    n: int | None = None
    positive_rate: float | None = None
    trigger_rate: float | None = None

    FIELDS = {"auroc": ("auroc", METRIC), "ece": ("ece", METRIC),
              "adaptive_ece": ("adaptive_ece", METRIC), "brier": ("brier", METRIC),
              "n": ("n", COUNT), "positive_rate": ("positive_rate", METRIC),
              "trigger_rate": ("trigger_rate", METRIC)}


@dataclass(frozen=True, kw_only=True)
class Metrics(Section):
    """Validation metrics of the router and its baselines, at the τ of their measurement."""

    validation: Mapping[str, ScoreRow] | None = None
    selection: str | None = None
    tau: float | None = None

    FIELDS = {"validation": ("validation", MapOf(_section(ScoreRow))),
              "selection": ("selection", TEXT), "tau": ("tau", PROBABILITY)}

    def measured_at(self, tau: float) -> Metrics:
        """These metrics noting first the τ they were measured at: the one already noted, else
        `tau` (the layout `imad calibrate` writes: v1.1 and v2.1)."""
        return Metrics.from_dict({"tau": tau, **self.to_dict()})


@dataclass(frozen=True, kw_only=True)
class TokenBudget(Section):
    """The token budget a τ was chosen for (`imad calibrate --token-budget`)."""

    tokens_per_question: float | None = None
    single_call_tokens: float | None = None
    single_call_tokens_source: str | None = None
    debate_tokens: float | None = None

    FIELDS = {"tokens_per_question": ("tokens_per_question", number(0.0)),
              "single_call_tokens": ("single_call_tokens", number(0.0)),
              "single_call_tokens_source": ("single_call_tokens_source", TEXT),
              "debate_tokens": ("debate_tokens", number(0.0))}


@dataclass(frozen=True, kw_only=True)
class AnswerSource(Section):
    """Where answers came from: their kind and files (further details in `extra`)."""

    kind: str | None = None
    files: tuple[str, ...] | None = None

    FIELDS = {"kind": ("kind", TEXT), "files": ("files", TEXTS)}


@dataclass(frozen=True, kw_only=True)
class ParentRecord(Section):
    """The checkpoint a new version was made from (its τ or calibrator in `extra`)."""

    name: str | None = None
    path: str | None = None

    FIELDS = {"name": ("name", TEXT), "path": ("path", TEXT)}


@dataclass(frozen=True, kw_only=True)
class CalibrationRecord(Section):
    """How `imad calibrate` chose τ (`imad.router.threshold`)."""

    method: str | None = None
    choice: Any = None
    """The τ search's result (`ThresholdChoice` as JSON; free-form)."""
    token_budget: TokenBudget | None = None
    validation: AnswerSource | None = None
    parent: ParentRecord | None = None

    FIELDS = {"method": ("method", TEXT), "choice": ("choice", Free()),
              "token_budget": ("token_budget", Nullable(_section(TokenBudget))),
              "validation": ("validation", _section(AnswerSource)),
              "parent": ("parent", _section(ParentRecord))}


@dataclass(frozen=True, kw_only=True)
class RecalibrationRecord(Section):
    """What `imad calibrate --recalibrate` fitted p's calibrator on (`imad.router.recalibrate`)."""

    method: str | None = None
    described: str | None = None
    answers: int | None = None
    labelled: int | None = None
    unparsed: int | None = None
    files: tuple[str, ...] | None = None
    true_accuracy: float | None = None
    mean_p_before: float | None = None
    mean_p_after: float | None = None
    parent: ParentRecord | None = None

    FIELDS = {"method": ("method", TEXT), "described": ("described", TEXT),
              "answers": ("answers", COUNT), "labelled": ("labelled", COUNT),
              "unparsed": ("unparsed", COUNT), "files": ("files", TEXTS),
              "true_accuracy": ("true_accuracy", (None, PROBABILITY)),
              "mean_p_before": ("mean_p_before", PROBABILITY),
              "mean_p_after": ("mean_p_after", PROBABILITY),
              "parent": ("parent", _section(ParentRecord))}


@dataclass(frozen=True, kw_only=True)
class RowCounts(Section):
    train: int | None = None
    validation: int | None = None

    FIELDS = {"train": ("train", COUNT), "validation": ("validation", COUNT)}


@dataclass(frozen=True, kw_only=True)
class OODProvenance(Section):
    """What computed the OOD statistics, on how many rows (JSON `ood_statistics`)."""

    command: str | None = None
    rows: RowCounts | None = None

    FIELDS = {"command": ("command", TEXT), "rows": ("rows", _section(RowCounts))}


@dataclass(frozen=True, kw_only=True)
class TrainingRecord(Section):
    """A checkpoint's provenance: the config.json sections beside the router's own (module
    docstring). Every section is optional: a router built by hand records none."""

    seed: int | None = None
    training: TrainingSetup | None = None
    data: DataSummary | None = None
    versions: Mapping[str, str] | None = None
    metrics: Metrics | None = None
    calibration: CalibrationRecord | None = None
    recalibration: RecalibrationRecord | None = None
    ood_statistics: OODProvenance | None = None

    FIELDS = {"seed": ("seed", SEED), "training": ("training", _section(TrainingSetup)),
              "data": ("data", _section(DataSummary)), "versions": ("versions", MapOf(TEXT)),
              "metrics": ("metrics", _section(Metrics)),
              "calibration": ("calibration", _section(CalibrationRecord)),
              "recalibration": ("recalibration", _section(RecalibrationRecord)),
              "ood_statistics": ("ood_statistics", _section(OODProvenance))}

    def with_sections(self, **sections: Any) -> TrainingRecord:
        """A copy with these top-level sections (typed or as JSON) added or replaced; a replaced
        one keeps its place."""
        return TrainingRecord.from_dict({**self.to_dict(), **{k: thaw(v) for k, v in sections.items()}})

    @property
    def corpus_paths(self) -> tuple[str, ...]:
        """The corpus files the router was trained on (empty when not recorded)."""
        files = self.data.files if self.data is not None and self.data.files else ()
        return tuple(file.path for file in files if file.path is not None)

    @property
    def corpus_hashes(self) -> frozenset[str]:
        """The sha256 of each recorded corpus file, as it was at training time."""
        files = self.data.files if self.data is not None and self.data.files else ()
        return frozenset(file.sha256 for file in files if file.sha256 is not None)

    @property
    def fit_settings(self) -> FitSettings:
        """The `training.fit` settings (empty when not recorded)."""
        recorded = self.training.settings if self.training is not None else None
        return recorded if recorded is not None else FitSettings()
