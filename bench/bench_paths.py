"""`bundler paths` measured: accuracy on hand-labelled public repositories, --fix outcomes, scan throughput.

Corpus (``--corpus DIR``): DIR/<name> holds a checkout of the repository named in
bench/paths_corpus/<name>.json at the commit written there (the labels are facts only:
file, lines, kind, documentation or not; see bench/paths_corpus/README.md). Per
repository, outside documentation and at line level: precision and recall of the lines
`bundler paths` fails on; how many information lines (remote, portable) it reports as
such. Then a copy of each checkout is fixed and every file --fix wrote is proven again
from what is on disk (Python by AST evaluation, OmegaConf YAML by resolution, shell by
``bash -n`` and running its parameter block with only .env.local present); backups
must equal the originals byte for byte and a second --fix must change nothing. A Python file this
interpreter cannot parse (Python 2, newer syntax) has no whole-file tree to compare: it is counted
as proven per edit only (--fix's own proof, each changed expression evaluated), not as proven again.

Throughput: a generated tree of mixed text (cached under /tmp), a full scan timed
side by side with ``grep -rEn`` and an equivalent pattern, warm page cache, best of N.

    python bench/bench_paths.py --corpus DIR [--only NAME ...] [--files 20000] [--megabytes 500] [--runs 3] [--no-throughput]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.paths_tree import GREP_PATTERN, generate_tree, tree_size
from bundler.portability import fix as pathfix
from bundler.portability import scan as paths
from bundler.portability.classify import read_env_local
from bundler.portability.equivalence import omegaconf_problem, parses, python_problem
from bundler.portability.rewrite import json_unescaped, notebook_problem
from bundler.portability.shell import BLOCK_END, interpreter

LABELS = Path(__file__).resolve().parent / "paths_corpus"
INFORMATION = ("remote", "portable")


def _lines(spec: str):
    for part in spec.split(","):
        first, _, last = part.partition("-")
        yield from range(int(first), int(last or first) + 1)


def truth(labels: dict) -> tuple[set, set]:
    """(lines that must fail, lines that are information) from a label file."""
    failing, information = set(), set()
    for entry in labels["labels"]:
        keys = {(entry["file"], n) for n in _lines(entry["lines"])}
        if entry["kind"] in INFORMATION:
            information |= set() if entry["doc"] else keys
        elif not entry["doc"]:
            failing |= keys
    return failing, information


def measure(checkout: Path, labels: dict, scan_module=paths) -> dict:
    expected, information = truth(labels)
    result = scan_module.scan(checkout)
    predicted = {(f.file, f.line) for f in result.failing}
    reported = {(f.file, f.line) for f in getattr(result, "information", [])}
    hits = len(predicted & expected)
    return {
        "truth": len(expected),
        "predicted": len(predicted),
        "precision": hits / len(predicted) if predicted else 1.0,
        "recall": hits / len(expected) if expected else 1.0,
        "information": f"{len(reported & information)}/{len(information)}",
        "false_positives": sorted(predicted - expected)[:5],
        "misses": sorted(expected - predicted)[:5],
        "not_checked": len(getattr(result, "not_checked", [])),
    }


# --- --fix, proven again from the files on disk --------------------------------------------


def fix_outcome(checkout: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-paths-fix-") as scratch:
        copy = Path(scratch) / checkout.name
        shutil.copytree(checkout, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        before = paths.scan(copy)
        result = pathfix.fix(copy, scan_result=before)
        values = read_env_local(copy / ".env.local")
        broken, checked, per_edit = [], 0, []
        for change in result.changes:
            if change.status != "fixed":
                continue
            original = (copy / result.backup_dir / change.file).read_bytes()
            if original != (checkout / change.file).read_bytes():
                broken.append(f"{change.file}: backup differs from the original")
            if change.file.endswith(paths.PYTHON_SUFFIXES) and not parses(original.decode(before.encodings.get(change.file, "utf-8"))):
                per_edit.append(change.file)  # Python 2 or newer syntax: no whole-file tree here; --fix proved each edit
                continue
            problem = _proof(copy, change.file, original, before, values)
            checked += 1
            if problem:
                broken.append(f"{change.file}: {problem}")
        second = pathfix.fix(copy, apply=True)
        statuses = [c.status for c in result.changes]
        return {
            "files_fixed": statuses.count("fixed"),
            "refused": statuses.count("refused"),
            "left_by_hand": sum(len(c.manual) for c in result.changes),
            "proven_again": checked,
            "proven_per_edit_only": per_edit,
            "silent_breakages": broken,
            "second_fix_writes": len(second.written),
        }


def _proof(root: Path, relative: str, original: bytes, before, values: dict[str, str]) -> str | None:
    encoding = before.encodings.get(relative, "utf-8")
    old, new = original.decode(encoding), (root / relative).read_bytes().decode(encoding)
    findings = [f for f in before.failing if f.file == relative]
    prefixes = [f.text[: f.prefix_length] for f in findings if f.project_relative is not None and f.prefix_length]
    if relative.endswith(paths.PYTHON_SUFFIXES):
        return _written(python_problem(old, new, values, prefixes))
    if relative.endswith(".ipynb"):
        return _notebook_proof(old, new, values, prefixes)
    if relative.endswith(paths.YAML_SUFFIXES):
        return _written(omegaconf_problem(old, new, values))
    shell = interpreter(relative, old)
    if shell and BLOCK_END in new:
        return _shell_proof(root, relative, new, shell, values)
    return None if new.count("\n") == old.count("\n") else "line count changed"


def _written(problem: str | None) -> str | None:
    """fix's own words for a refusal ("…: not modified"), told of a file --fix did write."""
    return None if problem is None else f"{problem.removesuffix(': not modified')}, and yet --fix wrote it"


