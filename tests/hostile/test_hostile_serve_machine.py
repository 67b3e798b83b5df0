"""Hostile settings of `imad serve` that only the machine can refuse, the metrics directory from
the environment, and header values in `--llm` options (issue 34, items 3 and 4).

The machine's bounds (`imad.serve.machine`) are patched to fixed numbers so each row fails for
its own reason on any machine; one row checks the issue's 16,384-process setting unpatched.
"""

from __future__ import annotations

import os

import pytest

from imad.cli.main import main
from imad.errors import ConfigError
from imad.llm.spec import chat_model_from_spec
from imad.serve import machine
from imad.serve.settings import ServeSettings

SMALL_MACHINE = {"process_budget": 16, "slot_budget": 64, "descriptor_limit": 1024, "usable_cores": 2}


@pytest.fixture
def small_machine(monkeypatch):
    """A machine of 2 cores and `ulimit -n` 1024 (16 processes, 64 slots per process)."""
    import imad.serve.settings as settings_module

    for name, value in SMALL_MACHINE.items():
        monkeypatch.setattr(settings_module, name, lambda value=value: value)


REFUSED = [
    ("workers beyond the processes", {"workers": 17, "scoring_processes": 0}, "--workers", "17 processes"),
    ("scoring processes beyond them", {"workers": 4, "scoring_processes": 4}, "--scoring-processes",
     "20 processes"),
    ("default children of many workers", {"workers": 16}, "--workers", "at most 16"),
    ("slots beyond the cores", {"max_concurrency": 65}, "--max-concurrency", "at most 64"),
    ("slots beyond the descriptors", {"max_concurrency": 64, "max_queue": 900}, "--max-queue",
     "the limit is 1024"),
    ("queue beyond the descriptors", {"max_concurrency": 8, "max_queue": 2000}, "--max-queue",
     "ulimit -n"),
]


@pytest.mark.parametrize(("name", "fields", "flag", "message"), REFUSED, ids=[row[0] for row in REFUSED])
def test_settings_beyond_the_machine_are_refused_naming_the_flag(small_machine, name, fields, flag, message):
    with pytest.raises(ConfigError) as caught:
        ServeSettings(**fields)
    assert caught.value.field == flag and message in str(caught.value)


@pytest.mark.parametrize("fields", [{}, {"workers": 8, "scoring_processes": 1},
                                    {"workers": 4, "scoring_processes": 3},
                                    {"max_concurrency": 64, "max_queue": 700}])
def test_settings_within_the_machine_are_accepted(small_machine, fields):
    settings = ServeSettings(**fields)
    assert settings.workers * (1 + settings.scoring_process_count) <= SMALL_MACHINE["process_budget"]
    assert 2 * settings.max_concurrency + settings.queue_limit + machine.RESERVED_FDS <= 1024


def test_the_issue_settings_are_refused_on_this_machine():
    with pytest.raises(ConfigError, match="16640 processes"):
        ServeSettings(workers=256, scoring_processes=64)


def test_the_bounds_follow_the_machine():
    assert machine.process_budget(1) == machine.MIN_PROCESS_BUDGET
    assert machine.process_budget(64) == 64 * machine.PROCESSES_PER_CORE
    assert machine.slot_budget(64) == 64 * machine.SLOTS_PER_CORE
    assert machine.descriptors_needed(4, 16) == 2 * 4 + 16 + machine.RESERVED_FDS


_UNWRITABLE = "takes no new file" if os.geteuid() == 0 else "is not writable by this user"

METRICS_DIRS = [
    ("missing", lambda tmp: str(tmp / "nowhere"), "does not exist"),
    ("a file", lambda tmp: str(_file(tmp)), "is a file"),
    ("under a file", lambda tmp: str(_file(tmp) / "sub"), "does not exist"),
    ("empty", lambda tmp: "", "is empty"),
    ("blank", lambda tmp: "  ", "is empty"),
    # os.access says yes to root there; the workers' metric files then failed with a traceback
    # in every worker, restarted without end (the server never answered)
    ("/proc", lambda tmp: "/proc", _UNWRITABLE),
    ("/sys/kernel", lambda tmp: "/sys/kernel", _UNWRITABLE),
]


