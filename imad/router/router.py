"""The debate router at run time: scaler + MLP → p, and the keep/escalate decision (SPEC §2, §5).

`Router` wraps a trained `RouterNet` with what it needs to score raw feature vectors: the
ordered feature names, the training scaler's mean and scale (applied here in numpy, so the
runtime needs no scikit-learn), and the threshold τ. It never imports `training`, Lightning or
scikit-learn, and `load` reads safetensors + JSON only.

Scores are batch-invariant and reproducible: the network runs in eval mode with row-wise
kernels (see `imad.router.model`), so a row's p is the same alone or in any batch, and a
save → load round trip gives bit-identical probabilities.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from imad.errors import CheckpointError, ConfigError, CritiqueParseError, FeatureError
from imad.router.card import render_model_card
from imad.router.checkpoint import (
    CHECKPOINT_FORMAT,
    CHECKPOINT_SCHEMA_VERSION,
    check_feature_schema,
    read_checkpoint,
    weights_bytes,
    write_checkpoint,
)
from imad.router.decision import (
    PARSED,
    Cue,
    RouterDecision,
    threshold_reason,
    unparsed_decision,
)
from imad.router.model import RouterNet

if TYPE_CHECKING:
    from imad.critique.schema import CritiqueResponse
    from imad.question import Question

DEFAULT_CHECKPOINT = Path(__file__).resolve().parents[2] / "checkpoints" / "imad-router-v1"
"""The router shipped with the package, trained on SmolLM2-135M-Instruct answers."""

CONFIDENCE_FEATURE = "conf_initial"
"""The feature fed raw (unscaled) into the network's confidence-logit path."""

_CORE_KEYS = frozenset(
    {"format", "schema_version", "name", "model", "features", "scaler", "threshold", "weights"}
)

MIN_CUE_DELTA = 0.005
"""A cue is reported only if it moves p by at least this much."""


