"""Hostile values of `imad serve`'s queue, worker, scoring-process and metrics flags, and a port
that cannot be bound.

Every row is exit 2 with one `error:` line naming the flag, before any model loads or any
`server_ready` is logged.
"""

from __future__ import annotations

import socket

import pytest

from imad.cli.main import main
from tests.router.router_helpers import make_router

HUGE = "9" * 400


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory):
    return make_router().save(tmp_path_factory.mktemp("router") / "router")


@pytest.mark.parametrize(("flags", "message"), [
    (["--max-queue", "-1"], "--max-queue: must be none or an integer in [0, 65536]"),
    (["--max-queue", HUGE], "--max-queue: must be none or an integer in [0, 65536]"),
    (["--queue-timeout", "0"], "--queue-timeout: must be a finite number in (0, 86400]"),
    (["--queue-timeout", "nan"], "--queue-timeout: must be a finite number in (0, 86400]"),
    (["--queue-timeout", "1e999"], "--queue-timeout: must be a finite number in (0, 86400]"),
    (["--queue-timeout=-inf"], "--queue-timeout: must be a finite number in (0, 86400]"),
    (["--queue-timeout", "1e308"], "--queue-timeout: must be a finite number in (0, 86400]"),
    (["--workers", "0"], "--workers: must be an integer in [1, 256]"),
    (["--workers", HUGE], "--workers: must be an integer in [1, 256]"),
    (["--max-concurrency", HUGE], "--max-concurrency: must be an integer in [1, 4096]"),
    (["--budget-window", "100"], "--budget-window: sets the window of a trigger budget"),
    (["--on-violation", "escalate"], "--on-violation: must be one of"),
    (["--on-violation", ""], "--on-violation: must be one of"),
    (["--on-violation", "ESCALATE-ALL"], "--on-violation: must be one of"),
    (["--on-violation", "escalate-all"], "--on-violation: applies to the decision log"),
    (["--host", "no-such-host.invalid"], "--host: cannot resolve 'no-such-host.invalid'"),
    (["--host", "\udcff"], "--host: cannot resolve"),
    (["--scoring-processes", "-1"], "--scoring-processes: must be none or an integer in [0, 64]"),
    (["--scoring-processes", "65"], "--scoring-processes: must be none or an integer in [0, 64]"),
    (["--scoring-processes", HUGE], "--scoring-processes: must be none or an integer in [0, 64]"),
    (["--scoring-processes", "1.5"], "--scoring-processes: must be none or an integer in [0, 64]"),
    (["--scoring-processes", "two"], "--scoring-processes: must be none or an integer in [0, 64]"),
    (["--scoring-processes", "\u0662"], "--scoring-processes: must be none or an integer in [0, 64]"),
    (["--scoring-processes", ""], "--scoring-processes: must be none or an integer in [0, 64]"),
    (["--scoring-processes", "2", "--no-scoring-process"],
     "--no-scoring-process: means --scoring-processes 0; give one of the two, not both"),
])
def test_bad_serve_flag_is_one_error_line_and_exit_2(router_dir, capsys, flags, message):
    assert main(["serve", "--router", str(router_dir), *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and "server_ready" not in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if "error:" in line]) == 1


@pytest.mark.parametrize("flags", [["--metrics-public=yes"], ["--workers", "two"], ["--max-queue", "1.5"],
                                   ["--no-scoring-process=yes"], ["--no-scoring-process=0"]])
def test_malformed_flag_values_are_usage_errors_naming_the_flag(router_dir, capsys, flags):
    """Exit 2 either from argparse (a flag that takes no value) or from the settings table."""
    try:
        code = main(["serve", "--router", str(router_dir), *flags])
    except SystemExit as stopped:
        code = stopped.code
    err = capsys.readouterr().err
    assert code == 2 and flags[0].split("=")[0] in err and "Traceback" not in err



@pytest.mark.parametrize("flag", ["--metrics-public=yes", "--metrics-public=", "--log-prompts=1",
                                  "--no-scoring-process=0", "--debug=true"])
def test_a_switch_given_a_value_says_it_takes_none(router_dir, capsys, flag):
    name = flag.split("=")[0]
    with pytest.raises(SystemExit) as stopped:
        main(["serve", "--router", str(router_dir), flag])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "Traceback" not in err
    assert f"error: {name} is a switch and takes no value: write {name} alone" in err

def test_a_port_in_use_is_one_error_line_and_no_server_ready(router_dir, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["serve", "--router", str(router_dir), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"--port: cannot listen on 127.0.0.1:{port}" in err
    assert "server_ready" not in err and "Traceback" not in err


@pytest.mark.timeout(60)  # before: the server started and ran until killed
@pytest.mark.parametrize("key", ["k\u00e9y-0123", "key\n0123", "key\t0123", " key-0123", "key-0123 ",
                                 "key\x7f0123", "ключ-0123"],
                         ids=["non-ASCII", "newline", "tab", "leading space", "trailing space", "DEL",
                              "Cyrillic"])
def test_an_api_key_no_client_can_send_is_exit_2(router_dir, capsys, monkeypatch, key):
    """Before: the server started and answered 401 to every request (the header a client can
    send never equals such a key: Starlette reads it as Latin-1, and the token is stripped)."""
    monkeypatch.setenv("IMAD_HOSTILE_KEY", key)
    assert main(["serve", "--router", str(router_dir), "--port", "0",
                 "--api-key-env", "IMAD_HOSTILE_KEY"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("imad serve: error: --api-key-env: the key in IMAD_HOSTILE_KEY ")
    assert "printable ASCII" in err and key.strip() not in err and len(err.splitlines()) == 1
    assert "Traceback" not in err and "server_ready" not in err
