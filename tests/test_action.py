"""The GitHub Action (action.yml) as far as it can be checked off GitHub: its inputs reach its
script, the guide documents each, and the script refuses bad input as harness commands do
(exit 2, saying why, in the job summary too). The A/B itself, run by the script on a
temporary repository: tests/harness/test_ab_program.py."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
SCRIPT = ROOT / "action" / "ab.sh"


def test_every_input_reaches_the_script_and_every_variable_it_reads_is_given():
    steps = ACTION["runs"]["steps"]
    assert ACTION["runs"]["using"] == "composite" and all(step["shell"] == "bash" for step in steps)
    used = " ".join(yaml.safe_dump(step) for step in steps)
    unused = [name for name in ACTION["inputs"] if f"inputs.{name}" not in used]
    assert not unused, f"inputs no step uses: {unused}"
    given = {name for step in steps for name in step.get("env", {})}
    read = set(re.findall(r"\$\{(AB_[A-Z_]+)", SCRIPT.read_text()))
    assert read - {"AB_OUT"} == {n for n in given if n.startswith("AB_")}, (read, given)
    assert 'bash "$GITHUB_ACTION_PATH/action/ab.sh"' in used
    for output in ACTION["outputs"].values():
        name = re.fullmatch(r"\$\{\{ steps\.ab\.outputs\.([\w-]+) \}\}", output["value"]).group(1)
        assert f'output "{name}=' in SCRIPT.read_text(), name


def test_the_guide_documents_every_input_and_output_and_the_readme_shows_the_step():
    guide = (ROOT / "docs" / "guide" / "ab-and-gates.md").read_text()
    missing = [f"`{name}`" for name in [*ACTION["inputs"], *ACTION["outputs"]] if f"| `{name}` |" not in guide]
    assert not missing, f"docs/guide/ab-and-gates.md has no row for {missing}"
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", readme[readme.index("## Gate your own repository in CI") :], re.S)
    steps = yaml.safe_load(block.group(1))  # a job's steps, to paste under `steps:`
    (step,) = [s for s in steps if "selfplay-harness" in s.get("uses", "")]
    assert set(step["with"]) <= set(ACTION["inputs"]) and "command" in step["with"]
    checkout = next(s for s in steps if s.get("uses", "").startswith("actions/checkout"))
    assert checkout.get("with", {}).get("fetch-depth") in (None, 0, 1)  # the script fetches the base itself


def run_script(cwd: Path, tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, str, str]:
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs"
    done = subprocess.run(
        ["bash", str(SCRIPT)], cwd=cwd, capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(outputs), "HARNESS": "false", **env},
    )  # fmt: skip
    return done, summary.read_text() if summary.exists() else "", outputs.read_text() if outputs.exists() else ""


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_the_script_refuses_nothing_to_compare_and_a_base_it_cannot_get(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "-c", "user.email=d@e", "-c", "user.name=d", "commit", "-q", "--allow-empty", "-m", "one")
    git(repo, "-c", "user.email=d@e", "-c", "user.name=d", "commit", "-q", "--allow-empty", "-m", "two")
    nothing, summary, outputs = run_script(repo, tmp_path)
    assert nothing.returncode == 2 and "nothing to A/B" in nothing.stderr
    assert summary.startswith("## harness ab: not run") and "exit-code=2" in outputs

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(clone))
    absent = "0123456789abcdef0123456789abcdef01234567"
    missing, summary, _ = run_script(clone, tmp_path, AB_COMMAND="python prog.py", AB_BASE=absent)
    assert missing.returncode == 2 and f"the base revision {absent} is not a commit of this clone" in missing.stderr
    assert "fetch-depth: 0" in summary
    fetched, _, _ = run_script(clone, tmp_path, AB_COMMAND="python prog.py", AB_BASE="HEAD~1")
    assert fetched.returncode == 1 and "+ false ab HEAD~1" in fetched.stderr  # base fetched; `false` "ran" the A/B
    assert subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=clone, capture_output=True,
                          text=True).stdout.strip() == "false"  # fmt: skip
