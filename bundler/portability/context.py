"""Where a found path sits, and what that makes it.

The shapes (machinepaths.py) say what looks like a machine-specific path; this module
says what a hit is in its file: documentation (docstrings, notebook markdown, example
files), a command run on another machine (``user@host:path``, ``ssh host "…"``), a
portable per-user tool folder (``~/.cache``, ``Path.home() / ".ssh"``), a temporary
folder nothing is written to, or text that goes on past a space (``'/Users/u/Week 10/x'``).
"""

from __future__ import annotations

import io
import re
import tokenize
from bisect import bisect_right
from functools import lru_cache

from bundler.machinepaths import FHS_TOP, inside_url, portable_absolute

# --- documentation ------------------------------------------------------------------------


def python_docstring_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character offsets of bare string statements: docstrings and string comments.

    Tokens, not the AST, so that Python 2 files and files with a syntax error are read too.
    """
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    spans, previous, pending = [], tokenize.NEWLINE, None
    insignificant = (tokenize.NL, tokenize.COMMENT, tokenize.ENCODING)
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in insignificant:
                continue
            if pending is not None:
                if token.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                    spans.append(pending)
                pending = None
            if token.type == tokenize.STRING and previous in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                pending = (offsets[token.start[0] - 1] + token.start[1], offsets[token.end[0] - 1] + token.end[1])
            previous = token.type
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return spans


class Spans:
    """Sorted, non-overlapping spans; ``holds(offset)`` in O(log n)."""

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.spans = sorted(spans)
        self.starts = [s for s, _ in self.spans]

    def holds(self, offset: int) -> bool:
        index = bisect_right(self.starts, offset) - 1
        return index >= 0 and offset < self.spans[index][1]


# An example or template a person copies and fills in (``config.example``, ``conda.sh_template``,
# ``path_config_template.json``, ``train_template.slurm`` that code fills in). A config named ``*_example.yaml`` is
# often run as it is, and Python named so always is: only a template's name says it must be filled in first.
EXAMPLE_FILE = re.compile(r"(?i)(?:\.(?:example|sample|template|tmpl|dist)|[._-](?:template|tmpl)(?:\.(?!py$|ipynb$)\w+)?)$")

# --- remote commands ----------------------------------------------------------------------

_REMOTE_PREFIX = re.compile(rb"(?:(?:[\w.-]|\$\{?\w+\}?)+@)?[\w.-]*[A-Za-z][\w.-]*:$")  # ${USER}@host: too
_TRANSFER = re.compile(rb"\b(?:rsync|scp|sftp|rclone|ssh)\b")
# a Makefile recipe's ``@ssh`` (silent) or ``-ssh`` (errors ignored) runs ssh as well
_SSH_COMMAND = re.compile(rb"(?:^[ \t]*[@+-]{0,3}|[;&|(`{]|\$\(|\bexec\s|\bsudo\s|[\"'])\s*ssh\s+(?!-keygen)", re.M)
_SSH_HEREDOC = re.compile(rb"\bssh\b[^\n]*<<-?\s*[\"']?(\w+)")


def remote_lines(data: bytes) -> Spans:
    """Byte spans of heredoc bodies fed to ``ssh`` (run on the other machine)."""
    spans = []
    for match in _SSH_HEREDOC.finditer(data):
        if not _SSH_COMMAND.search(data, data.rfind(b"\n", 0, match.start()) + 1, match.end()):
            continue
        body = data.find(b"\n", match.end()) + 1
        end = re.compile(rb"^\s*" + re.escape(match.group(1)) + rb"\s*$", re.M).search(data, body)
        if body:
            spans.append((body, end.start() if end else len(data)))
    return Spans(spans)


# A deployment's server side as an IDE keeps it (PyCharm's <mapping deploy="/srv/x" local="$PROJECT_DIR$"/>,
# remote interpreters' remoteRoot): the folder on the machine the project is uploaded to.
_SERVER_SIDE = re.compile(rb"""\b(?:deploy|remoteRoot|remote-root|remotePath|REMOTE_ROOT|rootFolder)\s*=\s*["']$""")


# paramiko's way of running a command over ssh: client.exec_command("cd /data/u/x && sbatch …")
_REMOTE_EXEC = re.compile(rb"\.exec_command\(\s*(?:[rRfFuU]{0,2}[\"'][^\"'\n]*)?$")


def is_remote(data: bytes, line_start: int, start: int) -> bool:
    """``user@host:path``, a path in a command that ``ssh`` runs on another machine, or a deployment's server side."""
    if _SERVER_SIDE.search(data, max(line_start, start - 30), start) or _REMOTE_EXEC.search(data, max(line_start, start - 200), start):
        return True
    word = start
    while word > line_start and data[word - 1] not in b" \t\"'`=(,[":
        word -= 1
    if word < start and _REMOTE_PREFIX.match(data, word, start) and (b"@" in data[word:start] or _TRANSFER.search(data, line_start, start)):
        return True
    return ssh_runs(data, line_start, start) or network_volume_path(data, line_start, start)


_PATH_KEY = re.compile(rb"[ \t]*(?:-[ \t]+)?[\"']?path[\"']?[ \t]*:[ \t]*[\"']?$")
_YAML_KEY = re.compile(rb"([ \t]*)(?:-[ \t]+)?[\"']?([A-Za-z_][\w-]*)[\"']?[ \t]*:")
_NETWORK_VOLUMES = frozenset({b"cephfs", b"nfs", b"glusterfs", b"iscsi", b"rbd"})


def network_volume_path(data: bytes, line_start: int, start: int) -> bool:
    """A Kubernetes volume's ``path:`` under ``cephfs:`` or ``nfs:`` (and the like): a folder on the storage servers,
    which the pod mounts; ``hostPath:``'s is the node's own."""
    if _PATH_KEY.fullmatch(data, line_start, start) is None:
        return False
    indent = len(data[line_start:start]) - len(data[line_start:start].lstrip(b" \t"))
    at = line_start
    for _ in range(12):  # the key this one sits under, a few lines up
        if at == 0:
            return False
        at = data.rfind(b"\n", 0, at - 1) + 1
        key = _YAML_KEY.match(data, at)
        if key is not None and len(key.group(1)) < indent:
            return key.group(2) in _NETWORK_VOLUMES
    return False


# A dataset's own record of how it was made (netCDF/CF's ``history`` attribute, as xarray, ncdump or an HTML repr print
# it): the commands the provider ran on its machine, ``grib_to_netcdf … -o /cache/data7/x.nc``.
_PROVENANCE = re.compile(rb"(?i)\bhistory\b\s*(?:</span>\s*</dt>\s*<dd>|:|=)")
_PROVENANCE_END = re.compile(rb"</dd>|\\n|\n")


def in_provenance(data: bytes, line_start: int, start: int) -> bool:
    """Is the path at ``start`` inside a dataset's ``history`` attribute, a record of another machine's commands?"""
    window = max(line_start, start - 400)
    ends = [match.end() for match in _PROVENANCE.finditer(data, window, start)]
    return bool(ends) and _PROVENANCE_END.search(data, ends[-1], start) is None


# A sequencing data file's header records the run that made it on the machine it ran on: VCF's meta lines
# (##reference=/vol3/…/hg19.fa, ##commandline="freebayes …"), SAM's program and comment lines (@PG … CL:bwa mem /…).
_DATA_HEADER_FILE = re.compile(rb"##fileformat=VCF|@HD\t")
_DATA_HEADER_LINE = (b"##", b"@PG\t", b"@CO\t", b"@SQ\t")


