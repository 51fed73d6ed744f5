"""The shapes of a machine-specific path: the one definition bundler has of them.

A path is machine-specific when it names a user's folder on one machine, looks the home
folder up, keeps outputs in a temporary folder, or is this project's own absolute
location. `bundler paths` scans projects with these shapes (portability/ adds the
context rules: documentation, remote commands, portable tool folders); the lock's lint
and `bundler runs verify` use ``machine_paths`` on their text. Patterns work on bytes;
each starts with a literal so that the regex engine searches it fast.

Shapes: home (``/home/u``, ``/Users/u``, ``/root``, and a home or users folder under any
prefix: ``/gpfs/x/home/u``, ``/burg/home/u``, ``/private/home/u``, ``/data/users/u``),
colab-drive (``/content/drive/MyDrive``), tilde (``~/…``, ``~user/…``), home-var
(``$HOME``, ``${HOME}``, ``%USERPROFILE%``), home-lookup (``expanduser("~…")``,
``Path.home()``, ``os.environ["HOME"]``, ``os.getenv("HOME")``), windows-user
(``C:\\Users\\u`` in every spelling), windows-drive (any other ``D:\\…`` path but the
system's own folders), wsl-user (``/mnt/c/Users/u``), temp-dir (``/tmp``, ``/var/tmp``,
``/dev/shm``, macOS's ``/private/var/folders``) and project-absolute (an absolute path
inside the project being scanned; only when its root is given). A folder on another
machine (``user@host:path``) has the shape remote: found, but never machine-specific here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A command substitution, $(whoami) or `id -un`: an interpolation like $USER.
_COMMAND = rb"(?:\$\([A-Za-z_][\w -]*\)|`[A-Za-z_][\w -]*`)"
# An f-string's or str.format's field: {user}, {args.user}, {getuser()}, {}, {0}.
FORMAT_FIELD = rb"\{(?:[A-Za-z_][\w.]*(?:\(\))?|\d*)\}"
_FIELD = FORMAT_FIELD
# A name, a variable, a command substitution or a format field.
_USER = rb"(?:\*|[A-Za-z_][\w.~-]*|\\?\$\{?[A-Za-z_]\w*\}?|" + _COMMAND + rb"|" + _FIELD + rb")"
_PATH_CHARS = rb"[^\s\"'`,;:()<>\[\]{}|*?=\\$]"
_UNIX_TAIL = rb"(?:/" + _PATH_CHARS + rb"*)*"
_WIN_SEP = rb"(?:\\\\\\\\|\\\\|\\|//?)"  # one or two of either (C:\\Users, C://Users//name), four in JSON of escaped source
_WIN_NAME = rb"[^\s\"'`,;:()<>\[\]{}|*?=$/\\]"
_WIN_TAIL = rb"(?:" + _WIN_SEP + _WIN_NAME + rb"*)*"
_VAR_TAIL = rb"(?:/" + _PATH_CHARS + rb"*|\\[^\s\"'`,;:()<>\[\]{}|*?=$]*)?"
_HOME_KEY = rb"(?P<q>[\"'])(?:HOME|USERPROFILE)(?P=q)"

# The system's own folders on Windows, on the system drive: the same on every machine, never a finding. Another
# drive's `D:\\ProgramData` or `E:\\Program Files` is where one machine's owner chose to install.
WINDOWS_SYSTEM = re.compile(r"(?i)^c:[\\/]+(?:program files(?: \(x86\))?|programdata|windows)(?:[\\/]|$)")


def shape_patterns(root_literals: list[bytes], *, general: bool = False) -> list[tuple[str, re.Pattern[bytes]]]:
    """One pattern per shape, in priority order (the project root before plain home paths).

    ``general``: also any other absolute POSIX path (``absolute``), kept where it is not
    known to be portable (``portable_absolute``); the scan of a project asks for it.

    Each starts with a literal, so the regex engine searches it fast; one alternation of
    them all would be tried byte by byte, ten times slower. What may precede a match
    (no word, no URL) is checked in Python (``preceded_ok``).
    """
    parts = []
    if root_literals:
        roots = b"|".join(re.escape(r) for r in sorted(set(root_literals), key=len, reverse=True))
        parts.append(rb"(?P<project>(?:" + roots + rb")(?![\w.-])" + _UNIX_TAIL + rb")")
    parts += [
        rb"(?P<wsl>/mnt/[A-Za-z]/[Uu]sers/" + _USER + _UNIX_TAIL + rb")",
        rb"(?P<drive>/content/g?drive/My ?Drive(?![\w.-])" + _UNIX_TAIL + rb")",
        rb"(?P<home>/(?:home|[Uu]sers)/" + _USER + _UNIX_TAIL + rb"|/root(?![\w.-])" + _UNIX_TAIL + rb")",
        rb"(?P<windows>[A-Za-z]:" + _WIN_SEP + _WIN_NAME + rb"+" + _WIN_TAIL + rb")",
        rb"(?P<temp>/(?:private/var/folders|var/folders|private/tmp|var/tmp|tmp|dev/shm)(?![\w.-])" + _UNIX_TAIL + rb")",
        rb"(?P<lookup>expanduser\(\s*[rRuU]?(?P<q1>[\"'])~[^\"'\n]*(?P=q1)\s*\)|home\(\)"
        rb"|environ\[\s*" + _HOME_KEY.replace(b"<q>", b"<q2>").replace(b"=q)", b"=q2)") + rb"\s*\]"
        rb"|(?:environ\.get|getenv)\(\s*" + _HOME_KEY.replace(b"<q>", b"<q3>").replace(b"=q)", b"=q3)") + rb"\s*(?:,[^()\n]*)?\))",
        # ~\\Desktop\\x: IPython's shortened home in a Windows traceback; two folders at least
        rb"(?P<tilde>~(?:[A-Za-z_][\w.-]*)?/"
        + _PATH_CHARS
        + rb"*"
        + _UNIX_TAIL
        + rb"|~(?:\\\\|\\)"
        + _WIN_NAME
        + rb"+(?:(?:\\\\|\\)"
        + _WIN_NAME
        + rb"+)+)",
        rb"(?P<remote>:(?:~|/|[\w.-]+/|[\w*-][\w.*-]*)[^\s\"'`;|<>]*)",  # the host before it is read back in Python (remote_start)
        # $USER_HOME$: the home as JetBrains IDEs write it in .idea files
        rb"(?P<homevar>(?:\$HOME\b|\$\{HOME\}|%USERPROFILE%|%HOMEPATH%|\$env:USERPROFILE\b|\$env:HOME\b|\$USER_HOME\$)" + _VAR_TAIL + rb")",
        rb"(?P<built>/(?:home|[Uu]sers)/?(?=\\?[\"']\s*(?:\+|,)))",  # \" too: a notebook's JSON
    ]
    if general:
        # /scratch/${ACCOUNT}/x, /ckpt/{user}/x are absolute too
        segment = rb"(?:" + _PATH_CHARS + rb"|\$\{?[A-Za-z_]\w*\}?|" + _COMMAND + rb"|" + _FIELD + rb")+"
        parts.append(rb"(?P<rooted>/[A-Za-z_][\w.+-]*/?(?=\\?[\"']\s*(?:\+|,))|/(?=[\"']\s*,\s*[rRuU]?[\"'][A-Za-z_][\w.+-]*[\"']))")
        parts.append(rb"(?P<absolute>/[A-Za-z_][\w.+-]*(?:/" + segment + rb")+/?|/[A-Za-z_][\w.+-]*/(?=[\"'`]|\\n))")
        parts.append(rb"(?P<single>/[A-Za-z_][\w.+-]*(?=[\"'`;)|&]|\\[n\"]|[ \t]|\r?\n|$))")
    patterns = []
    for part in parts:
        pattern = re.compile(part)
        patterns.append((next(iter(pattern.groupindex)), pattern))
    return patterns


def word_byte(byte: int) -> bool:
    return byte >= 0x80 or byte == 0x5F or 0x30 <= byte <= 0x39 or 0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A


_PATH_NOT_AFTER = frozenset(b"./~\\$%-")
_TILDE_AFTER = frozenset(b"\"' \t\r\n=,[({:`>")
_ANSI_END = re.compile(rb"(?:\x1b|\\u001[bB]|\\x1[bB]|\\033)\[[0-9;]*m$")  # JSON writes \u001b or \u001B


def _ansi_before(data: bytes, start: int) -> bool:
    return data[start - 1] == 0x6D and _ANSI_END.search(data, max(0, start - 16), start) is not None


# Typographic quotes (wget's ``Saving to: ‘/root/x’``) in UTF-8: quotes like ' and ", a path's bounds.
OPEN_QUOTES = ("\u2018".encode(), "\u201c".encode())
CLOSE_QUOTES = ("\u2019".encode(), "\u201d".encode())


def _curly_before(data: bytes, start: int) -> bool:
    """An opening typographic quote before ``start``, as UTF-8 or as JSON's escape (a notebook saved in ASCII)."""
    return data[max(0, start - 3) : start] in OPEN_QUOTES or data[max(0, start - 6) : start] in (b"\\u2018", b"\\u201c")


