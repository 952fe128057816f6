"""The gsm task's text: its character vocabulary, GSM8K-format files, and GSM8K's answer extraction.

Token ids: 0 is the mask, 1 padding (left of a short question; given, never decoded), 2 the
end-of-text token, then one id per character of ``CHARS``. The values a model writes are
end-of-text and the characters (ids 2..), so the answer region of ``GEN_LENGTH`` positions holds
the solution and then end-of-text to its end (LLaDA's convention: the model decides the length).
"""
import json
import re
import string
from pathlib import Path

import torch

from bench.errors import BenchError
from bench.files import read_bytes
from tasks.gsm.generate import GEN_LENGTH, PROMPT_LENGTH

MASK, PAD, EOT = 0, 1, 2
CHARS = string.ascii_letters + string.digits + " .,?!'$%:;()-+*/=<>#&\"\n"
FIRST_CHAR = 3
N_TOKENS = FIRST_CHAR + len(CHARS)
N_VALUES = N_TOKENS - EOT          # end-of-text and the characters
CHAR_ID = {c: FIRST_CHAR + i for i, c in enumerate(CHARS)}
LENGTH = PROMPT_LENGTH + GEN_LENGTH
DATA_LIMIT = 200 * 2 ** 20          # bytes of a --data file

STRICT = re.compile(r"#### (\-?[0-9\.\,]+)")                   # lm-evaluation-harness gsm8k "strict-match"
FLEXIBLE = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")            # its "flexible-extract" (last match)


def normalize(number):
    """The harness's answer normalisation: commas and dollar signs dropped, a final period too."""
    if number is None:
        return None
    return re.sub(r"\.$", "", number.replace(",", "").replace("$", ""))


def strict_answer(text):
    """The number after the first ``#### `` (normalised), or None."""
    found = STRICT.search(text)
    return normalize(found.group(1)) if found else None


def flexible_answer(text):
    """The last number in the text (normalised), or None."""
    found = FLEXIBLE.findall(text)
    return normalize(next(g for g in found[-1] if g)) if found else None


def unknown_chars(text):
    return sorted(set(text) - set(CHARS))


def read_problems(path):
    """(problems [{question, answer, line}], skipped ['line N: why']) of a GSM8K-format jsonl file.
    A line that is not a JSON object with string ``question`` and ``answer`` is a one-line
    BenchError naming it; a well-formed problem the task cannot hold (a character outside the
    vocabulary, a question or answer longer than its region, no ``#### N``) is skipped and named."""
    text = read_bytes(path, "GSM8K-format file", DATA_LIMIT).decode("utf-8", errors="replace")
    problems, skipped = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as err:
            raise BenchError(f"{path} line {number} is not JSON ({err.msg}); each line must be "
                             f'{{"question": ..., "answer": ...}}') from None
        if not (isinstance(item, dict) and isinstance(item.get("question"), str)
                and isinstance(item.get("answer"), str)):
            raise BenchError(f"{path} line {number} lacks a string question and answer; each line must be "
                             f'{{"question": ..., "answer": ...}}')
        why = unfit(item["question"], item["answer"])
        if why:
            skipped.append(f"{Path(path).name} line {number}: {why}, skipped")
        else:
            problems.append({"question": item["question"], "answer": item["answer"], "line": number})
    if not problems:
        raise BenchError(f"{path} holds no usable problem ({len(skipped)} skipped: "
                         f"{skipped[0] if skipped else 'the file is empty'})")
    return problems, skipped


def unfit(question, answer):
    """Why a problem cannot be held by the task ('' where it can)."""
    bad = unknown_chars(question + answer)
    if bad:
        return f"characters outside the vocabulary {''.join(bad)!r}"
    if len(question) > PROMPT_LENGTH:
        return f"question of {len(question)} characters, more than the prompt's {PROMPT_LENGTH}"
    if len(answer) >= GEN_LENGTH:
        return f"answer of {len(answer)} characters, not under the generation region's {GEN_LENGTH}"
    if strict_answer(answer) is None:
        return "answer without '#### N'"
    return ""


def encode(question, answer=None):
    """[LENGTH] token ids: the question left-padded to PROMPT_LENGTH, then the answer and
    end-of-text to the end (``answer`` None: the generation region left as masks)."""
    prompt = [PAD] * (PROMPT_LENGTH - len(question)) + [CHAR_ID[c] for c in question]
    region = ([MASK] * GEN_LENGTH if answer is None
              else [CHAR_ID[c] for c in answer] + [EOT] * (GEN_LENGTH - len(answer)))
    return prompt + region


def encode_batch(problems, with_answers):
    """[n, LENGTH] long tensor of ``problems`` (see ``encode``)."""
    return torch.tensor([encode(p["question"], p["answer"] if with_answers else None) for p in problems],
                        dtype=torch.long)


def generated_text(row):
    """The text of a decoded generation region (token ids), up to its first end-of-text; a masked
    or padding id there (never written by decoding) reads as nothing."""
    out = []
    for token in row:
        token = int(token)
        if token == EOT:
            break
        if token >= FIRST_CHAR:
            out.append(CHARS[token - FIRST_CHAR])
    return "".join(out)
