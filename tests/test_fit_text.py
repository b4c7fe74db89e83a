"""Issue 26 item 3, the rules on their own: text cut at a word with an ellipsis (tui/fit_text.py), Focus
tab labels that tell similar titles apart (tui/tab_labels.py), the footer's choice of keys
(tui/widgets/footer.py) and the help table's column widths (tui/screens/help.py)."""

from __future__ import annotations

from rich.cells import cell_len

from tui.fit_text import clip_lines, shorten, wrap
from tui.screens.help import column_widths
from tui.tab_labels import TAB_LABEL_WIDTH, tab_labels
from tui.widgets.footer import fitting

SCHEDULE, LOG = "Sourdough starter feeding schedule", "Sourdough starter feeding log"


# -- shorten, wrap, clip_lines ---------------------------------------------------------------------------
def test_shorten_keeps_what_fits_and_cuts_at_a_word_with_an_ellipsis():
    assert shorten("Espresso ratios", 24) == "Espresso ratios"
    assert shorten("  Espresso\n ratios ", 24) == "Espresso ratios"  # one line, spaces collapsed
    assert shorten(SCHEDULE, 24) == "Sourdough starter…"  # not "Sourdough starter feedi…"
    assert shorten("Supercalifragilisticexpialidocious", 10) == "Supercali…"  # one long word: cut inside it
    assert shorten("A tremendously long word", 12) == "A tremendou…"  # a word cut would keep too little
    assert shorten("東京の喫茶店のエスプレッソ", 10) == "東京の喫…"  # wide characters count two cells
    for width in range(1, 40):
        assert cell_len(shorten(SCHEDULE + " for the winter", width)) <= width


def test_wrap_breaks_at_spaces_and_splits_only_a_word_longer_than_a_line():
    assert wrap("the ratio only holds at the right grind", 16) == ["the ratio only", "holds at the", "right grind"]
    assert wrap("a " + "x" * 12 + " b", 5) == ["a", "xxxxx", "xxxxx", "xx b"]


def test_clip_lines_ends_the_last_line_at_a_whole_word_with_an_ellipsis():
    text = "Water hardness changes the extraction, and soft water keeps the machine free of scale for years."
    assert clip_lines(text, 100, 2) == [text]  # fits: untouched
    assert " ".join(clip_lines(text, 80, 2)) == text  # two lines, whole
    lines = clip_lines(text, 30, 2)
    assert lines == ["Water hardness changes the", "extraction, and soft water…"]
    words = text.split()
    shown = " ".join(lines)[:-1].split()
    assert shown == words[:len(shown)]  # whole words, in order, nothing invented
    assert all(cell_len(line) <= 30 for line in lines)
    # a last line filled to the width gives back its last word for the ellipsis
    assert clip_lines("aaaa bbbb cccc dddd", 9, 1) == ["aaaa…"]
    assert clip_lines("aaaaaaaaaaaa", 5, 1) == ["aaaa…"]


# -- Focus tab labels ------------------------------------------------------------------------------------
def test_titles_that_shorten_alike_show_where_they_differ():
    assert tab_labels([SCHEDULE, LOG, "Espresso ratios"]) == ["…feeding schedule", "…feeding log", "Espresso ratios"]
    # alone, each shows its start
    assert tab_labels([SCHEDULE]) == ["Sourdough starter…"]
    assert tab_labels([LOG, "Espresso ratios"]) == ["Sourdough starter…", "Espresso ratios"]


def test_one_title_the_start_of_another_and_groups_that_split_in_two_rounds():
    assert tab_labels(["Sourdough starter feeding", LOG]) == ["…feeding", "…feeding log"]
    winter = "Sourdough starter feeding schedule for the winter months"
    summer = "Sourdough starter feeding schedule for the summer months"
    assert tab_labels([winter, summer, LOG]) == ["…the winter months", "…the summer months", "…feeding log"]


def test_titles_without_spaces_where_they_differ_and_titles_that_are_the_same():
    assert tab_labels(["Supercalifragilisticexpialidocious1", "Supercalifragilisticexpialidocious2"]) == [
        "…ous1", "…ous2"]
    assert tab_labels(["東京の喫茶店のエスプレッソの比率について", "東京の喫茶店のエスプレッソの比率について2"]) == [
        "…ついて", "…ついて2"]
    same = "A very long title about sourdough baking"
    assert tab_labels([same, same]) == ["A very long title…", "A very long title…"]  # nothing tells them apart
    assert tab_labels(["", "  "]) == ["Untitled", "Untitled"]


def test_every_label_fits_the_width_and_different_titles_get_different_labels():
    titles = [SCHEDULE, LOG, "Sourdough starter feeding schedule for the winter months",
              "Sourdough starter feeding schedule for the summer months", "Meeting notes 2024-03-01 with the team",
              "Meeting notes 2024-03-02 with the team", "Espresso ratios", "Grinder settings"]
    labels = tab_labels(titles)
    assert all(cell_len(label) <= TAB_LABEL_WIDTH for label in labels)
    assert len(set(labels)) == len(titles)


# -- the footer's keys -----------------------------------------------------------------------------------
def test_the_footer_keeps_help_and_next_pane_then_the_panes_keys_then_the_apps():
    # the Focus pane at 80 columns: 80 cells less the palette key's 12
    keys = [("close_tab", False, 14), ("prev_tab", False, 12), ("next_tab", False, 12), ("edit_node", False, 8),
            ("new_edge", False, 9), ("copy_node", False, 8), ("quit", True, 9), ("search_nodes", True, 10),
            ("quick_capture", True, 13), ("focus_chat", True, 9), ("toggle_viewer", True, 13),
            ("cycle_pane", True, 15), ("help", True, 10)]
    shown = [keys[i][0] for i in sorted(fitting(keys, 68))]
    assert shown == ["close_tab", "edit_node", "new_edge", "copy_node", "cycle_pane", "help"]
    assert sum(keys[i][2] for i in fitting(keys, 68)) <= 68
    everything = fitting(keys, 200)
    assert everything == set(range(len(keys)))
    # a shorter key further down the order takes room a longer one could not use
    assert [keys[i][0] for i in sorted(fitting(keys, 68 + 12))] == [
        "close_tab", "prev_tab", "edit_node", "new_edge", "copy_node", "cycle_pane", "help"]


# -- the help table's columns ----------------------------------------------------------------------------
def test_help_columns_keep_every_id_whole_and_wrap_the_action():
    rows = [("Chat", "ctrl+j, alt+enter", "Send", "send_message"),
            ("Chat", "ctrl+r", "Regenerate the last reply", "regenerate_reply"),
            ("everywhere", "f3", "Next pane", "cycle_pane"),
            ("Chat", "escape", "Skip check", "skip_citation_check")]
    where, keys, action, ident = column_widths(rows, 70)
    assert (where, keys, ident) == (10, 17, 19)  # whole
    assert action == 70 - 8 - where - keys - ident == 16  # the rest; "Regenerate the last reply" wraps
    assert column_widths(rows, 200) == [10, 17, 25, 19]  # wide: every column its content's width
    narrow = column_widths(rows, 50)
    assert narrow[3] == 19 and narrow[0] == 10  # never an id cut
    assert narrow[1] < 17 and narrow[2] >= 12  # the keys wrap before the action gets too thin
