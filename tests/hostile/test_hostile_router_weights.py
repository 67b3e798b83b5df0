"""Hostile `router_weights` values in a decision log (the column `imad calibrate --log` matches
rows to a router by): whatever a row holds there that is not this router's weights' SHA-256,
its rows are refused as another network's, named, with exit 3 and nothing written; NULL falls
back to the router's name."""

from __future__ import annotations

import pytest

from imad.cli.main import main
from imad.decision_log import DecisionLog
from imad.router import Router
from tests.decision_log.rows import decision_row
from tests.router.router_helpers import make_router

VALUES = [("empty", ""), ("not hex", "zz" * 32), ("a prefix", "PREFIX"), ("upper case", "UPPER"),
          ("a number", 7), ("a float", 0.5), ("a huge text", "a" * 100_000)]


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory):
    return make_router().save(tmp_path_factory.mktemp("router") / "router")


@pytest.mark.parametrize(("name", "value"), VALUES, ids=[name for name, _ in VALUES])
def test_a_row_of_other_weights_is_refused_by_name(router_dir, tmp_path, capsys, name, value):
    router = Router.load(router_dir)
    weights = router.config.weights_sha256
    value = {"PREFIX": weights[:12], "UPPER": weights.upper()}.get(value, value)
    with DecisionLog(tmp_path / "log.db") as log:
        for index in range(30):
            log.record({**decision_row(index), "router_name": router.name,
                        "router_weights": value if index == 0 else weights})
    assert main(["calibrate", "--router", str(router_dir), "--target-trigger-rate", "0.2", "--log",
                 str(tmp_path / "log.db"), "--out", str(tmp_path / "v")]) == 3
    err = capsys.readouterr().err
    assert "another network than" in err and "Traceback" not in err and len(err) < 2000
    assert not (tmp_path / "v").exists()


def test_null_weights_fall_back_to_the_name(router_dir, tmp_path, capsys):
    router = Router.load(router_dir)
    with DecisionLog(tmp_path / "log.db") as log:
        for index in range(30):
            log.record({**decision_row(index), "router_name": router.name, "router_weights": None})
    assert main(["calibrate", "--router", str(router_dir), "--target-trigger-rate", "0.2", "--log",
                 str(tmp_path / "log.db"), "--out", str(tmp_path / "v")]) == 0
