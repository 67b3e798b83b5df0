"""Hostile `postgresql://` decision logs, against a real PostgreSQL server: malformed URLs, wrong
credentials, an unreachable host, a role that may not create tables, a log of a newer schema
version, tables that are not imad's — for the writer at start (`imad ask --decision-log`) and
the readers (`imad report --log`). Each is one `error:` line, exit 2, naming what is wrong,
never the password, never a traceback, and no LLM call. SQL metacharacters in ids and labels
are data, never SQL; a label for a row another replica has not written yet waits for it."""

from __future__ import annotations

import json
import threading

import pytest

from imad.cli.main import main
from imad.decision_log import DecisionLog
from imad.decision_log.label_wait import label_grace_s
from imad.errors import ServeError
from tests.decision_log.rows import decision_row
from tests.router.router_helpers import make_router
from tests.support.openai_stub import openai_stub
from tests.support.postgres import ROLE_PASSWORD, SUPERUSER_PASSWORD

QUESTION = ["Which drug is an opioid?", "--choices", "Aspirin", "Morphine"]
SECRETS = (ROLE_PASSWORD, "p%40ss", SUPERUSER_PASSWORD, "wrong-secret-pw")


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory) -> str:
    return str(make_router().save(tmp_path_factory.mktemp("router") / "router"))


def _refused(command: str, url: str, router_dir: str, capsys, monkeypatch) -> str:
    """Run the writer (`ask`) or a reader (`report`) on `url`; its stderr, after checking the
    shape every refusal shares."""
    monkeypatch.setenv("OPENAI_API_KEY", "stub")
    with openai_stub() as (llm, served):
        if command == "ask":
            code = main(["ask", *QUESTION, "--router", router_dir, "--backend", "cot", "--llm",
                         llm, "--decision-log", url])
        else:
            code = main(["report", "--log", url, "--json"])
    captured = capsys.readouterr()
    err = captured.err
    assert code == 2, err
    assert err.count("error:") == 1 and "Traceback" not in err and "bug in imad" not in err
    assert not any(secret in err + captured.out for secret in SECRETS), err
    assert served.requests == 0
    return err


MALFORMED = [  # (name, url, message)
    ("no //", "postgresql:db.example", "is not a URL: write postgresql://"),
    ("a port that is no number", "postgresql://u:wrong-secret-pw@db:five/x", "port"),
    ("a port past 65535", "postgresql://u:wrong-secret-pw@db:99999/x", "is not a number in [1, 65535]"),
    ("an unknown parameter", "postgresql://u:wrong-secret-pw@db/x?colour=red", "not a PostgreSQL URL"),
    ("a broken escape", "postgresql://u:wrong-secret-pw@db/x%zz", "not a PostgreSQL URL"),
    ("another scheme", "mysql://u:wrong-secret-pw@db/x", "is a mysql:// URL"),
]


@pytest.mark.parametrize("command", ["ask", "report"])
@pytest.mark.parametrize("name,url,message", MALFORMED, ids=[case[0] for case in MALFORMED])
def test_a_malformed_url_is_refused_before_anything_connects(router_dir, capsys, monkeypatch,
                                                             command, name, url, message):
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'imad[postgres]')")
    err = _refused(command, url, router_dir, capsys, monkeypatch)
    assert message in err and ("--decision-log" if command == "ask" else "--log") in err


def _wrong_password(server):
    return server.url(server.fresh_database(), password="wrong-secret-pw")


def _unreachable(server):
    from tests.support.postgres import _free_port

    return f"postgresql://imad:wrong-secret-pw@127.0.0.1:{_free_port()}/x?connect_timeout=2"


def _no_create_right(server):
    return server.url(server.fresh_database(owner="postgres"))


def _newer_schema(server):
    url = server.url(server.fresh_database())
    DecisionLog(url).close()
    server.admin("UPDATE meta SET value = '99' WHERE key = 'schema_version'", url.rsplit("/", 1)[1])
    return url


