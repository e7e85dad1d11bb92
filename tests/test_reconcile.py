"""`ledger-report reconcile`: framework logs and probe files read on the right counters, and the
reconciliation's figures against hand calculations.

The log excerpts in tests/data/logs/ are real logs from public GitHub issues (SOURCES.md there).
Units, from the frameworks' code: Megatron-LM's report_memory divides by 1024 × 1024
(megatron/training/utils.py), torchtitan prints max_reserved_gib (torchtitan/components/metrics.py),
DeepSpeed's see_memory_usage and ThroughputTimer divide by 1024^3 and print "GB".
"""

from __future__ import annotations

import ast
import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import ledger_report as lr
from ledger_report.cli import main
from ledger_report.config import COLUMN_NAMES
from ledger_report.errors import InputError
from ledger_report.model.definitions.phases import PHASE_NAMES
from ledger_report.reconciler import WINDOWS, read_run, reconcile

LOGS = Path(__file__).parent / "data" / "logs"
MIB, GIB = 2**20, 2**30

# Mixtral 8x7B on 16 H100 with Megatron-LM, the run of the log kept (tests/data/logs/SOURCES.md):
# https://github.com/NVIDIA/Megatron-LM/issues/756, the reporter's comment of 2024-04-05 ("Switch to
# EP=8 & TP=2"; its log: "using world size: 16, data-parallel size: 8, context-parallel size: 1
# tensor-model-parallel size: 2, pipeline-model-parallel size: 1"), global batch 128; sequence
# parallel, as Megatron-LM requires with expert and tensor parallelism together.  The sequence
# length and micro-batch are not in what the thread shows: 4096 and 1 are assumed (the throughput
# data keeps this run out of the fidelity figures for that, tests/data/measured_throughput.csv)
MIXTRAL = {
    "name": "mixtral",
    "model": "Mixtral-8x7B",
    "framework": "megatron",
    "dp": 8,
    "tp": 2,
    "pp": 1,
    "ep": 8,
    "sequence_parallel": True,
    "zero": 1,
    "seq_len": 4096,
    "micro_batch": 1,
    "global_batch": 128,
    "gpu": "H100-SXM",
}


def _ledger(row=MIXTRAL):
    return lr.compute(lr.read([row]))[0]


def _csv(tmp_path, rows) -> Path:
    p = tmp_path / "inputs.csv"
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with p.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    return p


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_windows_name_the_ledgers_phases():
    """Every ledger phase is compared through exactly one measured window."""
    covered = [p for phases in WINDOWS.values() for p in phases]
    assert sorted(covered) == sorted(PHASE_NAMES)


def test_megatron_rank_report_and_iteration_lines():
    """github.com/NVIDIA/Megatron-LM/issues/756: [Rank 1] (after 1 iterations) max allocated 54250.98583984375 MB,
    max reserved 61480.0 MB (MB = 2^20 bytes); iterations 2 and 3 took 5630.1 and 5410.6 ms at a
    global batch of 128 with 231.9 and 241.4 TFLOP/s per GPU."""
    r = read_run(LOGS / "megatron_mixtral_h100.log")
    assert r.format == "megatron"
    mem = [s for s in r.samples if s.peak]
    assert [(s.rank, s.step, s.line) for s in mem] == [(1, 0, 1)]
    assert mem[0].peak == {
        "allocated": round(54250.98583984375 * MIB),
        "reserved": 61480 * MIB,  # 64,466,452,480 bytes
    }
    doc = reconcile(_ledger(), [r])
    assert doc["counter"] == "reserved"
    assert doc["peak"]["measured_bytes"] == 64_466_452_480
    assert doc["peak"]["estimate_bytes"] == int(_ledger()["peak_reserved_bytes_per_rank"])
    # tokens/s per GPU = 128 sequences × 4096 tokens / step time / 16 GPUs, median of steps 1, 2
    rates = [128 * 4096 / t / 16 for t in (5.6301, 5.4106)]  # 5820.15, 6056.29
    t = doc["throughput"]
    assert t["measured_tokens_per_s_per_gpu"] == pytest.approx(sum(rates) / 2)  # 5938.22
    assert t["framework_tflops_per_gpu"] == pytest.approx((231.9 + 241.4) / 2)
    lg = _ledger()
    mfu = sum(rates) / 2 * lg["flops_per_token"] / lg["bf16_peak_flops"]
    assert t["measured_mfu"] == pytest.approx(mfu)
    assert doc["ranks"]["worst_rank"] == 1
    assert doc["largest_unexplained"]["difference_bytes"] == 64_466_452_480 - int(
        lg["peak_reserved_bytes_per_rank"]
    )


