"""Every debate back-end on MedQA questions with the embedded model: accuracy, cost, wall time.

    python benchmarks/bench_debate.py [--n 10] [--llm local] [--cache benchmarks/cache/debate_medqa.sqlite]
        [--data-dir ../shared/datasets] [--backends cot mad …]

Calls go through a record/replay cache, so a rerun replays them. Back-ends run with their
default configs. Prints a Markdown table: accuracy, prompt+completion tokens, messages and calls
per question, and model seconds per question — the sum of the calls' recorded latencies, which
the cache keeps, so the figure is the time the model took even when a call is replayed or shared
with another back-end (identical requests, e.g. the same agent's opening in self-consistency and
MAD, are computed once).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from imad.debate import BACKENDS, create_backend
from imad.llm.cache import CachedChat
from imad.llm.spec import chat_model_from_spec
from training.data import load_questions
from training.data.medqa import LOCAL_FILE

HERE = Path(__file__).resolve().parent


def data_dir_of(data: Path | None, data_dir: Path | None) -> Path | None:
    """The datasets folder: --data-dir, or the folder above --data's medqa/test_4options.jsonl."""
    if data is None:
        return data_dir
    if data.as_posix().endswith(LOCAL_FILE):
        return data.parents[1]
    raise SystemExit(f"--data must be a datasets folder's {LOCAL_FILE}, got {data}; or use --data-dir")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10, help="number of MedQA test questions (the first n)")
    parser.add_argument("--llm", default="local", help="chat back-end spec")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="datasets folder (default: $IMAD_DATA_DIR or ../shared/datasets)")
    parser.add_argument("--data", type=Path, default=None, help=f"(older form) the {LOCAL_FILE} file")
    parser.add_argument("--cache", type=Path, default=HERE / "cache" / "debate_medqa.sqlite")
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    args = parser.parse_args()

    args.cache.parent.mkdir(parents=True, exist_ok=True)
    questions = load_questions("medqa", data_dir=data_dir_of(args.data, args.data_dir), limit=args.n)
    model = CachedChat(chat_model_from_spec(args.llm), args.cache)
    rows = []
    for name in args.backends:
        backend = create_backend(name, model)
        correct = tokens = messages = calls = 0
        seconds = 0.0
        for question in questions:
            result = backend.run(question)
            latency = sum(call.latency_s for call in result.trace)
            seconds += latency
            correct += result.final_answer == question.gold
            tokens += result.total_tokens
            messages += result.messages
            calls += result.n_calls
            print(f"{name:>16} {question.id}: {result.final_answer or '-'} (gold {question.gold}) "
                  f"{result.stop_reason}, {result.total_tokens} tokens, {latency:.1f}s",
                  flush=True)
        n = len(questions)
        rows.append(f"| {name} | {correct}/{n} | {tokens / n:.0f} | {messages / n:.1f} | "
                    f"{calls / n:.1f} | {seconds / n:.1f} |")
    print(f"\nMedQA test, first {len(questions)} questions, {model.model_id}, default configs")
    print("| back-end | correct | tokens/q | messages/q | calls/q | s/q |")
    print("|---|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
