"""Every JSON parser left in the runtime, and why each is safe (issue 23, item 1).

JSON that imad did not write itself goes through `imad.jsonio` (`loads_untrusted`,
`read_untrusted_file`). This test lists the other places that parse JSON in the runtime
packages (imad/, features/, training/) and fails when one is added or removed, so a new reader
of untrusted JSON cannot slip in without the reason it is safe written here. It also checks the
readers that were moved to `imad.jsonio` by feeding them what plain `json` chokes on.
"""

from __future__ import annotations

import re
import sys

import pytest

from tests.conftest import REPO_ROOT

RUNTIME = ("imad", "features", "training")
PARSERS = re.compile(r"json\.loads?\(|JSONDecoder\(|raw_decode\(|orjson|ujson|\.json\(\)")

SAFE = {
    "imad/jsonio.py": "the untrusted-JSON reader itself: depth scanned before json.loads, integer "
                      "digits, NaN/Infinity, UTF-8, lone surrogates and size checked",
    "imad/critique/parser.py": "the self-critique parser must find a JSON object inside a model's "
                               "free text (raw_decode): integers are length-bounded "
                               "(_bounded_int), RecursionError becomes CritiqueParseError, lone "
                               "surrogates and non-finite confidences are refused field by field; "
                               "48,000 generated inputs in tests/hostile/test_hostile_parser.py",
    "imad/llm/cache.py": "rows of the LLM response cache, a SQLite file imad wrote itself "
                         "(ChatResponse.to_dict of an already-checked reply)",
    "imad/serve/processes/worker.py": "IMAD_SERVE_WORKER_CONFIG, written by `imad serve --workers` for its "
                            "own worker processes (json.dumps of checked ServeSettings)",
    "imad/serve/logs.py": "json.loads(json.dumps(...)) of imad's own log fields, to make them "
                          "strict JSON",
    "imad/serve/dashboard/__init__.py": "the Grafana dashboard shipped as package data beside it "
                                        "(imad.json, checked by tests/serve/test_dashboard.py)",
}


def parser_calls() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for package in RUNTIME:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
                     if PARSERS.search(line) and not line.strip().startswith("#")]
            if lines:
                found[path.relative_to(REPO_ROOT).as_posix()] = lines
    return found


def test_every_json_parser_left_in_the_runtime_is_listed_with_its_reason():
    found = parser_calls()
    unlisted = {path: lines for path, lines in found.items() if path not in SAFE}
    assert not unlisted, ("parse untrusted JSON with imad.jsonio, or add the file to SAFE with "
                          f"the reason it is safe: {unlisted}")
    assert sorted(found) == sorted(SAFE), "a listed parser is gone: remove it from SAFE"


HUGE_INT = "1" + "0" * 5000
HOSTILE_TEXTS = {
    "a 5000-digit integer": '{"a": ' + HUGE_INT + "}",
    "100,000 nested arrays": "[" * 100_000 + "]" * 100_000,
    "NaN": '{"a": NaN}',
    "1e999": '{"a": 1e999}',
}


@pytest.mark.parametrize("name", list(HOSTILE_TEXTS))
def test_features_response_file_is_a_typed_error(tmp_path, name):
    from imad.cli.features import read_response
    from imad.errors import CritiqueParseError

    path = tmp_path / "response.json"
    path.write_text(HOSTILE_TEXTS[name], encoding="utf-8")
    with pytest.raises(CritiqueParseError, match="is not valid JSON"):
        read_response(path)


@pytest.mark.parametrize("name", list(HOSTILE_TEXTS))
def test_training_config_file_is_a_typed_error(tmp_path, name):
    from imad.errors import ConfigError
    from training.config import read_config_file

    path = tmp_path / "config.json"
    path.write_text(HOSTILE_TEXTS[name], encoding="utf-8")
    with pytest.raises(ConfigError, match="cannot parse"):
        read_config_file(path)


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs are POSIX")
@pytest.mark.timeout(60)
def test_a_fifo_is_refused_unread_by_the_file_readers(tmp_path):
    import os

    from imad.cli.features import read_response
    from imad.errors import ConfigError, DatasetError
    from training.config import read_config_file
    from training.data.bbh import _examples

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="FIFO"):
        read_response(fifo)
    with pytest.raises(ConfigError, match="FIFO"):
        read_config_file(fifo)
    with pytest.raises(DatasetError, match="FIFO"):
        _examples(fifo)


@pytest.mark.parametrize("name", list(HOSTILE_TEXTS))
def test_a_bbh_task_file_is_a_dataset_error(tmp_path, name):
    from imad.errors import DatasetError
    from training.data.bbh import _examples

    path = tmp_path / "task.json"
    path.write_text(HOSTILE_TEXTS[name], encoding="utf-8")
    with pytest.raises(DatasetError, match="is not a BBH task file"):
        _examples(path)
