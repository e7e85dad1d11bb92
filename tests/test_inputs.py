"""Good paths of ``ledger_report.inputs.read_configs`` (the columns of docs/columns.md)."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
from files import rewrite_entry, write_csv, write_xlsx

from ledger_report.config import Config
from ledger_report.errors import InputError
from ledger_report.inputs import read_configs

ROOT = Path(__file__).resolve().parents[1]

# --- counts ----------------------------------------------------------------------------------

COUNT_SPELLINGS = [
    ("8190735360", 8_190_735_360),
    ('"8,190,735,360"', 8_190_735_360),
    ("8.19e9", 8_190_000_000),
    ("8.19E+09", 8_190_000_000),
    ("8.19B", 8_190_000_000),
    ("35B", 35_000_000_000),
    ("5T", 5_000_000_000_000),
    ("1.5T", 1_500_000_000_000),
    ("350M", 350_000_000),
    ("7K", 7_000),
    ("7b", 7_000_000_000),
    ("8.19 B", 8_190_000_000),
    (" 7 000 000 000 ", 7_000_000_000),
    ("\u00a07\u00a0000\u00a0", 7_000),  # no-break spaces
    ("８Ｂ", 8_000_000_000),  # full-width digits and letter (NFKC)
    ('"７,０００"', 7_000),
    ("７，０００", 7_000),  # full-width comma, not a CSV separator
    ("1_024", 1_024),
]


@pytest.mark.parametrize("cell,value", COUNT_SPELLINGS, ids=[c for c, _ in COUNT_SPELLINGS])
def test_count_spellings(tmp_path, cell, value):
    """Each spelling docs/columns.md accepts gives the exact integer."""
    path = write_csv(tmp_path, f"name,params_total\nm,{cell}\n")
    (config,) = read_configs(path)
    assert config.get("params_total") == value
    assert type(config.get("params_total")) is int


def test_count_from_workbook_numbers(tmp_path):
    """Workbook number cells: ints and integral floats are counts."""
    path = write_xlsx(
        tmp_path, [["name", "params_total", "tokens"], ["m", 8.19e9, 15_000_000_000_000]]
    )
    (config,) = read_configs(path)
    assert config.get("params_total") == 8_190_000_000
    assert config.get("tokens") == 15 * 10**12


SIZE_SPELLINGS = [  # a column in GB (10^9 bytes) takes a size with its unit: 1 GiB = 2^30 bytes
    ("79.7 GiB", 79.7 * 2**30 / 10**9),
    ("96GB", 96.0),
    ("96 gb", 96.0),
    ("512 MiB", 2**29 / 10**9),
    ("1.5 TB", 1500.0),
    ("1 TiB", 2**40 / 10**9),
    ("80", 80.0),
]


@pytest.mark.parametrize("cell,value", SIZE_SPELLINGS, ids=[c for c, _ in SIZE_SPELLINGS])
def test_size_spellings_in_gb_columns(tmp_path, cell, value):
    """measured_peak_gb as torchtitan logs it (GiB) or nvidia-smi (MiB) reads as GB exactly."""
    path = write_csv(tmp_path, f"name,params_total,measured_peak_gb\nm,8B,{cell}\n")
    (config,) = read_configs(path)
    assert config.get("measured_peak_gb") == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize(
    "column,cell",
    [
        ("measured_peak_gb", "35B"),
        ("measured_peak_gb", "80 G"),
        ("measured_peak_gb", "5 MB GB"),
        ("params_total", "8 GiB"),
    ],
)
def test_size_units_only_where_a_size_is_counted(tmp_path, column, cell):
    path = write_csv(tmp_path, f"name,{column}\nm,{cell}\n")
    with pytest.raises(InputError, match=column):
        read_configs(path)


# --- text stays text -------------------------------------------------------------------------

NA_NAMES = ["NA", "None", "null", "NaN", "N/A", "#N/A", "nan", "NULL", "-", "=1+1"]


@pytest.mark.parametrize("name", NA_NAMES)
def test_na_like_names_stay_text_csv(tmp_path, name):
    """pandas turns these into NaN (reliability finding 3); here they are names."""
    path = write_csv(tmp_path, f'name,params_total\n"{name}",7B\n')
    (config,) = read_configs(path)
    assert config.name == name


@pytest.mark.parametrize("name", NA_NAMES)
def test_na_like_names_stay_text_xlsx(tmp_path, name):
    """The same names as text cells of a workbook."""
    path = write_xlsx(tmp_path, [["name", "params_total"], ["x", 7e9]])
    wb = openpyxl.load_workbook(path)
    cell = wb["Inputs"]["A2"]
    cell.value = name
    cell.data_type = "s"  # openpyxl would make "=1+1" a formula and "#N/A" an error cell
    wb.save(path)
    (config,) = read_configs(path)
    assert config.name == name


def test_notes_verbatim(tmp_path):
    """Free text keeps its spaces, commas, quotes, newlines and Chinese."""
    note = '  a, "quoted" note\nwith a newline 模型甲  '
    path = write_csv(tmp_path, 'name,params_total,notes\nm,7B,"' + note.replace('"', '""') + '"\n')
    (config,) = read_configs(path)
    assert config.get("notes") == note


# --- encodings and shapes --------------------------------------------------------------------

CHINESE = 'name,params_total,notes\n模型甲,7B,中文备注\nllama-8b,"8,030,261,248",\n'


def test_gbk_bom_utf16_identical(tmp_path):
    """GBK (zh-CN Excel), UTF-8 with BOM, plain UTF-8 and UTF-16 give identical rows."""
    variants = {
        "utf8": CHINESE.encode("utf-8"),
        "bom": CHINESE.encode("utf-8-sig"),
        "gbk": CHINESE.encode("gbk"),
        "utf16": CHINESE.encode("utf-16"),
        "utf16be": b"\xfe\xff" + CHINESE.encode("utf-16-be"),
    }
    results = {}
    for key, data in variants.items():
        path = tmp_path / f"{key}.csv"
        path.write_bytes(data)
        results[key] = [c.given() for c in read_configs(path)]
    assert (
        results["gbk"]
        == results["bom"]
        == results["utf8"]
        == results["utf16"]
        == results["utf16be"]
    )
    assert results["gbk"][0]["name"] == "模型甲"
    assert results["gbk"][1]["params_total"] == 8_030_261_248


def test_gb18030_only_characters(tmp_path):
    """Characters outside GBK (CJK extension B) decode through GB18030."""
    path = tmp_path / "inputs.csv"
    path.write_bytes("name,params_total\n𠮷模型,7B\n".encode("gb18030"))
    (config,) = read_configs(path)
    assert config.name == "𠮷模型"


@pytest.mark.parametrize("delimiter", [";", "\t"], ids=["semicolon", "tab"])
def test_other_delimiters(tmp_path, delimiter):
    """European Excel writes ';'; tab-separated text works too."""
    text = (
        delimiter.join(["name", "params_total", "mfu"])
        + "\n"
        + delimiter.join(["m", "7,000,000,000", "0.4"])
        + "\n"
    )
    path = write_csv(tmp_path, text)
    (config,) = read_configs(path)
    assert config.get("params_total") == 7_000_000_000
    assert config.get("mfu") == 0.4


def test_header_case_space_and_width_insensitive(tmp_path):
    """Header names ignore case, surrounding spaces and full-width forms."""
    path = write_csv(tmp_path, " Name ,PARAMS_TOTAL,\u3000ｄｐ\u3000,Tp\nm,7B,8,2\n")
    (config,) = read_configs(path)
    assert config.given() == {"name": "m", "params_total": 7_000_000_000, "dp": 8, "tp": 2}


def test_ragged_rows_blank_rows_and_trailing_columns(tmp_path):
    """Blank lines and trailing empty header fields are ignored; empty fields are empty cells (short rows: tests/hostile CSV-04)."""
    text = "name,params_total,dp,tp,,\n\na,7B,,\n,,,\nb,7B,2,,,\n\n"
    configs = read_configs(write_csv(tmp_path, text))
    assert [c.name for c in configs] == ["a", "b"]
    assert configs[0].get("dp") is None and configs[1].get("dp") == 2
    assert configs[0].source == "inputs.csv line 3"
    assert configs[1].source == "inputs.csv line 5"


def test_empty_cell_is_none_and_defaults_not_filled(tmp_path):
    """The reader returns what the user gave; defaults belong to the model."""
    (config,) = read_configs(write_csv(tmp_path, "name,params_total,dp,framework\nm,7B,,\n"))
    assert isinstance(config, Config)
    assert (
        config.get("dp") is None and config.get("framework") is None and config.get("zero") is None
    )


def test_typed_values(tmp_path):
    """Each column kind gives its Python type; enum aliases map to canonical names."""
    text = (
        "name,params_total,mfu,glu,sequence_parallel,weight_dtype,optimizer,framework,weights_at,gpu,hbm_gb,zero\n"
        "m,7B,40%,yes,FALSE,BFloat16 ,paged_adamw_8bit,Megatron-LM,cpu,h100 sxm,80,1\n"
    )
    (config,) = read_configs(write_csv(tmp_path, text))
    assert config.get("mfu") == 0.4
    assert config.get("glu") is True and config.get("sequence_parallel") is False
    assert config.get("weight_dtype") == "bf16"
    assert config.get("optimizer") == "adam8bit"
    assert config.get("framework") == "megatron"
    assert config.get("weights_at") == "host"
    assert config.get("gpu") == "H100-SXM"
    assert config.get("hbm_gb") == 80.0 and isinstance(config.get("hbm_gb"), float)
    assert config.get("zero") == 1


def test_fp32_weights_with_fp32_master_allowed(tmp_path):
    """weight_dtype fp32 with master_dtype fp32 is not a contradiction."""
    (config,) = read_configs(
        write_csv(tmp_path, "name,params_total,weight_dtype,master_dtype\nm,7B,fp32,fp32\n")
    )
    assert config.get("master_dtype") == "fp32"


def test_full_architecture_row(tmp_path):
    """An architecture-only row (no params_total) with a consistent parallel layout."""
    text = (
        "name,layers,hidden,heads,kv_heads,ffn_hidden,vocab,experts,topk,dp,tp,ep,etp,seq_len,"
        "sequence_parallel,micro_batch,global_batch\n"
        "moe,48,4096,32,8,14336,151936,64,8,8,4,8,1,4096,true,1,64\n"
    )
    (config,) = read_configs(write_csv(tmp_path, text))
    assert config.get("experts") == 64 and config.get("vocab") == 151_936


# --- workbooks -------------------------------------------------------------------------------


def test_xlsx_inputs_sheet_and_cached_formula(tmp_path):
    """The sheet named Inputs is read even when not first; a formula's saved value is used."""
    path = write_xlsx(
        tmp_path,
        [
            ["name", "params_total", "tokens", "mfu", "glu"],
            ["m", 7_000_000_000, "=B2*2", 0.4, True],
        ],
        before=("Notes",),
    )
    # openpyxl writes formulas without a saved result; add one as Excel would.
    rewrite_entry(
        path,
        "xl/worksheets/sheet2.xml",
        lambda xml: xml.replace(b"<f>B2*2</f><v />", b"<f>B2*2</f><v>14000000000</v>"),
    )
    (config,) = read_configs(path)
    assert config.get("tokens") == 14_000_000_000
    assert config.get("glu") is True
    assert config.source == "inputs.xlsx Inputs row 2"


