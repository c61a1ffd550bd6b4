"""PIPELINE_BOUND: a client-server pipeline (workers that send requests to one server that
batches them) whose one side waits on the other, named with the knob that moves it.

Reads two generic signals over the measured window: `server_idle_share` (share of the time
the server computed no batch) and `client_wait_share` (share of the clients' time spent
blocked waiting for replies). Three symptoms, first match wins, each with its remedy (the
suite's, naming its knobs, else a generic one):
- `serial` (warning): both wait at least BUSY_WAIT_SHARE: they take turns instead of
  overlapping (every client's requests are in the batch being computed, and nothing is
  gathered meanwhile);
- `worker_bound` (warning): the server idles at least BUSY_WAIT_SHARE while the clients wait
  under CALM_SHARE: requests arrive too slowly for the server;
- `one_batch` (warning): server-bound as below, but the server can compute several batches
  at once (`server_batch_slots`) and computed under ONE_BATCH_MAX on average
  (`server_batches_computing`): every client waits on the batch in flight, so the other
  compute threads, and the cores they were given, idle (a server whose clients all fit one
  batch and that fires only once they all wait);
- `server_bound` (info): the clients wait at least BUSY_WAIT_SHARE while the server idles
  under CALM_SHARE: the server's compute is the limit (the expected end state once the
  clients keep it fed; how close it runs to its bare forward pass is the efficiency).
"""

from __future__ import annotations

from harness.diagnosis.findings import Finding
from harness.diagnosis.needs import WAITS, Needs
from harness.runs.view import RunView

RULE = "PIPELINE_BOUND"
NEEDS = Needs(instruments=(WAITS,))  # harness watch's shares come from the wait reader
# a side that waits half the time or more is held up by the other, while the other waits
# less than a fifth of it; the self-play server cells of docs/records/2026-11-25-inference-server.md
# (a 6x64 net on about one core) read server idle 0-0.20 and clients waiting 0.95-0.99, its
# quick cell (2x32 net, 2 workers) 0.27-0.35 and 0.61-0.82: the first server-bound, the second neither
BUSY_WAIT_SHARE = 0.5
CALM_SHARE = 0.2
# batches computing at once, on average, under which a server-bound server with more slots
# computes about one at a time: in that record's 6x64 sweeps the 8-worker one-leaf cell with
# gather=deadline computed 0.91 of 2, with gather=share 1.49-1.55 of 2 (at 4 and 8 workers;
# the rest of their gap is the workers' search), every other server cell 1.86-1.93
ONE_BATCH_MAX = 1.25
REMEDIES = {
    "pipeline.serial": "keep more requests in flight per client, so that clients work while the server computes",
    "pipeline.worker_bound": "more clients or more requests in flight per client, or fire batches sooner",
    "pipeline.one_batch": "split the clients into as many groups as the server computes batches at once, "
    "each group's batch firing on its own (or more requests in flight per client)",
    "pipeline.server_bound": "more compute for the server: threads, batches computed at once, a faster device",
}


def check(view: RunView) -> list[Finding]:
    out = []
    for cell in view.cells:
        words = cell.vocabulary
        evidence = cell.signals("server_idle_share", "client_wait_share")
        idle, wait = evidence.values()
        if idle is None or wait is None:
            continue
        shares = f"the server idles {100 * idle:.0f} % of the time, clients wait {100 * wait:.0f} % for replies"
        if idle >= BUSY_WAIT_SHARE and wait >= BUSY_WAIT_SHARE:
            symptom, severity, what = "pipeline.serial", "warning", "the pipeline runs in turns"
        elif idle >= BUSY_WAIT_SHARE and wait < CALM_SHARE:
            symptom, severity, what = "pipeline.worker_bound", "warning", "worker-bound"
        elif wait >= BUSY_WAIT_SHARE and idle < CALM_SHARE:
            symptom, severity, what = "pipeline.server_bound", "info", "server-bound"
        else:
            continue
        batches = cell.signals("server_batches_computing", "server_batch_slots")
        computing, slots = batches.values()
        if symptom == "pipeline.server_bound" and computing is not None and slots and slots > 1:
            evidence |= batches
            if computing < ONE_BATCH_MAX:
                symptom, severity = "pipeline.one_batch", "warning"
                what = f"server-bound on one batch at a time ({computing:.2f} of {slots:g} computing on average)"
        out.append(
            Finding(
                RULE,
                severity,
                [cell.id],
                f"{what}: {shares}: {words.remedy(symptom, REMEDIES[symptom], cell.params)}",
                evidence | {"symptom": symptom.removeprefix("pipeline."), "remedy_key": symptom},
            )
        )
    return out
