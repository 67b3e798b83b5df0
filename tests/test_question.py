import pytest

from imad.errors import InvalidQuestionError
from imad.question import MAX_QUESTION_CHARS, Question, TaskType


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"text": ""}, "empty"), ({"text": "   "}, "empty"),
    ({"text": "x" * (MAX_QUESTION_CHARS + 1)}, "limit"),
    ({"text": "q", "task_type": TaskType.MULTIPLE_CHOICE, "choices": ("only one",)}, "at least 2"),
    ({"text": "q", "task_type": TaskType.MULTIPLE_CHOICE, "choices": ("a", " ")}, "empty"),
    ({"text": "q", "task_type": "essay"}, "unknown task type 'essay'"),
    ({"text": None}, "must be strings"),
    ({"text": "q\ud800"}, "text is not valid Unicode text: a lone surrogate U\\+D800 at character 1"),
    ({"text": "q", "context": "\udcff"}, "context is not valid Unicode text"),
    ({"text": "q", "task_type": TaskType.MULTIPLE_CHOICE, "choices": ("a", "b\udc80")},
     "choice 2 is not valid Unicode text"),
])
def test_bad_questions_are_refused(kwargs, message):
    with pytest.raises(InvalidQuestionError, match=message):
        Question(**kwargs)


def test_round_trip_and_options():
    question = Question("Which?", "multiple_choice", ["x", "y", "z"], id="7", gold="B")
    assert question.answer_options == ("A", "B", "C")
    assert Question.from_dict(question.to_dict()) == question
    assert Question("Is it?", TaskType.YES_NO_MAYBE).answer_options == ("yes", "no", "maybe")


# --- limits that count what is sent (issue 24, item 4) -------------------------------------------


def test_the_size_limit_counts_the_choices():
    half = "x" * (MAX_QUESTION_CHARS // 2)
    Question(half, TaskType.MULTIPLE_CHOICE, ("a" * 10, "b" * 10))
    with pytest.raises(InvalidQuestionError, match="with its context and choices is 20,001"):
        Question(half, TaskType.MULTIPLE_CHOICE, (half[:-9], "b" * 10))


@pytest.mark.parametrize("task_type", [TaskType.NUMERIC, TaskType.YES_NO_MAYBE])
def test_choices_with_a_task_type_that_has_no_options_are_refused(task_type):
    with pytest.raises(InvalidQuestionError, match=f"a {task_type.value} question takes no choices"):
        Question("How many?", task_type, ("1", "2"))


def test_repeated_choices_are_refused_at_the_cli_and_server_edge():
    from imad.question import refuse_repeated_choices

    refuse_repeated_choices(("Dear Pablo,", "dear Pablo,"))  # differ by case: a real ScienceQA row
    with pytest.raises(InvalidQuestionError, match="the choice ' apple' is given twice"):
        refuse_repeated_choices(("apple", " apple"))


def test_imad_ask_refuses_repeated_choices_with_exit_2(capsys):
    from imad.cli.main import main

    assert main(["ask", "Which?", "--choices", "a", "a", "--llm",
                 "openai:m@http://127.0.0.1:9/v1?max_retries=0"]) == 2
    assert "imad ask: error: the choice 'a' is given twice" in capsys.readouterr().err