def test_xlsx_sheet_name_case_insensitive_and_hidden_ignored(tmp_path):
    """`inputs` matches Inputs; hidden sheets are skipped; else the first visible sheet is read."""
    path = write_xlsx(
        tmp_path, [["name", "params_total"], ["m", "35B"]], title="INPUTS ", before=("Cover",)
    )
    (config,) = read_configs(path)
    assert config.get("params_total") == 35_000_000_000

    wb = openpyxl.Workbook()
    hidden = wb.active
    hidden.title = "Scratch"
    hidden.append(["garbage"])
    hidden.sheet_state = "hidden"
    visible = wb.create_sheet("Configs")
    visible.append(["name", "params_total"])
    visible.append(["n", 7])
    path = tmp_path / "hidden.xlsx"
    wb.save(path)
    (config,) = read_configs(path)
    assert config.name == "n" and config.source == "hidden.xlsx Configs row 2"


def test_xlsx_percent_formatted_mfu_and_blank_rows(tmp_path):
    """A 40% cell is 0.4; empty rows are skipped and row numbers stay Excel's."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Inputs"
    ws.append(["name", "params_total", "mfu", "notes"])
    ws.append(["a", 7e9, 0.4, None])
    ws["C2"].number_format = "0%"
    ws.append([])
    ws.append([None, None, None, "   "])
    ws.append(["b", "8,190,735,360", "45%", 123])
    ws["A40"].number_format = "0.00"  # formatted but empty trailing row
    path = tmp_path / "inputs.xlsx"
    wb.save(path)
    a, b = read_configs(path)
    assert a.get("mfu") == 0.4 and b.get("mfu") == 0.45
    assert b.source == "inputs.xlsx Inputs row 5"
    assert b.get("notes") == "123"


def test_read_configs_accepts_str_path(tmp_path):
    """A str path works as well as a Path."""
    path = write_csv(tmp_path, "name,params_total\nm,1\n")
    assert read_configs(str(path))[0].get("params_total") == 1


def test_input_error_is_the_only_failure(tmp_path):
    """A bad cell raises InputError (a LedgerError), not ValueError."""
    with pytest.raises(InputError):
        read_configs(write_csv(tmp_path, "name,params_total\nm,seven\n"))


# --- mappings: the library's rows, checked like file rows ------------------------------------

BAD_VALUES = [
    # column, a bad value: text as a CSV cell holds it, numbers as a workbook's number cell does
    ("dp", "eight"),  # not a number
    ("dp", "1.5"),  # not a whole number
    ("dp", 1.5),
    ("zero", "4"),  # out of range
    ("zero", 4),
    ("mfu", 40),  # did you mean 40%?
    ("weight_dtype", "fp12"),  # not one of the choices
    ("seq_len", "32K"),  # a suffix outside the count columns
    ("notes", "a\x07b"),  # a control character
]


def _problems(exc: InputError) -> list[tuple]:
    return [(p.column, p.expected, p.found) for p in exc.problems]


@pytest.mark.parametrize("column,value", BAD_VALUES, ids=[f"{c}={v!r}" for c, v in BAD_VALUES])
def test_a_bad_mapping_value_gets_the_message_a_bad_file_cell_gets(tmp_path, column, value):
    """config_from_mapping runs each value through the cell conversion of a file row: the same
    column, expectation and finding as the CSV cell holding that text (or the workbook cell
    holding that number), with the mapping's source and row."""
    from ledger_report.inputs import config_from_mapping

    with pytest.raises(InputError) as from_file:
        if isinstance(value, str):
            read_configs(write_csv(tmp_path, f"name,params_total,{column}\nm,7B,{value}\n"))
        else:
            read_configs(
                write_xlsx(tmp_path, [["name", "params_total", column], ["m", "7B", value]])
            )
    with pytest.raises(InputError) as from_mapping:
        config_from_mapping({"name": "m", "params_total": "7B", column: value}, source="job.py")
    assert _problems(from_mapping.value) == _problems(from_file.value)
    assert str(from_mapping.value).startswith(f'job.py, row 1, column "{column}": expected ')


