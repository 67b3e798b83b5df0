"""`imad ask`: answer a question end to end — self-critique, route, debate when unsure.

A run that produced no answer (every call failed: an unreachable server, a file that is not a
model, a server that answers HTML) is a failed run: the report is printed as usual, then
`NoAnswerError` makes it `error: …` with exit status 3.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from imad.cli.common import add_question_arguments, print_json, question_from_args
from imad.errors import NoAnswerError

if TYPE_CHECKING:
    from imad.pipeline import PipelineAnswer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_question_arguments(parser)
    parser.add_argument("--backend", default="acemad",
                        help="debate back-end for escalated questions: acemad, svrmad, mad, liang, "
                             "self_consistency, cot, down (default: %(default)s)")
    parser.add_argument("--router", default=None,
                        help="router checkpoint directory (default: the shipped imad-router-v1)")
    parser.add_argument("--tau", type=float, default=None,
                        help="threshold override: escalate when p < TAU (default: the checkpoint's)")
    parser.add_argument("--trace", action="store_true", help="with --json: include every LLM call")


def run(args: argparse.Namespace) -> int:
    from imad.pipeline import Pipeline

    pipeline = Pipeline.from_specs(router=args.router, llm=args.llm, backend=args.backend, tau=args.tau)
    result = pipeline.answer(question_from_args(args))
    if args.json:
        print_json(result.to_dict(include_trace=args.trace))
    else:
        print_report(result, args.backend)
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
    print(f"decision: {'escalated to ' + backend if result.escalated else 'kept'} "
          f"(p = {p}, τ = {decision.tau:.2f})")
    for reason in decision.reasons:
        print(f"  - {reason}")
    if result.debate is not None:
        print(f"debate: {result.debate.stop_reason}, {result.debate.n_calls} calls, "
              f"{result.debate.messages} messages")
    if result.error:
        print(f"error: {result.error}")
    print(f"tokens: {result.prompt_tokens} prompt + {result.completion_tokens} completion "
          f"in {len(result.trace)} LLM calls")
