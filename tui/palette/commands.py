"""The command palette's pane actions (ctrl+p), named "area: action" so typing the area lists them.

Each command runs the same action as its key; commands that cannot apply right now (no tab open, a
reply streaming) are left out rather than shown and refused. `app` is tui.app.CairnApp, typed as
Textual's App: the app imports this module, so this module does not import the app back.
"""

from __future__ import annotations

from typing import Iterator

from textual.app import App, SystemCommand

from core.safe_text import printable


def pane_commands(app: App) -> Iterator[SystemCommand]:
    from tui.widgets.focus_panel import FocusPanel
    from tui.widgets.node_browser import NodeBrowser

    browser = app.query_one(NodeBrowser)
    yield SystemCommand("Nodes: search", "Put the keyboard in the search box (/)", app.action_search)
    yield SystemCommand("Nodes: quick capture", "Write a new note (ctrl+n)", app.action_quick_capture)
    yield SystemCommand("Nodes: new note in $EDITOR", "Write a new note in your editor; it opens once saved (N)",
                        app.action_new_in_editor)
    yield SystemCommand("Nodes: cycle sort", "Best match, recently updated, most connected (s)", browser.cycle_sort)
    yield SystemCommand("Nodes: cycle dimension filter", "The next #dimension (d)", browser.cycle_dimension)
    yield SystemCommand("Nodes: remember this view", "Start with this sort and #dimension filter next time "
                        "(other changes last until you quit)", browser.remember_view)

    panel = app.query_one(FocusPanel)
    view = panel.active_view
    if view is not None:
        yield SystemCommand("Focus: close tab", "Close the active tab (ctrl+w)", panel.action_close_tab)
        if len(panel.open_ids) > 1:
            yield SystemCommand("Focus: next tab", "The tab to the right (])", panel.action_next_tab)
            yield SystemCommand("Focus: previous tab", "The tab to the left ([)", panel.action_prev_tab)
        if view.node is not None and not view.editing:
            yield SystemCommand("Focus: edit node", "Edit every field of the active node (e)", panel.action_edit_node)
            yield SystemCommand("Focus: edit in $EDITOR", "The node's text in your editor (E)",
                                panel.action_edit_in_editor)
            yield SystemCommand("Focus: link to another node", "A new explained edge (ctrl+e)", panel.action_new_edge)
            yield SystemCommand("Focus: copy node text", "To the clipboard, over SSH too (c)", panel.action_copy_node)
            yield SystemCommand("Focus: picture of the neighbourhood", "The node's links two steps out, as boxes and "
                                "lines; arrows move, enter centres (g)", panel.action_neighbourhood)
            yield SystemCommand("Focus: history of this node", "Its changes: who, when, the diff; undo or revert (h)",
                                panel.action_node_history)
            for other in panel.open_ids:  # a duplicate is merged from another open tab
                other_view = panel.view(other)
                if other != view.node_id and other_view is not None and other_view.node is not None:
                    yield SystemCommand(f"Focus: merge “{printable(other_view.node['title'])}” into this node",
                                        f"Review the combined node first; {other} goes to the trash, its links move "
                                        f"here, its title becomes an alias", _merge(app, view.node_id, other))
            yield SystemCommand("Focus: integrate", "Find related nodes and propose explained links (i)",
                                panel.action_integrate)
            yield SystemCommand("Focus: link suggestions", "Link the nodes this node's text mentions (L)",
                                _link_suggestions(app, view.node_id, view.node["title"]))
            from tui.flows.unretire import commands as unretire_commands

            yield from unretire_commands(app, view)  # "Focus: un-retire", for a retired node only

    yield SystemCommand("Journal: today's note", "Add a timestamped entry to today's journal note (f4)",
                        app.action_journal_today)
    yield SystemCommand("Chat: focus the input", "Write to the chat (ctrl+l)", app.action_focus_chat)
    yield SystemCommand("Chat: new chat", "Start a new conversation (f5)", _chat_action(app, "action_new_chat"))
    yield SystemCommand("Chat: earlier chats", "Resume a conversation (ctrl+o)", _chat_action(app, "action_chat_list"))
    yield SystemCommand("Chat: regenerate the last reply", "Your last message again, for a new reply in place of "
                        "the last one (ctrl+r)", _chat_action(app, "action_regenerate"))
    yield SystemCommand("Chat: edit and resend your last message", "It comes back into the input; sending it "
                        "replaces it and its reply (up in the empty input)", _chat_action(app, "action_edit_last"))
    yield SystemCommand("Chat: undo created notes", "Trash the notes the model's latest reply created (ctrl+z)",
                        _chat_action(app, "action_undo_created"))
    yield SystemCommand("Chat: distil into notes", "Review the notes the model proposes from this chat (ctrl+t)",
                        _chat_action(app, "action_distil"))
    yield SystemCommand("Sync: conflicts", "Notes the folder and Cairn both changed: compare the two versions, "
                        "keep one (f6)", app.action_sync_conflicts)
    yield SystemCommand("Context: toggle the Settings / Context viewer", "What the next request sends (f2)",
                        app.action_toggle_viewer)
    yield SystemCommand("Panes: next pane", "Cycle Nodes, Focus, Chat (f3; narrow terminals)", app.action_cycle_pane)
    from tui.palette.skills import skill_commands

    yield from skill_commands(app)  # "Skills: <name>" starts a chat message that uses the skill
    yield SystemCommand("Help: keys for the focused pane", "Every binding with its id (f1)", app.action_help)
    from tui.flows.getting_started import load_guide

    yield SystemCommand("Help: load the Getting started graph", "A dozen linked notes that explain Cairn",
                        lambda: load_guide(app))


def _link_suggestions(app: App, node_id: int, title: str):
    def run() -> None:
        from tui.flows.link_review import open_review

        open_review(app, node_id, title, "mention")

    return run


def _chat_action(app: App, name: str):
    async def run() -> None:
        chat, _viewer = await app.right_panes()
        app._show_pane("right")
        getattr(chat, name)()

    return run


def _merge(app: App, keep_id: int, other_id: int):
    def run() -> None:
        from tui.screens.merge_review import MergeReview

        app.push_screen(MergeReview(app.services, keep_id, other_id))

    return run
