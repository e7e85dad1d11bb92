"""The handout PDF (CONTRACT §6, issue 4): one A4-landscape page per configuration after a summary,
the engine's figures as ``document()`` gives them, Chinese with the Simplified Chinese face, no
WeasyPrint warning, nothing fetched or embedded from user text, one page however full, and the same
bytes for the same input.

Evidence: reliability.md §3.3 (PDF-01..08) and §4.4 (DET-01/05); ecosystem.md §4.2 (the JP/SC trap,
tofu visible only in the log and in pdffonts) and §4.4 (the attachment leak through ``file://``).
The PDFs are read back with poppler-utils (pdfinfo, pdftotext, pdffonts, pdfdetach); a missing
poppler or CJK font fails these tests rather than skipping them (scripts/setup.sh installs both).
"""

from __future__ import annotations

import gc
import os
import re
import subprocess
from pathlib import Path

import jinja2
import pytest

from ledger_report.engine import config_from_mapping
from ledger_report.render.document import handout_document as document
from ledger_report.model import units
from ledger_report.render import handout

QWEN3_8B = {
    "name": "qwen3-8b-zero1",
    "notes": "Seed 004: ZeRO-1 on 4 GPUs = 4N + 12N/4 = 7N.",
    "layers": 36, "hidden": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128, "ffn_hidden": 12288,
    "vocab": 151936, "qk_norm": True, "seq_len": 8192, "global_batch": 384, "tokens": 10**11,
    "days": 30, "reserve_days": 5, "dp": 4, "zero": 1, "price_per_gpu_hour": 2.5,
}
MOE_35B = {
    "name": "moe35b-ep8-bf16-buffer",
    "notes": "Seed 000: bf16 grad buffer, 13.8 + 13.8 + 10.5 = 38.1 GB resident; measured peak 85.6 GB.",
    "params_total": 35 * 10**9, "params_per_rank": 6_900_000_000, "params_active": 3 * 10**9,
    "layers": 48, "hidden": 2048, "heads": 16, "kv_heads": 2, "head_dim": 256, "ffn_hidden": 512,
    "vocab": 151936, "qk_norm": True, "experts": 256, "topk": 8, "moe_ffn_hidden": 512,
    "shared_expert_ffn": 512, "full_attention_every": 4, "framework": "megatron",
    "weight_dtype": "bf16", "grad_dtype": "bf16", "dp": 40, "ep": 8, "zero": 1, "seq_len": 49152,
    "micro_batch": 1, "global_batch": 80, "recompute": "full", "logits_dtype": "bf16", "gpu": "H20",
    "mfu": 0.4, "measured_peak_gb": 85.6,
}
# Parameter counts only: no architecture, no tokens, so many figures are null (printed as "—").
MOE_5T = {
    "name": "moe5t-18B", "notes": "Seed 002: 90 TB = 81.9 TiB.", "params_total": 5 * 10**12,
    "weight_dtype": "bf16", "grad_dtype": "fp32", "master_dtype": "fp32",
}
# Master weights and moments offloaded to host memory: location column and offload rows.
OFFLOAD = {
    "name": "deepspeed-z3-offload-13b", "layers": 40, "hidden": 5120, "heads": 40, "ffn_hidden": 13824,
    "vocab": 32000, "framework": "deepspeed", "dp": 8, "zero": 3, "master_at": "host",
    "optimizer_at": "host", "seq_len": 4096, "global_batch": 64, "recompute": "full",
    "gpu": "A100-80GB", "mfu": 0.35, "tokens": 20 * 10**9, "days": 10, "reserve_days": 1,
    "price_per_gpu_hour": 1.8,
}
HOSTILE_NOTE = (
    '<a rel="attachment" href="file:///etc/passwd">passwd</a> <img src="file:///etc/hostname">'
    '<link rel="attachment" href="file:///etc/passwd"><style>@import url("file:///etc/hostname");</style>'
    "<script>alert(1)</script></td></tr> {{ 7*7 }} &lt;"
)