def test_a_contradiction_in_a_mapping_gets_the_message_a_csv_row_gets(tmp_path):
    """The cross-column checks run on mappings too (ep must divide dp·cp·tp/etp)."""
    from ledger_report.inputs import config_from_mapping

    with pytest.raises(InputError) as from_file:
        read_configs(write_csv(tmp_path, "name,params_total,dp,tp,ep\nm,7B,4,2,3\n"))
    with pytest.raises(InputError) as from_mapping:
        config_from_mapping({"name": "m", "params_total": 7 * 10**9, "dp": 4, "tp": 2, "ep": 3})
    assert _problems(from_mapping.value) == _problems(from_file.value)
    assert 'mapping, row 1, column "ep"' in str(from_mapping.value)


def test_an_unknown_mapping_key_gets_the_unknown_column_message(tmp_path):
    """An unknown key is refused like an unknown column (with the suggestion), less the position."""
    from ledger_report.inputs import config_from_mapping

    with pytest.raises(InputError) as from_file:
        read_configs(write_csv(tmp_path, "name,params_total,parms_total\nm,7B,7B\n"))
    with pytest.raises(InputError) as from_mapping:
        config_from_mapping({"name": "m", "params_total": "7B", "parms_total": "7B"})
    (file_problem,), (mapping_problem,) = from_file.value.problems, from_mapping.value.problems
    assert mapping_problem.expected == file_problem.expected
    assert (
        file_problem.found
        == 'unknown column "parms_total" in field 3 (C) (did you mean "params_total"?)'
    )
    assert mapping_problem.found == 'unknown column "parms_total" (did you mean "params_total"?)'


