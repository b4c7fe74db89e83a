"""The picture of a node's neighbourhood: the rings (core/graph/neighbourhood.py), the drawing
(tui/widgets/neighbourhood_map.py) and the screen (g in Focus)."""

from __future__ import annotations

import pytest

from core.graph.neighbourhood import neighbourhood
from tui.widgets import neighbourhood_map as picture


@pytest.fixture
def coffee(store):
    titles = ["Espresso ratios", "Grinder settings", "Water chemistry", "Reading list", "Burr sizes", "Scale",
              "Beans", "Roast dates", "Tea"]
    ids = {t: store.add_node(t, "x")["id"] for t in titles}

    def link(a, b, why):
        store.add_edge(ids[a], ids[b], why)

    link("Espresso ratios", "Grinder settings", "The ratio only holds at the right grind.")
    link("Water chemistry", "Espresso ratios", "Water hardness changes the extraction.")
    link("Beans", "Espresso ratios", "Fresh beans extract evenly.")
    link("Espresso ratios", "Reading list", "Books on espresso.")
    link("Reading list", "Espresso ratios", "The list points back.")
    link("Grinder settings", "Burr sizes", "Burrs set the range.")
    link("Scale", "Water chemistry", "Hard water leaves scale.")
    link("Roast dates", "Beans", "Roast age matters.")
    link("Grinder settings", "Tea", "Tea wants a coarse grind.")
    link("Tea", "Beans", "Both are brewed.")  # Tea: two links away both ways; the in side is looked at first
    return ids


def test_the_rings_put_each_node_once_on_the_side_its_edge_points(store, coffee):
    hood = neighbourhood(store, coffee["Espresso ratios"])
    side = {n.title: s for s in ("in", "out") for n in hood.ring1[s]}
    assert side == {"Water chemistry": "in", "Beans": "in", "Grinder settings": "out", "Reading list": "out"}
    assert next(n for n in hood.ring1["out"] if n.title == "Reading list").both
    two = {n.title: (s, n.parent) for s in ("in", "out") for n in hood.ring2[s]}
    assert two == {"Burr sizes": ("out", coffee["Grinder settings"]), "Tea": ("in", coffee["Beans"]),
                   "Scale": ("in", coffee["Water chemistry"]), "Roast dates": ("in", coffee["Beans"])}
    assert hood.through == {coffee["Beans"]: 2, coffee["Water chemistry"]: 1, coffee["Grinder settings"]: 1}


def test_the_rings_are_capped_and_count_what_they_leave_out(store):
    hub = store.add_node("Hub", "x")["id"]
    for i in range(7):
        store.add_edge(hub, store.add_node(f"Spoke {i}", "x")["id"], "a spoke")
    hood = neighbourhood(store, hub, ring1_max=5)
    assert len(hood.ring1["out"]) == 5 and hood.more1["out"] == 2


def rows(lines) -> list[str]:
    return [line.plain for line in lines]


@pytest.mark.parametrize("width, height, wide", [(76, 16, False), (126, 30, True)])
def test_every_box_is_drawn_whole_inside_the_canvas_and_none_overlap(store, coffee, width, height, wide):
    hood = neighbourhood(store, coffee["Espresso ratios"])
    lines, placed = picture.draw(hood, width, height)
    text = rows(lines)
    assert len(text) == height and all(len(r) == width for r in text)
    assert {p.column for p in placed} == ({"in2", "in1", "center", "out1", "out2"} if wide else {"in1", "center", "out1"})
    for p in placed:
        assert text[p.y][p.x] == "┌" and text[p.y][p.x + p.width - 1] == "┐"
        assert text[p.y + 2][p.x] == "└" and text[p.y + 2][p.x + p.width - 1] == "┘"
        assert p.label in text[p.y + 1]
    cells = [(x, y) for p in placed for x in range(p.x, p.x + p.width) for y in range(p.y, p.y + 3)]
    assert len(cells) == len(set(cells))


