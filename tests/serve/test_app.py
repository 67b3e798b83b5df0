"""The server end to end through the real openai SDK (and httpx for raw bodies), echo model behind.

Each response is checked for its values, not just its status: the answer equals the question's
tag, usage equals the tokens of the calls the scripted model saw, the `imad` field and the
`X-Imad-Decision` header agree, and every error has OpenAI's shape with the documented code.
"""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from imad.llm.scripted import ScriptedChat, count_words
from imad.serve import ServeSettings
from tests.serve.conftest import API_KEY
from tests.support.serving import echo_chat, echo_factory, echo_respond, tagged_question


def ask(index: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You are terse."},
            {"role": "user", "content": tagged_question(index)}]


def expected_usage(chat: ScriptedChat) -> tuple[int, int]:
    """Prompt and completion words of every call the echo model answered."""
    prompt = sum(count_words(m.text) for call in chat.calls for m in call.messages)
    completion = sum(count_words(echo_respond(call)) for call in chat.calls)
    return prompt, completion


def check_error(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["code"] == code
    assert error["message"]
    return error


@pytest.mark.parametrize(("model", "escalated", "source"),
                         [("imad-svrmad-0", False, "single_agent"), ("imad-svrmad-1", True, "debate"),
                          ("imad-acemad-1", True, "debate")])
def test_completion_counts_every_call(start_server, client_for, model, escalated, source):
    chat = echo_chat()
    server = start_server(factory=echo_factory(chat))
    raw = client_for(server).chat.completions.with_raw_response.create(model=model, messages=ask(5))
    completion = raw.parse()
    assert completion.object == "chat.completion" and completion.model == model
    assert completion.choices[0].message.content == "5" and completion.choices[0].finish_reason == "stop"
    info = completion.model_extra["imad"]
    assert (info["escalated"], info["source"], info["backend"]) == (escalated, source, model.split("-")[1])
    assert info["tau"] == float(model.rsplit("-", 1)[1]) and 0.0 <= info["p"] <= 1.0
    assert info["llm_calls"] == len(chat.calls) and (len(chat.calls) > 1) is escalated
    prompt, completion_tokens = expected_usage(chat)
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (prompt, completion_tokens)
    assert completion.usage.total_tokens == prompt + completion_tokens
    header = json.loads(raw.headers["x-imad-decision"])
    assert header == {key: info[key] for key in ("p", "tau", "tau_source", "escalated", "ood",
                                                 "would_escalate", "backend", "source", "reasons")}
    assert info["would_escalate"] is None  # not in shadow mode
    assert (info["tau_source"], info["ood"], info["ood_score"], info["ood_policy"]) == (
        "request", None, None, "flag")
    assert raw.headers["x-request-id"] == completion.id
    assert "You are terse" not in chat.calls[0].messages[1].text  # only the last user message is asked


def test_streamed_completion(start_server, client_for):
    chat = echo_chat()
    server = start_server(factory=echo_factory(chat))
    stream = client_for(server).chat.completions.create(
        model="imad-svrmad-1", messages=ask(12345), stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == "12345"
    assert chunks[0].choices[0].delta.role == "assistant"
    finish = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(finish) == 1 and finish[0].choices[0].finish_reason == "stop"
    assert finish[0].model_extra["imad"]["escalated"] is True
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == sum(expected_usage(chat))
    assert len({c.id for c in chunks}) == 1


def test_stream_ends_with_done_and_carries_the_header(start_server):
    server = start_server()
    with httpx.stream("POST", f"{server.base_url}/chat/completions", timeout=60,
                      headers={"Authorization": f"Bearer {API_KEY}"},
                      json={"model": "imad", "messages": ask(3), "stream": True}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert json.loads(response.headers["x-imad-decision"])["source"] in ("single_agent", "debate")
        events = [line for line in response.iter_lines() if line]
    assert events[-1] == "data: [DONE]" and all(e.startswith("data: ") for e in events)
    assert not any('"usage"' in e for e in events)  # usage only when stream_options asks for it



def test_stream_options_need_stream_true_like_openai(start_server, client_for):
    client = client_for(start_server())
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="imad", messages=ask(4), stream_options={"include_usage": True})
    assert (caught.value.code, caught.value.param) == ("invalid_request", "stream_options")
    assert "only allowed when 'stream' is enabled" in caught.value.message
    # null is no stream_options at all
    answer = client.chat.completions.create(model="imad-svrmad-0", messages=ask(5), stream_options=None)
    assert answer.choices[0].message.content == "5"

def test_model_listing(start_server, client_for):
    client = client_for(start_server())
    assert [m.id for m in client.models.list().data] == ["imad", "imad-acemad", "imad-svrmad"]
    assert client.models.retrieve("imad-svrmad-0.7").owned_by == "imad"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-4o")


def test_auth_failure(start_server, client_for):
    server = start_server()
    with pytest.raises(openai.AuthenticationError) as caught:
        client_for(server, api_key="wrong-key").chat.completions.create(model="imad", messages=ask(1))
    assert caught.value.status_code == 401 and caught.value.code == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        client_for(server, api_key="wrong-key").models.list()
    missing = httpx.post(f"{server.base_url}/chat/completions", json={"model": "imad", "messages": ask(1)})
    check_error(missing, 401, "missing_api_key")
    assert missing.headers["www-authenticate"].startswith("Bearer")
    health = httpx.get(server.base_url.removesuffix("/v1") + "/health")
    assert health.status_code == 200 and health.json()["status"] == "ok"


def test_no_key_configured_means_no_auth(start_server, client_for):
    server = start_server(ServeSettings())
    client = client_for(server, api_key="anything")
    answer = client.chat.completions.create(model="imad-svrmad-0", messages=ask(2))
    assert answer.choices[0].message.content == "2"


def test_oversized_request(start_server, client_for):
    server = start_server(ServeSettings(api_key=API_KEY, max_request_bytes=4096, max_question_chars=200))
    client = client_for(server)
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="imad", messages=[{"role": "user", "content": "x" * 5000}])
    assert caught.value.status_code == 413 and caught.value.code == "request_too_large"
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(model="imad", messages=[{"role": "user", "content": "y" * 300}])
    assert caught.value.status_code == 413 and caught.value.code == "question_too_long"

    def chunked_body():  # no Content-Length: the limit must hold while reading
        yield b'{"model": "imad", "messages": [{"role": "user", "content": "'
        for _ in range(10):
            yield b"z" * 1000
        yield b'"}]}'

    response = httpx.post(f"{server.base_url}/chat/completions", content=chunked_body(),
                          headers={"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"})
    check_error(response, 413, "request_too_large")


MALFORMED = [
    (b"{not json", "invalid_json"),
    (b"[1, 2]", "invalid_json"),
    (b"\xff\xfe", "invalid_json"),
    (json.dumps({"model": "imad"}).encode(), "invalid_request"),
    (json.dumps({"model": "imad", "messages": []}).encode(), "invalid_request"),
    (json.dumps({"model": "imad", "messages": "hi"}).encode(), "invalid_request"),
    (json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode(), "invalid_request"),
    (json.dumps({"model": "imad", "messages": [{"role": "user", "content": "hi"}], "n": 2}).encode(),
     "unsupported_parameter"),
    (json.dumps({"model": "imad", "messages": [{"role": "system", "content": "hi"}]}).encode(),
     "missing_user_message"),
    (json.dumps({"model": "imad", "messages": [{"role": "user", "content": "   "}]}).encode(),
     "empty_question"),
    (json.dumps({"model": "imad", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]}).encode(), "unsupported_content"),
    (json.dumps({"model": "imad", "messages": [{"role": "user", "content": "hi"}],
                 "imad": {"choices": ["only one"]}}).encode(), "invalid_question"),
    (json.dumps({"model": "imad", "messages": [{"role": "user", "content": "hi"}],
                 "imad": {"colour": "red"}}).encode(), "invalid_request"),
]


