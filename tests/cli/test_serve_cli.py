"""`imad serve`: flags, clear errors before binding, and a real server process that stops on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from imad.cli.main import main
from imad.critique.call import SelfCritique
from imad.decision_log.location import open_for_reading
from imad.llm.cache import CachedChat
from imad.llm.scripted import ScriptedChat
from imad.question import Question
from tests.conftest import REPO_ROOT
from tests.router.router_helpers import make_router
from tests.support.servers import free_port
from tests.support.serving import echo_respond, tagged_question


@pytest.fixture
def router_dir(tmp_path):
    return make_router().save(tmp_path / "router")


def test_help_lists_the_flags(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["serve", "--help"])
    out = capsys.readouterr().out
    assert caught.value.code == 0
    for flag in ("--router", "--llm", "--backend", "--tau", "--host", "--port", "--api-key-env",
                 "--max-concurrency", "--request-timeout", "--max-request-bytes", "--max-question-chars",
                 "--shutdown-timeout", "--log-prompts", "--target-trigger-rate", "--budget-window",
                 "--ood-policy", "--scoring-processes", "--no-scoring-process"):
        assert flag in out


@pytest.mark.parametrize(("flags", "message"), [
    (["--max-concurrency", "0"], "--max-concurrency: must be an integer in [1, 4096], got '0'"),
    (["--tau", "2"], "--tau: must be none or a number in [0, 1], got 2.0"),
    (["--port", "70000"], "--port: must be an integer in [0, 65535], got 70000"),
    (["--api-key-env", "IMAD_TEST_SURELY_UNSET"], "IMAD_TEST_SURELY_UNSET is unset or empty"),
    (["--request-timeout", "nan"], "--request-timeout: must be a finite number in (0, 86400], got 'nan'"),
    (["--request-timeout", "inf"], "--request-timeout: must be a finite number in (0, 86400], got 'inf'"),
    (["--request-timeout", "-1"], "--request-timeout: must be a finite number in (0, 86400], got '-1'"),
    (["--shutdown-timeout", "nan"], "--shutdown-timeout: must be a finite number in [0, 86400], got 'nan'"),
    (["--tau", "nan"], "--tau: must be none or a number in [0, 1], got nan"),
    (["--target-trigger-rate", "1"],
     "--target-trigger-rate: must be none or a finite number in (0, 1), got 1.0"),
    (["--target-trigger-rate", "0.2", "--budget-window", "0"],
     "--budget-window: must be an integer in [1, 1000000], got 0"),
    (["--ood-policy", "escalate"], "--ood-policy: 'escalate' needs OOD statistics"),
])
def test_bad_flags_fail_before_serving(router_dir, capsys, flags, message):
    assert main(["serve", "--router", str(router_dir), *flags]) == 2
    assert message in capsys.readouterr().err


def test_missing_router_is_a_clear_error(tmp_path, capsys):
    assert main(["serve", "--router", str(tmp_path / "nowhere")]) == 3
    assert "no router checkpoint directory" in capsys.readouterr().err


def test_bad_backend_is_refused_by_argparse(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--backend", "cot"])
    assert "invalid choice: 'cot'" in capsys.readouterr().err


@pytest.mark.slow
def test_serve_process_answers_and_stops_on_sigterm(router_dir, tmp_path):
    """A real `imad serve` process, its model a replay cache, so no model server is needed."""
    cache = CachedChat(ScriptedChat(echo_respond, model_id="echo"), tmp_path / "calls.sqlite")
    assert SelfCritique(cache).run(Question(tagged_question(5))).ok  # records the one call
    cache.close()
    port = free_port()
    command = [sys.executable, "-m", "imad.cli.main", "serve", "--router", str(router_dir),
               "--llm", f"cached:{tmp_path / 'calls.sqlite'}::openai:echo@http://127.0.0.1:9/v1?max_retries=0",
               "--tau", "0", "--port", str(port), "--api-key-env", "IMAD_TEST_KEY",
               "--scoring-processes", "1"]
    env = {**os.environ, "IMAD_TEST_KEY": "cli-key"}
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, process.stderr.read()
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "imad serve did not start within 120 s"
            time.sleep(0.2)
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).json()["scoring_processes"] == 1
        body = {"model": "imad", "messages": [{"role": "user", "content": tagged_question(5)}]}
        response = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", timeout=60,
                              headers={"Authorization": "Bearer cli-key"}, json=body)
        assert response.status_code == 200, response.text
        assert response.json()["choices"][0]["message"]["content"] == "5"
        assert response.json()["imad"]["tau"] == 0.0
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    lines = [json.loads(line) for line in stderr.splitlines() if line.strip()]
    events = [line["event"] for line in lines]
    assert "server_ready" in events and "server_stopped" in events  # the shutdown ran to its end
    [request] = [line for line in lines if line["event"] == "chat_completion"]
    assert request["status"] == 200 and "question" not in request


@pytest.mark.slow
def test_two_workers_share_the_port_and_metrics_add_up_over_both(router_dir, tmp_path):
    """`imad serve --workers 2`: uvicorn's workers, each building its app from the import string;
    /metrics of whichever worker answers sums the multiprocess files of both; both write one
    decision log (issue 32), each row once; /v1/imad/stats counts both workers' rows."""
    from imad.serve.metrics import sample_values
    from imad.serve.settings import auto_scoring_processes, usable_cores

    cache = CachedChat(ScriptedChat(echo_respond, model_id="echo"), tmp_path / "calls.sqlite")
    for index in range(8):
        assert SelfCritique(cache).run(Question(tagged_question(index))).ok
    cache.close()
    port = free_port()
    command = [sys.executable, "-m", "imad.cli.main", "serve", "--router", str(router_dir),
               "--llm", f"cached:{tmp_path / 'calls.sqlite'}::openai:echo@http://127.0.0.1:9/v1?max_retries=0",
               "--tau", "0", "--port", str(port), "--workers", "2", "--metrics-public",
               "--decision-log", str(tmp_path / "decisions.db")]
    env = {key: value for key, value in os.environ.items() if key != "PROMETHEUS_MULTIPROC_DIR"}
    process = subprocess.Popen(command, cwd=REPO_ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        ready = 0
        while ready < 2:  # each worker logs server_ready once its app is built
            line = process.stderr.readline()
            assert line, "imad serve --workers 2 exited before both workers were ready"
            ready += '"server_ready"' in line
        completion_ids = set()
        for index in range(8):
            body = {"model": "imad", "messages": [{"role": "user", "content": tagged_question(index)}]}
            response = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=60)
            assert response.status_code == 200
            assert response.json()["choices"][0]["message"]["content"] == str(index)
            completion_ids.add(response.json()["id"])
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
        health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=10).json()
        stats = [httpx.get(f"http://127.0.0.1:{port}/v1/imad/stats", timeout=10).json()
                 for _ in range(4)]  # new connections: whichever worker takes each
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert sum(v for _, v in sample_values(text, "imad_requests_total")) == 8
    # by default each worker scores in one child per core of its share of the machine
    assert health["scoring_processes"] == auto_scoring_processes(usable_cores(), 2)
    assert sum(v for labels, v in sample_values(text, "imad_decisions_total")
               if labels["outcome"] == "kept") == 8
    # every answer counts both workers' rows, as /metrics does
    assert [answer["decision_log"]["recorded"] for answer in stats] == [8] * 4
    store = open_for_reading(tmp_path / "decisions.db")  # SIGTERM flushed both workers' writers
    logged = [row["response_id"] for row in store.rows()]
    store.close()
    assert sorted(logged) == sorted(completion_ids)
