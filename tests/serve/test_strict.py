"""Strict JSON out of the server: non-finite numbers become null at any depth."""

from __future__ import annotations

import json
import math

from imad.serve.openai.strict_json import finite_or_null, strict_json


def test_non_finite_numbers_become_null_at_any_depth():
    value = {"p": math.nan, "cues": [{"delta": -math.inf}, 0.5], "tau": 0.7, "ok": True, "n": 3}
    expected = {"p": None, "cues": [{"delta": None}, 0.5], "tau": 0.7, "ok": True, "n": 3}
    assert finite_or_null(value) == expected
    text = strict_json(value, ensure_ascii=True)
    assert text == '{"p":null,"cues":[{"delta":null},0.5],"tau":0.7,"ok":true,"n":3}'
    json.loads(text, parse_constant=lambda name: (_ for _ in ()).throw(AssertionError(name)))
