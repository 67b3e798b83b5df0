"""One log for the fleet, as a user runs it: two `imad serve --shadow --decision-log
postgresql://…` replicas on two ports in front of one loopback stub, one real PostgreSQL server.

- 400 requests round-robin; each label is posted to the replica that did *not* answer and every
  one is stored (no 404); `imad report --log URL --json` counts 400 rows and gives the AUROC
  scikit-learn computes over the labelled responses; `--replica` sees one replica's half.
- PostgreSQL stopped under traffic: no request fails, and once it is back every answered row
  is written or counted as dropped (`written + dropped = recorded`, per replica).
- A replica SIGKILLed under traffic: the other keeps answering; the killed one's rows are all in
  the log except those still queued at the kill, as many as its stats counted unsettled.
- Neither the servers' logs nor the report print the password (one replica takes it from the
  URL, the other from PGPASSWORD).
"""

from __future__ import annotations

import json
import random
import socket
import subprocess
import sys

import httpx
import psutil
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("sklearn")

from sklearn.metrics import roc_auc_score  # noqa: E402

from tests.conftest import REPO_ROOT  # noqa: E402
from tests.router.router_helpers import make_router  # noqa: E402
from tests.serve.test_shadow_serving import TAU, varied_respond  # noqa: E402
from tests.support.postgres import ROLE, ROLE_PASSWORD  # noqa: E402
from tests.support.serve_process import ServeProcess, upstream_stub, wait_for  # noqa: E402

pytestmark = pytest.mark.slow

REQUESTS = 400


@pytest.fixture(scope="module")
def fleet(postgres_server, tmp_path_factory):
    """(url, [replica A, replica B], upstream): two servers sharing one fresh database."""
    database = postgres_server.fresh_database()
    url = postgres_server.url(database)
    bare = f"postgresql://{ROLE}@127.0.0.1:{postgres_server.port}/{database}"
    router_dir = make_router(seed=11).save(tmp_path_factory.mktemp("router") / "router")
    workdir = tmp_path_factory.mktemp("fleet")
    with upstream_stub(varied_respond) as upstream:
        common = ("--shadow", "--tau", TAU, "--no-scoring-process")
        replicas = [ServeProcess(router_dir, upstream, workdir, *common, "--decision-log", url),
                    ServeProcess(router_dir, upstream, workdir, *common, "--decision-log", bare,
                                 env={"PGPASSWORD": ROLE_PASSWORD})]
        try:
            for replica in replicas:
                replica.wait_ready()
            yield url, replicas, upstream
        finally:
            for replica in replicas:
                replica.stop()
    for replica in replicas:
        text = replica.log.read_text(errors="replace")
        assert ROLE_PASSWORD not in text and "p%40ss" not in text


def log_stats(replica: ServeProcess) -> dict:
    return httpx.get(f"{replica.url}/v1/imad/stats", timeout=30).json()["decision_log"]


def report(url: str, *flags: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "imad.cli.main", "report", "--log", url, "--json",
                           *flags], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert ROLE_PASSWORD not in done.stdout + done.stderr
    return json.loads(done.stdout)


