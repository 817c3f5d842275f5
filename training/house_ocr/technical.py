"""Technical small print for the house model's fine-tuning: markup and program source, index
entries, bibliography entries, inline maths.

Where the text comes from, and why (issue 31). The first version of these generators had word
lists and templates written from the real-page benchmark's own documents (algorithm2e, gb4e and
memoir macro names, R and Octave prompts, gnuplot `set` commands, the ACM reference format), which
tuned the model to those documents and spoiled them as a yardstick. This version takes its text
only from sources that never enter an evaluation:

- markup: real lines of the TeX sources Debian's texlive-base installs (plain TeX, its macro
  files, the amsfonts and graphics drivers: `/usr/share/texlive/texmf-dist/tex/{plain,latex,
  generic}`) and docutils' LaTeX style file; generated markup uses the command names harvested
  from those files plus the LaTeX kernel's own document commands (`\\section`, `\\textbf`, ...);
- program source: real lines of the Python standard library, the C headers in /usr/include and
  the Perl modules in /usr/share/perl5 (no document in the benchmark is in these languages' form);
- bibliography entries: the published conventions of general citation styles (APA, Chicago
  author-date, IEEE numeric, Vancouver, MLA, Harvard, BibTeX plain), filled with Faker's names and
  words; no reference list of any document was read;
- index entries and inline maths: generic generators over Faker's words.
The benchmark's documents are PDFs from texlive-*-doc, r-doc-pdf, octave-doc and other
documentation packages; none of the files read here belongs to them.
"""
from __future__ import annotations

import functools
import random
import re
import string
import sysconfig
from pathlib import Path

_TEX_ROOT = Path("/usr/share/texlive/texmf-dist/tex")
_TEX_SUFFIXES = (".tex", ".sty", ".cls", ".def", ".cfg")
# The LaTeX kernel's document-level commands and environments: the language itself, not a package.
_KERNEL_COMMANDS = (
    "textbf", "textit", "emph", "texttt", "textsc", "textrm", "textsf", "textsl", "section", "subsection",
    "subsubsection", "chapter", "paragraph", "label", "ref", "pageref", "cite", "caption", "footnote", "mbox",
    "hspace", "vspace", "newline", "setlength", "addtocounter", "setcounter", "input", "include",
    "usepackage", "documentclass", "item", "bibitem", "bibliography", "author", "title", "date",
    "maketitle", "tableofcontents", "newpage", "clearpage", "index", "multicolumn", "cline", "hline",
    "frac", "sqrt", "mathrm", "mathbf", "left", "right", "big", "renewcommand", "newcommand",
    "fontsize", "selectfont", "raggedright", "centering", "pagestyle", "thispagestyle",
)
_KERNEL_ENVIRONMENTS = (
    "itemize", "enumerate", "description", "tabular", "table", "figure", "equation", "eqnarray",
    "verbatim", "quote", "quotation", "center", "flushleft", "minipage", "document", "abstract", "array",
    "thebibliography", "picture", "tabbing",
)
_COMMAND = re.compile(r"\\([A-Za-z]{2,})")


def _usable(line: str) -> str:
    line = " ".join(line.split())
    if not 6 <= len(line) <= 150:
        return ""
    if len(set(line) - set("%=-*#/ ")) < 3:   # rules of comment characters
        return ""
    return line


@functools.lru_cache(maxsize=1)
def tex_source() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(lines, command names) of the TeX sources texlive-base installs (hyphenation patterns and
    Unicode tables aside: they are data, not markup) and docutils' LaTeX style."""
    paths = [p for sub in ("plain", "latex", "generic") for p in sorted((_TEX_ROOT / sub).rglob("*"))
             if p.suffix in _TEX_SUFFIXES and "hyph" not in str(p) and "unicode-data" not in str(p)]
    try:
        import docutils
        paths += sorted(Path(docutils.__file__).parent.rglob("*.sty"))
    except ImportError:
        pass
    lines: list[str] = []
    commands: set[str] = set()
    for path in paths:
        text = path.read_text(encoding="latin-1", errors="replace")
        commands.update(_COMMAND.findall(text))
        lines.extend(filter(None, map(_usable, text.splitlines())))
    return tuple(lines), tuple(sorted(c for c in commands if "@" not in c))


