"""The Markdown summary printed at the end of a run: paste it into a ticket or a chat as it is."""

from __future__ import annotations

from bdiag.html import reason


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(report: dict) -> str:
    stages = report.get("stages", [])
    first = next((stage for stage in stages if stage["status"] == "fail"), None)
    verdict = f"first failing stage {first['number']} {first['name']}" if first else "no stage failed"
    order = (report.get("order") or {}).get("line", "no plan.toml and no GPU compared")
    lines = [
        f"## Bundle diagnostics: {verdict} (exit {report.get('exit_code')})",
        "",
        f"- backend {report.get('backend')}, Python {report.get('python')}, {report.get('seconds')} s",
        f"- order versus received: {_cell(order)}",
        "",
        "| # | stage | status | seconds | key figure / reason |",
        "|---:|---|---|---:|---|",
    ]
    for stage in stages:
        shown = stage.get("summary", "") if stage["status"] == "pass" else reason(stage)
        status = stage["status"].upper() if stage["status"] in ("fail", "warn") else stage["status"]
        lines.append(f"| {stage['number']} | {stage['name']} | {status} | {stage.get('seconds', 0):.2f} | {_cell(shown)} |")
    hinted = [stage for stage in stages if stage["status"] in ("fail", "warn") and stage.get("hint")]
    if hinted:
        lines += ["", "**Hints**", ""]
        lines += [f"- **{stage['number']} {stage['name']}** ({stage['status']}): {_cell(stage['hint'])}" for stage in hinted]
    return "\n".join(lines) + "\n"
