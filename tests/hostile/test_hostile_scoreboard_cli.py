"""Hostile table for `python -m training.scoreboard` (issue 35): a router that cannot be
recomputed, or a bad flag, is one `error:` line and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from training.scoreboard import main

CHECKPOINTS = Path(__file__).resolve().parents[2] / "checkpoints"


def _without_split(tmp_path: Path) -> str:
    target = tmp_path / "no-split"
    shutil.copytree(CHECKPOINTS / "imad-router-v2", target)
    config = json.loads((target / "config.json").read_text())
    del config["data"]["split"]
    (target / "config.json").write_text(json.dumps(config))
    return str(target)


CASES = [
    ("unknown router", lambda t: ["--router", "imad-router-v99"], "imad-router-v99"),
    ("router a missing directory", lambda t: ["--router", str(t / "nope")], "nope"),
    ("checkpoint without its split", lambda t: ["--router", _without_split(t)],
     "does not record its corpus files and validation split"),
    ("unknown flag", lambda t: ["--bogus"], "unrecognized arguments"),
]


@pytest.mark.parametrize("name,arguments,message", CASES, ids=[case[0] for case in CASES])
def test_bad_scoreboard_input_is_one_error_line(tmp_path, capsys, name, arguments, message):
    try:
        code = main(arguments(tmp_path))
    except SystemExit as exit_:  # argparse's own usage errors
        code = exit_.code
    assert code != 0
    err = capsys.readouterr().err
    assert "error:" in err and message in err and "Traceback" not in err