def _notebook_proof(old: str, new: str, values, prefixes) -> str | None:
    """The notebook proof --fix itself runs (rewrite.py), told of a file --fix did write."""
    return _written(notebook_problem(old, new, values, [json_unescaped(p) for p in prefixes]))


def _shell_proof(root: Path, relative: str, new: str, shell: str, values) -> str | None:
    """``bash -n``, then the parameter block run from a copy holding only .env.local."""
    if subprocess.run([shell, "-n"], input=new, text=True, capture_output=True, check=False).returncode:
        return "does not parse"
    with tempfile.TemporaryDirectory() as scratch:
        if (root / ".env.local").is_file():  # absent where every rewrite is relative to the project
            (Path(scratch) / ".env.local").write_text((root / ".env.local").read_text())
        script = Path(scratch) / relative
        script.parent.mkdir(parents=True, exist_ok=True)
        names = sorted(set(__import__("re").findall(r': "\$\{(\w+):=', new)))
        script.write_text(new[: new.index(BLOCK_END)] + "".join(f'printf "%s\\n" "${{{n}}}"\n' for n in ["_bundle_root", *names]))
        home = tempfile.mkdtemp()
        run = subprocess.run([shell, str(script)], cwd=home, env={"PATH": os.environ["PATH"], "HOME": home}, capture_output=True, text=True)
        expected = [os.path.realpath(scratch)] + [
            values[n].replace("~", home, 1) if values[n].startswith("~") else values[n] for n in names
        ]
        expected = [e.replace("$HOME", home).replace("${HOME}", home) for e in expected]
        shutil.rmtree(home, ignore_errors=True)
        return None if run.returncode == 0 and run.stdout.splitlines() == expected else f"block resolves to {run.stdout.splitlines()}"


# --- throughput ------------------------------------------------------------------------------


def best_of(runs: int, action) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def bench_scan(root: Path, runs: int) -> None:
    megabytes = tree_size(root) / 1e6
    grep = ["grep", "-rEn", GREP_PATTERN, str(root)]
    subprocess.run(grep, stdout=subprocess.DEVNULL, check=False)  # warm the page cache
    grep_hits = subprocess.run(grep, capture_output=True, text=True, check=False).stdout.count("\n")
    result = paths.scan(root)
    grep_time = best_of(runs, lambda: subprocess.run(grep, stdout=subprocess.DEVNULL, check=False))
    scan_time = best_of(runs, lambda: paths.scan(root))
    print(f"tree: {root} ({sum(len(n) for _, _, n in os.walk(root))} files, {megabytes:.0f} MB)")
    print(f"grep -rEn : {grep_time:6.2f} s  {megabytes / grep_time:8.1f} MB/s  ({grep_hits} matching lines)")
    print(f"paths.scan: {scan_time:6.2f} s  {megabytes / scan_time:8.1f} MB/s  ({len(result.findings)} findings)")
    print(f"ratio scan/grep throughput: {grep_time / scan_time:.2f} (goal >= 0.33)")


