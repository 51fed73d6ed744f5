"""What rounds V and W met on first contact (issue 26): JetBrains' home macro, an IDE's SFTP server root, Slurm
pyxis container mounts (and an option line that is no compose list), templates of any script suffix.
Fixtures of our own, written as the rule reads."""

from __future__ import annotations

from tests.paths_support import build_tree, found_in


def test_jetbrains_home_macro_is_the_home_and_its_server_root_is_remote(tmp_path):
    workspace = '<option value="$USER_HOME$/anaconda3/lib/python3.6/x.py" />\n<option value="$PROJECT_DIR$/x.py" />\n'
    servers = '<webServer id="1" name="box">\n  <fileTransfer rootFolder="/root" host="10.0.0.2" />\n</webServer>\n'
    root = build_tree(tmp_path / "p", {".idea/workspace.xml": workspace, ".idea/webServers.xml": servers})
    assert found_in(root) == [(".idea/webServers.xml", 2, "home", "remote"), (".idea/workspace.xml", 1, "home-var", "code")]


def test_pyxis_container_mounts_give_the_containers_side_and_a_folder_shared_as_it_is_stays_the_hosts(tmp_path):
    job = (
        "srun --container-image=/netscratch/enroot/img.sqsh \\\n"
        "  --container-mounts=/netscratch/tools:/netscratch/tools:ro,/ds/text:/data,/home/ana/slt:/workspace \\\n"
        "  python train.py\n"
        "tar -xf /netscratch/tools/ide.tar.gz -C /tmp/\n"
    )
    config = "data_path: /data/phoenix\nmodel_dir: /workspace/models\n"
    root = build_tree(tmp_path / "p", {"batch.sh": job, "configs/run.yaml": config})
    assert [(file, line) for file, line, _, _ in found_in(root)] == [
        (
            "batch.sh",
            1,
        ),
        ("batch.sh", 2),
        ("batch.sh", 2),
        ("batch.sh", 2),
        ("batch.sh", 4),
    ]


def test_a_template_of_any_script_suffix_is_documentation_but_python_is_not(tmp_path):
    files = {
        "scripts/3.train_template.slurm": "#SBATCH --output=/gpfs/projects/lab/out/%j.log\n",
        "scripts/job_template.sh": "cd /gpfs/projects/lab/run\n",
        "lib/html_template.py": 'ROOT = "/gpfs/projects/lab/site"\n',
    }
    root = build_tree(tmp_path / "p", files)
    assert sorted((file, category) for file, _, _, category in found_in(root)) == [
        ("lib/html_template.py", "code"),
        ("scripts/3.train_template.slurm", "docs"),
        ("scripts/job_template.sh", "docs"),
    ]
