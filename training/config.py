"""The typed configuration of `python -m training.fit`: one frozen dataclass.

Values come from, in increasing priority: the defaults below, a JSON or TOML file (`--config`,
keys are the field names), and command-line flags (`--batch-size 32` sets `batch_size`). The
result is validated on creation; an invalid value raises `ConfigError` naming the field and
its flag. The resolved config is saved with every run and inside the exported checkpoint.

Lightning's `accelerator`, `devices` and `strategy` are passed to `lightning.Trainer`
unchanged, so GPUs and DDP work as Lightning documents them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

import features
from imad.commandline.entry import EXIT_STATUS_HELP
from imad.constraints import (
    MAX_SEED,
    MAX_THREADS,
    Boolean,
    Constraints,
    Integer,
    Options,
    Real,
    Text,
    Texts,
    check_fields,
)
from imad.errors import ConfigError
from imad.jsonio import loads_untrusted, read_regular_file
from imad.router.model import MAX_DEPTH, MAX_WIDTH, RouterNetConfig
from training.entry_args import add_debug_flag
from training.loss import LOSSES, FocusCalConfig

DEFAULT_CORPUS = ("corpus/smollm2-135m-instruct-q4_1",)
DEFAULT_OUTPUT = "checkpoints/imad-router-v2"
SELECTIONS = ("best", "last")


def flag(field_name: str) -> str:
    """The command-line flag of a config field: `batch_size` → `--batch-size`."""
    return "--" + field_name.replace("_", "-")


@dataclass(frozen=True)
class FitConfig:
    """Everything one training run depends on."""

    corpus: tuple[str, ...] = DEFAULT_CORPUS
    """Corpus JSONL files or directories of them (every *.jsonl inside, sorted)."""
    output: str = DEFAULT_OUTPUT
    """Checkpoint directory the trained router is exported to."""
    run_dir: str = "runs/fit"
    """Logs (metrics.csv per version) and the resolved config of this run."""
    export: bool = True
    seed: int = 42
    split_seed: int = 42
    validation_fraction: float = 0.2
    epochs: int = 50
    batch_size: int = 64
    learning_rate: float = 1e-3
    # The network's and the loss's defaults are theirs, read off their configs.
    width: int = RouterNetConfig.width
    depth: int = RouterNetConfig.depth
    dropout: float = RouterNetConfig.dropout
    confidence_clip: float = RouterNetConfig.confidence_clip
    loss: str = "focuscal"
    alpha0: float = FocusCalConfig.alpha0
    alpha1: float = FocusCalConfig.alpha1
    class_balanced_alpha: bool = False
    """Replace α0/α1 by inverse class frequencies of the training split (recorded)."""
    gamma: float = FocusCalConfig.gamma
    tau: float = FocusCalConfig.tau
    lambda_cp: float = FocusCalConfig.lambda_cp
    mu_ece: float = FocusCalConfig.mu_ece
    ece_bins: int = FocusCalConfig.n_bins
    select_epoch: str = "best"
    """Export the epoch with the lowest validation FocusCal ("best") or the final one ("last")."""
    early_stopping: bool = False
    patience: int = 10
    accelerator: str = "auto"
    devices: str = "auto"
    strategy: str = "auto"
    num_workers: int = 0
    threads: int = 1
    """torch CPU threads while training: the MLP is small, so one thread is fastest and stays
    fast on a busy machine (OpenMP threads spin-wait); 0 keeps torch's default."""
    progress_bar: bool = True
    feature_cache: str | None = "runs/feature-cache"
    """Directory caching extracted feature matrices by content hash; None disables it."""
    feature_schema: int = features.FEATURE_SCHEMA_VERSION
    """Feature schema the router is trained on and records (`features.SCHEMA_VERSIONS`)."""

    constraints: ClassVar[Constraints] = {
        "corpus": Texts(Text(path=True)),
        "output": Text(path=True),
        "run_dir": Text(path=True),
        "export": Boolean(),
        "seed": Integer(0, MAX_SEED),
        "split_seed": Integer(0, MAX_SEED),
        "validation_fraction": Real(0.0, 1.0, closed="neither"),
        "epochs": Integer(1, 100_000),
        "batch_size": Integer(1, 1_048_576),
        "learning_rate": Real(0.0, 10.0, closed="right"),
        "width": Integer(1, MAX_WIDTH),
        "depth": Integer(1, MAX_DEPTH),
        "dropout": Real(0.0, 1.0, closed="left"),
        "confidence_clip": Real(0.0, 0.5, closed="neither"),
        "loss": Options(*sorted(LOSSES)),
        "alpha0": Real(0.0, 1_000.0),
        "alpha1": Real(0.0, 1_000.0),
        "class_balanced_alpha": Boolean(),
        "gamma": Real(0.0, 100.0),
        "tau": Real(0.0, 1.0),
        "lambda_cp": Real(0.0, 1_000.0),
        "mu_ece": Real(0.0, 1_000.0),
        "ece_bins": Integer(1, 1_000),
        "select_epoch": Options(*SELECTIONS),
        "early_stopping": Boolean(),
        "patience": Integer(1, 100_000),
        "accelerator": Text(max_chars=64),
        "devices": Text(max_chars=64),
        "strategy": Text(max_chars=256),
        "num_workers": Integer(0, MAX_THREADS),
        "threads": Integer(0, MAX_THREADS),
        "progress_bar": Boolean(),
        "feature_cache": (None, Text(path=True)),
        "feature_schema": Integer(min(features.SCHEMA_VERSIONS), max(features.SCHEMA_VERSIONS)),
    }
    """Each field's type and bounds (`imad.constraints`), checked with the flag in each error."""

    def __post_init__(self) -> None:
        check_fields(self, label=lambda name: f"{name} ({flag(name)})")
        if self.feature_schema not in features.SCHEMA_VERSIONS:
            self._fail("feature_schema", f"unknown feature schema {self.feature_schema}; "
                       f"choose one of {list(features.SCHEMA_VERSIONS)}")
        if self.class_balanced_alpha and \
                (self.alpha0, self.alpha1) != (FocusCalConfig.alpha0, FocusCalConfig.alpha1):
            self._fail(
                "class_balanced_alpha",
                "computes α0/α1 from the class counts; do not also set --alpha0/--alpha1",
            )
        _ = (self.net_config, self.loss_config)  # building them validates those fields

    def _fail(self, name: str, message: str) -> None:
        raise ConfigError(f"{name} ({flag(name)})", message)

    @property
    def net_config(self) -> RouterNetConfig:
        try:
            return RouterNetConfig(
                width=self.width, depth=self.depth, dropout=self.dropout,
                confidence_clip=self.confidence_clip,
            )
        except ConfigError as error:
            self._fail(error.field, str(error).split(": ", 1)[1])
            raise  # unreachable; keeps type checkers content

    @property
    def loss_config(self) -> FocusCalConfig:
        try:
            return FocusCalConfig(
                alpha0=self.alpha0, alpha1=self.alpha1, gamma=self.gamma, tau=self.tau,
                lambda_cp=self.lambda_cp, mu_ece=self.mu_ece, n_bins=self.ece_bins,
            )
        except ConfigError as error:
            name = "ece_bins" if error.field == "n_bins" else error.field
            self._fail(name, str(error).split(": ", 1)[1])
            raise

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["corpus"] = list(self.corpus)
        return data

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "config") -> FitConfig:
        known = {item.name for item in fields(cls)}
        for key in data:
            if key not in known:
                raise ConfigError(key, f"unknown setting in {source}; known: {sorted(known)}")
        return cls(**data)

    @classmethod
    def from_file(cls, path: str | Path) -> FitConfig:
        return cls.from_dict(read_config_file(Path(path)), source=str(path))


