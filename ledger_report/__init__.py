"""ledger-report: per-rank model-state ledgers and compute floors for LLM training configurations."""

__version__ = "0.1.0"
