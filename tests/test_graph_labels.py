"""Graph labels break at word boundaries (issue 47: "Expectation-maximizin" / "g" on the canvas).

:func:`wrap_label` is the only place a label is broken into lines (the browser draws the lines as
sent; tests/browser/test_fit_browser.py checks that): a line ends at a space, or after a hyphen,
dash or slash inside a word too long to keep whole; never elsewhere inside a word.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from knowsim_core.presentation.layout import LABEL_LIMIT, LABEL_WIDTH, wrap_label

BREAKS = "-–—/"


def breaks_only_at_spaces_or_after_a_break(text: str, label: str) -> bool:
    """Whether ``label`` is ``text`` with line breaks put only in place of a space, or right after
    a hyphen, dash or slash."""
    i = 0
    for k, c in enumerate(label):
        if c == "\n":
            if i < len(text) and text[i] == " ":
                i += 1
            elif not (k and label[k - 1] in BREAKS):
                return False
        elif i < len(text) and text[i] == c:
            i += 1
        else:
            return False
    return i == len(text)


def test_a_long_hyphenated_word_breaks_after_its_hyphen():
    assert wrap_label("Expectation-maximizing algorithm") == "Expectation-\nmaximizing\nalgorithm"
    assert wrap_label("Overbuilding/replacement") == "Overbuilding/\nreplacement"


def test_a_word_that_fits_a_line_is_never_split():
    # "non-overlapping" fits a line of its own: it moves down whole rather than ending a line at "non-"
    assert wrap_label("Sum rule for non-overlapping situations") == "Sum rule for\nnon-overlapping\nsituations"


def test_a_long_word_with_nowhere_to_break_keeps_its_own_line():
    assert wrap_label("Internationalization everywhere") == "Internationalization\neverywhere"


def test_a_long_concept_is_cut_at_a_word_boundary_with_an_ellipsis():
    label = wrap_label("a very long concept name that goes on and on well beyond the node width")
    assert label.endswith("…") and all(len(line) <= LABEL_WIDTH for line in label.split("\n"))
    words = "a very long concept name that goes on and on well beyond the node width".split()
    assert all(w in words for w in label.replace("\n", " ").rstrip("…").split())  # no word cut for the "…"


words = st.text(alphabet=st.sampled_from("abcdefghij-/–"), min_size=1, max_size=26)


@given(st.lists(words, min_size=1, max_size=8))
def test_lines_are_whole_words_or_end_at_a_break(parts):
    text = " ".join(parts)
    label = wrap_label(text, limit=10_000)
    assert breaks_only_at_spaces_or_after_a_break(text, label), label
    for line in label.split("\n"):
        # longer than a line only where a piece of a word had nowhere to break
        assert len(line) <= LABEL_WIDTH or (" " not in line and not any(c in line[:-1] for c in BREAKS)), label


@given(st.text(min_size=0, max_size=120))
def test_any_text_gives_a_short_label(text):
    label = wrap_label(text)
    assert len(label.replace("\n", " ")) <= LABEL_LIMIT + 1
