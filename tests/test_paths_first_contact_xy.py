"""What rounds X and Y met on first contact (issue 26): a path glued to a terminal colour code, a path built
from format fields (and a tail kept in a variable), a Singularity recipe by its header, a remote folder a
message also prints, the files that run in the project's own image, ROS graph names. Fixtures of our own,
written as the rule reads."""

from __future__ import annotations

from tests.paths_support import build_tree, found_in, output_notebook


def test_a_path_right_after_a_terminal_colour_code_is_found(tmp_path):
    trace = ["File \x1b[0;32m/lab/envs/py38/lib/python3.8/site-packages/pandas/core/frame.py:3505\x1b[0m, in get\n"]
    notebook = output_notebook(["df['x']\n"], [{"output_type": "error", "ename": "KeyError", "evalue": "x", "traceback": trace}])
    root = build_tree(tmp_path / "p", {"summary.ipynb": notebook})
    assert [(shape, category) for _, _, shape, category in found_in(root)] == [("absolute", "notebook")]


def test_a_path_built_from_format_fields_is_found_and_left_to_a_person(tmp_path):
    code = 'import os\nuser = os.getenv("USER")\nshared = f"/checkpoint/{user}/experiments"\ndata = "/home/{}/corpora".format(user)\n'
    root = build_tree(tmp_path / "p", {"shared.py": code})
    from bundler.portability import scan as paths

    findings = paths.scan(root).findings
    assert [(f.line, f.shape) for f in findings] == [(3, "absolute"), (4, "home")]
    assert all("built from parts at run time" in f.note for f in findings)


def test_a_singularity_recipe_is_known_by_its_header_whatever_its_name(tmp_path):
    recipe = "# built by CI\nBootstrap: docker\nFrom: lab/base:1\n\n%files\n  /home/ana/wheels/x.whl /opt/x.whl\n"
    recipe += "%post\n  mkdir /h /checkpoint\n"
    root = build_tree(tmp_path / "p", {"docker/Singularity": recipe, "docker/notes": "mkdir /h\n"})
    assert found_in(root) == [("docker/Singularity", 6, "home", "code"), ("docker/notes", 1, "absolute", "code")]


def test_a_folder_only_copied_to_another_machine_stays_remote_when_a_message_prints_it(tmp_path):
    script = (
        'BACKUP_DIR="/mnt/storage/lab/users/ana/runs/"\n'
        'echo "Backing up to $BACKUP_DIR ..."\n'
        "rsync -avz results/ ana@store.lab.org:$BACKUP_DIR/results\n"
    )
    local = 'OUT="/mnt/storage/lab/users/ana/out/"\necho "writing $OUT"\nmkdir -p $OUT\n'
    root = build_tree(tmp_path / "p", {"backup.sh": script, "local.sh": local})
    assert [(file, line, category) for file, line, _, category in found_in(root)] == [
        ("backup.sh", 1, "remote"),
        ("local.sh", 1, "code"),
    ]


def test_files_copied_into_the_projects_image_name_its_folders_but_python_stays_the_hosts(tmp_path):
    dockerfile = (
        "FROM ros:noetic\n"
        "ARG USERNAME=ros\n"
        "RUN useradd -s /bin/bash -m $USERNAME\n"
        "COPY entrypoint.sh /entrypoint.sh\n"
        "COPY bashrc /home/${USERNAME}/.bashrc\n"
        "COPY train.py /opt/train.py\n"
    )
    files = {
        "docker/Dockerfile": dockerfile,
        "docker/entrypoint.sh": "#!/bin/bash\ncd ~/catkin_ws\nsource /home/ros/catkin_ws/devel/setup.bash\n",
        "docker/bashrc": "source /opt/ros/noetic/setup.bash\nexport DATA=/srv/bags\n",
        "docker/train.py": 'DATA = "/srv/bags"\n',
        "src/viewer.cpp": 'cv::imread("/home/ros/pictures/test.png");\ncv::imread("/home/ana/pictures/test.png");\n',
    }
    root = build_tree(tmp_path / "p", files)
    assert [(file, line) for file, line, _, _ in found_in(root)] == [("docker/train.py", 1), ("src/viewer.cpp", 2)]


def test_a_shell_script_docker_runs_names_the_images_folders_but_one_apptainer_runs_sees_the_hosts(tmp_path):
    files = {
        "run.sh": "docker run --rm -v $PWD/data:/data lab/img:1 bash ./job.sh\n",
        "job.sh": "#!/bin/bash\nsource /root/miniconda3/bin/activate env\ncd ~/work && python train.py\n",
        "run_hpc.sh": "apptainer exec --nv /gpfs/work5/lab/img.sif /bin/bash hpc_job.sh\n",
        "hpc_job.sh": "#!/bin/bash\ntorchrun train.py --data_path /gpfs/work5/lab/CityScapes\n",
    }
    root = build_tree(tmp_path / "p", files)
    assert [(file, line) for file, line, _, _ in found_in(root)] == [("hpc_job.sh", 2), ("run_hpc.sh", 1)]


def test_a_commented_build_argument_read_by_a_copy_source_is_the_building_machines(tmp_path):
    dockerfile = (
        "FROM ros:melodic\n"
        '#ARG HOME_PATH="/home/ana"\n'
        'ARG WORKSPACE="/home/ros/ws"\n'
        "#COPY ${HOME_PATH}/robot/ros_code ${WORKSPACE}/src/robot\n"
    )
    root = build_tree(tmp_path / "p", {"Docker/Dockerfile": dockerfile})
    assert found_in(root) == [("Docker/Dockerfile", 2, "home", "code")]


