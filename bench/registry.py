"""Registries of strategies, tasks and plugin commands, and parsing of ``name:key=value,...`` specs.

Plugins register themselves when imported: a strategy class with ``@register_strategy``, a task
class with ``@register_task``, a subcommand with ``register_command`` and a `bench train`
target with ``register_trainer``. ``load_plugins`` imports every module of the plugin packages
(``PLUGIN_PACKAGES``, plus any named in the environment variable ``UNMASK_BENCH_PLUGINS``,
comma-separated), so a new strategy is one file in strategies/ and a new task one folder in
tasks/; bench never imports them by name.
"""
import difflib
import importlib
import math
import os
import pkgutil
from dataclasses import MISSING, dataclass, field, fields, is_dataclass

from bench.errors import BenchError

PLUGIN_PACKAGES = ("strategies", "tasks")
STRATEGIES = {}
TASKS = {}
COMMANDS = {}    # name -> Command
TRAINERS = {}    # `bench train NAME` targets besides task names -> TrainTarget
REPORTS = {}     # name -> draw(results_dir, out_dir) -> written paths: plugin sections of `bench report`
ORIGINS = {}     # (kind, name) -> where the registered definition lives, to refuse a second one


@dataclass(frozen=True)
class Command:
    """A plugin subcommand: ``add_arguments(parser)`` declares it, ``run(args)`` runs it."""
    name: str
    help: str
    add_arguments: object
    run: object


@dataclass(frozen=True)
class TrainTarget:
    """A `bench train NAME --task T KEY=VALUE...` target: ``run(task, settings, out)``."""
    name: str
    help: str
    run: object


def where(obj):
    """'strategies.name.Name': the module and name a registered object is defined by (a string
    is taken as already naming it: a module that declared settings)."""
    if isinstance(obj, str):
        return obj
    return f"{obj.__module__}.{getattr(obj, '__qualname__', getattr(obj, '__name__', repr(obj)))}"


def claim(kind, registry, name, obj, origin=None):
    """Put ``obj`` in ``registry`` under ``name``; a name another definition holds is refused in
    one line naming both (the same definition imported again, a module reloaded, replaces itself).
    ``origin``: the function or class that defines it (default ``obj``)."""
    origin = origin or obj
    held = ORIGINS.get((kind, name))
    if held is not None and held != where(origin):
        raise BenchError(f"{kind} {name!r} is registered twice: by {held} and by {where(origin)}; "
                         f"rename one of them")
    ORIGINS[(kind, name)] = where(origin)
    registry[name] = obj
    return obj


def check_class(kind, cls, base):
    """A registered class must subclass ``base`` and carry a ``name`` string; a strategy must be a
    dataclass (its fields are its parameters)."""
    if not isinstance(cls, type) or not issubclass(cls, base):
        raise BenchError(f"{kind} {where(cls)} must subclass {where(base)} to be registered")
    if kind == "strategy" and not is_dataclass(cls):
        raise BenchError(f"{kind} {where(cls)} must be a dataclass (decorate it with @dataclass "
                         f"below @register_{kind}): its fields are its parameters")
    if not isinstance(cls.__dict__.get("name"), str) or not cls.__dict__["name"]:
        raise BenchError(f"{kind} {where(cls)} needs a class attribute name = '...' of its own")


def register_strategy(cls):
    """Class decorator: make a strategy dataclass reachable by its ``name`` (checked: a Strategy
    subclass, a dataclass, a name no other module holds)."""
    from bench.core import Strategy
    check_class("strategy", cls, Strategy)
    return claim("strategy", STRATEGIES, cls.name, cls)


def register_task(cls):
    """Class decorator: make a task reachable by its ``name`` (checked like a strategy)."""
    from bench.core import Task
    check_class("task", cls, Task)
    return claim("task", TASKS, cls.name, cls)


def register_command(name, help, add_arguments):
    """Decorator: ``run(args)`` becomes `bench NAME`, its arguments declared by ``add_arguments(parser)``."""
    def add(run):
        claim("command", COMMANDS, name, Command(name, help, add_arguments, run), origin=run)
        return run
    return add


def register_trainer(name, help):
    """Decorator: ``run(task, settings, out)`` becomes `bench train NAME --task T KEY=VALUE...`."""
    def add(run):
        claim("trainer", TRAINERS, name, TrainTarget(name, help, run), origin=run)
        return run
    return add


def register_report(name):
    """Decorator: ``draw(results_dir, out_dir)`` becomes a section of `bench report`. It must live
    in a module named ``figures`` that imports no model code (the report loads only those)."""
    def add(draw):
        return claim("report section", REPORTS, name, draw)
    return add