def _doc(*rows: dict) -> dict:
    return document([config_from_mapping(r) for r in rows])


def _run(*args: str | os.PathLike) -> str:
    return subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True).stdout


def _pages_text(pdf_path: Path) -> list[str]:
    """pdftotext per page (form feeds separate pages), runs of whitespace collapsed to one space."""
    raw = _run("pdftotext", "-raw", "-enc", "UTF-8", pdf_path, "-")  # content-stream order: a wrapped cell stays together
    pages = raw.split("\f")
    if pages and not pages[-1].strip():
        pages.pop()
    return [re.sub(r"\s+", " ", p) for p in pages]


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def _page_count(pdf_path: Path) -> int:
    return int(re.search(r"^Pages:\s+(\d+)", _run("pdfinfo", pdf_path), re.M).group(1))


def _render(tmp: Path, name: str, doc: dict, lang: str) -> tuple[Path, bytes, list[str]]:
    warnings: list[str] = []
    pdf = handout.render_pdf(doc, lang=lang, warnings=warnings)
    path = tmp / f"{name}-{lang}.pdf"
    path.write_bytes(pdf)
    return path, pdf, warnings


@pytest.fixture(scope="module")
def doc() -> dict:
    return _doc(QWEN3_8B, MOE_35B, MOE_5T, OFFLOAD)


@pytest.fixture(scope="module")
def built(doc, tmp_path_factory) -> dict[str, tuple[Path, bytes, list[str]]]:
    """The four-configuration handout in both languages, rendered once for the module."""
    tmp = tmp_path_factory.mktemp("handout")
    return {lang: _render(tmp, "four", doc, lang) for lang in ("en", "zh")}


def _figures(c: dict, lang: str) -> list[str]:
    """The figures a configuration's page must show, formatted as the handout formats them."""
    comp = c["compute"]
    out = [
        units.gb(c["peak_bytes_per_rank"]),
        units.gb(c["state_bytes_per_rank"]),
        units.gib(c["state_bytes_per_rank"]),
        units.gb(c["hbm_bytes"]),
        units.gb(c["state_bytes_logical_total"]),
        units.num(comp["min_gpus_memory"]),
        units.params(c["params"]["total"], lang),
    ]
    out += [units.gb(s["bytes_per_rank"]) for s in c["states"]]
    out += [units.gib(s["bytes_per_rank"]) for s in c["states"]]
    out += [units.num(s["params_on_rank"]) for s in c["states"]]
    out += [units.gb(u["bytes_per_rank"]) for u in c["uncounted"] if u["bytes_per_rank"]]
    if comp["total_flops"] is not None:
        out += [
            units.sci(comp["total_flops"]),
            units.sci(comp["flops_per_token"]),
            units.num(comp["min_gpus_compute"]),
            units.num(comp["days"]),
            units.num(comp["gpu_hours"]),
        ]
    if comp["cost"] is not None:
        out.append(units.num(comp["cost"]))
    if c["measured"]:
        out.append(units.gb(c["measured"]["unexplained_bytes"]))
    return out


