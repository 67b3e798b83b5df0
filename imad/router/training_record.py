"""The training record of a router checkpoint, typed: how the router was made.

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
from imad.errors import ConfigError
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
    Structure,
    section,
    stored,
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


@section
class DatasetCounts(Section):
    """Records of one dataset (or of the whole corpus): how many, labelled, and right."""

    records: int | None = stored(COUNT)
    labelled: int | None = stored(COUNT)
    parse_failures: int | None = stored(COUNT)
    positive_rate: float | None = stored((None, PROBABILITY))
    """Share of the labelled answers that are right; null when none is labelled."""


@section
class CorpusFile(Section):
    """One corpus file the router was trained on, as it was then."""

    path: str | None = stored(TEXT)
    sha256: str | None = stored(TEXT)
    records: int | None = stored(COUNT)


@section
class DataSplit(Section):
    """The stratified train/validation split the scaler, network and metrics used."""

    train: int | None = stored(COUNT)
    validation: int | None = stored(COUNT)
    seed: int | None = stored(SEED)
    stratify: str | None = stored(TEXT)
    train_positive_rate: float | None = stored(PROBABILITY)
    validation_positive_rate: float | None = stored(PROBABILITY)


@section
class DataSummary(DatasetCounts):
    """The training corpus (`training.corpus_table.summarize_corpus`) and its split."""

    datasets: Mapping[str, DatasetCounts] | None = stored(MapOf(_section(DatasetCounts)))
    model_ids: tuple[str, ...] | None = stored(TEXTS)
    prompt_versions: tuple[str, ...] | None = stored(TEXTS)
    confidence_sources: tuple[str, ...] | None = stored(TEXTS)
    modes: tuple[str, ...] | None = stored(TEXTS)
    files: tuple[CorpusFile, ...] | None = stored(ListOf(_section(CorpusFile)))
    split: DataSplit | None = stored(_section(DataSplit))


@section
class LossRecord(Section):
    """The training objective and its parameters (FocusCal's typed; another loss's in `extra`)."""

    name: str | None = stored(TEXT)
    alpha0: float | None = stored(number(0.0))
    alpha1: float | None = stored(number(0.0))
    gamma: float | None = stored(number(0.0))
    tau: float | None = stored(PROBABILITY)
    lambda_cp: float | None = stored(number(0.0))
    mu_ece: float | None = stored(number(0.0))
    n_bins: int | None = stored(Integer(1, MAX_COUNT))
    class_balanced_alpha: bool | None = stored(FLAG)


@section
class OptimizerRecord(Section):
    """The optimiser, its schedule, and which epoch was exported."""

    name: str | None = stored(TEXT)
    learning_rate: float | None = stored(POSITIVE)
    batch_size: int | None = stored(Integer(1, MAX_COUNT))
    max_epochs: int | None = stored(COUNT)
    epochs_run: int | None = stored(COUNT)
    selected_epoch: int | None = stored(Integer(-1, MAX_COUNT))
    early_stopping: bool | None = stored(FLAG)


@section
class FitSettings(Section):
    """The `training.fit` settings (JSON `training.config`): those read back typed, the other
    flags in `extra` as given (shown for reproducibility, read by nobody)."""

    corpus: tuple[str, ...] | None = stored(TEXTS)
    output: str | None = stored(TEXT)
    seed: int | None = stored(SEED)
    split_seed: int | None = stored(SEED)
    validation_fraction: float | None = stored(number(0.0, 1.0, closed="neither"))
    feature_schema: int | None = stored(Integer(1, MAX_COUNT))
    feature_cache: str | None = stored((None, TEXT))


@section
class TrainingSetup(Section):
    """How the network was trained (JSON `training`)."""

    loss: LossRecord | None = stored(_section(LossRecord))
    optimizer: OptimizerRecord | None = stored(_section(OptimizerRecord))
    settings: FitSettings | None = stored(_section(FitSettings), json_key="config")


@section
class ScoreRow(Section):
    """One scorer's validation metrics (`training.metrics.score_report`)."""

    auroc: float | None = stored(METRIC)
    ece: float | None = stored(METRIC)
    adaptive_ece: float | None = stored(METRIC)
    brier: float | None = stored(METRIC)
    n: int | None = stored(COUNT)
    positive_rate: float | None = stored(METRIC)
    trigger_rate: float | None = stored(METRIC)


@section
class Metrics(Section):
    """Validation metrics of the router and its baselines, at the τ of their measurement."""

    validation: Mapping[str, ScoreRow] | None = stored(MapOf(_section(ScoreRow)))
    selection: str | None = stored(TEXT)
    tau: float | None = stored(PROBABILITY)
    scoreboard: Mapping[str, Any] | None = stored(Free())
    """AUROC with 95% bootstrap intervals pooled and within each dataset and task type
    (`training.scoreboard`; issue 35), None where a group holds one class."""
    importance: tuple[Any, ...] | None = stored(Free())
    """Permutation importance of the features on the validation split, largest first."""

    def measured_at(self, tau: float) -> Metrics:
        """These metrics noting first the τ they were measured at: the one already noted, else
        `tau` (the layout `imad calibrate` writes: v1.1 and v2.1)."""
        return Metrics.from_dict({"tau": tau, **self.to_dict()})