def bench_corpus(corpus: Path, only: list[str], old: Path | None) -> None:
    totals = {"": [0, 0, 0, []], "before ": [0, 0, 0, []]}  # truth, predicted, hits, (precision, recall) per repository
    for label_file in sorted(LABELS.glob("*.json")):
        name = label_file.stem
        if only and name not in only:
            continue
        labels, checkout = json.loads(label_file.read_text()), corpus / name
        if not checkout.is_dir():
            print(f"{name:26} (no checkout at {checkout})")
            continue
        figures = measure(checkout, labels)
        baseline = measure(checkout, labels, _Before(old)) if old else None
        outcome = fix_outcome(checkout)
        for key, measured in (("", figures), ("before ", baseline)):
            if measured:
                total = totals[key]
                total[0], total[1] = total[0] + measured["truth"], total[1] + measured["predicted"]
                total[2] += round(measured["recall"] * measured["truth"])
                total[3] += [(measured["precision"], measured["recall"])] if measured["truth"] else []
        before = f"  before P {baseline['precision']:.3f} R {baseline['recall']:.3f}" if baseline else ""
        print(
            f"{name:26} {labels['repository']:42} lines {figures['truth']:6}  P {figures['precision']:.3f} R {figures['recall']:.3f}"
            f"  info {figures['information']:>7}{before}  fix: {outcome['files_fixed']} fixed, {outcome['refused']} refused, "
            f"{outcome['left_by_hand']} by hand, {len(outcome['silent_breakages'])} silent breakages, "
            f"2nd fix writes {outcome['second_fix_writes']}"
            + (f", {len(outcome['proven_per_edit_only'])} proven per edit only" if outcome["proven_per_edit_only"] else "")
        )
        for problem in (
            outcome["silent_breakages"] + [f"miss {m}" for m in figures["misses"]] + [f"false {m}" for m in figures["false_positives"]]
        ):
            print(f"    {problem}")
    for key, (truth_lines, predicted, hits, per_repository) in totals.items():
        if not per_repository:
            continue
        macro = [sum(values) / len(per_repository) for values in zip(*per_repository, strict=True)]
        print(
            f"{key}all: lines {truth_lines}, micro precision {hits / max(predicted, 1):.4f} recall {hits / max(truth_lines, 1):.4f}; "
            f"mean over the {len(per_repository)} repositories with findings: precision {macro[0]:.4f} recall {macro[1]:.4f}"
        )


def bench_check(runs: int) -> None:
    """`bundler check` on a project `bundler new` makes (its own paths audit included)."""
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch) / "example"
        made = subprocess.run(
            [sys.executable, "-m", "bundler", "new", str(project), "--no-input"], capture_output=True, text=True, check=False
        )
        if made.returncode != 0:
            print(f"bundler check: not measured, `bundler new` failed: {made.stderr.strip()[:200]}")
            return
        command = [sys.executable, "-m", "bundler", "check", str(project)]
        elapsed = best_of(runs, lambda: subprocess.run(command, capture_output=True, check=False))
        code = subprocess.run(command, capture_output=True, check=False).returncode
        print(f"bundler check on the example project: {elapsed:.2f} s (exit {code}; goal <= 2 s)")


class _Before:
    """The scan of another bundler checkout (``--before DIR``), run in its own interpreter."""

    def __init__(self, old: Path) -> None:
        self.old = old

    def scan(self, checkout: Path):
        probe = (
            "import json, sys; from bundler.portability import scan as s; "
            "print(json.dumps([[f.file, f.line] for f in s.scan(sys.argv[1]).failing]))"
        )
        output = subprocess.run(
            [sys.executable, "-c", probe, str(checkout)],
            cwd=self.old,
            env={**os.environ, "PYTHONPATH": str(self.old)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        failing = [type("F", (), {"file": f, "line": n}) for f, n in json.loads(output)]
        return type("R", (), {"failing": failing})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, help="folder holding one checkout per label file")
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--before", type=Path, help="another bundler checkout whose scan gives the figures before")
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--megabytes", type=int, default=500)
    parser.add_argument("--tree", type=Path, default=Path(tempfile.gettempdir()) / "bundler-bench-paths")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-throughput", action="store_true")
    args = parser.parse_args()
    if args.corpus:
        bench_corpus(args.corpus, args.only, args.before)
    if not args.no_throughput:
        marker, wanted = args.tree / ".complete", {"files": args.files, "megabytes": args.megabytes}
        if not marker.exists() or json.loads(marker.read_text()) != wanted:
            start = time.perf_counter()
            generate_tree(args.tree, args.files, args.megabytes)
            print(f"generated {args.tree} in {time.perf_counter() - start:.1f} s")
        bench_scan(args.tree, args.runs)
        bench_check(args.runs)


if __name__ == "__main__":
    main()
