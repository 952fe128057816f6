"""Where a result came from: commit, versions, machine."""
import datetime
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def portable_path(path):
    """A path relative to the suite's checkout when inside it (so results match across clones)."""
    path = Path(path).resolve()
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def git_state():
    """(commit, dirty) of the suite's checkout, or (None, None) outside git."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True,
                                text=True, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                                capture_output=True, text=True, check=True).stdout
        return commit, bool(status.strip())
    except (OSError, subprocess.CalledProcessError):
        return None, None


def versions():
    found = {"python": platform.python_version()}
    for package in ("unmask-bench", "torch", "numpy", "numba", "esm"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return found


def provenance():
    commit, dirty = git_state()
    return {"commit": commit, "dirty": dirty, "versions": versions(),
            "machine": {"platform": platform.platform(), "processor": platform.machine(),
                        "cpus": __import__("os").cpu_count()},
            "command": " ".join(sys.argv),
            "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
