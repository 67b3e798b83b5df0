"""A served router's certificate: every decision names its hash (body and decision-log row; null
for an uncertified router), and `--on-violation`: a server whose certificate's live check rejects
keeps answers under "flag" and escalates every request under "escalate-all" (in shadow mode:
would escalate), with a reason naming the certificate, until a router without it is loaded."""

from __future__ import annotations

import shutil

import httpx
import pytest

pytest.importorskip("fastapi")

from imad.cli.main import main  # noqa: E402
from imad.decision_log import DecisionLog, open_for_reading  # noqa: E402
from imad.decision_log.answer_row import router_identity  # noqa: E402
from imad.decision_log.labels import Label, set_label  # noqa: E402
from imad.router import Router  # noqa: E402
from imad.serve import ServeSettings  # noqa: E402
from tests.cli.test_calibrate_certify import write_log  # noqa: E402
from tests.decision_log.rows import decision_row  # noqa: E402
from tests.decision_log.test_writer import written  # noqa: E402
from tests.router.router_helpers import make_router  # noqa: E402
from tests.support.serving import echo_factory, tagged_question  # noqa: E402

LOW_TAU_MODEL = "imad-svrmad-0.01"
"""A τ every echo answer passes: under "flag" each is kept, so an escalation is the violation's."""


@pytest.fixture(scope="module")
def certified(tmp_path_factory):
    """(uncertified router dir, certified router dir, its certificate hash, the log it was
    certified on)."""
    folder = tmp_path_factory.mktemp("certified")
    router_dir = make_router().save(folder / "router")
    log = folder / "decisions.db"
    write_log(log, Router.load(router_dir))
    assert main(["calibrate", "--router", str(router_dir), "--certify", "--max-error", "0.2",
                 "--log", str(log), "--out", str(folder / "certified"), "--json"]) == 0
    certificate = Router.load(folder / "certified").config.record.certificate
    return router_dir, folder / "certified", certificate.hash, log


def violating_log(path, router: Router) -> None:
    """Kept answers of `router` at p 0.99, labelled, 60% wrong: far above the promised 20%."""
    rows = [{**decision_row(5000 + index), "p": 0.99, "raw": 0.99, "router_name": router.name,
             "router_hash": router_identity(router).hash, "served": "single_agent",
             "escalated": False} for index in range(300)]
    with DecisionLog(path) as writer:
        for row in rows:
            writer.record(row)
    store = open_for_reading(path, writable=True)
    for index, row in enumerate(rows):
        set_label(store, Label(row["response_id"], index % 5 < 2))
    store.close()


def ask(server, index: int, model: str = "imad-svrmad") -> dict:
    response = httpx.post(f"{server.base_url}/chat/completions", timeout=60, json={
        "model": model, "messages": [{"role": "user", "content": tagged_question(index)}]})
    assert response.status_code == 200, response.text
    return response.json()["imad"]


@pytest.mark.server
def test_each_decision_names_the_certificate_in_its_body_and_log_row(certified, start_server, tmp_path):
    router_dir, certified_dir, digest, _ = certified
    for folder, expected in ((certified_dir, digest), (router_dir, None)):
        log = tmp_path / f"{folder.name}.db"
        server = start_server(ServeSettings(decision_log=str(log)),
                              echo_factory(router=Router.load(folder)))
        assert [ask(server, index)["certificate"] for index in range(2)] == [expected, expected]
        server.stop(timeout_s=15)
        assert [row["certificate"] for row in written(log)] == [expected, expected]


@pytest.mark.server
@pytest.mark.parametrize("shadow", [False, True])
def test_a_violated_certificate_escalates_every_request_only_under_escalate_all(
        certified, start_server, tmp_path, shadow):
    router_dir, certified_dir, digest, certified_on = certified
    router = Router.load(certified_dir)
    log = tmp_path / "decisions.db"
    shutil.copy(certified_on, log)
    violating_log(log, router)
    flagged = start_server(ServeSettings(decision_log=str(log), shadow=shadow),
                           echo_factory(router=router))
    kept = [ask(flagged, index, LOW_TAU_MODEL) for index in range(3)]
    stats = httpx.get(f"{flagged.base_url}/imad/stats", timeout=60).json()
    assert stats["certificate"]["hash"] == digest and stats["certificate"]["live_check"]["violated"]
    assert [(info["escalated"], info["would_escalate"]) for info in kept] == [
        (False, False if shadow else None)] * 3
    assert not any("certificate" in reason for info in kept for reason in info["reasons"])
    flagged.stop(timeout_s=15)

    strict = start_server(ServeSettings(decision_log=str(log), shadow=shadow,
                                        on_violation="escalate-all"), echo_factory(router=router))
    decided = [ask(strict, index, LOW_TAU_MODEL) for index in range(3)]
    if not shadow:  # a router without that certificate ends it (the state is per certificate)
        reloaded = httpx.post(f"{strict.base_url}/imad/admin/reload", json={"router": str(router_dir)},
                              timeout=120)
        assert reloaded.status_code == 200, reloaded.text
        after = ask(strict, 9, LOW_TAU_MODEL)
        assert (after["escalated"], after["certificate"]) == (False, None)
    strict.stop(timeout_s=15)
    if shadow:  # observed, not acted on: the single answer is served, the verdict recorded
        assert [(info["escalated"], info["would_escalate"], info["source"]) for info in decided] == [
            (False, True, "single_agent")] * 3
    else:
        assert [(info["escalated"], info["source"]) for info in decided] == [(True, "debate")] * 3
    assert all(f"certificate {digest[:12]} is violated" in info["reasons"][-1 - shadow]
               and "escalate-all" in info["reasons"][-1 - shadow] for info in decided)
    served = [row for row in written(log) if row["certificate"] == digest]
    escalated = "kept" if shadow else "certificate_violated"  # shadow: only would_escalate says it
    assert [row["outcome"] for row in served] == ["kept"] * 3 + [escalated] * 3
    assert [row["would_escalate"] for row in served] == (
        [False] * 3 + [True] * 3 if shadow else [None] * 6)
