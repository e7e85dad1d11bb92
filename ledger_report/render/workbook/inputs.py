"""The Inputs sheet: the rows as values, with help comments and validation."""

from __future__ import annotations

from typing import Any

from ...config import BOOL as K_BOOL
from ...config import COLUMNS, Column, Config
from ...config import COUNT as K_COUNT
from ...config import ENUM as K_ENUM
from ...config import FLOAT as K_FLOAT
from ...config import INT as K_INT
from ...model import formula as fx
from .cells import F_INT, _Book, _ok, _text_width
from .layout import INPUT_FIRST_ROW, INPUT_LETTERS, INPUTS, _name
from .models import following, lookup_formula

EXAMPLE_ROW: dict[str, Any] = {
    "name": "example-8b-dp32-tp2",
    "notes": "Example row (a Llama-3-8B-like dense model): replace it or add rows below",
    "layers": 32,
    "hidden": 4096,
    "heads": 32,
    "kv_heads": 8,
    "ffn_hidden": 14336,
    "vocab": 128256,
    "framework": "megatron",
    "weight_dtype": "bf16",
    "grad_dtype": "fp32",
    "dp": 32,
    "tp": 2,
    "pp": 1,
    "zero": 1,
    "sequence_parallel": True,
    "seq_len": 8192,
    "micro_batch": 1,
    "global_batch": 512,
    "recompute": "selective",
    "gpu": "H100-SXM",
    "mfu": 0.4,
    "tokens": 1_000_000_000_000,
    "days": 30,
    "reserve_days": 3,
    "price_per_gpu_hour": 2.5,
}


_COMMENT = {"author": "ledger-report", "width": 320, "height": 150}  # a column's help


def _enum_source(col: Column) -> str:
    """The defined name whose range lists the choices of an enumerated column."""
    if col.name == "gpu":
        return "list_gpu"  # the catalogue's rows, without the last: the profile of a user-described GPU
    if col.name == "optimizer":
        return _name("optimizer", None)
    if col.name in ("m_dtype", "v_dtype"):
        return _name("moment", None)
    return f"list_{col.name}"


def _help_text(col: Column) -> str:
    lines = [col.help_en, col.help_zh]
    if col.unit:
        lines.append(f"unit: {col.unit}")
    default = f"default: {col.default}" if col.default else "default: empty"
    lines.append("required" if col.required and not col.default else default)
    if col.choices:
        lines.append("choices: " + ", ".join(col.choices))
    elif col.name == "gpu":
        lines.append("choices: the GPUs sheet")
    bounds = []
    if col.minimum is not None:
        bounds.append(f"{'>' if col.min_exclusive else '≥'} {col.minimum:g}")
    if col.maximum is not None:
        bounds.append(f"≤ {col.maximum:g}")
    if bounds:
        lines.append("range: " + ", ".join(bounds))
    return "\n".join(lines)


def _count_rule(col: Column, letter: str) -> str:
    """The custom validation of a count column: text (``35B``, ``8.19e9``, ``8,190,735,360``: the
    reader parses it when the workbook is rebuilt) or a number within the column's range."""
    ref = f"{letter}{INPUT_FIRST_ROW}"  # relative: the rule moves with each cell of the range
    tests = [f"ISNUMBER({ref})"]
    if col.minimum is not None:
        tests.append(f"{ref}{'>' if col.min_exclusive else '>='}{fx.number(col.minimum)}")
    if col.maximum is not None:
        tests.append(f"{ref}<={fx.number(col.maximum)}")
    return f"=OR(ISTEXT({ref}),AND({','.join(tests)}))"