MAX_CONFIG_FILE_BYTES = 1024 * 1024
"""A --config file names a few dozen settings; a larger one is not one."""


def read_config_file(path: Path) -> dict[str, Any]:
    """A JSON (.json) or TOML (.toml) file of field names → values."""
    if not path.exists():
        raise ConfigError("config (--config)", f"no such file: {path}")
    try:  # a regular file only (a FIFO would block), read with a size bound
        raw = read_regular_file(path, max_bytes=MAX_CONFIG_FILE_BYTES)
        if path.suffix == ".toml":
            if sys.version_info < (3, 11):
                raise ConfigError("config (--config)", "TOML needs Python ≥ 3.11; use JSON")
            import tomllib

            data = tomllib.loads(raw.decode("utf-8"))
        else:
            data = loads_untrusted(raw, max_bytes=MAX_CONFIG_FILE_BYTES)
    except OSError as error:
        raise ConfigError("config (--config)", f"cannot read {path}: {error.strerror or error}") from error
    except (ValueError, RecursionError) as error:  # UntrustedJSONError, TOML errors, bad UTF-8
        raise ConfigError("config (--config)", f"cannot parse {path}: {error}") from error
    if not isinstance(data, dict):
        raise ConfigError("config (--config)", f"{path} must hold a table/object of settings")
    return data