def boundary_before(data: bytes, start: int) -> bool:
    """A terminal colour code or an opening typographic quote right before ``start``: a boundary, like a space."""
    return _ansi_before(data, start) or _curly_before(data, start)


def _cut_at_close_quote(data: bytes, start: int, end: int) -> int:
    for quote in CLOSE_QUOTES:
        at = data.find(quote, start, end)
        if at != -1:
            end = at
    return end


# What may come right before any other absolute path: a space, a quote, "=", "(", "[", ",".
# Not ":" (``host:/path`` is remote, ``-v data:/data`` the container's side) nor ">" (``<ROOT>/x``).
_ABSOLUTE_AFTER = frozenset(b" \t\r\n\"'`=([,")


# A search path's assignment: PATH=, PYTHONPATH=, LD_LIBRARY_PATH=, export MANPATH=… (a colon-separated list of folders).
_SEARCH_PATH = re.compile(rb"\b[A-Z_]*PATH[A-Z_]*\s*\+?=")


def in_search_path(data: bytes, start: int) -> bool:
    """Is the path one element of a search path, after a ``:`` (``PATH=$PATH:/export/tools/bin``)? ``host:/x`` is not."""
    if start == 0 or data[start - 1] != 0x3A:
        return False
    line_start = data.rfind(b"\n", 0, start) + 1
    assigned = _SEARCH_PATH.search(data, line_start, start)
    return assigned is not None and b" " not in data[assigned.end() : start].strip(b"\"'")


