"""The red-team pass's planner and divisor cases: no "internal error" when tokens ÷ (seq_len × global_batch)
lands just above a whole number, a divisor search that does not walk to √n, and a planner that
counts its candidates before it searches and refuses a search too large to run."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger_report.cli import main
from ledger_report.engine import compute, config_from_mapping
from ledger_report.errors import InputError
from ledger_report.model.divisors import divisors, prime_factors
from ledger_report.planner import MAX_CANDIDATES, plan

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from support.jobs import NARROW, QWEN3_8B_JOB  # noqa: E402


# ---- "Calling nonzero on 0d arrays" ------------------------------------------------------------
@pytest.mark.parametrize(
    "tokens,steps",
    [
        # 30,000 / (8192 × 384 = 3,145,728) = 0.0095...: one step (by hand)
        (30_000, 1),
        # 100,002,713,120 = 31,790 × 3,145,728 + 20,000: 31,791 steps (by hand)
        (100_002_713_120, 31_791),
    ],
)
@pytest.mark.slow
def test_plan_with_tokens_just_above_a_whole_number_of_steps(tokens, steps):
    """Found in a red-team pass: these two token counts made `plan` fail with "Calling nonzero on 0d arrays"
    (the arrays interpreter's CEIL of one value for every candidate); now plans come back and
    their rows take the hand-counted number of steps in the engine."""
    result = plan(config_from_mapping({**QWEN3_8B_JOB, **NARROW, "tokens": tokens}), top=3)
    assert result["plans"], result["reason"]
    for p in result["plans"]:
        assert compute(config_from_mapping(p["row"]))["steps"] == steps


# ---- divisors -----------------------------------------------------------------------------------
def test_divisors_of_numbers_near_ten_to_the_sixteen():
    """Found in a red-team pass: trial division up to √n took 4.6 s per global_batch near 10^16.  The factors are
    checked by multiplying them back (and 10^16 - 1 against its published factorisation,
    3^2·11·17·73·101·137·5882353: the Cunningham tables, base 10, 10^16 - 1 = (10^8 - 1)(10^8 + 1),
    10^8 + 1 = 17·5882353); the divisor counts by the formula Π(e + 1)."""
    assert prime_factors(10**16 - 1) == (
        (3, 2), (11, 1), (17, 1), (73, 1), (101, 1), (137, 1), (5882353, 1)
    )  # fmt: skip
    # a prime, a product of two primes near 2^32, a square of a prime, a power of two
    for n, factors in [
        (9_999_999_999_999_937, ((9_999_999_999_999_937, 1),)),
        (4_294_967_279 * 4_294_967_291, ((4_294_967_279, 1), (4_294_967_291, 1))),
        (1_000_003**2, ((1_000_003, 2),)),
        (2**53, ((2, 53),)),
    ]:
        assert prime_factors(n) == factors
        assert math.prod(p**e for p, e in factors) == n
        ds = divisors(n)
        assert len(ds) == math.prod(e + 1 for _p, e in factors)
        assert all(n % d == 0 for d in ds) and list(ds) == sorted(set(ds))


@pytest.mark.slow
def test_divisors_agree_with_trial_division_below_five_thousand():
    """Every n below 5,000: the divisors are exactly those trial division finds."""
    for n in range(1, 5_000):
        assert divisors(n) == tuple(d for d in range(1, n + 1) if n % d == 0)


def test_plan_over_the_divisors_of_a_global_batch_near_ten_to_the_sixteen():
    """global_batch 10^16 - 1 with micro_batch 805,882,361 = 137 × 5,882,353 (12,408,759
    micro-batches, within the workbook's exact range): the planner's dp choices are the divisors
    of global_batch (found from its factors, not by trial division to 10^8) that leave a whole
    number of micro-batches per rank: the divisors of 12,408,759 = 3^2·11·17·73·101, (2+1)·2^4 =
    48 of them (by hand), times 6 loss-chunk choices."""
    job = {**QWEN3_8B_JOB, **NARROW, "global_batch": 10**16 - 1, "micro_batch": 805_882_361}
    result = plan(config_from_mapping({**job, "tokens": 10**16}), top=1)
    assert result["candidates_evaluated"] == 48 * 6


def test_calc_of_a_global_batch_at_the_readers_bound_is_exact():
    """A row whose global batch holds 11 × 99,949,999,997 micro-batches (a prime, checked by
    Miller-Rabin with the first 12 prime bases, which is exact below 3.3·10^24), just below the
    2^40 = 1,099,511,627,776 micro-batches the reader accepts: the minimum GPU count walks the
    divisors of 1,099,449,999,967 (trial division to its square root would be ~10^6 steps) and the
    row computes with its global_batch check holding (micro_batch 9 × dp 11 divides it)."""
    gb = 9 * 11 * 99_949_999_997
    job = {**QWEN3_8B_JOB, "global_batch": gb, "micro_batch": 9, "dp": 11, "tokens": 10**16}
    lg = compute(config_from_mapping(job))
    assert lg["ok_global_batch_multiple"] is True


def test_a_global_batch_past_the_readers_bound_is_refused_naming_the_column():
    """Found in a red-team pass: global_batch 10^16 − 1 (micro_batch 9) took 4.6 s of CPU in the
    divisor search; the reader now refuses more than 2^40 micro-batches (where the workbook's
    minimum-GPU formulas stay exact) with a message naming the row and column."""
    job = {**QWEN3_8B_JOB, "global_batch": 10**16 - 1, "micro_batch": 9, "dp": 11}
    with pytest.raises(InputError) as err:
        config_from_mapping(job)
    assert 'column "global_batch"' in str(err.value)
    assert "1,099,511,627,776" in str(err.value)


# ---- the candidate cap --------------------------------------------------------------------------
def _hand_count_55440() -> int:
    """The candidates of QWEN3_8B_JOB with global_batch 55,440 = 2^4·3^2·5·7·11, by hand:
    (dp, micro_batch) pairs with dp·micro_batch | 55,440: Π (e+1)(e+2)/2 = 15·6·3·3·3 = 2,430;
    pp | 36 layers: 9; tp ∈ {1, 2, 4, 8} (divides 32 heads, 8 kv heads, 12,288); cp ∈ {1, 2, 4, 8}
    (≥ 1,024 tokens of 8,192 per rank); ep 1; loss_chunks 6; so 2,430·9·4·4·6 = 2,099,520
    layouts at ZeRO 0; ZeRO 1-3 only where dp·cp > 1: less the 120 pairs with dp = 1 at cp = 1,
    (2,430·4 - 120)·9·4·6 = 2,073,600 each; times 3 recompute modes × 3 optimizer places."""
    zero0 = 2_430 * 9 * 4 * 4 * 6
    sharded = (2_430 * 4 - 120) * 9 * 4 * 6
    return (zero0 + 3 * sharded) * 3 * 3


def test_a_search_over_the_cap_is_refused_before_it_starts(tmp_path):
    """Found in a red-team pass: global_batch 55,440 gave 75 M candidates and ran 209 s.  Now the count (74,882,880,
    the hand count) is made before any candidate is built and the row is refused in one line
    naming the file, the line (no one column: the search as a whole) and the columns that would narrow the search."""
    assert _hand_count_55440() == 74_882_880 > MAX_CANDIDATES
    header = ",".join(QWEN3_8B_JOB)
    row = ",".join(str(v) for v in {**QWEN3_8B_JOB, "global_batch": 55_440}.values())
    path = tmp_path / "big.csv"
    path.write_text(f"{header}\n{row}\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["plan", str(path), "-q"])
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output and "internal error" not in r.output
    line = r.output.strip()
    assert "\n" not in line
    assert (
        "big.csv, line 2: expected a search of at most" in line
    )  # the row's search, no one column
    assert "74,882,880 candidates" in line and "--max-candidates" in line
    for column in ("dp", "tp", "pp", "micro_batch"):
        assert column in line


def test_a_global_batch_rich_in_divisors_is_refused_without_building_its_grid():
    """global_batch 963,761,198,400 (below the workbook's 2^40 micro-batches) has 6,720 divisors,
    the most of any n below 10^12 (OEIS A002182, highly composite numbers): its (dp, micro_batch)
    grid alone would be 45 M pairs.  The count stops as soon as it passes the cap."""
    n = 963_761_198_400
    assert len(divisors(n)) == 6_720
    with pytest.raises(InputError, match="at least [0-9,]* candidates"):
        plan(config_from_mapping({**QWEN3_8B_JOB, "global_batch": n}), top=1)


@pytest.mark.slow
def test_the_cap_counts_exactly_what_the_search_evaluates():
    """A cap one below a search's own size refuses it, naming that size; the cap at its size runs
    it.  (The narrow job: dp and micro_batch over the divisors of 384, loss_chunks 6.)"""
    config = config_from_mapping({**QWEN3_8B_JOB, **NARROW})
    n = plan(config, top=1)["candidates_evaluated"]
    # 384 = 2^7·3: pairs with dp·mb | 384: (8·9/2)·(2·3/2) = 108; × 6 loss-chunk choices (by hand)
    assert n == 108 * 6
    with pytest.raises(InputError, match=f"{n:,} candidates"):
        plan(config, top=1, max_candidates=n - 1)
    assert plan(config, top=1, max_candidates=n)["candidates_evaluated"] == n


# ---- a label printed beside every cost ---------------------------------------------------------
def test_a_currency_is_a_short_label(tmp_path):
    """A 32,767-character currency (a cell's limit) made one handout page take 67 s: it is printed
    beside every cost.  The column takes at most 16 characters (ISO 4217 codes are 3 letters;
    "CNY (元)" is 7), refused in one line naming the file, line and column before any work."""
    path = tmp_path / "cur.csv"
    path.write_text(f"name,params_total,currency\nm,7B,{'X' * 32_767}\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["calc", str(path)])
    assert r.exit_code == 1
    assert r.output.startswith('Error: cur.csv, line 2, column "currency": expected text of at')
    assert "at most 16 characters; found 32,767 characters" in r.output
    path.write_text("name,params_total,currency\nm,7B,CNY (元)\n", encoding="utf-8")
    assert CliRunner().invoke(main, ["calc", str(path)]).exit_code == 0


# ---- the configurations one build lays out -------------------------------------------------------
def _rows_file(tmp_path, n: int):
    """``n`` rows of the simplest kind (a name and params_total), one a line after the header: the
    k-th row is line k + 1."""
    path = tmp_path / "sweep.csv"
    path.write_text("name,params_total\n" + "".join(f"m{k},7B\n" for k in range(n)), "utf-8")
    return path


def test_a_build_past_the_bound_is_refused_before_any_work(tmp_path, monkeypatch):
    """Found in a red-team pass: 2,000 rows took ~115 s of CPU and ~0.9 GB (a handout page and a
    workbook column each).  One row past MAX_BUILD_CONFIGS is refused before any ledger is
    computed, in one line naming the file, the first row past the bound (row MAX + 1 is line
    MAX + 2, the header being line 1), the bound and what to do instead; no output folder."""
    from ledger_report import api
    from ledger_report.render.limits import MAX_BUILD_CONFIGS

    def no_work(*a, **k):
        raise AssertionError("the rows were computed before the bound was checked")

    monkeypatch.setattr(api, "compute_many", no_work)
    path = _rows_file(tmp_path, MAX_BUILD_CONFIGS + 1)
    r = CliRunner().invoke(main, ["build", str(path), "-o", str(tmp_path / "out")])
    assert r.exit_code == 1, r.output
    line = r.output.strip()
    assert "\n" not in line and "Traceback" not in line and "internal error" not in line
    assert line.startswith(f"Error: sweep.csv line {MAX_BUILD_CONFIGS + 2}: expected at most")
    assert f"{MAX_BUILD_CONFIGS:,} configurations" in line
    assert f"found {MAX_BUILD_CONFIGS + 1:,}" in line and "calc --csv" in line
    assert not (tmp_path / "out").exists()


def test_the_library_build_is_bounded_alike(tmp_path):
    """lr.build of mappings: the same refusal, naming the first mapping past the bound."""
    from ledger_report import api
    from ledger_report.render.limits import MAX_BUILD_CONFIGS

    rows = [{"name": f"m{k}", "params_total": "7B"} for k in range(MAX_BUILD_CONFIGS + 5)]
    with pytest.raises(InputError) as err:
        api.build(rows, tmp_path / "out", ["pdf"])
    assert str(err.value).startswith(f"mappings row {MAX_BUILD_CONFIGS + 1}: expected at most")
    assert f"found {MAX_BUILD_CONFIGS + 5:,}" in str(err.value)
    assert not (tmp_path / "out").exists()


def test_what_lays_nothing_out_is_not_bounded(tmp_path):
    """A JSON-only build and calc --csv of the same rows run: they lay out no page or column.  The
    JSON holds one configuration per row; the CSV one line per row after its header."""
    import json

    from ledger_report.render.limits import MAX_BUILD_CONFIGS

    n = MAX_BUILD_CONFIGS + 1
    path = _rows_file(tmp_path, n)
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["build", str(path), "-o", str(out), "--format", "json", "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "sweep.json").read_text(encoding="utf-8"))
    assert len(doc["configs"]) == n
    r = CliRunner().invoke(main, ["calc", str(path), "--csv"])
    assert r.exit_code == 0 and len(r.output.strip().splitlines()) == n + 1


def test_plan_out_lays_out_no_more_plans_than_a_build(tmp_path, monkeypatch):
    """`plan -o` builds its plans as `build` builds rows: more plans than MAX_BUILD_CONFIGS (rows
    × --top can be up to 1,000 a row) are refused before any ledger is computed, naming the first
    plan past the bound and --top; nothing is written."""
    from ledger_report import api
    from ledger_report.render.limits import MAX_BUILD_CONFIGS

    def no_work(*a, **k):
        raise AssertionError("the plans were computed before the bound was checked")

    monkeypatch.setattr(api, "compute_many", no_work)
    n = MAX_BUILD_CONFIGS + 1
    doc = {"plans": [{"row": {"name": f"p{k}", "params_total": "7B"}} for k in range(n)]}
    with pytest.raises(InputError) as err:
        api.build_plans(doc, tmp_path / "out", ["pdf"])
    assert f"plans.csv, plan {n:,}: expected at most {MAX_BUILD_CONFIGS:,}" in str(err.value)
    assert "--top" in str(err.value)
    assert not (tmp_path / "out").exists()
