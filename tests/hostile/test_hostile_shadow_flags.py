"""Hostile shadow-mode flags of `imad serve` and `imad ask` (issue 32 item 1): a rate outside
[0, 1], NaN, ±inf or text, a seed that is not an integer in [0, 2**32), and either flag without
`--shadow` are exit 2 with one `error:` line naming the flag — before any model loads, any LLM
call is made or the port is served. The same table runs on both commands; `ServeSettings` and
`ShadowSampler` refuse the same values from Python."""

from __future__ import annotations

import math

import pytest

from imad.cli.main import main
from imad.errors import ConfigError
from imad.serve import ServeSettings
from imad.shadow import ShadowSampler
from tests.router.router_helpers import make_router
from tests.support.openai_stub import openai_stub

RATE, SEED = "--shadow-debate-rate", "--shadow-seed"
MUST_RATE = f"{RATE}: must be"
MUST_SEED = f"{SEED}: must be"
WITHOUT = "applies to shadow mode, which --shadow turns on"

CASES = [
    (["--shadow", RATE, "1.5"], MUST_RATE),
    (["--shadow", RATE, "-0.1"], MUST_RATE),
    (["--shadow", RATE, "nan"], MUST_RATE),
    (["--shadow", RATE, "NaN"], MUST_RATE),
    (["--shadow", RATE, "inf"], MUST_RATE),
    (["--shadow", f"{RATE}=-inf"], MUST_RATE),  # argparse reads a bare -inf as an option
    (["--shadow", RATE, "abc"], MUST_RATE),
    (["--shadow", RATE, ""], MUST_RATE),
    (["--shadow", RATE, "1e400"], MUST_RATE),
    (["--shadow", RATE, "1e-320"], MUST_RATE),  # subnormal
    (["--shadow", RATE, "1e-400"], MUST_RATE),  # underflowed to 0 and was accepted as 0
    (["--shadow", RATE, "0.5e-330"], MUST_RATE),
    (["--shadow", RATE, "0x1p-2"], MUST_RATE),
    (["--shadow", RATE, "٠.٥"], MUST_RATE),  # Arabic-Indic digits
    (["--shadow", SEED, "-1"], MUST_SEED),
    (["--shadow", SEED, "1.5"], MUST_SEED),
    (["--shadow", SEED, "abc"], MUST_SEED),
    (["--shadow", SEED, "9" * 400], MUST_SEED),
    (["--shadow", SEED, str(2**32)], MUST_SEED),
    (["--shadow", SEED, "true"], MUST_SEED),
    (["--shadow", SEED, "١٢"], MUST_SEED),
    ([RATE, "0.5"], f"{RATE}: {WITHOUT}"),
    ([RATE, "0"], f"{RATE}: {WITHOUT}"),
    ([SEED, "3"], f"{SEED}: {WITHOUT}"),
]


@pytest.fixture(scope="module")
def router_dir(tmp_path_factory):
    return str(make_router().save(tmp_path_factory.mktemp("router") / "router"))


@pytest.mark.parametrize(("flags", "message"), CASES)
def test_serve_refuses_bad_shadow_flags(router_dir, capsys, flags, message):
    assert main(["serve", "--router", router_dir, "--port", "0", *flags]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("error:") == 1
    assert "Traceback" not in err and "server_ready" not in err


@pytest.mark.parametrize(("flags", "message"), CASES)
def test_ask_refuses_bad_shadow_flags_before_any_call(router_dir, capsys, monkeypatch, flags, message):
    monkeypatch.setenv("OPENAI_API_KEY", "stub")
    with openai_stub() as (llm, served):
        status = main(["ask", "Is it?", "--router", router_dir, "--llm", llm, *flags])
    err = capsys.readouterr().err
    assert status == 2 and message in err and err.count("error:") == 1 and "Traceback" not in err
    assert served.requests == 0


@pytest.mark.parametrize(("fields", "name"), [
    ({"shadow": True, "shadow_debate_rate": math.nan}, RATE),
    ({"shadow": True, "shadow_debate_rate": 2.0}, RATE),
    ({"shadow": True, "shadow_debate_rate": "0.5"}, RATE),
    ({"shadow": True, "shadow_debate_rate": True}, RATE),
    ({"shadow": True, "shadow_seed": -1}, SEED),
    ({"shadow": True, "shadow_seed": 1.0}, SEED),
    ({"shadow": True, "shadow_seed": False}, SEED),
    ({"shadow": "yes"}, "--shadow"),
    ({"shadow_debate_rate": 0.5}, RATE),
    ({"shadow_seed": 4}, SEED),
])
def test_serve_settings_refuse_the_same_values(fields, name):
    with pytest.raises(ConfigError, match=f"^{name}"):
        ServeSettings(**fields)


@pytest.mark.parametrize(("rate", "seed"), [(math.nan, 0), (-0.5, 0), (1.01, 0), ("0.5", 0),
                                             (True, 0), (0.5, -1), (0.5, 2**32), (0.5, 1.0),
                                             (0.5, True)])
def test_the_sampler_refuses_them_too(rate, seed):
    with pytest.raises(ConfigError):
        ShadowSampler(rate, seed)


@pytest.mark.parametrize(("text", "rate"), [("0", 0.0), ("0e-999", 0.0), ("0.000", 0.0),
                                            ("1e-300", 1e-300), ("1", 1.0)])
def test_a_rate_is_zero_or_a_normal_float(text, rate):
    """One rule: 0 (written any way) or a normal float in (0, 1]; never a nonzero text read as 0."""
    from argparse import Namespace

    from imad.cli.shadow_flags import shadow_from_args

    args = Namespace(shadow=True, shadow_debate_rate=text, shadow_seed=None)
    assert shadow_from_args(args) == (True, rate, 0)
