"""N ranks as N spawned processes, each with a trnccl process group, running test cases.

A RankPool starts its processes and their default group once; ``pool.run(fn, *args)`` runs
``fn(*args)`` on every rank (``fn`` is a module-level function, imported by name in the
children) and returns the per-rank results, or raises with every failing rank's traceback.
Every wait is bounded: a case that does not finish within ``timeout`` seconds fails and the
pool is torn down (the next ``run`` starts a fresh one).
"""

import datetime
import importlib
import multiprocessing
import os
import queue
import socket
import tempfile
import traceback

START_TIMEOUT = 60  # seconds for every rank to import torch and join the group
CASE_TIMEOUT = 60


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world, init_method, backend, tasks, results, env):
    os.environ.update(env)
    try:
        import torch.distributed as dist
        import torch_trnccl  # noqa: F401  registers "trnccl"
        dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=CASE_TIMEOUT))
        results.put((rank, True, "ready"))
    except BaseException:
        results.put((rank, False, traceback.format_exc()))
        return
    while True:
        item = tasks.get()
        if item is None:
            break
        module, name, args = item
        try:
            value = getattr(importlib.import_module(module), name)(*args)
            results.put((rank, True, value))
        except BaseException:
            results.put((rank, False, traceback.format_exc()))
    dist.destroy_process_group()


class CaseFailed(AssertionError):
    pass


class RankPool:
    def __init__(self, world, backend="trnccl", env=None):
        self.world = world
        self.backend = backend
        self.env = dict(env or {})
        self.procs = []

    def start(self):
        ctx = multiprocessing.get_context("spawn")
        self.results = ctx.Queue()
        self.tasks = [ctx.Queue() for _ in range(self.world)]
        init_method = "tcp://127.0.0.1:%d" % free_port()
        self.procs = [
            ctx.Process(target=_worker, daemon=True,
                        args=(r, self.world, init_method, self.backend, self.tasks[r],
                              self.results, self.env))
            for r in range(self.world)
        ]
        for p in self.procs:
            p.start()
        self._collect(START_TIMEOUT, "start")

    def _collect(self, timeout, what):
        got, failures = {}, []
        deadline = _now() + timeout
        while len(got) < self.world:
            try:
                rank, ok, value = self.results.get(timeout=max(0.1, deadline - _now()))
            except queue.Empty:
                dead = [r for r, p in enumerate(self.procs) if not p.is_alive()]
                missing = sorted(set(range(self.world)) - set(got))
                self.stop()
                raise CaseFailed("%s: ranks %s did not answer within %d s (dead: %s)"
                                 % (what, missing, timeout, dead))
            got[rank] = value
            if not ok:
                failures.append("rank %d:\n%s" % (rank, value))
        if failures:
            raise CaseFailed("%s failed on %d rank(s):\n%s" % (what, len(failures),
                                                              "\n".join(failures)))
        return [got[r] for r in range(self.world)]

    def run(self, fn, *args, timeout=CASE_TIMEOUT):
        if not self.procs:
            self.start()
        for q in self.tasks:
            q.put((fn.__module__, fn.__name__, args))
        return self._collect(timeout, fn.__name__ + str(args))

    def stop(self):
        if not self.procs:
            return
        for p, q in zip(self.procs, self.tasks):
            if p.is_alive():
                q.put(None)
        for p in self.procs:
            p.join(timeout=20)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
        self.procs = []


def _now():
    import time
    return time.monotonic()


def spawn(world, fn, *args, timeout=CASE_TIMEOUT, env=None):
    """Runs fn(rank, world, init_file, *args) in `world` fresh processes without a group (for
    tests of init itself and of failures); returns each rank's (exitcode, result)."""
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        init_file = os.path.join(tmp, "store")
        procs = [ctx.Process(target=_spawned, daemon=True,
                             args=(fn.__module__, fn.__name__, r, world, init_file, args,
                                   results, dict(env or {})))
                 for r in range(world)]
        for p in procs:
            p.start()
        got = {}
        deadline = _now() + timeout
        while len(got) < world and _now() < deadline:
            try:
                rank, value = results.get(timeout=max(0.1, min(1.0, deadline - _now())))
                got[rank] = value
            except queue.Empty:
                if all(not p.is_alive() for p in procs) and results.empty():
                    break
        for p in procs:
            p.join(timeout=max(1.0, deadline - _now()))
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
        return [(p.exitcode, got.get(r)) for r, p in enumerate(procs)]


def _spawned(module, name, rank, world, init_file, args, results, env):
    os.environ.update(env)
    try:
        value = getattr(importlib.import_module(module), name)(rank, world, init_file, *args)
        results.put((rank, ("ok", value)))
    except BaseException as e:
        results.put((rank, ("error", "%s: %s" % (type(e).__name__, e))))