def _foreign_table(server):
    url = server.url(server.fresh_database())
    server.admin("CREATE TABLE decisions (id int, verdict text)", url.rsplit("/", 1)[1])
    server.admin("ALTER TABLE decisions OWNER TO imad", url.rsplit("/", 1)[1])
    return url


def _foreign_meta(server):
    url = server.url(server.fresh_database())
    database = url.rsplit("/", 1)[1]
    server.admin("CREATE TABLE meta (key text PRIMARY KEY, value text); "
                 "INSERT INTO meta VALUES ('format', 'someone-elses-app')", database)
    server.admin("ALTER TABLE meta OWNER TO imad", database)
    return url


def _a_view(server):
    url = server.url(server.fresh_database())
    database = url.rsplit("/", 1)[1]
    DecisionLog(url).close()
    server.admin("ALTER TABLE labels RENAME TO labels_table; "
                 "CREATE VIEW labels AS SELECT * FROM labels_table; ALTER VIEW labels OWNER TO imad",
                 database)
    return url


DATABASES = [  # (name, make the url, message, also for the reader)
    ("wrong credentials", _wrong_password, "password authentication failed", True),
    ("an unreachable host", _unreachable, "check the host and port", True),
    ("no right to create tables", _no_create_right, "may not create or write the log's tables", False),
    ("a newer schema version", _newer_schema, "has schema version 99, newer than the version 1", True),
    ("a table that is not imad's", _foreign_table, "is not an imad decision log (it has decisions "
     "but no meta table)", True),
    ("another program's meta table", _foreign_meta, "names format 'someone-elses-app'", True),
    ("a view where a table belongs", _a_view, "labels is a view or another kind of relation", True),
]


@pytest.mark.parametrize("command", ["ask", "report"])
@pytest.mark.parametrize("name,make,message,reader", DATABASES, ids=[case[0] for case in DATABASES])
def test_a_database_that_cannot_hold_the_log_is_refused_at_start(postgres_server, router_dir, capsys,
                                                                 monkeypatch, command, name, make,
                                                                 message, reader):
    if command == "report" and not reader:
        message = "holds no decision log"  # a reader never creates: the tables are missing
    err = _refused(command, make(postgres_server), router_dir, capsys, monkeypatch)
    assert message in err, err


METACHARACTERS = ["x'; DROP TABLE decisions; --", 'a"b\\c', "100% ?$1 %s :name", "éλ💥\t\n"]


def test_sql_metacharacters_in_ids_and_labels_are_data(postgres_url, tmp_path, capsys):
    with DecisionLog(postgres_url, log_text=True) as log:
        for index, key in enumerate(METACHARACTERS):
            log.record({**decision_row(index), "response_id": key, "question": key})
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"id": key, "correct": True, "source": "judge"}) + "\n"
                              for key in METACHARACTERS))
    assert main(["log", "label", "--log", postgres_url, str(labels), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"added": 4, "replaced": 0}
    assert main(["log", "export", "--log", postgres_url, "--format", "jsonl"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted((r["response_id"], r["question"], r["correct"]) for r in records) == \
        sorted((key, key, True) for key in METACHARACTERS)


def test_a_label_for_a_row_another_replica_has_not_written_yet_waits_for_it(postgres_url):
    from imad.serve.routes.feedback import store_feedback

    with DecisionLog(postgres_url) as answered, DecisionLog(postgres_url) as other:
        grace_s = label_grace_s(other, 0.0)
        assert grace_s >= 1.0
        results: list = []
        body = json.dumps({"id": "chatcmpl-000007", "correct": True}).encode()
        waiting = threading.Thread(target=lambda: results.append(
            store_feedback(other, body, sibling_grace_s=grace_s)))
        waiting.start()  # the label arrives first ...
        answered.record(decision_row(7))  # ... the other replica's writer commits the row after
        waiting.join()
        assert results == [{"id": "chatcmpl-000007", "correct": True, "source": "user",
                            "debate_correct": None, "changes": 0}]
        never = json.dumps({"id": "chatcmpl-never", "correct": True}).encode()
        with pytest.raises(ServeError) as refused:
            store_feedback(other, never, sibling_grace_s=grace_s)
        assert refused.value.status == 404
