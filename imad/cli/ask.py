"""`imad ask`: answer a question end to end — self-critique, route, debate when unsure.

A run that produced no answer (every call failed: an unreachable server, a file that is not a
model, a server that answers HTML) is a failed run: the report is printed as usual, then
`NoAnswerError` makes it `error: …` with exit status 3.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from imad.cli.common import (
    add_question_arguments,
    add_routing_arguments,
    flag_error,
    print_json,
    question_from_args,
)
from imad.errors import ConfigError, NoAnswerError

if TYPE_CHECKING:
    from imad.pipeline import PipelineAnswer
    from imad.policy import Policy
    from imad.router import Router
    from imad.router.budget import TriggerBudget


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_question_arguments(parser)
    parser.add_argument("--backend", default="acemad",
                        help="debate back-end for escalated questions: acemad, svrmad, mad, liang, "
                             "self_consistency, cot, down (default: %(default)s)")
    parser.add_argument("--router", default=None,
                        help="router checkpoint directory or shipped name (default: the shipped "
                             "imad-router-v2)")
    parser.add_argument("--tau", type=float, default=None,
                        help="threshold override: escalate when p < TAU (default: the checkpoint's)")
    add_routing_arguments(parser, serving=False)
    parser.add_argument("--budget-state", type=Path, default=None, metavar="FILE",
                        help="JSON file holding the trigger budget between runs, shared by "
                             "concurrent runs: checked before any call, then read, updated and "
                             "written under FILE.lock when the answer is decided (created with "
                             "--target-trigger-rate); needed for a budget, since each imad ask "
                             "answers one question")
    parser.add_argument("--trace", action="store_true", help="with --json: include every LLM call")


def policy_from_flags(args: argparse.Namespace, router: Router) -> tuple[Policy, TriggerBudget | None]:
    """The policy `imad ask` decides with, from --tau, --target-trigger-rate / --budget-window /
    --budget-state and --ood-policy (the budget, when there is one, is its threshold rule and
    starts from --tau or the checkpoint's τ); the budget too, for the report."""
    from imad.cli.budget_state import budget_from_flags
    from imad.policy import choose_policy, chosen_threshold

    try:
        initial = chosen_threshold(router, args.tau)
        budget = budget_from_flags(args.target_trigger_rate, args.budget_window, args.budget_state,
                                   initial)
        return choose_policy(router, tau=args.tau, rule=budget, ood_policy=args.ood_policy), budget
    except ConfigError as error:
        raise flag_error(error) from None


def run(args: argparse.Namespace) -> int:
    from imad.llm.spec import chat_model_from_spec
    from imad.pipeline import Pipeline
    from imad.router import Router

    router = Router.load(args.router)
    policy, budget = policy_from_flags(args, router)
    try:
        pipeline = Pipeline(router, chat_model_from_spec(args.llm), args.backend, policy=policy)
    except ConfigError as error:
        raise flag_error(error) from None
    result = pipeline.answer(question_from_args(args))  # a budget writes its file as it decides
    if args.json:
        print_json(result.to_dict(include_trace=args.trace))
    else:
        print_report(result, args.backend)
        if budget is not None:
            stats = budget.stats()
            print(f"budget: {stats.realized_rate:.3f} of the last {stats.answers_in_window} "
                  f"answers escalated, target {stats.target_rate:g} (state in {args.budget_state})")
    if result.source == "none" or not result.answer:
        raise NoAnswerError(no_answer_reason(result))
    return 0


def no_answer_reason(result: PipelineAnswer) -> str:
    """Why a pipeline gave no answer: the self-critique's failure and the debate's."""
    critique = result.critique
    reason = f"no answer was produced: the self-critique call ended with {critique.status}"
    if critique.error:
        reason += f" ({critique.error})"
    if result.error:
        reason += f"; the debate failed too ({result.error})"
    return reason


def print_report(result: PipelineAnswer, backend: str) -> None:
    """The human-readable report of one answer."""
    decision = result.decision
    p = "n/a" if decision.p is None else f"{decision.p:.3f}"
    print(f"answer: {result.answer or '(none)'}")
    ood = ("n/a (no OOD statistics)" if decision.ood_score is None
           else f"{decision.ood_score:.2f}{', unfamiliar' if decision.ood else ''}")
    print(f"decision: {'escalated to ' + backend if result.escalated else 'kept'} "
          f"(p = {p}, τ = {decision.tau:.2f} from {decision.tau_source}, OOD score {ood}, "
          f"ood_policy {decision.ood_policy})")
    for reason in decision.reasons:
        print(f"  - {reason}")
    if result.debate is not None:
        print(f"debate: {result.debate.stop_reason}, {result.debate.n_calls} calls, "
              f"{result.debate.messages} messages")
    if result.error:
        print(f"error: {result.error}")
    print(f"tokens: {result.prompt_tokens} prompt + {result.completion_tokens} completion "
          f"in {len(result.trace)} LLM calls")
