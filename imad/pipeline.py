"""The iMAD pipeline: self-critique → features → router → keep, or escalate to a debate.

`Pipeline.answer(question)` makes one self-critique call, lets the router score it, and keeps
the answer when p ≥ τ. Otherwise — or when the response could not be parsed or was truncated —
the question goes to the configured debate back-end, with the self-critique as one agent's
opening so it is not paid for twice. Every result carries the router's decision, every LLM call
made, and token totals that are the sums over those calls.

The router scores, a policy decides: `Pipeline(..., policy=...)` takes an
`imad.decide.Policy`, or a bare threshold rule with the checkpoint's OOD policy —
`imad.FixedThreshold(0.6)` or an escalation budget `imad.TriggerBudget(0.2, window=500)`, which
observes every scored answer and decides it with its τ for that answer (an unparsed or
non-finite one is observed as unparsed: it escalates and counts against the budget). Without a
policy the checkpoint's τ and OOD policy decide (`imad.decide.checkpoint_policy`). The router is
shared as it is, never copied. A shadow policy (`Policy(rule, shadow=True)`) decides the same way
but keeps the answer, so no debate runs; `debate_in_shadow` runs it later, off the request
(`imad.shadow`).

"Is there an answer?" is decided here, once (`_served`): a debate that fails outright (every
agent call failed) or ends without an answer does not lose the question — the self-critique's
answer is served (source "single_agent_fallback") with the reason in `error`; only when no
answer is left is the source "none" (`PipelineAnswer.answered` False), which `imad ask` turns
into exit 3 and `imad serve` into a 502, so the two agree.

Fail safe: a score that is not a finite number never keeps an answer; the policy
escalates it with p = None and the reason recorded, whatever router produced it. A question whose
prompt cannot fit the model's context raises `InputTooLargeError` before any call, and a
cancelled request (`imad.llm.cancel`) raises `RequestCancelledError` at its next call.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from imad import tracing
from imad.constraints import Integer, check_value
from imad.critique.call import CritiqueResult, SelfCritique
from imad.debate import DebateBackend, DebateResult, create_backend
from imad.decide import Policy, RouterDecision, ThresholdRule, as_policy
from imad.decide.schema import view
from imad.errors import DebateError, LLMError
from imad.llm.types import ChatModel
from imad.question import Question
from imad.router import Router

if TYPE_CHECKING:
    from imad.router.score import Scorer



@dataclass(frozen=True)
class PipelineAnswer:
    """The answer to one question and everything that produced it.

    `source` (one of `imad.decide.schema.ANSWER_SOURCES`): "single_agent" (kept), "debate" (escalated and
    debated), "single_agent_fallback" (escalated, the debate failed or gave no answer, the
    self-critique answer is used), "none" (nothing usable came back; `error` says why). `answer`
    is empty exactly when the source is "none".
    """

    question: Question
    answer: str
    source: str
    decision: RouterDecision
    critique: CritiqueResult
    debate: DebateResult | None = None
    error: str | None = None
    trace: tuple[dict[str, Any], ...] = field(default=(), repr=False)

    @property
    def escalated(self) -> bool:
        return self.decision.escalate

    @property
    def answered(self) -> bool:
        """False when nothing usable came back: a failed run (`imad ask` exit 3, a 502)."""
        return self.source != "none"

    @property
    def prompt_tokens(self) -> int:
        return sum(call["prompt_tokens"] for call in self.trace)

    @property
    def completion_tokens(self) -> int:
        return sum(call["completion_tokens"] for call in self.trace)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def phase_tokens(self, stage: str, kind: str) -> int:
        """`kind` ("prompt" or "completion") tokens of the calls of one trace `stage`."""
        return sum(call[f"{kind}_tokens"] for call in self.trace if call["stage"] == stage)

    def values(self) -> dict[str, Any]:
        """The decision's fields and the answer's (`imad.decide.schema`, origin "answer")."""
        critique = self.critique
        return {
            **self.decision.values(), "answer": self.answer, "source": self.source,
            "single_answer": critique.response.final_answer if critique.ok else None,
            "debate_answer": self.debate.final_answer or None if self.debate else None,
            "error": self.error, "llm_calls": len(self.trace), "upstream_model": critique.model_id,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            **{f"{phase}_{kind}_tokens": self.phase_tokens(stage, kind)
               for phase, stage in (("critique", "self_critique"), ("debate", "debate"))
               for kind in ("prompt", "completion")},
        }

    def to_dict(self, *, include_trace: bool = True) -> dict[str, Any]:
        """The `answer` view, the decision (`decision` view) and the records behind them."""
        data = {
            "question_id": self.question.id, **view("answer", self.values()),
            "decision": self.decision.to_dict(), "critique": self.critique.to_dict(),
            "debate": None if self.debate is None else self.debate.to_dict(include_trace=False),
        }
        if include_trace:
            data["trace"] = list(self.trace)
        return data


def _critique_call(result: CritiqueResult) -> dict[str, Any]:
    return {"stage": "self_critique", "agent": "router", "role": "self_critique",
            "status": result.status, "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens, "latency_s": result.latency_s,
            "response_text": result.raw_text}


def _debate_calls(debate: DebateResult) -> list[dict[str, Any]]:
    return [{"stage": "debate", "agent": call.agent, "role": call.role, "round": call.round,
             "status": "error" if call.error else "ok", "prompt_tokens": call.prompt_tokens,
             "completion_tokens": call.completion_tokens, "latency_s": call.latency_s,
             "response_text": call.response_text} for call in debate.trace]


class Pipeline:
    """Router + chat model + debate back-end, answering questions end to end."""

    def __init__(self, router: Router, model: ChatModel, backend: DebateBackend | str = "acemad", *,
                 policy: Policy | ThresholdRule | None = None, critique: SelfCritique | None = None,
                 backend_options: dict[str, Any] | None = None,
                 scorer: Scorer | None = None) -> None:
        self.router = router
        self.policy = as_policy(router.config, policy)
        self.model = model
        self.scorer = scorer
        self.critique = critique or SelfCritique(model, confidence_source=router_confidence_source(router))
        self.backend = (create_backend(backend, model, **(backend_options or {}))
                        if isinstance(backend, str) else backend)

    @classmethod
    def from_specs(cls, *, router: str | Path | None = None, llm: str = "local",
                   backend: str = "acemad", policy: Policy | ThresholdRule | None = None) -> Pipeline:
        """Build from a checkpoint path (default: the shipped router) and a `--llm` spec."""
        from imad.llm.spec import chat_model_from_spec

        return cls(Router.load(router), chat_model_from_spec(llm), backend, policy=policy)

    @tracing.traced_answer
    def answer(self, question: Question | str) -> PipelineAnswer:
        """Answer one question; never raises for a bad LLM answer (see the module docstring)."""
        if isinstance(question, str):
            question = Question(question)
        critique = self.critique.run(question)
        decision = self._decide(question, critique)
        if not decision.escalate:
            return _served(question, decision, critique)
        try:
            debate = self.backend.run(question, seed_response=critique.response)
        except (DebateError, LLMError) as error:
            return _served(question, decision, critique, error=f"{type(error).__name__}: {error}")
        return _served(question, decision, critique, debate)

    def debate_in_shadow(self, answer: PipelineAnswer) -> DebateResult:
        """The debate a shadow decision skipped, run after its single answer was
        served: the same back-end, seeded with the same self-critique. Raises what the back-end
        raises (a shadow runner counts it); `ValueError` when the answer had no parsed
        self-critique to seed it."""
        if not answer.critique.ok:
            raise ValueError("a shadow debate needs the parsed self-critique of the served answer")
        return self.backend.run(answer.question, seed_response=answer.critique.response)

    @tracing.traced_decision
    def _decide(self, question: Question, critique: CritiqueResult) -> RouterDecision:
        """Score the self-critique and decide with the policy (τ and its source are chosen
        there, once); one `imad.decision` span holding the features' span."""
        if critique.ok and self.scorer is not None:
            return self.policy.decide(self.scorer(question, critique.response))
        score = self.router.score(
            question, critique.response if critique.ok else None,
            parse_error=None if critique.ok else f"{critique.status}: {critique.error}")
        return self.policy.decide(score)

    def answer_batch(self, questions: Sequence[Question | str], *, max_concurrency: int = 1,
                     progress: bool = False) -> list[PipelineAnswer]:
        """Answer many questions, at most `max_concurrency` at a time, results in input order."""
        check_value(max_concurrency, Integer(low=1), "max_concurrency")
        from tqdm import tqdm

        bar = tqdm(total=len(questions), unit="q", disable=not progress, desc="imad")
        results: list[PipelineAnswer | None] = [None] * len(questions)

        def work(index: int) -> None:
            results[index] = self.answer(questions[index])
            bar.update(1)

        try:
            if max_concurrency == 1:
                for index in range(len(questions)):
                    work(index)
            else:
                with ThreadPoolExecutor(max_workers=max_concurrency) as pool:
                    list(pool.map(work, range(len(questions))))
        finally:
            bar.close()
        return [r for r in results if r is not None]


def _served(question: Question, decision: RouterDecision, critique: CritiqueResult,
            debate: DebateResult | None = None, *, error: str | None = None) -> PipelineAnswer:
    """The one place that decides which answer is served, if any: the debate's when it gave
    one, else the self-critique's (kept, or as the fallback of a failed or empty debate, the
    reason in `error`), else none."""
    trace = (_critique_call(critique), *(_debate_calls(debate) if debate is not None else ()))
    single = critique.response.final_answer if critique.ok else ""
    if debate is not None and debate.final_answer:
        return PipelineAnswer(question, debate.final_answer, "debate", decision, critique, debate,
                              trace=trace)
    if debate is not None:
        error = f"the debate gave no answer ({debate.backend}: {debate.stop_reason})"
    if not decision.escalate and single:
        return PipelineAnswer(question, single, "single_agent", decision, critique, trace=trace)
    if not single and not decision.escalate:
        error = "the self-critique gave an empty answer"
    source = "single_agent_fallback" if single else "none"
    return PipelineAnswer(question, single, source, decision, critique, debate, error=error,
                          trace=trace)


def router_confidence_source(router: Router) -> str:
    """The confidence source the router was trained with (recorded in its checkpoint)."""
    return router.confidence_source