# --------------------------------------------------------------------------------------------
# Pages and figures


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_one_page_per_configuration_after_the_summary(built, doc, lang):
    """pdfinfo: pages = configurations + 1 summary page, each A4 landscape (841.89 × 595.28 pt)."""
    path, _, _ = built[lang]
    assert _page_count(path) == len(doc["configs"]) + 1
    sizes = re.findall(r"Page\s+\d+ size:\s+([\d.]+) x ([\d.]+)", _run("pdfinfo", "-f", "1", "-l", "5", path))
    assert sizes and all((round(float(w)), round(float(h))) == (842, 595) for w, h in sizes)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_each_page_holds_its_name_and_figures_as_the_document_gives_them(built, doc, lang):
    """Page k+1 shows configuration k's name and its figures, formatted from document() values."""
    path, _, _ = built[lang]
    pages = _pages_text(path)
    for k, c in enumerate(doc["configs"]):
        page = pages[k + 1]
        assert _squeezed(c["name"]) in _squeezed(page), c["name"]
        missing = [f for f in _figures(c, lang) if f not in page]
        assert not missing, f"{c['name']} ({lang}): missing {missing}"
        for other in doc["configs"]:
            if other is not c:
                assert _squeezed(other["name"]) not in _squeezed(page)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_formula_is_printed_with_its_numbers(built, doc, lang):
    """Each formula text of document() (numbers filled in by the engine) appears on its page."""
    path, _, _ = built[lang]
    pages = _pages_text(path)
    for k, c in enumerate(doc["configs"]):
        page = _squeezed(pages[k + 1])
        for f in c["formulas"]:
            text = f["text_zh"] if lang == "zh" else f["text"]
            assert _squeezed(text) in page, f"{c['name']} ({lang}): formula {f['key']} missing"


def test_summary_page_lists_every_candidate_ranked(built, doc):
    """The summary shows each candidate with its peak and HBM; fitting ones rank first, then cost."""
    path, _, _ = built["en"]
    summary = _pages_text(path)[0]
    for c in doc["configs"]:
        assert c["name"] in summary
        assert units.gb(c["peak_bytes_per_rank"]).replace(" GB", "") in summary
    fitting = [c["name"] for c in doc["configs"] if c["fits"] is True]
    positions = {c["name"]: summary.index(c["name"]) for c in doc["configs"]}
    others = [n for n in positions if n not in fitting]
    assert fitting and all(positions[f] < positions[o] for f in fitting for o in others)


def test_headers_break_before_the_parenthesis_never_mid_word(built):
    """A narrow summary header breaks before its parenthesised part, never inside it: the text
    layer (pdftotext, one line per laid-out line) holds "（预留）" whole on a line of its own, where
    the wrap used to give "期限天数（预" and "留）" (seen in a 110-dpi PNG of the summary)."""
    path, _, _ = built["zh"]
    lines = [line.strip() for line in _run("pdftotext", "-f", "1", "-l", "1", "-enc", "UTF-8", path, "-").splitlines()]
    for head, note in (("期限天数", "（预留）"), ("最少 GPU", "（期限）"), ("最少 GPU", "（显存）")):
        assert head in lines and any(line.startswith(note) for line in lines), (head, note)
    assert not any(line.endswith("（预") for line in lines)
    # and the items table's 计入峰值 ("in peak") column is wide enough for its header on one line
    page = _run("pdftotext", "-f", "2", "-l", "2", "-enc", "UTF-8", path, "-")
    assert "计入峰值" in page


def test_numbers_are_identical_in_english_and_chinese(doc):
    """Every number cell of the HTML is the same string in both languages (only words change)."""
    cells = {}
    for lang in ("en", "zh"):
        html = handout.render_html(doc, lang)
        cells[lang] = re.findall(r'<td class="n[^"]*">(.*?)</td>', html, flags=re.S)
    assert cells["en"] and cells["en"] == cells["zh"]


def test_state_ledger_columns_show_whole_sharded_group_and_location(built, doc):
    """The ledger rows carry stored whole/sharded, the shard group and the location (host for the
    offloaded master weights and moments)."""
    path, _, _ = built["en"]
    page = _pages_text(path)[4]  # OFFLOAD
    assert "sharded" in page and "host" in page
    assert "offloaded to host" in page


# --------------------------------------------------------------------------------------------
# Chinese


