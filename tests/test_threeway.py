"""The three-way merge of a vault note (core/vault/threeway.py): body by lines, frontmatter by field."""

from __future__ import annotations

from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st

from core.vault.threeway import FieldMerge, TextMerge, merge_fields, merge_text

BASE = "# Sleep\n\nEight hours.\nDark rooms help.\nNo screens late.\nWake at seven.\n"


def test_trivial_cases_take_the_side_that_changed():
    changed = BASE.replace("Eight", "Nine")
    assert merge_text(BASE, BASE, changed) == TextMerge(changed, True, 0)
    assert merge_text(BASE, changed, BASE) == TextMerge(changed, True, 0)
    assert merge_text(BASE, changed, changed) == TextMerge(changed, True, 0)
    assert merge_text(BASE, BASE, BASE) == TextMerge(BASE, True, 0)


def test_edits_to_different_lines_are_both_kept():
    ours = BASE.replace("Eight hours.", "Nine hours.")
    theirs = BASE.replace("Wake at seven.", "Wake at six.") + "See [[Rest]].\n"
    assert merge_text(BASE, ours, theirs) == TextMerge(
        "# Sleep\n\nNine hours.\nDark rooms help.\nNo screens late.\nWake at six.\nSee [[Rest]].\n", True, 0)


def test_a_deletion_and_an_edit_elsewhere_are_both_kept():
    ours = BASE.replace("Dark rooms help.\n", "")
    theirs = BASE.replace("# Sleep", "# Sleeping well")
    assert merge_text(BASE, ours, theirs).text == (
        "# Sleeping well\n\nEight hours.\nNo screens late.\nWake at seven.\n")


def test_the_same_change_on_both_sides_is_no_conflict():
    both = BASE.replace("Dark rooms", "Cool, dark rooms")
    ours = both.replace("# Sleep", "# Sleeping")  # and one more edit of Cairn's, elsewhere
    theirs = both + "Added on the phone.\n"
    merged = merge_text(BASE, ours, theirs)
    assert merged == TextMerge(
        "# Sleeping\n\nEight hours.\nCool, dark rooms help.\nNo screens late.\nWake at seven.\nAdded on the phone.\n",
        True, 0)


def test_overlapping_edits_conflict_and_the_file_wins():
    ours = BASE.replace("Eight hours.", "Nine hours.")
    theirs = BASE.replace("Eight hours.", "Seven hours.")
    assert merge_text(BASE, ours, theirs) == TextMerge(theirs, False, 1)


def test_conflicts_counts_each_region_and_a_clean_edit_beside_them_is_not_merged():
    ours = BASE.replace("# Sleep", "# Ours").replace("Wake at seven.", "Ours wakes.").replace("Dark", "Black")
    theirs = BASE.replace("# Sleep", "# Theirs").replace("Wake at seven.", "Theirs wakes.")
    assert merge_text(BASE, ours, theirs) == TextMerge(theirs, False, 2)


def test_edits_to_adjacent_lines_conflict_as_in_git():
    """diff3 needs an unchanged line between two edits to tell them apart (git merges the same way)."""
    ours = BASE.replace("Eight hours.", "Nine hours.")
    theirs = BASE.replace("Dark rooms help.", "Dark rooms help a lot.")
    assert merge_text(BASE, ours, theirs) == TextMerge(theirs, False, 1)


def test_insertions_at_the_same_place_conflict():
    ours = BASE + "From Cairn.\n"
    theirs = BASE + "From the phone.\n"
    assert merge_text(BASE, ours, theirs) == TextMerge(theirs, False, 1)


def test_a_line_deleted_on_one_side_and_edited_on_the_other_conflicts():
    ours = BASE.replace("Dark rooms help.\n", "")
    theirs = BASE.replace("Dark rooms help.", "Dark rooms help most.")
    assert merge_text(BASE, ours, theirs) == TextMerge(theirs, False, 1)


def test_both_sides_writing_into_an_empty_note_conflict_unless_the_same():
    assert merge_text("", "Cairn's\n", "the phone's\n") == TextMerge("the phone's\n", False, 1)
    assert merge_text("", "same\n", "same\n") == TextMerge("same\n", True, 0)
    assert merge_text("text\n", "", "text\nmore\n") == TextMerge("text\nmore\n", False, 1)


def test_crlf_and_mixed_line_endings_are_kept_byte_for_byte():
    base = BASE.replace("\n", "\r\n")
    ours = base.replace("Eight", "Nine")
    theirs = base.replace("Wake at seven.\r\n", "Wake at seven.\r\nA line from a unix editor.\n")
    assert merge_text(base, ours, theirs).text == (
        "# Sleep\r\n\r\nNine hours.\r\nDark rooms help.\r\nNo screens late.\r\nWake at seven.\r\n"
        "A line from a unix editor.\n")


