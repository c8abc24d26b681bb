"""Progress bars (tqdm) for runs that take a while."""

from __future__ import annotations

from typing import Any, Optional

#: Seconds a run goes before its bar shows when ``progress=None``: short runs stay quiet.
QUIET_SECONDS = 2.0


class Bar:
    """A tqdm bar, or nothing when ``enabled`` is False (or tqdm is missing and not asked for)."""

    def __init__(self, enabled: Optional[bool], total: float, unit: str, desc: str) -> None:
        self._bar: Any = None
        if enabled is False:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:
            if enabled:
                raise
            return
        self._bar = tqdm(
            total=total,
            unit=unit,
            desc=desc,
            delay=0.0 if enabled else QUIET_SECONDS,
            dynamic_ncols=True,
            bar_format="{desc} {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} {unit} "
            "[{elapsed}<{remaining}]{postfix}",
        )

    def show(self, done: float, note: str = "") -> None:
        """Set the bar to ``done`` (of the total), with ``note`` after it."""
        if self._bar is None:
            return
        if note:
            self._bar.set_postfix_str(note, refresh=False)
        # update(), not refresh(): it keeps to tqdm's delay and redraw interval.
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
