"""The population simulator's table: vote, all-to-all MAD, AceMAD and SVR-MAD with a minority truth.

    python benchmarks/simulate_debate.py [--n 1000] [--sensitivity]
    python benchmarks/simulate_debate.py --svr-sweep [--n 1000]

Runs `imad.debate.simulate` (synthetic agents answering through the real back-ends; the agent
model is documented there) on the same seeded questions for every method, with 20% and 40%
truth-holders. Also prints the control without second-order knowledge, and with
`--sensitivity` the variants that move the conclusions: uninformative verbal priors, and an
echo chamber where truth-holders are as persuadable as the crowd. `--svr-sweep` prints SVR-MAD's
accuracy and messages for both score rules ("beta" over its posterior strength κ, "survival",
where κ plays no part) and over the acceptance threshold `accept_threshold` (SPEC §8 defaults
κ = 2, 0.75) beside all-to-all MAD, on the default population and on one with flat priors.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from imad.debate.registry import make_config
from imad.debate.simulate import (
    Method,
    PopulationConfig,
    default_methods,
    format_table,
    run_method,
    simulate,
)

SWEEP_KAPPAS = (2.0, 4.0, 8.0)
SWEEP_THRESHOLDS = (0.75, 0.85, 0.95, 1.0)


def svr_sweep(n: int, seed: int) -> None:
    """SVR-MAD over score rule × κ × accept_threshold next to all-to-all MAD, same questions."""
    seeds = range(seed, seed + n)
    base = PopulationConfig()
    mad = next(m for m in default_methods(base.n_agents) if m.backend == "mad")
    print("| truth share | priors | method | score rule | κ | accept_threshold | accuracy | "
          "messages/q |")
    print("|---:|---|---|---|---:|---:|---:|---:|")
    for share in (0.2, 0.4):
        for priors, population in (
                ("verbal (crowd surer)", replace(base, truth_share=share)),
                ("flat", replace(base, truth_share=share,
                                 confidence_truth=base.confidence_crowd))):
            stats, _ = run_method(mad, population, seeds)
            print(f"| {share:.0%} | {priors} | all-to-all MAD | | | | {stats.accuracy:.3f} | "
                  f"{stats.messages_per_question:.1f} |")
            rules = [("beta", kappa) for kappa in SWEEP_KAPPAS] + [("survival", None)]
            for rule, kappa in rules:
                for threshold in SWEEP_THRESHOLDS:
                    config = make_config("svrmad", n_agents=base.n_agents,
                                         consensus_agree=base.n_agents - 1, score_rule=rule,
                                         kappa=kappa or 2.0, accept_threshold=threshold,
                                         prior_source="verbal")
                    stats, _ = run_method(Method("SVR-MAD", "svrmad", config), population, seeds)
                    shown = "" if kappa is None else f"{kappa:g}"
                    print(f"| {share:.0%} | {priors} | SVR-MAD | {rule} | {shown} | "
                          f"{threshold:g} | {stats.accuracy:.3f} | "
                          f"{stats.messages_per_question:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="questions per setting")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sensitivity", action="store_true", help="add the variant populations")
    parser.add_argument("--svr-sweep", action="store_true",
                        help="print SVR-MAD over score rule × κ × accept_threshold instead of the "
                        "method table")
    args = parser.parse_args()
    if args.svr_sweep:
        svr_sweep(args.n, args.seed)
        return

    base = PopulationConfig()
    settings = []
    for share in (0.2, 0.4):
        population = replace(base, truth_share=share)
        settings.append((f"{share:.0%} truth", population))
        settings.append((f"{share:.0%}, no 2nd-order", replace(population, second_order=False)))
        if args.sensitivity:
            settings.append((f"{share:.0%}, uninformative priors",
                             replace(population, confidence_truth=(0.6, 0.9),
                                     confidence_crowd=(0.6, 0.9))))
            settings.append((f"{share:.0%}, echo chamber",
                             replace(population, conformity_truth=population.conformity_crowd)))
    rows = []
    started = time.perf_counter()
    for label, population in settings:
        rows += [(label, stats) for stats in simulate(population, args.n, args.seed)]
    print(f"{args.n} simulated questions per setting, N = {base.n_agents} agents, "
          f"{base.n_options} options, correlation {base.correlation} "
          f"({time.perf_counter() - started:.0f}s)")
    print(format_table(rows))


if __name__ == "__main__":
    main()
