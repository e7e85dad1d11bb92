"""The red-team pass's library case on threads: two `render_pdf` calls in threads left
SOURCE_DATE_EPOCH set in os.environ (each saved and restored it on its own: the second saw the
first's value as the caller's and put it back)."""

from __future__ import annotations

import os
import threading

import pytest

from ledger_report.render.workers import env_while_running

NAME = "LEDGER_REPORT_TEST_EPOCH"


def _interleaved(steps: list[str]) -> None:
    """Two threads, A and B, each holding the variable: they enter and leave in ``steps``'s order
    (e.g. A enters, B enters, A leaves, B leaves), each step waiting for the one before."""
    turn = {name: threading.Event() for name in steps}
    order = iter(steps)
    first = next(order)
    nexts = dict(zip(steps, steps[1:]))

    def worker(who: str) -> None:
        enter, leave = f"{who} enters", f"{who} leaves"
        turn[enter].wait(5)
        with env_while_running(NAME, "946684800"):
            if nexts.get(enter):
                turn[nexts[enter]].set()
            turn[leave].wait(5)
        if nexts.get(leave):
            turn[nexts[leave]].set()

    threads = [threading.Thread(target=worker, args=(w,)) for w in ("A", "B")]
    for t in threads:
        t.start()
    turn[first].set()
    for t in threads:
        t.join(10)
    assert not any(t.is_alive() for t in threads)


@pytest.mark.parametrize(
    "steps",
    [
        ["A enters", "B enters", "A leaves", "B leaves"],  # the red-team pass's order
        ["A enters", "B enters", "B leaves", "A leaves"],
        ["A enters", "A leaves", "B enters", "B leaves"],
    ],
)
def test_overlapping_holders_leave_the_environment_as_it_was(monkeypatch, steps):
    """Whatever the order two threads enter and leave in, the variable is unset after, as it was
    before; and a value the caller set is kept, never replaced, and still there after."""
    monkeypatch.delenv(NAME, raising=False)
    _interleaved(steps)
    assert NAME not in os.environ
    monkeypatch.setenv(NAME, "1234")
    _interleaved(steps)
    assert os.environ[NAME] == "1234"


@pytest.mark.slow  # two real renders (WeasyPrint)
def test_two_render_pdf_threads_leave_source_date_epoch_unset(monkeypatch):
    """The red-team pass's case as it ran it: two render_pdf threads of a one-row ledger; both PDFs
    are the same bytes (the fixed epoch held for both) and the variable is unset after."""
    import ledger_report as lr
    from ledger_report.render.handout import render_pdf

    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    ledgers = lr.compute({"name": "m", "params_total": "7B"})
    pdfs: list[bytes] = []
    threads = [
        threading.Thread(target=lambda: pdfs.append(render_pdf(ledgers, jobs=1))) for _ in range(2)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(pdfs) == 2 and pdfs[0] == pdfs[1]
    assert "SOURCE_DATE_EPOCH" not in os.environ
