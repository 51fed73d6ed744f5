"""What rounds N and O met on first contact (issue 26): a route decorator over several lines, XPath in XML,
an IDE's deployment settings, a scheduler capture named by its job id, a user folder written as a glob, and a
notebook whose variable bears the name of the parameter --fix gives it.

Fixtures of our own, written as the rule reads (README of the hand labels), not as any repository spelled it.
"""

from __future__ import annotations

from bundler.portability import fix as pathfix
from bundler.portability.classify import read_env_local
from tests.paths_support import build_tree, code_notebook, found_in


def test_a_route_given_on_the_line_after_its_decorator_is_a_web_path(tmp_path):
    code = '@app.get(\n    "/v1/models",\n    response_model=Models,\n)\ndef models():\n    return load("/data/ana/models")\n'
    root = build_tree(tmp_path / "p", {"api.py": code})
    assert [(line, category) for _, line, _, category in found_in(root)] == [(6, "code")]


def test_an_xpath_in_xml_is_no_folder(tmp_path):
    xml = (
        '<xi:include xpointer="xpointer(/Xdmf/Domain/Grid[1]/*[self::Topology])" />\n'
        '<xsl:value-of select="/catalog/cd/title"/>\n'
        '<DataItem Format="HDF" file="/data/ana/mesh.h5"/>\n'
    )
    root = build_tree(tmp_path / "p", {"out/mesh.xdmf": xml})
    assert [line for _, line, _, _ in found_in(root)] == [3]


def test_an_ides_settings_are_scanned_and_a_deployments_server_side_is_remote(tmp_path):
    deployment = (
        '<component name="PublishConfigData">\n'
        '  <mapping deploy="/home/DiskB/ana/project/" local="$PROJECT_DIR$" web="/" />\n'
        "</component>\n"
    )
    workspace = '<option name="SDK_HOME" value="D:\\Python\\Python37\\python.exe" />\n'
    root = build_tree(tmp_path / "p", {".idea/deployment.xml": deployment, ".idea/workspace.xml": workspace})
    assert sorted((name, category) for name, _, _, category in found_in(root)) == [
        (".idea/deployment.xml", "remote"),
        (".idea/workspace.xml", "code"),
    ]


def test_a_capture_named_by_its_job_id_is_code_and_a_traceback_reads_as_a_run(tmp_path):
    traceback = 'Traceback (most recent call last):\n  File "/scratch3/ana/proj/train.py", line 31, in <module>\n    import x\n'
    traceback += "ModuleNotFoundError: No module named 'x'\n"
    root = build_tree(
        tmp_path / "p",
        {"jobs/output-logs/job_5732569/error_5732569.txt": traceback, "notes/train_2023.txt": "Train set of 2023.\n/data/ana/x\n"},
    )
    categories = {name: category for name, _, _, category in found_in(root)}
    assert categories["jobs/output-logs/job_5732569/error_5732569.txt"] == "code"
    assert categories["notes/train_2023.txt"] != "code"  # a year is no job id


def test_a_user_folder_written_as_a_glob_is_a_home(tmp_path):
    root = build_tree(tmp_path / "p", {"aug.py": "src = r'/home/*/*/Dataset/ADE/images'\ndst = '/home/*/out'\n"})
    assert [(line, shape) for _, line, shape, _ in found_in(root)] == [(1, "home"), (2, "home")]


def test_a_parameter_named_like_a_variable_of_the_notebook_still_reaches_env_local(tmp_path):
    cells = [
        'TEST_ROOT = "/data/ana/set/test/DCM"\n',
        'TRAIN_ROOT = "/data/ana/set/train/DCM"\nq = f"open(\'/data/ana/set/train/list.txt\')"\n',
    ]
    root = build_tree(tmp_path / "p", {"eda.ipynb": code_notebook(*cells)})
    fixed = pathfix.fix(root)
    assert fixed.written
    values = read_env_local(root / ".env.local")
    text = (root / "eda.ipynb").read_text()
    read = set(pathfix._parameters_read(text))
    assert read and read <= set(values), (read, values)
