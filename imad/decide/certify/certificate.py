"""The promise a certified threshold makes, as a value that can be saved, hashed and checked.

A `Certificate` says: keep answers with p ≥ τ and, of the answers kept, at most α are wrong, with
confidence 1 − δ — under exchangeability of the labelled answers with the traffic it is served on.
It names the router whose p it was certified for (name, version, the hash of what makes p) and
the labels it rests on, and carries the sha256 of its own canonical JSON: a certificate whose
fields were changed after the fact no longer matches its hash and is refused on load.
An `Infeasible` answer says, in words and numbers, why no threshold could be certified.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from imad.errors import ConfigError

__all__ = ["INFEASIBLE_REASONS", "Certificate", "Infeasible", "LabelSource", "RouterIdentity",
           "canonical_hash"]

INFEASIBLE_REASONS = ("too few labels", "not certifiable", "budget")
"""Why no certificate: fewer labels than the weakest promise needs; no threshold's kept error is
certifiably ≤ α (the base error and the router's curve say why); or the certified τ escalates more
than the escalation budget allows."""
FIELD = "certificate"


def canonical_hash(body: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of `body` (sorted keys, no spaces, ASCII)."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


@dataclass(frozen=True)
class RouterIdentity:
    """The router whose scores were certified: its name, version and config hash (as the
    decision log and /health name it), and the hash of what makes p (weights, scaler, features,
    calibrator), which a new version with another τ shares."""

    name: str
    version: str
    hash: str
    scorer: str


@dataclass(frozen=True)
class LabelSource:
    """Where the labels came from and the time range they span (None: not recorded)."""

    source: str
    first: float | None = None
    last: float | None = None


@dataclass(frozen=True)
class Certificate:
    """τ with its promise (module docstring) and every number it was certified from."""

    tau: float
    alpha: float
    delta: float
    method: str
    labelled: int
    """Labelled answers the test read."""
    kept: int
    """Labelled answers kept at τ."""
    kept_errors: int
    upper_bound: float
    """Clopper–Pearson upper bound of the kept error at τ at the level its sequence was tested at
    (`test_level`, δ/K for K sequences): ≤ α."""
    test_level: float
    escalation_rate: float
    """Expected share of traffic escalated at τ (scores below τ and unparsed answers)."""
    router: RouterIdentity
    labels: LabelSource
    max_trigger_rate: float | None = None
    warnings: tuple[str, ...] = ()
    hash: str = field(default="")
    """sha256 of the canonical JSON of every other field; computed when empty, checked when given."""

    def __post_init__(self) -> None:
        _check_body(self)
        object.__setattr__(self, "warnings", tuple(self.warnings))
        expected = canonical_hash(self.body())
        if not self.hash:
            object.__setattr__(self, "hash", expected)
        elif self.hash != expected:
            raise ConfigError(FIELD, f"is damaged: its fields hash to {expected[:12]}…, not to the "
                              f"recorded {str(self.hash)[:12]}…; certify again (imad calibrate --certify)")

    def body(self) -> dict[str, Any]:
        """Every field but the hash, as JSON."""
        body = asdict(self)
        body.pop("hash")
        body["warnings"] = list(self.warnings)
        return body

    def to_dict(self) -> dict[str, Any]:
        return {**self.body(), "hash": self.hash}

    @classmethod
    def from_dict(cls, data: Any) -> Certificate:
        """Read a saved certificate; `ConfigError` (field `certificate`) when it is malformed or
        its hash does not match."""
        if not isinstance(data, dict):
            raise ConfigError(FIELD, f"must be a JSON object, got {type(data).__name__}")
        names = {f.name for f in fields(cls)}
        if set(data) != names:
            missing, unknown = sorted(names - set(data)), sorted(set(data) - names)
            raise ConfigError(FIELD, f"is damaged: missing {missing}, unknown {unknown}")
        try:
            return cls(**{**data, "router": RouterIdentity(**_object(data["router"], "router")),
                          "labels": LabelSource(**_object(data["labels"], "labels")),
                          "warnings": tuple(_list(data["warnings"]))})
        except TypeError as error:
            raise ConfigError(FIELD, f"is damaged: {error}") from None

    def promise(self) -> str:
        """The certificate in one sentence."""
        return (f"keep answers with p ≥ {self.tau:g}: of the answers kept, at most {self.alpha:.3g} "
                f"are wrong, with {1 - self.delta:.3g} confidence; this escalates about "
                f"{self.escalation_rate:.1%} of traffic")


@dataclass(frozen=True)
class Infeasible:
    """Why no threshold was certified (`reason`, one of `INFEASIBLE_REASONS`), in words
    (`message`) and numbers."""

    reason: str
    message: str
    alpha: float
    delta: float
    labelled: int
    base_error: float | None
    """μ, the share of labelled answers that are wrong (None without labels)."""
    least_escalation: float | None
    """(μ − α)/(1 − α): the share any method must escalate when μ > α; 0 when μ ≤ α."""
    smallest_alpha: float | None
    """The smallest α this router certifies on these labels (None: none)."""
    more_kept_labels: int | None
    """Kept labels still needed to certify α at the router's current curve (None: more labels
    would not help: no threshold's labelled error is under α)."""
    more_labels: int | None
    """The same, counted as labels of traffic (kept and escalated)."""
    escalation_rate: float | None = None
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "warnings": list(self.warnings)}


def _check_body(certificate: Certificate) -> None:
    """Types and ranges of a certificate's fields (a damaged one names the field)."""
    for name in ("tau", "alpha", "delta", "test_level", "upper_bound", "escalation_rate"):
        _probability(getattr(certificate, name), name,
                     open_interval=name in ("tau", "alpha", "delta", "test_level"))
    if certificate.max_trigger_rate is not None:
        _probability(certificate.max_trigger_rate, "max_trigger_rate", open_interval=True)
    for name in ("labelled", "kept", "kept_errors"):
        value = getattr(certificate, name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"{FIELD}.{name}", f"must be a count, got {value!r}")
    if not certificate.kept_errors <= certificate.kept <= certificate.labelled:
        raise ConfigError(FIELD, "is damaged: needs kept_errors ≤ kept ≤ labelled")
    texts = [("method", certificate.method), ("router.name", certificate.router.name),
             ("router.version", certificate.router.version), ("router.hash", certificate.router.hash),
             ("router.scorer", certificate.router.scorer),
             ("labels.source", certificate.labels.source), *(("warnings", w) for w in certificate.warnings)]
    for name, value in texts:
        if not isinstance(value, str):
            raise ConfigError(f"{FIELD}.{name}", f"must be text, got {value!r}")
    for name in ("first", "last"):
        value = getattr(certificate.labels, name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value)):
            raise ConfigError(f"{FIELD}.labels.{name}", f"must be a time in seconds or null, got {value!r}")


def _probability(value: Any, name: str, *, open_interval: bool) -> None:
    ok = (not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
          and (0.0 < value < 1.0 if open_interval else 0.0 <= value <= 1.0))
    if not ok:
        inside = "strictly between 0 and 1" if open_interval else "between 0 and 1"
        raise ConfigError(f"{FIELD}.{name}", f"must be a number {inside}, got {value!r}")


def _object(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{FIELD}.{name}", f"must be a JSON object, got {type(value).__name__}")
    return value


def _list(value: Any) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise ConfigError(f"{FIELD}.warnings", f"must be a list, got {type(value).__name__}")
    return list(value)
