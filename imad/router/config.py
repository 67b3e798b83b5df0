"""The router's configuration: what rebuilds a `Router` and what config.json holds.

Frozen dataclasses, validated on creation, with one symmetric pair `RouterConfig.from_dict` /
`RouterConfig.to_dict` (the model is litgpt's `Config.from_checkpoint`): loading what was saved
gives an equal config, and saving a loaded config writes the same JSON. The optional `ood`
section holds an out-of-distribution detector's statistics (`imad.router.ood`), checked
on load; checkpoints without it load with no detector. Every value read from a
file is type-checked strictly (`true` is not a number), bounded and finite, and each error names
the offending field, so a damaged checkpoint is refused before any network is built.

The training record (seed, data summary, metrics, library versions, calibration) is the typed,
frozen `TrainingRecord` (`imad.router.training_record`), checked on load like the rest and
changed only by making a new config (`with_record`), so no caller can alter a router that others
hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from imad.constraints import InstanceOf, Integer, Options, Real, check_value
from imad.errors import CheckpointError, ConfigError
from imad.router.calibrators import IDENTITY, Calibrator, calibrator_from_dict
from imad.router.model import RouterNetConfig
from imad.router.ood import OODDetector, ood_from_dict
from imad.router.record_schema import TEXT, ListOf, freeze, read, thaw
from imad.router.training_record import TrainingRecord
from imad.routing_options import OOD_POLICIES, check_tau

CHECKPOINT_FORMAT = "imad-router"
CHECKPOINT_SCHEMA_VERSION = 1
CONFIDENCE_FEATURE = "conf_initial"
"""The feature fed raw (unscaled) into the network's confidence-logit path."""
DEFAULT_CONFIDENCE_SOURCE = "verbal"
"""The source of a router with no training record: the model's written confidence (the paper's)."""
MAX_SCALER_MAGNITUDE = 1e6
"""Bound on |scaler mean| and scaler scale: raw features are counts and scores far below it, and
a larger value turns a scaled row into ±inf in float32 (issue 14: mean 1e308 gave p = NaN)."""
MIN_SCALER_SCALE = 1e-6
MAX_RECORD_DEPTH = 32
"""Deepest nesting allowed in config.json; the real ones are 5 deep."""

FEATURE_NAMES = ListOf(TEXT)
NUMBERS = InstanceOf((list, tuple), "a list of numbers")
SCALER_ROWS = {"mean": Real(-MAX_SCALER_MAGNITUDE, MAX_SCALER_MAGNITUDE),
               "scale": Real(MIN_SCALER_SCALE, MAX_SCALER_MAGNITUDE)}
"""Each feature's scaler mean and scale (`Scaler`)."""
SECTION = InstanceOf(dict, "a JSON object (the section is required)")

CORE_KEYS = ("format", "schema_version", "name", "imad_version", "model", "features", "scaler",
              "calibrator", "threshold", "ood", "ood_policy", "weights")



@dataclass(frozen=True)
class Threshold:
    """τ and how it was chosen (range-checked by `imad.routing_options.check_tau`)."""

    tau: float = 0.7
    method: str = "fixed at the default 0.7 (SPEC §5)"

    def __post_init__(self) -> None:
        object.__setattr__(self, "tau", check_tau(self.tau))  # the one range check of τ


@dataclass(frozen=True)
class FeatureSpec:
    """The ordered feature names the network reads, their schema version and hash."""

    names: tuple[str, ...]
    schema_version: int
    hash: str
    raw_input: str = CONFIDENCE_FEATURE

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", read(FEATURE_NAMES, self.names, "features.names"))
        if CONFIDENCE_FEATURE not in self.names:
            raise ConfigError("features.names", f"the feature list lacks {CONFIDENCE_FEATURE!r}")


@dataclass(frozen=True)
class Scaler:
    """The training scaler: x ↦ (x − mean) / scale, per feature (fitted on the training split)."""

    mean: tuple[float, ...]
    scale: tuple[float, ...]
    kind: str = "standard (x - mean) / scale, fitted on the training split"

    def __post_init__(self) -> None:
        for key, row in SCALER_ROWS.items():
            values = check_value(getattr(self, key), NUMBERS, f"scaler.{key}")
            object.__setattr__(self, key, tuple(check_value(value, row, f"scaler.{key}[{index}]")
                                                for index, value in enumerate(values)))
        if len(self.mean) != len(self.scale):
            raise ConfigError("scaler", f"{len(self.mean)} means but {len(self.scale)} scales")


