"""qstp: run the qstp lab's scenarios from Python.

:func:`run` runs a scenario (a file, TOML text or a dict) in this process, the GIL released, or
as tasks on a Ray cluster (``executor="ray"``), and returns a :class:`Summary`: summary.json's
content (``to_dict()``), its statistics (``flows``) and the recorded series (``series(point)``)
as pandas DataFrames. :func:`load` reads a results folder written by ``qstp run`` into the same
objects. Errors are :class:`ScenarioError` (with ``.key``), :class:`RunError`,
:class:`OutputError` and :class:`LoadError`, with the messages the ``qstp`` command prints.
"""

from . import _native
from ._errors import LoadError, OutputError, QstpError, RunError, ScenarioError
from ._run import EXECUTORS, load, run
from ._summary import STATISTICS, Summary

__version__: str = _native.__version__

__all__ = [
    "run",
    "load",
    "Summary",
    "QstpError",
    "ScenarioError",
    "RunError",
    "OutputError",
    "LoadError",
    "EXECUTORS",
    "STATISTICS",
    "__version__",
]
