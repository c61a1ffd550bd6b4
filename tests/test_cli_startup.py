"""`harness --help` stays quick: registering the commands imports every command module
(harness.cli), so a command imports what it runs on inside its function. Held here as the
modules a fresh interpreter has after `import harness.cli`, not as a time."""

from __future__ import annotations

import subprocess
import sys

# what `harness sweep` and the reports pull in, none of which a help screen needs
HEAVY = ("numpy", "pandas", "plotly", "scipy", "torch", "ray", "pydantic", "psutil",
         "harness.report", "harness.running", "harness.diagnosis", "harness.analysis", "harness.runs.record")  # fmt: skip


def test_importing_the_cli_imports_no_command_s_dependencies():
    code = "import sys, harness.cli; print(' '.join(sorted(sys.modules)))"
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split())
    assert "harness.commands.sweep" in loaded  # the commands are registered, so imported
    heavy = sorted({h for h in HEAVY for m in loaded if m == h or m.startswith(h + ".")})
    assert not heavy, f"import harness.cli loads {heavy}: import them inside the command that needs them"
