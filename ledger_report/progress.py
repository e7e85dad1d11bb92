"""Progress told to a caller as work goes: ``progress(done, total)`` (the planner's candidates,
``lr.compute``'s rows, ``calc``'s chunks)."""

from __future__ import annotations

from typing import Callable

Progress = Callable[[int, int], None]


def counter(progress: Progress | None, total: int, every: int = 1) -> Callable[[int], None]:
    """A callback told how many of ``total`` items each step did: it tells ``progress(done,
    total)`` when the count passes a multiple of ``every``, and at the total."""
    done = 0

    def tick(n: int) -> None:
        nonlocal done
        before, done = done, done + n
        if progress and (done // every > before // every or done == total):
            progress(done, total)

    return tick
