"""What the extractor reads from a self-critique response: a Protocol.

`features` defines its own input type instead of importing imad's `CritiqueResponse`, so the
package stays a pure function of text that imports nothing from `imad`. Any object
with these six attributes is accepted — imad's frozen `CritiqueResponse` dataclass, a test's
own dataclass, a record read from a corpus file. The other fields of a response (the
alternative answer) are never read.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

RESPONSE_FIELDS: tuple[str, ...] = (
    "initial_answer",
    "initial_reasoning",
    "critique",
    "final_answer",
    "confidence_initial",
    "confidence_critique",
)
"""The attributes the extractor reads, in the order error messages list them."""


@runtime_checkable
class CritiqueFields(Protocol):
    """A parsed self-critique as the features see it.

    The texts feed the reasoning (`r_…`) and critique (`c_…`) groups; the confidences (in
    [0, 1]) and the two canonical answers feed the cross group.
    """

    @property
    def initial_answer(self) -> str: ...

    @property
    def initial_reasoning(self) -> str: ...

    @property
    def critique(self) -> str: ...

    @property
    def final_answer(self) -> str: ...

    @property
    def confidence_initial(self) -> float: ...

    @property
    def confidence_critique(self) -> float: ...


def answer_changed(response: CritiqueFields) -> bool:
    """Whether the canonical final answer differs from the initial one."""
    return response.final_answer != response.initial_answer
