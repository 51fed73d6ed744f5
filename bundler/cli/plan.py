"""`bundler plan [PROJECT]`: order summary, schedule vs window, planned vs actual, cost per delivery."""

from __future__ import annotations

from pathlib import Path

import typer

from bundler.cli.options import JsonFlag, ProjectArg, handles_errors
from bundler.cli.output import Output
from bundler.errors import FindingsError


def register(app: typer.Typer) -> None:
    @app.command("plan")
    @handles_errors
    def plan_command(project: ProjectArg = None, json_output: JsonFlag = False) -> None:
        """Check the campaign in plan.toml: what you order, whether the steps fit the window, what a delivery costs."""
        from bundler.evidence import campaign as p
        from bundler.evidence.runs import collect_runs

        out = Output(json_output)
        project = project or Path.cwd()
        campaign = p.load_campaign(project)
        sched = p.schedule(campaign)
        rows = collect_runs(project)

        _order(out, campaign)
        _schedule(out, campaign, sched)
        comparison = p.planned_vs_actual(campaign, rows) if rows else []
        cost = p.delivery_cost(campaign, rows) if rows else None
        if rows:
            _actuals(out, comparison, cost)
        else:
            out.say("No runs yet: planned versus actual and the cost per delivery come after the first run.")
        document = _as_json(p, campaign, sched, comparison, cost)
        if not sched.fits:
            advice = p.suggestion(campaign, sched)
            raise FindingsError(
                f"the machine-busy steps take {p.hours(sched.longest)} h, {p.hours(-sched.slack)} h more than the "
                f"{campaign.days}-day window ({sched.window} h).",
                hint=f"{advice[0].upper()}{advice[1:]} (edit {campaign.path}).",
                path=campaign.path,
                result=document,
            )
        out.result(document)


def _as_json(p, campaign, sched, comparison, cost) -> dict:
    return {
        "ok": sched.fits,
        "order": {
            "card": campaign.card.name,
            "days": campaign.days,
            "lots": campaign.lots,
            "cards_per_lot": campaign.card.cards_per_lot,
            "total_cards": campaign.total_cards,
            "lot_price_usd": p.money(campaign.lot_price),
            "total_usd": p.money(campaign.total),
            "catalog": str(campaign.catalog_path),
        },
        "schedule": {
            "window_hours": sched.window,
            "busy_hours_by_lot": {str(lot): p.hours(h) for lot, h in sched.busy_by_lot.items()},
            "longest_hours": p.hours(sched.longest),
            "uncommitted_hours": p.hours(sched.slack) if sched.fits else "0",
            "exceeds_by_hours": p.hours(-sched.slack) if not sched.fits else "0",
            "human_hours": p.hours(sched.human_hours),
            "fits": sched.fits,
            "suggestion": None if sched.fits else p.suggestion(campaign, sched),
        },
        "planned_vs_actual": [{k: (p.hours(v) if k.endswith("hours") else v) for k, v in line.items()} for line in comparison],
        "cost": None if cost is None else {k: (p.money(v) if k.endswith("usd") and v is not None else v) for k, v in cost.items()},
    }


def _order(out: Output, campaign) -> None:
    from bundler.evidence.campaign import money

    lot = (
        "lot of two cards"
        if campaign.card.cards_per_lot == 2
        else f"lot of {campaign.card.cards_per_lot} cards"
        if campaign.card.cards_per_lot > 2
        else "lot of one card"
    )
    out.table(
        "Order summary",
        ["model", "duration", "lots", "total cards", "price per lot", "total"],
        [
            [
                campaign.card.name,
                f"{campaign.days} days",
                campaign.lots,
                campaign.total_cards,
                f"{money(campaign.lot_price)} USD ({lot})",
                f"{money(campaign.total)} USD",
            ]
        ],
    )
    out.say(
        f"Total = price of one lot for {campaign.days} days x {campaign.lots} lot(s); the lot price already includes its cards. Prices "
        f"from {campaign.catalog_path}."
    )
    if campaign.lots > 1:
        out.say("Several lots help independent variants; they do not shorten one run nor pool memory.")


def _schedule(out: Output, campaign, sched) -> None:
    from bundler.evidence.campaign import hours

    out.table(
        f"Machine-busy steps ({campaign.days}-day window = {sched.window} h)",
        ["step", "hours", "lot", "priority"],
        [[s.name, hours(s.hours), s.lot if s.machine else "human", s.priority] for s in campaign.steps],
    )
    for lot, busy in sched.busy_by_lot.items():
        if sched.fits:
            out.say(f"Lot {lot}: {hours(busy)} h busy in the {sched.window} h window leaves {hours(sched.window - busy)} h uncommitted.")
        elif busy > sched.window:
            out.say(f"Lot {lot}: {hours(busy)} h exceeds the {campaign.days}-day window by {hours(busy - sched.window)} h.", style="red")


def _actuals(out: Output, comparison, cost) -> None:
    from bundler.evidence.campaign import hours, money

    if comparison:
        out.table(
            "Planned versus actual (the campaign is never rewritten)",
            ["step", "planned h", "actual h", "deviation h", "runs"],
            [
                [c["step"], hours(c["planned_hours"]), hours(c["actual_hours"]), hours(c["deviation_hours"]), ", ".join(c["runs"]) or "-"]
                for c in comparison
            ],
        )
    spent = f"spent {money(cost['spent_usd'])} USD (package {money(cost['package_usd'])} USD)"
    if cost["cost_per_delivery_usd"] is None:
        out.say(f"Cost per accepted delivery: undefined, 0 accepted deliveries; {spent}.", style="yellow")
        for reason in cost["reasons"]:
            out.say(f"  {reason}")
    else:
        out.say(
            f"Cost per accepted delivery: {money(cost['cost_per_delivery_usd'])} USD "
            f"({money(cost['package_usd'])} USD / {cost['deliveries']} delivered corpus(es), {cost['accepted_runs']} accepted run(s)); "
            f"{spent}."
        )
