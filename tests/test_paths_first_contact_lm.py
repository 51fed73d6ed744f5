"""What rounds L and M met on first contact (issue 26): a bare string in a notebook's cell, a tracker's object
paths, a join from the root, captured output whose records are numbers, Windows' folder names on another
drive, and dot folders in the home that the project's code creates through a variable or a config key.

Fixtures of our own, written as the rule reads (README of the hand labels), not as any repository spelled it.
"""

from __future__ import annotations

from bundler.portability import fix as pathfix
from bundler.portability import scan as paths
from tests.paths_support import build_tree, code_notebook, found_in

# --- a bare string in a notebook's code cell is documentation, as in a .py file -------------------


def test_a_path_in_a_bare_string_of_a_notebook_cell_is_documentation_and_one_outside_it_code(tmp_path):
    disabled = ["x = 1\n", '"""\n', "Old loading, kept for reference:\n", "d = load('/data/ana/old.pkl')\n", '"""\n']
    live = ["!ls /data/ana\n", "y = load('/data/ana/new.pkl')\n", 's = """text"""\n']
    magic = ["%%bash\n", '"""\n', "cp /data/ana/a /data/ana/b\n"]
    root = build_tree(tmp_path / "p", {"nb.ipynb": code_notebook(disabled, live, magic)})
    categories = {(line, category) for _, line, _, category in found_in(root)}
    lines = (root / "nb.ipynb").read_text().splitlines()
    at = {text: number for number, text in enumerate(lines, 1)}
    assert (at["    \"d = load('/data/ana/old.pkl')\\n\","], "docs") in categories
    assert (at["    \"y = load('/data/ana/new.pkl')\\n\","], "notebook") in categories
    assert (at['    "!ls /data/ana\\n",'], "notebook") in categories
    assert (at['    "cp /data/ana/a /data/ana/b\\n"'], "notebook") in categories  # a bash cell's quotes are no Python string
    pathfix.fix(root)
    assert "/data/ana/old.pkl" in (root / "nb.ipynb").read_text()  # documentation is never rewritten


# --- an object path a tracker's API takes is a name in the service, not a folder -----------------


def test_an_api_objects_run_path_is_no_folder_and_another_objects_run_argument_is_judged(tmp_path):
    code = (
        "api = wandb.Api()\n"
        'run = api.run("/team_x/cnn/runs/2qrrcxdy")\n'
        'art = wandb.Api().artifact("/team_x/cnn/model:v3")\n'
        'subprocess.run("/home/ana/job.sh")\n'
        'runner.run("/data/ana/set")\n'
    )
    root = build_tree(tmp_path / "p", {"pull.py": code})
    assert [(line, category) for _, line, _, category in found_in(root)] == [(4, "code"), (5, "code")]


# --- a join from the root builds an absolute path --------------------------------------------------


def test_a_join_from_the_root_is_the_path_it_builds_left_to_a_person(tmp_path):
    code = (
        "out = osp.join('/', 'kaggle', 'working', 'preds')\n"
        'lib = os.path.join("/", "usr", "lib")\n'
        "parts = '/'.join(names)\n"
        'head, tail = x.split("/", 1)\n'
    )
    root = build_tree(tmp_path / "p", {"env.py": code})
    found = paths.scan(root).failing
    assert [(f.line, f.shape, bool(f.note)) for f in found] == [(1, "absolute-built", True)]
    assert pathfix.fix(root).written == []


# --- captured output whose records are numbers a program printed is code ---------------------------


def test_a_txt_of_printed_metrics_is_code_and_a_txt_of_prose_with_a_number_documentation(tmp_path):
    records = "Training\n" + "".join(
        f"Using weights from /home/ana/.cache/hub/net_v{i}\nepoch: {i}, loss: 0.59512{i}7159814888, acc: 0.9\n"
        f"best epoch is {i}, valid loss is 0.49687{i}1593770625\n"
        for i in range(4)
    )
    prose = "Notes\n\nThe weights are under /home/ana/.cache/hub.\nWe used lr: 0.001 there.\nIt trained well.\n\nEnd.\n"
    root = build_tree(tmp_path / "p", {"exp/description.txt": records, "notes.txt": prose})
    found = {(name, category) for name, _, _, category in found_in(root)}
    assert found == {("exp/description.txt", "code"), ("notes.txt", "docs")}


# --- dot folders in the home the project's code creates: through a shell variable, or a config key --


def test_a_dot_folder_a_script_creates_through_a_variable_is_portable_wherever_it_is_named(tmp_path):
    script = (
        "#!/bin/bash\n"
        'TOOL_DIR="$HOME/.tool-global"\n'
        'mkdir -p "$TOOL_DIR"\n'
        "echo 'export PATH=~/.tool-global/bin:$PATH' >> ~/.bashrc\n"
        'DATA="$HOME/.mydata"\n'
        'cp "$DATA/train.csv" .\n'
    )
    root = build_tree(tmp_path / "p", {"setup.sh": script})
    found = {(line, category) for _, line, _, category in found_in(root)}
    assert {(2, "portable"), (4, "portable"), (5, "code")} <= found  # line 5's folder is only read: the user's own
    assert [f.line for f in paths.scan(root).failing] == [5]


def test_a_config_value_naming_a_dot_folder_the_code_expands_and_creates_is_portable(tmp_path):
    loader = (
        "from pathlib import Path\n"
        "class Loader:\n"
        "    def __init__(self, base_dir):\n"
        "        self.base_dir = Path(base_dir).expanduser()\n"
        "    def out(self):\n"
        "        path = self.base_dir / 'processed'\n"
        "        path.mkdir(parents=True, exist_ok=True)\n"
    )
    config = 'base_dir: "~/.set_cache"\ndata_dir: "~/.labdata"\n'
    root = build_tree(tmp_path / "p", {"src/loader.py": loader, "config/env.yaml": config})
    assert [(f.line, f.category) for f in paths.scan(root).findings if f.file == "config/env.yaml"] == [(1, "portable"), (2, "config")]
