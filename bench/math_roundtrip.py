r"""Formulas typeset by LaTeX, read back by ocrserve: which kinds of formula come back as LaTeX
that renders like the source.

    .venv/bin/python bench/math_roundtrip.py --out artifacts/math_roundtrip.json
    .venv/bin/python bench/math_roundtrip.py --reuse artifacts/math_roundtrip   # rescore the last run

A seeded generator writes formulas of common kinds (scripts, fractions, radicals, sums and
integrals with limits, limits of functions, matrices, cases, accents, alphabets, delimiters,
binomials, derivatives, sets, braces, stacked limits, arrows with labels, congruences, boxes,
overlines and wide hats, text in a display, multi-line `align*`; since the eighth session also
nested scripts and primes, operators with limits under them, quantifiers and maps, a dotted
matrix, probability, sequences), as displays (`\[...\]`, numbered
`equation`) and inline in sentences. The kinds are textbook LaTeX written for this script, not
taken from any page of the real-page or fact sets (those keep their own maths facts). pdflatex
(Debian `texlive-latex-base`, with amsmath; `--install` installs it) typesets them into a PDF
of a few pages; `ocrserve run PDF --formats md,json` reads it with every option at its default
(the text layer `auto`, so formulas are rebuilt from the layer's glyphs and rules:
`vision.layer_math`); each formula is then scored on its page's Markdown as `bench/facts` scores
a math fact (`math_render.check_math`: equal after normalisation, or a KaTeX render that matches
symbol by symbol within 0.3 em). A row of `align*` is one formula, without its `&`.

Prints the pass rate per kind, display and inline, and the failures with what was written
instead; `--out` gets the same as JSON. Needs pdflatex, KaTeX (`npm ci`) and Debian's chromium,
as `bench/facts` does.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench" / "facts"))

from math_render import KatexRenderer, candidates, check_math  # noqa: E402

PER_PAGE = 7    # displays a page, each in a sentence of its own


class Formulas:
    """Formulas of each kind, drawn from a seeded generator."""

    LETTERS = "abcdefghkmnpqrstuvwxyz"
    CAPITALS = "ABCDEFGHKLMNPQRSTUVW"
    GREEK = [r"\alpha", r"\beta", r"\gamma", r"\delta", r"\epsilon", r"\theta", r"\lambda", r"\mu", r"\sigma",
             r"\phi", r"\omega", r"\xi", r"\rho", r"\tau", r"\psi", r"\Gamma", r"\Delta", r"\Omega", r"\Phi"]
    RELATIONS = ["=", "<", ">", r"\leq", r"\geq", r"\neq", r"\approx", r"\equiv", r"\sim", r"\subseteq", r"\in"]
    FUNCTIONS = [r"\sin", r"\cos", r"\log", r"\exp", r"\tan", r"\ln"]

    def __init__(self, seed: int):
        self.random = random.Random(seed)

    def pick(self, items):
        return self.random.choice(items)

    def letter(self) -> str:
        return self.pick(self.LETTERS)

    def symbol(self) -> str:
        roll = self.random.random()
        if roll < 0.55:
            return self.letter()
        if roll < 0.8:
            return self.pick(self.GREEK)
        return self.pick(self.CAPITALS)

    def number(self) -> str:
        return str(self.random.choice([1, 2, 3, 4, 5, 10, 12, 0]))

    def atom(self) -> str:
        roll = self.random.random()
        if roll < 0.7:
            return self.symbol()
        return self.number()

    def scripted(self) -> str:
        base, roll = self.symbol(), self.random.random()
        if roll < 0.35:
            return f"{base}_{{{self.letter()}}}"
        if roll < 0.65:
            return f"{base}^{{{self.pick(['2', '3', 'n', 'k', '-1'])}}}"
        return f"{base}_{{{self.letter()}}}^{{{self.pick(['2', 'n', 'k+1'])}}}"

    def term(self) -> str:
        return self.scripted() if self.random.random() < 0.5 else self.atom()

    def sum_of(self, count: int) -> str:
        terms = [self.term() for _ in range(count)]
        out = terms[0]
        for term in terms[1:]:
            out += f" {self.pick(['+', '-', '+'])} {term}"
        return out

    def relation(self) -> str:
        return self.pick(self.RELATIONS)

    # --- kinds: each returns the LaTeX of one formula (rows joined by \\ for align*)
    def scripts(self) -> str:
        return f"{self.scripted()} {self.relation()} {self.sum_of(self.random.randint(2, 3))}"

    def fraction(self) -> str:
        numerator, denominator = self.sum_of(self.random.randint(1, 2)), self.sum_of(self.random.randint(1, 2))
        if self.random.random() < 0.3:
            numerator = rf"\frac{{{self.atom()}}}{{{self.atom()}}}"
        return f"{self.scripted()} = \\frac{{{numerator}}}{{{denominator}}}"

    def radical(self) -> str:
        inside = self.sum_of(self.random.randint(1, 3))
        index = f"[{self.pick(['3', 'n'])}]" if self.random.random() < 0.3 else ""
        return f"{self.letter()} = \\sqrt{index}{{{inside}}}"

    def big_operator(self) -> str:
        operator = self.pick([r"\sum", r"\sum", r"\prod", r"\bigcup"])
        index = self.pick("ijk")
        lower, upper = f"{index}={self.pick(['0', '1'])}", self.pick(["n", r"\infty", "N"])
        body = f"{self.letter()}_{{{index}}}" if self.random.random() < 0.6 else f"{self.letter()}^{{{index}}}"
        return f"{self.pick(self.CAPITALS)} = {operator}_{{{lower}}}^{{{upper}}} {body}"

    def integral(self) -> str:
        lower, upper = self.pick([("0", "1"), ("0", r"\infty"), ("a", "b"), (r"-\infty", r"\infty")])
        variable = self.pick("xtu")
        return rf"\int_{{{lower}}}^{{{upper}}} {self.letter()}({variable}) \, d{variable} = {self.sum_of(2)}"

    def limit(self) -> str:
        variable = self.pick("xnt")
        target = self.pick(["0", r"\infty", "a"])
        function = self.pick(self.FUNCTIONS)
        return rf"\lim_{{{variable} \to {target}}} \frac{{{function} {variable}}}{{{variable}}} = {self.number()}"

    def matrix(self) -> str:
        kind = self.pick(["pmatrix", "bmatrix", "vmatrix"])
        size = self.random.randint(2, 3)
        rows = r" \\ ".join(" & ".join(self.atom() for _ in range(size)) for _ in range(size))
        return f"{self.pick(self.CAPITALS)} = \\begin{{{kind}}} {rows} \\end{{{kind}}}"

    def cases(self) -> str:
        variable = self.letter()
        return (f"{self.pick(self.CAPITALS)}({variable}) = \\begin{{cases}} {self.sum_of(2)} & \\text{{if }} "
                f"{variable} > 0 \\\\ {self.atom()} & \\text{{otherwise}} \\end{{cases}}")

    def accents(self) -> str:
        accent = self.pick([r"\hat", r"\bar", r"\vec", r"\tilde", r"\dot"])
        return f"{accent}{{{self.letter()}}} {self.relation()} {self.sum_of(2)}"

    def alphabets(self) -> str:
        alphabet = self.pick([r"\mathbb", r"\mathcal", r"\mathbf"])
        letter = self.pick("RNZCFP") if alphabet != r"\mathbf" else self.letter()
        return f"{self.letter()} \\in {alphabet}{{{letter}}}^{{{self.pick(['n', '2', 'k'])}}}"

    def delimiters(self) -> str:
        roll = self.random.random()
        if roll < 0.4:
            return rf"\left( \frac{{{self.atom()}}}{{{self.atom()}}} \right)^{{2}} = {self.sum_of(2)}"
        if roll < 0.7:
            return rf"\| {self.letter()} \| {self.relation()} | {self.letter()} | + {self.atom()}"
        return rf"\langle {self.letter()}, {self.letter()} \rangle = {self.sum_of(2)}"

    def binomial(self) -> str:
        return rf"(1 + {self.letter()})^{{n}} = \sum_{{k=0}}^{{n}} \binom{{n}}{{k}} {self.letter()}^{{k}}"

    def functions(self) -> str:
        function = self.pick(self.FUNCTIONS)
        return f"{function} {self.letter()} {self.relation()} {self.sum_of(2)}"

    def dots(self) -> str:
        letter = self.letter()
        return rf"{self.pick(self.CAPITALS)} = {letter}_{{1}} + {letter}_{{2}} + \cdots + {letter}_{{n}}"

    def aligned(self) -> str:
        rows = [f"{self.scripted()} &= {self.sum_of(self.random.randint(2, 3))}" for _ in range(self.random.randint(2, 3))]
        return r" \\ ".join(rows)

    def calculus(self) -> str:
        function, variable = self.pick("fgh"), self.pick("xyt")
        roll = self.random.random()
        if roll < 0.35:
            return rf"\frac{{\partial {function}}}{{\partial {variable}}} = {self.sum_of(2)}"
        if roll < 0.7:
            return rf"{function}'({variable}) = {self.number()} {variable}^{{2}} + {self.letter()}"
        return rf"\nabla \cdot \mathbf{{{self.pick('FEBu')}}} = {self.pick(self.GREEK)}"

    def words(self) -> str:
        variable = self.letter()
        return (rf"{self.scripted()} = {self.sum_of(2)} \quad \text{{for all }} {variable} "
                rf"\in {self.pick(self.CAPITALS)}")

    def sets(self) -> str:
        variable = self.letter()
        if self.random.random() < 0.5:
            return rf"{self.pick(self.CAPITALS)} = \{{ {variable} \mid {variable} > {self.number()} \}}"
        return rf"\left[ {self.sum_of(2)} \right] \times {self.pick(self.CAPITALS)}"

    def braces(self) -> str:
        letter = self.letter()
        return rf"\underbrace{{{letter}_{{1}} + \cdots + {letter}_{{n}}}}_{{n}} = {self.pick(self.CAPITALS)}"

    def stacked(self) -> str:
        roll, letter = self.random.random(), self.letter()
        if roll < 0.25:
            return rf"\sum_{{\substack{{0 \le i \le m \\ 0 < j < n}}}} P(i, j)"
        if roll < 0.5:
            return rf"{letter} \xrightarrow{{f}} {self.pick(self.CAPITALS)} \xrightarrow{{g}} {self.pick(self.CAPITALS)}"
        if roll < 0.75:
            return rf"{self.pick(self.CAPITALS)} \overset{{\text{{def}}}}{{=}} {self.sum_of(2)}"
        return rf"{letter} \equiv {self.number()} \pmod{{{self.pick('mnp')}}}"

    def decorated(self) -> str:
        roll, letter = self.random.random(), self.letter()
        if roll < 0.25:
            return rf"\overline{{{letter} + {self.letter()}}} = \bar{{{letter}}} + {self.letter()}"
        if roll < 0.5:
            return rf"\widehat{{{letter}{self.letter()}}} = {self.sum_of(2)}"
        if roll < 0.75:
            return rf"\boxed{{{self.scripted()} = {self.sum_of(2)}}}"
        return rf"{self.letter()} = \dfrac{{{self.atom()}}}{{{self.sum_of(2)}}}"

    def nested(self) -> str:
        """Scripts of scripts, primes, a root of a fraction, an exponent of an expression."""
        roll, letter = self.random.random(), self.letter()
        if roll < 0.25:
            return rf"{letter}_{{i,j}}^{{({self.pick('kn')})}} = {self.sum_of(2)}"
        if roll < 0.5:
            return rf"{self.pick('fgh')}''({letter}) {self.relation()} {self.sum_of(2)}"
        if roll < 0.75:
            return rf"{letter} = \sqrt{{\frac{{{self.atom()}}}{{{self.atom()}}}}}"
        return rf"{self.pick(self.CAPITALS)} = e^{{-{letter}^{{2}}/2}}"

    def optimise(self) -> str:
        """Operators with limits set under them: max, min, sup and inf over a set."""
        operator = self.pick([r"\max", r"\min", r"\sup", r"\inf"])
        variable = self.pick("xyt")
        return rf"{self.pick(self.CAPITALS)} = {operator}_{{{variable} \in {self.pick(self.CAPITALS)}}} {self.pick('fgh')}({variable})"

    def logic(self) -> str:
        """Quantifiers, implications, maps."""
        roll, letter = self.random.random(), self.letter()
        if roll < 0.35:
            return rf"\forall {letter} \in {self.pick(self.CAPITALS)} \; \exists {self.letter()} : {self.letter()} > {letter}"
        if roll < 0.7:
            return rf"{self.pick(self.CAPITALS)} \implies {self.pick(self.CAPITALS)} \iff {self.pick(self.CAPITALS)}"
        return rf"{self.pick('fgh')} \colon {self.pick(self.CAPITALS)} \to {self.pick(self.CAPITALS)}, \; {letter} \mapsto {letter}^{{2}}"

    def dotted_matrix(self) -> str:
        letter = self.letter()
        return (rf"{self.pick(self.CAPITALS)} = \begin{{pmatrix}} {letter}_{{11}} & \cdots & {letter}_{{1n}} \\ "
                rf"\vdots & \ddots & \vdots \\ {letter}_{{m1}} & \cdots & {letter}_{{mn}} \end{{pmatrix}}")

    def probability(self) -> str:
        roll = self.random.random()
        if roll < 0.5:
            return rf"\Pr({self.pick(self.CAPITALS)} \mid {self.pick(self.CAPITALS)}) = \frac{{{self.atom()}}}{{{self.atom()}}}"
        return rf"\mathbb{{E}}[{self.pick('XYZ')}] = \sum_{{i}} {self.letter()}_{{i}} {self.letter()}_{{i}}"

    def sequences(self) -> str:
        letter = self.letter()
        return rf"{self.pick(self.CAPITALS)} = \{{ {letter}_{{1}}, {letter}_{{2}}, \ldots, {letter}_{{n}} \}}"

    KINDS = ("scripts", "fraction", "radical", "big_operator", "integral", "limit", "matrix", "cases", "accents",
             "alphabets", "delimiters", "binomial", "functions", "dots", "aligned", "calculus", "words", "sets",
             "braces", "stacked", "decorated", "nested", "optimise", "logic", "dotted_matrix", "probability",
             "sequences")
    INLINE_KINDS = ("scripts", "fraction", "radical", "big_operator", "accents", "alphabets", "delimiters",
                    "functions", "dots", "calculus", "sets", "nested", "logic", "probability", "sequences")


SENTENCES = ["Consider the relation", "It follows that", "By the previous lemma we have", "We define",
             "Hence one obtains", "A direct computation gives", "Recall that", "Note that"]


def build_items(seed: int, displays_per_kind: int, inline_per_kind: int) -> list[dict]:
    formulas = Formulas(seed)
    items = []
    for kind in Formulas.KINDS:
        for k in range(displays_per_kind):
            items.append({"kind": kind, "mode": "numbered" if kind != "aligned" and k % 3 == 2 else "display",
                          "latex": getattr(formulas, kind)()})
    for kind in Formulas.INLINE_KINDS:
        for _ in range(inline_per_kind):
            items.append({"kind": kind, "mode": "inline", "latex": getattr(formulas, kind)()})
    formulas.random.shuffle(items)
    for number, item in enumerate(items):
        item["id"] = f"f{number:03d}"
        item["sentence"] = formulas.pick(SENTENCES)
    return items


def references(item: dict) -> list[str]:
    """The formulas a reader should write for an item: one per row of an `align*`."""
    if item["mode"] == "display" and item["kind"] == "aligned":
        return [row.replace("&", "").strip() for row in item["latex"].split(r" \\ ")]
    return [item["latex"]]


def document(items: list[dict]) -> str:
    body = []
    for k, item in enumerate(items):
        if k and k % PER_PAGE == 0:
            body.append(r"\newpage")
        if item["mode"] == "inline":
            body.append(f"{item['sentence']} ${item['latex']}$ for every admissible choice, as shown in the text "
                        "above and used again in what follows.\n")
        elif item["kind"] == "aligned":
            body.append(f"{item['sentence']}\n\\begin{{align*}}\n{item['latex']}\n\\end{{align*}}\n")
        elif item["mode"] == "numbered":
            body.append(f"{item['sentence']}\n\\begin{{equation}}\n{item['latex']}\n\\end{{equation}}\n")
        else:
            body.append(f"{item['sentence']}\n\\[\n{item['latex']}\n\\]\n")
    return ("\\documentclass[11pt]{article}\n\\usepackage{amsmath,amssymb}\n\\pagestyle{empty}\n"
            "\\begin{document}\n" + "\n".join(body) + "\n\\end{document}\n")


def typeset(items: list[dict], work: Path) -> Path:
    (work / "formulas.tex").write_text(document(items))
    for _ in range(2):
        done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "formulas.tex"],
                              cwd=work, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"pdflatex failed:\n{done.stdout[-2000:]}")
    return work / "formulas.pdf"


def run_ocrserve(pdf: Path, out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    command = [str(Path(sys.executable).parent / "ocrserve"), "run", str(pdf), "--out", str(out),
               "--formats", "md,json", "--force", "--quiet"]
    started = time.perf_counter()
    with open(out / "run.log", "w") as log:
        code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT).returncode
    if code != 0:
        raise SystemExit(f"ocrserve run failed ({code}); see {out / 'run.log'}")
    return {"wall_s": round(time.perf_counter() - started, 1)}


def page_markdown(markdown: str) -> list[str]:
    return re.split(r"^<!-- page \d+ -->\n", markdown, flags=re.MULTILINE)[1:]


def score(items: list[dict], pages: list[str], renderer: KatexRenderer) -> list[dict]:
    rows = []
    for k, item in enumerate(items):
        markdown = pages[k // PER_PAGE] if k // PER_PAGE < len(pages) else ""
        for row, reference in enumerate(references(item)):
            result = check_math({"id": item["id"], "latex": reference}, markdown, renderer)
            rows.append({"id": f"{item['id']}.{row}", "kind": item["kind"], "mode": item["mode"],
                         "reference": reference, "passed": result["passed"], "how": result["how"]})
    return rows


def summarise(rows: list[dict]) -> dict:
    table: dict[str, dict[str, list[int]]] = {}
    for row in rows:
        mode = "inline" if row["mode"] == "inline" else "display"
        cell = table.setdefault(row["kind"], {}).setdefault(mode, [0, 0])
        cell[0] += row["passed"]
        cell[1] += 1
    passed = sum(row["passed"] for row in rows)
    return {"passed": passed, "formulas": len(rows), "share": round(passed / max(1, len(rows)), 3),
            "by_kind": table}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument("--work", type=Path, default=ROOT / "artifacts" / "math_roundtrip")
    parser.add_argument("--reuse", type=Path, help="rescore the outputs in this work folder")
    parser.add_argument("--seed", type=int, default=20261206)
    parser.add_argument("--displays", type=int, default=6, help="displays of each kind")
    parser.add_argument("--inline", type=int, default=4, help="inline formulas of each kind")
    parser.add_argument("--install", action="store_true", help="apt-get install texlive-latex-base first")
    parser.add_argument("--failures", type=int, default=30, help="failures to print")
    args = parser.parse_args()

    if args.install:
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "texlive-latex-base"], check=True)
    if shutil.which("pdflatex") is None:
        raise SystemExit("pdflatex is missing: run with --install (Debian texlive-latex-base)")
    work = (args.reuse or args.work).resolve()
    items = build_items(args.seed, args.displays, args.inline)
    timing = {}
    if args.reuse is None:
        work.mkdir(parents=True, exist_ok=True)
        pdf = typeset(items, work)
        timing = run_ocrserve(pdf, work / "out")
    markdown = (work / "out" / "formulas.md").read_text()
    notes = [page.get("text_layer") or "" for document in json.loads((work / "out" / "formulas.json").read_text())
             ["documents"] for page in document["pages"]]
    layer_used = sum(note.startswith("text layer used") for note in notes)
    pages = page_markdown(markdown)
    renderer = KatexRenderer(work / "katex")
    try:
        rows = score(items, pages, renderer)
    finally:
        renderer.close()
    summary = summarise(rows)

    print(f"{'kind':<14} {'display':>9} {'inline':>9}")
    for kind, modes in summary["by_kind"].items():
        cells = [f"{modes[m][0]}/{modes[m][1]}" if m in modes else "-" for m in ("display", "inline")]
        print(f"{kind:<14} {cells[0]:>9} {cells[1]:>9}")
    print(f"all: {summary['passed']}/{summary['formulas']} ({summary['share']:.0%}); the text layer used on "
          f"{layer_used} of {len(notes)} pages  {timing}")
    failed = [row for row in rows if not row["passed"]]
    for row in failed[: args.failures]:
        k = int(row["id"][1:4])
        written = candidates(pages[k // PER_PAGE]) if k // PER_PAGE < len(pages) else []
        print(f"FAIL {row['id']} {row['kind']}/{row['mode']}: {row['reference']}\n   page's formulas: {written}")
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "timing": timing, "layer_used_pages": layer_used,
                                        "pages": len(notes), "rows": rows,
                                        "kinds": Counter(row["kind"] for row in rows)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
