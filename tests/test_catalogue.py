"""The built-in accelerator catalogue: figures, units, sources and name matching."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pytest

from ledger_report import catalogue
from ledger_report.catalogue import (
    GPU_NAMES,
    GPUS,
    Gpu,
    find_gpu,
    normalise_gpu_name,
    parse_catalogue,
)

REPO = Path(__file__).resolve().parents[1]

REQUIRED_NAMES = (
    "H100-SXM", "H100-PCIe", "H800", "H200", "H20", "A100-80GB", "A100-40GB",
    "B200", "GB200", "MI300X", "MI325X", "Gaudi3", "L40S",
)  # fmt: skip

# name: (nominal HBM GB as sold, dense BF16 TFLOP/s, HBM TB/s), each from the vendor document named in the id.
VENDOR_FIGURES = {
    "H100-SXM": (80, 989, 3.35),  # NVIDIA H100 datasheet 2023: 1,979 with sparsity / 2
    "H100-PCIe": (80, 756, 2.0),  # NVIDIA H100 datasheet 2023: PCIe 1,513 with sparsity / 2
    "H800": (80, 989, 3.35),  # NVIDIA H800 datasheet 2023
    "H200": (141, 989, 4.8),  # NVIDIA H200 datasheet 2024
    "H20": (96, 148, 4.0),  # NVIDIA HGX H20 specification 2024
    "A100-80GB": (80, 312, 2.039),  # NVIDIA A100 datasheet 2021: SXM 80GB 2,039 GB/s
    "A100-40GB": (40, 312, 1.555),  # NVIDIA A100 datasheet 2021: SXM 40GB 1,555 GB/s
    "B200": (
        180,
        2250,
        8.0,
    ),  # DGX B200 datasheet 2024: 1,440 GB / 8; HGX B200 36 PF sparse / 8 / 2
    "GB200": (
        186,
        2500,
        8.0,
    ),  # GB200 NVL72 2024: 13.4 TB / 72; 360 PF sparse / 72 / 2; 576 TB/s / 72
    "MI300X": (192, 1307.4, 5.3),  # AMD MI300X datasheet 2023
    "MI325X": (256, 1307.4, 6.0),  # AMD MI325X datasheet 2024
    "Gaudi3": (128, 1835, 3.7),  # Intel Gaudi 3 white paper 2024
    "L40S": (48, 362.05, 0.864),  # NVIDIA L40S datasheet 2023: 733 with sparsity / 2
}


def test_h100_sxm_is_80_gb_and_989_tflops():
    """H100-SXM: sold as 80 GB; CUDA gives a process 79.11 GiB of it (PyTorch's out-of-memory message on an
    H100 80GB HBM3: "GPU 0 has a total capacity of 79.11 GiB"), 79.11 × 2^30 = 84.94 × 10^9 bytes; 989 dense
    BF16 TFLOP/s, the figure docs/scenarios.md uses (NVIDIA H100 datasheet 2023: 1,979 with sparsity)."""
    gpu = GPUS["H100-SXM"]
    assert gpu.hbm_nominal_gb == 80
    assert gpu.hbm_gb == round(79.11 * 2**30 / 1e9, 2) == 84.94
    assert gpu.peak_tflops == 989


def test_h20_is_96_gb_and_148_tflops():
    """H20: sold as 96 GB HBM3 and 148 dense BF16 TFLOP/s (NVIDIA HGX H20 specification 2024); nvidia-smi shows
    97,871 MiB, of which CUDA gives a process about 95.0 GiB = 102.0 GB."""
    gpu = GPUS["H20"]
    assert (gpu.hbm_nominal_gb, gpu.peak_tflops) == (96, 148)
    assert gpu.hbm_gb == round(95.0 * 2**30 / 1e9, 2)
    assert gpu.hbm_gb < 97_871 * 2**20 / 1e9  # below what nvidia-smi shows


@pytest.mark.parametrize(
    "name, gib",
    [
        ("H100-SXM", 79.11),
        ("H200", 139.80),
        ("A100-80GB", 79.15),
        ("A100-40GB", 39.39),
        ("B200", 178.35),
        ("GB200", 184.31),
        ("MI300X", 191.98),
        ("MI325X", 255.98),
    ],
)
def test_usable_memory_is_what_pytorch_reports(name, gib):
    """The usable HBM is the device total PyTorch prints when it runs out of memory ("total capacity of
    <gib> GiB", quoted in public issue threads for each part), in GB; it sits below the nominal figure's GiB."""
    gpu = GPUS[name]
    assert gpu.hbm_gb == round(gib * 2**30 / 1e9, 2)
    assert gpu.hbm_gb * 1e9 < gpu.hbm_nominal_gb * 2**30


@pytest.mark.parametrize("name", list(VENDOR_FIGURES), ids=list(VENDOR_FIGURES))
def test_vendor_figures(name):
    """HBM GB, dense BF16 TFLOP/s and HBM TB/s match the vendor document named beside VENDOR_FIGURES."""
    hbm_gb, tflops, tb_s = VENDOR_FIGURES[name]
    gpu = GPUS[name]
    assert gpu.hbm_nominal_gb == pytest.approx(hbm_gb)
    assert gpu.peak_tflops == pytest.approx(tflops)
    assert gpu.hbm_tb_s == pytest.approx(tb_s)


def test_required_rows_present_and_in_file_order():
    """Every name the brief requires is a row; GPU_NAMES is the file order of the CSV."""
    assert set(REQUIRED_NAMES) <= set(GPU_NAMES)
    csv_names = [
        line.split(",", 1)[0]
        for line in (REPO / "ledger_report/data/gpus.csv")
        .read_text(encoding="utf-8")
        .splitlines()[1:]
        if line.strip()
    ]
    assert list(GPU_NAMES) == csv_names == list(GPUS)


def test_every_row_names_a_dated_source():
    """Every row's source names a vendor document with its year, e.g. 'NVIDIA H100 ... datasheet (2023)'."""
    for gpu in GPUS.values():
        assert gpu.source.strip(), gpu.name
        assert re.search(r"\((?:19|20)\d\d\)", gpu.source), gpu.name


def test_every_number_positive_and_typed():
    """Every numeric column is a positive finite float, gpus_per_node a positive int."""
    for gpu in GPUS.values():
        for field in (
            "hbm_gb",
            "peak_tflops",
            "hbm_tb_s",
            "host_link_gb_s",
            "interconnect_gb_s",
            "host_gb",
        ):
            value = getattr(gpu, field)
            assert isinstance(value, float) and math.isfinite(value) and value > 0, (
                gpu.name,
                field,
            )
        assert isinstance(gpu.gpus_per_node, int) and gpu.gpus_per_node > 0, gpu.name


def test_names_unique_under_matching_normalisation():
    """No two names collide once case, spaces, underscores and hyphens are ignored (H20 vs H200 stay apart)."""
    keys = [normalise_gpu_name(n) for n in GPU_NAMES]
    assert len(keys) == len(set(keys))
    assert find_gpu("H20") is GPUS["H20"] and find_gpu("H200") is GPUS["H200"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("h100 sxm", "H100-SXM"),
        ("H100_SXM", "H100-SXM"),
        ("  H100-sxm ", "H100-SXM"),
        ("gaudi-3", "Gaudi3"),
        ("GAUDI 3", "Gaudi3"),
        ("a100_80gb", "A100-80GB"),
        ("mi300x", "MI300X"),
        ("gb-200", "GB200"),
        ("h100pcie", "H100-PCIe"),
    ],
    ids=lambda v: v,
)
def test_find_gpu_ignores_case_spaces_underscores_hyphens(query, expected):
    """find_gpu matches the brief's examples ('h100 sxm', 'H100_SXM', 'gaudi-3') and similar spellings."""
    assert find_gpu(query) is GPUS[expected]


