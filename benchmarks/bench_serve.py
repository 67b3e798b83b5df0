"""Load benchmark of the routing server: p50/p99 latency and requests/s on loopback.

    python benchmarks/bench_serve.py [--n 200] [--concurrency 16] [--max-concurrency 16]

A real uvicorn server (in a thread of this process) runs the shipped router with a scripted
echo model (`tests/support/serving.py`), so the numbers are the server's own overhead plus the
router's feature extraction, not an LLM's. Half the requests keep the self-critique answer
(`imad-svrmad-0`), half escalate to a small SVR-MAD debate (`imad-svrmad-1`). The client is an
asyncio httpx client in the same process; a 429 is retried after its Retry-After and counted.
Each answer is checked against its question's tag: the script fails on a lost, crossed or
duplicated response.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from imad.router import Router  # noqa: E402
from imad.serve import BackgroundServer, ServeSettings, create_app  # noqa: E402
from tests.support.serving import echo_factory, run_load  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="requests (default: %(default)s)")
    parser.add_argument("--concurrency", type=int, default=16,
                        help="client concurrency (default: %(default)s)")
    parser.add_argument("--max-concurrency", type=int, default=16,
                        help="the server's --max-concurrency (default: %(default)s)")
    args = parser.parse_args()
    settings = ServeSettings(max_concurrency=args.max_concurrency, api_key="bench")
    app = create_app(settings, echo_factory(router=Router.load()))
    with BackgroundServer(app, settings) as server:
        report = run_load(server.base_url, n=args.n, concurrency=args.concurrency, api_key="bench")
    print(report.summary())
    ok = (report.answered == args.n and not report.wrong_answers and report.duplicated_ids == 0)
    print("checks: every request answered once with its own answer" if ok else "checks FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
