"""The templates ship with the package: a wheel built from the source, installed into a fresh venv
(no system site-packages), renders the handout from another folder (the installed package finds its own templates).

The source is copied to a temporary folder first, so that building leaves no ``build/`` or
``*.egg-info`` in the working tree.  pip resolves the dependencies as configured on the machine
(PyPI, or the find-links of the CI image).  Slow (about 30 s), but it runs in CI: ``.ci/run`` does
not deselect ``slow``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
JUNK = shutil.ignore_patterns(
    ".git",
    ".venv",
    "venv",
    "__pycache__",
    "build",
    "dist",
    "*.egg-info",
    ".pytest_cache",
    ".hypothesis",
    ".benchmarks",
    "out",
    "*.pyc",
)

SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import ledger_report
    from ledger_report.engine import compute, config_from_mapping
    from ledger_report.render import handout

    here = Path(sys.prefix).resolve()
    assert Path(ledger_report.__file__).resolve().is_relative_to(here), ledger_report.__file__
    assert handout.templates_dir().is_relative_to(here), handout.templates_dir()
    row = {"name": "qwen3-8b", "layers": 36, "hidden": 4096, "heads": 32, "kv_heads": 8,
           "head_dim": 128, "ffn_hidden": 12288, "vocab": 151936, "qk_norm": True, "seq_len": 8192,
           "global_batch": 384, "tokens": 10**11, "days": 30, "reserve_days": 5, "dp": 4, "zero": 1}
    warnings = []
    pdf = handout.render_pdf([compute(config_from_mapping(row))], lang="zh", warnings=warnings)
    assert warnings == [], warnings
    Path("handout.pdf").write_bytes(pdf)
    print("rendered", len(pdf))
    # pandas comes with the package: the sweep table (Qwen3-8B: 8,190,735,360 parameters)
    frame = ledger_report.to_frame([row])
    assert int(frame.loc[0, "params_total"]) == 8_190_735_360, frame.loc[0, "params_total"]
    """
)

CSV = (
    "name,notes,layers,hidden,heads,kv_heads,head_dim,ffn_hidden,vocab,qk_norm,seq_len,global_batch,"
    "tokens,days,reserve_days,dp,zero\n"
    'qwen3-8b,"ZeRO-1 on 4 GPUs",36,4096,32,8,128,12288,151936,true,8192,384,100B,30,5,4,1\n'
)


def _run(
    args: list, cwd: Path, env: dict[str, str], timeout: float = 600
) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, (
        f"{args}\nstdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-3000:]}"
    )
    return result


def _pages(pdf: Path) -> int:
    out = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^Pages:\s+(\d+)", out, re.M).group(1))


@pytest.mark.slow
def test_wheel_installed_in_a_fresh_venv_renders_from_another_folder(tmp_path):
    """pip wheel → fresh venv → pip install the wheel → from an unrelated folder, import the
    handout renderer, find the packaged templates inside the venv and render a Chinese PDF; then,
    when the CLI is in the package, ``ledger-report build`` a small CSV into a PDF."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    }
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=JUNK, symlinks=False)
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", src, "--no-deps", "-w", dist], tmp_path, env)
    wheels = list(dist.glob("ledger_report-*.whl"))
    assert len(wheels) == 1, wheels

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], tmp_path, env)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    _run([python, "-m", "pip", "install", wheels[0]], tmp_path, env)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = _run([python, "-c", SCRIPT], elsewhere, env, timeout=300)
    assert "rendered" in result.stdout
    assert _pages(elsewhere / "handout.pdf") == 2

    cli = bindir / ("ledger-report.exe" if os.name == "nt" else "ledger-report")
    if cli.exists():
        (elsewhere / "small.csv").write_text(CSV, encoding="utf-8")
        _run(
            [cli, "build", "small.csv", "-o", "out", "--format", "pdf"], elsewhere, env, timeout=300
        )
        assert _pages(elsewhere / "out" / "small.pdf") == 2
