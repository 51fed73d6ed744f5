"""What rounds T and U met on first contact (issue 26): CMake's build script read as prose for its .txt suffix,
and every YAML list item taken for a Hydra defaults entry. Fixtures of our own, written as the rule reads."""

from __future__ import annotations

from tests.paths_support import build_tree, found_in


def test_cmakes_build_script_is_code_whatever_its_suffix(tmp_path):
    cmake = "add_executable(app app.cpp)\ntarget_include_directories(app PRIVATE /data/ana/envs/ort/include)\n"
    root = build_tree(tmp_path / "p", {"infer/CMakeLists.txt": cmake, "notes.txt": "built against /data/ana/envs/ort\n"})
    assert found_in(root) == [("infer/CMakeLists.txt", 2, "absolute", "code"), ("notes.txt", 1, "absolute", "docs")]


def test_a_yaml_list_of_paths_is_read_and_only_a_hydra_defaults_list_names_config_groups(tmp_path):
    sweep = "command:\n  - python\n  - --dataset-path\n  - /root/data/set\n  # - /srv/ana/old\n"
    hydra = "defaults:\n  - override /hydra/launcher: submitit\n  # a comment\n  - /model/base\n"
    root = build_tree(tmp_path / "p", {"sweep.yaml": sweep, "conf/config.yaml": hydra})
    assert found_in(root) == [("sweep.yaml", 4, "home", "config"), ("sweep.yaml", 5, "absolute", "config")]


def test_a_users_folder_under_a_sites_variable_is_a_home_left_to_a_person(tmp_path):
    script = (
        "srun python $PROJECT/users/ana/src/train.py\n"
        "export HOME=${WORK}/home/ana\n"
        "ls data/home/bob $PWD/home/x\n"
        "cp out $HOME/users/keep/\n"
    )
    root = build_tree(tmp_path / "p", {"job.sh": script})
    assert [(line, shape) for _, line, shape, _ in found_in(root) if shape != "home-var"] == [(1, "home-built"), (2, "home-built")]
