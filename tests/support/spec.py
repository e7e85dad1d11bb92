"""A report spec with one more figure: shows that one edit to the spec reaches every output."""

from __future__ import annotations

from dataclasses import replace

from ledger_report.report import Figure, Report, Section


def with_figure(spec: Report, section: str, figure: Figure) -> Report:
    """A copy of ``spec`` with ``figure`` added at the end of the section ``section``."""
    sections = tuple(
        replace(s, figures=s.figures + (figure,))
        if s.key == section and isinstance(s, Section)
        else s
        for s in spec.sections
    )
    return replace(spec, sections=sections)