def data_file_header(data: bytes, line_start: int) -> bool:
    """Is the line at ``line_start`` a header line of a VCF or SAM file: a record of another machine's run?"""
    return data.startswith(_DATA_HEADER_LINE, line_start) and _DATA_HEADER_FILE.match(data) is not None


# ssh's options that take a value (``-i key.pem``, ``-F config``, ``-o IdentityFile=…``): local files, not the other machine's.
_SSH_VALUE_OPTIONS = frozenset(b"BbcDEeFIiJLlmOoPpQRSWw")
_WORD = re.compile(rb"\S+")


def ssh_runs(data: bytes, line_start: int, at: int) -> bool:
    """Is ``at`` in the command an ``ssh`` on its line runs on the other machine: past ssh's options, their
    values and the destination? ``ssh -i /Users/u/key.pem host`` reads its key here; ``ssh host ls /data`` there."""
    for command in _SSH_COMMAND.finditer(data, line_start, at):
        value_next = False
        for word in _WORD.finditer(data, command.end(), at):
            text = word.group(0)
            if value_next:
                value_next = False
            elif text.startswith(b"-"):
                value_next = len(text) == 2 and text[1] in _SSH_VALUE_OPTIONS
            else:  # the destination: what follows it runs over there
                if word.end() < at:
                    return True
                break
    return False


# NAME="/home/u/runs", command = f"cd /data/u/x && …": the path in the string a name is given
_ASSIGNMENT = re.compile(rb"(?:^|[;\s])(?:export\s+|local\s+|readonly\s+)?([A-Za-z_]\w*)\s*=\s*[rRuUfFbB]{0,2}(?:[\"'][^\"'\n]*)?$")
_HOST_BEFORE = re.compile(rb"(?:[\w.@-]+|\{[\w.]+\}|\$\{?\w+\}?):[\"']?(?:\s*\+\s*)?[{$]?\{?$")


def mark_remote_variables(data: bytes, findings: list) -> None:
    """A path kept in a variable that only a copy to or from another machine uses is that machine's folder.

    ``REMOTE_DIR="/home/u/runs"`` then ``scp x host:$REMOTE_DIR`` (or ``f"{host}:{remote_dir}"``,
    ``ssh host "ls $REMOTE_DIR"``): every use sits right after ``host:`` or in a command ``ssh`` runs.
    """
    for finding in findings:
        if finding.category in ("docs", "remote", "portable"):
            continue
        line_start, line_end = line_span(data, finding.line)
        line = data[line_start:line_end].decode("utf-8", "replace")
        match = _ASSIGNMENT.search(line[: finding.column - 1].encode("utf-8"))
        if match is None:
            continue
        name = re.escape(match.group(1))
        uses = [
            m.start()
            for m in re.finditer(rb"\$\{?" + name + rb"\b|(?<![\w.$])" + name + rb"(?![\w(])", data)
            if not line_start <= m.start() < line_start + len(line.encode("utf-8"))
        ]
        uses = [at for at in uses if not _reports(data, at)]  # echo "to $BACKUP_DIR": a message, no folder used here
        if uses and all(_remote_use(data, at) for at in uses):
            finding.category = "remote"


_REPORT = re.compile(rb"[ \t]*(?:#[ \t]*)?(?:echo|printf|print|(?:[\w.]*log(?:ger|ging)?)\.(?:debug|info|warning|error))\b")


def _reports(data: bytes, at: int) -> bool:
    """Is ``at`` on a line that only prints a message (``echo``, ``printf``, ``print(``, ``logger.info(``)?"""
    return _REPORT.match(data, data.rfind(b"\n", 0, at) + 1) is not None


def start_of_line(data: bytes, line: int) -> int:
    start = 0
    for _ in range(line - 1):
        start = data.find(b"\n", start) + 1
    return start


def line_span(data: bytes, line: int) -> tuple[int, int]:
    """Where line number ``line`` starts and ends in ``data`` (its end before the newline)."""
    start = start_of_line(data, line)
    end = data.find(b"\n", start)
    return start, len(data) if end == -1 else end


def _remote_use(data: bytes, at: int) -> bool:
    line_start = data.rfind(b"\n", 0, at) + 1
    if _REMOTE_EXEC.search(data, max(line_start, at - 40), at):
        return True  # ssh.exec_command(command): paramiko runs it on the other machine
    if _HOST_BEFORE.search(data, max(line_start, at - 80), at) and _TRANSFER.search(data, line_start, at):
        return True
    return ssh_runs(data, line_start, at)


# --- web paths ---------------------------------------------------------------------------------

_WEB_ATTRIBUTE = re.compile(rb"(?i)(?<![\w-])(href|src|srcset|action|poster|data-[\w-]+)\s*=\s*\\?[\"']?$")
_IN_TAG = re.compile(rb"<[A-Za-z][\w-]*\s[^<>]*$")  # inside an HTML or a Vue tag: <img class=x src=
_WEB_KEY = re.compile(rb"([A-Za-z_]\w*)\\?[\"']?\s*[:=(]\s*\\?[\"']?$")
_PREFIX_OF = re.compile(rb"([\w.]+)\.startswith\(\s*[rRbBuU]?[\"']$")
_HYDRA_DEFAULT = re.compile(rb"\s*-\s*(?:override\s+|optional\s+)*$")


# A web framework's route: ``@app.post("/chat/stream")``, ``@router.websocket("/ws/x")``, ``APIRouter(prefix="/api")``.
_ROUTE_DECORATOR = re.compile(
    rb"@[\w.]*\.(?:get|post|put|delete|patch|head|options|trace|websocket|route|api_route|websocket_route)\(\s*[rRuUbBfF]{0,2}[\"']$"
)
_ROUTER_PREFIX = re.compile(rb"\bprefix\s*=\s*[rRuUbBfF]{0,2}[\"']$")
# An object path a tracker's API takes (``api.run("/team/project/runs/abc123")``, ``wandb.Api().artifact(…)``):
# a name in the service, asked of an object whose name says API.
_API_OBJECT = re.compile(rb"([\w.]+?)(?:\(\))?\.(?:runs?|artifacts?|sweeps?|projects?|reports?)\(\s*[rRuUbBfF]{0,2}[\"']$")
_OPEN_ROUTER = re.compile(rb"(?i)router\([^)]*$")
# A browser's request of its own server: xhr.open("POST", "/upload"), axios.post("/api/x"), $.getJSON("/data/x.json").
_HTTP_REQUEST = re.compile(
    rb"(?:\.open\(\s*[\"'](?i:get|post|put|delete|patch|head|options)[\"']\s*,\s*"
    rb"|\baxios(?:\.(?:get|post|put|delete|patch|head|request))?\(\s*|\$\.(?:get|post|ajax|getJSON)\(\s*)[`\"']$"
)
_COMMENT_LINE = re.compile(rb"[ \t]*#")
_OPTION = re.compile(rb"[ \t]*#?[ \t]*(?:[A-Za-z_]\w*\.)+(?P<name>[A-Za-z_]\w*)[ \t]*=")
_WEB_WORDS = frozenset({"url", "urls", "uri", "uris", "endpoint", "endpoints", "route", "routes", "api", "apis", "href"})


def web_name(name: bytes) -> bool:
    """Does a name say URL or route, read as words (``base_url``, ``apiRoute``; not ``purity_file``)?"""
    return not _WEB_WORDS.isdisjoint(name_words(name.decode("utf-8", "replace")))