def test_changing_only_a_line_ending_is_an_edit():
    base = "a\r\nb\r\nc\r\nd\r\n"
    ours = "a\nb\r\nc\r\nd\r\n"  # an editor rewrote the first line's ending
    theirs = "a\r\nb\r\nc\r\nD\r\n"
    assert merge_text(base, ours, theirs) == TextMerge("a\nb\r\nc\r\nD\r\n", True, 0)
    assert merge_text(base, ours, "a\r\nb\r\n") == TextMerge("a\nb\r\n", True, 0)
    assert merge_text(base, ours, "A\r\nb\r\nc\r\nd\r\n") == TextMerge("A\r\nb\r\nc\r\nd\r\n", False, 1)


def test_appending_to_a_note_without_a_final_newline_leaves_its_last_line_alone():
    base = "one\ntwo\nthree"
    ours = "ONE\ntwo\nthree"
    assert merge_text(base, ours, "one\ntwo\nthree\nfour") == TextMerge("ONE\ntwo\nthree\nfour", True, 0)
    assert merge_text(base, ours, "one\ntwo\nthree\n") == TextMerge("ONE\ntwo\nthree\n", True, 0)
    assert merge_text("one\ntwo\nthree\n", "ONE\ntwo\nthree\n", "one\ntwo\nthree") == TextMerge(
        "ONE\ntwo\nthree", True, 0)
    assert merge_text(base, "one\ntwo", "ONE\ntwo\nthree") == TextMerge("ONE\ntwo", True, 0)


def test_a_final_newline_added_on_one_side_and_the_last_line_edited_on_the_other_conflicts():
    base = "one\ntwo\nthree"
    assert merge_text(base, "one\ntwo\nthree\n", "one\ntwo\nTHREE") == TextMerge("one\ntwo\nTHREE", False, 1)


def test_unicode_and_unusual_separators_are_kept_exactly():
    base = "Café ☕\nnaïve\u0301 line\nemoji 🧠 here\nform\x0cfeed and\u2028separator\nold mac\rline\n"
    ours = base.replace("Café", "Caffè")
    theirs = base.replace("emoji 🧠 here\n", "emoji 🧠 here\n👍🏽 agreed\n")
    merged = merge_text(base, ours, theirs)
    assert merged == TextMerge(
        "Caffè ☕\nnaïve\u0301 line\nemoji 🧠 here\n👍🏽 agreed\nform\x0cfeed and\u2028separator\nold mac\rline\n",
        True, 0)


def test_a_long_note_with_many_blank_lines_merges_edits_a_blank_line_apart():
    """merge3's default matcher (difflib with autojunk) cannot anchor on lines this common."""
    lines = []
    for i in range(30):
        lines += [f"# Heading {i}\n"] + ["\n"] * 9
    ours, theirs = list(lines), list(lines)
    ours[100], ours[110] = "Cairn's first\n", "Cairn's second\n"
    theirs[105:105] = ["The file's\n"]
    expected = list(ours)
    expected[105:105] = ["The file's\n"]
    assert merge_text("".join(lines), "".join(ours), "".join(theirs)) == TextMerge("".join(expected), True, 0)


# ---- frontmatter --------------------------------------------------------------------------------

def test_fields_changed_added_or_removed_on_one_side_take_that_side():
    base = {"title": "Sleep", "tags": ["health"], "aliases": ["Slumber"], "status": "draft"}
    ours = {"title": "Sleep well", "tags": ["health"], "aliases": ["Slumber"], "status": "draft", "link": "https://x.org"}
    theirs = {"title": "Sleep", "tags": ["health", "rest"], "status": "draft"}
    assert merge_fields(base, ours, theirs) == FieldMerge(
        {"title": "Sleep well", "tags": ["health", "rest"], "status": "draft", "link": "https://x.org"}, ())
    assert merge_fields(base, {k: v for k, v in base.items() if k != "status"}, base).fields == {
        "title": "Sleep", "tags": ["health"], "aliases": ["Slumber"]}


def test_the_same_field_change_on_both_sides_is_no_conflict():
    base = {"title": "Sleep", "date": date(2024, 5, 1)}
    both = {"title": "Sleep", "date": date(2024, 6, 1), "tags": ["a", "b"]}
    merged = merge_fields(base, dict(both), dict(both))
    assert merged == FieldMerge(both, ()) and merged.clean


def test_a_field_changed_differently_on_both_sides_keeps_the_files_value():
    base = {"title": "Sleep", "tags": ["health"], "status": "draft", "extra": 1}
    ours = {"title": "Sleep (Cairn)", "tags": ["health"], "status": "done"}  # extra removed
    theirs = {"title": "Sleep (phone)", "tags": ["health", "rest"], "extra": 2}  # status removed
    merged = merge_fields(base, ours, theirs)
    assert merged == FieldMerge({"title": "Sleep (phone)", "tags": ["health", "rest"], "extra": 2},
                                ("title", "extra", "status"))
    assert not merged.clean


