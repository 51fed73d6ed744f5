"""What rounds AF and AG met on first contact (issue 26): a saved terminal session kept as text, a tool's dot
folder under a Windows ``~\\``, a prompt glued to its folder, a later piece of R's ``paste``, a one-letter label
before an escape in a notebook cell, a packaging table's patterns rooted at the project, ssh in a Makefile recipe,
a notebook printing a Dockerfile or its build, and a copy to a host kept in a variable. Fixtures of our own,
written as the rule reads."""

from __future__ import annotations

from tests.paths_support import build_tree, code_notebook, found_in, output_notebook


def test_a_saved_terminal_session_is_code_and_a_tutorial_with_bare_prompts_stays_documentation(tmp_path):
    session = (
        "(base) C:\\Users\\ana>cd d:\\work\\repos\n\n(base) d:\\work\\repos>dir\n Volume in drive D is DATA\n\n"
        " Directory of d:\\work\\repos\n\n(base) d:\\work\\repos>git clone git@example.org:ana/proj.git\n"
    )
    tutorial = "How to start\n\n$ cd ~/proj\n$ python train.py --data /data/ana/set\n$ ls\n"
    root = build_tree(tmp_path / "p", {"session_2023-11-06.txt": session, "HOWTO.txt": tutorial})
    found = {(file, line, category) for file, line, _, category in found_in(root)}
    assert {("session_2023-11-06.txt", n, "code") for n in (1, 3, 6, 8)} <= found
    assert {category for file, _, category in found if file == "HOWTO.txt"} == {"docs"}


def test_a_tools_dot_folder_under_a_windows_tilde_is_portable_and_the_users_own_folder_is_not(tmp_path):
    trace = [
        "\u001b[1;32m~\\.conda\\envs\\tf\\lib\\site-packages\\keras\\engine\\training.py\u001b[0m in predict\n",
        "\u001b[1;32m~\\Anaconda3\\envs\\tf\\lib\\site-packages\\keras\\engine\\training.py\u001b[0m in fit\n",
        "\u001b[1;32m~\\AppData\\Local\\Temp/ipykernel_15516/275918905.py\u001b[0m in <module>\n",  # Windows' temporary folder
    ]
    notebook = output_notebook(["model.predict(x)\n"], [{"output_type": "error", "ename": "E", "evalue": "e", "traceback": trace}])
    root = build_tree(tmp_path / "p", {"nb.ipynb": notebook})
    assert [category for _, _, _, category in found_in(root)] == ["portable", "notebook", "notebook"]


def test_a_one_letter_label_before_an_escape_in_a_notebook_cell_is_no_drive(tmp_path):
    cells = code_notebook(['print("X:\\n", X.head())\n', 'print("y:\\t", y)\n'], ['data = "D:\\\\data\\\\train.csv"\n'])
    root = build_tree(tmp_path / "p", {"nb.ipynb": cells})
    assert [shape for _, _, shape, _ in found_in(root)] == ["windows-drive"]


def test_a_packaging_tables_pattern_rooted_at_the_project_is_no_folder_of_this_machine(tmp_path):
    pyproject = (
        '[project]\nname = "pkg"\n\n[tool.hatch.build.targets.sdist]\ninclude = [\n    "/src/pkg",\n    "/README.md",\n]\n'
        '[tool.other]\ndata = "/srv/lab/ana/data"\nmissing = "/src/elsewhere"\n'
    )
    root = build_tree(tmp_path / "p", {"pyproject.toml": pyproject, "src/pkg/__init__.py": "", "README.md": "x\n"})
    assert [line for _, line, _, _ in found_in(root, "pyproject.toml")] == [10, 11]


def test_ssh_in_a_makefile_recipe_runs_its_command_on_the_other_machine(tmp_path):
    makefile = (
        "queue:\n\t@ssh ana@login.example.org 'cd /home/ana/proj && ./launch.sh'\n"
        "again:\n\t-ssh ana@login.example.org 'cd /home/ana/proj && ./launch.sh'\n"
        "local:\n\tcd /home/ana/proj && ./launch.sh\n"
    )
    root = build_tree(tmp_path / "p", {"Makefile": makefile})
    assert [(line, category) for _, line, _, category in found_in(root)] == [(2, "remote"), (4, "remote"), (6, "code")]


def test_a_notebook_printing_a_dockerfile_or_its_build_shows_the_images_layout(tmp_path):
    recipe = ["# the serving image\n", "FROM ubuntu:22.04\n", "RUN pip install flask && \\\n", "    rm -rf /root/.cache\n"]
    build = ["Sending build context to Docker daemon  51.7kB\n", "Step 4/9 : RUN rm -rf /root/.cache /opt/ml/x\n"]
    other = ["saved to /home/ana/out/model.pt\n"]
    outputs = [{"name": "stdout", "output_type": "stream", "text": lines} for lines in (recipe, build, other)]
    root = build_tree(tmp_path / "p", {"nb.ipynb": output_notebook(["!cat Dockerfile\n"], outputs)})
    assert [(shape, category) for _, _, shape, category in found_in(root)] == [("home", "notebook")]


def test_a_copy_to_a_host_kept_in_a_variable_is_remote_and_a_path_list_is_not(tmp_path):
    script = (
        'REMOTE="${1:-gpu}"\nscp .env "$REMOTE:proj/.env"\nrsync -avz "${REMOTE}:proj/weights/" weights/\n'
        'export PATH="$PATH:/home/ana/bin"\n'
    )
    root = build_tree(tmp_path / "p", {"push.sh": script})
    assert [(line, category) for _, line, _, category in found_in(root)] == [(2, "remote"), (3, "remote"), (4, "code")]


def test_a_capture_that_starts_with_a_prompt_glued_to_its_folder_is_a_run_record(tmp_path):
    capture = "(tf) ana~/Development/proj/code$ python -u train.py ../data test 0\n41152 words found.\nTest Accuracy: 0.955\n"
    note = "Results\n\nana wrote~/notes about the run$ and more\n"
    root = build_tree(tmp_path / "p", {"traces/test.txt": capture, "traces/NOTE.txt": note})
    assert [(file, line, shape, category) for file, line, shape, category in found_in(root)] == [("traces/test.txt", 1, "tilde", "code")]


def test_a_later_argument_of_rs_paste_is_a_piece_and_its_first_is_a_folder(tmp_path):
    code = (
        'f <- paste(out_path,\n           "/attention/",\n           layer, sep = "")\n'
        'g <- file.path("/net/store/ana", "/results/")\nh <- paste0("/net/store/ana/", x)\n'
    )
    root = build_tree(tmp_path / "p", {"attn.R": code})
    assert [line for _, line, _, _ in found_in(root)] == [4, 5]
