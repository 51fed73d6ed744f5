"""Paths that belong to another machine's layout, and values followed through a variable.

Fixtures of our own, one per class rounds H and I of first contact brought: an image's own
layout (every path of a Dockerfile but a COPY/ADD source), the container side of a bind and
code that runs under it, a CI service's runner, web routes, a folder right under ``/`` kept in
a variable, a per-user tree in ``/tmp``, and a home kept in a variable.
"""

from __future__ import annotations

from bundler.portability import scan as paths
from tests.paths_support import build_tree


def _found(root, name=None):
    return [(f.file, f.line, f.shape, f.category) for f in paths.scan(root).findings if name in (None, f.file)]


def test_every_path_of_a_dockerfile_but_a_copy_source_is_the_images(tmp_path):
    dockerfile = (
        "FROM python:3.11\n"
        "ARG USER_NAME=app\n"
        "RUN useradd -d /home/$USER_NAME $USER_NAME && mkdir -p /home/$USER_NAME/.cache\n"  # 3 the image's
        "WORKDIR /home/jovyan/work\n"  # 4 the image's
        "RUN pip install x && rm -rf /root/.cache/pip\n"  # 5 the image's
        "COPY ./config /root/.jupyter\n"  # 6 the destination: the image's
        "COPY /home/alice/models/m.pt /opt/m.pt\n"  # 7 the source: the building machine's
        "COPY --from=builder /root/wheels /wheels\n"  # 8 another image's
    )
    definition = "Bootstrap: docker\nFrom: ubuntu\n%files\n  /home/alice/data.csv /root/data.csv\n%post\n  mkdir /root/x\n"
    root = build_tree(tmp_path / "p", {"Dockerfile.gpu": dockerfile, "env.def": definition})
    assert _found(root) == [("Dockerfile.gpu", 7, "home", "code"), ("env.def", 4, "home", "code")]


def test_a_binds_container_side_and_code_that_runs_under_it(tmp_path):
    compose = 'services:\n  lab:\n    volumes:\n      # - "./src:/home/src"\n      - "./:/home/jovyan/work"\n'
    files = {
        "docker-compose.yaml": compose,
        "run.sh": 'docker run -v "/home/alice/proj:/tf/notebooks" img\n',  # the host side stays
        "code/convert.py": 'SRC = r"/home/jovyan/work/root/data"\nOUT = "/home/alice/out"\n',
        "nb.py": 'base = r"/tf/notebooks"\n',
        "conf/data.yaml": 'mount_path: "/root/data/"\n',  # a config's key, no container's
        "load.py": 'dest = "/root/data/parts/"\n',
    }
    root = build_tree(tmp_path / "p", files)
    assert _found(root) == [
        ("code/convert.py", 2, "home", "code"),
        ("conf/data.yaml", 1, "home", "config"),
        ("load.py", 1, "home", "code"),
        ("run.sh", 1, "home", "code"),
    ]


def test_a_ci_services_config_names_its_runners_folders(tmp_path):
    config = "jobs:\n  build:\n    working_directory: ~/proj\n    steps:\n      - run: source ~/.bashrc\n"
    vendored = "install:\n  - bash m.sh -b -p $HOME/miniconda\n"
    root = build_tree(tmp_path / "p", {".circleci/config.yml": config, "lib/dep/.travis.yml": vendored})
    assert _found(root) == [
        (".circleci/config.yml", 3, "tilde", "remote"),
        (".circleci/config.yml", 5, "tilde", "portable"),
        ("lib/dep/.travis.yml", 2, "home-var", "config"),
    ]


def test_web_routes_are_no_folders(tmp_path):
    api = (
        "router = APIRouter(\n"
        '    prefix="/api/base",\n'
        ")\n"
        '@router.websocket("/ws/terminal")\n'
        "async def ws(): ...\n"
        '@app.post("/v1/chat/completions")\n'
        "def chat(): ...\n"
        'DATA = "/data/alice/corpus"\n'
    )
    config = (
        "## The gateway endpoint for kernels\n"
        "#  Default: '/api/kernels'\n"
        "# c.GatewayClient.kernels_endpoint = '/api/kernels'\n"
        "\n"
        "## Where notebooks are kept\n"
        "#  Default: '/srv/alice/notebooks'\n"
        "# c.NotebookApp.notebook_dir = '/srv/alice/notebooks'\n"
    )
    root = build_tree(tmp_path / "p", {"api.py": api, "jupyter_config.py": config})
    assert _found(root) == [
        ("api.py", 8, "absolute", "code"),
        ("jupyter_config.py", 6, "absolute", "code"),
        ("jupyter_config.py", 7, "absolute", "code"),
    ]


def test_a_folder_under_the_root_kept_in_a_variable_that_code_builds_paths_on(tmp_path):
    files = {
        "lib/cluster.py": 'if ok:\n    FS = "/checkpoint"\nelse:\n    FS = "/fsx"\nAPI = "/api"\nMODE = "/train"\n',
        "run.py": 'from lib import cluster\nbase = f"{cluster.FS}/{user}/runs"\nurl = f"{cluster.API}/users"\n',
        "train.py": 'import os, sys\nsys.path.append(os.path.join(os.path.dirname(__file__), "/common"))\n',
    }
    root = build_tree(tmp_path / "p", files)
    assert _found(root) == [
        ("lib/cluster.py", 2, "absolute", "code"),
        ("lib/cluster.py", 4, "absolute", "code"),
        ("train.py", 2, "absolute", "code"),
    ]


def test_a_per_user_tree_in_tmp_is_an_output_built_at_run_time(tmp_path):
    text = 'basedir = f"/tmp/{user}/forecasts/{region}"\ncache = f"/tmp/{user}/.cache/x"\nlock = "/tmp/"\n'
    text += 'os.environ["XDG_RUNTIME_DIR"] = f"/tmp/{user}/runtime-dir"\n'
    root = build_tree(tmp_path / "p", {"cv.py": text})
    found = paths.scan(root).findings
    assert [(f.line, f.shape, f.category) for f in found] == [(1, "temp-dir", "code")]
    assert found[0].note  # built from a user name at run time: --fix leaves it to a person


def test_a_home_kept_in_a_variable(tmp_path):
    text = (
        "import os\n"
        "# the database goes to ~/.pool/<id>.db\n"  # 2 portable: the code makes .pool
        'self.db = os.path.expanduser(f"~/.pool/{uid}.db")\n'  # 3 portable
        "os.makedirs(os.path.dirname(self.db), exist_ok=True)\n"
        'home = os.path.expanduser("~")\n'  # 5 the lookup itself: a finding
        'cmd = [f"source {home}/.bashrc", f"source {home}/.myenv"]\n'  # 6 .bashrc: information
    )
    root = build_tree(tmp_path / "p", {"pool.py": text})
    assert _found(root) == [
        ("pool.py", 2, "tilde", "portable"),
        ("pool.py", 3, "tilde", "portable"),
        ("pool.py", 5, "home-lookup", "code"),
        ("pool.py", 6, "home-lookup", "portable"),
    ]