def test_arrows_point_the_way_the_edges_do(store, coffee):
    hood = neighbourhood(store, coffee["Espresso ratios"])
    lines, placed = picture.draw(hood, 76, 16)
    text = rows(lines)
    center = next(p for p in placed if p.column == "center")
    assert text[center.mid][center.x - 1] == "►"  # the in side's edges come to the centre
    for p in placed:
        if p.column == "out1":
            assert text[p.mid][p.x - 1] == "►"  # and the out side's leave it
    assert "Beans +2" in text[next(p for p in placed if p.node_id == coffee["Beans"]).mid]
    assert "⇄" in text[next(p for p in placed if p.node_id == coffee["Reading list"]).mid]


def test_the_highlighted_box_is_reversed_and_described(store, coffee):
    hood = neighbourhood(store, coffee["Espresso ratios"])
    placed = picture.layout(hood, 76, 16)
    water = next(i for i, p in enumerate(placed) if p.node_id == coffee["Water chemistry"])
    lines, placed = picture.draw(hood, 76, 16, selected=water)
    row = lines[placed[water].mid]
    assert any("reverse" in str(span.style) for span in row.spans)
    said = picture.describe(hood, placed[water])
    assert said == ("Water chemistry → Espresso ratios: “Water hardness changes the extraction.” · beyond it: 1 more "
                    "two links out (enter centres on it)")
    center = next(p for p in placed if p.column == "center")
    assert picture.describe(hood, center) == ("Espresso ratios — 4 neighbours: 2 linking in, 2 linked to (1 of them "
                                              "linked both ways, drawn on the right ⇄); 4 nodes two links away.")


def test_a_crowded_column_ends_in_a_more_box(store):
    hub = store.add_node("Hub", "x")["id"]
    for i in range(9):
        store.add_edge(store.add_node(f"Source {i}", "x")["id"], hub, "feeds the hub")
    hood = neighbourhood(store, hub)
    lines, placed = picture.draw(hood, 76, 12)  # room for 4 boxes a column
    column = [p for p in placed if p.column == "in1"]
    assert len(column) == 4 and column[-1].node is None and column[-1].label == "+6 more"
    assert "+6 more" in rows(lines)[column[-1].mid]


async def test_g_draws_the_picture_and_the_keys_move_centre_and_open(store, db_path, coffee):
    from tui.app import CairnApp
    from tui.screens.neighbourhood import NeighbourhoodMap, NeighbourhoodScreen
    from tui.widgets.focus_panel import FocusPanel
    from tui_support import settle, wait_for

    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.right_panes()
        panel = app.query_one(FocusPanel)
        panel.open_node(coffee["Espresso ratios"])
        await wait_for(pilot, lambda: panel.active_view is not None and panel.active_view.node is not None,
                       what="the node to open")
        panel.strip.focus()
        await pilot.press("g")
        await wait_for(pilot, lambda: isinstance(app.screen, NeighbourhoodScreen)
                       and app.screen.query_one(NeighbourhoodMap).hood is not None, what="the picture")
        screen = app.screen
        drawing = screen.query_one(NeighbourhoodMap)
        edge_text = lambda: str(screen.query_one("#map-edge").render())
        assert edge_text().startswith("Espresso ratios — ")
        await pilot.press("left")
        assert drawing.current.column == "in1" and "→ Espresso ratios" in edge_text()
        await pilot.press("right", "right")
        assert drawing.current.column == "out1"
        target = drawing.current.node_id
        await pilot.press("enter")
        await wait_for(pilot, lambda: drawing.hood.center["id"] == target, what="the picture centred anew")
        await pilot.press("backspace")
        await wait_for(pilot, lambda: drawing.hood.center["id"] == coffee["Espresso ratios"], what="back")
        await pilot.press("left", "o")
        opened = drawing.current.node_id
        await wait_for(pilot, lambda: not isinstance(app.screen, NeighbourhoodScreen) and panel.primary == opened,
                       what="the node opened in a tab")
        await settle(app, pilot)