def test_a_key_both_sides_added_with_different_values_conflicts():
    assert merge_fields({}, {"rating": 4}, {"rating": 5}) == FieldMerge({"rating": 5}, ("rating",))


def test_key_order_is_the_files_then_the_keys_only_cairn_added():
    base = {"a": 1, "b": 2, "c": 3}
    ours = {"z": 0, "c": 3, "a": 10, "y": 0, "b": 2}
    theirs = {"c": 3, "x": 9, "b": 2, "a": 1}
    merged = merge_fields(base, ours, theirs)
    assert list(merged.fields) == ["c", "x", "b", "a", "z", "y"]
    assert merged.fields == {"c": 3, "x": 9, "b": 2, "a": 10, "z": 0, "y": 0}


def test_field_values_compare_as_yaml_values():
    """Python says 1 == 1.0 == True; in a note they are different values, and a change between them is kept."""
    assert merge_fields({"draft": 1}, {"draft": True}, {"draft": 1}).fields == {"draft": True}
    assert merge_fields({"n": 1}, {"n": 1}, {"n": 1.0}).fields["n"] == 1.0
    assert type(merge_fields({"n": 1}, {"n": 1}, {"n": 1.0}).fields["n"]) is float
    assert merge_fields({"v": [1, 2]}, {"v": [1, True]}, {"v": [1, 2], "w": 0}) == FieldMerge(
        {"v": [1, True], "w": 0}, ())
    nan = float("nan")
    merged = merge_fields({"x": nan, "y": 1}, {"x": float("nan"), "y": 2}, {"x": float("nan"), "y": 1})
    assert merged.conflicts == () and merged.fields["y"] == 2
    nested = {"meta": {"a": 1, "b": [1, {"c": None}]}}
    assert merge_fields(nested, {"meta": {"b": [1, {"c": None}], "a": 1}}, {"meta": {"a": 1, "b": [1, {"c": None}]}}).clean


# ---- properties ---------------------------------------------------------------------------------

PROPERTY = settings(max_examples=300, deadline=None)


@st.composite
def base_text(draw, min_size=0):
    """A base note: distinct lines, one line ending throughout, with or without a final newline."""
    lines = [f"base {n} é🧠" for n in draw(st.lists(st.integers(0, 999), unique=True, min_size=min_size, max_size=30))]
    sep = draw(st.sampled_from(["\n", "\r\n"]))
    final = draw(st.booleans())
    return lines, sep, final


def render(lines, sep, final):
    text = "".join(line + sep for line in lines)
    return text if final or not lines else text[: -len(sep)]


def fresh(draw, tag, low=0):
    return [f"{tag} {i}" for i in range(draw(st.integers(low, 3)))]


def apply(lines, start, end, new):
    return lines[:start] + new + lines[end:]


@st.composite
def disjoint_edits(draw):
    """Edits of both sides with at least one unchanged base line between them."""
    lines, sep, final = draw(base_text(min_size=1))
    n = len(lines)
    # one edit replaces [s1, e1), the other [s2, e2), with e1 < s2: base line e1 stays between them
    s1 = draw(st.integers(0, n - 1))
    e1 = draw(st.integers(s1, n - 1))
    s2 = draw(st.integers(e1 + 1, n))
    e2 = draw(st.integers(s2, n))
    ours_new = fresh(draw, "ours", low=0 if e1 > s1 else 1)
    theirs_new = fresh(draw, "theirs", low=0 if e2 > s2 else 1)
    edits = [(s1, e1, ours_new), (s2, e2, theirs_new)]
    if draw(st.booleans()):
        edits = [(s2, e2, ours_new), (s1, e1, theirs_new)]  # Cairn's edit after the file's
    ours = apply(lines, *edits[0])
    theirs = apply(lines, *edits[1])
    later, earlier = sorted(edits, reverse=True)
    expected = apply(apply(lines, *later), *earlier)
    return [render(x, sep, final) for x in (lines, ours, theirs, expected)]


@given(disjoint_edits())
@PROPERTY
def test_property_edits_apart_merge_cleanly_with_both_in_full(case):
    base, ours, theirs, expected = case
    assert merge_text(base, ours, theirs) == TextMerge(expected, True, 0)
    assert merge_text(base, theirs, ours) == TextMerge(expected, True, 0)  # both devices reach the same text