def test_engine_config_from_mapping_is_the_checked_one():
    """engine.config_from_mapping is the reader's: {'dp': 'eight'} is an InputError there, not a
    TypeError later in compute."""
    from ledger_report import engine, inputs

    assert engine.config_from_mapping is inputs.config_from_mapping
    with pytest.raises(InputError, match='column "dp": expected a whole number ≥ 1; found "eight"'):
        engine.config_from_mapping({"name": "m", "params_total": 7 * 10**9, "dp": "eight"})


def test_mapping_values_are_converted_like_cells():
    """8, '35B', 1e11, '40%', ' BF16 ' and numpy numbers are accepted and typed as from a file;
    None and '' are empty cells."""
    import numpy as np

    from ledger_report.inputs import config_from_mapping

    config = config_from_mapping(
        {
            "name": "m",
            "params_total": "35B",
            "dp": 8,
            "tokens": 1e11,
            "mfu": "40%",
            "weight_dtype": " BF16 ",
            "tp": np.int64(2),
            "hbm_gb": np.float32(80),
            "pp": None,
            "notes": "",
            "glu": "yes",
        }
    )
    assert config.given() == {
        "name": "m",
        "params_total": 35 * 10**9,
        "weight_dtype": "bf16",
        "dp": 8,
        "tp": 2,
        "glu": True,
        "hbm_gb": 80.0,
        "mfu": 0.4,
        "tokens": 10**11,
    }
    assert type(config.get("tokens")) is int and type(config.get("tp")) is int
    assert config.source == "mapping row 1"