def glued_flag(data: bytes, start: int) -> bool:
    """Is the path glued to a one-letter flag (``-I/home/u/include``, ``-L/data/lib``)?"""
    return start >= 2 and data[start - 2] == 0x2D and chr(data[start - 1]).isalpha() and (start == 2 or data[start - 3] in b" \t\"'=(")


_OPERAND_END = re.compile(rb"(?:[\w)\]]|[\"'])[ \t]*$")  # a name, a call, a subscript or a string ends right before


def tail_literal(data: bytes, start: int) -> bool:
    """Is the string holding the path at ``start`` the tail of a concatenation (``root + "/data/x"``, Lua's
    ``root..'/x'``, Julia's ``root * "/x"``), or a string method's argument (``text.split("/utils/")``), and so no
    path of its own?"""
    if start == 0 or data[start - 1] not in b"\"'":
        return False
    before = start - 2
    if before >= 0 and data[before] == 0x5C:  # \" in JSON text (a notebook's source)
        before -= 1
    while before >= 0 and data[before] in b" \t":
        before -= 1
    if before >= 0 and data[before] == 0x2B:
        return True
    if before >= 1 and data[before - 1 : before + 1] == b".." and data[before - 2 : before - 1] != b".":  # Lua's root..'/x'
        return True
    if before >= 1 and data[before] == 0x2A and _OPERAND_END.search(data, max(0, before - 40), before):  # Julia's root * "/x"
        return True
    if before == start - 2 and data[before] == 0x7D:  # {var}'/x' in IPython, ${DIR}"/x" in a shell: a tail
        return True
    return before >= 0 and data[before] == 0x28 and _STRING_METHOD.search(data, max(0, before - 16), before + 1) is not None


# A name that says it holds a folder, right before a value: ``data_path = "/data"``, ``root: /data``,
# ``add_argument("--data_dir", default="/data")``.
_PATH_NAME = re.compile(rb"(?P<name>[A-Za-z_][\w-]*)[\"']?\s*(?:[:=]|,[^\n]*?\bdefault\s*=)\s*[rRuUbBfF]{0,2}[\"'`]?$")
_FOLDER_WORD = re.compile(
    rb"(?i)(?:dir|path|root|folder|data|dataset|ckpt|checkpoint|output|out|log|save|cache|workspace|scratch|home|prefix)s?$"
)
_CONTAINER_SIDE = re.compile(rb"(?i)mount|container|target")  # mountPath: /data is the container's side of a bind


def path_named(data: bytes, line_start: int, start: int) -> bool:
    """Is the one-folder path at ``start`` (``/data``) the value of a name that holds a folder?

    Alone, ``"/data"`` may as well be a web route or a key; after ``data_dir =`` it is a folder.
    """
    match = _PATH_NAME.search(data, max(line_start, start - 120), start)
    if match is None:
        return False
    name = match.group("name")
    return _FOLDER_WORD.search(name) is not None and _CONTAINER_SIDE.search(name) is None


