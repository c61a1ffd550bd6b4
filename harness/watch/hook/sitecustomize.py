"""Injected by `harness watch` (a directory holding only this file, first on PYTHONPATH):
records, per process, the batch size and device of every top-level torch module call.

Nothing happens unless HARNESS_WATCH_TORCH_DIR is set, and torch is never imported here:
a finder on sys.meta_path waits for the program's own `import torch`, lets it finish, then
wraps `torch.nn.Module.__call__`. A call is top-level when no other module call is running
in the same thread (a net's layers are not counted, the net is). Its batch is the first
tensor argument's dim 0 (1 for a tensor of fewer than two dims: one item), its device that
tensor's (or the module's first parameter's, when no tensor is passed). Counts are kept
in memory and appended as JSON lines to `<dir>/torch-<pid>.jsonl` at most every FLUSH_S
(on a call) and at exit, so the program pays a dict update per call and two small writes a
second; the time spent here is measured and written too. A forked child starts with empty
counts. The sitecustomize this file hides (any other one on sys.path) is run afterwards.
"""

from __future__ import annotations

import os
import sys

_DIR = os.environ.get("HARNESS_WATCH_TORCH_DIR")
FLUSH_S = 0.5
MAX_THREADS_TRACKED = 1024


def _install() -> None:
    import atexit
    import importlib.util
    import json
    import threading
    import time

    state: dict = {"counts": {}, "users": {}, "hook_s": 0.0, "calls": 0, "last": time.monotonic()}
    lock = threading.Lock()
    local = threading.local()

    def reset() -> None:
        state["counts"], state["users"], state["hook_s"], state["calls"] = {}, {}, 0.0, 0
        state["last"] = time.monotonic()

    def flush() -> None:
        with lock:
            counts, users, hook_s, calls = state["counts"], state["users"], state["hook_s"], state["calls"]
            state["counts"], state["hook_s"], state["calls"] = {}, 0.0, 0
            state["last"] = time.monotonic()
        if not counts and not calls:
            return
        line = {
            "pid": os.getpid(),
            "t": time.time(),
            "calls": [[m, d, b, n] for (m, d, b), n in counts.items()],
            "shared": [[m, len(t), max(bs)] for (m, _), (t, bs) in users.items()],
            "hook_s": hook_s,
        }
        try:
            with open(os.path.join(_DIR, f"torch-{os.getpid()}.jsonl"), "a") as fh:
                fh.write(json.dumps(line) + "\n")
        except OSError:
            pass

    def patch(torch) -> None:
        module_cls, tensor_cls = torch.nn.Module, torch.Tensor
        original = module_cls.__call__

        def note(module, args, kwargs) -> None:
            first = next((a for a in args if isinstance(a, tensor_cls)), None)
            if first is None:
                first = next((a for a in kwargs.values() if isinstance(a, tensor_cls)), None)
            if first is not None:
                batch = int(first.shape[0]) if first.dim() >= 2 else 1
                device = str(first.device)
            else:
                batch = 1
                param = next(module.parameters(), None)
                device = str(param.device) if param is not None else "none"
            name = type(module).__name__
            key = (name, device, batch)
            ident = threading.get_ident()
            with lock:
                state["counts"][key] = state["counts"].get(key, 0) + 1
                state["calls"] += 1
                users = state["users"].setdefault((name, id(module)), (set(), set()))
                if len(users[0]) < MAX_THREADS_TRACKED:
                    users[0].add(ident)
                users[1].add(batch)

        def __call__(self, *args, **kwargs):
            if getattr(local, "depth", 0):
                return original(self, *args, **kwargs)
            t0 = time.perf_counter()
            try:
                note(self, args, kwargs)
            except Exception:  # noqa: BLE001 - the hook must never break the program
                pass
            local.depth = 1
            spent = time.perf_counter() - t0
            state["hook_s"] += spent
            if time.monotonic() - state["last"] >= FLUSH_S:
                flush()
            try:
                return original(self, *args, **kwargs)
            finally:
                local.depth = 0

        module_cls.__call__ = __call__
        atexit.register(flush)
        os.register_at_fork(after_in_child=reset)

    class TorchFinder:
        """Finds nothing itself: when `torch` is imported, wraps its loader so the patch
        runs right after torch's own module code."""

        def find_spec(self, name, path=None, target=None):
            if name != "torch":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec("torch")
            if spec is None or spec.loader is None:
                return spec
            run = spec.loader.exec_module

            def exec_module(module):
                run(module)
                try:
                    patch(module)
                except Exception:  # noqa: BLE001 - an unexpected torch must not break the program
                    pass

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, TorchFinder())


def _chain() -> None:
    """Run the sitecustomize this one shadows, as if it had been found first."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if _DIR:
    try:
        _install()
    except Exception:  # noqa: BLE001 - never stop the program from starting
        pass
_chain()