@section
class TokenBudget(Section):
    """The token budget a τ was chosen for (`imad calibrate --token-budget`)."""

    tokens_per_question: float | None = stored(number(0.0))
    single_call_tokens: float | None = stored(number(0.0))
    single_call_tokens_source: str | None = stored(TEXT)
    debate_tokens: float | None = stored(number(0.0))


@section
class AnswerSource(Section):
    """Where answers came from: their kind and files (further details in `extra`)."""

    kind: str | None = stored(TEXT)
    files: tuple[str, ...] | None = stored(TEXTS)


@section
class ParentRecord(Section):
    """The checkpoint a new version was made from (its τ or calibrator in `extra`)."""

    name: str | None = stored(TEXT)
    path: str | None = stored(TEXT)


@section
class CalibrationRecord(Section):
    """How `imad calibrate` chose τ (`imad.router.threshold`)."""

    method: str | None = stored(TEXT)
    choice: Any = stored(Free())
    """The τ search's result (`ThresholdChoice` as JSON; free-form)."""
    token_budget: TokenBudget | None = stored(Nullable(_section(TokenBudget)))
    validation: AnswerSource | None = stored(_section(AnswerSource))
    parent: ParentRecord | None = stored(_section(ParentRecord))


@section
class RecalibrationRecord(Section):
    """What `imad calibrate --recalibrate` fitted p's calibrator on (`imad.router.recalibrate`)."""

    method: str | None = stored(TEXT)
    described: str | None = stored(TEXT)
    answers: int | None = stored(COUNT)
    labelled: int | None = stored(COUNT)
    unparsed: int | None = stored(COUNT)
    files: tuple[str, ...] | None = stored(TEXTS)
    true_accuracy: float | None = stored((None, PROBABILITY))
    mean_p_before: float | None = stored(PROBABILITY)
    mean_p_after: float | None = stored(PROBABILITY)
    parent: ParentRecord | None = stored(_section(ParentRecord))


@section
class RowCounts(Section):
    train: int | None = stored(COUNT)
    validation: int | None = stored(COUNT)


@section
class OODProvenance(Section):
    """What computed the OOD statistics, on how many rows (JSON `ood_statistics`)."""

    command: str | None = stored(TEXT)
    rows: RowCounts | None = stored(_section(RowCounts))


@dataclass(frozen=True)
class CertificateSection(Structure):
    """A certified threshold's certificate (`imad.decide.certify.Certificate`), read with its
    hash checked: a changed field is a `ConfigError`, so a checkpoint carrying a damaged
    certificate is refused on load."""

    def read(self, value: Any, key: str) -> Any:
        from imad.decide.certify.certificate import Certificate

        if isinstance(value, Certificate):
            return value
        try:
            return Certificate.from_dict(thaw(value))
        except ConfigError as error:  # the certificate's own path, under this key
            raise ConfigError(key + error.field[len("certificate"):],
                              str(error)[len(error.field) + 2:]) from None

    def write(self, value: Any) -> dict[str, Any]:
        return value.to_dict()


@section
class TrainingRecord(Section):
    """A checkpoint's provenance: the config.json sections beside the router's own (module
    docstring). Every section is optional: a router built by hand records none."""

    seed: int | None = stored(SEED)
    training: TrainingSetup | None = stored(_section(TrainingSetup))
    data: DataSummary | None = stored(_section(DataSummary))
    versions: Mapping[str, str] | None = stored(MapOf(TEXT))
    metrics: Metrics | None = stored(_section(Metrics))
    calibration: CalibrationRecord | None = stored(_section(CalibrationRecord))
    recalibration: RecalibrationRecord | None = stored(_section(RecalibrationRecord))
    ood_statistics: OODProvenance | None = stored(_section(OODProvenance))
    certificate: Any = stored(CertificateSection())
    """The promise of a certified τ (`imad calibrate --certify`); None when τ is not certified."""

    def with_sections(self, **sections: Any) -> TrainingRecord:
        """A copy with these top-level sections (typed or as JSON) added or replaced; a replaced
        one keeps its place."""
        return TrainingRecord.from_dict({**self.to_dict(), **{k: thaw(v) for k, v in sections.items()}})

    def without(self, *keys: str) -> TrainingRecord:
        """A copy without these top-level sections (a new τ or calibrator voids a certificate)."""
        return TrainingRecord.from_dict({k: v for k, v in self.to_dict().items() if k not in keys})

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