def test_megatron_old_report_without_rank():
    """github.com/NVIDIA/Megatron-LM/issues/60 (2020): 'after 5 iterations memory (MB) | ... max allocated:
    12606.06201171875' with no rank; the report covers steps 0-4 (peaks are never reset)."""
    r = read_run(LOGS / "megatron_gpt2_v100.log")
    mem = [s for s in r.samples if s.peak]
    assert [(s.rank, s.step) for s in mem] == [(None, 4)]
    assert mem[0].peak["allocated"] == round(12606.06201171875 * MIB)
    times = [s.step_time_s for s in r.samples if s.step_time_s]
    assert times == [16.4915, 1.9939]


def test_torchtitan_step_lines():
    """github.com/pytorch/torchtitan/pull/1287: 'memory: 49.66GiB(52.28%)  tps: 5,856 ... mfu: 34.29%' every 10 steps
    from 200 to 250, among GC and profiler lines; the memory is max_reserved in GiB."""
    r = read_run(LOGS / "torchtitan_h100.log")
    assert r.format == "torchtitan"
    assert [s.step for s in r.samples] == [199, 209, 219, 229, 239, 249]
    assert {s.rank for s in r.samples} == {0}
    s = r.samples[0]
    assert s.peak == {"reserved": round(49.66 * GIB)}
    assert s.capacity_bytes == round(49.66 * GIB / 0.5228)  # 94.99 GiB: the device's total
    doc = reconcile(_ledger(), [r])
    t = doc["throughput"]
    # median of 5856, 5593, 5868, 5869, 5864, 5862 = (5862 + 5864) / 2
    assert t["measured_tokens_per_s_per_gpu"] == 5863
    assert t["framework_mfu"] == pytest.approx((0.3433 + 0.3434) / 2)


def test_torchtitan_lines_without_rank_are_ranks_in_order():
    """github.com/pytorch/torchtitan/pull/2389: step 4 printed by seven ranks with no rank prefix, then step 5 by one."""
    r = read_run(LOGS / "torchtitan_moe_ranks.log")
    assert [(s.rank, s.step) for s in r.samples] == [(i, 3) for i in range(7)] + [(0, 4)]
    doc = reconcile(_ledger(), [r])
    assert len(doc["ranks"]["per_rank"]) == 7 and doc["ranks"]["spread_bytes"] == 0


def test_deepspeed_see_memory_usage_and_timer():
    """github.com/deepspeedai/DeepSpeed/issues/2302: 'MA 0.02 GB Max_MA 0.08 GB CA 0.08 GB Max_CA 0 GB' (GB = 2^30 bytes;
    Max_CA is rounded to a whole number, so CA 0.08 bounds the reserved peak), then step 2498 and
    its timer line with CurrSamplesPerSec=2.2201241199743493."""
    r = read_run(LOGS / "deepspeed_see_memory.log")
    assert r.format == "deepspeed"
    first = r.samples[0]
    assert first.peak == {"allocated": round(0.08 * GIB), "reserved": round(0.08 * GIB)}
    timer = [s for s in r.samples if s.samples_per_s]
    assert [(s.rank, s.step, s.samples_per_s) for s in timer] == [(0, 2497, 2.2201241199743493)]
    assert timer[0].peak == {"allocated": round(0.02 * GIB)}


def test_deepspeed_timer_lines():
    """github.com/deepspeedai/DeepSpeed/issues/2629: timer lines 0/17 to 0/22, MaxMemAllocated 2.6 then 2.62 GB (2^30)."""
    r = read_run(LOGS / "deepspeed_timer.log")
    assert [s.step for s in r.samples] == [16, 17, 18, 19, 20, 21]
    doc = reconcile(_ledger(), [r])
    assert doc["peak"]["measured_bytes"] == round(2.62 * GIB)
    # samples/s of the global batch × 4096 tokens ÷ 16 GPUs: median CurrSamplesPerSec of six lines
    curr = sorted([159.628891629629, 145.0889530760849, 157.80592669930536, 155.10475468488542,
                   155.01088859630886, 155.14401867030702])  # fmt: skip
    median = (curr[2] + curr[3]) / 2
    assert doc["throughput"]["measured_tokens_per_s_per_gpu"] == pytest.approx(median * 4096 / 16)


