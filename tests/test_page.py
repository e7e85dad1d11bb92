"""render/page.py: how a page's flow is cut into its three columns (no WeasyPrint here)."""

from __future__ import annotations

from ledger_report.render import page as pg


def _sizes(cols):
    return [[(s, len(idx)) for s, idx in col] for col in cols]


def test_whole_sections_go_to_columns_in_reading_order():
    """Two sections of three 10 px items, each heading 5 px, in three 40 px columns: whole, each
    35 px (hand sum 5 + 3 × 10), 5 px to spare against 1.6 px asked (4 % of 40); the earlier
    columns filled first, the last left empty (no gap between sections)."""
    cols = pg.cut([10.0] * 6, [0, 0, 0, 1, 1, 1], [5.0, 5.0], [40.0, 40.0, 40.0])
    assert _sizes(cols) == [[(0, 3)], [(1, 3)], []]
    assert pg.heights_of(cols, [10.0] * 6, [5.0, 5.0]) == [35.0, 35.0, 0.0]


def test_a_section_too_long_for_a_column_is_split_with_its_heading_repeated():
    """One section of eight 10 px items (heading 5 px) in three 30 px columns: a column holds at
    most two items with its heading (5 + 20 = 25; three would be 35), so no cut fits; the one
    whose fullest column overflows least is 3 + 3 + 2 items, 35, 35 and 25 px (each piece
    repeats the 5 px heading): 5 px over, where 4 + 2 + 2 would be 15 px over."""
    cols = pg.cut([10.0] * 8, [0] * 8, [5.0], [30.0, 30.0, 30.0])
    assert _sizes(cols) == [[(0, 3)], [(0, 3)], [(0, 2)]]
    assert pg.heights_of(cols, [10.0] * 8, [5.0]) == [35.0, 35.0, 25.0]


def test_a_heading_never_stands_with_one_item_at_a_columns_foot_when_room_allows():
    """Sections of 1 and 3 items (10 px each, headings 5 px) in columns of 30, 30 and 60 px: the
    cut that splits nothing puts the second section (35 px) in the 60 px column, 15 px in the
    first; cutting the second section after its first item (5 + 10 = 15 px over the first
    section's) would split it, with its heading over one item, so it is not taken."""
    heights, secs, over = [10.0] * 4, [0, 1, 1, 1], [5.0, 5.0]
    cols = pg.cut(heights, secs, over, [30.0, 30.0, 60.0])
    assert all(len(idx) != 1 or secs.count(s) == 1 for col in cols for s, idx in col)
    assert sum(1 for col in cols for s, _ in col if s == 1) == 1  # the section is whole