def test_chinese_build_holds_chinese_labels(built, doc):
    """--lang zh: the template's labels, the engine's Chinese labels, basis and assumptions."""
    path, _, _ = built["zh"]
    pages = _pages_text(path)
    assert "候选配置" in pages[0]
    for k, c in enumerate(doc["configs"]):
        page = _squeezed(pages[k + 1])
        for label in ("模型状态账本", "不在状态账本中的项", "算力下限", "假设", "每卡峰值"):
            assert label in page
        for s in c["states"]:
            assert _squeezed(s["label"]["zh"]) in page
        for a in c["assumptions_zh"]:
            assert _squeezed(a) in page
        for u in c["uncounted"]:
            assert _squeezed(u["basis_zh"])[:30] in page


def test_chinese_build_embeds_the_simplified_chinese_face(built):
    """pdffonts lists embedded Noto Sans CJK SC subsets and no Japanese (JP) face."""
    path, _, warnings = built["zh"]
    fonts = _run("pdffonts", path)
    rows = [line for line in fonts.splitlines()[2:] if line.strip()]
    assert any("Noto-Sans-CJK-SC" in r for r in rows), fonts
    assert all(" yes " in r for r in rows), fonts  # embedded
    assert "CJK-JP" not in fonts
    assert not [w for w in warnings if ".notdef" in w]


def test_html_names_the_sc_face_and_zh_cn(doc):
    """The HTML says lang="zh-CN" and the stylesheet names "Noto Sans CJK SC" explicitly."""
    html = handout.render_html(doc, "zh")
    assert '<html lang="zh-CN">' in html
    css = (handout.templates_dir() / "handout.css").read_text(encoding="utf-8")
    assert '"Noto Sans CJK SC"' in css


# --------------------------------------------------------------------------------------------
# Warnings


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_weasyprint_warning(built, lang):
    """Any WeasyPrint warning (tofu, the fontTools fallback without libharfbuzz-subset0, bad CSS)
    fails the build."""
    _, _, warnings = built[lang]
    assert warnings == []


def test_warnings_are_collected_not_lost(tmp_path):
    """A glyph no installed font has (U+1F99C) is reported as a .notdef warning, proving the
    collector sees WeasyPrint's log records."""
    _, _, warnings = _render(tmp_path, "tofu", _doc(dict(MOE_5T, notes="parrot \U0001F99C")), "en")
    assert any(".notdef" in w for w in warnings)


# --------------------------------------------------------------------------------------------
# Safety


def test_hostile_note_embeds_and_fetches_nothing(tmp_path, monkeypatch):
    """A note with attachment links, file:// images and CSS imports is printed as text: no
    embedded file (pdfdetach), no /EmbeddedFile in the bytes, and the only URL fetched is the
    packaged stylesheet (reliability.md PDF-01)."""
    fetched: list[str] = []
    original = handout.PackagedAssetFetcher.fetch

    def spy(self, url, headers=None):
        fetched.append(url)
        return original(self, url, headers)

    monkeypatch.setattr(handout.PackagedAssetFetcher, "fetch", spy)
    hostile = dict(QWEN3_8B, name='evil <img src="file:///etc/hostname">', notes=HOSTILE_NOTE)
    path, pdf, warnings = _render(tmp_path, "hostile", _doc(hostile), "en")
    assert warnings == []
    assert "0 embedded files" in _run("pdfdetach", "-list", path)
    assert b"/EmbeddedFile" not in pdf and b"/Filespec" not in pdf
    assert fetched and all(u.endswith("/handout.css") for u in fetched), fetched
    text = _pages_text(path)[1]
    assert '<a rel="attachment" href="file:///etc/passwd">' in text
    assert "{{ 7*7 }}" in text and "&lt;" in text
    html = handout.render_html(_doc(hostile), "en")
    assert "<img src=" not in html and "&lt;img src=&#34;file:///etc/hostname&#34;&gt;" in html


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "FILE:///etc/passwd",
        "file:/etc/passwd",
        "file://localhost/etc/passwd",
        "file://evil.example/share/x.png",
        "http://127.0.0.1:9/x.png",
        "https://example.com/x.css",
        "data:text/css,body{}",
        "ftp://example.com/x",
    ],
)
def test_fetcher_refuses_everything_outside_the_packaged_assets(url):
    """URLs that are not packaged template assets are refused, fatally."""
    fetcher = handout.PackagedAssetFetcher()
    with pytest.raises(handout.AssetRefused):
        fetcher.fetch(url)
    assert fetcher.refused == [url]