@pytest.mark.parametrize(("body", "code"), MALFORMED)
def test_malformed_body(start_server, body, code):
    server = start_server(ServeSettings())
    response = httpx.post(f"{server.base_url}/chat/completions", content=body,
                          headers={"Content-Type": "application/json"})
    check_error(response, 400, code)


def test_malformed_body_through_the_sdk(start_server, client_for):
    with pytest.raises(openai.BadRequestError) as caught:
        client_for(start_server()).chat.completions.create(model="imad", messages=[])
    assert caught.value.code == "invalid_request" and "messages" in caught.value.message


@pytest.mark.parametrize(("model", "status", "code"), [
    ("gpt-4o", 404, "model_not_found"), ("imad-cot", 404, "model_not_found"),
    ("imad-svrmad-x", 404, "model_not_found"), ("imad-acemad-1.5", 400, "invalid_threshold")])
def test_unknown_model(start_server, client_for, model, status, code):
    with pytest.raises(openai.APIStatusError) as caught:
        client_for(start_server()).chat.completions.create(model=model, messages=ask(1))
    assert (caught.value.status_code, caught.value.code) == (status, code)
    if status == 404:
        assert "imad-svrmad" in caught.value.message  # says what exists


def test_multiple_choice_through_extra_body(start_server, client_for):
    critique = {"initial_answer": "B", "initial_reasoning": "Morphine is an opioid.",
                "critique": "A is not.", "alternative_answer": "A", "final_answer": "B",
                "confidence_initial": 90, "confidence_critique": 10}
    chat = ScriptedChat(lambda request: json.dumps(critique))
    server = start_server(factory=echo_factory(chat))
    completion = client_for(server).chat.completions.create(
        model="imad-svrmad-0", messages=[{"role": "user", "content": "Which drug is an opioid?"}],
        extra_body={"imad": {"choices": ["Aspirin", "Morphine"], "context": "Pharmacology 101."}})
    assert completion.choices[0].message.content == "B"
    prompt = chat.calls[0].messages[-1].text
    assert "A) Aspirin" in prompt and "B) Morphine" in prompt and "Pharmacology 101." in prompt


def test_unknown_path_and_method_have_the_error_shape(start_server):
    server = start_server(ServeSettings())
    check_error(httpx.get(f"{server.base_url}/nothing"), 404, "not_found")
    check_error(httpx.get(f"{server.base_url}/chat/completions"), 405, "method_not_allowed")


def test_extra_openai_fields_are_accepted(start_server, client_for):
    completion = client_for(start_server()).chat.completions.create(
        model="imad-svrmad-0", messages=ask(8), temperature=0.3, max_tokens=10, user="someone",
        tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}])
    assert completion.choices[0].message.content == "8"


def test_a_bug_is_a_500_with_a_request_id(start_server, client_for):
    def broken(request):
        raise ZeroDivisionError("scripted bug")

    server = start_server(factory=echo_factory(ScriptedChat(broken)))
    with pytest.raises(openai.InternalServerError) as caught:
        client_for(server).chat.completions.create(model="imad", messages=ask(1))
    assert caught.value.code == "internal_error" and "chatcmpl-" in caught.value.message
    assert client_for(server).models.list().data  # still serving
