"""`[[links]]` in a Focus tab's text, followed: enter while reading a note, or a click on the link
(NodeView posts FollowLink; the app calls `follow_links`). The tab shows each `[[Note]]` /
`[[Note|alias]]` (core.vault.parse `wikilinks`: outside code, not embeds) as a link showing its alias,
else its target (tui/widgets/node_view.py `linkify`).

- `follow_links(app, node, links, chosen)`: the read view has no cursor, so with the keyboard on the
  tab (its strip or its read view) one link is followed at once and several are offered in a list, in
  the text's order (tui/screens/link_picker.py); a long note shown as text has a cursor: enter on a
  link follows that one (`chosen`), elsewhere the list. A click names its link.
- `follow(app, node, link)`: the node the link names (core/vault/link_target.py: the rule a vault
  import links by) opens in a tab; a link to no note asks whether to create it (an empty note with
  the link's target as its title, opened).

A link's heading (`[[Note#Heading]]`) opens the note, at its top.
"""

from __future__ import annotations

from core.safe_text import printable
from core.vault.parse import WikiLink
from tui.messages import NodesChanged, OpenNode


def follow_links(app, node: dict | None, links: tuple[WikiLink, ...], chosen: int | None) -> None:
    """The link chosen, else the only one, else the list of them (the app's FollowLink)."""
    if not links:
        app.notify("This note has no [[links]] to follow.", severity="warning", timeout=3)
        return
    if chosen is None and len(links) == 1:
        chosen = 0
    if chosen is not None:
        follow(app, node, links[chosen])
        return
    from tui.screens.link_picker import LinkPicker

    def picked(number: int | None) -> None:
        if number is not None:
            follow(app, node, links[number])

    app.push_screen(LinkPicker(links), picked)


def follow(app, node: dict | None, link: WikiLink) -> None:
    """Open the note the link names (found in a worker), or offer to create it."""
    target = link.link.target
    app.run_worker(lambda: _find(app, node, target), thread=True, group="follow-link", exclusive=True,
                   exit_on_error=False, name="follow a link")


def _find(app, node: dict | None, target: str) -> None:
    from core.vault.link_target import node_for

    with app.services.store() as store:
        found = node_for(store, target, node)
        title = store.get_node(found)["title"] if found is not None else ""
    if found is not None:
        app.call_from_thread(app.post_message, OpenNode(found, title))
    else:
        app.call_from_thread(_offer_to_create, app, target)


def _offer_to_create(app, target: str) -> None:
    from tui.screens.confirm import ConfirmScreen

    def answered(create: bool | None) -> None:
        if create:
            app.run_worker(lambda: _create(app, target), thread=True, group="follow-link", exit_on_error=False,
                           name="create the linked note")

    app.push_screen(ConfirmScreen(f"There is no note “{target}”. Create it (an empty note with that title) and "
                                  "open it?", yes="Create", no="Cancel", default=True), answered)


def _create(app, target: str) -> None:
    with app.services.store() as store:
        node = store.add_node(target, "")
    app.call_from_thread(app.post_message, NodesChanged((node["id"],)))
    app.call_from_thread(app.post_message, OpenNode(node["id"], node["title"]))
    app.call_from_thread(app.notify, f"Created “{printable(node['title'])}”; e writes its text.", markup=False,
                         timeout=3)