def _write_inputs(book: _Book, ws, configs: list[Config], dropdown_rows: int, models=None) -> None:
    """The rows; with ``models`` (models.py), the architecture cells that follow a row's model
    cell are formulas over the Models sheet."""
    head = book.head()
    text_in = book.entry(quote=True)
    num_in = book.entry()  # empty cells look so too
    count_in = book.entry(fmt=F_INT)
    first, last = INPUT_FIRST_ROW - 1, INPUT_FIRST_ROW + max(dropdown_rows, 1) - 2  # 0-based rows
    for j, col in enumerate(COLUMNS, start=1):
        book.label(ws, 1, j, col.name, head)
        where = f"{INPUTS}!{INPUT_LETTERS[col.name]}1 (comment)"
        _ok(ws.write_comment(0, j - 1, _help_text(col), _COMMENT), where)
        width = 24 if col.name in ("name", "notes") else max(10, len(col.name) + 3)
        if col.name != "notes":  # a model, a GPU, a path: whole up to 40 characters
            texts = [cfg.values.get(col.name) for cfg in configs]
            longest = max((_text_width(t) for t in texts if isinstance(t, str)), default=0)
            width = max(width, min(40, longest + 2))
        ws.set_column(j - 1, j - 1, width, num_in)
        if rule := _validation(col):
            rule.update(ignore_blank=True, show_error=True)
            where = f"{INPUTS}: the validation of {col.name}"
            _ok(ws.data_validation(first, j - 1, last, j - 1, rule), where)
    # the rows, as values: text always a text cell, blank stays blank (the default is resolved
    # by formula), numbers and booleans typed
    for i, cfg in enumerate(configs):
        r = INPUT_FIRST_ROW + i
        follow = following(cfg, models) if models else set()
        for j, col in enumerate(COLUMNS, start=1):
            v = cfg.values.get(col.name)
            where = f"{INPUTS}!{INPUT_LETTERS[col.name]}{r}"
            number = count_in if col.kind == K_COUNT else num_in
            if col.name in follow:
                book.formula(ws, r, j, lookup_formula(col.name, r), v, number)
                continue
            if v is None or v == "":
                continue
            if isinstance(v, str):
                book.text(ws, r, j, v, text_in, f"{where} ({col.name} of {cfg.name!r})")
            elif isinstance(v, (bool, int, float)):
                book.value(ws, r, j, v, number)
            else:
                book.text(ws, r, j, str(v), text_in, where)
    ws.freeze_panes(1, 1)


def _validation(col: Column) -> dict[str, Any] | None:
    """A column's data validation: the list of an enumerated column (a stop, but for a GPU), a
    warning for a count, a number out of range or a truth value."""
    bounds = _help_text(col).splitlines()[-1]
    warn = {"error_type": "warning", "error_title": col.name}
    if col.kind == K_ENUM:
        rule = {"validate": "list", "source": "=" + _enum_source(col), "error_title": col.name}
        if col.name == "gpu":  # a GPU outside the catalogue, with hbm_gb and peak_tflops
            gpu = "gpu: not in the GPUs sheet; give hbm_gb and peak_tflops to describe it"
            return {**rule, **warn, "error_message": gpu}
        return {**rule, "error_message": f"{col.name}: choose one of the list (see the Help sheet)"}
    if col.kind == K_COUNT:  # not "decimal": Excel would refuse 35B, which the reader accepts
        count = f"{col.name}: a number ({bounds}) or a count such as 8.19e9, 35B, 5T, 350M, 7K"
        rule = {"validate": "custom", "value": _count_rule(col, INPUT_LETTERS[col.name])}
        return {**rule, **warn, "error_message": count}
    if col.kind in (K_INT, K_FLOAT) and (col.minimum is not None or col.maximum is not None):
        kind = "integer" if col.kind == K_INT else "decimal"
        lo = col.minimum if col.minimum is not None else -1e307
        hi = col.maximum if col.maximum is not None else 1e307
        if col.min_exclusive:
            lo = lo + (1e-9 if kind == "decimal" else 1)
        between = {"criteria": "between", "minimum": fx.number(lo), "maximum": fx.number(hi)}
        message = f"{col.name}: expected a number, {bounds}"
        return {"validate": kind, **between, **warn, "error_message": message}
    if col.kind == K_BOOL:
        return {"validate": "list", "source": ["TRUE", "FALSE"], "error_type": "warning"}
    return None
