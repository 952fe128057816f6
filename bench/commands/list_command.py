"""`bench list`: every task (with its data builders), strategy, helper trainer and preset."""
from bench.presets import PRESETS, unswept
from bench.registry import STRATEGIES, TASKS, TRAINERS, load_plugins, param_help, register_command


def task_protocols():
    """Every TaskProtocol a registered strategy requires (bench.protocols), each once."""
    found = []
    for cls in STRATEGIES.values():
        found += [p for p in cls.requires if p not in found]
    return found


def print_tasks():
    print("tasks:")
    for name, cls in sorted(TASKS.items()):
        print(f"  {name:12s} {cls.__doc__.splitlines()[0]}")
        for option, text in cls.options.items():
            print(f"  {'':12s}   --{option}: {text}")
        for target, (text, _) in cls().data_builders().items():
            print(f"  {'':12s}   bench data {target}: {text}")
        if cls().missing():
            print(f"  {'':12s}   needs: {cls.install} (not installed: {', '.join(cls().missing())})")
        supported = [p.name for p in task_protocols() if not p.missing(cls)]
        print(f"  {'':12s}   supports: {', '.join(supported) if supported else 'no helper protocol'}")


@register_command("list", "tasks, strategies and presets with their parameters and defaults", lambda parser: None)
def list_everything(args=None):
    load_plugins()
    print_tasks()
    print("strategies (name:key=value,...):")
    for name, cls in sorted(STRATEGIES.items()):
        print(f"  {name:12s} {cls.__doc__.splitlines()[0]}")
        print(f"  {'':12s}   {param_help(cls)}")
    print("helpers (bench train NAME --task T KEY=VALUE...):")
    for name, trainer in sorted(TRAINERS.items()):
        print(f"  {name:12s} {trainer.help}")
    print("presets (run --preset NAME):")
    for name, preset in PRESETS.items():
        print(f"  {name:12s} {preset.about}")
    if unswept(STRATEGIES):
        print(f"not in any task's paper sweep (tasks/<name>/presets.py): {', '.join(unswept(STRATEGIES))}")
