"""The results of a scenario as Python objects: summary.json as a dict, its statistics and the
recorded series as pandas DataFrames."""

from __future__ import annotations

import copy
import io
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from . import _native

if TYPE_CHECKING:
    import pandas

__all__ = ["Summary", "STATISTICS"]

#: The statistics of each measurement, one row each in :attr:`Summary.flows`.
STATISTICS = ("mean", "min", "max", "std", "ci95", "n")

#: The measurements of a group that have statistics, one column each in :attr:`Summary.flows`.
_MEASURES = ("throughput_bps", "aggregate_bps", "goodput_bps", "jitter_ms")

#: runs.csv's columns that are empty where a flow has no value (read as NaN).
_OPTIONAL_RUN_COLUMNS = (
    "target_bps",
    "jitter_ms",
    "timeouts",
    "fast_recoveries",
    "delay_mean_ms",
    "delay_p50_ms",
    "delay_p95_ms",
    "delay_p99_ms",
    "rtt_mean_ms",
    "rtt_p50_ms",
    "rtt_p95_ms",
    "rtt_p99_ms",
    "queue_sojourn_mean_ms",
    "queue_sojourn_p50_ms",
    "queue_sojourn_p95_ms",
    "queue_sojourn_p99_ms",
    "messages_delivered",
    "messages_expired",
)

#: The sojourn statistics of a queue, one column each in :attr:`Summary.queues` (``sojourn_*_ms``).
_SOJOURN = ("mean", "p50", "p95", "p99")


