"""``relay import``: a conversation per row of a CSV file, checked, then started in
batches (:mod:`relay.engine.verbs.campaigns` holds the rows, the plan and the run)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from relay.engine.runtime import Context
from relay.engine.verbs import campaigns, ladders
from relay.engine.verbs.new_conversation import clean_campaign, refuse_empty


def import_csv(
    rt: Context,
    path: str | Path,
    objective: str,
    todos: Sequence[str],
    *,
    campaign: str | None = None,
    dry_run: bool = False,
    heartbeat: str | None = None,
    max_followups: int | None = None,
    channel: str | None = None,
    agent: str | None = None,
    window: str | None = None,
    fallback_after: str | None = None,
    on_rows: Callable[[int], None] | None = None,
    on_total: Callable[[int], None] | None = None,
) -> campaigns.ImportReport:
    """A conversation per CSV row; the first turns are left to the daemon.
    ``on_total`` hears the row count once the file is checked; ``on_rows`` how many
    more rows were handled."""
    refuse_empty(heartbeat, channel, agent, window)  # before any row is read
    if fallback_after is not None:  # a bad value refuses the import, not each row
        ladders.fallback_seconds(fallback_after, rt.config.settings.defaults.fallback_after)
    options = campaigns.Options(
        objective, tuple(todos), clean_campaign(campaign), heartbeat, max_followups, channel,
        agent, window, fallback_after,
    )  # fmt: skip
    rows = campaigns.read_rows(Path(path))
    planned = campaigns.plan(rt, rows, options)
    if on_total is not None:
        on_total(len(planned))
    return campaigns.run(rt, planned, campaign=options.campaign, dry_run=dry_run, progress=on_rows)