def load_plugins(only=None):
    """Import every module of the plugin packages (each registers what it defines) but the
    report sections, or with ``only`` just the modules of that name: ``cli`` (subcommands, for the
    parser) or ``figures`` (report sections: only `bench report` loads them, which keeps
    matplotlib out of every other command); package ``__init__`` files stay light, and private
    modules (``_name``) are left to load when used. Idempotent."""
    extra = [name.strip() for name in os.environ.get("UNMASK_BENCH_PLUGINS", "").split(",") if name.strip()]
    for package_name in PLUGIN_PACKAGES + tuple(extra):
        package = import_plugin(package_name)
        for module in pkgutil.walk_packages(getattr(package, "__path__", []), package_name + "."):
            leaf = module.name.rsplit(".", 1)[-1]
            if leaf.startswith("_"):      # private helpers register nothing; they load when used
                continue
            if leaf == only or (only is None and leaf != "figures"):
                importlib.import_module(module.name)


def import_plugin(name):
    """The plugin package or module ``name``; a one-line error where it cannot be imported."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        raise BenchError(f"plugin {name!r} cannot be imported ({err}); plugins are {', '.join(PLUGIN_PACKAGES)} "
                         f"and the names in UNMASK_BENCH_PLUGINS") from None


def closest(name, options):
    """' (did you mean X?)' for the closest option, or ''."""
    match = difflib.get_close_matches(name, list(options), n=1, cutoff=0.5)
    return f" (did you mean {match[0]!r}?)" if match else ""


def lookup(kind, name, registry):
    """``registry[name]`` after loading the plugins; a one-line BenchError listing what exists."""
    load_plugins()
    if name not in registry:
        raise BenchError(f"unknown {kind} {name!r}{closest(name, registry)}; "
                         f"available: {', '.join(sorted(registry))}")
    return registry[name]


def make_task(name, data=None, model=None):
    """An instance of the task called ``name``."""
    return lookup("task", name, TASKS)(data=data, model=model)


def split_specs(text):
    """'a,b:k=2,order=x,c:gamma=1' -> ['a', 'b:k=2,order=x', 'c:gamma=1'].

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


BOOLEANS = {"true": True, "false": False}
INT_LIMIT = 2 ** 63  # ints must fit a signed 64-bit integer: torch and numpy take no more
# The range of a strategy's int parameter that declares none (``bounded`` below): a block size,
# a step count, a history length allocates or loops in proportion to it, so an absurd value must
# be refused before any work. 2**20 is thousands of times any input the tasks hold (81-1,000
# positions) and allocates a few MB at most.
DEFAULT_INT_RANGE = (0, 2 ** 20)
# A parameter that counts passes or positions (``per_position``) may be at most this many times
# the positions of the inputs it decodes: a re-masking sampler may use more passes than positions
# (ReMDM's loop), but not without bound.
PASSES_PER_POSITION = 16


def bounded(default, *, low=None, high=None, per_position=None, **metadata):
    """A strategy parameter's dataclass field with its stated range: ``low``..``high`` (checked when
    the spec is parsed; an int without them gets DEFAULT_INT_RANGE) and, for a count of passes or
    positions, ``per_position``: at most that many times the input's positions (checked before
    decoding, ``check_positions``)."""
    if low is not None or high is not None:
        metadata["range"] = (low, high)
    if per_position is not None:
        metadata["per_position"] = per_position
    return field(default=default, metadata=metadata)


def value_range(f):
    """(low, high) a parameter's or setting's value must lie in (None: no bound that side): each
    side as declared, else for an int DEFAULT_INT_RANGE's, reaching down to a negative default (a
    setting's -1 meaning "the last layer")."""
    declared_low, declared_high = f.metadata.get("range", (None, None))
    if field_type_name(f) != "int":
        return declared_low, declared_high
    low, high = DEFAULT_INT_RANGE
    default = f.default if isinstance(f.default, int) else low
    return (min(low, default) if declared_low is None else declared_low,
            high if declared_high is None else declared_high)


def check_range(owner, f, value, text):
    """A one-line error when ``value`` is outside the field's stated range."""
    low, high = value_range(f)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    if (low is not None and value < low) or (high is not None and value > high):
        shown = f"{'-inf' if low is None else f'{low:,}'}..{'inf' if high is None else f'{high:,}'}"
        raise BenchError(f"{owner}: parameter {f.name}={text} is out of range; allowed: {shown}")


def check_positions(strategy, positions):
    """A one-line error, before any pass, when a parameter that counts passes or positions
    (``per_position``) is more than the inputs' ``positions`` can use."""
    if not is_dataclass(strategy):
        return
    for f in fields(strategy):
        times = f.metadata.get("per_position")
        value = getattr(strategy, f.name)
        if times is not None and value > times * positions:
            raise BenchError(f"{strategy.name}: parameter {f.name}={value} is more than inputs of {positions} "
                             f"positions can use; at most {times * positions:,} ({times} x {positions})")


