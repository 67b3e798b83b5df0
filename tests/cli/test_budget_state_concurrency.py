"""Concurrent `imad ask --budget-state` runs share one file (issue 22, item 2).

Real subprocesses of the `imad` command on one state file, a loopback OpenAI-compatible stub
upstream whose barrier holds every self-critique call until all runs are inside theirs (so the
runs overlap for certain, with no sleep), and a run SIGKILLed while it holds the lock, stopped
there by a pipe, not by timing.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys

import pytest

from imad.decide import new_budget
from imad.decide.budget_state import write_budget
from imad.decide.policy import FixedThreshold
from imad.file_lock import lock_path
from tests.conftest import REPO_ROOT
from tests.router.router_helpers import make_router
from tests.support.openai_stub import openai_stub

RUNS = 4
SEED_SCORES = (0.2, 0.5, 0.8)
QUESTION = ["Which drug is an opioid?", "--choices", "Aspirin", "Ibuprofen", "Paracetamol",
            "Morphine"]

_HOLD_THE_LOCK = """
import sys
import imad.decide.budget_state as budget_state

def write_then_hang(budget, path):  # called with the lock held, before the state is written
    print("holding the lock", flush=True)
    sys.stdin.read()  # never returns: the test kills this process here

budget_state.write_budget = write_then_hang
from imad.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture
def seeded(tmp_path):
    router = make_router().save(tmp_path / "router")
    state = tmp_path / "budget.json"
    budget = new_budget(0.5, 50, FixedThreshold(0.5, source="checkpoint"))
    for score in SEED_SCORES:
        budget.observe(score)
    write_budget(budget, state)
    return router, state


def ask_command(router, state, llm) -> list[str]:
    return ["ask", *QUESTION, "--router", str(router), "--backend", "cot", "--llm", llm,
            "--budget-state", str(state), "--json"]


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OPENAI_API_KEY": "stub",
            "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def lock_is_free(state) -> bool:
    sidecar = lock_path(state)
    if not sidecar.exists():
        return True
    with sidecar.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


@pytest.mark.slow
def test_concurrent_runs_leave_every_observation(seeded):
    router, state = seeded
    with openai_stub(barrier_parties=RUNS) as (llm, stub):
        runs = [subprocess.Popen([sys.executable, "-m", "imad.cli.main", *ask_command(router, state, llm)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=environment()) for _ in range(RUNS)]
        outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0] * RUNS, [err for _, err in outputs]
    assert stub.barrier.n_waiting == 0 and not stub.barrier.broken  # all were in their call at once
    saved = json.loads(state.read_text(encoding="utf-8"))
    assert saved["observed_total"] == len(SEED_SCORES) + RUNS
    assert len(saved["answers"]) == len(SEED_SCORES) + RUNS
    assert [score for score, _ in saved["answers"][:len(SEED_SCORES)]] == list(SEED_SCORES)
    assert lock_is_free(state)


@pytest.mark.slow
def test_a_run_killed_holding_the_lock_leaves_a_valid_file_and_no_stuck_lock(seeded):
    router, state = seeded
    before = state.read_bytes()
    with openai_stub() as (llm, _):
        victim = subprocess.Popen([sys.executable, "-c", _HOLD_THE_LOCK,
                                   *ask_command(router, state, llm)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=environment())
        try:
            assert victim.stdout.readline().strip() == "holding the lock"  # a barrier, not a sleep
            assert not lock_is_free(state)
            victim.send_signal(signal.SIGKILL)
            victim.wait(timeout=60)
        finally:
            if victim.poll() is None:
                victim.kill()
        assert victim.returncode == -signal.SIGKILL
        assert state.read_bytes() == before  # the last complete state, untouched
        assert lock_is_free(state)  # the kernel dropped the dead run's lock
        after = subprocess.run([sys.executable, "-m", "imad.cli.main", *ask_command(router, state, llm)],
                               capture_output=True, text=True, env=environment(), timeout=300)
    assert after.returncode == 0, after.stderr
    saved = json.loads(state.read_text(encoding="utf-8"))
    assert saved["observed_total"] == len(SEED_SCORES) + 1
