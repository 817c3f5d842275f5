"""Text to typeset, from sources available offline.

Training text: the docstrings of Python's standard library (real English prose,
technical vocabulary, punctuation), Faker's English word lists and its
structured fields (names, addresses, companies, dates, amounts, phone numbers,
e-mail addresses, URLs), and random strings that teach the model to read what
it sees rather than what a language model would expect.

Held-out text (evaluation only): the licence texts Debian ships in
/usr/share/common-licenses, and tables of numbers and codes made by a different
generator. Nothing here reads pages of existing PDF documents.
"""
from __future__ import annotations

import ast
import functools
import random
import string
import sysconfig
from pathlib import Path

from training.house_ocr.charset import CHARACTERS, normalise

_WS = str.maketrans({"\n": " ", "\r": " ", "\t": " "})


def _clean(text: str) -> str:
    return " ".join(normalise(text.translate(_WS)).split())


@functools.lru_cache(maxsize=1)
def stdlib_prose() -> tuple[str, ...]:
    """Docstring paragraphs of the standard library, whitespace-collapsed."""
    root = Path(sysconfig.get_paths()["stdlib"])
    paragraphs: list[str] = []
    for path in sorted(root.glob("*.py")) + sorted(root.glob("*/*.py")):
        if "test" in path.parts or "idlelib" in path.parts:
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if not doc:
                    continue
                for para in doc.split("\n\n"):
                    cleaned = _clean(para)
                    if len(cleaned) >= 20 and not cleaned.startswith(">>>"):
                        paragraphs.append(cleaned)
    return tuple(paragraphs)


@functools.lru_cache(maxsize=1)
def licence_prose() -> tuple[str, ...]:
    """Held out: paragraphs of the licence texts Debian ships."""
    paragraphs: list[str] = []
    for path in sorted(Path("/usr/share/common-licenses").iterdir()):
        if path.is_file():
            for para in path.read_text(encoding="utf-8", errors="replace").split("\n\n"):
                cleaned = _clean(para)
                if len(cleaned) >= 20:
                    paragraphs.append(cleaned)
    return tuple(paragraphs)


# Generic command and environment names of TeX-style markup, for generated source lines.
_MARKUP_COMMANDS = (
    "textbf", "textit", "emph", "texttt", "section", "subsection", "chapter", "label", "ref", "cite", "caption",
    "includegraphics", "usepackage", "documentclass", "item", "footnote", "url", "href", "mbox", "hspace", "vspace",
    "textsc", "mathrm", "mathbf", "frac", "sqrt", "newline", "setlength", "addtocounter", "setcounter", "input",
    "KwData", "KwResult", "SetKwFunction", "SetAlgoLined", "If", "ElseIf", "While", "For", "Return", "tcc",
    "glt", "gla", "glb", "trans", "ex", "exi", "judgewidth", "chapterstyle", "pagestyle", "thispagestyle",
    "makeheadrule", "setsecnumdepth", "maxsecnumdepth", "cftsetindents", "renewcommand", "fontsize", "selectfont",
    "raggedright", "multicolumn", "cline", "toprule", "midrule", "bottomrule", "bibitem", "bibliography",
    "author", "title", "date", "maketitle", "tableofcontents", "newpage", "clearpage", "index", "glossary",
    "DeclareMathOperator", "operatorname", "left", "right", "big", "Big", "textrm", "textsf", "textsl",
)
_ENVIRONMENTS = (
    "itemize", "enumerate", "description", "tabular", "table", "figure", "equation", "align", "align*",
    "gather", "multline", "verbatim", "quote", "center", "algorithm", "algorithm2e", "procedure", "exe",
    "xlist", "minipage", "document", "abstract", "theorem", "proof", "lstlisting", "array", "pmatrix", "cases",
)


def window(paragraphs: tuple[str, ...], rng: random.Random, max_chars: int) -> str:
    """A run of whole words from a random paragraph, at most `max_chars` long."""
    words = rng.choice(paragraphs).split()
    start = rng.randrange(len(words))
    out: list[str] = []
    length = 0
    for word in words[start:]:
        if length + len(word) + (1 if out else 0) > max_chars:
            break
        out.append(word)
        length += len(word) + (1 if len(out) > 1 else 0)
    return " ".join(out) or words[start][:max_chars]


