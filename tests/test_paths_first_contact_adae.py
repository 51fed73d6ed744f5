"""What rounds AD and AE met on first contact (issue 26): a folder bound into a container under its own name,
HDF5 groups by subscript, ROS topics and services as argparse defaults (one or a list), a Kubernetes volume
on network storage, a path glued to an upper-case JSON colour escape, the second string of an implicit
concatenation, a Dockerfile named with an underscore, a text file padded with NULs. Fixtures of our own,
written as the rule reads."""

from __future__ import annotations

from tests.paths_support import build_tree, found_in, output_notebook


def test_a_folder_bound_under_its_own_name_stays_the_hosts_and_so_does_the_workdir_under_it(tmp_path):
    script = (
        "docker run --rm -it \\\n  -v /data/lab/ana/:/data/lab/ana/ \\\n  -w /data/lab/ana/project \\\n  img:1 python train.py\n"
        "docker run --rm -v /srv/ana/in:/in -w /in/work img:1 true\n"
    )
    config = "data:\n  dir: '/data/lab/ana/images/subset.csv'\nother: '/in/work/x.csv'\n"
    root = build_tree(tmp_path / "p", {"run.sh": script, "cfg.yaml": config})
    assert [(file, line) for file, line, _, _ in found_in(root)] == [("cfg.yaml", 2), ("run.sh", 2), ("run.sh", 3), ("run.sh", 5)]


def test_hdf5_groups_by_subscript_and_ros_names_as_argparse_defaults_are_no_folders(tmp_path):
    code = (
        "import argparse\nimport h5py\n\nwith h5py.File(path) as f:\n"
        "    qpos = f['/observations/qpos'][()]\n    img = f[f'/camera/color/{key}'][i]\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--img_front_topic', type=str,\n                    default='/camera_f/color/image_raw')\n"
        "parser.add_argument('--color_topics', default=['/camera_l/image', '/camera_r/image'])\n"
        "parser.add_argument('--status_service', default='/aloha/status_service')\n"
        "parser.add_argument('--service_account_file', default='/keys/sa.json')\n"
        "parser.add_argument('--ckpt_dir', default='/checkpoints/run1')\n"
    )
    plain = "table = {}\nx = table['/observations/qpos']\n"  # no HDF5 here: a key that may well be a folder
    root = build_tree(tmp_path / "p", {"infer.py": code, "plain.py": plain})
    assert [(file, line) for file, line, _, _ in found_in(root)] == [("infer.py", 12), ("infer.py", 13), ("plain.py", 2)]


def test_a_kubernetes_volume_on_network_storage_is_the_servers_and_a_host_path_the_nodes(tmp_path):
    job = (
        "spec:\n  volumes:\n    - name: data\n      cephfs:\n        monitors:\n          - 10.0.0.1\n"
        '        path: "/home/ext/ana/data"\n        user: ana\n'
        "    - name: nfsdata\n      nfs:\n        server: store\n        path: /exports/ana\n"
        "    - name: local\n      hostPath:\n        path: /mnt/node/ana\n"
    )
    root = build_tree(tmp_path / "p", {"k8s-job.yaml": job})
    assert [(line, category) for _, line, _, category in found_in(root)] == [(7, "remote"), (12, "remote"), (15, "config")]


def test_a_path_glued_to_an_upper_case_json_colour_escape_is_found(tmp_path):
    trace = ["\u001b[0;32m~/anaconda3/envs/x/lib/python3.7/site-packages/librosa/display.py\u001b[0m in specshow\n"]
    notebook = output_notebook(["plot()\n"], [{"output_type": "error", "ename": "E", "evalue": "e", "traceback": trace}])
    root = build_tree(tmp_path / "p", {"viz.ipynb": notebook.replace("\\u001b", "\\u001B")})
    assert [(shape, category) for _, _, shape, category in found_in(root)] == [("tilde", "notebook")]


def test_the_second_string_of_an_implicit_concatenation_is_a_tail(tmp_path):
    code = (
        "class Asset:\n"
        "    # file = '{ROOT_DIR}'\\\n    #     '/resources/robots/h1.urdf'\n"
        "    file = ('{ROOT_DIR}'\n            '/resources/robots/h1_v2.urdf')\n"
        "    paths = [\n        '/data/robots/a.urdf',\n    ]\n"
    )
    root = build_tree(tmp_path / "p", {"config.py": code})
    assert [line for _, line, _, _ in found_in(root)] == [7]


def test_a_dockerfile_named_with_an_underscore_is_the_images_and_a_nul_padded_script_is_read(tmp_path):
    dockerfile = "FROM python:3.11\nRUN pip install x\ncd /mydrive/NeMo/ && pip install -e .\n"
    script = b"import os\r\nDATA = '/home/ana/patches'\r\n\x00"
    zeros = b"/home/ana/x\n" + b"\0" * 4096  # a longer run of NULs: binary still
    root = build_tree(tmp_path / "p", {"docker/Dockerfile_base": dockerfile, "to_patches.py": script, "blob.bin": zeros})
    assert found_in(root) == [("to_patches.py", 2, "home", "code")]


def test_the_second_string_of_a_path_split_over_two_lines_is_still_the_paths(tmp_path):
    code = 'config = ("/home/ana/Research codes/explore/envs"\n          "/agent/agent_config.yml")\n'
    root = build_tree(tmp_path / "p", {"env.py": code})
    assert [line for _, line, _, _ in found_in(root)] == [1, 2]