def test_ros_graph_names_are_no_folders_but_data_paths_in_a_ros_package_stay(tmp_path):
    launch = (
        "<launch>\n"
        '  <remap from="/camera_info" to="/camera/rgb/camera_info" />\n'
        '  <rosparam param="source_list">["/kinect/tilt/joint_states", "/arm/joint_states"]</rosparam>\n'
        '  <param name="image_topic" value="/webcam/image_raw" />\n'
        '  <arg name="bag" default="/data/bags/run1.bag" />\n'
        "</launch>\n"
    )
    node = 'pub = nh.advertise<geometry_msgs::Point>("/arm/command", 10);\nsub = nh.subscribe("/arm/joint_states", 1, cb);\n'
    files = {
        "robot/package.xml": "<package><name>robot</name></package>\n",
        "robot/launch/bringup.launch": launch,
        "robot/rviz/view.rviz": "    - Class: rviz/TF\n      Name: /TF1/Frames1\n",
        "robot/param/ekf.yaml": "debug_out_file: /path/to/debug/file.txt\npose0: /laser/pose_stamped\n",
        "robot/src/node.cpp": node,
        "tools/topics.yaml": "listen: /camera/rgb/image_raw\n",
    }
    root = build_tree(tmp_path / "p", files)
    assert [(file, line) for file, line, _, _ in found_in(root)] == [
        ("robot/launch/bringup.launch", 5),
        ("robot/param/ekf.yaml", 1),
        ("tools/topics.yaml", 1),
    ]


def test_a_formatted_tail_kept_in_a_variable_and_put_after_a_folder_is_a_piece(tmp_path):
    code = (
        'location = f"/reference/{formula}_{atoms}/{formula}.pkl"\n'
        "data = load(str(self.experiment_location) + location)\n"
        'train = f"/datasets/{dataset_id}/train.parquet"\n'
        "frame = read_parquet(train)\n"
    )
    root = build_tree(tmp_path / "p", {"analysis.py": code})
    assert found_in(root) == [("analysis.py", 3, "absolute", "code")]


def test_a_commented_copy_in_prose_is_no_instruction(tmp_path):
    dockerfile = "FROM python:3.11\nENV APP=$HOME/app\n# Copy the current directory into the container at $HOME/app\nCOPY . $APP\n"
    root = build_tree(tmp_path / "p", {"Dockerfile": dockerfile})
    assert found_in(root) == []


def test_a_folder_put_whole_into_a_command_string_is_no_tail(tmp_path):
    code = (
        "working_dir = '/path/to/PoseWarper/'\n"
        "MODEL = '/export/ws15/lab/dt_pron.fst'\n"
        "command = python + ' ' + working_dir + '/tools/train.py'\n"
        "run(['g2p', '--model=' + MODEL])\n"
    )
    root = build_tree(tmp_path / "p", {"helper.py": code})
    assert [(file, line) for file, line, _, _ in found_in(root)] == [("helper.py", 1), ("helper.py", 2)]


def test_what_round_aa_met_a_readme_bind_a_probe_path_escaped_markup_and_a_cloud_drive(tmp_path):
    files = {
        "README.md": "Run it:\n\n    docker run -v /path/to/your/nas/:/nas-data/ lab/vqa:1\n",
        "eval.py": "data_dir = '/nas-data/vqa/data2/'\nout = '/srv/share2/ana/out'\n",
        "k8s/deploy.yaml": "readinessProbe:\n  httpGet:\n    port: 8080\n    path: /ready\nvolumes:\n  - path: /mnt/data/models\n",
        "figure.svg": '<svg content="&lt;mxGraphModel&gt;&lt;root&gt;&lt;/root&gt;&lt;/mxGraphModel&gt;"></svg>\n',
        "load.py": 'ROOT = "~/Library/CloudStorage/OneDrive-Lab/Data"\nCACHE = "~/Library/Caches/lab"\n',
    }
    root = build_tree(tmp_path / "p", files)
    assert [(file, line) for file, line, _, category in found_in(root) if category not in ("portable", "docs")] == [
        ("eval.py", 2),
        ("k8s/deploy.yaml", 6),
        ("load.py", 1),
    ]


def test_a_command_paramiko_runs_is_the_other_machines_and_a_cmd_switch_is_no_folder(tmp_path):
    server = (
        "import paramiko\n"
        'command = f"cd /data/ana/repos/kegs && sbatch run.sh"\n'
        "ssh.exec_command(command)\n"
        'ssh.exec_command("ls /data/ana/outputs")\n'
        'LOCAL = "/data/ana/cache"\n'
    )
    files = {"backend/main.py": server, "launch.bat": 'cd /d "%~dp0"\nstart "x" cmd /k "cd /d %~dp0backend"\ncopy a D:\\runs\\a\n'}
    root = build_tree(tmp_path / "p", files)
    assert [(file, line, category) for file, line, _, category in found_in(root)] == [
        ("backend/main.py", 2, "remote"),
        ("backend/main.py", 4, "remote"),
        ("backend/main.py", 5, "code"),
        ("launch.bat", 3, "code"),
    ]
