"""What rounds AB and AC met on first contact (issue 26): a one-folder root handed to a keyword that says
folder, a drive's root concatenated into a path, a topic a comment names beside the call that subscribes
to it, a browser's request of its own server, and the pieces of a path (a folder renamed inside it, a tail
a comment shows appended). Fixtures of our own, written as the rule reads."""

from __future__ import annotations

from tests.paths_support import build_tree, code_notebook, found_in


def test_a_one_folder_root_handed_to_a_keyword_that_says_folder_is_one_machines(tmp_path):
    cell = ['TRAIN_FOLDER = "/serialized_train/"\n', 'SPLITS = "/splits"\n', "ds = AudioSet(data_path=TRAIN_FOLDER)\n"]
    module = 'CACHE = "/featcache"\nWEB = "/predict"\nloader = Loader(root_dir=CACHE, route=WEB)\n'
    root = build_tree(tmp_path / "p", {"prep.ipynb": code_notebook(cell), "load.py": module})
    assert [(file, shape) for file, _, shape, _ in found_in(root)] == [("load.py", "absolute"), ("prep.ipynb", "absolute")]
    assert [line for file, line, _, _ in found_in(root) if file == "load.py"] == [1]  # WEB goes to route=, no folder


def test_a_drives_root_concatenated_into_a_path_is_found_and_a_lone_one_is_not(tmp_path):
    code = 'first = "D:/"\nsecond = "festival/"\npicture = first + second + "x.png"\nlabel = "E:/"\nprint(label)\n'
    cell = ['root = "F:\\\\"\n', 'img = os.path.join(root, "a.png")\n']
    root = build_tree(tmp_path / "p", {"paths.py": code, "nb.ipynb": code_notebook(cell)})
    found = found_in(root)
    assert [(file, shape) for file, _, shape, _ in found] == [("nb.ipynb", "windows-drive"), ("paths.py", "windows-drive")]
    assert [line for file, line, _, _ in found if file == "paths.py"] == [1]  # E:/ is only printed


def test_a_topic_a_comment_names_beside_the_call_that_subscribes_to_it_is_no_folder(tmp_path):
    code = (
        "import rospy\n\n\ndef listen():\n"
        "    # subscribe to /camera/depth/points, callback below\n"
        '    rospy.Subscriber("/camera/depth/points", PointCloud2, callback)\n'
        "    # results go to /results/points\n"
    )
    root = build_tree(tmp_path / "p", {"listen.py": code})
    assert found_in(root) == [("listen.py", 7, "absolute", "code")]


def test_a_browsers_request_of_its_own_server_is_a_route(tmp_path):
    script = (
        "function send(fd) {\n  var xhr = new XMLHttpRequest();\n"
        '  xhr.open("POST", "/upload_audio", true);\n  axios.post("/api/predict", fd);\n'
        '  $.getJSON("/stats/today.json");\n  xhr.send(fd);\n}\nconst model = "/models/enc.onnx";\n'
    )
    root = build_tree(tmp_path / "p", {"static/app.js": script})
    assert found_in(root) == [("static/app.js", 8, "absolute", "code")]


def test_the_pieces_of_a_path_are_no_folders_of_their_own(tmp_path):
    code = (
        "def lists(self, line):\n"
        "    # the image set file:\n"
        "    # self._data_path + /ImageSets/val.txt\n"
        '    renamed = line.replace("/speech_data/", "/speech_data_16k/")\n'
        '    moved = line.replace("/home/ana/", "/data/")\n'
        "    # outputs in /results/sets\n"
        "    return renamed, moved\n"
    )
    root = build_tree(tmp_path / "p", {"sets.py": code})
    assert [(line, shape) for _, line, shape, _ in found_in(root)] == [(5, "home"), (5, "absolute"), (6, "absolute")]