@dataclass(frozen=True)
class RouterConfig:
    """Everything config.json holds about a router, validated; `weights_sha256` is the file's."""

    model: RouterNetConfig
    features: FeatureSpec
    scaler: Scaler
    threshold: Threshold = field(default_factory=Threshold)
    name: str = "imad-router"
    imad_version: str | None = None
    """The imad that wrote the checkpoint (None in checkpoints older than the field)."""
    weights_sha256: str | None = None
    record: TrainingRecord = field(default_factory=TrainingRecord)
    """Provenance: seed, training set-up, data summary, metrics, library versions; a JSON-like
    mapping given here is read into a `TrainingRecord` (and checked)."""
    ood: Mapping[str, Any] | None = None
    """The out-of-distribution detector's statistics (`imad.router.ood`, read-only); None in
    checkpoints exported before issue 16."""
    ood_policy: str = "flag"
    """"flag": report an unfamiliar answer; "escalate": also send it to a debate."""
    calibrator: Calibrator = IDENTITY
    """Raw network score → probability (`imad.router.calibrators`); identity in checkpoints
    written before calibrators existed, and then absent from config.json."""

    def __post_init__(self) -> None:
        n_features = self.model.n_features
        if len(self.features.names) != n_features:
            raise ConfigError("features.names", f"{len(self.features.names)} feature names for a "
                              f"network with {n_features} inputs")
        if len(self.scaler.mean) != n_features:
            raise ConfigError("scaler", f"{len(self.scaler.mean)} values, expected {n_features} — "
                              "one per feature")
        if not isinstance(self.record, TrainingRecord):
            object.__setattr__(self, "record", TrainingRecord.from_dict(self.record))
        if self.ood is not None:
            self.ood_detector()  # validated on creation, like the rest
            object.__setattr__(self, "ood", freeze(dict(self.ood), "ood"))
        check_value(self.ood_policy, Options(*OOD_POLICIES), "ood_policy")
        if self.ood_policy == "escalate" and self.ood is None:
            raise ConfigError("ood_policy", f"'escalate' needs OOD statistics, which router "
                              f"{self.name!r} lacks; add them with `python -m training.export "
                              "--add-ood ROUTER`")
        check_value(self.calibrator, InstanceOf(Calibrator, "an imad calibrator (imad.fit_calibrator)"),
                    "calibrator")
        self.confidence_source  # noqa: B018 — validated on creation, not on first use

    @property
    def confidence_source(self) -> str:
        """Where the training answers' confidences came from ("verbal" or "token_probability")."""
        from imad.critique.call import CONFIDENCE_SOURCES

        data = self.record.data
        sources = (data.confidence_sources if data is not None else None) \
            or (DEFAULT_CONFIDENCE_SOURCE,)
        if len(sources) != 1 or sources[0] not in CONFIDENCE_SOURCES:
            raise CheckpointError(
                f"router {self.name!r}: data.confidence_sources must name one of "
                f"{list(CONFIDENCE_SOURCES)}, got {list(sources)!r}; retrain on answers of one source"
            )
        return str(sources[0])

    def ood_detector(self) -> OODDetector | None:
        """The OOD detector these statistics rebuild, or None when the checkpoint has none."""
        if self.ood is None:
            return None
        try:
            return ood_from_dict(thaw(self.ood), self.model.n_features)
        except CheckpointError as error:
            raise ConfigError("ood", str(error)) from None

    def with_ood(self, detector: OODDetector | None) -> RouterConfig:
        return replace(self, ood=None if detector is None else detector.to_dict())

    def with_ood_policy(self, policy: str) -> RouterConfig:
        return replace(self, ood_policy=policy)

    def with_calibrator(self, calibrator: Calibrator) -> RouterConfig:
        """A copy with another calibrator; a certificate of the old p no longer holds."""
        return replace(self, calibrator=calibrator, record=self.record.without("certificate"))

    @property
    def training_accuracy(self) -> float | None:
        """The share of right answers in the training data (`data.positive_rate`): the prior a
        label-free prior-shift calibrator starts from; None when not recorded."""
        rate = self.record.data.positive_rate if self.record.data is not None else None
        return float(rate) if rate is not None and 0.0 < rate < 1.0 else None

    def with_threshold(self, tau: float, method: str) -> RouterConfig:
        """A copy with another τ; a certificate of the old τ no longer holds."""
        return replace(self, threshold=Threshold(tau, method), record=self.record.without("certificate"))

    def renamed(self, name: str) -> RouterConfig:
        return replace(self, name=name)

    def with_record(self, **sections: Any) -> RouterConfig:
        """A copy whose record has these top-level sections (typed or as JSON) added or replaced."""
        return replace(self, record=self.record.with_sections(**sections))

    # --- config.json ----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The config.json content (core keys first, then the record, in its own order)."""
        core: dict[str, Any] = {"format": CHECKPOINT_FORMAT, "schema_version": CHECKPOINT_SCHEMA_VERSION,
                                "name": self.name}
        if self.imad_version is not None:
            core["imad_version"] = self.imad_version
        core |= {
            "model": self.model.to_dict(),
            "features": {"schema_version": self.features.schema_version, "hash": self.features.hash,
                         "names": list(self.features.names), "raw_input": self.features.raw_input},
            "scaler": {"kind": self.scaler.kind, "mean": list(self.scaler.mean),
                       "scale": list(self.scaler.scale)},
        }
        if self.calibrator != IDENTITY:  # absent, as in checkpoints older than calibrators
            core["calibrator"] = self.calibrator.to_dict()
        core |= {
            "threshold": {"tau": self.threshold.tau, "method": self.threshold.method},
        }
        if self.ood is not None:  # absent, as in checkpoints older than the statistics
            core |= {"ood": thaw(self.ood), "ood_policy": self.ood_policy}
        core["weights"] = {"file": "model.safetensors", "sha256": self.weights_sha256}
        return {**core, **{k: v for k, v in self.record.to_dict().items() if k not in CORE_KEYS}}

    @classmethod
    def from_dict(cls, data: Any) -> RouterConfig:
        """Validate a parsed config.json; `ConfigError` names the first bad field."""
        _check_depth(data)
        check_value(data, InstanceOf(dict, "a JSON object"), "config.json")
        check_value(data.get("format"), Options(CHECKPOINT_FORMAT), "format")
        model = _section(data, "model")
        features = _section(data, "features")
        scaler = _section(data, "scaler")
        threshold = _section(data, "threshold")
        weights = _section(data, "weights")
        try:
            net = RouterNetConfig.from_dict(model)
        except TypeError as error:
            raise ConfigError("model", str(error)) from error
        return cls(
            model=net,
            features=FeatureSpec(
                names=features.get("names"),
                schema_version=_integer(features.get("schema_version"), "features.schema_version"),
                hash=_text(features.get("hash"), "features.hash"),
                raw_input=_text(features.get("raw_input", CONFIDENCE_FEATURE), "features.raw_input"),
            ),
            scaler=Scaler(mean=scaler.get("mean"), scale=scaler.get("scale"),
                          kind=_text(scaler.get("kind", Scaler.kind), "scaler.kind")),
            threshold=Threshold(tau=_number(threshold.get("tau"), "threshold.tau"),
                                method=_text(threshold.get("method", "not recorded"),
                                             "threshold.method")),
            name=_text(data.get("name", "imad-router"), "name"),
            imad_version=(None if data.get("imad_version") is None
                          else _text(data["imad_version"], "imad_version")),
            weights_sha256=_text(weights.get("sha256"), "weights.sha256"),
            record=TrainingRecord.from_dict({k: v for k, v in data.items() if k not in CORE_KEYS}),
            ood=None if data.get("ood") is None else _section(data, "ood"),
            ood_policy=_text(data.get("ood_policy", "flag"), "ood_policy"),
            calibrator=IDENTITY if "calibrator" not in data else _calibrator(data["calibrator"]),
        )


# --- strict readers -----------------------------------------------------------------------------


def _calibrator(section: Any) -> Calibrator:
    try:
        return calibrator_from_dict(section)
    except CheckpointError as error:
        raise ConfigError("calibrator", f"damaged section ({error})") from None


def _number(value: Any, name: str) -> float:
    return check_value(value, Real(), name)


def _integer(value: Any, name: str) -> int:
    return check_value(value, Integer(), name)


def _text(value: Any, name: str) -> str:
    return check_value(value, TEXT, name)


def _section(data: dict[str, Any], key: str) -> dict[str, Any]:
    return check_value(data.get(key), SECTION, key)


def _check_depth(data: Any) -> None:
    """Refuse nesting deeper than MAX_RECORD_DEPTH (iteratively: no RecursionError)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_RECORD_DEPTH:
            raise ConfigError("config.json", f"nested deeper than {MAX_RECORD_DEPTH} levels")
        if isinstance(value, dict):
            stack.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)