def test_fetcher_refuses_traversal_templates_and_symlinks(tmp_path):
    """Inside a template folder: the stylesheet is served; ``..`` (plain or percent-encoded), the
    folder itself, a non-asset file (a template) and a symlink pointing outside are refused."""
    root = tmp_path / "templates"
    root.mkdir()
    (root / "style.css").write_text("body { color: black }", encoding="utf-8")
    (root / "page.html.j2").write_text("{{ x }}", encoding="utf-8")
    secret = tmp_path / "secret.css"
    secret.write_text("secret", encoding="utf-8")
    (root / "link.css").symlink_to(secret)
    fetcher = handout.PackagedAssetFetcher(root)
    response = fetcher.fetch((root / "style.css").as_uri())
    # a URLFetcherResponse (WeasyPrint 68 and later), or the dict older WeasyPrint expects
    body = response.read() if hasattr(response, "read") else response["string"]
    assert body == b"body { color: black }"
    for url in [
        root.as_uri() + "/../secret.css",
        root.as_uri() + "/..%2fsecret.css",
        root.as_uri() + "/%2e%2e/secret.css",
        root.as_uri(),
        (root / "page.html.j2").as_uri(),
        (root / "link.css").as_uri(),
        (root / "missing.css").as_uri(),
        (root / "style.css").as_uri() + "?x=1",
    ]:
        with pytest.raises(handout.AssetRefused):
            fetcher.fetch(url)
    assert len(fetcher.refused) == 8


def test_a_refused_url_stops_the_render():
    """A document that asks for a file outside the templates raises instead of rendering."""
    import weasyprint

    html = weasyprint.HTML(string='<img src="file:///etc/hostname">', url_fetcher=handout.PackagedAssetFetcher())
    with pytest.raises(handout.AssetRefused):
        html.render()


def test_environment_autoescapes_and_is_strict(doc):
    """Every template autoescapes (whatever its extension) and a missing field is an error
    (reliability.md PDF-02, PDF-08)."""
    env = handout.environment()
    for name in env.list_templates():
        template = env.get_template(name)
        assert template.environment.autoescape is True, name
    assert env.undefined is jinja2.StrictUndefined
    broken = {"schema": doc["schema"], "configs": [dict(doc["configs"][0])]}
    del broken["configs"][0]["compute"]
    with pytest.raises(jinja2.UndefinedError):
        handout.render_html(broken, "en")


def test_string_tables_have_the_same_keys():
    """The English and Chinese string tables of strings.j2 name the same labels."""
    module = handout.environment().get_template("strings.j2").module
    assert set(module.en) == set(module.zh)
    assert all(isinstance(v, str) and v for v in list(module.en.values()) + list(module.zh.values()))


def test_unknown_language_is_an_error(doc):
    with pytest.raises(handout.HandoutError):
        handout.render_pdf(doc, lang="fr")


# --------------------------------------------------------------------------------------------
# One page, however full


def _overflow_rows() -> list[dict]:
    lines = "\n".join(f"line {k}: lorem ipsum dolor sit amet, consectetur adipiscing elit" for k in range(120))
    twelve_states = dict(
        MOE_35B, framework="generic", weight_dtype="fp16", grad_dtype="fp16", main_grad_dtype="fp32",
        master_dtype="fp32", master_at="host", price_per_gpu_hour=2.0, tokens=10**12, days=60,
        reserve_days=5,
    )
    return [
        dict(twelve_states, name="X" * 200, notes=lines[:5000]),
        dict(twelve_states, name=("很长的配置名称" * 40)[:200], notes=("中文备注，很长很长。" * 600)[:5000]),
        dict(QWEN3_8B, name="word " * 40, notes="A" * 5000),
    ]


