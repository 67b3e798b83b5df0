"""End-to-end benchmark (`python -m training.evaluate --e2e`, SPEC §10): accuracy and cost of
CoT, self-consistency, full MAD, DOWN and iMAD with AceMAD or SVR-MAD on the same questions.

Every LLM call goes through one record/replay cache (`training.e2e.calls`), so a
rerun or a resumed run replays what was already asked. Each method answers each question once;
the tokens of a question are those of every call its method made, counted at the chat-model
layer (prompt + completion, replayed calls included). A typed imad error on one question is
recorded for that question and the run goes on; in replay mode a call missing from the cache
marks its question as failed, so no number is computed from a partial replay. The numbers and
the report are built by `training.e2e.report`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from imad.critique.call import SelfCritique
from imad.critique.canonical import answers_match
from imad.critique.prompts import PROMPT_VERSION
from imad.debate import DebateBackend, create_backend
from imad.decide import FixedThreshold, chosen_threshold
from imad.errors import ImadError, NoAnswerError
from imad.llm.types import ChatModel
from imad.pipeline import Pipeline, router_confidence_source
from imad.question import Question
from imad.router import DEFAULT_CHECKPOINT, Router
from training.data import load_questions
from training.e2e.calls import CallUsage, MeteredChat, open_call_cache, prime_from_corpus
from training.e2e.config import E2EConfig
from training.e2e.deferral_run import DEFERRAL_TAU, deferral_section
from training.e2e.methods import E2E_METHODS, Method
from training.e2e.outcome import Answered, QuestionOutcome
from training.e2e.report import build_document, write_e2e_report
from training.evaluation.config import dataset_name
from training.evaluation.report import EvaluationResult, to_jsonable
from training.evaluation.responses import check_questions

Runner = Callable[[Question], Answered]


def evaluate_e2e(config: E2EConfig, *, model: ChatModel | None = None,
                 router: Router | None = None) -> EvaluationResult:
    """Run the benchmark `config` describes; `model` and `router` replace `config.llm` and
    `config.router` (tests, notebooks)."""
    routed = any(E2E_METHODS[m].routed for m in config.methods)
    router_path = None
    if router is None and routed:
        router_path = str(config.router or DEFAULT_CHECKPOINT)
        router = Router.load(router_path)
    tau, method = ((DEFERRAL_TAU, "every question escalated (--deferral)") if config.deferral
                   else (config.tau, "set for this run (--tau)"))
    threshold = None if router is None else chosen_threshold(router.config, tau, method=method)
    questions = {dataset_name(d): load_questions(d, data_dir=config.data_dir, limit=config.limit)
                 for d in config.datasets}
    for name, items in questions.items():
        check_questions(name, items)  # every input is checked before the first call
    spec: str | None = None
    if model is None:
        from imad.llm.spec import chat_model_from_spec

        spec, model = config.llm, chat_model_from_spec(config.llm)
    cache = open_call_cache(model, config.cache, config.cache_mode)
    meter = MeteredChat(cache, max_concurrency=getattr(model, "max_concurrency", 1))
    source = config.confidence_source or (router_confidence_source(router) if router else "verbal")
    critique = SelfCritique(meter, max_tokens=config.max_tokens, confidence_source=source)
    methods = {name: prepare(E2E_METHODS[name], meter, router, critique, config.backend_options,
                             threshold)
               for name in config.methods}
    outcomes: dict[str, dict[str, list[QuestionOutcome]]] = {}
    primed: dict[str, int] = {}
    try:
        for name, items in questions.items():
            primed[name] = 0
            if routed and config.cache_mode == "record" and config.corpus_dir:
                primed[name] = prime_from_corpus(cache, critique, items, config.corpus_dir, name)
            outcomes[name] = {}
            for method, prepared in methods.items():
                outcomes[name][method] = _run_method(f"{name}/{method}", prepared.run, items,
                                                     meter, config.progress)
    finally:
        cache.close()
    run = {"llm": {"model_id": model.model_id, "spec": spec},
           "router": None if router is None else {
               "name": router.name, "path": router_path or "(passed in by the caller)",
               "tau": threshold.tau, "tau_method": threshold.method},
           "self_critique": {"prompt_version": PROMPT_VERSION, "confidence_source": source,
                             "decoding": critique.decoding_params()},
           "cache": {"path": str(config.cache), "mode": config.cache_mode,
                     "primed_from_corpus": primed},
           "methods": {name: prepared.info() for name, prepared in methods.items()},
           "config": config.to_dict()}
    document = build_document(run, outcomes)
    if config.deferral:
        document["deferral"] = to_jsonable({
            name: {method: deferral_section(name, method, rows, Path(config.out))
                   for method, rows in by_method.items() if E2E_METHODS[method].routed}
            for name, by_method in outcomes.items()})
    json_path, markdown_path, markdown = write_e2e_report(document, Path(config.out))
    refuse_if_every_question_failed(outcomes, json_path)
    return EvaluationResult(document, markdown, json_path, markdown_path, outcomes=outcomes)


def refuse_if_every_question_failed(outcomes: dict[str, dict[str, list[QuestionOutcome]]],
                                    report: Path) -> None:
    """`NoAnswerError` (exit 3) when every question of every method failed: the report is
    written, so it says why, but a run that answered nothing is not a result."""
    every = [outcome for by_method in outcomes.values() for rows in by_method.values()
             for outcome in rows]
    if every and all(outcome.error is not None for outcome in every):
        raise NoAnswerError(f"all {len(every)} answers failed (first: {every[0].error}), so "
                            f"nothing was measured; {report} lists the errors")


@dataclass(frozen=True)
class PreparedMethod:
    """A method ready to run: its registry entry, its debate back-end, and how to call it."""

    method: Method
    backend: DebateBackend
    """The whole method, or (iMAD) the back-end escalated questions go to."""
    run: Runner

    def info(self) -> dict[str, Any]:
        return {"title": self.method.title, "backend": self.method.backend,
                "routed": self.method.routed, "selective": self.method.selective,
                "backend_config": asdict(self.backend.config)}


def prepare(method: Method, model: MeteredChat, router: Router | None, critique: SelfCritique,
            options: Mapping[str, Mapping[str, Any]],
            threshold: FixedThreshold | None = None) -> PreparedMethod:
    """The back-end (with `options[backend]` over its defaults) and the runner of `method`;
    a routed method decides with `threshold` (default: the checkpoint's τ)."""
    backend = create_backend(method.backend, model, **dict(options.get(method.backend, {})))
    if method.routed:
        pipeline = Pipeline(router, model, backend, critique=critique, policy=threshold)
        return PreparedMethod(method, backend, lambda q: _answer_with_pipeline(pipeline, q))
    if method.selective:
        return PreparedMethod(method, backend, lambda q: _answer_selectively(backend, q))
    return PreparedMethod(method, backend, lambda q: _answer(backend, q))


def _answer(backend: DebateBackend, question: Question) -> Answered:
    result = backend.run(question)
    return Answered(result.final_answer, result.messages, result.stop_reason)


def _answer_selectively(backend: DebateBackend, question: Question) -> Answered:
    """DOWN: "confident" keeps its opening; "debated:…" hands it to the debate as agent 0's
    opening, which is then round 0's agent_0 answer (unless it had no answer to hand on)."""
    result = backend.run(question)
    escalated = result.stop_reason.startswith("debated")
    seeded = not escalated or "seed_opening:agent_0" in result.flags
    single = result.rounds[0].get("agent_0", "") if seeded and result.rounds else ""
    return Answered(result.final_answer, result.messages, result.stop_reason, None, escalated,
                    single, result.details.get("confidence"))


def _answer_with_pipeline(pipeline: Pipeline, question: Question) -> Answered:
    result = pipeline.answer(question)
    critique = result.critique
    return Answered(result.answer, result.debate.messages if result.debate else 0, result.source,
                    result.error, result.escalated,
                    critique.response.final_answer if critique.ok else "", result.decision.p,
                    critique.response.confidence_initial if critique.ok else None,
                    critique.total_tokens)


def _run_method(label: str, runner: Runner, questions: list[Question], meter: MeteredChat,
                progress: bool) -> list[QuestionOutcome]:
    from tqdm import tqdm

    outcomes = []
    meter.take()
    for question in tqdm(questions, desc=label, unit="q", disable=not progress, file=sys.stderr):
        try:
            answered = runner(question)
        except ImadError as error:
            answered = Answered("", 0, "failed", f"{type(error).__name__}: {error}")
        outcomes.append(_outcome(question, answered, meter.take()))
    return outcomes


def _outcome(question: Question, answered: Answered, usage: CallUsage) -> QuestionOutcome:
    error = answered.error
    if usage.replay_misses:
        error = (f"ReplayMissError: {usage.replay_misses} of this question's {usage.calls} calls "
                 "are not in the cache (replay mode)")

    def right(answer: str | None) -> bool | None:
        if answer is None:
            return None
        return answers_match(answer, question.gold, question.task_type, question.choices)

    return QuestionOutcome(
        **{**asdict(answered), "error": error}, question_id=question.id, gold=str(question.gold),
        correct=bool(right(answered.answer)), prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens, calls=usage.calls,
        model_seconds=round(usage.model_seconds, 4), failed_calls=usage.failed_calls,
        single_correct=right(answered.single_answer))
