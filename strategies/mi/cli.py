"""`bench mi labels|eval` and `bench train mi`: the MI label sets and the estimator. Loaded to
build the command line, so it imports no model code at the top."""
from bench.errors import BenchError
from bench.registry import make_task, register_command, register_trainer, set_fields
from bench.training import setup_log
from strategies.mi import SPLITS


def add_mi_arguments(mi):
    mi.add_argument("action", choices=("labels", "eval"), help="labels: make a label set; eval: score the estimator")
    mi.add_argument("--task", required=True, help="the task whose model's MI is labelled or estimated")
    mi.add_argument("--model", help="the task's --model whose MI is labelled or estimated (default: its own)")
    mi.add_argument("--split", default="train", help="labels only: train, heldout or ood (default train)")
    mi.add_argument("--n", type=int, help="labels only: number of contexts (default: the task's mi_label_sizes)")
    mi.add_argument("--probe", type=int, help="labels only: probed positions per context, 0 = all "
                                              "(default: the task's mi_probe)")
    mi.add_argument("--device", default="cpu", help="where the model runs: auto, cpu (default), cuda or cuda:N")
    mi.add_argument("--dtype", default="float32", help="the model's dtype: float32 (default) or bfloat16 (autocast)")
    mi.add_argument("--out", default="results", help="eval only: results folder (default: results)")


def check_label_args(args):
    if args.split not in SPLITS:
        raise BenchError(f"unknown MI split {args.split!r}; choose from: {', '.join(SPLITS)}")
    if args.n is not None and args.n < 1:
        raise BenchError(f"--n must be at least 1, got {args.n}")
    if args.probe is not None and args.probe < 0:
        raise BenchError(f"--probe must be 0 (every masked position) or more, got {args.probe}")


@register_command("mi", "exact-MI label sets and the MI estimator's evaluation", add_mi_arguments)
def mi_command(args):
    from bench.device import place, placement
    where = placement(args.device, args.dtype)
    task = make_task(args.task, model=args.model)
    if args.action == "labels":
        from strategies.mi.labels import make_labels
        check_label_args(args)
        if where.dtype != "float32":   # one label folder per model and split: its chunks must not mix precisions
            raise BenchError("bench mi labels makes exact-MI labels in float32 only; "
                             "drop --dtype (it applies to mi eval)")
        folder = make_labels(task, place(task.load_model(), where), args.split, args.n, 0, where.device, args.probe)
        print(f"label set: {folder}")
    else:
        from strategies.mi.evaluate import evaluate
        evaluate(task, args.out, where)


@register_trainer("mi", "the MI estimator of --task's model (needs its label sets: bench mi labels)")
def train_mi(task, settings, out):
    """`bench train mi --task T KEY=VALUE...`."""
    from strategies.mi.estimator import FILE_NAME
    from strategies.mi.train import MITrainConfig, train_estimator
    cfg = set_fields(MITrainConfig(), settings, "MI training")
    path = out or task.weights_dir / FILE_NAME
    setup_log(str(path).replace(".pt", ".log"))
    path = train_estimator(task, cfg, path)
    print(f"saved {path}")
