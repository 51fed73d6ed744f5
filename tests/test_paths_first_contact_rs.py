"""What rounds R and S met on first contact (issue 26): templates a person fills in, names in namespaces that are no
file system (USD prims, ROS topics, HDF5 groups, log groups), tools' folders of the moment in /tmp, a login kept in a
shell variable before ``@host:``, a library's own home folder, a notebook's code building paths on a folder right
under /, a printed dataset's history, and a container's side given by ``--mount``, ``--bind`` or the base image.

Fixtures of our own, written as the rule reads (README of the hand labels), not as any repository spelled it.
"""

from __future__ import annotations

from bundler.portability import scan as paths
from tests.paths_support import build_tree, code_notebook, found_in, output_notebook


def _failing(root) -> list[tuple[str, int, str]]:
    return [(file, line, shape) for file, line, shape, category in found_in(root) if category in ("code", "config", "notebook")]


def test_a_template_a_person_fills_in_is_documentation_and_a_config_or_script_named_example_still_runs(tmp_path):
    root = build_tree(
        tmp_path / "p",
        {
            "config/env.sh_template": 'export PATH="/home/ana/miniconda3/bin:$PATH"\n',
            "config/paths_template.json": '{"db": "/projects/lab/db/choice.db"}\n',
            "config/run_example.yaml": "data: /data/ana/set\n",
            "run_example.sh": "python train.py --data /home/ana/set\n",
        },
    )
    found = found_in(root)
    assert {(file, category) for file, _, _, category in found if file.startswith("config/")} == {
        ("config/env.sh_template", "docs"),
        ("config/paths_template.json", "docs"),
        ("config/run_example.yaml", "config"),
    }
    assert ("run_example.sh", 1, "home", "code") in found


def test_names_in_namespaces_that_are_no_file_system_are_not_folders(tmp_path):
    code = (
        'ground = GroundCfg(prim_path="/World/ground")\n'
        'rays = RayCfg(mesh_prim_paths=["/World/ground"])\n'
        'sub = rospy.Subscriber("/camera/rgb/image_raw", Image, seen)\n'
        'rate = rospy.get_param("/robot/rate")\n'
        'group = h5.create_group("/measurements/run1")\n'
        'logs.create_log_stream(logGroupName="/aws/batch/job", logStreamName="x")\n'
        'data = open("/data/ana/topics.csv")\n'
    )
    terraform = 'options = {\n  "awslogs-group" = "/aws/batch/job"\n  "mount" = "/mnt/ana/x"\n}\n'
    root = build_tree(tmp_path / "p", {"sim.py": code, "batch.tf": terraform})
    assert sorted(_failing(root)) == [("batch.tf", 3, "absolute"), ("sim.py", 7, "absolute")]


def test_a_tools_folder_of_the_moment_in_tmp_is_scratch_and_a_named_output_folder_is_not(tmp_path):
    printed = [
        "  Created wheel in /tmp/pip-req-build-lukh4xqp/dist\n",
        "  Stored in directory: /tmp/pip-ephem-wheel-cache-otdd56k/wheels/63/d1\n",
        "Logs in /tmp/tmpa8b_c9d0/events.out\n",
        "checkpoints saved to /tmp/outputs/run1/model.pt\n",
    ]
    notebook = output_notebook(["!pip install ."], [{"name": "stdout", "output_type": "stream", "text": printed}])
    root = build_tree(tmp_path / "p", {"setup.ipynb": notebook})
    assert [f.text for f in paths.scan(root).failing] == ["/tmp/outputs/run1/model.pt"]


def test_a_login_kept_in_a_variable_before_at_host_makes_the_folder_remote(tmp_path):
    script = 'read -p "ID: " SUID\nscp -r "$OUT" ${SUID}@login.example.edu:~/\nrsync -a $U@hpc:/scratch/x/ ./\ncp out ~/keep/\n'
    root = build_tree(tmp_path / "p", {"submit.sh": script})
    found = found_in(root)
    assert [(line, category) for _, line, _, category in found] == [(2, "remote"), (3, "remote"), (4, "code")]


def test_a_librarys_own_folder_in_the_home_is_portable(tmp_path):
    code = "# For example ~/.allennlp/cache/1234 -> ~/.allennlp/cache/1234-extracted\nCACHE = '~/.myproject/cache'\n"
    root = build_tree(tmp_path / "p", {"files.py": code})
    assert [(line, category) for _, line, _, category in found_in(root)] == [(1, "portable"), (1, "portable"), (2, "code")]


def test_a_notebooks_code_builds_paths_on_a_folder_right_under_the_root_as_a_module_does(tmp_path):
    cell = [
        "if colab:\n",
        '    root_path = "/content"\n',
        "else:\n",
        '    root_path = "."\n',
        'model = "/content/" + name\n',
        'rows = f"{root_path}/data/cases.csv"\n',
        'route = "/health"\n',
    ]
    root = build_tree(tmp_path / "p", {"train.ipynb": code_notebook(cell)})
    lines = [(line, shape) for _, line, shape in _failing(root)]
    assert lines == [(9, "absolute"), (12, "absolute-built")]  # the JSON lines of "/content" and "/content/" + name


def test_a_printed_datasets_history_names_the_providers_machine_and_a_history_file_in_code_does_not(tmp_path):
    html = (
        "<dt><span>history :</span></dt><dd>2023-10-20 by grib_to_netcdf: /opt/ecmwf/bin/grib_to_netcdf.bin -o "
        "/cache/data7/adaptor.mars.internal-1.nc /cache/tmp/x-tmp.grib</dd>"
    )
    text = ["Attributes:\n", "    history:  made by: tool -o /cache/data7/z.nc\n", "    saved_to:  /cache/data7/y.nc\n"]
    data = {"text/html": [html], "text/plain": text}
    notebook = output_notebook(["ds"], [{"output_type": "execute_result", "execution_count": 1, "metadata": {}, "data": data}])
    root = build_tree(tmp_path / "p", {"era5.ipynb": notebook, "log.py": 'history = "/data/ana/history.txt"\n'})
    found = found_in(root)
    remote = [category for file, _, _, category in found if file == "era5.ipynb"]
    assert remote.count("remote") == 3 and remote.count("notebook") == 1  # the next attribute is no history
    assert ("log.py", 1, "absolute", "code") in found


def test_the_containers_side_of_mount_and_bind_and_the_base_images_workdir_are_the_containers_layout(tmp_path):
    script = (
        'DATA_DIR="/mnt/ssd2/set/"\n'
        "docker run --rm --mount type=bind,source=$DATA_DIR,target=/data "
        "--mount type=bind,source=$PWD/out,target=/out img python /configs/run.py\n"
        "apptainer exec --bind /lustre/ana/set:/dataset img.sif python train.py\n"
    )
    config = 'data_root = "/data/"\nwork_dir = "/out"\nextra = "/dataset/val"\nother = "/srv/ana/x"\n'
    notebook = code_notebook(["!python /workspace/mmdetection/tools/analyze.py /out/run1/scalars.json\n"])
    files = {"train.sh": script, "configs/run.py": config, "notes.ipynb": notebook}
    files["docker/det.Dockerfile"] = "FROM pytorch/pytorch:2.1.1-cuda12.1-cudnn8-devel\nRUN git clone https://example.org/det.git\n"
    root = build_tree(tmp_path / "p", files)
    assert sorted(_failing(root)) == [("configs/run.py", 4, "absolute"), ("train.sh", 1, "absolute"), ("train.sh", 3, "absolute")]
