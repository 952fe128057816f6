"""Templated multi-step grade-school word problems in GSM8K's format, deterministic from a seed.

Each template draws its numbers (small integers; every intermediate result a whole number >= 0),
a person and an object, and writes a question and a worked solution in GSM8K's style: one line
per step, ``a*b=<<a*b=c>>c``, then ``#### N``. A problem's *signature* is its template and its
numbers (not the name or object it wears). The split is by held-out number combinations: a
signature whose hash falls in the test share (10%) or the validation share (5%) belongs to that
split, and the training stream rejects every problem whose signature is not a training one, so
no test or validation problem (with any name or object) is ever trained on. The templates are
shared by all splits: the task measures decoding, not out-of-template generalisation.
"""
import hashlib
import json
import random
from pathlib import Path

DATA = Path(__file__).parent / "data"
VALIDATION_SET, TEST_SET = DATA / "validation.jsonl", DATA / "test.jsonl"
SIZES = {"validation": 500, "test": 1000}
SET_SEEDS = {"validation": 1, "test": 2}
PROMPT_LENGTH, GEN_LENGTH = 128, 96   # characters of the prompt and generation regions (multiples of 32:
#   semi-autoregressive blocks of 8, 16 or 32 positions, counted from position 0, start at the region)
MAX_QUESTION, MAX_ANSWER = PROMPT_LENGTH, GEN_LENGTH - 1   # an answer ends with at least one end-of-text

PEOPLE = [("Ana", "she"), ("Ben", "he"), ("Carla", "she"), ("Dev", "he"), ("Emma", "she"), ("Finn", "he"),
          ("Gina", "she"), ("Hugo", "he"), ("Ivy", "she"), ("Jack", "he"), ("Kira", "she"), ("Leo", "he"),
          ("Mia", "she"), ("Noah", "he"), ("Olga", "she"), ("Paul", "he"), ("Rosa", "she"), ("Sam", "he"),
          ("Tara", "she"), ("Omar", "he"), ("Lena", "she"), ("Raj", "he"), ("Zoe", "she"), ("Max", "he")]
THINGS = ["apples", "pens", "cards", "stickers", "marbles", "cookies", "books", "shells", "stamps", "coins",
          "candies", "beads", "toys", "rocks", "plums", "eggs", "balls", "cups"]


