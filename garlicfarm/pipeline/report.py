"""``report.html``: one self-contained page (charts are PNGs inlined as data URIs; no scripts, no CDN).

Built from small, already aggregated data (:class:`ReportData`), so it needs no Spark: the job collects
what the page shows and hands it over.
"""

from __future__ import annotations

import base64
import datetime
import html
import io
from collections.abc import Sequence

import attrs
from matplotlib.figure import Figure

MAX_HEALTH_ROWS = 500
MAX_STACKED_FARMS = 11
MAX_CHART_MEMBERS = 30
#: thresholds that colour a member's row (and bar) red or yellow
BAD_AVAILABILITY, WARN_AVAILABILITY = 0.95, 0.99
BAD_UNHEALTHY, WARN_UNHEALTHY = 0.05, 0.01


@attrs.frozen
class MemberSummary:
    """One member over the whole archive (the page's table; the Parquet table has every day)."""

    cluster: str
    id: int
    days: int
    reports: int
    gaps: int
    missed_reports: int
    longest_gap_s: float
    unhealthy_reports: int
    restarts: int
    uptime_max_ms: int
    bandwidth_p50: int  #: median of the daily medians, bytes/s
    tunnels_p50: int
    publisher_windows: int

    @property
    def availability(self) -> float:
        """The share of expected reports that arrived (see health.py)."""
        return self.reports / max(1, self.reports + self.missed_reports)


@attrs.frozen
class ReportData:
    title: str
    summary: Sequence[tuple[str, str]]
    #: per plotted farm: (window start in ms, publisher or None) in time order
    timelines: dict[str, list[tuple[int, int | None]]]
    farms_total: int
    #: (day, cluster, publisher changes)
    changes_per_day: Sequence[tuple[datetime.date, str, int]]
    members: Sequence[MemberSummary]
    #: (kind, count) and (kind, reason, count), most frequent first
    reject_kinds: Sequence[tuple[str, int]]
    reject_reasons: Sequence[tuple[str, str, int]]