class TrainingText:
    """Lines of training text; deterministic for a given seed."""

    def __init__(self, seed: int):
        from faker import Faker

        self.rng = random.Random(seed)
        self.fake = Faker("en_US")
        self.fake.seed_instance(seed)
        self.prose = stdlib_prose()

    def line(self) -> str:
        rng = self.rng
        max_chars = rng.choice([rng.randint(1, 12), rng.randint(8, 40), rng.randint(30, 90), rng.randint(30, 90)])
        kind = rng.random()
        if kind < 0.40:
            text = window(self.prose, rng, max_chars)
        elif kind < 0.55:
            text = self._sentence(max_chars)
        elif kind < 0.82:
            text = self._field()
        else:
            text = self._random_string(max_chars)
        text = _clean(text)
        if rng.random() < 0.06:
            text = text.upper()
        elif rng.random() < 0.04:
            text = text.title()
        return text[:120] or "."

    def long_line(self) -> str:
        """A full-width line of body text (70-150 characters), as pages set them."""
        rng = self.rng
        max_chars = rng.randint(70, 150)
        kind = rng.random()
        if kind < 0.6:
            text = window(self.prose, rng, max_chars)
            while len(text) < max_chars - 20:   # a short paragraph: continue with the next one
                text += " " + window(self.prose, rng, max_chars - len(text) - 1)
        elif kind < 0.85:
            text = self._sentence(max_chars)
        else:
            text = ""
            while len(text) < max_chars - 15:
                text += (rng.choice(["  ", " ", " · ", " | ", ", "]) if text else "") + self._field()
        text = _clean(text)[:160]
        return text or "."

    def technical_line(self) -> str:
        """A line of the technical print that prose and fields rarely give: markup and program source
        (braces, brackets, backslashes, operators), index entries with page numbers, bibliography
        entries, inline maths. Made by generators from word lists; nothing is copied from a document."""
        rng = self.rng
        kind = rng.random()
        if kind < 0.30:
            text = self._markup()
        elif kind < 0.50:
            text = self._code()
        elif kind < 0.70:
            text = self._index_entry()
        elif kind < 0.90:
            text = self._reference()
        else:
            text = self._maths()
        return _clean(text)[:150] or "."

    def _word(self) -> str:
        rng = self.rng
        if rng.random() < 0.7:
            return self.fake.word()
        return "".join(rng.choice(string.ascii_letters) for _ in range(rng.randint(2, 10)))

    def _identifier(self) -> str:
        rng = self.rng
        parts = [self._word().lower() for _ in range(rng.randint(1, 3))]
        style = rng.random()
        if style < 0.4:
            name = parts[0] + "".join(p.title() for p in parts[1:])
        elif style < 0.7:
            name = "_".join(parts)
        elif style < 0.85:
            name = "".join(p.title() for p in parts)
        else:
            name = parts[0] + ".".join([""] + parts[1:]) if len(parts) > 1 else parts[0]
        if rng.random() < 0.2:
            name += str(rng.randint(0, 99))
        return name

    def _markup(self) -> str:
        """Markup source in the style of TeX: commands, groups, options, environments."""
        rng = self.rng
        commands = _MARKUP_COMMANDS
        pieces: list[str] = []
        target = rng.choice([rng.randint(6, 30), rng.randint(20, 80), rng.randint(40, 110)])
        while sum(len(p) + 1 for p in pieces) < target:
            r = rng.random()
            if r < 0.22:
                pieces.append("\\" + rng.choice(commands) + "{" + self._words(1, 4) + "}")
            elif r < 0.32:
                pieces.append("\\" + rng.choice(["begin", "end"]) + "{" + rng.choice(_ENVIRONMENTS) + "}"
                              + (rng.choice(["[" + rng.choice("htbpH!") + "]", "{" + rng.choice(
                                  ["|l|c|r|", "lll", "p{3cm}", "@{}ll@{}", "cc", "2", "1"]) + "}"]) if rng.random() < 0.3 else ""))
            elif r < 0.42:
                pieces.append("\\" + rng.choice(["newcommand", "renewcommand", "def", "providecommand", "let"])
                              + "{\\" + self._identifier().replace("_", "").replace(".", "") + "}"
                              + (f"[{rng.randint(1, 4)}]" if rng.random() < 0.5 else "")
                              + "{" + "\\" + rng.choice(commands) + "{#" + str(rng.randint(1, 3)) + "}}")
            elif r < 0.50:
                pieces.append("\\" + rng.choice(commands) + "[" + self._word() + rng.choice(["", "=" + str(rng.randint(1, 20)) + rng.choice(["pt", "em", "cm", "mm", ""])]) + "]{" + self._word() + "}")
            elif r < 0.56:
                pieces.append(rng.choice(["\\ldots", "\\dots", "\\cdots", "\\\\", "~", "&", "%", "\\%",
                                          "\\&", "\\_", "--", "---", "``", "''", "\\item", "\\par",
                                          "\\noindent", "\\hline", "\\centering", "\\ex", "\\gll", "\\trans"]))
            elif r < 0.64:
                pieces.append("$" + self._maths_inline() + "$")
            elif r < 0.70:
                pieces.append("% " + self._words(1, 6))
            else:
                pieces.append(self._words(1, 4))
        return " ".join(pieces)

    def _code(self) -> str:
        rng = self.rng
        ident, word = self._identifier, self._word
        num = lambda: rng.choice([str(rng.randint(0, 999)), f"{rng.uniform(-99, 99):.{rng.randint(1, 4)}f}",
                                  f"{rng.randint(1, 9)}e{rng.randint(-9, 9)}"])
        templates = [
            lambda: f"{ident()} <- c({', '.join(num() for _ in range(rng.randint(1, 6)))})",
            lambda: f"{ident()} = {ident()}({ident()}, {ident()}={num()})",
            lambda: f"for ({ident()} in 1:{rng.randint(2, 100)}) {{",
            lambda: f"if ({ident()} {rng.choice(['<', '>', '==', '!=', '<=', '>='])} {num()}) {{",
            lambda: f"function [{ident()}, {ident()}] = {ident()} ({ident()}, {ident()})",
            lambda: f"{ident()}[{ident()}] <- {ident()}[[{rng.randint(1, 9)}]] * {num()};",
            lambda: f"printf (\"%{rng.choice('dfsgx')}\\n\", {ident()});",
            lambda: f"def {ident()}({ident()}, {ident()}=None):",
            lambda: f"return {{'{word()}': {ident()}[{rng.randint(0, 9)}], '{word()}': {num()}}}",
            lambda: f"> {ident()}({ident()}, {rng.choice(['TRUE', 'FALSE', 'NULL', 'NA'])})",
            lambda: f"{ident()} := {ident()} {rng.choice('+-*/^')} {num()}; % {self._words(1, 4)}",
            lambda: f"#include <{word()}.h>",
            lambda: f"{ident()}->{ident()} = &{ident()}[{ident()} + {rng.randint(1, 9)}];",
            lambda: f"[{', '.join(num() for _ in range(rng.randint(2, 7)))}]",
            lambda: f"{ident()} = [{num()}; {num()}; {num()}]';",
            lambda: f"set {rng.choice(['xrange', 'yrange', 'title', 'xlabel', 'key', 'style', 'terminal'])} "
                    f"{rng.choice(['[' + num() + ':' + num() + ']', chr(34) + self._words(1, 3) + chr(34), word()])}",
            lambda: f"}} else {{ {ident()} <- {ident()} + {num()} }}",
            lambda: f"## {self._words(2, 8)}",
        ]
        return rng.choice(templates)()

    def _index_entry(self) -> str:
        rng = self.rng
        pages = sorted(rng.sample(range(1, 900), rng.randint(1, 6)))
        page_text = ", ".join(
            f"{p}{rng.choice(['', '', '', 'n', 'f', 'ff'])}" if rng.random() < 0.85 else f"{p}–{p + rng.randint(1, 9)}"
            for p in pages)
        term = rng.choice([lambda: self._words(1, 3), lambda: "\\" + self._identifier().replace("_", "").replace(".", ""),
                           lambda: self._identifier(), lambda: self._words(1, 2) + ", " + self._words(1, 3)])()
        style = rng.random()
        if style < 0.6:
            return f"{term}, {page_text}"
        if style < 0.8:
            return f"{term} {'. ' * rng.randint(3, 20)}{pages[0]}"
        if style < 0.9:
            return f"{term}, see {rng.choice(['also ', ''])}{self._words(1, 2)}"
        return f"{rng.randint(1, 20)}.{rng.randint(1, 9)} {self._words(1, 5).title()} {'. ' * rng.randint(3, 20)}{pages[0]}"

    def _reference(self) -> str:
        rng, fake = self.rng, self.fake
        authors = ", ".join(f"{fake.first_name()[0]}. {fake.last_name()}" for _ in range(rng.randint(1, 4)))
        year = rng.randint(1970, 2026)
        title = self._sentence(rng.randint(20, 70)).rstrip(".")
        venue = rng.choice([
            lambda: f"In Proceedings of the {rng.randint(1, 50)}th {fake.word().title()} Conference on "
                    f"{self._words(1, 3).title()} ({''.join(rng.choice(string.ascii_uppercase) for _ in range(rng.randint(2, 5)))} '{year % 100:02d})",
            lambda: f"{fake.word().title()} {rng.choice(['J.', 'Journal of', 'Trans.', 'Rev.'])} {self._words(1, 2).title()} "
                    f"{rng.randint(1, 80)}, {rng.randint(1, 12)} ({year}), {rng.randint(1, 900)}–{rng.randint(1, 900)}",
            lambda: f"arXiv:{rng.randint(1000, 2600)}.{rng.randint(10000, 99999)}",
            lambda: f"https://doi.org/10.{rng.randint(1000, 9999)}/{rng.randint(1000000, 9999999)}.{rng.randint(1000000, 9999999)}",
        ])()
        label = rng.choice([f"[{rng.randint(1, 99)}] ", f"{rng.randint(1, 99)}. ", "", ""])
        return f"{label}{authors}. {year}. {title}. {venue}."

    def _maths_inline(self) -> str:
        rng = self.rng
        v = lambda: rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        pieces = [rng.choice([
            lambda: f"{v()}_{{{v()}{rng.choice(['', '+1', '-1', ',' + v()])}}}",
            lambda: f"{v()}^{{{rng.randint(2, 9)}}}",
            lambda: f"\\{rng.choice(['alpha', 'beta', 'gamma', 'lambda', 'sigma', 'mu', 'theta', 'omega', 'pi'])}",
            lambda: f"\\{rng.choice(['frac', 'sqrt', 'mathbf', 'mathrm', 'hat', 'bar'])}{{{v()}}}{{{v()}}}",
            lambda: f"\\sum_{{{v()}=1}}^{{{v()}}}",
            lambda: f"({v()} {rng.choice('+-=<>')} {v()})",
            lambda: str(rng.randint(0, 99)),
        ])() for _ in range(rng.randint(1, 5))]
        return rng.choice([" ", "", " + ", " = "]).join(pieces)

    def _maths(self) -> str:
        rng = self.rng
        v = lambda: rng.choice("abcdefghijklmnopqrstuvwxyz")
        forms = [
            lambda: f"{v()}({v()}) = {rng.randint(1, 9)}{v()}² + {rng.randint(1, 9)}{v()} − {rng.randint(1, 9)}",
            lambda: f"({rng.randint(1, 99)})",
            lambda: f"{v()} ≤ {v()} + {rng.uniform(0, 9):.2f} ≈ {rng.uniform(0, 99):.1f}",
            lambda: f"P({v().upper()} | {v().upper()}) = {rng.uniform(0, 1):.3f} ± {rng.uniform(0, 0.1):.3f}",
            lambda: self._maths_inline(),
            lambda: f"{self._words(1, 6)} ${self._maths_inline()}$ {self._words(1, 6)}",
        ]
        return rng.choice(forms)()

    def _words(self, low: int, high: int) -> str:
        return " ".join(self.fake.word() for _ in range(self.rng.randint(low, high)))

    def _sentence(self, max_chars: int) -> str:
        fake = self.fake
        text = fake.sentence(nb_words=self.rng.randint(3, 16))
        while len(text) < max_chars and self.rng.random() < 0.7:
            text += " " + fake.sentence(nb_words=self.rng.randint(3, 12))
        cut = text[:max_chars]
        return cut.rsplit(" ", 1)[0] if " " in cut and len(text) > max_chars else cut

    def _field(self) -> str:
        fake, rng = self.fake, self.rng
        choices = [
            lambda: fake.name(), lambda: fake.street_address(), lambda: fake.address().replace("\n", ", "),
            lambda: fake.company(), lambda: fake.catch_phrase(), lambda: fake.bs(), lambda: fake.job(),
            lambda: fake.phone_number(), lambda: fake.email(), lambda: fake.url(), lambda: fake.uri(),
            lambda: fake.date(pattern=rng.choice(["%d/%m/%Y", "%m/%d/%y", "%Y-%m-%d", "%d %B %Y", "%B %d, %Y",
                                                  "%d.%m.%Y", "%a %d %b %Y"])),
            lambda: fake.time(), lambda: fake.iban(), lambda: fake.ean13(), lambda: fake.isbn13(),
            lambda: fake.credit_card_number(), lambda: fake.postcode(), lambda: fake.city() + ", " + fake.state_abbr(),
            lambda: f"{rng.choice(['$', '€', '£', '', 'USD ', 'EUR '])}{rng.uniform(0, 99999):,.2f}",
            lambda: f"{rng.randint(1, 99)} x {fake.word().title()} @ {rng.uniform(0, 999):.2f}",
            lambda: f"{rng.choice(['Invoice', 'Order', 'Ref', 'Account', 'PO', 'Item'])} "
                    f"{rng.choice(['No.', '#', 'Nr', 'ID:', ''])} {rng.randint(0, 10 ** rng.randint(2, 9))}",
            lambda: f"{rng.choice(['Total', 'Subtotal', 'VAT', 'Tax', 'Balance due', 'Discount'])}"
                    f"{rng.choice([':', '', ' (%d%%)' % rng.randint(1, 25)])} {rng.uniform(0, 9999):.2f}",
            lambda: f"{rng.randint(1, 40)}.{rng.randint(1, 20)} {fake.sentence(nb_words=rng.randint(2, 6))}",
            lambda: f"{rng.choice(['•', '-', '*', '1.', 'a)', '(iv)', '§ 4'])} {fake.sentence(nb_words=rng.randint(3, 9))}",
            lambda: f"“{fake.sentence(nb_words=rng.randint(3, 8))[:-1]}” — {fake.name()}",
            lambda: f"{rng.randint(0, 100)}% {rng.choice(['±', '×', '÷', '≈', '≤', '≥', '°C', 'µm', '½'])} {rng.randint(0, 999)}",
            lambda: "   ".join(f"{rng.uniform(0, 999):.{rng.randint(0, 3)}f}" for _ in range(rng.randint(2, 6))),
            lambda: f"Page {rng.randint(1, 300)} of {rng.randint(1, 300)}",
            lambda: f"Tel. {fake.phone_number()} · Fax {fake.phone_number()}",
        ]
        return rng.choice(choices)()

    def _random_string(self, max_chars: int) -> str:
        rng = self.rng
        pools = [string.ascii_letters + string.digits, string.digits + ".,-/:", string.ascii_uppercase + string.digits,
                 CHARACTERS, string.ascii_lowercase]
        words = []
        total = 0
        target = rng.randint(1, max(1, max_chars))
        while total < target:
            pool = rng.choice(pools)
            word = "".join(rng.choice(pool) for _ in range(rng.randint(1, 10)))
            words.append(word)
            total += len(word) + 1
        return " ".join(words)
