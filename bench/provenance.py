"""Where a result came from: commit, versions, machine."""
import datetime
import functools
import hashlib
import platform
import re
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


@functools.lru_cache(maxsize=1)
def cpu_facts():
    """(the CPU's model name, a short digest of its feature flags) from /proc/cpuinfo: two CPUs
    of one name can still differ in the vector units their kernels pick."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return platform.processor() or platform.machine(), None
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    flags = fields.get("flags") or fields.get("Features") or ""
    name = fields.get("model name") or fields.get("Model") or platform.machine()
    return name, hashlib.sha256(flags.encode()).hexdigest()[:8] if flags else None


@functools.lru_cache(maxsize=1)
def blas_name():
    """Torch's BLAS and its version as its build reports them ('mkl 2024.2'), or 'unknown'."""
    import torch
    shown = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=(\w+)", shown)
    mkl = re.search(r"Math Kernel Library Version ([\d.]+)", shown)
    return " ".join(filter(None, [blas.group(1) if blas else "unknown", mkl.group(1) if mkl else None]))


def numerics():
    """What decides the last digits of a float32 result on this machine: the CPU (and its flags),
    the vector kernels torch picks, its BLAS and its thread count."""
    import torch
    name, flags = cpu_facts()
    return {"cpu": name, "cpu_flags": flags, "kernels": torch.backends.cpu.get_cpu_capability(),
            "blas": blas_name(), "torch_threads": torch.get_num_threads()}


def describe_numerics(facts):
    """'AMD EPYC (flags 1a2b3c4d, AVX512 kernels, mkl 2024.2, 2 threads)'."""
    return (f"{facts.get('cpu')} (flags {facts.get('cpu_flags')}, {facts.get('kernels')} kernels, "
            f"{facts.get('blas')}, {facts.get('torch_threads')} threads)")


def provenance():
    commit, dirty = git_state()
    return {"commit": commit, "dirty": dirty, "versions": versions(), "numerics": numerics(),
            "machine": {"platform": platform.platform(), "processor": platform.machine(),
                        "cpus": __import__("os").cpu_count()},
            "command": " ".join(sys.argv),
            "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
