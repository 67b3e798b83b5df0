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