def test_overflowing_configurations_stay_one_page_each(tmp_path):
    """A 5,000-character note (with 120 lines, or unbroken), a 200-character name and twelve state
    lines still give exactly one page per configuration; nothing is clipped (the renderer reports
    a clipped page as a warning) and the truncated note says so."""
    doc = _doc(*_overflow_rows())
    assert len(doc["configs"][0]["states"]) == 12
    path, _, warnings = _render(tmp_path, "overflow", doc, "en")
    assert _page_count(path) == len(doc["configs"]) + 1
    assert warnings == []
    pages = _pages_text(path)
    assert "truncated" in pages[1] and "5,000" in pages[1]
    assert _squeezed("X" * 200) in _squeezed(pages[1])


def test_overflowing_configurations_stay_one_page_each_in_chinese(tmp_path):
    """The same overflow cases in Chinese (wider glyphs) also stay one page each."""
    doc = _doc(*_overflow_rows())
    path, _, warnings = _render(tmp_path, "overflow", doc, "zh")
    assert _page_count(path) == len(doc["configs"]) + 1
    assert warnings == []
    assert "已截断" in _pages_text(path)[2]


def test_many_configurations_spread_the_summary_over_pages(tmp_path, monkeypatch):
    """Beyond SUMMARY_ROWS_PER_PAGE rows the summary continues on a further page (checked with a
    page of 3 rows, to keep the test quick)."""
    monkeypatch.setattr(handout, "SUMMARY_ROWS_PER_PAGE", 3)
    n = handout.SUMMARY_ROWS_PER_PAGE + 1
    rows = [dict(MOE_5T, name=f"cfg-{k:02d}", notes="") for k in range(n)]
    path, _, warnings = _render(tmp_path, "many", _doc(*rows), "en")
    assert _page_count(path) == n + 2
    assert warnings == []


# --------------------------------------------------------------------------------------------
# Determinism


def test_same_input_gives_byte_identical_pdf_and_leaves_the_environment_alone(monkeypatch):
    """Two renders of the same document are byte-identical (SOURCE_DATE_EPOCH fixes the font
    subsets' timestamps), and SOURCE_DATE_EPOCH is unset again afterwards (DET-01, DET-05)."""
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    doc = _doc(MOE_5T)
    first = handout.render_pdf(doc, "zh", warnings=[])
    assert "SOURCE_DATE_EPOCH" not in os.environ
    second = handout.render_pdf(doc, "zh", warnings=[])
    assert first == second
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1234567890")
    handout.render_pdf(doc, "en", warnings=[])
    assert os.environ["SOURCE_DATE_EPOCH"] == "1234567890"


# --------------------------------------------------------------------------------------------
# User text that no font draws


def test_characters_xml_forbids_are_shown_as_replacement_characters(tmp_path):
    """The reader refuses control characters, but a document built by a script may hold them:
    the page shows U+FFFD for each (no tofu, so no warning) instead of a .notdef glyph."""
    d = _doc(MOE_5T)
    d["configs"][0]["notes"] = "bell\x07 nul\x00 end\ufffe"
    assert "bell\ufffd nul\ufffd end\ufffd" in handout.render_html(d, "en")
    path, _, warnings = _render(tmp_path, "controls", d, "en")
    assert warnings == []
    assert "bell\ufffd nul\ufffd end\ufffd" in _pages_text(path)[1]


# --------------------------------------------------------------------------------------------
# Parts rendered side by side, assembled into one PDF


