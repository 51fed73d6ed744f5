"""What rounds J and K met on first contact (issue 26): GDAL's virtual file system prefixes, drive
paths glued to a terminal colour code, a user's disk under /run, files right under /, typographic
quotes, and captured run output saved as text.

Fixtures of our own, written as the rule reads (README of the hand labels), not as any
repository spelled it.
"""

from __future__ import annotations

import json

from bundler.portability import fix as pathfix
from bundler.portability import scan as paths
from tests.paths_support import build_tree


def _found(root, name=None):
    return [(f.file, f.line, f.shape, f.category) for f in paths.scan(root).findings if name is None or f.file == name]


def _failing(root):
    return [(f.file, f.line, f.text) for f in paths.scan(root).failing]


def _notebook_with_output(source, text):
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "source": source}
    cell["outputs"] = [{"name": "stdout", "output_type": "stream", "text": text}]
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


# --- 1. GDAL's prefixes are its addressing: what they wrap is judged ---------------------------


def test_gdal_prefixes_in_front_of_a_url_or_a_bucket_are_no_folder(tmp_path):
    code = (
        "a = '/vsizip//vsicurl/https://example.org/pub/set/labels.zip/000.png'\n"
        "b = '/vsicurl/https://example.org/pub/tile.tif'\n"
        "c = '/vsis3/my-bucket/tiles/x.tif'\n"
        "d = '/vsigs/b/x.tif'\n"
        "e = '/vsimem/scratch.tif'\n"
        "f = '/vsitar//vsigzip//vsiaz/box/x.tar.gz'\n"
    )
    root = build_tree(tmp_path / "p", {"read.py": code})
    assert _found(root) == []
    assert pathfix.fix(root).written == []


def test_a_local_path_wrapped_by_gdal_prefixes_is_judged_as_that_path(tmp_path):
    code = "a = '/vsizip//home/ana/sets/x.zip/a.png'\nb = '/vsizip//data/sets/x.zip'\nc = '/vsigzip//usr/share/x.gz'\n"
    root = build_tree(tmp_path / "p", {"read.py": code})
    assert _failing(root) == [("read.py", 1, "/home/ana/sets/x.zip/a.png"), ("read.py", 2, "/data/sets/x.zip")]


# --- 2. a terminal colour code is a boundary, like a space --------------------------------------


def test_a_drive_path_right_after_a_colour_code_is_found(tmp_path):
    output = ["  File \u001b[0;32mc:\\Users\\ana\\proj\\venv\\lib\\x.py:3\u001b[0m in run\n", "\u001b[1;32mD:\\work\\proj\\y.py:48\n"]
    files = {"nb.ipynb": _notebook_with_output(["run()\n"], output), "show.py": 'print("\\x1b[32mC:\\\\Users\\\\bob\\\\x.py")\n'}
    root = build_tree(tmp_path / "p", files)
    shapes = [(name, shape) for name, _, shape, _ in _found(root)]
    assert shapes == [("nb.ipynb", "windows-user"), ("nb.ipynb", "windows-drive"), ("show.py", "windows-user")]


# --- 4. /run is the system's, its per-user trees are one machine's user --------------------------


def test_a_users_disk_under_run_media_is_machine_specific(tmp_path):
    code = 'STORE = "/run/media/ana/linux-data"\nSOCK = "/run/user/1000/bus/x"\nLOCK = "/run/lock/app.lock"\nPID = "/run/app.pid"\n'
    root = build_tree(tmp_path / "p", {"config.py": code})
    assert [line for _, line, _ in _failing(root)] == [1, 2]


# --- 5. a file right under / that a loader reads or a file name holds ----------------------------


def test_a_file_at_the_root_read_by_a_loader_or_named_as_a_file_is_found(tmp_path):
    code = (
        "x = np.load('/train_X.npy')\n"
        "torch.save(model, '/model.pt')\n"
        "df = pd.read_csv('/train.csv')\n"
        "weights_file = '/weights.h5'\n"
        "@app.route('/index.html')\n"
        "icon = send_file('/favicon.ico')\n"
        "page = '/index.html'\n"
        "pattern = re.compile('/x.py')\n"
        "url = base + '/data.json'\n"
    )
    root = build_tree(tmp_path / "p", {"train.py": code})
    assert [line for _, line, _ in _failing(root)] == [1, 2, 3, 4]


# --- 6. typographic quotes are quotes -----------------------------------------------------------


def test_a_path_inside_typographic_quotes_is_found_without_the_quote(tmp_path):
    output = ["Saving to: \u2018/root/input/vectors.bin.gz\u2019\n", "2026-01-01 (77 MB/s) - \u2018/data/in/x.gz\u2019 saved\n"]
    root = build_tree(tmp_path / "p", {"nb.ipynb": _notebook_with_output(["!wget x\n"], output), "n.py": "p = \u201c/home/ana/x\u201d\n"})
    assert [text for _, _, text in _failing(root)] == ["/home/ana/x", "/root/input/vectors.bin.gz", "/data/in/x.gz"]


# --- 7. captured run output saved as .txt is code; prose .txt stays documentation ---------------


def test_a_txt_of_log_records_is_code_and_a_txt_of_prose_documentation(tmp_path):
    records = "Model: bert\n" + "".join(f"07/28/2019 11:40:0{i} - INFO - main - step {i}\n" for i in range(5))
    records += "07/28/2019 11:40:09 - INFO - main - Saving features into /data/ana/cache/dev\n"
    prose = "How to run\n\nPut the data under /data/ana/cache and run train.py.\nThen look at the plots.\n\nThat is all.\n"
    root = build_tree(tmp_path / "p", {"eval.txt": records, "notes.txt": prose})
    assert [(name, category) for name, _, _, category in _found(root)] == [("eval.txt", "code"), ("notes.txt", "docs")]


# --- 3. a Windows user name with a space: whole when quoted right around it, else left to a person ---


def test_a_windows_name_with_a_space_is_whole_when_quoted_and_never_partly_rewritten(tmp_path):
    code = 'data = r"C:\\Users\\Max Jo\\AppData\\x.csv"\nprint("File C:\\\\Users\\\\Max Jo\\\\Files\\\\x.py, line 3")\n'
    root = build_tree(tmp_path / "p", {"show.py": code})
    found = paths.scan(root).failing
    assert [(f.line, f.text, bool(f.note)) for f in found] == [
        (1, "C:\\Users\\Max Jo\\AppData\\x.csv", False),
        (2, "C:\\\\Users\\\\Max", True),
    ]
    pathfix.fix(root)
    written = (root / "show.py").read_text().splitlines()
    assert code.splitlines()[0] not in written and code.splitlines()[1] in written
    assert pathfix.fix(root).written == []