class Router:
    """Scores self-critique answers and decides which to escalate to a debate."""

    def __init__(
        self,
        net: RouterNet,
        *,
        feature_names: tuple[str, ...] | list[str],
        scaler_mean: np.ndarray,
        scaler_scale: np.ndarray,
        tau: float = 0.7,
        tau_method: str = "fixed at the default 0.7 (SPEC §5)",
        feature_schema_version: int,
        feature_hash: str,
        metadata: dict[str, Any] | None = None,
        name: str = "imad-router",
    ) -> None:
        self.feature_names = tuple(feature_names)
        n_features = net.config.n_features
        if len(self.feature_names) != n_features:
            raise CheckpointError(
                f"{len(self.feature_names)} feature names for a network with {n_features} inputs"
            )
        if CONFIDENCE_FEATURE not in self.feature_names:
            raise CheckpointError(f"the feature list lacks {CONFIDENCE_FEATURE!r}")
        self.scaler_mean = np.array(scaler_mean, dtype=np.float64).reshape(n_features)
        self.scaler_scale = np.array(scaler_scale, dtype=np.float64).reshape(n_features)
        if not 0.0 <= tau <= 1.0:  # 0: never escalate, 1: always escalate
            raise ConfigError("tau", f"must be in [0, 1], got {tau!r}")
        self.tau = float(tau)
        self.tau_method = tau_method
        self.feature_schema_version = feature_schema_version
        self.feature_hash = feature_hash
        self.metadata = copy.deepcopy(metadata or {})
        """Provenance saved beside the weights: seed, training setup, data summary, metrics,
        library versions (whatever the exporter recorded; see `training.export`)."""
        self.name = name
        self.net = net.eval()
        self._confidence_column = self.feature_names.index(CONFIDENCE_FEATURE)

    # --- persistence ---------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path | None = None) -> Router:
        """Load a checkpoint directory (default: the shipped `checkpoints/imad-router-v1`).

        Raises `CheckpointError` naming what is wrong: a missing file, a truncated or modified
        weights file, another schema version, another feature list, or a tensor shape that does
        not fit the configured network.
        """
        contents = read_checkpoint(Path(path) if path is not None else DEFAULT_CHECKPOINT)
        config = contents.config
        net = RouterNet(contents.net_config)
        net.load_state_dict(contents.tensors, strict=True)
        return cls(
            net,
            feature_names=config["features"]["names"],
            scaler_mean=np.asarray(config["scaler"]["mean"], dtype=np.float64),
            scaler_scale=np.asarray(config["scaler"]["scale"], dtype=np.float64),
            tau=config["threshold"]["tau"],
            tau_method=config["threshold"].get("method", "not recorded"),
            feature_schema_version=config["features"]["schema_version"],
            feature_hash=config["features"]["hash"],
            metadata={k: v for k, v in config.items() if k not in _CORE_KEYS},
            name=config.get("name", "imad-router"),
        )

    def save(self, path: str | Path) -> Path:
        """Write `model.safetensors`, `config.json` and the `README.md` model card to `path`."""
        directory = Path(path)
        weights = weights_bytes(self.net)
        config = self.to_config(weights_sha256=hashlib.sha256(weights).hexdigest())
        write_checkpoint(directory, weights, config, render_model_card(config))
        return directory

    def to_config(self, weights_sha256: str) -> dict[str, Any]:
        """The config.json content of this router."""
        return {
            "format": CHECKPOINT_FORMAT,
            "schema_version": CHECKPOINT_SCHEMA_VERSION,
            "name": self.name,
            "model": self.net.config.to_dict(),
            "features": {
                "schema_version": self.feature_schema_version,
                "hash": self.feature_hash,
                "names": list(self.feature_names),
                "raw_input": CONFIDENCE_FEATURE,
            },
            "scaler": {
                "kind": "standard (x - mean) / scale, fitted on the training split",
                "mean": [float(v) for v in self.scaler_mean],
                "scale": [float(v) for v in self.scaler_scale],
            },
            "threshold": {"tau": self.tau, "method": self.tau_method},
            "weights": {"file": "model.safetensors", "sha256": weights_sha256},
            **{k: v for k, v in self.metadata.items() if k not in _CORE_KEYS},
        }

    def with_threshold(self, tau: float, method: str) -> Router:
        """A copy of this router with another τ, and a note of how it was chosen."""
        clone = copy.copy(self)
        if not 0.0 <= tau <= 1.0:  # 0: never escalate, 1: always escalate
            raise ConfigError("tau", f"must be in [0, 1], got {tau!r}")
        clone.tau, clone.tau_method = float(tau), method
        return clone

    # --- scoring -------------------------------------------------------------------------------

    def predict_proba(self, features: np.ndarray) -> np.ndarray:
        """P(answer correct) for each row of raw feature vectors, shape (n, 41) → (n,)."""
        return self._score(self._check_features(features))[0]

    def predict_uncertainty(self, features: np.ndarray) -> np.ndarray:
        """The auxiliary uncertainty head u for each row, shape (n, 41) → (n,)."""
        return self._score(self._check_features(features))[1]

    def _check_features(self, features: np.ndarray) -> np.ndarray:
        matrix = np.asarray(features, dtype=np.float64)
        n_features = len(self.feature_names)
        if matrix.ndim != 2 or matrix.shape[1] != n_features:
            hint = " (one row: x.reshape(1, -1))" if matrix.shape == (n_features,) else ""
            raise FeatureError(
                f"expected a feature matrix of shape (n, {n_features}), got {matrix.shape}{hint}"
            )
        if not np.all(np.isfinite(matrix)):
            rows = np.unique(np.nonzero(~np.isfinite(matrix))[0])[:5].tolist()
            raise FeatureError(f"feature matrix holds NaN or infinite values (rows {rows}…)")
        return matrix

    def _score(self, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        scaled = ((matrix - self.scaler_mean) / self.scaler_scale).astype(np.float32)
        confidence = matrix[:, self._confidence_column].astype(np.float32)
        with torch.no_grad():
            output = self.net.eval()(torch.from_numpy(scaled), torch.from_numpy(confidence))
        return output.p.numpy().astype(np.float64), output.u.numpy().astype(np.float64)

    # --- deciding ------------------------------------------------------------------------------

    def explain(self, feature_vector: np.ndarray) -> list[Cue]:
        """Every feature's effect on p: p minus p with that feature set to its training mean."""
        row = self._check_features(np.asarray(feature_vector, dtype=np.float64).reshape(1, -1))
        probes = np.repeat(row, len(self.feature_names) + 1, axis=0)
        for column in range(len(self.feature_names)):
            probes[column + 1, column] = self.scaler_mean[column]
        p = self._score(probes)[0]
        return [
            Cue(name, float(row[0, column]), float(p[0] - p[column + 1]))
            for column, name in enumerate(self.feature_names)
        ]

    def decide(
        self,
        question: Question | str,
        response: CritiqueResponse | CritiqueParseError | None,
        *,
        parse_error: str | None = None,
        max_cues: int = 3,
    ) -> RouterDecision:
        """Keep the answer (p ≥ τ) or escalate it to a debate (p < τ), with reasons.

        A response that could not be parsed — `None` with `parse_error` saying why, or the
        `CritiqueParseError` itself — has no score and always escalates.
        """
        question_id = _question_id(question)
        if isinstance(response, CritiqueParseError):
            return unparsed_decision(question_id, self.tau, response.reason)
        if response is None:
            return unparsed_decision(question_id, self.tau, parse_error or "no response")
        from imad.router import featurize  # lazy: loads spaCy on first use

        text = question if isinstance(question, str) else question.text
        vector = featurize.extract(text, response, self.feature_schema_version).reshape(1, -1)
        cues = self.explain(vector)
        p, u = (float(values[0]) for values in self._score(vector))
        escalate = p < self.tau
        # Cues that pushed p toward the decision: down when escalating, up when keeping.
        sign = -1.0 if escalate else 1.0
        ranked = sorted(
            (cue for cue in cues if sign * cue.delta_p >= MIN_CUE_DELTA),
            key=lambda cue: (-abs(cue.delta_p), cue.feature),
        )[:max_cues]
        return RouterDecision(
            id=question_id,
            p=p,
            tau=self.tau,
            escalate=escalate,
            reasons=(threshold_reason(p, self.tau), *(cue.describe() for cue in ranked)),
            parse_status=PARSED,
            uncertainty=u,
            cues=tuple(ranked),
        )

    def check_features(self) -> None:
        """Raise `CheckpointError` if the installed feature extractor differs from training's."""
        check_feature_schema(
            {"names": list(self.feature_names), "schema_version": self.feature_schema_version,
             "hash": self.feature_hash},
            len(self.feature_names),
            self.name,
        )

    def __repr__(self) -> str:
        return (
            f"Router(name={self.name!r}, tau={self.tau}, features={len(self.feature_names)}, "
            f"width={self.net.config.width}, depth={self.net.config.depth})"
        )


def _question_id(question: Question | str) -> str:
    """The question's id, or a stable content hash when it has none."""
    if not isinstance(question, str) and question.id:
        return question.id
    text = question if isinstance(question, str) else question.text
    return "q-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
