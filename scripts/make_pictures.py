"""The README's two pictures, made again from the shipped example: page 3 of the handout
(qwen3-8b-zero0) and the workbook's Summary sheet as LibreOffice prints it.

    .venv/bin/python scripts/make_pictures.py

Needs what scripts/setup.sh installs (poppler-utils' pdftoppm, libreoffice-calc-nogui); the
pictures are 256-colour PNGs, about 1,200 pixels wide."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image, ImageChops

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
HANDOUT_PAGE = 3  # the first configuration page after the two summary pages
DPI = 112.7  # the Summary sheet's printed table comes out ~1,200 pixels wide


def run(*args: str | Path) -> None:
    subprocess.run([str(a) for a in args], check=True, capture_output=True)


def save(image: Image.Image, name: str) -> None:
    image.convert("P", palette=Image.Palette.ADAPTIVE, colors=256).save(IMG / name, optimize=True)
    print(f"Wrote docs/img/{name} ({image.width} x {image.height})")


def handout_page(folder: Path) -> None:
    page = str(HANDOUT_PAGE)
    png = folder / "page"
    run("pdftoppm", "-f", page, "-l", page, "-scale-to-x", "1287", "-scale-to-y", "910", "-png",
        "-singlefile", folder / "examples.pdf", png)  # fmt: skip
    save(Image.open(png.with_suffix(".png")).convert("RGB"), "handout-page.png")


def workbook_summary(folder: Path) -> None:
    """The Summary sheet's first printed page, cropped from its blue header row to the chart."""
    run("libreoffice", "--headless", "--convert-to", "pdf", "--outdir", folder / "wb",
        folder / "examples.xlsx")  # fmt: skip
    png = folder / "sheet"
    run("pdftoppm", "-f", "1", "-l", "1", "-r", str(DPI), "-png", "-singlefile",
        folder / "wb" / "examples.pdf", png)  # fmt: skip
    im = Image.open(png.with_suffix(".png")).convert("RGB")
    x = im.width // 4
    top = next(y for y in range(im.height) if _header_blue(im.getpixel((x, y))))
    body = im.crop((0, top, im.width, int(im.height * 0.6)))
    box = ImageChops.difference(body, Image.new("RGB", body.size, "white")).getbbox()
    save(body.crop((box[0], box[1], box[2] + 4, box[3] + 4)), "workbook-summary.png")


def _header_blue(rgb: tuple[int, int, int]) -> bool:
    return rgb[2] > 100 and rgb[0] < 80


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        cli = Path(sys.executable).with_name("ledger-report")
        run(cli, "build", ROOT / "inputs" / "examples.xlsx", "-o", folder, "-q")
        handout_page(folder)
        workbook_summary(folder)


if __name__ == "__main__":
    main()
