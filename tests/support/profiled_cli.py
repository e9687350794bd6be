"""The CLI as a process under cProfile, for the tests that count calls, never timings:
``python -c PROFILED_CLI OUT ARGV...`` runs ``artifactize ARGV`` and writes the merged
stats of every thread to OUT."""

from __future__ import annotations

# cProfile follows only the thread that enabled it; the fingerprints are computed on worker
# threads. So each thread gets its own profiler (``threading.setprofile`` starts one on the
# thread's first event), and the stats of all are merged at the end.
PROFILED_CLI = """
import cProfile, pstats, runpy, sys, threading
out, sys.argv = sys.argv[1], ["artifactize", *sys.argv[2:]]
profiles = []
def start(*_):
    profile = cProfile.Profile()
    profiles.append(profile)
    profile.enable()
threading.setprofile(start)
start()
code = 0
try:
    runpy.run_module("artifactize.entrypoints.cli.app", run_name="__main__")
except SystemExit as exit:
    code = exit.code
finally:
    profiles[0].disable()
    stats = pstats.Stats(profiles[0])
    for profile in profiles[1:]:
        stats.add(profile)
    stats.dump_stats(out)
sys.exit(code)
"""