def cast_value(type_name, text):
    """``text`` as a value of the type called ``type_name`` (int, float, bool, str); ValueError if it
    is not one. The one rule for every KEY=VALUE on the command line: booleans are true or false;
    floats are finite; ints fit 64 bits."""
    if type_name == "bool":
        if text.lower() not in BOOLEANS:
            raise ValueError(f"{text!r} is not a bool (true or false)")
        return BOOLEANS[text.lower()]
    try:
        value = {"int": int, "float": float}.get(type_name, str)(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a {type_name}") from None
    if type_name == "float" and not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite float")
    if type_name == "int" and not -INT_LIMIT <= value < INT_LIMIT:
        raise ValueError(f"{text!r} is out of range (a 64-bit integer)")
    return value


def field_type_name(f):
    """The name of a dataclass field's type, whether annotated with the type or a string."""
    return getattr(f.type, "__name__", str(f.type))


def set_fields(config, pairs, what):
    """Apply KEY=VALUE strings to the dataclass instance ``config``, typed by its fields; one-line
    BenchErrors name an unknown key or a bad value (of the wrong type, or outside the field's
    range, ``value_range``)."""
    by_name = {f.name: f for f in fields(config)}
    for pair in pairs:
        key, eq, text = (part.strip() for part in pair.partition("="))
        if not eq:
            raise BenchError(f"{what}: {pair!r} needs the form key=value")
        if key not in by_name:
            raise BenchError(f"unknown setting {key!r} for {what}{closest(key, by_name)}; "
                             f"allowed: {', '.join(by_name)}")
        try:
            value = cast_value(field_type_name(by_name[key]), text)
        except ValueError as err:
            raise BenchError(f"{what}: {key}={text!r}: {err}") from None
        check_range(what, by_name[key], value, text)
        setattr(config, key, value)
    return config


def check_choice(cls, f, value, text):
    choices = f.metadata.get("choices")
    if choices and value not in choices:
        raise BenchError(f"{cls.name}: {f.name}={text!r} is not allowed; choose from: "
                         f"{', '.join(choices)}{closest(text, choices)}")


def parse_strategy(spec):
    """Build a strategy from 'name' or 'name:key=value,...'; one-line errors for bad input (an
    unknown name or key, a key given twice, a value of the wrong type or out of range)."""
    name, _, arg_text = spec.partition(":")
    cls = lookup("strategy", name.strip(), STRATEGIES)
    by_name = {f.name: f for f in fields(cls)}
    kwargs = {}
    for pair in filter(None, (p.strip() for p in arg_text.split(","))):
        key, eq, text = (part.strip() for part in pair.partition("="))
        if not eq:
            raise BenchError(f"{cls.name}: parameter {pair!r} needs the form key=value")
        if key not in by_name:
            allowed = ", ".join(by_name) or "none"
            raise BenchError(f"unknown parameter {key!r} for strategy {cls.name!r}{closest(key, by_name)}; "
                             f"allowed: {allowed}")
        if key in kwargs:  # one value per key: 'name:k=3,k=4' is ambiguous
            raise BenchError(f"{cls.name}: parameter {key} is given twice; give it once")
        try:
            kwargs[key] = cast_value(field_type_name(by_name[key]), text)
        except ValueError as err:
            raise BenchError(f"{cls.name}: parameter {key}: {err}") from None
        check_choice(cls, by_name[key], kwargs[key], text)
        check_range(cls.name, by_name[key], kwargs[key], text)
    try:
        return cls(**kwargs)
    except (ValueError, TypeError, OverflowError) as err:  # the strategy's own checks of its values
        raise BenchError(f"{cls.name}: {str(err).splitlines()[0] if str(err) else type(err).__name__}") from None


def at_omitted_default(strategy, f):
    """Whether field ``f`` is a parameter added to a strategy after runs of it were committed
    (metadata ``omit_default``), at its default: left out of the name, so those runs keep their
    identity."""
    return f.metadata.get("omit_default", False) and getattr(strategy, f.name) == f.default


def strategy_params(strategy):
    """{parameter: value} of a strategy as its run's identity records them: every field but one
    added later at its default (``omit_default``), so runs made before it existed keep their identity."""
    return {f.name: getattr(strategy, f.name) for f in fields(strategy) if not at_omitted_default(strategy, f)}


def canonical(strategy):
    """The full spec with every parameter resolved: 'name:k=2,order=confidence'. A parameter left
    empty (a helper file meaning "the task's shipped one") is left out: the helper's identity is
    recorded apart, so the name stays short; so is one added later at its default (``omit_default``)."""
    params = ",".join(f"{f.name}={getattr(strategy, f.name)}" for f in fields(strategy)
                      if getattr(strategy, f.name) != "" and not at_omitted_default(strategy, f))
    return f"{strategy.name}:{params}" if params else strategy.name
