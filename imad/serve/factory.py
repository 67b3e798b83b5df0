"""Building the pipeline of one request from the server's shared parts.

The router and the chat model are loaded once per server and shared, never copied; a request
only chooses the debate back-end and its policy (through its model name,
`imad.serve.openai.model_names`): a τ suffix builds a `FixedThreshold` policy, a model name's trigger
budget is its policy's rule, and the server's `--ood-policy` goes into every policy. Building a
`Pipeline` per request is cheap (a policy and two small config objects) and lets the server hand
each request its own `UpstreamWatch` around the shared model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imad.critique.schema import CritiqueResponse
from imad.decide import Policy, TriggerBudget, choose_policy
from imad.llm.types import ChatModel
from imad.pipeline import Pipeline
from imad.router import Router
from imad.serve.openai.model_names import MODEL_PREFIX, SERVE_BACKENDS, ModelChoice

if TYPE_CHECKING:
    from imad.router.score import Scorer

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
    ood_policy: str | None = None
    """The server's `--ood-policy`; None follows the checkpoint's."""
    shadow: bool = False
    """The server's `--shadow`: every policy observes only (`imad.decide.Policy.shadow`)."""

    @classmethod
    def from_specs(cls, *, router: str | Path | None = None, llm: str = "local",
                   backend_options: dict[str, dict[str, Any]] | None = None) -> PipelineFactory:
        """From a checkpoint path (default: the shipped router) and a `--llm` spec string."""
        from imad.llm.spec import chat_model_from_spec

        return cls(Router.load(router), chat_model_from_spec(llm), dict(backend_options or {}))

    def build(self, choice: ModelChoice, model: ChatModel | None = None, *,
              budget: TriggerBudget | None = None, scorer: Scorer | None = None,
              escalate_all: str | None = None) -> Pipeline:
        """The pipeline for `choice`, calling `model` (default: the shared one), deciding with
        the policy of `choice` (`policy_for`), scoring with `scorer` (default: `Router.score`,
        one answer at a time); `escalate_all`: the reason every answer escalates (a violated
        certificate, `imad.serve.certificate_watch`)."""
        return Pipeline(self.router, model if model is not None else self.model, choice.backend,
                        policy=self.policy_for(choice, budget, escalate_all),
                        backend_options=dict(self.backend_options.get(choice.backend, {})),
                        scorer=scorer)

    def policy_for(self, choice: ModelChoice, budget: TriggerBudget | None = None,
                   escalate_all: str | None = None) -> Policy:
        """The model name's trigger `budget` when the server keeps one, else its τ suffix (or
        --tau), else the checkpoint's τ; with the server's OOD policy."""
        return choose_policy(self.router.config, tau=choice.tau, rule=budget, ood_policy=self.ood_policy,
                             shadow=self.shadow, escalate_all=escalate_all)

    def default_policy(self, tau: float | None = None) -> Policy:
        """The policy of a request without a τ suffix or budget: `tau` (the server's --tau), else
        the checkpoint's τ; the server's OOD policy."""
        return self.policy_for(ModelChoice(MODEL_PREFIX, SERVE_BACKENDS[0], tau))

    def prepare(self, ood_policy: str | None = None) -> None:
        """Take the server's `ood_policy`, build every servable back-end once and score one
        made-up answer.

        Bad back-end options (and an `ood_policy` the router cannot follow) then fail at start-up
        rather than per request, and the feature extractor (spaCy, textstat, lexicons) loads once
        before traffic arrives: its loaders are not locked, so a first burst of concurrent
        requests would otherwise each load spaCy.
        """
        if ood_policy is not None:  # None keeps the factory's own (or the checkpoint's)
            self.ood_policy = ood_policy
        for backend in SERVE_BACKENDS:
            self.build(ModelChoice(f"imad-{backend}", backend, None))
        self.router.score("Is the server warm?", WARM_UP_RESPONSE)