def test_labels_at_the_other_replica_and_one_report_for_the_fleet(fleet):
    url, replicas, upstream = fleet
    responses = [replicas[index % 2].post(index + 1) for index in range(REQUESTS)]
    assert [response.status_code for response in responses] == [200] * REQUESTS
    assert upstream.calls["debate"] == 0
    rng = random.Random(5)
    labels, p_of = {}, {}
    for index, response in enumerate(responses):
        if index % 4 == 3:
            continue  # a quarter stays unlabelled
        key, info = response.headers["x-request-id"], response.json()["imad"]
        labels[key], p_of[key] = rng.random() < info["p"] * 1.6 - 0.3, info["p"]
        other = replicas[(index + 1) % 2]  # not the replica that answered (replicas[index % 2])
        stored = httpx.post(f"{other.url}/v1/imad/feedback", timeout=60,
                            json={"id": key, "correct": labels[key], "source": "gold"})
        assert stored.status_code == 200, stored.text
    card = report(url)
    assert (card["rows"], card["labelled"]) == (REQUESTS, len(labels))
    expected = roc_auc_score(list(labels.values()), [p_of[key] for key in labels])
    assert card["auroc"] == pytest.approx(expected, abs=1e-6)
    assert [log_stats(replica)["written"] for replica in replicas] == [REQUESTS // 2] * 2
    for replica in replicas:  # either replica's stats count the fleet's log
        assert log_stats(replica)["fleet"] == {"rows": REQUESTS, "labelled": len(labels),
                                               "replicas": 2}
    assert report(url, "--replica", socket.gethostname())["rows"] == REQUESTS


def test_postgresql_stopped_under_traffic_fails_no_request(fleet, postgres_server):
    url, replicas, _ = fleet
    before = [log_stats(replica)["recorded"] for replica in replicas]
    postgres_server.stop()
    try:
        statuses = [replicas[index % 2].post(index).status_code for index in range(1, 101)]
    finally:
        postgres_server.start()
    assert statuses == [200] * 100

    def settled() -> bool:
        stats = [log_stats(replica) for replica in replicas]
        return all(s["written"] + s["duplicates"] + sum(s["dropped"].values()) == s["recorded"]
                   for s in stats)

    wait_for(settled, "every row written or counted once PostgreSQL is back")
    stats = [log_stats(replica) for replica in replicas]
    assert [s["recorded"] - b for s, b in zip(stats, before, strict=True)] == [50, 50]
    written = sum(s["written"] for s in stats)
    dropped = sum(sum(s["dropped"].values()) for s in stats)
    assert written + dropped == sum(s["recorded"] for s in stats)
    assert report(url)["rows"] == written



def unsettled(stats: dict) -> int:
    """Rows a replica has recorded but neither written nor counted (queued or being written)."""
    return stats["recorded"] - stats["written"] - stats["duplicates"] - sum(stats["dropped"].values())


def test_a_replica_killed_under_traffic_loses_only_its_queued_rows(fleet, postgres_server):
    """Last in this module: replica B is gone afterwards. A lock on the table holds every
    insert while B answers 40 requests, so at the SIGKILL exactly what B's stats count as
    unsettled is queued (or in its open transaction, which the kill rolls back). Afterwards B's
    rows in the log are all those it had written before, none of the 40, and the missing ones
    are exactly as many as B counted; A answers throughout and writes its rows once the lock goes."""
    import psycopg

    url, (survivor, victim), _ = fleet
    database = url.rsplit("/", 1)[1]
    wait_for(lambda: unsettled(log_stats(victim)) == 0, "B's earlier rows settled")
    before = log_stats(victim)
    with psycopg.connect(postgres_server.url(database, "postgres")) as blocker:
        blocker.execute("LOCK TABLE decisions IN SHARE MODE")  # inserts wait, reads go on
        answered = [victim.post(index) for index in range(500, 540)]
        assert [response.status_code for response in answered] == [200] * 40
        at_kill = log_stats(victim)
        tree = victim.tree()
        for process in tree:
            process.kill()  # SIGKILL: no flush, no goodbye
        psutil.wait_procs(tree, timeout=60)
        assert [survivor.post(index).status_code for index in range(540, 580)] == [200] * 40
    wait_for(lambda: unsettled(log_stats(survivor)) == 0, "A's rows written once the lock went")
    queued = unsettled(at_kill)
    assert (at_kill["written"], queued) == (before["written"], 40)
    ids = [response.headers["x-request-id"] for response in answered]
    present = postgres_server.admin(
        f"SELECT count(*) FROM decisions WHERE response_id = ANY({_sql_array(ids)})", database)
    assert present == [(0,)]  # the 40 queued at the kill, and only they, are missing
    pid = httpx.get(f"{survivor.url}/health", timeout=30).json()["worker_pid"]
    (kept,) = postgres_server.admin(f"SELECT count(*) FROM decisions WHERE process <> {pid}",
                                    database)[0]
    assert kept == before["written"]


def _sql_array(values: list[str]) -> str:
    """A SQL array literal of request ids (hex and dashes: nothing to escape)."""
    assert all(value.replace("-", "").isalnum() for value in values)
    return "ARRAY[" + ", ".join(f"'{value}'" for value in values) + "]"


def test_a_sqlite_file_per_replica_sees_only_its_own_half(tmp_path):
    """The setup the shared log replaces (the docs' side-by-side): each replica's own file holds
    the half it answered, and a label at the other replica is a 404."""
    router_dir = make_router(seed=11).save(tmp_path / "router")
    files = [tmp_path / "web-1.db", tmp_path / "web-2.db"]
    with upstream_stub(varied_respond) as upstream:
        replicas = [ServeProcess(router_dir, upstream, tmp_path, "--shadow", "--tau", TAU,
                                 "--no-scoring-process", "--decision-log", str(path))
                    for path in files]
        try:
            for replica in replicas:
                replica.wait_ready()
            responses = [replicas[index % 2].post(index + 1) for index in range(40)]
            assert [response.status_code for response in responses] == [200] * 40
            statuses = [httpx.post(f"{replicas[(index + 1) % 2].url}/v1/imad/feedback", timeout=60,
                                   json={"id": response.headers["x-request-id"], "correct": True}
                                   ).status_code for index, response in enumerate(responses)]
        finally:
            for replica in replicas:
                replica.stop()
    assert statuses == [404] * 40
    assert [report(str(path))["rows"] for path in files] == [20, 20]
