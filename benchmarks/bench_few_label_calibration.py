"""Held-out ECE after recalibrating on a few labels (issue 35): `auto` (the default) against the
labels' base rate and plain Platt, on the committed evaluation answers of the embedded model.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_few_label_calibration.py --labels 50 --splits 10

For each data set, the default router's raw scores of its committed answers
(corpus/smollm2-135m-instruct-q4_1/eval/*.jsonl) go through `recalibration_study`: each of
`--splits` seeded splits takes `--labels` answers as the user's labels, fits through
`imad.fit_calibrator`, and scores the rest. Prints the median ECE per method as Markdown, and how
often auto chose each kind. No LLM call: the answers are on disk.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from imad.router import Router
from imad.router.calibration_set import read_answer_scores
from training.evaluation.recalibration import recalibration_study

ROOT = Path(__file__).resolve().parents[1]
ANSWERS = ROOT / "corpus" / "smollm2-135m-instruct-q4_1" / "eval"
SHOWN = ("auto", "base_rate", "platt", "isotonic", "zero_shot")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=50)
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--router", default=None)
    args = parser.parse_args()
    router = Router.load(args.router)
    print(f"router {router.name}; {args.labels} labels, {args.splits} seeded splits (seed {args.seed}); "
          "median held-out ECE (splits fitted)\n")
    print("| set (answers, accuracy) | " + " | ".join(SHOWN) + " | auto chose |")
    print("|---|" + "---:|" * len(SHOWN) + "---|")
    for path in sorted(ANSWERS.glob("*.jsonl")):
        answers = read_answer_scores(router, [path])
        labelled = [i for i, label in enumerate(answers.labels) if label is not None]
        scores = answers.raw[labelled]
        labels = np.array([answers.labels[i] for i in labelled])
        study = recalibration_study(scores, labels, args.labels, training_prior=None,
                                    splits=args.splits, seed=args.seed)
        cells = []
        for method in SHOWN:
            row = study["methods"][method]
            median = "n/a" if row["ece_median"] is None else f"{row['ece_median']:.3f}"
            cells.append(median if row["splits"] == args.splits else f"{median} ({row['splits']})")
        chose = ", ".join(f"{kind} {n}" for kind, n in sorted(study["auto_choices"].items()))
        print(f"| {path.stem} ({labels.size}, {labels.mean():.3f}) | " + " | ".join(cells)
              + f" | {chose} |")


if __name__ == "__main__":
    main()
