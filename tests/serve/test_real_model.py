"""The routing server with the real embedded model behind it, through the real openai SDK."""

from __future__ import annotations

import pytest

from imad.serve import PipelineFactory, ServeSettings
from tests.router.router_helpers import make_router

QUESTION = [{"role": "user", "content": "Does regular aerobic exercise lower resting blood pressure?"}]
DEBATES = {"svrmad": {"n_agents": 3, "consensus_agree": 3, "max_debates": 1},
           "acemad": {"n_agents": 2, "n_rounds": 1}}
EXTRA = {"imad": {"task_type": "yes_no_maybe"}}


@pytest.fixture
def real_server(start_server, embedded_model):
    settings = ServeSettings(request_timeout_s=900)
    return start_server(settings, PipelineFactory(make_router(), embedded_model, DEBATES))


@pytest.mark.llm
def test_completion_with_the_embedded_model(real_server, client_for):
    raw = client_for(real_server, timeout=900).chat.completions.with_raw_response.create(
        model="imad-svrmad-0", messages=QUESTION, extra_body=EXTRA)
    completion = raw.parse()
    info = completion.model_extra["imad"]
    assert info["upstream_model"] == "SmolLM2-135M-Instruct-Q4_1" and info["tau"] == 0.0
    assert info["escalated"] is (info["parse_status"] != "parsed")
    assert completion.choices[0].message.content in ("yes", "no", "maybe", "")
    assert completion.usage.prompt_tokens > 50 and completion.usage.completion_tokens > 0
    usage = completion.usage
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert '"source"' in raw.headers["x-imad-decision"]


@pytest.mark.llm
def test_streamed_completion_with_the_embedded_model(real_server, client_for):
    stream = client_for(real_server, timeout=900).chat.completions.create(
        model="imad-svrmad-0", messages=QUESTION, extra_body=EXTRA, stream=True,
        stream_options={"include_usage": True})
    chunks = list(stream)
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content in ("yes", "no", "maybe", "")
    assert chunks[-1].usage.prompt_tokens > 50
    final = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
    assert len(final) == 1 and final[0].model_extra["imad"]["tau"] == 0.0