@pytest.mark.parametrize("query", ["", " - ", "H100", "A100", "TPUv5p", "H2O"], ids=repr)
def test_find_gpu_unknown_is_none(query):
    """Ambiguous or unknown names give None (the caller reports them), never a guessed entry."""
    assert find_gpu(query) is None


def test_gpu_is_frozen():
    """Catalogue entries are frozen: an override builds a new Gpu, it never edits the shared one."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        GPUS["H100-SXM"].hbm_gb = 94  # type: ignore[misc]
    changed = dataclasses.replace(GPUS["H100-SXM"], hbm_gb=94.0)
    assert changed.hbm_gb == 94.0 and GPUS["H100-SXM"].hbm_gb == 84.94


def test_same_die_same_peak():
    """Parts sharing a die share the dense peak: H800 and H200 = H100-SXM (989), MI325X = MI300X (1,307.4), per their datasheets."""
    assert (
        GPUS["H800"].peak_tflops == GPUS["H200"].peak_tflops == GPUS["H100-SXM"].peak_tflops == 989
    )
    assert GPUS["MI325X"].peak_tflops == GPUS["MI300X"].peak_tflops == 1307.4
    assert GPUS["A100-80GB"].peak_tflops == GPUS["A100-40GB"].peak_tflops == 312


def test_host_links_and_nodes():
    """Host link per direction: PCIe Gen5 x16 64, Gen4 x16 32, NVLink-C2C 900; GB200 node = 2 superchips = 4 GPUs, 2 x 480 GB LPDDR5X (GB200 NVL72 specifications 2024)."""
    assert GPUS["H100-SXM"].host_link_gb_s == 64
    assert GPUS["A100-80GB"].host_link_gb_s == 32
    assert GPUS["L40S"].host_link_gb_s == 32
    assert GPUS["GB200"].host_link_gb_s == 900
    assert GPUS["GB200"].gpus_per_node == 4 and GPUS["GB200"].host_gb == 960
    assert (
        GPUS["H100-SXM"].gpus_per_node == 8 and GPUS["H100-SXM"].host_gb == 2048
    )  # DGX H100: 2 TB
    assert GPUS["H800"].interconnect_gb_s == 400  # H800 datasheet: NVLink cut to 400 GB/s


def test_sm_counts_are_the_published_ones():
    """SMs the GEMM tiles are scheduled on (tile and wave quantization in definitions/time.py):
    stas00/ml-engineering @744d01e1 compute/accelerator/README.md 'Caches' table: A100 SXM 108 SMs,
    H100 SXM and H200 SXM 132; NVIDIA H100 architecture white paper: H100 PCIe 114.  A part with no
    published count has none (no wave quantization is modelled for it)."""
    assert GPUS["A100-80GB"].sms == GPUS["A100-40GB"].sms == GPUS["A800"].sms == 108
    assert GPUS["H100-SXM"].sms == GPUS["H200"].sms == GPUS["H800"].sms == 132
    assert GPUS["H100-PCIe"].sms == 114
    assert GPUS["MI300X"].sms is None and GPUS["Gaudi3"].sms is None
    for gpu in GPUS.values():
        assert ("SMs: " in gpu.source) and (gpu.sms is None or gpu.sms > 0), gpu.name


def test_parse_rejects_bad_rows():
    """A malformed catalogue fails loudly, naming the line and column: negative, non-numeric, clashing name, wrong header."""
    header = ",".join(catalogue.COLUMNS)
    good = (
        "X1,80,80,989,3.35,64,NVLink,900,8,2048,1979,50,13.3,30.72,614.4,0.56,0.50,132,Doc (2023)"
    )
    assert parse_catalogue(f"{header}\n{good}\n")["X1"].peak_tflops == 989
    assert parse_catalogue(f"{header}\n{good}\n")["X1"].sms == 132
    assert parse_catalogue(f"{header}\n{good.replace(',132,', ',,')}\n")["X1"].sms is None
    with pytest.raises(
        ValueError, match=r"line 2: column 'hbm_gb' expected a positive number; found '-80'"
    ):
        parse_catalogue(f"{header}\n{good.replace(',80,', ',-80,')}\n")
    with pytest.raises(
        ValueError, match=r"line 2: column 'peak_tflops' expected a number; found 'lots'"
    ):
        parse_catalogue(f"{header}\n{good.replace(',989,', ',lots,')}\n")
    with pytest.raises(ValueError, match=r"line 3: name 'x_1' clashes with 'X1'"):
        parse_catalogue(f"{header}\n{good}\n{good.replace('X1', 'x_1')}\n")
    with pytest.raises(ValueError, match=r"column 'source' expected text"):
        parse_catalogue(f"{header}\n{good.replace('Doc (2023)', '')}\n")
    with pytest.raises(ValueError, match="header expected"):
        parse_catalogue("name,hbm\nX,1\n")
    with pytest.raises(
        ValueError, match=r"column 'gemm_efficiency' expected a fraction at most 1; found '1.2'"
    ):
        parse_catalogue(f"{header}\n{good.replace(',0.56,', ',1.2,')}\n")
    no_fp8 = parse_catalogue(f"{header}\n{good.replace(',1979,', ',,').replace(',0.50,', ',,')}\n")[
        "X1"
    ]
    assert (
        no_fp8.fp8_tflops is None and no_fp8.fp8_gemm_efficiency is None
    )  # empty: the part has no FP8


def test_catalogue_ships_in_the_wheel():
    """gpus.csv is package data of ledger_report.data (pyproject), read through importlib.resources, not a source-tree path."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools_cfg = pyproject["tool"]["setuptools"]
    assert "ledger_report.data" in setuptools_cfg["packages"]
    assert "*.csv" in setuptools_cfg["package-data"]["ledger_report.data"]
    source = (REPO / "ledger_report/data/__init__.py").read_text(encoding="utf-8")  # data.text
    assert "resources.files(__name__)" in source


