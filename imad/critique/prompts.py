"""Versioned self-critique prompt templates, one per task type.

The version string is stored with every corpus record and checkpoint: a router trained on
answers to one prompt version should not silently score answers to another. Change the wording
→ bump `PROMPT_VERSION`.
"""

from __future__ import annotations

from imad.llm.types import Message
from imad.question import Question, TaskType

PROMPT_VERSION = "self-critique-v1"

SYSTEM_PROMPT = (
    "You are a careful expert. Answer the question, then argue honestly against your own "
    "answer before giving a final answer."
)

ANSWER_FORMATS = {
    TaskType.MULTIPLE_CHOICE: "the letter of one option",
    TaskType.YES_NO_MAYBE: "yes, no or maybe",
    TaskType.NUMERIC: "a number only, no units",
    TaskType.SHORT_ANSWER: "a short answer of one to three words",
}

_INSTRUCTIONS = """Reply with a JSON object with these fields:
"initial_answer": your answer ({answer_format})
"initial_reasoning": your step-by-step reasoning, two to four sentences
"critique": the strongest argument for a different plausible answer; name that answer
"alternative_answer": that different answer ({answer_format})
"final_answer": your answer after weighing the critique ({answer_format})
"confidence_initial": how likely your initial answer is correct, 0 to 100
"confidence_critique": how likely the alternative answer is correct, 0 to 100"""


def format_question(question: Question) -> str:
    """Context, question and lettered options as one block of text."""
    parts = []
    if question.context:
        parts.append(f"Context: {question.context.strip()}")
    parts.append(f"Question: {question.text.strip()}")
    if question.task_type is TaskType.MULTIPLE_CHOICE:
        options = "\n".join(f"{letter}) {choice}"
                            for letter, choice in zip(question.option_letters, question.choices, strict=True))
        parts.append(f"Options:\n{options}")
    return "\n\n".join(parts)


def critique_messages(question: Question) -> tuple[Message, ...]:
    """The chat messages of one self-critique call on `question`."""
    instructions = _INSTRUCTIONS.format(answer_format=ANSWER_FORMATS[question.task_type])
    images = (question.image_path,) if question.image_path else ()
    return (
        Message("system", SYSTEM_PROMPT),
        Message("user", f"{format_question(question)}\n\n{instructions}", images),
    )