def _png(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _utc(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)


def timeline_chart(timelines: dict[str, list[tuple[int, int | None]]]) -> str | None:
    """One strip per farm: the publisher's id over time (0: nobody eligible)."""
    if not timelines:
        return None
    farms = sorted(timelines)
    figure = Figure(figsize=(11, 0.3 + 1.25 * len(farms)))
    axes = figure.subplots(len(farms), 1, sharex=True, squeeze=False)[:, 0]
    for ax, farm in zip(axes, farms, strict=True):
        points = timelines[farm]
        times = [_utc(t) for t, _ in points]
        ids = [p if p is not None else 0 for _, p in points]
        ax.step(times, ids, where="post", linewidth=0.9, color="#1f5fa8")
        nobody = [t for t, p in zip(times, ids, strict=True) if p == 0]
        ax.plot(nobody, [0] * len(nobody), "|", color="#c0392b", markersize=6)
        ax.set_ylabel(farm, rotation=0, ha="right", va="center", fontsize=8)
        top = max(ids, default=1)
        ax.set_ylim(-0.5, top + 0.5)
        ax.set_yticks(range(0, top + 1, max(1, top // 4)))
        ax.tick_params(labelsize=7)
        ax.grid(axis="y", alpha=0.3)
    axes[-1].set_xlabel("log time (UTC); red ticks: no eligible publisher")
    figure.autofmt_xdate()
    return _png(figure)


def changes_chart(changes: Sequence[tuple[datetime.date, str, int]]) -> str | None:
    """Publisher changes per day, stacked by farm (the busiest farms by name, the rest together)."""
    if not changes:
        return None
    days = sorted({d for d, _, _ in changes})
    totals: dict[str, int] = {}
    for _, farm, n in changes:
        totals[farm] = totals.get(farm, 0) + n
    shown = sorted(sorted(totals, key=lambda f: -totals[f])[:MAX_STACKED_FARMS])
    series: dict[str, list[int]] = {farm: [0] * len(days) for farm in [*shown, "other farms"]}
    position = {d: i for i, d in enumerate(days)}
    for day, farm, n in changes:
        series[farm if farm in series else "other farms"][position[day]] += n
    if not any(series["other farms"]):
        del series["other farms"]
    figure = Figure(figsize=(11, 3.2))
    ax = figure.subplots()
    bottom = [0] * len(days)
    x = list(range(len(days)))
    for farm, values in series.items():
        colour = "#b0b0b0" if farm == "other farms" else None  # the rest, in grey
        ax.bar(x, values, bottom=bottom, label=farm, width=0.8, color=colour)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    step = max(1, len(days) // 20)
    ax.set_xticks(x[::step], [d.isoformat() for d in days][::step], rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("publisher changes")
    ax.legend(fontsize=7, ncol=4)
    ax.grid(axis="y", alpha=0.3)
    return _png(figure)


def availability_chart(members: Sequence[MemberSummary]) -> str:
    """The least available members: a bar each, coloured as their table rows."""
    figure = Figure(figsize=(11, 0.6 + 0.22 * len(members)))
    ax = figure.subplots()
    labels = [f"{m.cluster} #{m.id}" for m in members]
    values = [100 * m.availability for m in members]
    colours = [
        "#c0392b"
        if m.availability < BAD_AVAILABILITY
        else "#e6a700"
        if m.availability < WARN_AVAILABILITY
        else "#2e8b57"
        for m in members
    ]
    y = list(range(len(members)))
    ax.barh(y, values, color=colours)
    ax.set_yticks(y, labels, fontsize=7)
    ax.invert_yaxis()
    low = min(values, default=100.0)
    ax.set_xlim(max(0.0, min(90.0, low - 2)), 100)
    ax.set_xlabel(f"reports that arrived, % (the {len(members)} least available members)")
    ax.grid(axis="x", alpha=0.3)
    return _png(figure)


_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 12px; }
th, td { padding: 2px 8px; border-bottom: 1px solid #eee; text-align: right; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; white-space: nowrap; }
.bad { background: #fde2e0; } .warn { background: #fff4cf; } .note { color: #666; font-size: 12px; }
img { max-width: 100%; }
"""


def _table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], left: int = 1, classes: Sequence[str] = ()
) -> str:
    head = "".join(
        f'<th class="{"l" if i < left else ""}">{html.escape(h)}</th>' for i, h in enumerate(headers)
    )
    body = []
    for n, row in enumerate(rows):
        cls = f' class="{classes[n]}"' if n < len(classes) and classes[n] else ""
        cells = "".join(
            f'<td class="{"l" if i < left else ""}">{html.escape(c)}</td>' for i, c in enumerate(row)
        )
        body.append(f"<tr{cls}>{cells}</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _member_rows(members: Sequence[MemberSummary]) -> tuple[list[list[str]], list[str]]:
    rows, classes = [], []
    for m in members[:MAX_HEALTH_ROWS]:
        rows.append(
            [
                m.cluster,
                str(m.id),
                str(m.days),
                f"{m.reports:,}",
                f"{100 * m.availability:.2f}",
                str(m.gaps),
                str(m.missed_reports),
                f"{m.longest_gap_s / 60:.1f}",
                f"{100 * m.unhealthy_reports / max(1, m.reports):.1f}",
                str(m.restarts),
                f"{m.uptime_max_ms / 3_600_000:.1f}",
                f"{m.bandwidth_p50 / 1024:,.0f}",
                f"{m.tunnels_p50:,}",
                str(m.publisher_windows),
            ]
        )
        unhealthy = m.unhealthy_reports / max(1, m.reports)
        bad = m.availability < BAD_AVAILABILITY or unhealthy > BAD_UNHEALTHY
        warn = m.availability < WARN_AVAILABILITY or unhealthy > WARN_UNHEALTHY
        classes.append("bad" if bad else "warn" if warn else "")
    return rows, classes


def render(data: ReportData) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(data.title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(data.title)}</h1>",
        _table(["", ""], [list(pair) for pair in data.summary]),
        "<h2>Publisher timeline</h2>",
    ]
    chart = timeline_chart(data.timelines)
    if chart is None:
        parts.append("<p>No valid status records: no timeline.</p>")
    else:
        if data.farms_total > len(data.timelines):
            parts.append(
                f'<p class="note">{len(data.timelines)} of {data.farms_total} farms drawn; '
                "publisher_timeline/ holds them all.</p>"
            )
        parts.append(f'<img alt="publisher per farm over time" src="{chart}">')
    parts.append("<h2>Publisher changes per day</h2>")
    chart = changes_chart(data.changes_per_day)
    total = sum(n for _, _, n in data.changes_per_day)
    parts.append(f"<p>{total:,} publisher changes in all.</p>")
    if chart is not None:
        parts.append(f'<img alt="publisher changes per day" src="{chart}">')
    parts.append("<h2>Member health</h2>")
    if data.members:
        worst = sorted(data.members, key=lambda m: (m.availability, m.cluster, m.id))
        chart = availability_chart(worst[:MAX_CHART_MEMBERS])
        parts.append(f'<img alt="least available members" src="{chart}">')
        rows, classes = _member_rows(worst)
        parts.append(
            '<p class="note">Over the whole archive, one row per member (member_health/ has one per day). '
            "Available: the share of expected reports that arrived. Gap: reports further apart than 1.5 "
            "intervals. Unhealthy: router in an error state. Red: under 95% available or over 5% unhealthy; "
            "yellow: under 99% or over 1%. Worst first.</p>"
        )
        headers = [
            "farm",
            "member",
            "days",
            "reports",
            "available %",
            "gaps",
            "missed",
            "longest gap (min)",
            "unhealthy %",
            "restarts",
            "max uptime (h)",
            "bandwidth p50 (KB/s)",
            "tunnels p50",
            "publisher windows",
        ]
        parts.append(_table(headers, rows, classes=classes))
        if len(data.members) > MAX_HEALTH_ROWS:
            parts.append(f'<p class="note">First {MAX_HEALTH_ROWS} of {len(data.members)} members.</p>')
    else:
        parts.append("<p>No members.</p>")
    parts.append("<h2>Rejected lines</h2>")
    rejected = sum(n for _, n in data.reject_kinds)
    if rejected:
        parts.append(f"<p>{rejected:,} lines set aside (rejects/ holds each with its reason).</p>")
        parts.append(_table(["kind", "lines"], [[k, f"{n:,}"] for k, n in data.reject_kinds]))
        parts.append("<p>Most frequent reasons:</p>")
        parts.append(
            _table(["kind", "reason", "lines"], [[k, r, f"{n:,}"] for k, r, n in data.reject_reasons], left=2)
        )
    else:
        parts.append("<p>None: every line was a valid status record.</p>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