# A command or a call that takes a folder or a file there: ``mkdir /build``, ``cd /build && …``,
# ``tar -C /build``, ``os.chdir("/build")``, ``shutil.copy(x, "/build")``.
_SHELL_FOLDER_USE = re.compile(
    rb"(?:^|[;&|(`!\"']|\$\()\s*(?:sudo\s+)?(?:mkdir|cd|pushd|cp|mv|rm|rmdir|ls|ln|tar|touch|chmod|chown|du|rsync)"
    rb"\s[^;&|`\n\"'#]*[\"']?$",
    re.M,
)
_PYTHON_FOLDER_USE = re.compile(
    rb"\b(?:chdir|makedirs|mkdir|rmtree|copytree|copyfile|copy2?|move|listdir|scandir|walk|open|Path|PurePath|join|exists|isdir|glob)"
    rb"\((?:(?:[^()\n]|\((?:[^()\n]|\([^()\n]*\))*\))*,\s*)?[rRbBuUfF]{0,2}\\?[\"']$"
)  # join(os.path.dirname(__file__), "/common"): an absolute part drops what came before it
# The names the Filesystem Hierarchy Standard (and macOS) gives to the folders right under /: the
# system's own, the same on every machine. Any other folder there (/build_tmp, /kaggle) is one machine's.
FHS_TOP = frozenset({"bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "media", "mnt", "opt", "proc"})
FHS_TOP |= frozenset({"root", "run", "sbin", "srv", "sys", "tmp", "usr", "var", "nix", "snap"})
FHS_TOP |= frozenset({"System", "Library", "Applications", "Users", "Volumes", "private", "cores"})


def used_as_folder(data: bytes, line_start: int, start: int, end: int) -> bool:
    """Is the folder right under ``/`` at ``start`` (``/build_tmp``) used as one, by a shell command or a
    Python call on its line, and is it none of the system's own (FHS names)?"""
    if data[start + 1 : end].decode("latin-1") in FHS_TOP:
        return False
    if _SHELL_FOLDER_USE.search(data, line_start, start) is not None:
        return True
    return _PYTHON_FOLDER_USE.search(data, max(line_start, start - 200), start) is not None


# A call that reads or writes a file (``np.load``, ``torch.save``, ``pd.read_csv``, ``df.to_parquet``, ``cv2.imread``),
# the path its argument; a route (``@app.route("/index.html")``, ``send_file``) or a URL join is none of them.
_FILE_CALL = re.compile(
    rb"(?i)(?:\b|_)(?:load\w*|save\w*|read\w*|write\w*|dump|open|to_\w+|imread|imwrite|fromfile|tofile)"
    rb"\((?:[^()\n]*,\s*)?[rRbBuUfF]{0,2}\\?[\"']$"
)
_FILE_NAME = re.compile(rb"[A-Za-z_][\w+-]*\.[A-Za-z][\w]{0,7}")
_FILE_WORD = re.compile(rb"(?i)(?:file|fname|filename|path)s?$")


# A placeholder a help text or a prompt shows for a path of the user's (``Input directory: /dir``, ``Ex: /file.vcf``),
# as ``/path/to/x`` is one: an absolute path written for every machine, so bound to none.
_PLACEHOLDER_NAME = re.compile(rb"(?i)(?:dir|directory|folder|path|file|filename)(?:\.[a-z][\w]{0,7})?\.?")


def _single_kept(data: bytes, line_start: int, start: int, end: int) -> bool:
    return (
        path_named(data, line_start, start)
        or used_as_folder(data, line_start, start, end)
        or root_file(data, line_start, start, end)
        or _PLACEHOLDER_NAME.fullmatch(data, start + 1, end) is not None
    )


def root_file(data: bytes, line_start: int, start: int, end: int) -> bool:
    """Is the file right under ``/`` at ``start`` (``/train_X.npy``) one machine's: a name with a suffix, none of
    the system's, read or written by a call on its line, or the value of a name that holds a file?"""
    if _FILE_NAME.fullmatch(data, start + 1, end) is None or data[start + 1 : end].decode("latin-1") in FHS_TOP:
        return False
    if _FILE_CALL.search(data, max(line_start, start - 200), start) is not None:
        return True
    match = _PATH_NAME.search(data, max(line_start, start - 120), start)
    return match is not None and _FILE_WORD.search(match.group("name")) is not None


# Methods whose argument is a fragment of a text. Not startswith/removeprefix: a prefix compared
# with a path (``p.startswith("/gpfs/lab")``) is the folder the code expects to run under.
_STRING_METHOD = re.compile(rb"\.(?:r?split|replace|endswith|removesuffix|r?find|r?index|r?strip|lstrip|r?partition|count)\($")


_JOIN_BEFORE = re.compile(rb"(?:join|Path|PurePath|PosixPath)\(\s*$")


def joined(data: bytes, start: int) -> bool:
    """Is the string at ``start`` (after its quote) the first part of ``os.path.join(…)`` or ``Path(…)``?"""
    return _JOIN_BEFORE.search(data, max(0, start - 40), start - 1) is not None


def concatenated_folder(data: bytes, start: int) -> bool:
    """Is the string at ``start`` a folder that something is added to (``"/scratch/" + user``, in a notebook's JSON
    ``\\"/content/\\" + name`` too)?"""
    quote = data[start - 1 : start]
    closing = b"\\" + quote if data[start - 2 : start - 1] == b"\\" else quote
    close = data.find(closing, start)
    after = close + len(closing)
    return close > start and data[close - 1] == 0x2F and data[after : after + 16].lstrip()[:1] == b"+"


def closes_string(data: bytes, line_start: int, start: int) -> bool:
    """Is the quote right before ``start`` one that closes a string (``'rlp'/x``): glued to what it ends, after an odd
    number of the same quotes on its line? (A notebook's escaped ``\\"`` is never taken for one.)"""
    if start - 2 < line_start or data[start - 1] not in b"\"'" or data[start - 2] in b" \t([{,=:+\\\"'":
        return False
    return data.count(data[start - 1 : start], line_start, start - 1) % 2 == 1


_VARIABLE_BEFORE = re.compile(rb"(?<![\w$\\])\$\{?[A-Za-z_]\w*\}?$")


def variable_before(data: bytes, line_start: int, start: int) -> bool:
    """Is the users folder at ``start`` glued to a site's shell variable (``$PROJECT/users/ana``, ``${WORK}/home/x``)?
    ``$HOME``, ``$USER`` and ``$PWD`` are not a site's: their own shapes read them."""
    found = _VARIABLE_BEFORE.search(data, max(line_start, start - 40), start)
    return found is not None and found.group(0).strip(b"${}") not in (b"HOME", b"USER", b"PWD")


def preceded_ok(group: str, data: bytes, start: int) -> bool:
    """What may come right before a path of ``group``: never a word (but a terminal colour code or a glued flag)."""
    if start == 0:
        return True
    before = data[start - 1]
    if group == "single":
        named = before == 0x3D and path_named(data, data.rfind(b"\n", 0, start) + 1, start)  # DATA_DIR=/data in a shell
        shown = before == 0x28 and _PLACEHOLDER_NAME.match(data, start + 1) is not None  # a prompt's "Location (/dir): "
        return (before in b" \t\"'`" or named or shown or _curly_before(data, start) or in_search_path(data, start)) and not tail_literal(
            data, start
        )
    if group in ("absolute", "built", "rooted"):
        if tail_literal(data, start):
            return False
        if group in ("built", "rooted"):
            return before in b"\"'" and (concatenated_folder(data, start) or joined(data, start))
        return before in _ABSOLUTE_AFTER or glued_flag(data, start) or boundary_before(data, start) or in_search_path(data, start)
    if group in ("project", "wsl", "home", "temp", "drive") and glued_flag(data, start):
        return True
    if group in ("project", "wsl", "home", "temp", "drive"):
        if boundary_before(data, start):  # "\u001b[0;32m/home/…" in outputs
            return True
        if 0x30 <= before <= 0x39:  # a number glued before the path ("2/home/u"), not a folder ("exp2/home/u")
            digits = start - 1
            while digits > 0 and 0x30 <= data[digits - 1] <= 0x39:
                digits -= 1
            return digits == 0 or not (word_byte(data[digits - 1]) or data[digits - 1] in _PATH_NOT_AFTER)
        return not word_byte(before) and before not in _PATH_NOT_AFTER
    if group == "windows":
        return (not word_byte(before) and before not in b"/\\:-.%$") or boundary_before(data, start)
    if group == "tilde":
        return before in _TILDE_AFTER or boundary_before(data, start) or _prompt_folder(data, start)
    if group == "remote":
        return not word_byte(before) and before not in b".-@"
    return True


# A terminal's prompt glued to its folder, as a captured session starts: ``(env) ana~/work/repo$ python x.py``.
_PROMPT_USER = re.compile(rb"[ \t]*(?:\([\w.-]+\)[ \t]*)?[\w.-]+")
_PROMPT_END = re.compile(rb"[^\s$%#>]*[$%#>][ \t]")


def _prompt_folder(data: bytes, start: int) -> bool:
    line_start = data.rfind(b"\n", 0, start) + 1
    return _PROMPT_USER.fullmatch(data, line_start, start) is not None and _PROMPT_END.match(data, start) is not None


GROUP_SHAPES = {
    "project": "project-absolute",
    "wsl": "wsl-user",
    "drive": "colab-drive",
    "home": "home",
    "windows": "windows-user",
    "temp": "temp-dir",
    "lookup": "home-lookup",
    "tilde": "tilde",
    "homevar": "home-var",
    "remote": "remote",
    "built": "home-built",
    "rooted": "absolute-built",
    "absolute": "absolute",
}


_URL_SCHEME = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]+://")  # two letters at least: ``C://Users`` is a drive
_WORD_STOP = frozenset(b" \t\"'`(<[=,")


def inside_url(data: bytes, line_start: int, start: int) -> bool:
    """True when the hit is part of a ``scheme://`` word (a URL, not a path)."""
    word_start = start
    while word_start > line_start and data[word_start - 1] not in _WORD_STOP:
        word_start -= 1
    return _URL_SCHEME.search(data, word_start, start + 1) is not None


def _segment_byte(byte: int) -> bool:
    return word_byte(byte) or byte in b".-+@"


def path_start(data: bytes, line_start: int, start: int) -> int | None:
    """Where the absolute path holding a home or users folder at ``start`` begins.

    ``/gpfs/x/home/u`` begins at ``/gpfs``; a number glued before it (``2/home/u``) is
    not part of it. None when the folder sits in a relative path (``data/home/u``) or
    after a variable (``$ROOT/home/u``): neither is a user's folder on a machine.
    """
    begin = start
    while begin > line_start and _segment_byte(data[begin - 1]):
        if boundary_before(data, begin):
            return begin
        segment_start = begin - 1
        while segment_start > line_start and _segment_byte(data[segment_start - 1]):
            segment_start -= 1
        if segment_start > line_start and data[segment_start - 1] == 0x2F:
            if not word_byte(data[segment_start]):
                return None  # "/-/media/…/home/x": a web path, not a folder on a machine
            begin = segment_start - 1  # a prefix folder: /gpfs/…, /burg/…, /private/…
            continue
        if glued_flag(data, begin):
            return begin  # -I/home/u/include
        return begin if data[segment_start:begin].isdigit() else None
    return begin


# Absolute paths that mean the same on every machine: the system's own folders, /tmp as
# scratch (the temp-dir shape judges outputs there), the image's own layout, macOS's own.
_PORTABLE_ROOTS = frozenset(
    {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev", "proc", "sys", "run", "boot", "tmp", "nix", "snap"}
    | {"System", "Library", "Applications", "private", "usr", "var", "opt"}
)
_PORTABLE_UNDER = {
    "usr": frozenset({"bin", "sbin", "lib", "lib32", "lib64", "libexec", "local", "share", "include", "src", "X11R6", "games"}),
    "private": frozenset({"tmp", "var", "etc"}),
}


# The system's folders that hold one tree per user (udisks' /run/media/<user>/, logind's /run/user/<uid>/):
# what lies under them is one machine's user, as a home is.
_PER_USER_UNDER = {"run": frozenset({"media", "user"})}


def _portable_lookahead() -> bytes:
    """A negative lookahead that skips the portable absolute paths in a regex: ``/(?!usr/lib/|etc/|…)``."""
    roots = [
        root + ("(?!/(?:" + "|".join(sorted(_PER_USER_UNDER[root])) + ")/)" if root in _PER_USER_UNDER else "")
        for root in sorted(_PORTABLE_ROOTS - set(_PORTABLE_UNDER))
    ]
    under = [root + "/(?:" + "|".join(sorted(names)) + ")" for root, names in sorted(_PORTABLE_UNDER.items())]
    return ("(?!(?:" + "|".join(roots + under) + r")(?:/|\b(?![.-])))").encode()


def _per_user(parts: list[str]) -> bool:
    return len(parts) > 2 and parts[1] in _PER_USER_UNDER.get(parts[0], ())


PORTABLE_LOOKAHEAD = _portable_lookahead()


def portable_absolute(text: str) -> bool:
    """Is this absolute path the same on every machine (``/usr/lib/…``, ``/opt/conda/…``, ``/dev/null``)?"""
    parts = [p for p in text.split("/") if p]
    if parts == ["Users", "Shared"]:
        return True  # macOS's folder shared by every user (what is kept in it is one Mac's)
    if not parts or parts[0] not in _PORTABLE_ROOTS or _per_user(parts):
        return False
    under = _PORTABLE_UNDER.get(parts[0])
    return under is None or (len(parts) > 1 and parts[1] in under) or len(parts) == 1


_REMOTE_HOST = re.compile(rb"(?:[\w.-]+@)?[\w-]+(?:\.[\w-]+)*")
_VARIABLE_HOST = re.compile(rb"[\w.-]+@\$\{?[A-Za-z_]\w*\}?$")  # ubuntu@$ip:, ubuntu@${HOST}: (a user, then the host's variable)
# "$REMOTE:repo/x" on a copying command's line: the host (or user@host) in a variable; never $PATH:/usr/bin
_HOST_VARIABLE = re.compile(rb"\$\{?(?![A-Z_]*PATH\b)[A-Za-z_]\w*\}?$")


def remote_start(data: bytes, line_start: int, colon: int) -> int | None:
    """Where ``[user@]host`` before the colon of ``host:path`` begins (None: no host there).

    Read back from the colon, so that a long word with no colon costs nothing (a regex
    trying ``[word-]+:`` at every position of it would take quadratic time).
    """
    if data[colon - 1 : colon] == b"}" or b"$" in data[max(line_start, colon - 40) : colon]:
        variable = _VARIABLE_HOST.search(data, max(line_start, colon - 80), colon)
        if variable is not None:
            return variable.start()
        alone = _HOST_VARIABLE.search(data, max(line_start, colon - 80), colon)
        if alone is not None and _TRANSFER.search(data, line_start, colon) is not None:
            return alone.start()
    begin = colon
    while begin > line_start and (word_byte(data[begin - 1]) or data[begin - 1] in b".-@"):
        begin -= 1
    while begin < colon and not (word_byte(data[begin]) and data[begin] < 0x80):
        begin += 1  # a host starts with a letter or digit
    return begin if begin < colon and _REMOTE_HOST.fullmatch(data, begin, colon) else None


@dataclass(frozen=True)
class Hit:
    group: str
    start: int
    end: int

    text: str = ""

    @property
    def shape(self) -> str:
        if self.group == "windows" and not _WINDOWS_USERS.match(self.text):
            return "windows-drive"
        return GROUP_SHAPES[self.group]


_WINDOWS_USERS = re.compile(r"(?i)^[a-z]:[\\/]+users(?:[\\/]|$)")
_MAC_SHARED = re.compile(rb"/Users/Shared(?![\w.-])")


def line_hits(patterns, data: bytes, line_start: int, line_end: int) -> list[Hit]:
    """Non-overlapping hits in one line: leftmost first, then by priority; URLs left out."""
    candidates = []
    chains = gdal_chains(data, line_start, line_end)
    for priority, (group, pattern) in enumerate(patterns):
        for start, end in _spans(pattern, data, line_start, line_end, chains):
            glued = group == "home" and variable_before(data, line_start, start)
            if glued:
                group = "built"  # $PROJECT/users/ana/src: a user's folder under a site's variable, made by hand
            elif group == "home":
                begin = path_start(data, line_start, start)
                if begin is None:
                    continue
                start = begin
            if group == "home" and _MAC_SHARED.match(data, start):
                if end - start <= len(b"/Users/Shared/"):
                    continue  # macOS's own folder for every user, as /Library is
                group = "absolute"  # /Users/Shared/data/x: one Mac's folder, no user's home
            if group == "remote":
                colon, start = start, remote_start(data, line_start, start)
                if start is None or (_bare_name(data, colon, end) and not _user_and_copy(data, line_start, line_end, start, colon)):
                    continue
            if not (glued or preceded_ok(group, data, start) or any(start == wrapped for _, wrapped in chains)):
                continue
            if group in ("absolute", "rooted", "single") and closes_string(data, line_start, start):
                continue  # home/'rlp'/project_name/'data': pathlib's operator after a string, no path of its own
            if group == "windows" and WINDOWS_SYSTEM.match(data[start:line_end].decode("latin-1")):
                continue
            if group == "lookup":  # take in the receiver: os.path.expanduser, pathlib.Path.home, os.environ
                while start > line_start and (word_byte(data[start - 1]) or data[start - 1] == 0x2E):
                    start -= 1
                if data[start:end].endswith(b"home()") and not data[start:end].endswith(b"Path.home()"):
                    continue  # some other object's home() method
            if inside_url(data, line_start, start):
                continue
            if group == "remote" and data[start:end].rstrip(b"/").endswith(b".git"):
                continue  # a repository to clone, not a folder
            if (
                group == "remote"
                and b"@" not in data[start:end]
                and not (end - start > 3 and data[start + 1 : start + 2] != b":" and _TRANSFER.search(data, line_start, line_end))
            ):
                continue  # host:path without a user: only on a copying command's line
            if group == "single" and not _single_kept(data, line_start, start, end):
                continue
            if group in ("absolute", "rooted", "single") and portable_absolute(_joined_root(data, start, end)):
                continue
            group = "absolute" if group == "single" else group
            if data[start - 3 : start] in OPEN_QUOTES:
                end = _cut_at_close_quote(data, start, end)
            candidates.append((start, priority, end, group))
    chosen, taken_to = [], line_start
    for start, _, end, group in sorted(candidates):
        if start >= taken_to:
            chosen.append(Hit(group, start, end, data[start:end].decode("utf-8", errors="replace")))
            taken_to = end
    return chosen


_NEXT_PART = re.compile(rb"[\"']\s*,\s*[rRuU]?[\"']([A-Za-z_][\w.+-]*)[\"']")


def _joined_root(data: bytes, start: int, end: int) -> str:
    """The path a hit names, with the next part of a join from the root taken in: ``join("/", "kaggle", …)`` is /kaggle."""
    text = data[start:end].decode("utf-8", "replace")
    if text != "/":
        return text
    following = _NEXT_PART.match(data, end)
    return "/" + following.group(1).decode("utf-8", "replace") if following else text


# GDAL's virtual file systems (/vsizip/, /vsicurl/, /vsis3/ …) chained in front of what they read:
# a URL or a bucket is the same on every machine; a local absolute path after them is judged as itself.
_GDAL_CHAIN = re.compile(rb"(?<![\w./-])(?:/vsi[a-z0-9_]+/)+")


def _spans(pattern: re.Pattern[bytes], data: bytes, line_start: int, line_end: int, chains: list[tuple[int, int]]):
    """The pattern's matches on the line; one that begins in a chain of GDAL prefixes is tried again where the
    chain ends, on what the chain wraps."""
    for match in pattern.finditer(data, line_start, line_end):
        start = match.start()
        wrapped = next((end for begin, end in chains if begin <= start < end), None)
        if wrapped is None:
            yield match.span()
        else:
            inner = pattern.match(data, wrapped, line_end)
            if inner is not None:
                yield inner.span()


def gdal_chains(data: bytes, line_start: int, line_end: int) -> list[tuple[int, int]]:
    """(start, where the wrapped path begins) of each chain of GDAL prefixes on the line."""
    if data.find(b"/vsi", line_start, line_end) == -1:
        return []
    return [match.span() for match in _GDAL_CHAIN.finditer(data, line_start, line_end)]


_TRANSFER = re.compile(rb"\b(?:rsync|scp|sftp|rclone)\b")
_PATTERNS = shape_patterns([])


def _bare_name(data: bytes, colon: int, end: int) -> bool:
    """``host:results*``: a name in the other machine's home, no folder after the colon."""
    return data[colon + 1 : colon + 2] not in (b"~", b"/") and b"/" not in data[colon:end]


def _user_and_copy(data: bytes, line_start: int, line_end: int, start: int, colon: int) -> bool:
    """A bare name after ``host:`` is a remote file only as ``user@host:name`` on a copying command's line."""
    return b"@" in data[start:colon] and _TRANSFER.search(data, line_start, line_end) is not None


def machine_paths(text: str) -> list[tuple[str, str]]:
    """(shape, path) of every machine-specific path in ``text``; URLs and other machines' paths left out."""
    data = text.encode("utf-8", errors="replace")
    found = []
    line_start = 0
    while line_start <= len(data):
        line_end = data.find(b"\n", line_start)
        line_end = len(data) if line_end == -1 else line_end
        for hit in line_hits(_PATTERNS, data, line_start, line_end):
            if hit.group != "remote":
                found.append((hit.shape, hit.text))
        line_start = line_end + 1
    return found