def test_records_are_rows_and_every_problem_is_reported():
    """configs_from_records: the n-th mapping is row n; names are unique across them; all the
    problems come in one InputError."""
    from ledger_report.inputs import configs_from_records

    good = configs_from_records(
        [{"name": "a", "params_total": "7B"}, {"name": "b", "params_total": 8}], source="sweep"
    )
    assert [(c.name, c.source) for c in good] == [("a", "sweep row 1"), ("b", "sweep row 2")]
    assert configs_from_records([]) == []
    with pytest.raises(InputError) as info:
        configs_from_records(
            [
                {"name": "a", "params_total": 1},
                {"name": "A ", "params_total": 1},
                {"params_total": 1, "dp": 0},
            ]
        )
    message = str(info.value)
    assert (
        'records, row 2, column "name": expected a name unique in the file; found "A " again (first at row 1)'
        in message
    )
    assert 'records, row 3, column "dp"' in message and 'records, row 3, column "name"' in message


def test_a_gpu_outside_the_catalogue_is_described_by_the_row(tmp_path):
    """An accelerator the catalogue lacks (H100 NVL: 94 GB, 835 dense BF16 TFLOP/s, NVIDIA H100 datasheet
    2023: 1,671 with sparsity) is accepted with hbm_gb and peak_tflops; the page says it is user-described,
    and the figures come from the row: HBM 94 × 10^9 bytes, peak 835 × 10^12 FLOP/s."""
    from ledger_report.engine import compute

    (config,) = read_configs(
        write_csv(
            tmp_path, "name,params_total,gpu,hbm_gb,peak_tflops,dp\nnvl,7B,H100-NVL,94,835,8\n"
        )
    )
    assert config.get("gpu") == "H100-NVL"
    lg = compute(config)
    assert lg["gpu_in_catalogue"] is False and lg["gpu_profile"] == "user-described"
    assert lg["hbm_bytes"] == 94 * 10**9 and lg["bf16_peak_flops"] == 835e12
    assert lg["note_user_gpu_shown"] is True and lg["note_user_gpu"].startswith(
        "User-described accelerator H100-NVL: 94.0 GB of HBM"
    )
    assert lg["gpus_per_node"] == 8  # the plain PCIe server's node