class Summary:
    """The results of a scenario: what ``qstp run`` writes, as Python objects.

    ``to_dict()`` is summary.json's content; :attr:`flows` its statistics as a DataFrame;
    :attr:`runs` every run's per-flow results (runs.csv); :meth:`series` the recorded time series
    in long format (series.csv). Results from :func:`qstp.run` and from :func:`qstp.load` are
    alike, except that a run's in-memory results are written nowhere unless asked
    (``out=`` or :meth:`write`).
    """

    def __init__(self, results: _native.Results, out: Optional[Path] = None) -> None:
        self._results = results
        self._json = results.summary_json()
        self._dict: dict[str, Any] = json.loads(self._json)
        self._series: Optional[pandas.DataFrame] = None
        #: The results folder these results were written to or read from, if any.
        self.out: Optional[Path] = out

    def __repr__(self) -> str:
        d = self._dict
        where = f", out={str(self.out)!r}" if self.out is not None else ""
        return (
            f"<qstp.Summary {d['scenario']!r}: {len(d['points'])} point(s) x "
            f"{d['runs']} run(s){where}>"
        )

    def to_dict(self) -> dict[str, Any]:
        """summary.json's content (a copy: changing it changes nothing here)."""
        return copy.deepcopy(self._dict)

    def to_json(self) -> str:
        """summary.json's text, byte for byte as ``qstp run`` writes it."""
        return self._json

    def text_table(self) -> str:
        """The table ``qstp run`` prints."""
        return self._results.text_table()

    @property
    def scenario(self) -> str:
        """The scenario's name."""
        return self._dict["scenario"]

    @property
    def points(self) -> list[dict[str, Any]]:
        """The swept values of each point, in point order (``{}`` for an unswept scenario)."""
        return [copy.deepcopy(p["params"]) for p in self._dict["points"]]

    @property
    def flows(self) -> pandas.DataFrame:
        """One row per point, group and statistic (mean, min, max, std, ci95, n; ci95 is NaN for
        one run, where it is undefined).

        Columns: ``point``, then one per swept key (its value at the point), ``group``,
        ``protocol``, ``flows``, ``target_bps``, ``statistic``, then the measurements
        ``throughput_bps`` (per flow), ``aggregate_bps`` (the group's total per run),
        ``goodput_bps``, ``jitter_ms`` (NaN where there is none), then the per-flow results
        summary.json keeps under a group's ``metrics`` (one-way delay after the warm-up:
        ``delay_mean_ms``, ``delay_p50_ms``, ``delay_p95_ms``, ``delay_p99_ms``; the sender's RTT
        measurements, ``rtt_mean_ms`` to ``rtt_p99_ms``; NaN where a group has none), and the group's ``fairness`` (Jain's index) and ``retransmitted`` share, the
        same on each of its statistic rows.
        """
        import pandas

        keys: list[str] = []
        metrics: list[str] = []
        for p in self._dict["points"]:
            keys.extend(k for k in p["params"] if k not in keys)
            for g in p["flows"]:
                metrics.extend(m for m in g.get("metrics") or {} if m not in metrics)
        rows = []
        for i, p in enumerate(self._dict["points"]):
            for g in p["flows"]:
                for stat in STATISTICS:
                    row: dict[str, Any] = {"point": i}
                    row.update({k: p["params"].get(k) for k in keys})
                    row.update(
                        group=g["group"],
                        protocol=g["protocol"],
                        flows=g["flows"],
                        target_bps=g["target_bps"],
                        statistic=stat,
                    )
                    for m in _MEASURES:
                        stats = g[m]
                        row[m] = float("nan") if stats is None else stats[stat]
                    for m in metrics:
                        stats = (g.get("metrics") or {}).get(m)
                        value = None if stats is None else stats[stat]
                        row[m] = float("nan") if value is None else value
                    row["fairness"] = g["fairness"]
                    row["retransmitted"] = g["retransmitted"]
                    rows.append(row)
        columns = (
            ["point", *keys, "group", "protocol", "flows", "target_bps", "statistic"]
            + list(_MEASURES)
            + metrics
            + ["fairness", "retransmitted"]
        )
        frame = pandas.DataFrame(rows, columns=columns)
        return frame.astype({"fairness": float, "target_bps": "Int64"})

    @property
    def queues(self) -> pandas.DataFrame:
        """One row per point and bottleneck queue (summary.json's ``queues``).

        Columns: ``point``, one per swept key (its value at the point), ``queue`` (``bottleneck``,
        ``bottleneck/<class>``), ``packets``, ``ldrops``, ``edrops`` (per run after the warm-up,
        in and out of profile together), then the queue's sojourn times after the warm-up (time
        from a packet's arrival to the start of its serialisation, ms, mean over runs):
        ``sojourn_mean_ms``, ``sojourn_p50_ms``, ``sojourn_p95_ms``, ``sojourn_p99_ms`` (NaN
        where the queue does not measure them: an ATM trunk's buffers, CBQ classes).
        """
        import pandas

        keys: list[str] = []
        for p in self._dict["points"]:
            keys.extend(k for k in p["params"] if k not in keys)
        rows = []
        for i, p in enumerate(self._dict["points"]):
            for q in p["queues"]:
                row: dict[str, Any] = {"point": i}
                row.update({k: p["params"].get(k) for k in keys})
                row["queue"] = q["name"]
                for c in ("packets", "ldrops", "edrops"):
                    row[c] = q["in_profile"][c] + q["out_profile"][c]
                sojourn = q.get("sojourn_ms")
                for s in _SOJOURN:
                    row[f"sojourn_{s}_ms"] = float("nan") if sojourn is None else sojourn[s]["mean"]
                rows.append(row)
        columns = (
            ["point", *keys, "queue", "packets", "ldrops", "edrops"]
            + [f"sojourn_{s}_ms" for s in _SOJOURN]
        )
        return pandas.DataFrame(rows, columns=columns)

    @property
    def runs(self) -> pandas.DataFrame:
        """Every run's per-flow results (runs.csv): one row per point, run and flow."""
        import pandas

        return pandas.read_csv(
            io.StringIO(self._results.runs_csv()),
            dtype={"params": str, "group": str},
            keep_default_na=False,
            na_values={c: [""] for c in _OPTIONAL_RUN_COLUMNS},
        )

    def series(self, point: int = 0) -> pandas.DataFrame:
        """The recorded series of ``point`` in long format (series.csv's rows of the point): one row
        per time, run, flow and metric, with columns ``time_s`` (end of the bin), ``point``,
        ``run``, ``group``, ``flow``, ``metric`` (``throughput_bps`` and ``goodput_bps`` through the
        1 s time-sliding window, ``jitter_ms`` where the bin had packets; for TCP senders
        ``rtt_ms``, ``cwnd_bytes``, ``loss_rate`` and ``loss_events``; for qstp/gTFRC/TFRC senders
        ``rate_bps`` (allowed rate X, bit/s), ``x_recv_bps`` (bit/s), ``loss_event_rate`` (p),
        ``rtt_ms`` and ``loss_events`` (feedbacks whose p rose)), ``value`` and ``queue``
        (empty on flow rows). The bottleneck queues add rows with ``metric`` ``queue_packets`` or
        ``queue_bytes`` (what the queue held at the end of the bin), ``queue`` naming it
        (``bottleneck``, ``bottleneck/<class>``), an empty ``group`` and ``flow`` <NA>
        (``flow`` is a nullable integer column).

        Which runs have series is ``to_dict()["series_runs"]``: ``all``, or ``first`` when every
        run's would not fit the lab's memory bound.
        """
        count = len(self._dict["points"])
        if isinstance(point, bool) or not isinstance(point, int) or not 0 <= point < count:
            raise IndexError(f"point {point!r} is not one of this scenario's 0..{count - 1}")
        if self._series is None:
            import pandas

            self._series = pandas.read_csv(
                io.StringIO(self._results.series_csv()),
                dtype={"group": str, "metric": str, "queue": str, "flow": "Int64"},
                keep_default_na=False,
                na_values={"flow": [""]},
            )
        frame = self._series[self._series["point"] == point]
        return frame.reset_index(drop=True)

    def write(self, out: "str | os.PathLike[str]") -> Path:
        """Write the results folder as ``qstp run --out OUT`` does (summary.json, scenario.toml,
        runs.csv, series.csv, series/, plots/, report.html); returns report.html's path."""
        report = Path(self._results.write(os.fspath(out)))
        self.out = Path(out)
        return report
