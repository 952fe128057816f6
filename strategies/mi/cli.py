"""`bench mi labels|eval` and `bench train mi`: the MI label sets and the estimator. Loaded to
build the command line, so it imports no model code at the top."""
from bench.errors import BenchError
from bench.registry import make_task, register_command, register_trainer, set_fields
from bench.training import setup_log
from strategies.mi import SPLITS

CURVE_SIZES = (20, 40, 80, 160, 320)


def add_mi_arguments(mi):
    mi.add_argument("action", choices=("labels", "eval", "curve"),
                    help="labels: make a label set; eval: score the estimator; curve: held-out Pearson against "
                         "the number of training contexts")
    mi.add_argument("--task", required=True, help="the task whose model's MI is labelled or estimated")
    mi.add_argument("--model", help="the task's --model whose MI is labelled or estimated (default: its own)")
    mi.add_argument("--split", default="train", help="labels only: train, heldout or ood (default train)")
    mi.add_argument("--n", type=int, help="labels: number of contexts; curve: the train set's (default: the "
                                          "task's mi_label_sizes)")
    mi.add_argument("--probe", type=int, help="labels only: probed positions per context, 0 = all "
                                              "(default: the task's mi_probe)")
    mi.add_argument("--device", default="cpu", help="where the model runs: auto, cpu (default), cuda or cuda:N")
    mi.add_argument("--dtype", default="float32", help="the model's dtype: float32 (default) or bfloat16 (autocast)")
    mi.add_argument("--out", help="eval: results folder (default: results); curve: report folder (default: reports)")
    mi.add_argument("--sizes", default=",".join(map(str, CURVE_SIZES)),
                    help="curve only: training contexts per point, each at most the train set's size "
                         f"(default {','.join(map(str, CURVE_SIZES))})")
    mi.add_argument("--seeds", default="0,1", help="curve only: training seeds per size (default 0,1)")


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
    elif args.action == "curve":
        learning_curve(task, args, where)
    else:
        from strategies.mi.evaluate import evaluate
        evaluate(task, args.out or "results", where)


def learning_curve(task, args, where):
    """`bench mi curve`: estimators trained as `bench train mi` trains them (on --device), on k
    train contexts (nested random subsets: strategies.mi.curve.subsets) for each size k and seed."""
    from bench.device import select
    from strategies.mi.curve import curve, parse_numbers
    from strategies.mi.train import MITrainConfig
    if args.n is not None and args.n < 1:
        raise BenchError(f"--n must be at least 1, got {args.n}")
    # at least 2: one context picks the epoch, the rest train
    sizes, seeds = parse_numbers(args.sizes, "--sizes", 2), parse_numbers(args.seeds, "--seeds", 0)
    select(where)   # seeded_model reads --device and --dtype as `bench train mi` does
    out = args.out or "reports"
    command = (f"python -m bench mi curve --task {task.name}{task.helper_flags()} --sizes {args.sizes} "
               f"--seeds {args.seeds}" + (f" --n {args.n}" if args.n else "") + f" --out {out}"
               + (f" --device {args.device}" if args.device != "cpu" else ""))
    curve(task, MITrainConfig(n_train=args.n or 0), sizes, seeds, out, command, args.model)


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
