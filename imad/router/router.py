"""The debate router at run time: the scorer of score → calibrate → decide.

`Router` wraps a trained `RouterNet` with what it needs to score raw feature vectors: the
ordered feature names, the training scaler's mean and scale (applied here in numpy, so the
runtime needs no scikit-learn), the calibrator and the OOD statistics. `score()` turns an answer
into a `RouterScore`; it knows nothing of τ. A policy (`imad.decide.Policy`) decides: the
checkpoint's stored τ and OOD policy are data in `config` (`config.threshold.tau`), and
`imad.decide.checkpoint_policy(router.config)` turns them into the policy they describe:
`checkpoint_policy(router.config).decide(router.score(question, response))`. It never imports
`training`, Lightning or scikit-learn, and `load` reads safetensors + JSON only.

Scores are batch-invariant and reproducible: the network runs in eval mode with row-wise
kernels (see `imad.router.model`), so a row's p is the same alone or in any batch, and a
save → load round trip gives bit-identical probabilities.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from imad import tracing
from imad.decide import Cue, RouterScore, unparsed_score
from imad.errors import CheckpointError, CritiqueParseError, FeatureError
from imad.router.calibrators import Calibrator
from imad.router.card import render_model_card
from imad.router.checkpoint import read_checkpoint, weights_bytes, write_checkpoint
from imad.router.config import CONFIDENCE_FEATURE, RouterConfig
from imad.router.model import RouterNet
from imad.router.registry import resolve_checkpoint
from imad.router.score import ScoredRows

if TYPE_CHECKING:
    from imad.critique.schema import CritiqueResponse
    from imad.question import Question
    from imad.router.featurize import Featurizer
    from imad.router.ood import OODDetector

class Router:
    """Scores self-critique answers; a policy (`imad.decide`) decides.

    Immutable in use: `config` (a frozen `RouterConfig`) holds everything but the weights, and
    the `with_…` methods return new routers with their own copy of the network.
    """

    def __init__(self, net: RouterNet, config: RouterConfig) -> None:
        if net.config != config.model:
            raise CheckpointError(f"the network ({net.config}) does not match the config "
                                  f"({config.model})")
        self.config = config
        self.net = net.eval()
        self._mean = _read_only(np.array(config.scaler.mean, dtype=np.float64))
        self._scale = _read_only(np.array(config.scaler.scale, dtype=np.float64))
        self._confidence_column = config.features.names.index(CONFIDENCE_FEATURE)
        self._ood = config.ood_detector()

    # --- what the config says --------------------------------------------------------------------

    name = property(lambda self: self.config.name, doc="The checkpoint's name.")
    feature_names = property(lambda self: self.config.features.names)
    feature_schema_version = property(lambda self: self.config.features.schema_version)
    feature_hash = property(lambda self: self.config.features.hash)
    scaler_mean = property(lambda self: self._mean, doc="Read-only (41,) training means.")
    scaler_scale = property(lambda self: self._scale, doc="Read-only (41,) training scales.")
    confidence_source = property(lambda self: self.config.confidence_source,
                                 doc='"verbal" or "token_probability": how to ask for confidences.')
    ood_detector = property(lambda self: self._ood,
                            doc="The OOD detector of the checkpoint, or None when it has none.")
    calibrator = property(lambda self: self.config.calibrator,
                          doc="Maps the network's raw score to p (identity unless recalibrated).")

    @property
    def metadata(self) -> dict[str, Any]:
        """A copy of the provenance saved beside the weights: seed, training set-up, data
        summary, metrics, library versions, as plain JSON. Changing it changes nothing; use
        `with_record`. The same record, typed: `router.config.record` (a `TrainingRecord`)."""
        return self.config.record.to_dict()

    # --- persistence ---------------------------------------------------------------------------

    @classmethod
    def load(cls, name_or_path: str | Path | None = None) -> Router:
        """Load a shipped router by name (default `imad-router-v2`) or a checkpoint directory.

        `imad.available_routers()` lists the shipped names. Raises `CheckpointError` naming
        what is wrong: an unknown name, a missing file, a truncated or modified weights file,
        another schema version, another feature list, a value out of bounds, or a tensor shape
        that does not fit the configured network.
        """
        directory = resolve_checkpoint(name_or_path)
        contents = read_checkpoint(directory)
        net = RouterNet(contents.config.model)
        net.load_state_dict(contents.tensors, strict=True)
        router = cls(net, contents.config)
        probe = router.predict_proba(router.scaler_mean.reshape(1, -1))
        if not np.all(np.isfinite(probe)):
            raise CheckpointError(f"{directory}: the router scores its own training mean as "
                                  f"{probe[0]}; the weights are damaged")
        return router

    def save(self, path: str | Path) -> Path:
        """Write `model.safetensors`, `config.json` and the `README.md` model card to `path`."""
        directory = Path(path)
        weights = weights_bytes(self.net)
        config = self.to_config(weights_sha256=hashlib.sha256(weights).hexdigest())
        write_checkpoint(directory, weights, config, render_model_card(config))
        return directory

    def to_config(self, weights_sha256: str) -> dict[str, Any]:
        """The config.json content of this router, recording the imad that writes it."""
        from imad import __version__

        return replace(self.config, imad_version=__version__, weights_sha256=weights_sha256).to_dict()

    def with_calibrator(self, calibrator: Calibrator) -> Router:
        """A copy whose p is `calibrator` applied to the network's raw score (`imad.fit_calibrator`
        on your own labelled answers); τ and everything else unchanged."""
        return self.with_config(self.config.with_calibrator(calibrator))

    def with_ood(self, detector: OODDetector | None) -> Router:
        """A copy of this router that scores answers with this OOD detector (None: without)."""
        return self.with_config(self.config.with_ood(detector))

    def with_record(self, **sections: Any) -> Router:
        """A copy whose training record has these top-level sections added or replaced."""
        return self.with_config(self.config.with_record(**sections))

    def with_config(self, config: RouterConfig) -> Router:
        """A copy with another config (same network shape), owning its own network."""
        return type(self)(copy.deepcopy(self.net), config)

    # --- scoring -------------------------------------------------------------------------------

    def predict_proba(self, features: np.ndarray) -> np.ndarray:
        """P(answer correct) for each row of raw feature vectors, shape (n, 41) → (n,): the
        network's raw score through the router's calibrator."""
        return self.calibrator.apply(self._score(self._check_features(features))[0])

    def predict_raw(self, features: np.ndarray) -> np.ndarray:
        """The network's own score for each row, before the calibrator: what a calibrator is
        fitted on (`imad.fit_calibrator`)."""
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

    def scale(self, features: np.ndarray) -> np.ndarray:
        """The training scaler applied to raw rows, (x − mean) / scale: what the network and the
        OOD detector read."""
        return (self._check_features(features) - self._mean) / self._scale

    def _score(self, matrix: np.ndarray, scaled: np.ndarray | None = None,
               block_rows: int = 1) -> tuple[np.ndarray, np.ndarray]:
        if scaled is None:
            scaled = (matrix - self._mean) / self._scale
        confidence = matrix[:, self._confidence_column].astype(np.float32)
        with torch.no_grad():
            output = self.net.eval()(torch.from_numpy(scaled.astype(np.float32)),
                                     torch.from_numpy(confidence), block_rows=block_rows)
        return output.p.numpy().astype(np.float64), output.u.numpy().astype(np.float64)

    # --- scoring answers -----------------------------------------------------------------------

    def explain(self, feature_vector: np.ndarray) -> list[Cue]:
        """Every feature's effect on p: p minus p with that feature set to its training mean."""
        return list(self.score_vectors(["explain"], np.reshape(feature_vector, (1, -1)))[0].cues)

    def score_vectors(self, ids: Sequence[str], matrix: np.ndarray) -> list[RouterScore]:
        """The `RouterScore` of each raw feature row (shape (n, 41)), with its cues and OOD flag;
        each bit-identical to the row scored alone (see `scored_rows`)."""
        if len(ids) != len(matrix):
            raise FeatureError(f"{len(ids)} ids for {len(matrix)} feature rows")
        rows = self.scored_rows(matrix)
        return [rows.score(row, question_id) for row, question_id in enumerate(ids)]

    def scored_rows(self, matrix: np.ndarray) -> ScoredRows:
        """Scores, cues' effects and OOD scores of raw feature rows (n, 41), as arrays.

        The rows go through the network row by row (`BatchInvariantLinear`), so each row's p, raw
        score and u are bit-identical to the row alone. A cue's effect compares an answer's own
        probes — the row, then the row with each feature at its training mean — which go through
        the network as one 42-row product per answer: a third of the CPU of 42 one-row products,
        still the same bits in any batch, and the row and its probes share one
        kernel, so an effect measures the feature alone (it may differ from a one-row kernel's
        by ~1e-7). All rows and blocks go through one forward each, so n rows cost one call's
        fixed overhead."""
        matrix = self._check_features(np.asarray(matrix, dtype=np.float64))
        n_rows, n_features = matrix.shape
        block = n_features + 1
        scaled = (matrix - self._mean) / self._scale
        raw, u = self._score(matrix, scaled)
        probes = np.repeat(matrix, block, axis=0)
        columns = np.arange(n_features)
        probes.reshape(n_rows, block, n_features)[:, columns + 1, columns] = self._mean
        probe_raw = self._score(probes, (probes - self._mean) / self._scale,
                                block_rows=block)[0].reshape(n_rows, block)
        # each answer on its own, with arrays of one length: numpy's vector exp/log may round a
        # tail differently; p is element 0 of [raw, probes…] as the one-row kernel always gave it
        p = np.array([self.calibrator.apply(np.concatenate([raw[row:row + 1], probe_raw[row, 1:]]))[0]
                      for row in range(n_rows)], dtype=np.float64)
        probe_p = (np.stack([self.calibrator.apply(probe_raw[row]) for row in range(n_rows)])
                   if n_rows else np.zeros((0, block)))
        ood_scores = None
        if self._ood is not None:  # row by row: a (1, d) product has the same bits in any batch
            ood_scores = np.array([self._ood.score(scaled[row:row + 1])[0] for row in range(n_rows)],
                                  dtype=np.float64)
        return ScoredRows(
            feature_names=tuple(self.feature_names), vectors=matrix, p=p, raw=raw, uncertainty=u,
            effects=probe_p[:, :1] - probe_p[:, 1:], ood_scores=ood_scores,
            ood_threshold=None if self._ood is None else self._ood.threshold)

    def features_scored(self, texts: Sequence[str],
                        responses: Sequence[CritiqueResponse]) -> ScoredRows:
        """`scored_rows` of the answers' features, extracted in one batch (one `nlp.pipe`)."""
        from imad.router import featurize  # lazy: loads spaCy on first use

        return self.scored_rows(featurize.extract_batch(
            texts, responses, self.feature_schema_version, batch_size=max(1, len(texts))))

    def score_batch(self, questions: Sequence[Question | str],
                    responses: Sequence[CritiqueResponse]) -> list[RouterScore]:
        """Score many parsed self-critiques at once: one feature batch and one forward; each
        score is bit-identical to `score()` of that answer alone."""
        rows = self.features_scored([question_text(question) for question in questions], responses)
        return [rows.score(row, question_id(question)) for row, question in enumerate(questions)]

    def score(
        self,
        question: Question | str,
        response: CritiqueResponse | CritiqueParseError | None,
        *,
        parse_error: str | None = None,
        featurizer: Featurizer | None = None,
    ) -> RouterScore:
        """Score one self-critique: p, the raw score, u, every feature's cue and the OOD flag.

        No τ here: a policy (`imad.decide.Policy`, `imad.decide.checkpoint_policy`) decides. A
        response that could not be parsed — `None` with `parse_error` saying why, or the
        `CritiqueParseError` itself — is unscored. `featurizer` extracts the feature vector
        (default `imad.router.featurize.extract`).
        """
        if isinstance(response, CritiqueParseError) or response is None:
            reason = response.reason if response is not None else parse_error or "no response"
            return unparsed_score(question_id(question), reason)
        from imad.router import featurize  # lazy: loads spaCy on first use

        extract = featurize.extract if featurizer is None else featurizer
        with tracing.features_span(self.feature_schema_version, len(self.feature_names)):
            vector = extract(question_text(question), response, self.feature_schema_version)
        return self.scored_rows(vector.reshape(1, -1)).score(0, question_id(question))

    def __repr__(self) -> str:
        return (
            f"Router(name={self.name!r}, tau={self.config.threshold.tau}, "
            f"features={len(self.feature_names)}, "
            f"width={self.net.config.width}, depth={self.net.config.depth})"
        )


def question_id(question: Question | str) -> str:
    """The question's id, or a stable content hash when it has none."""
    if not isinstance(question, str) and question.id:
        return question.id
    return "q-" + hashlib.sha256(question_text(question).encode("utf-8")).hexdigest()[:12]


def question_text(question: Question | str) -> str:
    """What the features read of a question: its text."""
    return question if isinstance(question, str) else question.text


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array