def _probe_line(rank, step, device_peak, **kw):
    phases = {p: {"allocated": device_peak - 2 * GIB, "reserved": device_peak - GIB,
                  "device": device_peak} for p in ("setup", "forward", "loss", "backward",
                                                   "optimizer")}  # fmt: skip
    rec = {"schema": "ledger-report-probe/1", "row": "mixtral", "rank": rank, "step": step,
           "device": "cuda:0 NVIDIA H100 80GB HBM3", "phases": phases, "step_time_s": 5.5,
           "tokens": 32768}  # fmt: skip
    rec.update(kw)
    return json.dumps(rec)


def test_probe_file_with_a_rank_above_hbm(tmp_path):
    """Four ranks at step 1; rank 2 peaks at 90 GB on the device counter, above the H100's
    84.94 GB of HBM (79.11 GiB usable): it is the worst rank, the only one above, and the spread
    is 90 − 60 = 30 GB."""
    peaks = {0: 60 * 10**9, 1: 70 * 10**9, 2: 90 * 10**9, 3: 61 * 10**9}
    run_file = tmp_path / "run.jsonl"
    run_file.write_text("\n".join(_probe_line(r, 1, b) for r, b in peaks.items()) + "\n")
    doc = reconcile(_ledger(), [read_run(run_file)])
    assert doc["counter"] == "device"
    ranks = doc["ranks"]
    assert ranks["worst_rank"] == 2 and ranks["exceeding"] == [2]
    assert ranks["spread_bytes"] == 30 * 10**9
    assert doc["hbm_bytes"] == _ledger()["hbm_bytes"] < 90 * 10**9
    # 5.5 s for 32,768 tokens on a GPU: 5,957.8 tokens/s per GPU
    assert doc["throughput"]["measured_tokens_per_s_per_gpu"] == pytest.approx(32768 / 5.5)
    r = run("reconcile", _csv(tmp_path, [MIXTRAL]), run_file)
    assert r.exit_code == 0, r.output
    assert "ranks above HBM" in r.output and ": 2" in r.output


def test_probe_file_with_allocated_figures_missing(tmp_path):
    """Counters may be null or absent: windows without an allocated figure are left out of the
    phases (loss here), one given at some steps only is read there (backward, at step 1), and the
    items, which need every window at every steady step, are left out; no internal error."""
    lines = []
    for step in (0, 1, 2):
        rec = json.loads(_probe_line(0, step, 60 * 10**9))
        if step:
            rec["phases"]["loss"]["allocated"] = None
        if step == 2:
            del rec["phases"]["backward"]["allocated"]
        lines.append(json.dumps(rec))
    run_file = tmp_path / "run.jsonl"
    run_file.write_text("\n".join(lines) + "\n")
    doc = reconcile(_ledger(), [read_run(run_file)])
    assert [p["phase"] for p in doc["phases"]] == ["setup", "forward", "backward", "optimizer"]
    assert {p["phase"]: p["measured_bytes"] for p in doc["phases"]}[
        "backward"
    ] == 60 * 10**9 - 2 * GIB
    assert doc["items"] == [] and doc["largest_unexplained"]["by"] == "peak"


def test_update_writes_the_measured_columns(tmp_path):
    """--update: the reconciled row gets measured_peak_gb (the worst rank's peak, GB = 10^9),
    measured_counter and mfu; the other rows are unchanged; the file reads back as input."""
    for col in ("measured_peak_gb", "measured_counter", "mfu"):
        assert col in COLUMN_NAMES
    other = dict(MIXTRAL, name="other", dp=4, pp=2, ep=4)
    inp = _csv(tmp_path, [MIXTRAL, other])
    out = tmp_path / "measured.csv"
    r = run("reconcile", inp, LOGS / "megatron_mixtral_h100.log", "--row", "mixtral",
            "--update", out)  # fmt: skip
    assert r.exit_code == 0, r.output
    rows = {c.values["name"]: c.values for c in lr.read(out)}
    assert rows["mixtral"]["measured_peak_gb"] == pytest.approx(64.466452)
    assert rows["mixtral"]["measured_counter"] == "reserved"
    lg = _ledger()
    tps = (128 * 4096 / 5.6301 / 16 + 128 * 4096 / 5.4106 / 16) / 2
    assert rows["mixtral"]["mfu"] == pytest.approx(
        tps * lg["flops_per_token"] / lg["bf16_peak_flops"], abs=1e-6
    )
    assert rows["other"]["measured_peak_gb"] is None and rows["other"]["mfu"] is None
    # the updated row reconciles its measured peak: unexplained = measured − estimate (reserved)
    upd = lr.compute(lr.read(out))[0]
    assert upd["unexplained_bytes"] == pytest.approx(
        64_466_452_000 - lg["peak_reserved_bytes_per_rank"], abs=1
    )


