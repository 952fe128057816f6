"""Registries of strategies and tasks, and parsing of ``name:key=value,...`` specs."""
import difflib
from dataclasses import MISSING, fields

from bench.errors import BenchError

STRATEGIES = {}
TASKS = {}


def register_strategy(cls):
    """Class decorator: make a strategy dataclass reachable by its ``name``."""
    STRATEGIES[cls.name] = cls
    return cls


def register_task(cls):
    TASKS[cls.name] = cls
    return cls


def closest(name, options):
    """' (did you mean X?)' for the closest option, or ''."""
    match = difflib.get_close_matches(name, list(options), n=1, cutoff=0.5)
    return f" (did you mean {match[0]!r}?)" if match else ""


def lookup(kind, name, registry):
    _load_all()
    if name not in registry:
        raise BenchError(f"unknown {kind} {name!r}{closest(name, registry)}; "
                         f"available: {', '.join(sorted(registry))}")
    return registry[name]


def split_specs(text):
    """'sequential,topk:k=2,order=margin,eb:gamma=1' -> ['sequential', 'topk:k=2,order=margin', 'eb:gamma=1'].

    A comma-separated piece holding '=' but no ':' continues the previous strategy's parameters.
    """
    specs = []
    for piece in filter(None, (p.strip() for p in text.split(","))):
        if "=" in piece and ":" not in piece and specs:
            specs[-1] += "," + piece
        else:
            specs.append(piece)
    return specs


def param_help(cls):
    """'k: int = 2; order: confidence|entropy|margin = confidence' for ``bench list``."""
    parts = []
    for f in fields(cls):
        kind = "|".join(f.metadata["choices"]) if "choices" in f.metadata else f.type.__name__
        default = "required" if f.default is MISSING else f.default
        default = "(the task's shipped file)" if default == "" else default
        parts.append(f"{f.name}: {kind} = {default}")
    return "; ".join(parts) or "(no parameters)"


def _cast(cls, f, text):
    try:
        value = {"bool": lambda v: {"true": True, "false": False}[v.lower()]}.get(
            f.type.__name__, f.type)(text)
    except (ValueError, KeyError):
        raise BenchError(f"{cls.name}: parameter {f.name}={text!r} is not a {f.type.__name__}") from None
    choices = f.metadata.get("choices")
    if choices and value not in choices:
        raise BenchError(f"{cls.name}: {f.name}={text!r} is not allowed; choose from: "
                         f"{', '.join(choices)}{closest(text, choices)}")
    return value


def parse_strategy(spec):
    """Build a strategy from 'name' or 'name:key=value,...'; one-line errors for bad input."""
    name, _, arg_text = spec.partition(":")
    cls = lookup("strategy", name.strip(), STRATEGIES)
    by_name = {f.name: f for f in fields(cls)}
    kwargs = {}
    for pair in filter(None, (p.strip() for p in arg_text.split(","))):
        key, eq, value = (part.strip() for part in pair.partition("="))
        if not eq:
            raise BenchError(f"{name}: parameter {pair!r} needs the form key=value")
        if key not in by_name:
            allowed = ", ".join(by_name) or "none"
            raise BenchError(f"unknown parameter {key!r} for strategy {name!r}{closest(key, by_name)}; "
                             f"allowed: {allowed}")
        kwargs[key] = _cast(cls, by_name[key], value)
    try:
        return cls(**kwargs)
    except ValueError as err:
        raise BenchError(f"{name}: {err}") from None


def canonical(strategy):
    """The full spec with every parameter resolved: 'topk:k=2,order=confidence'."""
    params = ",".join(f"{f.name}={getattr(strategy, f.name)}" for f in fields(strategy))
    return f"{strategy.name}:{params}" if params else strategy.name


def _load_all():
    """Import the packages whose modules register themselves."""
    import strategies  # noqa: F401
    import tasks  # noqa: F401
