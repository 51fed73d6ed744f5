"""The report people read (--report FILE.html): one self-contained page rendered from the JSON
report, so both say the same. No external assets: inline CSS, bars drawn as inline SVG."""

from __future__ import annotations

from html import escape

COLOURS = {"pass": "#1a7f37", "warn": "#b35900", "fail": "#c62828", "skip": "#6e7781"}
TINTS = {"pass": "#eaf5ec", "warn": "#fff4e5", "fail": "#fdecea", "skip": "#f3f4f6"}
BAR_WIDTH, BAR_HEIGHT = 300, 16
STYLE = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1100px;color:#1f2328;padding:0 16px}
h1{font-size:22px;margin:0 0 6px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.verdict,.order{font-size:16px;font-weight:600;padding:8px 12px;border-radius:6px;margin:8px 0;border-left:6px solid}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #e5e7eb;vertical-align:top}
th{background:#f6f8fa;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.badge{display:inline-block;min-width:40px;text-align:center;color:#fff;border-radius:4px;padding:1px 6px;font-weight:700;font-size:12px}
.meta{color:#57606a;margin:4px 0}.meta b{color:#1f2328;font-weight:600}
.hint{margin:2px 0 0;color:#1f2328}.messages{margin:4px 0 0 18px;padding:0;color:#57606a}
.figure td{border-bottom:1px dashed #eef0f2}svg text{font:11px system-ui,sans-serif}
"""


def _box(status: str) -> str:
    return f"background:{TINTS.get(status, '#fff')};border-color:{COLOURS.get(status, COLOURS['skip'])}"


def status_badge(status: str) -> str:
    return f'<span class="badge" style="background:{COLOURS.get(status, "#6e7781")}">{escape(status.upper())}</span>'


def bar(figure: dict) -> str:
    """measured/reference as a bar; the thin line marks the reference (100 %)."""
    fraction = max(0.0, float(figure.get("fraction") or 0.0))
    scale = min(max(1.25, fraction * 1.05), 3.0)
    filled = min(fraction, scale) / scale * BAR_WIDTH
    reference = BAR_WIDTH / scale
    colour = COLOURS.get(str(figure.get("status")), COLOURS["skip"])
    label = f"{fraction:.0%}" + (" ›" if fraction > scale else "")
    return (
        f'<svg width="{BAR_WIDTH + 72}" height="{BAR_HEIGHT}" role="img" aria-label="{escape(label)} of the reference">'
        f'<rect x="0" y="2" width="{BAR_WIDTH}" height="{BAR_HEIGHT - 4}" fill="#eef0f2" rx="2"/>'
        f'<rect class="bar" x="0" y="2" width="{filled:.1f}" height="{BAR_HEIGHT - 4}" fill="{colour}" rx="2"/>'
        f'<line x1="{reference:.1f}" x2="{reference:.1f}" y1="0" y2="{BAR_HEIGHT}" stroke="#1f2328" stroke-width="1.5"/>'
        f'<text x="{BAR_WIDTH + 6}" y="{BAR_HEIGHT - 4}">{escape(label)}</text></svg>'
    )


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}".rstrip("0").rstrip(".")


def figures_section(stages: list) -> str:
    rows = []
    for stage in stages:
        for figure in stage.get("figures") or []:
            unit = escape(figure.get("unit", ""))
            rows.append(
                f'<tr class="figure"><td>{stage["number"]} {escape(stage["name"])}</td><td>{escape(figure["label"])}</td>'
                f'<td class="num">{_number(figure["measured"])} of {_number(figure["reference"])} {unit}</td><td>{bar(figure)}</td></tr>'
            )
    if not rows:
        return "<p>No figure was measured against a reference in this run (on CPU there is no datasheet).</p>"
    head = "<tr><th>stage</th><th>figure</th><th>measured of reference</th><th>against the reference (line = 100 %)</th></tr>"
    return f'<table class="figures">{head}{"".join(rows)}</table>'


def reason(stage: dict) -> str:
    prefix = f"{stage['status']}: "
    found = next((message[len(prefix) :] for message in stage.get("messages", []) if message.startswith(prefix)), "")
    return found or stage.get("summary", "")


def stages_section(stages: list) -> str:
    rows = []
    for stage in stages:
        shown = stage.get("summary", "") if stage["status"] == "pass" else reason(stage)
        rows.append(
            f'<tr class="stage status-{escape(stage["status"])}" style="background:{TINTS.get(stage["status"], "#fff")}">'
            f'<td class="num">{stage["number"]}</td><td>{escape(stage["name"])}</td><td>{status_badge(stage["status"])}</td>'
            f'<td class="num">{stage.get("seconds", 0):.2f}</td><td>{escape(shown)}</td></tr>'
        )
    head = "<tr><th>#</th><th>stage</th><th>status</th><th>seconds</th><th>key figure / reason</th></tr>"
    return f'<table class="stages">{head}{"".join(rows)}</table>'


def hints_section(stages: list) -> str:
    items = []
    for stage in stages:
        if stage["status"] not in ("fail", "warn"):
            continue
        judged = [message for message in stage.get("messages", []) if message.startswith(("fail: ", "warn: "))]
        listed = "".join(f"<li>{escape(message)}</li>" for message in judged)
        items.append(
            f'<li class="hint-{escape(stage["status"])}">{status_badge(stage["status"])} <b>{stage["number"]} {escape(stage["name"])}</b>'
            f'<ul class="messages">{listed}</ul><p class="hint"><b>Hint:</b> {escape(stage.get("hint") or "")}</p></li>'
        )
    return f'<ol class="hints">{"".join(items)}</ol>' if items else "<p>No stage warned or failed: nothing to do before the run.</p>"


def render(report: dict) -> str:
    stages = report.get("stages", [])
    first = next((stage for stage in stages if stage["status"] == "fail"), None)
    verdict_status = "fail" if first else ("warn" if any(stage["status"] == "warn" for stage in stages) else "pass")
    if first:
        verdict = f"First failing stage: {first['number']} {first['name']} — exit {report.get('exit_code')}"
    else:
        verdict = f"No stage failed — exit {report.get('exit_code')}"
    order = report.get("order") or {"line": "no plan.toml and no GPU compared", "verdict": "skip"}
    order_status = order.get("verdict", "skip")
    meta = [
        ("backend", f"{report.get('backend')} (from {report.get('backend_source')})"),
        ("python", report.get("python")),
        ("platform", report.get("platform")),
        ("bundle", report.get("bundle") or "none found"),
        ("started", report.get("started")),
        ("seconds", report.get("seconds")),
    ]
    meta_html = " · ".join(f"<b>{escape(name)}</b> {escape(str(value))}" for name, value in meta)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Bundle diagnostics — {escape(verdict)}</title>'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><style>{STYLE}</style></head><body>'
        f'<h1>Bundle diagnostics</h1><p class="meta">{meta_html}</p>'
        f'<p class="verdict verdict-{verdict_status}" style="{_box(verdict_status)}">{escape(verdict)}</p>'
        f'<p class="order order-{escape(order_status)}" style="{_box(order_status)}">'
        f"Order versus received: {escape(order.get('line', ''))}</p>"
        f"<h2>Stages</h2>{stages_section(stages)}"
        f"<h2>Figures against the datasheet and the limits</h2>{figures_section(stages)}"
        f"<h2>Hints</h2>{hints_section(stages)}"
        f'<p class="meta">diagnostics version {escape(str(report.get("diagnostics_version")))}; the JSON report (--json) holds every '
        "measured value.</p></body></html>\n"
    )
