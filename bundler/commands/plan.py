"""`bundler plan [PROJECT]`: order summary, schedule vs window, planned vs actual, cost per delivery."""

from __future__ import annotations

from pathlib import Path

import typer

from bundler.clitools import JsonFlag, ProjectArg, handles_errors
from bundler.errors import FindingsError
from bundler.output import Output


def register(app: typer.Typer) -> None:
    @app.command("plan")
    @handles_errors
    def plan_command(project: ProjectArg = None, json_output: JsonFlag = False) -> None:
        """Check the campaign in plan.toml: what you order, whether the steps fit the window, what a delivery costs."""
        from bundler import plan as p
        from bundler.runs import collect_runs

        out = Output(json_output)
        project = project or Path.cwd()
        plan = p.load_plan(project)
        sched = p.schedule(plan)
        rows = collect_runs(project)

        _order(out, plan)
        _schedule(out, plan, sched)
        comparison = p.planned_vs_actual(plan, rows) if rows else []
        cost = p.delivery_cost(plan, rows) if rows else None
        if rows:
            _actuals(out, comparison, cost)
        else:
            out.say("No runs yet: planned versus actual and the cost per delivery come after the first run.")
        out.result(
            {
                "ok": sched.fits,
                "order": {
                    "card": plan.card.name,
                    "days": plan.days,
                    "lots": plan.lots,
                    "cards_per_lot": plan.card.cards_per_lot,
                    "total_cards": plan.total_cards,
                    "lot_price_usd": p.money(plan.lot_price),
                    "total_usd": p.money(plan.total),
                    "catalog": str(plan.catalog_path),
                },
                "schedule": {
                    "window_hours": sched.window,
                    "busy_hours_by_lot": {str(lot): p.hours(h) for lot, h in sched.busy_by_lot.items()},
                    "longest_hours": p.hours(sched.longest),
                    "uncommitted_hours": p.hours(sched.slack) if sched.fits else "0",
                    "exceeds_by_hours": p.hours(-sched.slack) if not sched.fits else "0",
                    "human_hours": p.hours(sched.human_hours),
                    "fits": sched.fits,
                    "suggestion": None if sched.fits else p.suggestion(plan, sched),
                },
                "planned_vs_actual": [{k: (p.hours(v) if k.endswith("hours") else v) for k, v in line.items()} for line in comparison],
                "cost": None if cost is None else {k: (p.money(v) if k.endswith("usd") and v is not None else v) for k, v in cost.items()},
            }
        )
        if not sched.fits:
            advice = p.suggestion(plan, sched)
            out.say(
                f"Error: the machine-busy steps take {p.hours(sched.longest)} h, {p.hours(-sched.slack)} h more than the "
                f"{plan.days}-day window ({sched.window} h). Hint: {advice[0].upper()}{advice[1:]} (edit {plan.path})."
            )
            raise typer.Exit(FindingsError.exit_code)


def _order(out: Output, plan) -> None:
    from bundler.plan import money

    lot = "lot of two cards" if plan.card.cards_per_lot == 2 else f"lot of {plan.card.cards_per_lot} cards" if plan.card.cards_per_lot > 2 else "lot of one card"
    out.table(
        "Order summary",
        ["model", "duration", "lots", "total cards", "price per lot", "total"],
        [[plan.card.name, f"{plan.days} days", plan.lots, plan.total_cards, f"{money(plan.lot_price)} USD ({lot})", f"{money(plan.total)} USD"]],
    )
    out.say(f"Total = price of one lot for {plan.days} days x {plan.lots} lot(s); the lot price already includes its cards. Prices from {plan.catalog_path}.")
    if plan.lots > 1:
        out.say("Several lots help independent variants; they do not shorten one run nor pool memory.")


def _schedule(out: Output, plan, sched) -> None:
    from bundler.plan import hours

    out.table(
        f"Machine-busy steps ({plan.days}-day window = {sched.window} h)",
        ["step", "hours", "lot", "priority"],
        [[s.name, hours(s.hours), s.lot if s.machine else "human", s.priority] for s in plan.steps],
    )
    for lot, busy in sched.busy_by_lot.items():
        if sched.fits:
            out.say(f"Lot {lot}: {hours(busy)} h busy in the {sched.window} h window leaves {hours(sched.window - busy)} h uncommitted.")
        elif busy > sched.window:
            out.say(f"Lot {lot}: {hours(busy)} h exceeds the {plan.days}-day window by {hours(busy - sched.window)} h.", style="red")


def _actuals(out: Output, comparison, cost) -> None:
    from bundler.plan import hours, money

    if comparison:
        out.table(
            "Planned versus actual (the plan is never rewritten)",
            ["step", "planned h", "actual h", "deviation h", "runs"],
            [[c["step"], hours(c["planned_hours"]), hours(c["actual_hours"]), hours(c["deviation_hours"]), ", ".join(c["runs"]) or "-"] for c in comparison],
        )
    spent = f"spent {money(cost['spent_usd'])} USD (package {money(cost['package_usd'])} USD)"
    if cost["cost_per_delivery_usd"] is None:
        out.say(f"Cost per accepted delivery: undefined, 0 accepted deliveries; {spent}.", style="yellow")
        for reason in cost["reasons"]:
            out.say(f"  {reason}")
    else:
        out.say(
            f"Cost per accepted delivery: {money(cost['cost_per_delivery_usd'])} USD "
            f"({money(cost['package_usd'])} USD / {cost['deliveries']} delivered corpus(es), {cost['accepted_runs']} accepted run(s)); {spent}."
        )
