"""The typed settings of the end-to-end benchmark (`python -m training.evaluate --e2e`, SPEC §10).

`E2EConfig` is frozen and checked on creation: invalid values raise `ConfigError` naming the
field and its command-line flag. The dataset, --limit, --max-tokens and --confidence-source
fields and checks are the calibration run's (`training.evaluation.config.RunConfig`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from imad.constraints import Boolean, Constraints, InstanceOf, Options, Real, Text, Texts
from imad.errors import ConfigError
from imad.llm.cache import CACHE_MODES
from training.e2e.methods import E2E_METHODS
from training.evaluation.config import DEFAULT_CORPUS_DIR, RunConfig

DEFAULT_E2E_CACHE = "runs/e2e-calls.sqlite"


@dataclass(frozen=True)
class E2EConfig(RunConfig):
    """Everything one end-to-end run (`python -m training.evaluate --e2e`) depends on."""

    methods: tuple[str, ...] = tuple(E2E_METHODS)
    """Names in `training.e2e.methods.E2E_METHODS`, run in this order."""
    cache: str = DEFAULT_E2E_CACHE
    """The SQLite record/replay cache every call goes through (`imad.llm.cache.CachedChat`)."""
    cache_mode: str = "record"
    """record: replay hits, call the model on misses; replay: never call the model;
    refresh: call the model for every request and overwrite."""
    tau: float | None = None
    """Override the router's τ for the iMAD methods (None: the checkpoint's)."""
    backend_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per debate back-end (`imad.debate.BACKENDS` name), config fields overriding its
    defaults; they apply wherever that back-end runs (alone, or as iMAD's target)."""
    corpus_dir: str | None = DEFAULT_CORPUS_DIR
    """Where the calibration run cached its self-critique answers; the iMAD methods reuse
    those that fit exactly (None: never)."""
    deferral: bool = False
    """Run the iMAD methods at τ = 1 (every question escalated, both outcomes recorded) and
    report deferral curves (`training.e2e.deferral_run`)."""

    constraints: ClassVar[Constraints] = {
        "methods": Texts(Options(*E2E_METHODS), max_items=len(E2E_METHODS)),
        "cache": Text(path=True),
        "cache_mode": Options(*CACHE_MODES),
        "tau": (None, Real(0.0, 1.0)),
        "backend_options": InstanceOf(Mapping),
        "corpus_dir": (None, Text(path=True)),
        "deferral": Boolean(),
    }

    def check(self) -> None:
        object.__setattr__(self, "backend_options",
                           {str(k): dict(v) for k, v in sorted(self.backend_options.items())})
        if len(set(self.methods)) != len(self.methods):
            raise ConfigError("methods (--methods)", f"a method is named twice: {self.methods}")
        if self.deferral and self.tau is not None:
            raise ConfigError("deferral (--deferral)", "runs the iMAD methods at τ = 1 (every "
                              "question escalated); drop --tau")
        if self.deferral and not any(E2E_METHODS[m].routed for m in self.methods):
            routed = [name for name, method in E2E_METHODS.items() if method.routed]
            raise ConfigError("deferral (--deferral)", f"needs an iMAD method ({', '.join(routed)}) "
                              f"in --methods; got {', '.join(self.methods)}")
        from imad.debate import make_config

        for backend, fields in self.backend_options.items():
            try:
                make_config(backend, **fields)  # unknown back-ends, fields and values fail here
            except ConfigError as error:
                raise ConfigError("backend_options (--backend-option)", str(error)) from error
