"""The handout templates, shipped as the package ``ledger_report.templates`` (see pyproject)."""
