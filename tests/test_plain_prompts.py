"""A prompt with no template syntax is not handed to jinja: its text is what jinja would render."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from runner.errors import UserError
from runner.run.prompts import _compiled, render
from runner.run.templatelimits import MAX_SIZE, render_bounded


@given(st.text(st.characters(exclude_characters="{")))
@example(" line one\n\nline two \n")
@example("ends in a line break\r\n")
@example("carriage\rreturn")
@example("}} %} #} ]] -%}")
def test_a_text_without_braces_renders_as_jinja_renders_it(text: str) -> None:
    assert render(text, {"x": 1}, "cases/a.yml") == render_bounded(_compiled(text), {"x": 1}).strip()


def test_a_plain_text_past_the_size_bound_is_still_refused() -> None:
    with pytest.raises(UserError, match="more than 1,000,000 characters"):
        render("a" * (MAX_SIZE + 1), {}, "cases/a.yml")