def test_a_gpu_outside_the_catalogue_without_its_figures_is_refused_with_a_hint(tmp_path):
    """Without hbm_gb and peak_tflops the row is refused on the gpu column, naming what is missing and the
    catalogue names it resembles ("H100" could be either H100 part)."""
    with pytest.raises(InputError) as exc:
        read_configs(write_csv(tmp_path, "name,params_total,gpu,peak_tflops\nm,7B,H100,900\n"))
    ((column, expected, found),) = _problems(exc.value)
    assert column == "gpu"
    assert (
        expected
        == "a GPU of the catalogue (ledger-report gpus), or hbm_gb and peak_tflops to describe it"
    )
    assert (
        found
        == "H100 is not in the catalogue and hbm_gb = empty, peak_tflops = 900 — did you mean H100-SXM or H100-PCIe?"
    )


def test_a_workbook_without_an_inputs_sheet_names_the_sheet_it_read(tmp_path):
    """The rows come from the sheet named Inputs, else the first visible sheet; in that case every
    message says which sheet was read, so a user with a "Notes" sheet first sees why."""
    import openpyxl

    wb = openpyxl.Workbook()
    wb.active.title = "Notes"
    wb.active.append(["hello"])
    wb.create_sheet("Configs").append(["name"])
    path = tmp_path / "two.xlsx"
    wb.save(path)
    with pytest.raises(InputError) as err:
        read_configs(path)
    assert all("sheet 'Notes': no sheet is named Inputs" in str(p) for p in err.value.problems)


def test_text_cells_are_not_remembered_between_reads(tmp_path):
    """The reader remembers each column's distinct cell texts with their values (a sweep repeats
    them), but not a text column's: names and notes are mostly distinct and may be long, so a
    notebook that reads big files would hold them until it exits (found in review: 20,000 rows of
    2 kB notes kept 45 MB after the result was dropped).  Each row's notes still read whole."""
    import csv

    from ledger_report.inputs.tables import KNOWN

    rows = list(csv.DictReader((ROOT / "inputs" / "examples.csv").open(encoding="utf-8")))
    for i, row in enumerate(rows):
        row["notes"] = f"note {i} " + "x" * 2000
    path = tmp_path / "long_notes.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (tmp_path / "configs").symlink_to(ROOT / "inputs" / "configs")
    configs = read_configs(path)
    assert [c.values["notes"][:8] for c in configs[:2]] == ["note 0 x", "note 1 x"]
    assert len(KNOWN["notes"]) == len(KNOWN["name"]) == 0
    assert len(KNOWN["dp"]) > 0  # a number column's texts are remembered