@pytest.mark.parametrize(
    ("n", "pages"),
    [(0, [1]), (1, [2]), (7, [8]), (8, [4, 5]), (18, [9, 10]), (100, [26, 26, 26, 26])],
)
def test_parts_are_fixed_by_the_number_of_configurations(n, pages):
    """Below 8 configurations one part; up to 32 pages two; then four (counted by hand: the
    example's 18 configurations + 1 summary page = 9 + 10; 100 + 4 summary pages = 4 × 26).
    The summary is in the first part; every configuration is in exactly one part, in order."""
    parts = handout._parts(n)
    n_summary = max(1, -(-n // handout.SUMMARY_ROWS_PER_PAGE))
    assert [len(p.configs) + (n_summary if p.summary else 0) for p in parts] == pages
    assert [p.pages for p in parts] == pages
    assert [p.summary for p in parts] == [True] + [False] * (len(parts) - 1)
    assert [i for p in parts for i in p.configs] == list(range(n))


def test_a_thousand_configurations_are_parts_of_at_most_64_pages():
    """1,000 configurations (34 summary pages): 20 parts of 51-52 pages, so no worker holds
    more than PART_MAX_PAGES laid-out pages."""
    parts = handout._parts(1000)
    sizes = [len(p.configs) + (34 if p.summary else 0) for p in parts]
    assert len(parts) == 20 and sum(sizes) == 1034 and set(sizes) == {51, 52}


def _many(n: int) -> dict:
    shapes = [QWEN3_8B, MOE_35B, MOE_5T, OFFLOAD]
    rows = [dict(shapes[k % 4], name=f"{shapes[k % 4]['name']}-{k}") for k in range(n)]
    rows[-1]["notes"] = "parrot \U0001F99C"  # a glyph no font has: a .notdef warning from the last part
    return _doc(*rows)


@pytest.fixture(scope="module")
def parted(tmp_path_factory):
    """Ten configurations (two parts), rendered in one process and by two workers."""
    assert handout._can_fork()  # else jobs=2 would quietly run in one process too
    doc = _many(handout.PARALLEL_MIN_CONFIGS + 2)
    tmp = tmp_path_factory.mktemp("parted")
    out = {}
    for jobs in (1, 2):
        warnings: list[str] = []
        calls: list[tuple[int, int]] = []
        pdf = handout.render_pdf(doc, "en", warnings=warnings, jobs=jobs, progress=lambda d, t: calls.append((d, t)))
        path = tmp / f"jobs{jobs}.pdf"
        path.write_bytes(pdf)
        out[jobs] = (path, pdf, warnings, calls)
    return doc, out


def test_workers_give_the_same_bytes_as_one_process(parted):
    """The PDF does not depend on the number of worker processes (the parts are fixed by the
    input), and warnings raised in a worker reach the caller, in the same order."""
    doc, out = parted
    assert len(handout._parts(len(doc["configs"]))) == 2
    assert out[1][1] == out[2][1]
    assert out[1][2] == out[2][2] and any(".notdef" in w for w in out[2][2])


def test_assembled_pdf_has_every_page_in_order_with_its_number(parted):
    """11 pages: the summary, then configuration k on page k + 2 with "k + 2 / 11" printed on it,
    across the boundary between the two parts."""
    doc, out = parted
    path = out[2][0]
    assert _page_count(path) == 11
    pages = _pages_text(path)
    for k, c in enumerate(doc["configs"]):
        assert c["name"] in pages[k + 1] and f"{k + 2} / 11" in pages[k + 1]
        assert all(o["name"] not in pages[k + 1] for o in doc["configs"] if o is not c)
        missing = [f for f in _figures(c, "en") if f not in pages[k + 1]]
        assert not missing, f"{c['name']}: missing {missing}"


def test_assembled_pdf_keeps_one_bookmark_per_page(parted):
    """The outline (WeasyPrint's bookmarks from the headings) spans both parts: one top-level
    entry per page, titled with the page's heading and pointing at that page."""
    import pypdf

    doc, out = parted
    reader = pypdf.PdfReader(out[2][0])
    top = [item for item in reader.outline if not isinstance(item, list)]  # nested lists are h2 entries
    assert [str(item.title) for item in top[1:]] == [c["name"] for c in doc["configs"]]
    assert [reader.get_destination_page_number(item) for item in top] == list(range(11))
    assert "/Names" not in reader.trailer["/Root"]  # the layout markers' destinations are left out
    assert str(reader.metadata["/Producer"]).startswith("WeasyPrint")
    assert str(reader.trailer["/Root"]["/Lang"]) == "en"


def test_progress_counts_pages_as_parts_finish(parted):
    """progress(done, total) after each part: the first part is the summary + 4 configurations,
    the second 6 configurations; side by side, either may finish first."""
    _, out = parted
    assert out[1][3] == [(5, 11), (11, 11)]
    assert out[2][3] in ([(5, 11), (11, 11)], [(6, 11), (11, 11)])


def test_an_error_in_a_worker_reaches_the_caller(monkeypatch):
    """A refused asset inside a worker process is the same HandoutError as in one process."""
    monkeypatch.setattr(handout.PackagedAssetFetcher, "asset_path", lambda self, url: None)
    doc = _many(handout.PARALLEL_MIN_CONFIGS)
    for jobs in (1, 2):
        with pytest.raises(handout.HandoutError, match="template error"):
            handout.render_pdf(doc, "en", warnings=[], jobs=jobs)


def test_jobs_from_the_environment(monkeypatch):
    monkeypatch.setenv("LEDGER_REPORT_JOBS", "3")
    assert handout.default_jobs() == 3
    monkeypatch.setenv("LEDGER_REPORT_JOBS", "many")
    with pytest.raises(handout.HandoutError, match="LEDGER_REPORT_JOBS"):
        handout.default_jobs()
    monkeypatch.delenv("LEDGER_REPORT_JOBS")
    assert handout.default_jobs() >= 1


_PART_TASK = handout._part_task


def _part_task_reporting_gc(j: int):
    """A worker's part, then a report of the cyclic collector in that worker: whether it is on,
    and how many collections ran during and after the render (allocations after the render are
    when a collector turned back on would walk every object the render made)."""
    collections: list[int] = []
    gc.callbacks.append(lambda phase, info: collections.append(info["generation"]) if phase == "stop" else None)
    pdf, messages = _PART_TASK(j)
    [[] for _ in range(10_000)]  # allocations after the render
    return pdf, messages + [f"gc enabled={gc.isenabled()} collections={len(collections)}"]


def test_a_worker_never_collects_garbage(monkeypatch):
    """A forked worker exits once its part is sent, so the cyclic collector stays off in it for
    good: turned back on after the render, it walked the render's objects before the process
    ended (measured here: 0.30 s after a 13-page part, ~23 ms a page, ~9 % of the part)."""
    monkeypatch.setattr(handout, "_part_task", _part_task_reporting_gc)
    warnings: list[str] = []
    doc = _many(handout.PARALLEL_MIN_CONFIGS)
    assert gc.isenabled()
    handout.render_pdf(doc, "en", warnings=warnings, jobs=2)
    reports = [w for w in warnings if w.startswith("gc ")]
    assert reports == ["gc enabled=False collections=0"] * len(handout._parts(len(doc["configs"])))
    assert gc.isenabled()  # the parent's collector is as it was


def _worker_dies(j: int):
    os._exit(3)


def test_a_worker_that_dies_is_an_error_not_a_hang(monkeypatch):
    """A worker process that stops without a result (a crash inside a C library, say) ends the
    render with a HandoutError that says how to render in one process."""
    monkeypatch.setattr(handout, "_part_task", _worker_dies)
    with pytest.raises(handout.HandoutError, match="stopped unexpectedly.*-j 1"):
        handout.render_pdf(_many(handout.PARALLEL_MIN_CONFIGS), "en", warnings=[], jobs=2)