def _file(tmp):
    path = tmp / "a-file"
    path.write_text("x")
    return path


@pytest.mark.timeout(120)  # /proc used to start workers that failed without end
@pytest.mark.parametrize(("name", "value", "message"), METRICS_DIRS, ids=[row[0] for row in METRICS_DIRS])
def test_a_bad_metrics_directory_is_one_error_line_and_exit_2(tmp_path, monkeypatch, capsys,
                                                              name, value, message):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", value(tmp_path))
    code = main(["serve", "--llm", "openai:m@http://127.0.0.1:9/v1", "--port", "0", "--workers", "2"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("imad serve: error: PROMETHEUS_MULTIPROC_DIR: ") and message in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_the_lower_case_variable_is_checked_too(tmp_path, monkeypatch):
    from imad.serve.metrics_files import prepare_multiprocess_dir

    with pytest.raises(ConfigError) as caught:
        prepare_multiprocess_dir({"prometheus_multiproc_dir": str(tmp_path / "nowhere")})
    assert caught.value.field == "prometheus_multiproc_dir"


def test_a_reused_metrics_directory_is_emptied_of_the_earlier_run(tmp_path):
    from imad.serve.metrics_files import prepare_multiprocess_dir

    for name in ("counter_101.db", "histogram_101.db", "gauge_livesum_101.db"):
        (tmp_path / name).write_bytes(b"\0" * 16)
    (tmp_path / "README").write_text("not prometheus_client's")
    assert prepare_multiprocess_dir({"PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}) == (tmp_path, 3)
    assert [path.name for path in tmp_path.iterdir()] == ["README"]
    assert prepare_multiprocess_dir({"PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}) == (tmp_path, 0)
    assert prepare_multiprocess_dir({}) is None


HEADERS = [
    ("newline in a value", '{"X-Team": "a\\nX-Injected: 1"}', "extra_headers['X-Team']"),
    ("carriage return", '{"X-Team": "a\\rb"}', "extra_headers['X-Team']"),
    ("NUL in a value", '{"X-Team": "a\\u0000b"}', "extra_headers['X-Team']"),
    ("non-ASCII value", '{"X-Team": "équipe"}', "extra_headers['X-Team']"),
    ("space in a name", '{"X Team": "a"}', "extra_headers['X Team']"),
    ("colon in a name", '{"X-Team:": "a"}', "extra_headers['X-Team:']"),
    ("empty name", '{"": "a"}', "extra_headers['']"),
]


@pytest.mark.parametrize(("name", "headers", "where"), HEADERS, ids=[row[0] for row in HEADERS])
def test_header_values_an_http_request_cannot_carry_are_refused(name, headers, where):
    from urllib.parse import quote

    with pytest.raises(ConfigError) as caught:
        chat_model_from_spec(f"openai:m@http://127.0.0.1:9/v1?extra_headers={quote(headers)}")
    assert caught.value.field == where


def test_an_api_key_with_a_newline_is_refused(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abc\nX-Injected: 1")
    with pytest.raises(ConfigError) as caught:
        chat_model_from_spec("openai:m@http://127.0.0.1:9/v1")
    assert caught.value.field == "api_key"


def test_a_header_with_a_newline_is_one_error_line_from_the_command(capsys):
    from urllib.parse import quote

    spec = "openai:m@http://127.0.0.1:9/v1?extra_headers=" + quote('{"X-Team": "a\\nb"}')
    code = main(["ask", "--llm", spec, "What is 2+2?"])
    err = capsys.readouterr().err
    assert code == 2 and "error:" in err and "extra_headers['X-Team']" in err
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_ordinary_headers_pass():
    from urllib.parse import quote

    model = chat_model_from_spec("openai:m@http://127.0.0.1:9/v1?extra_headers="
                                 + quote('{"X-Team": "search\\tteam", "api-key": "k_1.2~"}'))
    assert model.extra_headers == {"X-Team": "search\tteam", "api-key": "k_1.2~"}