class Steps:
    """Builds a solution: each operation returns its result and records its GSM8K line."""

    def __init__(self):
        self.lines = []

    def op(self, a, sign, b):
        value = {"+": a + b, "-": a - b, "*": a * b, "/": a // b if b and a % b == 0 else None}[sign]
        if value is None or value < 0:
            raise ValueError("not a whole number")
        expr = f"{a}{sign}{b}"
        self.lines.append(f"{expr}=<<{expr}={value}>>{value}")
        return value

    def answer(self, value):
        return "\n".join(self.lines + [f"#### {value}"])


def _who(r):
    name, pron = r.choice(PEOPLE)
    return name, pron.capitalize()


def _other(r, *names):
    return r.choice([p for p, _ in PEOPLE if p not in names])


# Each template: (rng) -> (numbers, question, Steps, final value). Names and objects vary freely.
def t01(r):
    a, b, c = r.randint(2, 9), r.randint(2, 9), r.randint(1, 12)
    n, p = _who(r)
    t = r.choice(THINGS)
    s = Steps()
    s.op(s.op(a, "*", b), "-", c)
    return (a, b, c), f"{n} buys {a} packs of {b} {t}. {p} gives away {c}. How many {t} are left?", s


def t02(r):
    a, b, c = r.randint(5, 40), r.randint(2, 30), r.randint(1, 20)
    n, p = _who(r)
    t = r.choice(THINGS)
    s = Steps()
    s.op(s.op(a, "+", b), "-", c)
    return (a, b, c), f"{n} has {a} {t}. {p} gets {b} more and loses {c}. How many {t} does {n} have now?", s


def t03(r):
    a, b, c = r.randint(2, 9), r.randint(3, 12), r.randint(1, 9)
    n, _ = _who(r)
    t = r.choice(THINGS)
    s = Steps()
    s.op(s.op(a, "*", b), "+", c)
    return (a, b, c), f"{n} has {a} boxes with {b} {t} each and {c} loose {t}. How many {t} in all?", s


def t04(r):
    a, b, c = r.randint(5, 15), r.randint(2, 8), r.randint(1, 30)
    n, p = _who(r)
    s = Steps()
    s.op(s.op(a, "*", b), "-", c)
    return (a, b, c), f"{n} earns ${a} an hour and works {b} hours. {p} spends ${c}. How much money is left?", s


def t05(r):
    k, q, c = r.randint(2, 8), r.randint(3, 12), r.randint(1, 3)
    c = min(c, q - 1)
    n, _ = _who(r)
    t = r.choice(THINGS)
    s = Steps()
    s.op(s.op(k * q, "/", k), "-", c)
    return ((k, q, c), f"{n} shares {k * q} {t} equally among {k} friends. Each friend loses {c}. "
            f"How many does each have?", s)


def t06(r):
    a, b, c, d = r.randint(2, 6), r.randint(2, 9), r.randint(2, 6), r.randint(2, 9)
    n, p = _who(r)
    t = r.choice(THINGS)
    s = Steps()
    s.op(s.op(a, "*", b), "+", s.op(c, "*", d))
    return (a, b, c, d), f"{n} buys {a} bags of {b} {t} and {c} bags of {d} {t}. How many {t} does {p.lower()} buy?", s


def t07(r):
    a, b, c, d, e = r.randint(2, 6), r.randint(2, 9), r.randint(2, 6), r.randint(2, 9), r.randint(1, 9)
    n, p = _who(r)
    t = r.choice(THINGS)
    s = Steps()
    s.op(s.op(s.op(a, "*", b), "+", s.op(c, "*", d)), "-", e)
    return ((a, b, c, d, e), f"{n} gets {a} packs of {b} {t} and {c} packs of {d} {t}. {p} loses {e}. "
            f"How many are left?", s)


def t08(r):
    a, b = r.randint(3, 15), r.randint(2, 7)
    total = a * b + r.randint(5, 60)
    n, p = _who(r)
    s = Steps()
    s.op(total, "-", s.op(a, "*", b))
    return ((a, b, total), f"A book has {total} pages. {n} reads {a} pages a day for {b} days. "
            f"How many pages are left?", s)


def t09(r):
    a, b, c, d = r.randint(3, 12), r.randint(2, 8), r.randint(1, 15), r.randint(2, 20)
    n, p = _who(r)
    s = Steps()
    s.op(s.op(s.op(a, "*", b), "-", c), "+", d)
    return ((a, b, c, d), f"{n} saves ${a} a week for {b} weeks, spends ${c}, then gets ${d}. "
            f"How much does {p.lower()} have?", s)


def t10(r):
    a, b, d = r.randint(2, 5), r.randint(4, 12), r.randint(2, 6)
    c = (a * b) % d + d * r.randint(0, 2)
    if c >= a * b:
        c = (a * b) % d
    n, p = _who(r)
    s = Steps()
    s.op(s.op(s.op(a, "*", b), "-", c), "/", d)
    return ((a, b, c, d), f"{n} bakes {a} trays of {b} cookies and eats {c}. {p} packs the rest in bags of {d}. "
            f"How many bags?", s)


def t11(r):
    a, c = r.randint(3, 20), r.randint(1, 5)
    n, _ = _who(r)
    m = _other(r, n)
    k = _other(r, n, m)
    t = r.choice(THINGS)
    s = Steps()
    twice = s.op(2, "*", a)
    fewer = s.op(twice, "-", c)
    s.op(s.op(a, "+", twice), "+", fewer)
    return ((a, c), f"{n} has {a} {t}. {m} has twice as many. {k} has {c} fewer than {m}. How many in all?", s)


def t12(r):
    a, b = r.randint(3, 12), r.randint(4, 12)
    c = r.randint(1, a * b - 1)
    s = Steps()
    s.op(s.op(a, "*", b), "-", c)
    return (a, b, c), f"A hall has {a} rows of {b} chairs. {c} chairs are taken. How many chairs are free?", s


def t13(r):
    a, b = r.randint(2, 9), r.randint(2, 9)
    bill = r.choice([b2 for b2 in (10, 20, 50, 100) if b2 >= a * b])
    n, p = _who(r)
    s = Steps()
    s.op(bill, "-", s.op(a, "*", b))
    return (a, b, bill), f"{n} buys {b} pens at ${a} each and pays with a ${bill} bill. How much change?", s


def t14(r):
    a, b, c, d = r.randint(2, 8), r.randint(2, 9), r.randint(2, 8), r.randint(2, 9)
    n, _ = _who(r)
    s = Steps()
    s.op(s.op(a, "*", b), "+", s.op(c, "*", d))
    return (a, b, c, d), f"{n} buys {a} hats at ${b} each and {c} mugs at ${d} each. How much does it cost?", s


def t15(r):
    a, b, c, d = r.randint(2, 5), r.randint(2, 9), r.randint(2, 5), r.randint(2, 9)
    bill = 50 if a * b + c * d <= 50 else 100
    n, _ = _who(r)
    s = Steps()
    s.op(bill, "-", s.op(s.op(a, "*", b), "+", s.op(c, "*", d)))
    return ((a, b, c, d, bill), f"{n} buys {a} kites at ${b} and {c} dolls at ${d}. "
            f"{n} pays ${bill}. How much change?", s)


def t16(r):
    a, b = r.randint(2, 9), r.randint(3, 10)
    c, d = r.randint(1, a * b - 1), r.randint(1, 20)
    n, _ = _who(r)
    s = Steps()
    s.op(s.op(s.op(a, "*", b), "-", c), "+", d)
    return ((a, b, c, d), f"{n} plants {a} rows of {b} roses. {c} die and {n} plants {d} more. "
            f"How many roses are there?", s)


def t17(r):
    a, b, c = r.randint(10, 50), r.randint(1, 9), r.randint(1, 20)
    d = r.randint(1, a - b + c)
    s = Steps()
    s.op(s.op(s.op(a, "-", b), "+", c), "-", d)
    return ((a, b, c, d), f"A bus has {a} people. {b} get off and {c} get on. Then {d} get off. "
            f"How many people are on the bus?", s)


def t18(r):
    a, b = 2 * r.randint(3, 30), r.randint(1, 25)
    n, p = _who(r)
    t = r.choice(THINGS)
    s = Steps()
    s.op(s.op(a, "/", 2), "+", b)
    return (a, b), f"{n} has {a} {t}. {p} gives half away and buys {b} more. How many {t} does {n} have?", s


def t19(r):
    third = r.randint(2, 20)
    total = 3 * third
    c = r.randint(1, 2 * third - 1)
    n, p = _who(r)
    t = r.choice(THINGS)
    s = Steps()
    gave = s.op(total, "/", 3)
    s.op(s.op(total, "-", gave), "-", c)
    return (total, c), f"{n} has {total} {t}. {p} gives a third away and loses {c}. How many are left?", s


def t20(r):
    a, b, c = r.randint(20, 60), r.randint(2, 5), r.randint(5, 40)
    n, p = _who(r)
    s = Steps()
    s.op(s.op(a, "*", b), "+", c)
    return (a, b, c), f"{n} drives {a} km an hour for {b} hours, then {c} km more. How far does {p.lower()} drive?", s


def t21(r):
    a, b, c = r.randint(2, 8), r.randint(2, 6), r.randint(2, 4)
    n, p = _who(r)
    s = Steps()
    s.op(s.op(a, "*", b), "*", c)
    return ((a, b, c), f"{n} works {a} hours a day, {b} days a week. "
            f"How many hours does {p.lower()} work in {c} weeks?", s)


def t22(r):
    a, b = r.randint(2, 15), r.randint(2, 15)
    n, _ = _who(r)
    s = Steps()
    s.op(s.op(a, "*", 4), "+", s.op(b, "*", 2))
    return (a, b), f"{n} has {a} dogs and {b} hens. How many legs do they have in all?", s


def t23(r):
    a = r.randint(5, 20)
    b = r.randint(2, 20)
    if (a + b) % 2:
        b += 1
    n, _ = _who(r)
    m = _other(r, n)
    k = _other(r, n, m)
    s = Steps()
    s.op(s.op(a, "+", b), "/", 2)
    return (a, b), f"{n} is {a}. {m} is {b} years older. {k} is half as old as {m}. How old is {k}?", s


def t24(r):
    a, b = r.randint(5, 20), r.randint(2, 6)
    total = a * b + r.randint(0, 50)
    c = r.randint(5, 40)
    s = Steps()
    s.op(s.op(total, "-", s.op(a, "*", b)), "+", c)
    return ((a, b, total, c), f"A tank holds {total} liters. {a} liters are used a day for {b} days, then {c} are "
            f"added. How many liters now?", s)


def t25(r):
    c = r.randint(2, 6)
    total = c * r.randint(2, 8)
    a = r.randint(1, total - 1)
    s = Steps()
    s.op(s.op(a, "+", total - a), "/", c)
    return (a, total - a, c), f"A class has {a} boys and {total - a} girls. They form teams of {c}. How many teams?", s


def t26(r):
    a, b, d = r.randint(2, 6), r.randint(4, 12), r.randint(2, 5)
    c = (a * b) % d + d * r.randint(0, 1)
    if c >= a * b:
        c = (a * b) % d
    n, _ = _who(r)
    s = Steps()
    s.op(s.op(s.op(a, "*", b), "-", c), "/", d)
    return ((a, b, c, d), f"{n} picks {a} bags of {b} plums. {c} are bad. The rest go into {d} equal pies. "
            f"How many plums per pie?", s)


def t27(r):
    a, b = r.randint(2, 20), r.randint(1, 9)
    n, p = _who(r)
    t = r.choice(THINGS)
    s = Steps()
    s.op(s.op(a, "*", 3), "-", b)
    return (a, b), f"{n} has {a} {t}. {p} triples them, then gives away {b}. How many {t} now?", s


def t28(r):
    a, b, c, d = r.randint(3, 9), r.randint(3, 8), r.randint(1, 4), r.randint(2, 5)
    if c * d > a * b:
        c = 1
    n, p = _who(r)
    s = Steps()
    s.op(s.op(a, "*", b), "-", s.op(c, "*", d))
    return ((a, b, c, d), f"{n} gets {a} stickers a day for {b} days. {p} gives {c} to each of {d} friends. "
            f"How many are left?", s)


def t29(r):
    a, b, c = r.randint(2, 12), r.randint(2, 12), r.randint(2, 7)
    n, _ = _who(r)
    m = _other(r, n)
    t = r.choice(THINGS)
    s = Steps()
    s.op(s.op(a, "+", b), "*", c)
    return (a, b, c), f"{n} finds {a} {t} a day and {m} finds {b} a day. How many do they find in {c} days?", s


def t30(r):
    a, b, c = r.randint(5, 30), r.randint(1, 15), r.randint(1, 10)
    n, _ = _who(r)
    m = _other(r, n)
    k = _other(r, n, m)
    s = Steps()
    more = s.op(a, "+", b)
    less = s.op(more, "-", c)
    s.op(s.op(a, "+", more), "+", less)
    return ((a, b, c), f"{n} scores {a} points. {m} scores {b} more than {n}. {k} scores {c} less than {m}. "
            f"Total?", s)


def t31(r):
    a, b = r.randint(2, 6), r.choice([6, 8, 10, 12])
    c, d = r.randint(2, 6), r.randint(1, 3)
    if c * d > a * b:
        d = 1
    s = Steps()
    s.op(s.op(a, "*", b), "-", s.op(c, "*", d))
    return ((a, b, c, d), f"There are {a} pizzas with {b} slices each. {c} kids eat {d} slices each. "
            f"How many slices are left?", s)


def t32(r):
    b, weeks = r.randint(2, 10), r.randint(2, 9)
    a = r.randint(1, 30)
    price = a + b * weeks
    n, p = _who(r)
    s = Steps()
    s.op(s.op(price, "-", a), "/", b)
    return ((price, a, b), f"A bike costs ${price}. {n} has ${a} and saves ${b} a week. "
            f"How many weeks until {p.lower()} can buy it?", s)


def t33(r):
    a, b = r.randint(2, 5), r.randint(10, 40)
    c = r.randint(1, a * b)
    s = Steps()
    s.op(s.op(a, "*", b), "-", c)
    return (a, b, c), f"There are {a} buses with {b} seats each. {c} people get on. How many seats are empty?", s


def t34(r):
    a, b = r.randint(3, 20), r.randint(3, 20)
    n, _ = _who(r)
    s = Steps()
    s.op(s.op(a, "+", b), "*", 2)
    return (a, b), f"{n}'s garden is {a} m long and {b} m wide. How many meters of fence go around it?", s


def t35(r):
    a, b, c = r.randint(2, 12), r.randint(2, 9), r.randint(2, 9)
    n, _ = _who(r)
    s = Steps()
    s.op(s.op(a, "*", b), "*", c)
    return (a, b, c), f"A room is {a} m by {b} m. Carpet costs ${c} per square meter. What does carpet cost?", s


def t36(r):
    b, c, d = r.randint(2, 15), r.randint(2, 20), r.randint(1, 20)
    a = b + c + r.randint(0, 40)
    n, p = _who(r)
    s = Steps()
    s.op(s.op(a, "-", s.op(b, "+", c)), "+", d)
    return ((a, b, c, d), f"{n} has ${a}. {p} spends ${b} on lunch and ${c} on a book, then gets ${d}. "
            f"How much now?", s)


def t37(r):
    a, b, c = r.randint(2, 10), r.randint(50, 400) // 10 * 10, r.randint(2, 7)
    n, _ = _who(r)
    s = Steps()
    s.op(s.op(a, "*", b), "*", c)
    return (a, b, c), f"{n} runs {a} laps of {b} meters a day. How many meters does {n} run in {c} days?", s


def t38(r):
    a, b, c = r.randint(2, 8), r.randint(1, 3), r.choice([6, 12])
    d = c * r.randint(1, 4)
    while (a * b * d) % c:
        d += 1
    n, _ = _who(r)
    s = Steps()
    s.op(s.op(s.op(a, "*", b), "*", d), "/", c)
    return ((a, b, c, d), f"{n} has {a} hens that lay {b} eggs a day each. Eggs go in boxes of {c}. "
            f"How many boxes in {d} days?", s)


def t39(r):
    a, b = r.randint(2, 8), r.randint(5, 20)
    c = r.randint(1, a * b // 2)
    d = r.randint(1, c)
    s = Steps()
    s.op(s.op(s.op(a, "*", b), "-", c), "+", d)
    return ((a, b, c, d), f"A library has {a} shelves of {b} books. {c} books are lent and {d} come back. "
            f"How many books are there?", s)


def t40(r):
    a, b, c = r.randint(2, 9), r.randint(2, 8), r.randint(2, 5)
    s = Steps()
    s.op(s.op(a, "*", b), "*", c)
    return (a, b, c), f"A party has {a} tables of {b} guests. Each guest gets {c} balloons. How many balloons?", s


def t41(r):
    a, b, c, d = r.randint(2, 6), r.randint(6, 12), r.randint(1, 3), r.randint(2, 6)
    e = r.randint(1, 15)
    if c * d > a * b:
        c = 1
    n, p = _who(r)
    s = Steps()
    s.op(s.op(s.op(a, "*", b), "-", s.op(c, "*", d)), "+", e)
    return ((a, b, c, d, e), f"{n} buys {a} boxes of {b} pencils, gives {c} to each of {d} kids and buys {e} more. "
            f"How many now?", s)


def t42(r):
    a, b, c, d = r.randint(3, 12), r.randint(2, 5), r.randint(3, 12), r.randint(2, 5)
    total = a * b + c * d + r.randint(1, 60)
    n, _ = _who(r)
    s = Steps()
    s.op(total, "-", s.op(s.op(a, "*", b), "+", s.op(c, "*", d)))
    return ((a, b, c, d, total), f"{n}'s book has {total} pages. {n} reads {a} a day for {b} days, then {c} a day "
            f"for {d} days. Pages left?", s)


def t43(r):
    a, b, c, d = r.randint(5, 15), r.randint(2, 6), r.randint(5, 15), r.randint(2, 6)
    e = r.randint(1, a * b + c * d)
    n, p = _who(r)
    s = Steps()
    s.op(s.op(s.op(a, "*", b), "+", s.op(c, "*", d)), "-", e)
    return ((a, b, c, d, e), f"{n} earns ${a} an hour for {b} hours and ${c} an hour for {d} hours. "
            f"{p} spends ${e}. Left?", s)


def t44(r):
    a, b = r.randint(5, 40), r.randint(2, 6)
    n, _ = _who(r)
    m = _other(r, n)
    t = r.choice(THINGS)
    s = Steps()
    s.op(a, "+", s.op(a, "*", b))
    return (a, b), f"{n} has {a} {t}. {m} has {b} times as many. How many {t} do they have together?", s


TEMPLATES = [t01, t02, t03, t04, t05, t06, t07, t08, t09, t10, t11, t12, t13, t14, t15, t16, t17, t18, t19, t20,
             t21, t22, t23, t24, t25, t26, t27, t28, t29, t30, t31, t32, t33, t34, t35, t36, t37, t38, t39, t40,
             t41, t42, t43, t44]


def split_of(template, numbers):
    """'test' (10% of signatures), 'validation' (5%) or 'train', by the hash of the signature."""
    share = int(hashlib.sha256(f"{template}:{numbers}".encode()).hexdigest()[:8], 16) % 100
    return "test" if share < 10 else "validation" if share < 15 else "train"


def draw(r):
    """(signature, problem dict) of one problem drawn from ``r``: a random template, redrawn until
    its steps stay whole numbers >= 0 and its question and answer fit the task's regions
    (MAX_QUESTION, MAX_ANSWER characters)."""
    while True:
        template = r.randrange(len(TEMPLATES))
        try:
            numbers, question, steps = TEMPLATES[template](r)
        except ValueError:   # a step left the whole numbers >= 0: draw again
            continue
        answer = steps.answer(int(steps.lines[-1].rsplit(">>", 1)[1]))
        if len(question) <= MAX_QUESTION and len(answer) <= MAX_ANSWER:
            return (template, numbers), {"question": question, "answer": answer}


def signed_problems(split, n, seed):
    """[(signature, problem)] of ``n`` problems of ``split`` from ``seed``: distinct signatures
    for the validation and test sets; repeats allowed for 'train' (a training stream)."""
    r = random.Random(f"gsm-{split}-{seed}")
    seen, out = set(), []
    while len(out) < n:
        signature, problem = draw(r)
        if split_of(*signature) != split or (split != "train" and signature in seen):
            continue
        seen.add(signature)
        out.append((signature, problem))
    return out


def problems(split, n, seed):
    """The problems of ``signed_problems``."""
    return [problem for _, problem in signed_problems(split, n, seed)]


def write_sets():
    """Write the shipped validation and test files (`python -m tasks.gsm.generate`)."""
    for split, path in (("validation", VALIDATION_SET), ("test", TEST_SET)):
        lines = [json.dumps(p) + "\n" for p in problems(split, SIZES[split], SET_SEEDS[split])]
        path.write_text("".join(lines))
        print(f"wrote {path} ({len(lines)} problems)")


if __name__ == "__main__":
    write_sets()
