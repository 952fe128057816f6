"""`bench mi labels|eval` and `bench train mi`: the MI label sets and the estimator."""
from bench.errors import BenchError
from bench.registry import TASKS, _load_all, lookup


def add_mi_parser(sub):
    mi = sub.add_parser("mi", help="exact-MI label sets and the MI estimator's evaluation")
    mi.add_argument("action", choices=("labels", "eval"), help="labels: make a label set; eval: score the estimator")
    mi.add_argument("--task", required=True, help="sudoku or protein")
    mi.add_argument("--split", default="train", help="labels only: train, heldout or ood (default train)")
    mi.add_argument("--n", type=int, help="labels only: number of contexts (default: the split's size)")
    mi.add_argument("--probe", type=int, help="labels only: probed positions per context, 0 = all "
                                              "(default: the task's, bench/mi_labels.py DEFAULT_PROBE)")
    mi.add_argument("--device", default="cpu", help="where the model runs: cpu (default) or cuda")
    mi.add_argument("--out", default="results", help="eval only: results folder (default: results)")


def make_task(name):
    return lookup("task", name, TASKS)()


def mi_command(args):
    task = make_task(args.task)
    if args.action == "labels":
        from bench.mi_labels import SPLITS, make_labels
        if args.split not in SPLITS:
            raise BenchError(f"unknown MI split {args.split!r}; choose from: {', '.join(SPLITS)}")
        if args.n is not None and args.n < 1:
            raise BenchError(f"--n must be at least 1, got {args.n}")
        if args.probe is not None and args.probe < 0:
            raise BenchError(f"--probe must be 0 (every masked position) or more, got {args.probe}")
        folder = make_labels(task, task.load_model(), args.split, args.n, 0, args.device, args.probe)
        print(f"label set: {folder}")
    else:
        from bench.mi_eval import evaluate
        evaluate(task, args.out, args.device)


def train_mi(task_name, settings, out):
    """`bench train mi --task T KEY=VALUE...`."""
    _load_all()
    if not task_name:
        raise BenchError(f"bench train mi needs --task; choose from: {', '.join(sorted(TASKS))}")
    from bench.mi_train import MITrainConfig, train_estimator
    from bench.training import override, setup_log
    task = make_task(task_name)
    cfg = override(MITrainConfig(), settings)
    path = out or task.weights_dir / "mi_estimator.pt"
    setup_log(str(path).replace(".pt", ".log"))
    path = train_estimator(task, cfg, path)
    print(f"saved {path}")
