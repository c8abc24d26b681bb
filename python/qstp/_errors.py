"""The exceptions qstp raises; their messages are those the ``qstp`` command prints."""

from __future__ import annotations

from typing import Optional

__all__ = ["QstpError", "ScenarioError", "RunError", "OutputError", "LoadError"]


class QstpError(Exception):
    """Base class of every qstp error."""


class ScenarioError(QstpError, ValueError):
    """A scenario was refused before anything ran.

    The message names the file, the key and the reason, as ``qstp run`` prints them; ``key`` is
    the dotted key (``"group.A.rtt"``), or ``None`` when the file as a whole is at fault (it
    cannot be read, or is not TOML).
    """

    def __init__(self, message: str, key: Optional[str] = None) -> None:
        super().__init__(message)
        self.key: Optional[str] = key


class RunError(QstpError, RuntimeError):
    """A run failed (the message names its point, swept values, run and seed), or the results
    of a sweep's tasks could not be merged."""


class OutputError(QstpError):
    """A results folder could not be written, or is not qstp's to write into."""


class LoadError(QstpError):
    """A results folder could not be read back."""
