"""The population simulator's table: vote, all-to-all MAD, AceMAD and SVR-MAD with a minority truth.

    python benchmarks/simulate_debate.py [--n 1000] [--sensitivity]

Runs `imad.debate.simulate` (synthetic agents answering through the real back-ends; the agent
model is documented there) on the same seeded questions for every method, with 20% and 40%
truth-holders. Also prints the control without second-order knowledge, and with
`--sensitivity` the variants that move the conclusions: uninformative verbal priors, and an
echo chamber where truth-holders are as persuadable as the crowd.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from imad.debate.simulate import PopulationConfig, format_table, simulate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="questions per setting")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sensitivity", action="store_true", help="add the variant populations")
    args = parser.parse_args()

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
