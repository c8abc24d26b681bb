"""Type hints of qstp's Rust extension (built from python/src)."""

from typing import Callable, Optional

__version__: str

def build_id() -> str:
    """The qstp version and git commit this module was built from, ``version+commit``."""

def claim(dir: str) -> None:
    """Raise OutputError unless ``dir`` may receive results (absent, empty, or qstp's)."""

def load_results(dir: str) -> Results:
    """Read a results folder back; raises LoadError or ScenarioError."""

class Plan:
    """A scenario resolved into its sweep points, with the overrides it was read with."""

    @staticmethod
    def parse(
        text: str,
        file: str,
        runs: Optional[int] = None,
        seed: Optional[int] = None,
        duration: Optional[str] = None,
    ) -> Plan: ...
    @staticmethod
    def load(
        path: str,
        runs: Optional[int] = None,
        seed: Optional[int] = None,
        duration: Optional[str] = None,
    ) -> Plan: ...
    @property
    def name(self) -> str: ...
    @property
    def file(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def overrides(self) -> tuple[Optional[int], Optional[int], Optional[str]]: ...
    @property
    def sweep_keys(self) -> list[str]: ...
    @property
    def points(self) -> int: ...
    @property
    def simulated_s(self) -> float: ...
    def tasks(self) -> list[tuple[int, int]]:
        """Every task as ``(point, run)``, in plan order."""
    def run_task(self, point: int, run: int) -> str:
        """Run one task, the GIL released; its metrics as JSON."""
    def assemble(self, done: list[tuple[int, int, str]]) -> Results:
        """Merge ``(point, run, metrics JSON)`` of every task, in any order."""
    def execute(
        self,
        jobs: int,
        progress: Optional[Callable[[int, int, float, float], None]] = None,
    ) -> Results:
        """Run every task on ``jobs`` threads, the GIL released."""

class Results:
    """The results of a plan."""

    @property
    def source(self) -> str: ...
    def summary_json(self) -> str: ...
    def text_table(self) -> str: ...
    def runs_csv(self) -> str: ...
    def series_csv(self) -> str: ...
    def write(self, out: str) -> str:
        """Write the results folder; returns report.html's path."""
