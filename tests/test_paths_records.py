"""What rounds F and G of first contact met: captured output of runs, ssh's own options, folders right
under ``/``, caches kept in scratch, dot folders the code makes, notebooks' cell magics and outputs.

Fixtures of our own, one per class and written as the rule reads (README of the hand labels), not
as any repository spelled it.
"""

from __future__ import annotations

import json

from bundler.portability import fix as pathfix
from bundler.portability import scan as paths
from bundler.portability.python_rewrite import NOTEBOOK_IMPORT
from tests.paths_support import build_tree

RUN = "out/wandb/run-20260101_120000-ab12cd34"


def _found(root, name=None):
    return [(f.file, f.line, f.shape, f.category) for f in paths.scan(root).findings if name is None or f.file == name]


# --- captured output of a run is code, outside docs/ and logs/ ----------------------------------


def test_captured_output_is_code_outside_docs_and_logs(tmp_path):
    root = build_tree(
        tmp_path / "p",
        {
            f"{RUN}/files/config.yaml": "_wandb:\n  value:\n    code_path: /blue/lab/ab/proj/train.py\n",
            f"{RUN}/files/output.log": 'File "/home/ab/env/lib/python3.12/site-packages/torch/x.py", line 3\n',
            f"{RUN}/logs/debug.log": "wandb dir /home/ab/proj/out/wandb\n",
            "configs/wandb/default.yaml": "dir: /home/ab/runs\n",  # a project's own config folder called wandb
            "mlruns/0/abc/meta.yaml": "source: /home/ab/proj/train.py\n",
            "experiments/a/run.log": "  File /users/ab/env/lib/site.py\n",
            "experiments/a/train.log.txt": "saved in C:\\Users\\ab\\proj\\out\n",
            "slurm-123.out": "cd /home/ab/proj\n",
            "logs/run.log": "  File /users/ab/env/lib/site.py\n",
            "docs/notes.log": "see /home/ab/notes\n",
            "NOTES.txt": "on /home/ab/notes\n",
        },
    )
    found = {(f, c) for f, _, _, c in _found(root)}
    code = {f"{RUN}/files/config.yaml", f"{RUN}/files/output.log", "mlruns/0/abc/meta.yaml", "experiments/a/run.log"}
    code |= {"experiments/a/train.log.txt", "slurm-123.out"}
    docs = {f"{RUN}/logs/debug.log", "logs/run.log", "docs/notes.log", "NOTES.txt"}
    assert found == {(f, "code") for f in code} | {(f, "docs") for f in docs} | {("configs/wandb/default.yaml", "config")}
    assert not paths.scan(root).skipped


def test_fix_never_rewrites_a_record_of_a_run(tmp_path):
    records = {
        "experiments/a/run.log": "# run on /home/ab/proj\n",  # a comment-like line: still a record, not a comment to rewrite
        f"{RUN}/files/config.yaml": "data: /home/ab/data\n",
        "slurm-123.out": "# cd /home/ab/proj\n",
    }
    root = build_tree(tmp_path / "p", {**records, "train.sh": "ls /home/ab/data\n"})
    result = pathfix.fix(root)
    changes = {c.file: c for c in result.changes}
    for name, text in records.items():
        assert (root / name).read_text() == text
        assert changes[name].status == "unchanged"
        whys = [m["why"] for m in changes[name].manual]
        assert whys and all("record" in why and "remove" in why for why in whys)
    assert changes["train.sh"].status == "fixed"
    assert {f.file for f in paths.scan(root).failing} == set(records)  # the records' findings remain
    assert pathfix.fix(root).written == []


def test_a_link_in_a_logs_folder_is_documentation(tmp_path):
    root = build_tree(tmp_path / "p", {"x.py": ""})
    (root / f"{RUN}/logs").mkdir(parents=True)
    (root / f"{RUN}/logs/debug-core.log").symlink_to("/home/ab/.cache/wandb/logs/core.log")
    assert _found(root) == [(f"{RUN}/logs/debug-core.log", 1, "home", "docs")]