def test_catalogue_is_pure_stdlib():
    """The engine may import the catalogue: it imports no pandas, click, openpyxl, jinja2 or weasyprint (STYLE.md habit 1)."""
    import ast

    tree = ast.parse(Path(catalogue.__file__).read_text(encoding="utf-8"))
    imported = {
        (node.module or "").split(".")[0]
        if isinstance(node, ast.ImportFrom)
        else alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    assert not imported & {"pandas", "click", "openpyxl", "jinja2", "weasyprint", "numpy"}


def test_gpu_fields_are_the_csv_columns():
    """Gpu's fields are exactly the CSV header, in order."""
    header = (REPO / "ledger_report/data/gpus.csv").read_text(encoding="utf-8").splitlines()[0]
    assert (
        tuple(header.split(","))
        == tuple(f.name for f in dataclasses.fields(Gpu))
        == catalogue.COLUMNS
    )


# name: dense FP8 TFLOP/s (vendor "with sparsity" figure halved), or None where the part has no FP8.
FP8_FIGURES = {
    "H100-SXM": 1979,  # NVIDIA H100 datasheet 2023: 3,958 with sparsity
    "H100-PCIe": 1513,  # NVIDIA H100 datasheet 2023: PCIe 3,026 with sparsity
    "H800": 1979,  # NVIDIA H800 datasheet 2023
    "H200": 1979,  # NVIDIA H200 datasheet 2024
    "H20": 296,  # HGX H20 specification 2024 (as reported)
    "B200": 4500,  # DGX B200 2024: 72 PFLOPS FP8 sparse / 8 / 2
    "GB200": 5000,  # GB200 NVL72 2024: 720 PFLOPS FP8 sparse / 72 / 2
    "MI300X": 2614.9,  # AMD MI300X datasheet 2023: 5,229.8 with sparsity
    "MI325X": 2614.9,  # AMD MI325X datasheet 2024
    "Gaudi3": 1835,  # Intel Gaudi 3 white paper 2024: FP8 = BF16 matrix rate
    "L40S": 733,  # NVIDIA L40S datasheet 2023: 1,466 with sparsity
    "A100-80GB": None,
    "A100-40GB": None,
    "A800": None,  # Ampere: no FP8 tensor cores
}


@pytest.mark.parametrize("name", list(FP8_FIGURES), ids=list(FP8_FIGURES))
def test_dense_fp8_peaks(name):
    """Dense FP8 TFLOP/s match the vendor document named beside FP8_FIGURES; Ampere parts have none."""
    expected = FP8_FIGURES[name]
    got = GPUS[name].fp8_tflops
    assert got is None if expected is None else got == pytest.approx(expected)


def test_topology_figures():
    """DGX H100: 8x ConnectX-7 400 Gb/s = 50 GB/s per GPU; DGX A100: 8x HDR 200 Gb/s = 25 (DGX datasheets 2020/2023);
    8x 3.84 TB NVMe = 30.72 TB; 2 sockets x 8 channels DDR5-4800 = 614.4 GB/s host memory."""
    h100, a100 = GPUS["H100-SXM"], GPUS["A100-80GB"]
    assert h100.network_gb_s == 50 and a100.network_gb_s == 25
    assert h100.nvme_tb == 30.72 and h100.host_mem_gb_s == 614.4
    assert 0 < h100.nvme_gb_s < h100.host_link_gb_s  # NVMe is slower than the PCIe link to the GPU


def test_a800_is_an_a100_with_400_gb_s_nvlink():
    """NVIDIA A800 datasheet 2022: the A100-80GB die (312 dense BF16, 2,039 GB/s) with NVLink cut to 400 GB/s; no FP8."""
    a800, a100 = GPUS["A800"], GPUS["A100-80GB"]
    assert (a800.hbm_gb, a800.peak_tflops, a800.hbm_tb_s) == (
        a100.hbm_gb,
        a100.peak_tflops,
        a100.hbm_tb_s,
    )
    assert a800.interconnect_gb_s == 400 and a100.interconnect_gb_s == 600
    assert a800.fp8_tflops is None


def test_every_row_states_its_gemm_efficiency_basis():
    """Every row's source says where its GEMM efficiency comes from: the measured maximum achievable matmul
    table (or an assumption), and the training factor calibrated on the published runs."""
    for gpu in GPUS.values():
        assert 0 < gpu.gemm_efficiency <= 1, gpu.name
        assert "GEMM efficiency" in gpu.source and "sustained in training" in gpu.source, gpu.name