def is_web_path(data: bytes, line_start: int, start: int) -> bool:
    """A path that is an HTML attribute's value (``<img src="/users/x">``), a URI's or a route's (``@app.route("/a/b")``)
    is a web address, not a folder; so is a Hydra config group in a defaults list (``- override /hydra/launcher: x``)
    and an object path an API takes (``api.run("/team/project/runs/id")``).
    ``src`` names a web path only inside a tag: a variable named so holds a source folder."""
    window = max(line_start, start - 40)
    attribute = _WEB_ATTRIBUTE.search(data, window, start)
    if attribute is not None and (attribute.group(1).lower() != b"src" or _IN_TAG.search(data, line_start, attribute.start())):
        return True
    key = _WEB_KEY.search(data, window, start)
    if key is not None and web_name(key.group(1)):
        return True
    if key is not None and key.group(1) == b"path" and _HTTP_PROBE.search(data, max(0, line_start - 120), line_start):
        return True  # a Kubernetes probe's httpGet: path: /ready, a URL path the kubelet asks for
    compared = _PREFIX_OF.search(data, max(line_start, start - 80), start)
    if compared is not None and web_name(compared.group(1)):
        return True  # request.url.path.startswith("/api/"): a web address's prefix
    if _ROUTE_DECORATOR.search(data, max(0, start - 200), start) is not None:  # @app.get(\n    "/v1/models", …) too
        return True
    if _HTTP_REQUEST.search(data, max(line_start, start - 80), start) is not None:
        return True
    api = _API_OBJECT.search(data, max(line_start, start - 80), start)
    if api is not None and "api" in name_words(api.group(1).decode("utf-8", "replace")):
        return True
    if _ROUTER_PREFIX.search(data, max(line_start, start - 40), start) and _OPEN_ROUTER.search(data, max(0, start - 300), start):
        return True
    if _COMMENT_LINE.match(data, line_start) and _documents_web_option(data, line_start):
        return True
    return _HYDRA_DEFAULT.fullmatch(data, line_start, start) is not None and _in_defaults_list(data, line_start)


_HTTP_PROBE = re.compile(rb"\bhttpGet[\"']?\s*:\s*(?:\{[^}]*)?$|\bhttpGet[\"']?\s*:\s*\r?\n(?:[ \t]+[\w\"'-]+\s*:[^\n]*\n){0,3}[ \t]*$")
_LIST_ITEM = re.compile(rb"[ \t]*(?:-|#)")
_DEFAULTS_KEY = re.compile(rb"[ \t]*defaults[ \t]*:[ \t]*\r?$")


def _in_defaults_list(data: bytes, line_start: int) -> bool:
    """Is this list item one of a Hydra ``defaults:`` list (and not any YAML list of paths: ``- /root/data/x``)?"""
    at = line_start
    for _ in range(200):
        if at == 0:
            return False
        previous = data.rfind(b"\n", 0, at - 1) + 1
        if not _LIST_ITEM.match(data, previous, at - 1):
            return _DEFAULTS_KEY.fullmatch(data, previous, at - 1) is not None
        at = previous
    return False


def _documents_web_option(data: bytes, line_start: int) -> bool:
    """Is this comment line part of the help block above a setting whose name says URL or route
    (``#  Default: '/api/kernels'`` above ``# c.GatewayClient.kernels_endpoint = …``, as a server's config writes)?"""
    at = line_start
    for _ in range(40):  # a help block is a few lines; the setting ends it
        end = data.find(b"\n", at)
        end = len(data) if end == -1 else end
        option = _OPTION.match(data, at, end)
        if option is not None:
            return not _WEB_WORDS.isdisjoint(name_words(option.group("name").decode("ascii")))
        if not _COMMENT_LINE.match(data, at, end) or end == len(data):
            return False
        at = end + 1
    return False


