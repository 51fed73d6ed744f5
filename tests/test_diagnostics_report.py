"""The report people read: --report FILE.html rendered in a real headless Chromium (what the page
holds once a browser parsed it, and the colours it paints), and the Markdown summary of a run."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests import dockerenv
from tests.diagnostics_support import GB, H200, gpu_probe, write_bundle

# isort: split
from bdiag import cli
from bdiag.html import COLOURS

H100_PCIE = dict(H200, name="NVIDIA H100 PCIe", total_memory=85 * GB, free_memory=84 * GB)
UUIDS = ("GPU-0", "GPU-1")


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "Debian's chromium is not installed (tests/host-setup.sh installs it)"
        if dockerenv.in_ci():
            pytest.fail(message)
        pytest.skip(message)
    return found


def browse(page: Path, *flags: str) -> subprocess.CompletedProcess:
    command = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *flags, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(page.parent)})


def a_box_that_is_not_what_was_ordered(tmp_path: Path) -> tuple[int, Path, str]:
    """Ordered 2 × H100 SXM; received 2 × H100 PCIe, power-capped, on a Gen4 link, with no bridge and a full disk."""
    project = tmp_path / "project"
    write_bundle(project, backend="cuda", accelerator="13.0")
    (project / "plan.toml").write_text('[package]\ncard = "H100 SXM"\ndays = 3\nlots = 2\n')
    (project / "catalog.toml").write_text('[cards."H100 SXM"]\ncards_per_lot = 1\nmemory_gb = 80\n')
    scratches = []

    def scratch_then_full(results_dir):
        scratches.append(results_dir)
        if len(scratches) > 1:  # the io stage gets its scratch folder, the checkpoint stage finds the disk full
            raise OSError(28, "No space left on device", results_dir)
        folder = Path(results_dir) / ".diagnostics-scratch"
        folder.mkdir(parents=True)
        return str(folder)

    probe = gpu_probe(
        device_count=2,
        device_properties=lambda torch_, index: dict(H100_PCIE, index=index, uuid=UUIDS[index]),
        installed_distributions={},
        pip_check=(True, 0, ""),
        gpu_table=[{"uuid": uuid, "power.limit": "250.00", "power.default_limit": "350.00", "pcie.link.gen.max": "5"} for uuid in UUIDS],
        sample_under_load=[["0x0000000000000004", "1500", "70", "249.0", "4", "16"]] * 4,
        matmul_tflops=600.0,
        copy_bandwidth_tbs=1.2,
        host_to_device_gb_s=20.0,
        peak_memory={"peak_allocated": 30 * GB, "peak_reserved": 34 * GB, "total": 85 * GB, "extra": {}},
        cgroup_memory_limit=64 << 30,
        mem_total_bytes=512 << 30,
        compile_smoke=0.0,
        make_scratch=scratch_then_full,
        peer_access=False,
        run_collective=[{"ok": True, "rank": rank, "bus_bandwidth_gb_s": 4.0} for rank in (0, 1)],
    )
    page, stream = tmp_path / "report.html", tmp_path / "stdout.txt"
    argv = ["--project", str(project), "--keep-going", "--json", str(tmp_path / "r.json"), "--report", str(page)]
    argv += ["--results", str(tmp_path / "runs")]
    with open(stream, "w", encoding="utf-8") as handle:
        code = cli.main(argv, probe=probe, stream=handle)
    return code, page, stream.read_text()


class Page(HTMLParser):
    """What the browser's DOM holds: text, stage rows by status, bars and every external reference."""

    def __init__(self) -> None:
        super().__init__()
        self.text, self.rows, self.bars, self.external, self._in = [], [], [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr" and "stage" in attrs.get("class", ""):
            self.rows.append(attrs["class"].split("status-")[1])
        if tag == "rect" and attrs.get("class") == "bar":
            self.bars.append((float(attrs["width"]), attrs["fill"]))
        for name in ("src", "href"):
            if attrs.get(name):
                self.external.append(attrs[name])
        self._in.append(tag)

    def handle_data(self, data):
        if "style" not in self._in[-1:]:
            self.text.append(data)


def png_pixels(path: Path) -> tuple[int, int, list]:
    """Decode an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes) without a library."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, chunks, header = 8, [], None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position : position + 8])
        body = data[position + 8 : position + 8 + length]
        header = body if kind == b"IHDR" else header
        chunks += [body] if kind == b"IDAT" else []
        position += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6)
    size, raw = 3 if colour == 2 else 4, zlib.decompress(b"".join(chunks))
    stride, rows, previous = width * size, [], bytearray(width * size)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            left, up = line[x - size] if x >= size else 0, previous[x]
            corner = previous[x - size] if x >= size else 0
            if kind == 1:
                line[x] = (line[x] + left) & 255
            elif kind == 2:
                line[x] = (line[x] + up) & 255
            elif kind == 3:
                line[x] = (line[x] + (left + up) // 2) & 255
            elif kind == 4:
                guess = left + up - corner
                near = min((abs(guess - left), 0, left), (abs(guess - up), 1, up), (abs(guess - corner), 2, corner))
                line[x] = (line[x] + near[2]) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, [[tuple(row[x * size : x * size + 3]) for x in range(width)] for row in rows]


def test_the_report_page_in_headless_chromium(tmp_path):
    code, page, printed = a_box_that_is_not_what_was_ordered(tmp_path)
    assert code == 14  # stage 4: another model than ordered
    source = page.read_text()
    assert "http://" not in source and "https://" not in source and "url(" not in source  # self-contained

    dom = browse(page, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    parsed = Page()
    parsed.feed(dom.stdout)
    text = " ".join(" ".join(parsed.text).split())
    assert parsed.external == []
    assert parsed.rows == ["pass", "warn", "pass", "fail", "fail", "pass", "warn", "pass", "fail", "warn"]
    assert "Order versus received: ordered 2 lots of H100 SXM = 2 cards; received 2 × NVIDIA H100 PCIe — differs" in text
    assert "First failing stage: 4 device — exit 14" in text
    for figure in (
        "GEMM bfloat16 vs datasheet 600 of 756 TFLOP/s",
        "power limit vs default 250 of 350 W",
        "PCIe link under load vs datasheet",
    ):
        assert figure in text
    assert "all_reduce bus bandwidth vs host memory over PCIe Gen5 x16 (no peer access: each byte crosses it twice) 4 of 31.5 GB/s" in text
    assert "Hint: The box is another offer than the one paid for." in text and "nvidia-smi -pl" in text
    colours = {fill for _, fill in parsed.bars}
    assert {COLOURS["pass"], COLOURS["warn"], COLOURS["fail"]} <= colours

    shot = tmp_path / "report.png"
    taken = browse(page, f"--screenshot={shot}", "--window-size=1100,1500")
    assert taken.returncode == 0 and shot.is_file(), taken.stderr[-2000:]
    width, height, pixels = png_pixels(shot)
    assert (width, height) == (1100, 1500)
    painted = {name: 0 for name in ("pass", "warn", "fail")}
    wanted = {name: tuple(int(COLOURS[name][i : i + 2], 16) for i in (1, 3, 5)) for name in painted}
    for row in pixels[::2]:
        for pixel in row[::2]:
            for name, colour in wanted.items():
                if all(abs(a - b) <= 6 for a, b in zip(pixel, colour, strict=True)):
                    painted[name] += 1
    assert all(count > 200 for count in painted.values()), painted  # badges and bars of each colour were painted

    assert "## Bundle diagnostics: first failing stage 4 device (exit 14)" in printed
    assert "| 4 | device | FAIL |" in printed and "- order versus received: ordered 2 lots of H100 SXM" in printed
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["order"]["verdict"] == "fail" and report["stages"][4]["figures"]


def test_a_report_that_cannot_be_written_is_refused_before_the_stages(tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    assert cli.main(["--report", str(tmp_path / "afile" / "r.html")]) == 2
    assert cli.main(["--report", str(tmp_path / "same"), "--json", str(tmp_path / "same")]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert errors[0].startswith(f"Error: --report {tmp_path / 'afile' / 'r.html'} cannot be written: Not a directory")
    assert errors[1].startswith("Error: --report and --json name the same file") or "name the same file" in errors[1]
