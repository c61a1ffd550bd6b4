#!/usr/bin/env bash
# The A/B gate of this repository's GitHub Action (action.yml), as its step runs it, and as
# tests/harness/test_ab_program.py runs it on a temporary repository: bring the base commit
# into the clone, run `harness ab`, append its table (ab.md) to the job summary and put its
# verdict in the step's outputs.
#
# Inputs, as environment variables (the action's `with:`; README, "Gate your own repository"):
#   AB_COMMAND         your program, run in each revision's worktree (the words after `--`)
#   AB_SPEC            or a sweep spec (SPEC.toml) whose cells are A/B'd
#   AB_BASE            the base revision (empty or all zeros: HEAD~1)
#   AB_TOLERANCE       the slowdown allowed, e.g. 5% (empty: harness ab's default)
#   AB_BUDGET          A/B seconds per cell before it is called undecided (empty: the default)
#   AB_ARGS            more flags for harness ab, split as a shell would (no expansion)
#   AB_MEASURE         time (default) or instructions (harness ab --measure)
#   AB_FAIL_ON_UNDECIDED  true: an undecided A/B fails the step; otherwise it passes, noted
#   AB_OUT             where the A/B's run directory goes (default: $RUNNER_TEMP/harness-ab)
#   HARNESS            the harness command (default: harness)
# GitHub's own: GITHUB_STEP_SUMMARY (the table is appended), GITHUB_OUTPUT (verdict,
# exit-code, dir); either may be unset.
# Exit: 0 no regression (or undecided, unless AB_FAIL_ON_UNDECIDED), 1 a regression, 2 bad
# input (no program, a base the clone cannot get), 3 undecided with AB_FAIL_ON_UNDECIDED.
set -uo pipefail

words() {  # a command line split as a shell would, without running anything: one word a line
    python3 -c 'import shlex, sys; sys.stdout.write("".join(w + "\n" for w in shlex.split(sys.argv[1])))' "$1"
}
summary() { if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then cat >>"$GITHUB_STEP_SUMMARY"; else cat >/dev/null; fi; }
output() { if [ -n "${GITHUB_OUTPUT:-}" ]; then echo "$1" >>"$GITHUB_OUTPUT"; fi; }
refuse() {
    echo "error: $1" >&2
    printf '## harness ab: not run\n\n%s\n' "$1" | summary
    output "verdict=error"
    output "exit-code=2"
    exit 2
}

mapfile -t harness < <(words "${HARNESS:-harness}")
mapfile -t program < <(words "${AB_COMMAND:-}")
mapfile -t extra < <(words "${AB_ARGS:-}")
spec="${AB_SPEC:-}"
if [ "${#program[@]}" -eq 0 ] && [ -z "$spec" ]; then
    refuse "nothing to A/B: give the action a command (your program) or a spec (a sweep spec, SPEC.toml)"
fi

base="${AB_BASE:-}"
if [ -z "$base" ] || [[ "$base" =~ ^0+$ ]]; then base="HEAD~1"; fi  # a branch's first push has no "before"
have() { git cat-file -e "$1^{commit}" 2>/dev/null; }
shallow() { [ "$(git rev-parse --is-shallow-repository 2>/dev/null)" = "true" ]; }
if ! have "$base" && [[ "$base" =~ ^[0-9a-f]{40}$ ]]; then
    git fetch --no-tags --quiet --depth=1 origin "$base" || true  # that commit alone
fi
if ! have "$base" && [[ "$base" == origin/* ]]; then
    git fetch --no-tags --quiet origin "+refs/heads/${base#origin/}:refs/remotes/$base" || true
fi
if ! have "$base" && shallow; then
    echo "the clone is shallow; fetching its history for the base ${base}" >&2
    git fetch --no-tags --quiet --unshallow origin || true
fi
if ! have "$base"; then
    refuse "the base revision ${base} is not a commit of this clone, nor could it be fetched from origin (check out with fetch-depth: 0, or give the base as a commit)"
fi

out="${AB_OUT:-${RUNNER_TEMP:-$(mktemp -d)}/harness-ab}"
args=(ab "$base")
if [ -n "$spec" ]; then args+=("$spec"); fi
args+=(--out "$out")
if [ -n "${AB_TOLERANCE:-}" ]; then args+=(--tolerance "$AB_TOLERANCE"); fi
if [ -n "${AB_BUDGET:-}" ]; then args+=(--budget "$AB_BUDGET"); fi
if [ -n "${AB_MEASURE:-}" ]; then args+=(--measure "$AB_MEASURE"); fi
args+=("${extra[@]}")
if [ "${#program[@]}" -gt 0 ]; then args+=(-- "${program[@]}"); fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
echo "+ ${harness[*]} ${args[*]}" >&2
"${harness[@]}" "${args[@]}" 2>&1 | tee "$log"
code=${PIPESTATUS[0]}

# harness ab's last line: "ab: exit N; written: DIR/ab.json, DIR/ab.md"
dir="$(sed -n 's|^ab: exit [0-9]*; written: \(.*\)/ab\.json, .*|\1|p' "$log" | tail -n 1)"
if [ -n "$dir" ] && [ -f "$dir/ab.md" ]; then
    summary <"$dir/ab.md"
else
    { printf '## harness ab: exit %s, no table written\n\n```\n' "$code"; tail -n 20 "$log"; printf '```\n'; } | summary
fi
case "$code" in
    0) verdict="no regression" ;;
    1) verdict="regression" ;;
    3) verdict="undecided" ;;
    *) verdict="error" ;;
esac
output "verdict=$verdict"
output "exit-code=$code"
output "dir=$dir"
if [ "$code" -eq 3 ] && [ "${AB_FAIL_ON_UNDECIDED:-false}" != "true" ]; then
    note="undecided: no regression found and none ruled out within the budget (a noisy runner, or a difference near the tolerance); passing (fail-on-undecided: true fails it)"
    echo "$note" >&2
    printf '\n%s\n' "$note" | summary
    exit 0
fi
exit "$code"
