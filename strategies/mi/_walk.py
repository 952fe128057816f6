"""The greedy rule's walk in rank space, compiled with numba: apart from greedy.py so that numba is
imported only when an MI-guided rule first selects (a private module: the plugin loader skips it)."""
import numpy as np
from numba import njit


@njit(cache=True)
def walk(rows, in_order, n_masked, lam, ranked_mi, frontier, bound, step, budget, taken, count, picked, waits,
         ranks_per_step):
    """Walk ``rows`` of the greedy rule in rank space (float32 throughout, as greedy_select) until
    each is decided (waits -1) or needs MI past its frontier (frontier[b] * ranks_per_step ranks;
    waits = the frontier it needs moved)."""
    zero = np.float32(0)
    for b in rows:
        waits[b] = -1
        t = step[b]
        while t < n_masked[b]:
            entropy = in_order[b, t]
            if t > 0 and not entropy <= budget[b]:
                break                                        # nothing later fits
            penalty = zero
            if t > 0 and count[b] > 0:
                if t >= frontier[b] * ranks_per_step:
                    waits[b] = frontier[b]
                    break
                for k in range(count[b]):                    # max(MI, 0) of each taken position, in order
                    j = taken[b, k]
                    mi = min(ranked_mi[b, j, t], min(bound[b, j], bound[b, t]))
                    penalty += mi if mi > zero else zero
            cost = entropy + lam * penalty
            if t == 0 or cost <= budget[b]:
                left = budget[b] - cost
                budget[b] = left if left > zero else zero
                picked[b, t] = True
                if t + 1 < n_masked[b] and budget[b] > zero and in_order[b, t + 1] <= budget[b]:
                    taken[b, count[b]] = t                   # its MI enters later candidates' cost
                    count[b] += 1
            t += 1
        step[b] = t
