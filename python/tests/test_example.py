"""The example notebook is a valid notebook whose code cells compile (CI does not run it)."""

from __future__ import annotations

import json
from pathlib import Path

NOTEBOOK = Path(__file__).parents[2] / "examples" / "gtfrc-fig4.ipynb"


def test_notebook_is_valid_and_its_code_compiles() -> None:
    nb = json.loads(NOTEBOOK.read_text())
    assert nb["nbformat"] == 4
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code, "no code cell"
    for i, cell in enumerate(nb["cells"]):
        assert cell["cell_type"] in {"code", "markdown"}
        assert isinstance(cell["source"], (str, list))
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
            compile("".join(cell["source"]), f"{NOTEBOOK.name} cell {i}", "exec")
    text = "".join("".join(c["source"]) for c in code)
    assert "gtfrc-fig4.toml" in text and "qstp.run(" in text
