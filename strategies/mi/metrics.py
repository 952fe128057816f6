"""How well predicted MI matches exact MI, over masked-masked pairs (i < j) of held-out contexts."""
import numpy as np
import torch

BINS = (0.0, 0.01, 0.1, 0.5, float("inf"))   # nats
TAUS = (0.01, 0.05)                          # "independent" means MI below tau


def pair_values(pred, target, masked):
    """1-D numpy arrays (pred, true) over pairs i < j that are both masked and labelled (not NaN)."""
    n = masked.shape[1]
    upper = torch.ones(n, n, dtype=torch.bool).triu(1)
    pairs = masked[:, :, None] & masked[:, None, :] & upper & ~target.isnan() & ~pred.isnan()
    return pred[pairs].double().numpy(), target[pairs].double().numpy()


def bin_errors(pred, true):
    """Mean absolute error and pair count per true-MI bin."""
    rows = []
    for low, high in zip(BINS[:-1], BINS[1:]):
        inside = (true >= low) & (true < high)
        mae = float(np.abs(pred[inside] - true[inside]).mean()) if inside.any() else None
        rows.append({"bin": f"[{low:g}, {high:g})", "pairs": int(inside.sum()), "mae": mae,
                     "mean_true": float(true[inside].mean()) if inside.any() else None,
                     "mean_pred": float(pred[inside].mean()) if inside.any() else None})
    return rows


def independence(pred, true, tau):
    """Precision and recall of calling a pair independent (MI < tau)."""
    called, actual = pred < tau, true < tau
    hits = float((called & actual).sum())
    return {"tau": tau, "precision": hits / max(called.sum(), 1), "recall": hits / max(actual.sum(), 1),
            "share_independent": float(actual.mean())}


def estimator_metrics(pred, true):
    """Every estimator quality number the suite reports."""
    from scipy import stats  # here, not at the top: every `bench run` loads this module
    return {"pairs": int(len(true)), "pearson": float(stats.pearsonr(pred, true)[0]),
            "spearman": float(stats.spearmanr(pred, true)[0]),
            "mae": float(np.abs(pred - true).mean()), "bins": bin_errors(pred, true),
            "independence": [independence(pred, true, tau) for tau in TAUS]}