def _bool_flag(parser: argparse.ArgumentParser, name: str, help_text: str) -> None:
    parser.add_argument(flag(name), dest=name, action=argparse.BooleanOptionalAction,
                        default=argparse.SUPPRESS, help=help_text)


def build_parser() -> argparse.ArgumentParser:
    """The flags of `python -m training.fit`; every flag maps to one `FitConfig` field."""
    parser = argparse.ArgumentParser(
        prog="python -m training.fit",
        description="Train the imad router with FocusCal on a self-critique corpus and export "
        "the checkpoint.",
        argument_default=argparse.SUPPRESS, epilog=EXIT_STATUS_HELP,
    )
    add_debug_flag(parser)
    parser.add_argument("--config", help="JSON or TOML file of settings (flags override it)")
    parser.add_argument("--corpus", nargs="+", metavar="PATH",
                        help=f"corpus .jsonl files or directories (default: {DEFAULT_CORPUS[0]})")
    parser.add_argument("--output", help=f"checkpoint directory (default: {DEFAULT_OUTPUT})")
    parser.add_argument("--run-dir", dest="run_dir", help="logs and resolved config")
    _bool_flag(parser, "export", "export the checkpoint (default: on)")
    defaults = {item.name: item.default for item in fields(FitConfig)}
    for name, kind, meaning in (
        ("seed", int, "seed_everything seed"),
        ("split_seed", int, "seed of the stratified split"),
        ("validation_fraction", float, "share of rows held out"),
        ("epochs", int, "maximum epochs"),
        ("batch_size", int, "rows per batch"),
        ("learning_rate", float, "Adam learning rate"),
        ("width", int, "hidden units per layer"),
        ("depth", int, "encoder blocks"),
        ("dropout", float, "dropout rate"),
        ("confidence_clip", float, "conf_initial clipped to [c, 1-c]"),
        ("alpha0", float, "focal weight of wrong answers"),
        ("alpha1", float, "focal weight of right answers"),
        ("gamma", float, "focal exponent"),
        ("tau", float, "threshold τ of the penalty and of the decision"),
        ("lambda_cp", float, "weight λ of the confidence penalty"),
        ("mu_ece", float, "weight μ of the ECE term"),
        ("ece_bins", int, "ECE bins"),
        ("patience", int, "early-stopping patience in epochs"),
        ("num_workers", int, "DataLoader workers"),
        ("threads", int, "torch CPU threads, 0 for torch's default"),
        ("feature_schema", int, "feature schema to train on; 1 reproduces v1 routers"),
    ):  # the default in each help is the field's own, so the two cannot disagree
        parser.add_argument(flag(name), dest=name, type=kind,
                            help=f"{meaning} (default {defaults[name]:g})")
    parser.add_argument("--loss", choices=sorted(LOSSES), help="objective (default focuscal)")
    parser.add_argument("--select-epoch", dest="select_epoch", choices=SELECTIONS,
                        help="export the best-validation or the last epoch (default best)")
    _bool_flag(parser, "class_balanced_alpha", "α from inverse class frequencies")
    _bool_flag(parser, "early_stopping", "stop when validation FocusCal stops improving")
    _bool_flag(parser, "progress_bar", "show progress bars (default: on)")
    parser.add_argument("--feature-cache", dest="feature_cache",
                        help="feature-matrix cache directory (default runs/feature-cache)")
    parser.add_argument("--no-feature-cache", dest="feature_cache", action="store_const",
                        const=None, help="always re-extract features")
    for name in ("accelerator", "devices", "strategy"):
        parser.add_argument(flag(name), dest=name, help=f"Lightning Trainer {name} (default auto)")
    return parser


def config_from_args(argv: Sequence[str] | None = None) -> FitConfig:
    """Defaults ← `--config` file ← flags."""
    arguments = vars(build_parser().parse_args(argv))
    arguments.pop("debug")  # read by the entry point (imad.commandline.entry.debug_requested)
    settings: dict[str, Any] = {}
    config_path = arguments.pop("config", None)
    if config_path is not None:
        settings.update(read_config_file(Path(config_path)))
    settings.update(arguments)
    return FitConfig.from_dict(settings, source=config_path or "flags")
