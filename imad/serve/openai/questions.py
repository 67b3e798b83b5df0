"""From an OpenAI chat request to the `Question` the pipeline answers.

The question is the last user message. System prompts and earlier turns are not passed on: the
router was trained on the self-critique prompt alone, and a chat history would change the
features it reads. Supporting text goes in the `imad.context` field, answer options in
`imad.choices` (see `ImadOptions`). Only text content is accepted; image parts are refused
rather than silently dropped.
"""

from __future__ import annotations

from imad.errors import InvalidQuestionError, ServeError
from imad.question import Question, infer_task_type, question_chars, refuse_repeated_choices
from imad.serve.openai.protocol import ChatCompletionRequest, ChatMessage, ImadOptions


def message_text(message: ChatMessage, index: int) -> str:
    """The text of a message: its string content, or its text parts joined by newlines."""
    if message.content is None:
        return ""
    if isinstance(message.content, str):
        return message.content
    texts = []
    for part in message.content:
        kind = part.get("type")
        if kind != "text" or not isinstance(part.get("text"), str):
            raise ServeError(400, f"messages[{index}] has a content part of type {kind!r}; "
                                  "only text parts are supported", code="unsupported_content",
                             param=f"messages.{index}.content")
        texts.append(part["text"])
    return "\n".join(texts)


def question_from_request(request: ChatCompletionRequest, *, max_chars: int, question_id: str) -> Question:
    """The question a chat request asks, or ServeError 400 (missing/empty/invalid) or 413 (too long)."""
    users = [index for index, message in enumerate(request.messages) if message.role == "user"]
    if not users:
        raise ServeError(400, "messages has no user message; the last user message is the question",
                         code="missing_user_message", param="messages")
    text = message_text(request.messages[users[-1]], users[-1])
    if not text.strip():
        raise ServeError(400, "the question (the last user message) is empty", code="empty_question",
                         param=f"messages.{users[-1]}.content")
    options = request.imad or ImadOptions()
    size = question_chars(text, options.context, options.choices)
    if size > max_chars:
        raise ServeError(413, f"the question with its context and choices is {size:,} characters; "
                              "this server accepts "
                              f"at most {max_chars:,}", code="question_too_long",
                         param=f"messages.{users[-1]}.content")
    task_type = options.task_type or infer_task_type(options.choices)
    try:
        refuse_repeated_choices(options.choices)
        return Question(text, task_type, tuple(options.choices), context=options.context, id=question_id)
    except InvalidQuestionError as error:
        raise ServeError(400, f"invalid question: {error}", code="invalid_question", param="imad") from None