def test_output_files_and_json(tmp_path):
    inp = _csv(tmp_path, [MIXTRAL])
    r = run("reconcile", inp, LOGS / "torchtitan_h100.log", "--json", "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["schema"] == "ledger-report-reconcile/1" and doc["row"] == "mixtral"
    written = json.loads((tmp_path / "out" / "inputs-reconcile.json").read_text())
    assert written == doc
    assert "Peak on the reserved counter" in (tmp_path / "out" / "inputs-reconcile.txt").read_text()


@pytest.mark.parametrize(
    "text, where, expected",
    [
        ("hello world\nnot a log\n", "line 1", "Megatron-LM, torchtitan or DeepSpeed"),
        ('{"schema": "ledger-report-probe/1"', "line 1", "a JSON object"),
        # nested past Python's recursion limit, a number over 4,300 digits: an internal error before
        ('{"a": ' + "[" * 100_000, "line 1", "RecursionError"),
        ('{"schema": ' + "9" * 5000 + "}", "line 1", "4300 digits"),
        ('{"schema": "other/1"}\n', 'line 1, column "schema"', "ledger-report-probe/1"),
        (_probe_line(0, 0, 10 * GIB) + "\n" + _probe_line(0, 1, 10 * GIB, tokens=-5) + "\n",
         'line 2, column "tokens"', "a whole number of tokens"),
        # JSON true and false are no numbers (Python's bool is an int)
        (_probe_line(True, 0, 10 * GIB), 'line 1, column "rank"', "a whole number of at least 0"),
        (_probe_line(0, 0, 10 * GIB) + "\n" + _probe_line(0, False, 10 * GIB),
         'line 2, column "step"', "a whole number of at least 0"),
        (_probe_line(0, 0, 10 * GIB, tokens=True), 'line 1, column "tokens"', "a whole number"),
        (_probe_line(0, 0, 10 * GIB, step_time_s=True), 'line 1, column "step_time_s"',
         "a number of seconds above 0"),
        ("", "", "an empty file"),
    ],
)  # fmt: skip
def test_bad_or_foreign_run_files(tmp_path, text, where, expected):
    """A file that is neither a probe file nor a log we read: exit 1, one line naming the file,
    the line and what was expected; no traceback."""
    bad = tmp_path / "run.txt"
    bad.write_text(text)
    r = run("reconcile", _csv(tmp_path, [MIXTRAL]), bad)
    assert r.exit_code == 1
    msg = r.output.strip()
    assert msg.startswith(f"Error: {bad}") and where in msg and expected in msg
    assert "Traceback" not in r.output


def test_bytes_that_are_not_text_name_their_line(tmp_path):
    bad = tmp_path / "run.log"
    log = (LOGS / "torchtitan_h100.log").read_bytes().splitlines(keepends=True)
    bad.write_bytes(b"".join(log[:2]) + b"\xff\xfe binary\n" + b"".join(log[2:]))
    r = run("reconcile", _csv(tmp_path, [MIXTRAL]), bad)
    assert r.exit_code == 1
    assert (
        r.output.strip()
        == f"Error: {bad}, line 3: expected UTF-8 text; found bytes that are not text"
    )


def test_row_must_exist(tmp_path):
    with pytest.raises(InputError, match="a row named 'nope'"):
        lr.api.reconcile(_csv(tmp_path, [MIXTRAL]), [LOGS / "torchtitan_h100.log"], row="nope")


@pytest.mark.slow
def test_only_the_probe_imports_torch():
    """The product never imports torch: only ledger_report/probe.py does (inside functions)."""
    pkg = Path(lr.__file__).parent
    for f in pkg.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            if any(n.split(".")[0] == "torch" for n in names):
                assert f.name == "probe.py", f
    top = ast.parse((pkg / "probe.py").read_text()).body
    assert not any(
        isinstance(n, (ast.Import, ast.ImportFrom)) and "torch" in ast.dump(n) for n in top
    )


def test_reconcile_runs_in_a_fresh_process_and_lr_reconcile_stays_the_function(tmp_path):
    """The command and the library function in a new interpreter, as a user runs them: before,
    ``lr.reconcile`` (the function) hid the module of the same name, so `ledger-report reconcile`
    failed on every input with an internal error (AttributeError) unless a test had imported the
    module first; and importing the module replaced ``lr.reconcile`` with it.  The Megatron-LM log
    of github.com/NVIDIA/Megatron-LM/issues/756 gives 61,480 MiB reserved, as test_megatron_rank_report_and_iteration_lines reads."""
    import subprocess
    import sys

    inp = _csv(tmp_path, [MIXTRAL])
    log = LOGS / "megatron_mixtral_h100.log"
    cli = [sys.executable, "-m", "ledger_report", "reconcile", str(inp), str(log), "--json"]
    done = subprocess.run(cli, capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert json.loads(done.stdout)["peak"]["measured_bytes"] == 61480 * MIB
    code = (
        "import ledger_report as lr, ledger_report.reconciler, sys\n"
        f"doc = lr.reconcile({str(inp)!r}, [{str(log)!r}])\n"
        "print(callable(lr.reconcile), doc['peak']['measured_bytes'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.split() == ["True", str(61480 * MIB)], done.stderr


def test_update_must_be_csv_and_each_run_file_is_read_once(tmp_path):
    """--update writes CSV rows, so a name ending in .xlsx or .json is refused before anything is
    read (before, u.xlsx held CSV text that `calc u.xlsx` then refused, and rr/t-reconcile.json
    overwrote the reconciliation written beside it); the same log named twice (even as ./x) would
    count its samples twice, so it is refused naming it; nothing is written."""
    inp = _csv(tmp_path, [MIXTRAL])
    log = LOGS / "megatron_mixtral_h100.log"
    out = tmp_path / "rr"
    for update in ("u.xlsx", out / "inputs-reconcile.json"):
        r = run("reconcile", inp, log, "-o", out, "--update", tmp_path / update)
        assert r.exit_code == 1 and "name a file ending in .csv" in r.output, r.output
    twice = log.parent / ".." / "logs" / log.name
    r = run("reconcile", inp, log, twice)
    assert r.exit_code == 1 and "expected each run file once" in r.output
    assert f"given twice (as {log})" in r.output
    assert not out.exists() and not (tmp_path / "u.xlsx").exists()


def test_a_difference_carries_its_sign_in_both_units():
    """The Mixtral log's 61,480 MiB reserved against a larger estimate: the text prints the
    difference with its sign on the GB and on the GiB figure alike (before: "−5.283 GB (4.92
    GiB)"), the GiB figure the GB one × 10^9 / 2^30."""
    from ledger_report.reconciler import render_text

    doc = reconcile(_ledger(), [read_run(LOGS / "megatron_mixtral_h100.log")])
    diff = doc["peak"]["unexplained_bytes"]
    assert diff < 0
    gb, gib = f"{-diff / 1e9:,.4g}", f"{-diff / GIB:,.4g}"
    assert f"unexplained −{gb} GB (−{gib} GiB)" in render_text(doc)


def test_the_same_run_object_given_twice_is_refused_too(tmp_path):
    """From Python a list may hold the very same Path object twice (``[log, log]``): it is the
    same file, refused as a command line naming it twice is (the first check compared the
    objects' identity and let this one through, counting the samples twice)."""
    inp = _csv(tmp_path, [MIXTRAL])
    log = LOGS / "megatron_mixtral_h100.log"
    with pytest.raises(InputError) as err:
        lr.reconcile(inp, [log, log])
    [p] = err.value.problems
    assert p.expected == "each run file once" and p.found == f"{log} given twice"


def test_output_names_keep_a_dotted_stem(tmp_path):
    """`reconcile q3.v2.csv -o out` writes out/q3.v2-reconcile.json and .txt, as the docstring
    and docs/probe.md name them (before: Path.with_suffix took ".v2-reconcile" for the suffix and
    wrote out/q3.json and out/q3.txt)."""
    inp = tmp_path / "q3.v2.csv"
    _csv(tmp_path, [MIXTRAL]).rename(inp)
    r = run("reconcile", inp, LOGS / "torchtitan_h100.log", "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["q3.v2-reconcile.json", "q3.v2-reconcile.txt"]
