"""Exact pairwise conditional mutual information of a masked model, by probing it.

For a context C and masked positions i, j:

    I(X_i; X_j | C) = H(X_j | C) - sum_v p(X_i = v | C) H(X_j | X_i = v, C)

One base pass gives every p(X_j | C); one pass with X_i set to v gives p(X_j | X_i = v, C).
The model's conditionals need not be consistent, so the value computed by conditioning on i
(``mi[i, j]``) can differ from the one computed by conditioning on j (``mi[j, i]``): both are
kept, and ``symmetric`` forms their mean. Everything is in nats.
"""
import torch


def entropy_of(logits):
    """[..., V] logits -> [...] entropy in nats (exactly 0 where saturated)."""
    return torch.special.entr(torch.softmax(logits.float(), dim=-1)).sum(-1)


def conditioned_batch(tokens, masked, positions, value_tokens):
    """Copies of each row with ``positions[r]`` set to every value in turn.

    tokens, masked: [R, N]; positions: [R] long; value_tokens: [V].
    Returns tokens [R * V, N] and masked [R * V, N] (row r's copies are rows r*V ... r*V+V-1).
    """
    n_values = len(value_tokens)
    rows = torch.arange(len(positions), device=tokens.device).repeat_interleave(n_values)
    tokens_v, masked_v = tokens[rows].clone(), masked[rows].clone()
    where = positions.repeat_interleave(n_values)
    tokens_v[torch.arange(len(rows), device=tokens.device), where] = value_tokens.repeat(len(positions))
    masked_v[torch.arange(len(rows), device=tokens.device), where] = False
    return tokens_v, masked_v


def mi_given_positions(model, tokens, masked, base_logits, positions, chunk=4096):
    """I(X_i; X_j | C) for i = positions[r] (one per row) and every j: float [R, N].

    base_logits [R, N, V] are the model's logits on (tokens, masked). Entries for unmasked j
    and for j = i are 0. Uses R * V extra passes, ``chunk`` rows per model call.
    """
    n_values = base_logits.shape[-1]
    rows = torch.arange(len(positions), device=positions.device)
    probs_i = torch.softmax(base_logits.float(), -1)[rows, positions]                          # [R, V]
    tokens_v, masked_v = conditioned_batch(tokens, masked, positions, model.value_tokens.to(tokens.device))
    cond_entropy = torch.cat([entropy_of(model(tokens_v[s:s + chunk], masked_v[s:s + chunk]).logits)
                              for s in range(0, len(tokens_v), chunk)])                      # [R*V, N]
    expected = (probs_i[..., None] * cond_entropy.view(len(positions), n_values, -1)).sum(1)   # [R, N]
    mi = entropy_of(base_logits) - expected
    keep = masked.clone()
    keep[rows, positions] = False
    return mi * keep


def exact_mi(model, tokens, masked, chunk=4096, rows=None):
    """Directed exact MI of each context: float [B, N, N], mi[b, i, j] conditions on i.

    Costs 1 + n_masked * V passes per context, run in batches of ``chunk`` rows. ``rows``
    ([B, N] bool, within ``masked``) limits the conditioning positions; other rows stay 0.
    """
    batch, n = tokens.shape
    base_logits = model(tokens, masked).logits                              # [B, N, V]
    rows, positions = (masked if rows is None else rows & masked).nonzero(as_tuple=True)  # conditioning (b, i)
    mi = torch.zeros(batch, n, n, device=tokens.device)
    per_call = max(1, chunk // base_logits.shape[-1])
    for s in range(0, len(rows), per_call):
        r, p = rows[s:s + per_call], positions[s:s + per_call]
        mi[r, p] = mi_given_positions(model, tokens[r], masked[r], base_logits[r], p, chunk)
    return mi


def symmetric(mi):
    """The symmetric matrix the estimator learns: the mean of both directions."""
    return 0.5 * (mi + mi.transpose(-1, -2))


def label_target(mi, pairs="both"):
    """What the estimator learns and is scored against from probed labels (NaN: a row not probed).
    ``pairs`` "both": the mean of both directions, NaN unless both rows were probed; "either": also
    the one probed direction where only one was (a probed row against every masked column: many
    more pairs from a few probed positions, each one direction's value for the symmetric mean)."""
    both = symmetric(mi)
    if pairs == "both":
        return both
    flipped = mi.transpose(-1, -2)
    return torch.where(mi.isnan(), flipped, torch.where(flipped.isnan(), mi, both))
