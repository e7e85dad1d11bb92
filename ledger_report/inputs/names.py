"""Header names: a column's own name, or a name the ecosystem writes for it (``config.ALIAS_TABLE``),
and for a name that is neither, a hint that never points at a column of another meaning."""

from __future__ import annotations

import difflib
import re

from ..config import ALIAS_BY_KEY, COLUMN_NAMES, NOT_COLUMNS, header_key

# Words that add no meaning to a name ("num_layers" is "layers", "tp_size" is "tp").
_FILLER = frozenset({"size", "degree", "num", "n", "of", "per", "total", "count", "number"})
# name or alias -> the column it means (an alias's key is never a column's name)
_CANDIDATES = {**{n: n for n in COLUMN_NAMES}, **{k: a.column for k, a in ALIAS_BY_KEY.items()}}


def column_of(key: str) -> str | None:
    """The column a header names (``key``: the name normalised and case-folded), or None."""
    return _CANDIDATES.get(header_key(key))


def _distance(a: str, b: str) -> int:
    """Edits (insert, delete, replace, swap two neighbours) from one word to the other."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            cost = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, prev2[j - 2] + 1)
            row.append(cost)
        prev2, prev = prev, row
    return prev[-1]


def _word_matches(a: str, b: str) -> bool:
    """One word standing for another: the same, one a prefix of the other (seq, sequence), or a
    typo of it (one edit in a word of five letters or more, two from eight)."""
    if a == b or (min(len(a), len(b)) >= 2 and (a.startswith(b) or b.startswith(a))):
        return True
    shorter = min(len(a), len(b))
    return shorter >= 5 and _distance(a, b) <= (2 if shorter >= 8 else 1)


def _covered(words: list[str], by: list[str]) -> bool:
    return bool(words) and all(any(_word_matches(w, b) for b in by) for w in words)


def _meaningful(name: str) -> list[str]:
    return [w for w in re.split(r"[_.\s]+", name) if w and w not in _FILLER]


def hint(text: str) -> str:
    """' (did you mean "tp"?)' for a name close to a column or to a name of the alias table
    that means the same, ' (no column: ...)' for a name no column means, else empty."""
    key = header_key(text)
    if key in NOT_COLUMNS:
        return f" (no column means that: {NOT_COLUMNS[key]})"
    mine = _meaningful(key)
    strong: dict[str, float] = {}  # every meaningful word of the name is among the user's
    weak: set[str] = set()  # every word the user wrote is in the name, which has more
    for name, column in _CANDIDATES.items():
        theirs = _meaningful(name)
        if _covered(theirs, mine):
            ratio = difflib.SequenceMatcher(None, key, name).ratio()
            strong[column] = max(strong.get(column, 0.0), ratio)
        elif _covered(mine, theirs):
            weak.add(column)
    if strong:
        return f' (did you mean "{max(strong, key=strong.__getitem__)}"?)'
    # one weak match only: "price" means one column; "dtype" is in seven, so none
    return f' (did you mean "{weak.pop()}"?)' if len(weak) == 1 else ""