# --- ssh's option values are this machine's files ---------------------------------------------------


def test_ssh_options_are_local_and_its_command_is_remote(tmp_path):
    script = (
        "ssh -i /Users/ab/keys/lab.pem -o UserKnownHostsFile=/dev/null ubuntu@$ip\n"  # 1 the key is here
        "ssh -F /home/ab/.ssh/lab_config -p 22 lab ls /home/ab/runs\n"  # 2 the config here, the listing there
        "ssh -o IdentityFile=/home/ab/k.pem lab\n"  # 3 here
        'rsync -e "ssh -i /home/ab/k.pem" out/ lab:/data/out/\n'  # 4 the key here, the target there
        "#scp -i KEY ubuntu@$ip:results* $store/.\n"  # 5 commented out: still the other machine's, as a live line
        "scp ubuntu@${HOST}:/home/ubuntu/out.tar .\n"  # 6 a user, then the host's variable
    )
    root = build_tree(tmp_path / "p", {"up.sh": script})
    assert _found(root, "up.sh") == [
        ("up.sh", 1, "home", "code"),
        ("up.sh", 2, "home", "code"),
        ("up.sh", 2, "home", "remote"),
        ("up.sh", 3, "home", "code"),
        ("up.sh", 4, "home", "code"),
        ("up.sh", 4, "remote", "remote"),
        ("up.sh", 5, "remote", "remote"),
        ("up.sh", 6, "remote", "remote"),
    ]


def test_a_variable_only_ssh_reads_as_its_key_is_local(tmp_path):
    script = 'KEY="/Users/ab/keys/lab.pem"\nOUT="/home/ab/runs"\nssh -i $KEY lab "ls $OUT"\n'
    root = build_tree(tmp_path / "p", {"up.sh": script})
    assert _found(root, "up.sh") == [("up.sh", 1, "home", "code"), ("up.sh", 2, "home", "remote")]


def test_a_bare_name_after_a_colon_is_no_remote_file_off_a_copy_line(tmp_path):
    root = build_tree(tmp_path / "p", {"c.py": "d = {'a':b}\nmail = 'ab@lab:results'\n", "c.json": json.dumps({"k": "x:y"})})
    assert _found(root) == []


# --- a folder right under / that is not the system's, where it is used as a folder ------------------


def test_a_folder_right_under_the_root_is_one_machines_where_it_is_used_as_one(tmp_path):
    python = (
        "import os, re, shutil\n"
        "os.chdir('/build_tmp')\n"  # 2
        'os.makedirs("/build_tmp", exist_ok=True)\n'  # 3
        "shutil.copy(x, '/build_tmp')\n"  # 4
        "@app.route('/predict')\n"  # not a folder: a web route
        "parts = s.split('/data')\n"  # a split argument
        "pattern = re.compile('/build')\n"  # a regex
        "u = 'http://x.org/build_tmp'\n"  # a URL's part
        "os.chdir('/tmp')\n"  # the system's own (FHS names)
        "os.chdir('/mnt')\n"
    )
    shell = "mkdir /build_tmp\ncd /build_tmp && make\ntar xf a.tar -C /build_tmp --strip 1\ncd /srv\necho /build_tmp\n"
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": 1}
    notebook = {"cells": [{**cell, "source": ["!mkdir /build_tmp\n", "import os\n", 'os.chdir("/build_tmp")\n']}], "metadata": {}}
    notebook |= {"nbformat": 4, "nbformat_minor": 5}
    root = build_tree(tmp_path / "p", {"a.py": python, "b.sh": shell, "n.ipynb": json.dumps(notebook, indent=1)})
    found = {(f, n) for f, n, shape, _ in _found(root) if shape == "absolute"}
    assert found == {("a.py", 2), ("a.py", 3), ("a.py", 4), ("b.sh", 1), ("b.sh", 2), ("b.sh", 3), ("n.ipynb", 9), ("n.ipynb", 11)}


