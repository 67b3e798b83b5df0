"""Building the pipeline of one request from the server's shared parts.

The router and the chat model are loaded once per server; a request only chooses the debate
back-end and τ (through its model name, `imad.serve.model_names`). Building a `Pipeline` per
request is cheap (a shallow router copy and two small config objects) and lets the server hand
each request its own `UpstreamWatch` around the shared model.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imad.critique.schema import CritiqueResponse
from imad.llm.types import ChatModel
from imad.pipeline import Pipeline
from imad.router import Router
from imad.router.budget import TriggerBudget
from imad.serve.model_names import SERVE_BACKENDS, ModelChoice

if TYPE_CHECKING:
    from imad.router.featurize import Featurizer

MAX_CACHED_THRESHOLDS = 64
"""τ values whose router copy is kept (model names may carry any τ, so the cache is bounded)."""

WARM_UP_RESPONSE = CritiqueResponse(
    initial_answer="yes", initial_reasoning="It has answered a request before.",
    critique="It may have just started, so the answer could be no.", alternative_answer="no",
    final_answer="yes", confidence_initial=0.8, confidence_critique=0.2)


@dataclass
class PipelineFactory:
    """The router, chat model and per-back-end options every request's pipeline shares.

    backend_options: config overrides per back-end name, e.g. {"svrmad": {"n_agents": 4}}.
    """

    router: Router
    model: ChatModel
    backend_options: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The router at each requested τ, built once: copying a router (its network and OOD
        # statistics) took a third of a kept request's CPU when every pipeline made its own.
        self._tau_routers: OrderedDict[float, Router] = OrderedDict()
        self._tau_lock = threading.Lock()

    @classmethod
    def from_specs(cls, *, router: str | Path | None = None, llm: str = "local",
                   backend_options: dict[str, dict[str, Any]] | None = None) -> PipelineFactory:
        """From a checkpoint path (default: the shipped router) and a `--llm` spec string."""
        from imad.llm.spec import chat_model_from_spec

        return cls(Router.load(router), chat_model_from_spec(llm), dict(backend_options or {}))

    def build(self, choice: ModelChoice, model: ChatModel | None = None, *,
              budget: TriggerBudget | None = None, featurizer: Featurizer | None = None) -> Pipeline:
        """The pipeline for `choice`, calling `model` (default: the shared one), deciding with
        the model name's `budget` if the server keeps one, extracting features with `featurizer`
        (default: one extraction per request)."""
        return Pipeline(self.router_for(choice.tau), model if model is not None else self.model,
                        choice.backend, tau=choice.tau,
                        backend_options=dict(self.backend_options.get(choice.backend, {})),
                        budget=budget, featurizer=featurizer)

    def router_for(self, tau: float | None) -> Router:
        """The shared router already set to `tau` the way `Pipeline` sets it (None: as loaded),
        so a request's pipeline need not copy it; the last `MAX_CACHED_THRESHOLDS` τ are kept."""
        if tau is None:
            return self.router
        with self._tau_lock:
            router = self._tau_routers.get(tau)
            if router is not None:
                self._tau_routers.move_to_end(tau)
                return router
        router = Pipeline(self.router, self.model, "acemad", tau=tau).router
        with self._tau_lock:
            self._tau_routers[tau] = router
            while len(self._tau_routers) > MAX_CACHED_THRESHOLDS:
                self._tau_routers.popitem(last=False)
        return router

    def prepare(self, ood_policy: str | None = None) -> None:
        """Apply the server's `ood_policy` to the shared router, build every servable back-end
        once and score one made-up answer.

        Bad back-end options (and an `ood_policy` the router cannot follow) then fail at start-up
        rather than per request, and the feature extractor (spaCy, textstat, lexicons) loads once
        before traffic arrives: its loaders are not locked, so a first burst of concurrent
        requests would otherwise each load spaCy.
        """
        if ood_policy is not None and ood_policy != self.router.ood_policy:
            self.router = self.router.with_ood_policy(ood_policy)  # once, not per request
            with self._tau_lock:
                self._tau_routers.clear()  # copies of the router before its policy changed
        for backend in SERVE_BACKENDS:
            self.build(ModelChoice(f"imad-{backend}", backend, None))
        self.router.decide("Is the server warm?", WARM_UP_RESPONSE)
