"""ledger-report: per-rank model-state ledgers, memory peaks and compute floors for LLM training
configurations, as live-formula XLSX, PDF handouts and JSON.

The library face (see ``ledger_report.api``)::

    import ledger_report as lr
    ledgers = lr.compute("inputs/examples.csv")  # a path, a DataFrame, dicts or Configs
    sweep = lr.to_frame("inputs/examples.csv")    # a DataFrame: a column per quantity
    lr.reconcile("inputs.csv", ["run.jsonl"])     # a run's measurements beside the estimate
"""

__version__ = "0.1.0"

from .api import build, compute, plan, read, reconcile, to_frame  # noqa: E402  (after __version__, which cli reads)
from .errors import InputError, LedgerError  # noqa: E402

__all__ = [
    "__version__",
    "build",
    "compute",
    "plan",
    "read",
    "reconcile",
    "to_frame",
    "InputError",
    "LedgerError",
]