def name_words(name: str) -> list[str]:
    """The words of an identifier, snake or camel case: ``kernels_endpoint``, ``mathjaxUrl`` give their words, lower case."""
    return [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+", name)]


# --- pieces of a path: what code edits a path with, or a comment shows appended -------------------

# The replacement of one folder's name by another inside a path: s.replace("/speech_data/", "/speech_data_22050/").
_REPLACED_PIECE = re.compile(rb"""\.replace\(\s*[rRbBuU]?(["'])/[^/"'\n]+/\1\s*,\s*[rRbBuU]?["']$""")
# A comment that shows a tail put after an expression: # self._data_path + /ImageSets/val.txt
_COMMENTED_TAIL = re.compile(rb"[ \t]*(?:#|//)[^\n]*?[\w\])]\s*\+\s*$")
# The second string of an implicit concatenation, on a line of its own: '{ROOT}'\ then '/resources/x.urdf' (commented too)
_CONTINUED_STRING = re.compile(rb"[ \t]*(?:#[# \t]*)?[rRuUbBfF]{0,2}[\"']$")
# the line before ends with a string that does not start a path itself ('{ROOT}'; a "/home/u/x" line carries its own finding)
_STRING_END = re.compile(rb"[\"'\n]")
_STRING_THEN_BREAK = re.compile(rb"[\"'](?![/~\\]|[A-Za-z]:)[^\"'\n]*[\"'][ \t]*\\?[ \t]*\r?\n$")


# R's and MATLAB's calls that concatenate their arguments into one string: a later argument is a piece of that string.
_CONCATENATING_CALL = re.compile(rb"(?:\bpaste0?|\bstr_c|\bfile\.path|\bstr_glue|\bglue|\bstrcat|\bhorzcat|\bfullfile)\s*$")


def later_concatenated_argument(data: bytes, start: int, most: int = 600) -> bool:
    """Is the string at ``start`` a later argument of ``paste(root, "/attention/", …)``: a piece, never a folder?"""
    depth, commas, at = 0, 0, start - 1
    while at >= max(0, start - most):
        byte = data[at]
        if byte in b")]":
            depth += 1
        elif byte in b"([":
            if depth == 0:
                return byte == 0x28 and commas > 0 and _CONCATENATING_CALL.search(data, max(0, at - 20), at) is not None
            depth -= 1
        elif byte == 0x2C and depth == 0:
            commas += 1
        at -= 1
    return False


def matlab_concatenated(data: bytes, line_start: int, start: int) -> bool:
    """In MATLAB, is the string at ``start`` a later element of ``[root '/RGB/']`` (``[a, 'x']``): a piece of the
    character array the brackets join?"""
    depth, at = 0, start - 2  # the quote before the path, then what the brackets hold before it
    while at >= line_start:
        byte = data[at]
        if byte in b")]":
            depth += 1
        elif byte in b"([":
            if depth == 0:
                return byte == 0x5B and data[at + 1 : start - 1].strip(b" \t,") != b""
            depth -= 1
        at -= 1
    return False


def path_piece(data: bytes, line_start: int, start: int) -> bool:
    """Is the absolute path at ``start`` a piece of another path: what replaces one folder's name inside a path
    (``.replace("/flac/", "/tsv/matched/")``, both between slashes), a tail a comment shows appended to an
    expression, a later argument of R's ``paste``, or the second string of an implicit concatenation on a line of its
    own?"""
    if _COMMENTED_TAIL.fullmatch(data, line_start, start):
        return True
    if b"(" in data[max(0, start - 600) : start] and later_concatenated_argument(data, start):
        return True
    if (
        line_start
        and _CONTINUED_STRING.fullmatch(data, line_start, start)
        and _STRING_THEN_BREAK.search(data, data.rfind(b"\n", 0, line_start - 1) + 1, line_start)
    ):
        return True
    replaced = _REPLACED_PIECE.search(data, max(line_start, start - 200), start)
    if replaced is None:
        return False
    close = _STRING_END.search(data, start)
    piece = data[start : close.start()] if close is not None and data[close.start() : close.start() + 1] != b"\n" else b""
    return piece.endswith(b"/")


# --- names in a namespace that is no file system: USD prims, ROS topics, HDF5 groups -------------

# Words of a key or keyword whose value is a name in another namespace, written with slashes: a USD stage's prim
# (``prim_path="/World/ground"``, ``mesh_prim_paths=[…]``), a ROS topic (``topic: /camera/image_raw``), an XPath.
_NAMESPACE_WORDS = frozenset({"prim", "prims", "topic", "topics", "xpath"})
_NAMESPACE_KEY = re.compile(rb"([A-Za-z_][\w-]*)\\?[\"']?\s*[:=(]\s*\[?\s*\\?[\"']?$")
# the same key before a list, the name a later item of it: topics=["/camera_l/image", "/camera_r/image"]
_NAMESPACE_LIST_KEY = re.compile(
    rb"([A-Za-z_][\w-]*)[\"']?\s*[:=(]\s*\[(?:\s*[rRuUbBfF]{0,2}[\"'][^\"'\n]*[\"']\s*,)+\s*[rRuUbBfF]{0,2}[\"']$"
)
# A call that takes such a name first: ROS 1/2 topics, services and parameters, an HDF5 file's groups, USD's stage.
_NAMESPACE_CALL = re.compile(
    rb"\b(?:Subscriber|Publisher|create_subscription|create_publisher|create_service|create_client|ServiceProxy"
    rb"|wait_for_service|wait_for_message|(?:get|set|has|delete|search)_param|create_group|require_group"
    rb"|GetPrimAtPath|DefinePrim|get_prim_at_path|define_prim|is_prim_path_valid"
    rb"|(?:advertise|serviceClient)\s*<[^<>()]*>|subscribe|advertiseService|getParam|setParam|hasParam|deleteParam"  # roscpp
    rb")\(\s*[rRuUbBfF]{0,2}[\"']$"
)
# An HDF5 file's group or dataset by its path, in a file that opens one: f["/observations/qpos"], root[f"/camera/{k}"].
_SUBSCRIPT = re.compile(rb"[\w)\]]\[\s*[rRuUbBfF]{0,2}[\"']$")
_HDF5_OPENERS = (b"h5py", b"HDFStore", b"tables.open_file")
_OPTION_NAME = re.compile(rb"add_argument\(\s*[\"']-{1,2}([\w-]+)[\"'][^()]*$")  # the option whose default follows
# A ROS launch file's topic names: <remap from="/camera_info" to="/camera/rgb/camera_info"/>, <rosparam>["/a/b"]</rosparam>.
_ROS_LAUNCH_NAME = re.compile(rb"<(?:remap\s[^<>]*|rosparam\b[^<>]*>[^<]*)$")


def namespace_name(data: bytes, line_start: int, start: int) -> bool:
    """Is the path at ``start`` a name in a namespace that is no file system: a USD prim, a ROS topic, service or
    parameter, an HDF5 group, a CloudWatch log group? It names the same thing on every machine."""
    window = max(line_start, start - 60)
    if _NAMESPACE_CALL.search(data, window, start) is not None or _ROS_LAUNCH_NAME.search(data, line_start, start) is not None:
        return True
    if _SUBSCRIPT.search(data, max(line_start, start - 8), start) is not None and any(o in data for o in _HDF5_OPENERS):
        return True
    key = _NAMESPACE_KEY.search(data, window, start) or _NAMESPACE_LIST_KEY.search(data, max(line_start, start - 400), start)
    if key is None:
        return False
    named = name_words(key.group(1).decode("utf-8", "replace"))
    if named == ["default"]:  # add_argument('--img_front_topic', …,\n default='/camera_f/color/image_raw'): the option's words
        option = _OPTION_NAME.search(data, max(0, start - 300), start)
        named = name_words(option.group(1).decode("utf-8", "replace")) if option else named
    if named and named[-1] in ("service", "services"):
        return True  # a ROS service by the name's last word (status_service; not service_account_file)
    words = set(named)
    return bool(words & _NAMESPACE_WORDS) or ("group" in words and any("log" in word for word in words))  # awslogs-group


_COMMENT_BEFORE = re.compile(rb"[ \t]*(?:#|//|%|--)")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def named_by_variables(data: bytes, line_start: int, text: str) -> bool:
    """On a comment line, is the path made of the names of the code's own variables (``# h5-group /idx_sample/idx_sub``
    above ``create_group(f'/{idx_sample}/{idx_sub}')``): the shape of what the code builds from them, no folder?"""
    parts = text.strip("/").split("/")
    if len(parts) < 2 or not _COMMENT_BEFORE.match(data, line_start):
        return False
    return all(_IDENTIFIER.fullmatch(name) for name in parts[:2]) and set(parts[:2]) <= _bound_names(data)


_BINDING = re.compile(rb"(?m)^[ \t]*(?:for[ \t]+)?([A-Za-z_]\w*)[ \t]*(?:=[^=]|in\b)")


@lru_cache(maxsize=4)
def _bound_names(data: bytes) -> frozenset[str]:
    """The names a file's statements bind (``name = …``, ``for name in …``), read once per file."""
    return frozenset(match.group(1).decode("ascii") for match in _BINDING.finditer(data))


# The first folders of data paths on clusters and boxes: what a ROS graph name (``/camera/image_raw``) never starts with.
_DATA_TOPS = frozenset({"data", "datasets", "dataset", "scratch", "path", "workspace", "storage", "nfs", "gpfs", "net"})
_DATA_TOPS |= frozenset({"cluster", "shared", "share", "work", "project", "projects", "vol", "volumes", "content", "kaggle"})


def ros_graph_name(text: str) -> bool:
    """In a ROS package's launch, RViz or parameter file: is ``text`` a graph name (a topic, a frame, a node's
    parameter) rather than a folder? No file suffix, no variable, and a first name no file system or data share uses."""
    parts = text.strip("/").split("/")
    return "." not in parts[-1] and "$" not in text and parts[0] not in FHS_TOP and parts[0].lower() not in _DATA_TOPS


# --- IPython's shortened home where the home was / -----------------------------------------

_NAMED_TILDE = re.compile(r"~([A-Za-z_][\w.-]*)(/.*)")


def system_home_tilde(text: str) -> bool:
    """``~usr/local/lib/…``: IPython shortens the home to ``~`` even where it was ``/``, so this is
    ``/usr/local/lib/…``, the system's own folder, and no user's (``~ab/data`` stays one)."""
    match = _NAMED_TILDE.fullmatch(text)
    return match is not None and match.group(1) in FHS_TOP and portable_absolute("/" + match.group(1) + match.group(2))


# --- markup and regular expressions: </root>, /England/g ----------------------------------------

# A JavaScript regular expression: a call's argument (s.replace(/England/g, …)) or quoted as code (`/England/g`).
_REGEX_LITERAL = re.compile(rb"(?:(?<=\()/[^/\s]+/[gimsuyd]{1,4}(?=[,)])|(?<=`)/[^/\s`]+/[gimsuyd]{1,4}(?=`))")


# An XPath: XInclude's xpointer(/Xdmf/Domain/…), XSLT's select="/root/x", an attribute named for it.
_XPATH_BEFORE = re.compile(rb"""(?:\bxpointer\(|\b(?:select|match|xpath|XPath)\s*=\s*["'])$""")


# What only a regular expression writes inside a string: a negated class repeated (([^\\]+), [^/]*), a class escape
# repeated ((\w+)), a non-capturing or named group, a look-around; or "^" starting the string.
_REGEX_SIGN = re.compile(rb"\[\^[^\]\n]*\][+*?)]|\(\?(?:[:=!]|P?<)|\\[dwsSbD][+*?]")


def regex_string(data: bytes, line_start: int, line_end: int, start: int) -> bool:
    """Is the path at ``start`` inside a string that holds a regular expression (``'D:\\Imaging\\([^\\]+)'``,
    ``"^/home/(\\w+)/"``): a pattern to match paths, no folder of its own?"""
    opening = max(data.rfind(b"'", line_start, start), data.rfind(b'"', line_start, start))
    if opening < 0:
        return False
    closing = data.find(data[opening : opening + 1], start, line_end)
    literal = data[opening + 1 : closing if closing > 0 else line_end]
    return literal.startswith(b"^") or _REGEX_SIGN.search(literal) is not None


# A TeX engine's log ("This is pdfTeX, Version …") wraps every line at max_print_line, 79 characters.
_TEX_LOG = re.compile(rb"This is (?:pdf|Xe|Lua|LuaHB|e-|e-up|up|p)?TeX\b")
TEX_WRAP = 79
_WRAPPED_HEAD = re.compile(rb"[^\s<>()\"']+$")


def tex_wrapped_system_path(data: bytes, line_start: int, start: int, end: int) -> bool:
    """In a TeX log, is the path that starts a line the rest of one the wrap cut (``…></usr`` then
    ``/share/texlive/…``), and is the whole path the system's?"""
    if start != line_start or line_start < 2 or not _TEX_LOG.match(data, 0, 200):
        return False
    previous = data.rfind(b"\n", 0, line_start - 1) + 1
    if line_start - 1 - previous != TEX_WRAP:
        return False
    head = _WRAPPED_HEAD.search(data, previous, line_start - 1)
    whole = (head.group(0) if head else b"") + data[start:end]
    return whole.startswith(b"/") and portable_absolute(whole.decode("utf-8", "replace"))


def markup_or_regex(data: bytes, start: int) -> bool:
    """Is the text at ``start`` a closing tag (``</root>``), a JavaScript regular expression
    (``s.replace(/England/g, …)``) or an XPath (``xpointer(/Xdmf/Domain)``): text written with slashes, never a folder?"""
    if start > 0 and data[start - 1] == 0x3C or data[max(0, start - 4) : start] == b"&lt;":  # </root>, escaped &lt;/root&gt;
        return True
    if _XPATH_BEFORE.search(data, max(0, start - 12), start):
        return True
    return _REGEX_LITERAL.match(data, start) is not None


# --- a container's own side: docker exec NAME /bin/bash /scripts/x.sh ------------------------

_CONTAINER_COMMAND = re.compile(rb"\b(?:(?:nvidia-)?docker|podman)\s+(?:exec|run|container\s+(?:exec|run))\b|\bkubectl\s+exec\b")
_HOST_VALUE = re.compile(rb"(?:\s-v|\s--volume|\s--mount|\s--env-file|\s-e|\s--env|source|\bsrc)[=\s]+[\"']?$")


_PATH_WORD = re.compile(rb"[^\s\"']*")


def in_container(data: bytes, line_start: int, start: int) -> bool:
    """Is the path at ``start`` on a ``docker exec``/``docker run``/``kubectl exec`` line, past the command, and so the
    container's own path? A bind's host side (``-v /home/u/data:/data``), an env file, and what lies under a folder
    bound under its own name (``-v /data/u/:/data/u/ -w /data/u/repo``) stay the host's."""
    command = _CONTAINER_COMMAND.search(data, logical_line_start(data, line_start), start)
    if command is None or _HOST_VALUE.search(data, command.end(), start) is not None:
        return False
    end = _PATH_WORD.match(data, start)
    path = data[start : end.end() if end else start].decode("utf-8", "replace").rstrip("/")
    shared = same_name_binds(data, command.start(), logical_line_end(data, start))
    return not any(path == folder or path.startswith(folder + "/") for folder in shared)  # -w under -v /x:/x is the host's too


# A notebook output that prints a Dockerfile (``!cat Dockerfile``) or a build of one (``docker build .``): its paths
# are the image's layout, as the Dockerfile's own are.
_OUTPUT_HEADS = (b'"text": [', b'"text":[', b'"text/plain": [', b'"text/plain":[', b'"output_type":', b'"source":')
_IMAGE_RECIPE_LINE = re.compile(rb'"(?:FROM [\w.:/@-]+(?: AS \w+)?\\n|Step \d+/\d+ : [A-Z]+ |#\d+ \[[\w -]*\d+/\d+\] [A-Z]+ )')


def image_recipe_output(data: bytes, start: int, most: int = 1 << 16) -> bool:
    """Is ``start`` in a notebook output's text whose lines before it print a Dockerfile or its build (a ``FROM`` line,
    a ``Step 4/9 : RUN`` line)?"""
    head, begin = max((data.rfind(key, max(0, start - most), start), key) for key in _OUTPUT_HEADS)
    if head < 0 or not begin.endswith(b"["):
        return False  # not in an output's lines
    return _IMAGE_RECIPE_LINE.search(data, head + len(begin), start) is not None


def logical_line_end(data: bytes, at: int, most: int = 20) -> int:
    """Where the shell line holding ``at`` ends: the first newline not escaped by a backslash (``most`` lines on)."""
    end = data.find(b"\n", at)
    for _ in range(most):
        if end <= 0 or data[end - 1 : end] != b"\\":
            break
        end = data.find(b"\n", end + 1)
    return len(data) if end == -1 else end


def logical_line_start(data: bytes, line_start: int, most: int = 20) -> int:
    """Where the shell command a line continues began: back over lines that end with a backslash."""
    for _ in range(most):
        if line_start < 2 or data[line_start - 2 : line_start] not in (b"\\\n",) and data[line_start - 3 : line_start] != b"\\\r\n":
            return line_start
        line_start = data.rfind(b"\n", 0, line_start - 2) + 1
    return line_start


# --- the project's own container layout ---------------------------------------------------

_CONTAINER_SIDES = (
    re.compile(rb"(?:\s-v|--volume)[ =]+\S+:(/[^\s:\"']+)"),  # docker run -v host:/ctr, -v "${X}"/y:/ctr:ro
    re.compile(rb"(?m)^\s*-(?!-)\s*[\"']?[^\s#]{2,}?:(/[^\s:\"'/][^\s:\"']*)"),  # compose: - ./data:/data (no --option)
    re.compile(rb"\bdocker\s+cp\s+\S+\s+[^\s:]+:(/[^\s:\"']+)"),  # docker cp x NAME:/ctr
    re.compile(rb"(?:mountPath|mount_path|containerPath)[\"']?\s*[:=]\s*[\"']?(/[^\s\"',]+)"),  # Kubernetes
    re.compile(rb"(?mi)^\s*WORKDIR\s+[\"']?(/[^\s\"']+)"),  # a Dockerfile's own folders
    re.compile(rb"(?mi)^\s*(?:COPY|ADD)\s+(?:--\S+\s+)*[^\n]*\s[\"']?(/[^\s\"']+?)/?[\"']?\s*$"),
    re.compile(rb"--mount[ =]+[\"']?[^\s\"']*?\b(?:target|dst|destination)=(/[^\s,\"']+)"),  # --mount type=bind,source=x,target=/data
    re.compile(rb"(?:\s-B|--bind)[ =]+[\"']?[^\s:\"',]+:(/[^\s:,\"']+)"),  # apptainer exec --bind /host:/data
)
_TOO_BROAD = frozenset({"/tmp", "/home", "/root", "/mnt", "/Users", "/content", "/media", "/scratch"})
_CONTAINER_HINTS: tuple[bytes, ...] = (b"docker", b"podman", b"volume", b"mountPath", b"mount_path", b"containerPath", b"WORKDIR")
_CONTAINER_HINTS += (b"COPY ", b"--mount", b"--bind", b"-B ", b"FROM ", b"--container-mounts")


# The folders a container is sure to see as its own: a bind's container side, a Dockerfile's WORKDIR. A home
# folder is the container's only under one of these (a config's ``mount_path: /root/data`` is no container's).
BIND_SIDES = (_CONTAINER_SIDES[0], _CONTAINER_SIDES[1], _CONTAINER_SIDES[4], _CONTAINER_SIDES[6], _CONTAINER_SIDES[7])


def container_folders(data: bytes, patterns: tuple[re.Pattern[bytes], ...] = _CONTAINER_SIDES) -> set[str]:
    """The folders a container of this project sees as its own: a bind's or a mount's container side, a docker cp
    target, a Dockerfile's WORKDIR and COPY destinations. A path under one of them, in a script that runs in that
    container, is the container's layout."""
    if not any(hint in data for hint in _CONTAINER_HINTS):  # substring searches run in C, far faster than a regex
        return set()
    found = set()
    for pattern in patterns:
        for match in pattern.finditer(data):
            folder = match.group(1).decode("utf-8", "replace").rstrip("/")
            if folder and not folder.startswith("//") and folder not in _TOO_BROAD:
                found.add(folder)
    if b"--container-mounts" in data:  # Slurm's pyxis: --container-mounts=/host:/ctr:ro,/other:/data
        for match in _PYXIS_MOUNTS.finditer(data):
            for mount in match.group(1).decode("utf-8", "replace").split(","):
                parts = mount.split(":")
                same = len(parts) >= 2 and parts[0].rstrip("/") == parts[1].rstrip("/")  # the host's folder, shared as it is
                if len(parts) >= 2 and not same and parts[1].startswith("/") and parts[1].rstrip("/") not in _TOO_BROAD:
                    found.add(parts[1].rstrip("/"))
    found -= same_name_binds(data)
    if b"FROM" in data or b"from" in data:
        for match in _FROM_LINE.finditer(data):
            image = match.group(1).decode("utf-8", "replace").lower()
            found.update(folder for prefix, folder in BASE_WORKDIRS.items() if image.startswith(prefix))
    return found


# The working folder well-known base images start in, where a Dockerfile that builds on them sets none
# (``RUN git clone …`` in pytorch/pytorch lands in /workspace).
BASE_WORKDIRS = {
    "pytorch/pytorch": "/workspace",
    "nvcr.io/nvidia/pytorch": "/workspace",
    "nvcr.io/nvidia/tensorflow": "/workspace",
    "nvcr.io/nvidia/cuda": "/workspace",
    "jupyter/": "/home/jovyan",
    "quay.io/jupyter/": "/home/jovyan",
    "tensorflow/tensorflow": "/tf",
}
_PYXIS_MOUNTS = re.compile(rb"--container-mounts[ =]+[\"']?([^\s\"']+)")
# A bind of the host's folder under its own name (-v /data/lab/u/:/data/lab/u/): what is under it stays the host's.
_SAME_BIND = re.compile(rb"(?:\s-v|--volume|\s-B|--bind)[ =]+[\"']?(/[^\s:\"',]+):(/[^\s:\"',]+)")


def same_name_binds(data: bytes, start: int = 0, end: int | None = None) -> set[str]:
    """The host folders ``data`` (from ``start`` to ``end``) binds into a container under their own names."""
    binds = _SAME_BIND.findall(data, start, len(data) if end is None else end)
    return {host.decode("utf-8", "replace").rstrip("/") for host, inside in binds if host.rstrip(b"/") == inside.rstrip(b"/")}


_FROM_LINE = re.compile(rb"(?mi)^\s*FROM\s+(?:--\S+\s+)*([\w./:${}-]+)")


# --- files that run inside the project's image: copied in by its recipe, or named as a container's command ---------

# A COPY/ADD instruction, or one commented out as it was written (in capitals: "# Copy the files into …" is prose).
_COPY_INSTRUCTION = rb"(?:(?i:[ \t]*(?:COPY|ADD))|[ \t]*#[ \t]*(?:COPY|ADD))[ \t]"
_RECIPE_COPY = re.compile(rb"(?m)^" + _COPY_INSTRUCTION + rb"+(.+)$")
# Docker and Podman give a container only the folders bound into it; Apptainer shares the host's (its home, scratch, /gpfs),
# so a script it runs may well read this machine's folders.
_CONTAINER_COMMAND_LINE = re.compile(rb"\b(?:(?:nvidia-)?docker|podman)\s+(?:run|exec)\b([^\n]*)")
_SCRIPT_WORD = re.compile(rb"[\w./-]+\.(?:sh|bash)")


def image_sources(data: bytes) -> list[str]:
    """The project files a Dockerfile's COPY/ADD or an Apptainer ``%files`` section puts in the image, as written
    (``COPY entrypoint.sh /entrypoint.sh`` → ``entrypoint.sh``): named files only, never ``.``, a glob or a variable."""
    words: list[bytes] = []
    for match in _RECIPE_COPY.finditer(data):
        parts = [w for w in match.group(1).split() if not w.startswith(b"--")]
        if not match.group(0).lstrip().startswith(b"#") and b"--from" not in match.group(1) and len(parts) >= 2:
            words += parts[:-1]
    files = re.search(rb"(?m)^%files[^\n]*\n(.*?)(?=^%\w|\Z)", data, re.S)
    if files:
        words += [line.split()[0] for line in files.group(1).splitlines() if line.strip() and not line.lstrip().startswith(b"#")]
    return [w.decode("utf-8", "replace").strip("\"'[],") for w in words if not re.search(rb"[*?$]|^\.?/?$", w.strip(b"\"'[],"))]


def container_scripts(data: bytes) -> list[str]:
    """Shell scripts of the project that a Docker or Podman container runs (``docker run … img bash ./train.sh``):
    they run in the image, so their paths are its layout."""
    found = []
    for match in _CONTAINER_COMMAND_LINE.finditer(data):
        for word in match.group(1).split():
            word = word.strip(b"\"'")
            if b":" not in word and b"=" not in word and _SCRIPT_WORD.fullmatch(word):
                found.append(word.decode("utf-8", "replace"))
    return found


_USERADD = re.compile(rb"\b(?:useradd|adduser)\b([^\n&;|]*)")
_RECIPE_VALUE = re.compile(rb"(?mi)^[ \t]*(?:ARG|ENV)[ \t]+(\w+)[ \t]*[= ][ \t]*[\"']?([\w.-]+)")


def image_user_homes(data: bytes) -> set[str]:
    """The homes a recipe's ``useradd -m ros`` (or ``adduser``) makes in the image, the name read through its ARG/ENV:
    ``/home/ros`` there is the image's, the same on every machine that runs it."""
    if b"useradd" not in data and b"adduser" not in data:
        return set()
    values = {m.group(1): m.group(2) for m in _RECIPE_VALUE.finditer(data)}
    homes = set()
    for match in _USERADD.finditer(data.replace(b"\\\n", b" ")):
        words = match.group(1).split()
        if not words or words[-1].startswith(b"-"):
            continue
        name = re.sub(rb"\$\{?(\w+)\}?", lambda v: values.get(v.group(1), v.group(0)), words[-1]).strip(b"\"'")
        if re.fullmatch(rb"[a-z_][\w.-]*", name):
            homes.add("/home/" + name.decode("ascii"))
    return homes


def under_container_folder(text: str, folders: set[str]) -> bool:
    return any(text == folder or text.startswith(folder + "/") for folder in folders)


# --- an image's own layout: every path of a Dockerfile but what COPY/ADD take from the build's host ----------

_COPY_LINE = re.compile(_COPY_INSTRUCTION)
_BUILD_ARG = re.compile(rb"(?i:[ \t]*(?:ARG|ENV)[ \t]+)([A-Za-z_]\w*)[ \t]*=|[ \t]*#[ \t]*(?:ARG|ENV)[ \t]+([A-Za-z_]\w*)[ \t]*=")
_FROM_IMAGE = re.compile(rb"--from[= ]")
_SECTION = re.compile(rb"(?m)^%(\w+)")


def build_source(data: bytes, line_start: int, line_end: int, start: int) -> bool:
    """Is the path at ``start`` read from the building machine: a COPY/ADD source of a Dockerfile (not its last
    word, the image's destination; not ``--from=`` another image), or the first word of an Apptainer ``%files`` line?"""
    if _COPY_LINE.match(data, line_start, line_end):
        line = data[line_start:line_end].rstrip()
        last = max(line.rfind(b" "), line.rfind(b"\t")) + line_start
        return start < last and _FROM_IMAGE.search(line) is None
    argument = _BUILD_ARG.match(data, line_start, line_end)
    if argument is not None:  # ARG HOME_PATH="/home/u" read by COPY ${HOME_PATH}/x /y: the building machine's folder
        return (argument.group(1) or argument.group(2)) in _copied_variables(data)
    header = data.rfind(b"\n%", 0, line_start)
    section = _SECTION.match(data, header + 1) if header != -1 else _SECTION.match(data, 0, line_start)
    if section is None or section.group(1) != b"files":
        return False
    first = data[line_start:line_end].lstrip()
    return start < line_end - len(first) + len(first.split(None, 1)[0]) if first else False


def _copied_variables(data: bytes) -> set[bytes]:
    """The build arguments a COPY/ADD line of the recipe reads its sources through (``COPY ${SRC}/x /y``)."""
    names: set[bytes] = set()
    for match in _RECIPE_COPY.finditer(data):  # a commented-out COPY too: its argument is still this machine's
        if b"--from" in match.group(1):
            continue  # COPY --from=stage $DIR/x .: another image's folder
        sources = match.group(1).split()[:-1]
        names.update(name for word in sources for name in re.findall(rb"\$\{?([A-Za-z_]\w*)", word))
    return names


_COMPOSE_BIND = re.compile(rb"[ \t]*(?:#[ \t]*)?-[ \t]*[\"']?[^\s\"'#:@]+:$")
_RUN_BIND = re.compile(rb"(?:\s-v|--volume)[ =]+[\"']?[^\s\"'@]+:$")


def bind_container_side(data: bytes, line_start: int, start: int, yaml: bool) -> bool:
    """Is the path at ``start`` (right after a colon) the container's side of a bind: a compose list item
    ``- ./data:/data`` (in YAML) or ``-v host:/ctr``?"""
    if yaml and _COMPOSE_BIND.fullmatch(data, line_start, start):
        return True
    return _RUN_BIND.search(data, max(line_start, start - 300), start) is not None


# --- base64 payloads: images and videos inlined as text -----------------------------------

_BASE64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_BASE64_RUN = 64  # MIME wraps base64 at 76 characters; a data: URI runs on for thousands
_MIXED_NAME = re.compile(rb"(?=[A-Za-z0-9]*[a-z])(?=[A-Za-z0-9]*[A-Z])(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{20,}")


def in_base64(data: bytes, start: int) -> bool:
    """Is the slash at ``start`` part of a run of base64 text (a ``data:`` URI, an inlined image or video)?

    A run of 64 or more base64 characters holding a ``+``, or a "folder" of 20 or more
    letters and digits mixing both cases, is encoded bytes: a path's long folder names
    have separators (``_``, ``-``, ``.``), and a hash is one case.
    """
    first = start
    while first > 0 and data[first - 1] in _BASE64:
        first -= 1
    last = start
    while last < len(data) and data[last] in _BASE64:
        last += 1
    if last - first < _BASE64_RUN:
        return False
    run = data[first:last]
    return b"+" in run or any(_MIXED_NAME.fullmatch(part) for part in run.split(b"/"))


# --- portable per-user tool folders ---------------------------------------------------------

PORTABLE_FOLDERS = frozenset({"AppData", "Library"})
# Dot folders and files that a tool, the shell or the system keeps in every user's home. Any
# other dot name (``~/.cp2kenv``, ``~/.torchenv_x``) is the user's own and exists on one machine.
TOOL_DOTFILES = frozenset(
    {".cache", ".config", ".local", ".ssh", ".gnupg", ".netrc", ".pypirc", ".pip", ".gitconfig", ".git-credentials"}
    | {".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".bash_history", ".profile"}
    | {".zshrc", ".zprofile", ".zshenv", ".inputrc", ".vimrc", ".tmux.conf", ".screenrc", ".Xauthority"}
    | {".conda", ".condarc", ".mamba", ".npm", ".nvm", ".cargo", ".rustup", ".pyenv", ".docker", ".kube", ".aws"}
    | {".azure", ".kaggle", ".keras", ".torch", ".huggingface", ".nv", ".cupy", ".triton", ".jupyter", ".ipython"}
    | {".matplotlib", ".theano", ".theanorc", ".mujoco", ".sky", ".singularity", ".apptainer", ".vscode-server"}
    # ML libraries' own per-user caches and settings, made by the library on any machine
    | {".allennlp", ".fastai", ".mxnet", ".chainer", ".dgl", ".deepface", ".insightface", ".EasyOCR", ".u2net", ".gluoncv"}
    | {".paddleocr", ".paddlenlp", ".paddlehub", ".pytorch_pretrained_bert", ".imageio", ".mim", ".streamlit", ".neptune"}
    | {".clearml", ".comet.config", ".wandb", ".mlflow", ".dvc", ".ray", ".nemo", ".lightning"}
)
_LOOKUP_NEXT = re.compile(r"\s*\)?\s*\}?\s*(?:,|/|\+|\\\\)\s*(?:[rRuUbBfF]{0,2}[\"'])?[/\\]*(?P<first>[^\"'/\\,)\s}]+)")


# The project's own code making a folder: ``mkdir -p $HOME/.gdrive``,
# ``os.makedirs(os.path.expanduser("~/.gdrive"))``, ``(Path.home() / ".gdrive").mkdir()``.
_MAKES_FOLDER = re.compile(rb"\bmkdir\b|\bmakedirs\(")


def makes_folder(line: bytes) -> bool:
    """Does this line's code create a folder (a shell ``mkdir``, Python's ``makedirs`` or ``Path.mkdir``)?"""
    return (b"mkdir" in line or b"makedirs" in line) and _MAKES_FOLDER.search(line) is not None


def portable_component(first: str | None, second: str | None = None, third: str | None = None) -> bool:
    """A folder right under the home that tools keep for every user: ``.cache``, ``.ssh``, ``AppData`` (not ``.myenv``),
    but the user's own files synced into one (``~/Library/CloudStorage/OneDrive-…``) and Windows' temporary folder
    (``~\\AppData\\Local\\Temp``, where a run's files are kept like ``/tmp``'s)."""
    if not first or second in _USER_FILES_UNDER.get(first, ()) or (first, second, third) == ("AppData", "Local", "Temp"):
        return False
    return first in TOOL_DOTFILES or first in PORTABLE_FOLDERS


# macOS keeps the user's cloud drives inside ~/Library: a OneDrive or iCloud folder holds one person's files.
_USER_FILES_UNDER = {"Library": frozenset({"CloudStorage", "Mobile Documents"})}


def component_after_lookup(text: str, end: int) -> str | None:
    """The folder a home lookup is joined with on its line: ``Path.home() / ".ssh"`` gives ``.ssh``."""
    match = _LOOKUP_NEXT.match(text, end)
    return match.group("first") if match else None


# --- temporary folders: only where something is written to ---------------------------------

_OUTPUT_WORDS = re.compile(
    rb"(?i)(?<![a-z])(?:(?:out(?:put)?s?(?:_?(?:dir|path|root|folder|file))?|save_?(?:dir|path|root|folder|to)|savefig|write"
    rb"|results?|checkpoints?|ckpts?|logs?(?:_?dir)?|runs|exports?|dumps?|dest(?:_?dir)?"
    rb"|(?:train|eval|model|summary|exp|experiment)s?_?dir|work(?:ing)?_?dirs?|workspaces?)(?![a-z])|save\(|to_csv)"
)
# The name a bare temporary root is given (ray_workdir='/tmp', output_dir: /dev/shm), and the next part of a join from one
# (os.path.join('/dev/shm', 'ray_workdir', name)): what says the root keeps a run's results.
_KEY_BEFORE = re.compile(rb"([A-Za-z_][\w-]*)[\"'\]]*\s*[:=]\s*[rRuUfF]?[\"']?$")
_JOINED_PART = re.compile(rb"[\"']\s*,\s*[rRuUfF]?[\"']([\w.-]+)[\"']")


def temp_is_output(data: bytes, line_start: int, start: int, text: str) -> bool:
    """A temporary folder counts where results are kept there: a named folder, an output word before it on its line.

    A cache, a scratch file or a lock in /tmp is fine on any machine; results written there vanish with it.
    """
    parts = [p for p in text.split("/") if p]
    roots = {("tmp",), ("var", "tmp"), ("dev", "shm"), ("private", "tmp"), ("var", "folders"), ("private", "var", "folders")}
    named = not any(tuple(parts) == root for root in roots)
    if not named:
        joined = _JOINED_PART.match(data, start + len(text.encode("utf-8")))
        if joined is not None:  # os.path.join('/dev/shm', 'ray_workdir', …): the folder made in it
            parts.append(joined.group(1).decode("utf-8", "replace"))
            text, named = "/".join(["", *parts]), True
        key = _KEY_BEFORE.search(data, max(line_start, start - 80), start)
        if key is not None and _OUTPUT_WORDS.search(key.group(1)) and not _SCRATCH_VARIABLE.search(key.group(0)):
            return True  # ray_workdir='/tmp', output_dir: /dev/shm: the root itself keeps the results
    if not named and text.endswith("/"):
        tree = placeholder_tree(data, start + len(text.encode("utf-8")))
        if tree is not None:  # f"/tmp/{user}/runs/…": a tree of folders kept per user, unless a cache or scratch
            return not _cache_folder([tree]) and _SCRATCH_VARIABLE.search(data, max(line_start, start - 60), start) is None
    if any(tuple(parts[: len(root)]) == root and _cache_folder(parts[len(root) : len(root) + 1]) for root in roots):
        return False  # /tmp/.cache/torch/checkpoints: a cache kept in scratch, refilled on any machine
    if any(
        tuple(parts[: len(root)]) == root and _TOOL_SCRATCH.fullmatch(parts[len(root)] if len(parts) > len(root) else "") for root in roots
    ):
        return False  # /tmp/pip-req-build-x1y2z3/…, /tmp/tmpa8b_c9d0: a tool's own folder of the moment, printed as it ran
    if named and _OUTPUT_WORDS.search(text.encode("utf-8", "replace")):
        return True  # the folder's own name says it keeps results: /tmp/checkpoints, /tmp/outputs/run1
    return named and any(not inside_url(data, line_start, m.start()) for m in _OUTPUT_WORDS.finditer(data, line_start, start))


# The folders tools make for one run and remove after it: pip's build and unpack folders, tempfile.mkdtemp()'s
# ``tmp`` and eight random characters, a kernel's or a worker's folder named by its process.
_TOOL_SCRATCH = re.compile(r"pip-[\w-]+|tmp[a-z0-9_]{8}|ipykernel_\d+|pymp-[a-z0-9_]{8}|easy_install-[\w-]+|torchinductor_[\w.-]+")
# A variable the system or a tool reads as its scratch: XDG_RUNTIME_DIR=/tmp/$USER/x, TMPDIR=…, a cache's.
_SCRATCH_VARIABLE = re.compile(rb"(?i)(?:te?mp|runtime|cache)\w*[\"'\]]*\s*=\s*[rRuUfF]?[\"']?$")
_PLACEHOLDER_TREE = re.compile(rb"(?:\{[\w.()\[\]]+\}|\$\{?[A-Za-z_]\w*\}?|\$\([^()\n]*\))/([\w.-]+)")


def placeholder_tree(data: bytes, at: int) -> str | None:
    """The folder after a placeholder that starts a path's rest at ``at`` (``{user}/covid19`` gives ``covid19``), if any."""
    match = _PLACEHOLDER_TREE.match(data, at)
    return match.group(1).decode("utf-8", "replace") if match else None


def _cache_folder(first: list[str]) -> bool:
    """Is the folder right under a temporary root a cache (``.cache``, ``cache``, a tool's own: ``.keras``)?"""
    return bool(first) and (first[0].lower() in ("cache", ".cache") or first[0] in TOOL_DOTFILES)


# --- text that goes on past a space ----------------------------------------------------------

_QUOTES = b"\"'"


def extend_past_spaces(data: bytes, line_start: int, line_end: int, start: int, end: int, yaml: bool) -> int:
    """Where a path that a space cut short really ends.

    A quoted path ends at its closing quote (``'/Users/u/Week 10/data.csv'``) when what
    follows the space reads as more of the path (no flag, no second path); a shell path
    goes on past escaped spaces (``/Users/u/My\\ Data``); a YAML plain value runs to the end
    of its line or its comment.
    """
    if end < line_end and data[end] == 0x5C and data[end + 1 : end + 2] == b" ":
        while end < line_end and data[end] == 0x5C and data[end + 1 : end + 2] == b" ":
            end += 2
            while end < line_end and data[end] not in b" \t\"'`;|&<>()\\":
                end += 1
        return end
    if end >= line_end or data[end] != 0x20:
        return end
    before = data[start - 1] if start > line_start else None
    if before is not None and before in _QUOTES:
        close = data.find(bytes([before]), end, line_end)
        if close != -1 and _continues_path(data[end:close]):
            return close
        return end
    if yaml and re.match(rb"\s*(?:-\s+)?[\w.-]+:\s+$", data[line_start:start]):
        stop = data.find(b" #", end, line_end)
        stop = line_end if stop == -1 else stop
        rest = data[end:stop].rstrip()
        if _continues_path(rest) and b": " not in rest:
            return end + len(rest)
    return end


def _continues_path(rest: bytes) -> bool:
    """Does the text after a space read as more of a path (not flags, not a sentence of words)?"""
    if not rest.strip() or b" -" in rest or b" /" in rest or b"\t" in rest:
        return False
    return b"/" in rest or b"\\" in rest or re.search(rb"\.\w{1,5}$", rest) is not None or len(rest.split()) <= 2