# --- notebooks: a cell magic stays first, another language is left as is, outputs are records -------


def _notebook(*sources, outputs=()):
    cells = [{"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [], "source": list(s)} for s in sources]
    for index, text in outputs:
        cells[index]["outputs"] = [{"name": "stdout", "output_type": "stream", "text": [text]}]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def test_a_cell_magic_stays_first_and_another_language_is_left_as_is(tmp_path):
    writefile = ["%%writefile run.sh\n", "#!/bin/sh\n", "ls /home/ab/data\n"]
    timed = ["%%time\n", "x = open('/home/ab/data/x.csv')"]
    bash = ["%%bash\n", "cd /home/ab/data\n"]
    plain = ["y = '/home/ab/data/y.csv'"]
    root = build_tree(tmp_path / "p", {"n.ipynb": _notebook(writefile, timed, bash, plain)})
    result = pathfix.fix(root)
    cells = [c["source"] for c in json.loads((root / "n.ipynb").read_text())["cells"]]
    assert cells[0] == writefile and cells[2] == bash  # another language: left as is, with a reason
    assert cells[1] == ["%%time\n", NOTEBOOK_IMPORT, 'x = open(param_path("DATA_ROOT", "x.csv"))']
    assert cells[3] == ['y = param_path("DATA_ROOT", "y.csv")']
    whys = [m["why"] for m in result.changes[0].manual]
    assert len(whys) == 2 and "%%writefile cell" in whys[0] and "%%bash cell" in whys[1]
    assert pathfix.fix(root).written == []


def test_the_import_goes_into_the_first_cell_that_is_python(tmp_path):
    root = build_tree(tmp_path / "p", {"n.ipynb": _notebook(["%%writefile a.txt\n", "hello\n"], ["y = '/home/ab/data/y.csv'"])})
    pathfix.fix(root)
    cells = [c["source"] for c in json.loads((root / "n.ipynb").read_text())["cells"]]
    assert cells == [["%%writefile a.txt\n", "hello\n"], [NOTEBOOK_IMPORT, 'y = param_path("DATA_ROOT", "y.csv")']]


def test_fix_never_rewrites_a_notebooks_outputs(tmp_path):
    output = "Image('/path/to/image.jpg')\n"
    root = build_tree(tmp_path / "p", {"n.ipynb": _notebook(["print(1)"], outputs=[(0, output)])})
    before = (root / "n.ipynb").read_text()
    result = pathfix.fix(root)
    assert (root / "n.ipynb").read_text() == before
    assert [(c.status, [m["text"] for m in c.manual]) for c in result.changes] == [("unchanged", ["/path/to/image.jpg"])]
    assert "output" in result.changes[0].manual[0]["why"]
    assert [f.file for f in paths.scan(root).failing] == ["n.ipynb"]  # outputs are code: the finding remains


# --- a cache kept in scratch; a dot folder in the home that the project's code creates -------------


def test_a_cache_kept_in_scratch_is_no_output(tmp_path):
    python = (
        "from pathlib import Path\n"
        'Path("/tmp/.cache/torch/checkpoints/").mkdir(exist_ok=True, parents=True)\n'
        "subprocess.run(\"cp w.pth '/tmp/.cache/torch/checkpoints/w.pth'\")\n"
        'save_dir = "/tmp/checkpoints/run1"\n'  # 4 results kept in scratch: an output
    )
    root = build_tree(tmp_path / "p", {"a.py": python})
    assert _found(root) == [("a.py", 4, "temp-dir", "code")]
    assert "/tmp/.cache" not in "".join(pathfix.fix(root).parameters.values())


def test_a_dot_folder_the_code_makes_in_the_home_is_portable_and_one_only_read_is_not(tmp_path):
    files = {
        "setup.py": "import subprocess\nsubprocess.run('mkdir -p $HOME/.gdrive', shell=True)\n",
        "upload.sh": "mv token.json $HOME/.gdrive\nsource ~/.labenv\n",
        "n.py": 'import os\nos.makedirs(os.path.expanduser("~/.tool2"))\nopen(os.path.expanduser("~/.tool2/k"))\n',
        "m.py": 'from pathlib import Path\n(Path.home() / ".tool3").mkdir()\nopen(Path.home() / ".tool3" / "k")\n',
    }
    root = build_tree(tmp_path / "p", files)
    found = [(f, n, c) for f, n, _, c in _found(root)]
    assert found == [
        ("m.py", 2, "portable"),
        ("m.py", 3, "portable"),
        ("n.py", 2, "portable"),
        ("n.py", 3, "portable"),
        ("setup.py", 2, "portable"),
        ("upload.sh", 1, "portable"),
        ("upload.sh", 2, "code"),  # a dot file only read: one user's
    ]
    assert list(paths.scan(root).parameters.values()) == ["~/.labenv"]  # no parameter for a folder the code makes


def test_markdown_saved_without_a_suffix_is_documentation(tmp_path):
    notes = "# Set up the tool\n\nRun this once:\n\n```sh\nmkdir $HOME/.tool\ncp key /home/ab/key\n```\n"
    script = "# set up the lab\ncp key /home/ab/key\n"  # a heading-like comment, but no fenced block: a script
    root = build_tree(tmp_path / "p", {"tool_notes": notes, "setup": script})
    assert [(f, n, c) for f, n, _, c in _found(root)] == [("setup", 2, "code"), ("tool_notes", 6, "docs"), ("tool_notes", 7, "docs")]


def test_the_bench_proof_tells_a_moved_cell_magic_of_a_written_notebook():
    from bench.bench_paths import _notebook_proof

    old = _notebook(["%%writefile run.sh\n", "ls /home/ab/data\n"])
    moved = _notebook([NOTEBOOK_IMPORT, "%%writefile run.sh\n", "ls /home/ab/data\n"])
    body = _notebook(["%%writefile run.sh\n", "ls ${DATA_ROOT}\n"])
    assert _notebook_proof(old, moved, {}, []) == "code cell 0: its %%writefile line is no longer the cell's first, and yet --fix wrote it"
    wrote = "code cell 0: a %%writefile cell, whose body is not Python, was rewritten, and yet --fix wrote it"
    assert _notebook_proof(old, body, {}, []) == wrote
    assert _notebook_proof(old, old, {}, []) is None


def test_a_value_the_projects_own_function_appends_to_another_is_a_tail(tmp_path):
    library = (
        "import os\n"
        "def scratch(sub=''):\n"
        "    base = os.environ['SCRATCH']\n"
        "    if sub != '':\n"
        "        base += sub\n"
        "    return base\n"
        "def ensure(sub=''):\n"
        "    folder = scratch(sub)\n"  # handed on, positionally, to a function that appends it
        "    os.makedirs(folder, exist_ok=True)\n"
        "    return folder\n"
        "def load(root=''):\n"
        "    return open(os.environ['SCRATCH'] + root), open(root)\n"  # also used on its own: a folder
    )
    caller = "from lib.util import ensure, load\nensure(sub='/data/')\nload(root='/data/x')\n"
    root = build_tree(tmp_path / "p", {"lib/util.py": library, "run.py": caller})
    assert [(f, n) for f, n, _, _ in _found(root)] == [("run.py", 3)]
    assert list(paths.scan(root).parameters.values()) == ["/data/x"]


def test_the_home_itself_handed_to_a_command_is_portable_and_kept_in_a_variable_is_not(tmp_path):
    script = 'cd $HOME && ls\n# nothing here knows $HOME yet\nX=$HOME\nY="${HOME}"\nls $HOME/data\n'
    root = build_tree(tmp_path / "p", {"a.sh": script})
    assert [(n, c) for _, n, _, c in _found(root)] == [(1, "portable"), (2, "portable"), (3, "code"), (4, "code"), (5, "code")]