@st.composite
def overlapping_edits(draw):
    """Edits of both sides that overlap or touch (no unchanged line between), never the same edit."""
    lines, sep, final = draw(base_text())
    n = len(lines)
    s1 = draw(st.integers(0, n))
    e1 = draw(st.integers(s1, n))
    s2 = draw(st.integers(max(0, s1 - 3), e1))  # starts before or inside ours, or right after it
    e2 = draw(st.integers(max(s2, s1), n))  # ends at or after ours' start
    ours_new = fresh(draw, "ours", low=0 if e1 > s1 else 1)
    theirs_new = fresh(draw, "theirs", low=0 if e2 > s2 else 1)
    if not ours_new and not theirs_new and (s1, e1) == (s2, e2):
        theirs_new = ["theirs"]  # the same deletion on both sides is the same edit, not a conflict
    ours, theirs = apply(lines, s1, e1, ours_new), apply(lines, s2, e2, theirs_new)
    if draw(st.booleans()):
        ours, theirs = theirs, ours
    return [render(x, sep, final) for x in (lines, ours, theirs)]


@given(overlapping_edits())
@PROPERTY
def test_property_overlapping_edits_conflict_and_the_file_wins(case):
    base, ours, theirs = case
    assert merge_text(base, ours, theirs) == TextMerge(theirs, False, 1)


@st.composite
def random_edits(draw):
    """Any number of edits on each side, anywhere: kept, deleted, replaced lines and insertions."""
    lines, sep, final = draw(base_text())
    sides = []
    for tag in ("ours", "theirs"):
        out, count = [], 0
        for line in [*lines, None]:
            for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):  # insertions before this line
                out.append(f"{tag} {count}")
                count += 1
            if line is not None and draw(st.sampled_from(["keep"] * 6 + ["delete", "replace"])) != "delete":
                out.append(line)  # a replace is a delete plus the insertion before the next line
        sides.append(out)
    return lines, sides[0], sides[1], sep, final


@given(random_edits())
@settings(max_examples=400, deadline=None)
def test_property_a_merge_is_never_lossy(case):
    base, ours, theirs, sep, final = case
    merged = merge_text(*(render(x, sep, final) for x in (base, ours, theirs)))
    if not merged.clean:
        assert merged.text == render(theirs, sep, final) and merged.conflicts >= 1
        return
    assert merged.conflicts == 0
    result = merged.text.split(sep)
    if result[-1] == "":
        result.pop()
    b, o, t, r = set(base), set(ours), set(theirs), set(result)
    assert len(r) == len(result)  # no line twice
    assert (o - b) <= r and (t - b) <= r  # every line either side added is there
    assert not ((b - o) & r) and not ((b - t) & r)  # every line either side deleted is gone
    assert r == (b & o & t) | (o - b) | (t - b)  # and nothing else was lost or made up
    for side in (ours, theirs):  # each side's lines keep their order
        assert [line for line in result if line in set(side)] == [line for line in side if line in r]
    swapped = merge_text(*(render(x, sep, final) for x in (base, theirs, ours)))
    assert swapped == merged  # the other device, whose "ours" is this one's "theirs", gets the same text


VALUES = st.one_of(st.none(), st.booleans(), st.integers(0, 2), st.sampled_from(["a", "b"]),
                   st.lists(st.integers(0, 1), max_size=2))
FIELDS = st.dictionaries(st.sampled_from(list("pqrstu")), VALUES, max_size=6)


@given(FIELDS, FIELDS, FIELDS)
@settings(max_examples=300, deadline=None)
def test_property_fields_merge_key_by_key(base, ours, theirs):
    merged = merge_fields(base, ours, theirs)
    absent = object()
    for key in {*base, *ours, *theirs}:
        b, o, t = base.get(key, absent), ours.get(key, absent), theirs.get(key, absent)
        got = merged.fields.get(key, absent)
        same = lambda x, y: x is y or (type(x) is type(y) and x == y)  # noqa: E731 (values here hold no nan)
        if same(o, b):
            assert same(got, t) and key not in merged.conflicts
        elif same(t, b) or same(o, t):
            assert same(got, o) and key not in merged.conflicts
        else:
            assert same(got, t) and key in merged.conflicts
    only_cairn = [k for k in ours if k not in base and k not in theirs]
    assert list(merged.fields) == [k for k in theirs if k in merged.fields] + only_cairn


TEXT = st.text(alphabet="ab é\r\n", max_size=24)  # stray \r, blank and repeated lines, no final newline


@given(TEXT, TEXT, TEXT, TEXT)
@PROPERTY
def test_property_any_text_either_side_of_an_unchanged_line_merges_exactly(before, ours_before, after, theirs_after):
    base = before + "\n---\n" + after
    ours = ours_before + "\n---\n" + after
    theirs = before + "\n---\n" + theirs_after
    assert merge_text(base, ours, theirs) == TextMerge(ours_before + "\n---\n" + theirs_after, True, 0)