@pytest.mark.parametrize(
    "cell, value",
    [("t", True), ("F", False), ("1.0", True), ("0.0", False), ("On", True), ("n", False)],
)
def test_truth_values_as_databases_and_spreadsheets_write_them(tmp_path, cell, value):
    """qk_norm (a truth column) read from the spellings exports give: PostgreSQL prints t/f, a
    1/0 column saved from pandas or a spreadsheet as floats gives 1.0/0.0 (each refused before
    as "true or false (also yes/no, 1/0)")."""
    [config] = read_configs(write_csv(tmp_path, f"name,params_total,qk_norm\nm,7B,{cell}\n"))
    assert config.values["qk_norm"] is value


def test_a_truth_cell_not_one_of_the_spellings_names_them_all(tmp_path):
    """A cell that is no truth value is refused with every spelling the reader takes."""
    with pytest.raises(InputError) as exc:
        read_configs(write_csv(tmp_path, "name,params_total,qk_norm\nm,7B,maybe\n"))
    [p] = exc.value.problems
    assert (
        p.column == "qk_norm" and p.expected == "true or false (also yes/no, y/n, t/f, on/off, 1/0)"
    )


@pytest.mark.parametrize(
    "cell, gb_s",
    [("3.35 TB/s", 3350.0), ("900 GB/s", 900.0), ("900GB/s", 900.0), ("2 TiB/s", 2 * 2**40 / 1e9)],
)
def test_a_rate_cell_may_carry_its_unit(tmp_path, cell, gb_s):
    """hbm_gb_s is counted in GB/s (10^9 bytes a second): a datasheet's "3.35 TB/s" (the H100 SXM's
    HBM3) is 3,350 GB/s, "2 TiB/s" 2 × 2^40 / 10^9 = 2,199.02 GB/s; before, the unit was refused
    as "expected a number > 0" with no word of it; a size's unit in a rate column is still
    refused."""
    text = f"name,params_total,gpu,hbm_gb_s\nm,7B,H100-SXM,{cell}\n"
    [config] = read_configs(write_csv(tmp_path, text))
    assert config.values["hbm_gb_s"] == pytest.approx(gb_s, rel=1e-12)
    with pytest.raises(InputError):
        read_configs(write_csv(tmp_path, "name,params_total,gpu,hbm_gb_s\nm,7B,H100-SXM,80 GB\n"))


@pytest.mark.parametrize("cell", ["80 GB GB", "NaN GB", "abc TB/s"])
def test_a_bad_cell_with_a_unit_is_shown_as_typed(tmp_path, cell):
    """A cell with a unit whose number part is bad is refused showing the whole cell, not the
    part before the unit (before: "80 GB GB" was reported as found "80 GB", "NaN GB" as "NaN")."""
    column = "hbm_gb_s" if cell.endswith("/s") else "hbm_gb"
    text = f"name,params_total,gpu,{column}\nm,7B,H100-SXM,{cell}\n"
    with pytest.raises(InputError) as exc:
        read_configs(write_csv(tmp_path, text))
    [p] = exc.value.problems
    assert p.column == column and p.found == f'"{cell}"'


def test_an_excel_sep_line_names_the_delimiter_and_keeps_the_line_numbers(tmp_path):
    """Excel reads a first line "sep=;" as the delimiter of the file, and some exports write it;
    the reader takes it so too (before, "sep=;" was read as an unknown column), and the lines
    below keep their numbers: a bad dp on the file's line 4 is reported as line 4."""
    text = "sep=;\r\nname;params_total;dp\r\nm;7B;2\r\nn;7B;two\r\n"
    with pytest.raises(InputError) as exc:
        read_configs(write_csv(tmp_path, text))
    [p] = exc.value.problems
    assert (p.row, p.column) == (4, "dp")
    good = read_configs(write_csv(tmp_path, "\ufeffsep=;\nname;params_total;dp\nm;7B;2\n"))
    assert [(c.name, c.values["dp"]) for c in good] == [("m", 2)]