@functools.lru_cache(maxsize=1)
def program_source() -> tuple[str, ...]:
    """Lines of Python, C and Perl source shipped with the system."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    paths = [p for p in sorted(stdlib.glob("*.py")) + sorted(stdlib.glob("*/*.py"))
             if "test" not in p.parts and "idlelib" not in p.parts]
    paths += sorted(Path("/usr/include").glob("*.h")) + sorted(Path("/usr/share/perl5").rglob("*.pm"))
    lines: list[str] = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        lines.extend(filter(None, map(_usable, text.splitlines())))
    return tuple(lines)


class TechnicalText:
    """Technical lines from `rng` and `fake` (a seeded Faker); deterministic for a given seed."""

    def __init__(self, rng: random.Random, fake, words):
        self.rng, self.fake, self._words = rng, fake, words

    def line(self) -> str:
        kind = self.rng.random()
        if kind < 0.30:
            return self.markup()
        if kind < 0.50:
            return self.code()
        if kind < 0.70:
            return self.index_entry()
        if kind < 0.90:
            return self.reference()
        return self.maths()

    def _word(self) -> str:
        rng = self.rng
        if rng.random() < 0.7:
            return self.fake.word()
        return "".join(rng.choice(string.ascii_letters) for _ in range(rng.randint(2, 10)))

    def identifier(self) -> str:
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
            name = ".".join(parts)
        if rng.random() < 0.2:
            name += str(rng.randint(0, 99))
        return name

    def markup(self) -> str:
        rng = self.rng
        lines, harvested = tex_source()
        if rng.random() < 0.4 and lines:
            return rng.choice(lines)
        command = lambda: rng.choice(_KERNEL_COMMANDS) if rng.random() < 0.6 else rng.choice(harvested)
        pieces: list[str] = []
        target = rng.choice([rng.randint(6, 30), rng.randint(20, 80), rng.randint(40, 110)])
        while sum(len(p) + 1 for p in pieces) < target:
            r = rng.random()
            if r < 0.25:
                pieces.append("\\" + command() + "{" + self._words(1, 4) + "}")
            elif r < 0.35:
                pieces.append("\\" + rng.choice(["begin", "end"]) + "{" + rng.choice(_KERNEL_ENVIRONMENTS) + "}"
                              + (rng.choice(["[" + rng.choice("htbpH!") + "]", "{" + rng.choice(
                                  ["|l|c|r|", "lll", "p{3cm}", "cc", "2", "1"]) + "}"]) if rng.random() < 0.3 else ""))
            elif r < 0.45:
                pieces.append("\\" + rng.choice(["newcommand", "renewcommand", "def", "let"])
                              + "{\\" + re.sub(r"[^A-Za-z]", "", self.identifier()) + "}"
                              + (f"[{rng.randint(1, 4)}]" if rng.random() < 0.5 else "")
                              + "{\\" + command() + "{#" + str(rng.randint(1, 3)) + "}}")
            elif r < 0.52:
                unit = rng.choice(["pt", "em", "ex", "cm", "mm", ""])
                pieces.append("\\" + command() + "[" + self._word() + rng.choice(["", f"={rng.randint(1, 20)}{unit}"])
                              + "]{" + self._word() + "}")
            elif r < 0.58:
                pieces.append(rng.choice(["\\ldots", "\\dots", "\\cdots", "\\\\", "~", "&", "%", "\\%", "\\&",
                                          "\\_", "--", "---", "``", "''", "\\item", "\\par", "\\noindent",
                                          "\\hline", "\\centering", "{}", "\\relax"]))
            elif r < 0.66:
                pieces.append("$" + self.maths_inline() + "$")
            elif r < 0.72:
                pieces.append("% " + self._words(1, 6))
            else:
                pieces.append(self._words(1, 4))
        return " ".join(pieces)

    def code(self) -> str:
        rng = self.rng
        lines = program_source()
        if rng.random() < 0.7 and lines:
            return rng.choice(lines)
        ident, word = self.identifier, self._word
        num = lambda: rng.choice([str(rng.randint(0, 999)), f"{rng.uniform(-99, 99):.{rng.randint(1, 4)}f}",
                                  f"{rng.randint(1, 9)}e{rng.randint(-9, 9)}"])
        templates = [
            lambda: f"{ident()} = {ident()}({ident()}, {ident()}={num()})",
            lambda: f"if ({ident()} {rng.choice(['<', '>', '==', '!=', '<=', '>='])} {num()}) {{",
            lambda: f"for (i = 0; i < {rng.randint(2, 100)}; i++) {{",
            lambda: f"def {ident()}({ident()}, {ident()}=None):",
            lambda: f"return {{'{word()}': {ident()}[{rng.randint(0, 9)}], '{word()}': {num()}}}",
            lambda: f"#include <{word()}.h>",
            lambda: f"{ident()}->{ident()} = &{ident()}[{ident()} + {rng.randint(1, 9)}];",
            lambda: f"[{', '.join(num() for _ in range(rng.randint(2, 7)))}]",
            lambda: f"printf(\"%{rng.choice('dfsgx')}\\n\", {ident()});",
            lambda: f"# {self._words(2, 8)}",
        ]
        return rng.choice(templates)()

    def index_entry(self) -> str:
        rng = self.rng
        pages = sorted(rng.sample(range(1, 900), rng.randint(1, 6)))
        page_text = ", ".join(
            f"{p}{rng.choice(['', '', '', 'n', 'f', 'ff'])}" if rng.random() < 0.85 else f"{p}–{p + rng.randint(1, 9)}"
            for p in pages)
        term = rng.choice([lambda: self._words(1, 3), lambda: "\\" + re.sub(r"[^A-Za-z]", "", self.identifier()),
                           self.identifier, lambda: self._words(1, 2) + ", " + self._words(1, 3)])()
        style = rng.random()
        if style < 0.6:
            return f"{term}, {page_text}"
        if style < 0.8:
            return f"{term} {'. ' * rng.randint(3, 20)}{pages[0]}"
        if style < 0.9:
            return f"{term}, see {rng.choice(['also ', ''])}{self._words(1, 2)}"
        return f"{rng.randint(1, 20)}.{rng.randint(1, 9)} {self._words(1, 5).title()} {'. ' * rng.randint(3, 20)}{pages[0]}"

    def reference(self) -> str:
        """One entry in a general citation style's published form."""
        rng, fake = self.rng, self.fake
        people = [(fake.first_name(), fake.last_name()) for _ in range(rng.randint(1, 4))]
        year, volume, issue = rng.randint(1950, 2026), rng.randint(1, 120), rng.randint(1, 12)
        first = rng.randint(1, 2000)
        last = first + rng.randint(1, 40)
        title = self.fake.sentence(nb_words=rng.randint(4, 11)).rstrip(".")
        journal = f"{rng.choice(['Journal of', 'Annals of', 'Review of', 'Bulletin of'])} {self._words(1, 3).title()}"
        doi = f"https://doi.org/10.{rng.randint(1000, 9999)}/{self.identifier()}.{rng.randint(100, 99999)}"
        initials = lambda f: f[0] + "."

        def joined(names, final=", and "):
            return names[0] if len(names) == 1 else ", ".join(names[:-1]) + final + names[-1]

        styles = [
            lambda: f"{joined([f'{l}, {initials(f)}' for f, l in people], ', & ')} ({year}). {title}. "
                    f"{journal}, {volume}({issue}), {first}–{last}." + (f" {doi}" if rng.random() < 0.5 else ""),
            lambda: f"{people[0][1]}, {people[0][0]}{''.join(f', and {f} {l}' for f, l in people[1:])}. {year}. "
                    f"“{title}.” {journal} {volume} ({issue}): {first}–{last}.",
            lambda: f"[{rng.randint(1, 99)}] {joined([f'{initials(f)} {l}' for f, l in people])}, “{title},” "
                    f"{journal}, vol. {volume}, no. {issue}, pp. {first}–{last}, {year}.",
            lambda: f"{rng.randint(1, 99)}. {', '.join(f'{l} {f[0]}' for f, l in people)}. {title}. "
                    f"{journal}. {year};{volume}({issue}):{first}-{last}.",
            lambda: f"{people[0][1]}, {people[0][0]}{', et al' if len(people) > 2 else ''}. “{title}.” "
                    f"{journal}, vol. {volume}, no. {issue}, {year}, pp. {first}-{last}.",
            lambda: f"{joined([f'{l}, {initials(f)}' for f, l in people], ' and ')} ({year}) '{title}', "
                    f"{journal}, {volume}({issue}), pp. {first}-{last}.",
            lambda: f"{joined([f'{initials(f)} {l}' for f, l in people], ' and ')}. {title}. "
                    f"{rng.choice([journal + f', {volume}({issue}):{first}--{last}', fake.company() + ', ' + fake.city()])}, {year}.",
        ]
        return rng.choice(styles)()

    def maths_inline(self) -> str:
        rng = self.rng
        v = lambda: rng.choice(string.ascii_letters)
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

    def maths(self) -> str:
        rng = self.rng
        v = lambda: rng.choice(string.ascii_lowercase)
        forms = [
            lambda: f"{v()}({v()}) = {rng.randint(1, 9)}{v()}² + {rng.randint(1, 9)}{v()} − {rng.randint(1, 9)}",
            lambda: f"({rng.randint(1, 99)})",
            lambda: f"{v()} ≤ {v()} + {rng.uniform(0, 9):.2f} ≈ {rng.uniform(0, 99):.1f}",
            lambda: f"P({v().upper()} | {v().upper()}) = {rng.uniform(0, 1):.3f} ± {rng.uniform(0, 0.1):.3f}",
            self.maths_inline,
            lambda: f"{self._words(1, 6)} ${self.maths_inline()}$ {self._words(1, 6)}",
        ]
        return rng.choice(forms)()
