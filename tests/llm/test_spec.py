import pytest

from imad.errors import ConfigError
from imad.llm.cache import CachedChat
from imad.llm.openai_http import OpenAICompatibleChat
from imad.llm.spec import chat_model_from_spec


def test_openai_spec_with_url_and_options():
    model = chat_model_from_spec("openai:qwen2@http://127.0.0.1:8000/v1?structured_output=guided_json&timeout=5")
    assert isinstance(model, OpenAICompatibleChat)
    assert (model.model, model.base_url, model.structured_output, model.timeout) == (
        "qwen2", "http://127.0.0.1:8000/v1", "guided_json", 5)


def test_cached_spec_wraps(tmp_path):
    model = chat_model_from_spec(f"cached:{tmp_path}/calls.sqlite::openai:m@http://127.0.0.1:1/v1")
    assert isinstance(model, CachedChat)
    assert model.model_id == "m"


@pytest.mark.parametrize(("spec", "message"), [
    ("banana", "unknown back-end"), ("openai:", "needs a model name"), ("gguf:", "needs a path"),
    ("local:x", "takes no argument"),
    ("openai:m@http://h/v1?colour=red", "unknown setting of OpenAICompatibleChat"),
    ("cached:::local", "cached:PATH::SPEC"), ("gguf:/no/such/model.gguf", "not found"),
])
def test_bad_specs(spec, message):
    with pytest.raises((ConfigError, FileNotFoundError), match=message):
        chat_model_from_spec(spec)


@pytest.mark.llm
def test_local_spec_options_are_typed_values_on_the_real_model():
    # "False" must reach the model as False (imad.keyvalue), not as the truthy string "False".
    from imad.errors import TruncatedResponseError
    from imad.llm.types import ChatRequest, Message

    model = chat_model_from_spec("local?logits_all=False&n_ctx=1024", reuse_local=False)
    assert model.logits_all is False and model.n_ctx == 1024
    request = ChatRequest((Message("user", "Name one colour."),), max_tokens=8, seed=0)
    try:
        response = model.chat(request)
    except TruncatedResponseError as error:  # 8 tokens may cut the reply; it still ran
        response = error.response
    assert response.prompt_tokens > 0 and response.completion_tokens > 0
