"""One step splitter for every solution given as text: imported files and generated samples.

A step is what a person judges in one go, so the splitter cuts where a reader would and nowhere
else. Modes (``SPLIT_MODES``; any other value is a regular expression that separates steps):

- ``auto`` (default): paragraphs (blank lines), or lines when the text has no blank line. Display
  math (``\\[...\\]``, ``$$...$$``, ``\\begin{env}...\\end{env}``) stays with the sentence that
  introduces it, and a paragraph that chains several such calculations on single newlines is cut
  after each one; code fences stay whole; a numbered list (``1.``, ``Step 1:``) is one step per
  item; a reasoning model's ``<think>`` section is cut into its paragraphs; PRM800K's
  ``# Answer`` heading stays with the answer; a paragraph longer than ``MAX_STEP_CHARS`` is cut
  at sentence ends.
- a regular expression (any other value): the text is cut wherever it matches. It runs on RE2
  (``google-re2``), whose matching time grows linearly with the text whatever the pattern, so
  no pattern (``(a+)+$`` on a long run of ``a``) can hold a web request or a worker; patterns RE2
  cannot run (backreferences, lookaround) are refused with a message saying so.
- ``paragraphs``: blank lines, or lines when the text has no blank line (the splitter imports
  had before ``auto``). ``lines``: every line. ``numbered``: numbered items, ``Step
  n:`` and bullets.

GSM8K's calculator annotations (``<<60-20=40>>``) are not for the reader: :func:`split` returns
each step's displayed text without them and its raw text with them (stored on ``Step.raw_text``).
Nothing here touches the database; it is pure text in, text out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import re2

SPLIT_MODES = ("auto", "paragraphs", "lines", "numbered")
DEFAULT_SPLIT = "auto"
# PRM800K's steps: median 60 characters, p95 142, max about 1,100. A paragraph past this is not
# one judgement any more.
MAX_STEP_CHARS = 1500
MAX_PATTERN_CHARS = 200


class SplitError(ValueError):
    """A split mode that is neither a known name nor a usable regular expression."""


@dataclass(frozen=True, slots=True)
class SplitStep:
    text: str  # what the annotator sees
    raw: str  # as the model wrote it (calculator annotations kept)


_CALC = re.compile(r"<<[^<>\n]*>>")
_BLANK = re.compile(r"\n[ \t]*\n")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")
_DISPLAY_OPEN = re.compile(r"^\s*(\\\[|\$\$|\\begin\{([a-zA-Z*]+)\})")
_NUMBERED = re.compile(
    r"^\s*(?:\*\*)?(?:(?:step|Step|STEP)\s+\d+\s*[:.)]|\d{1,3}[.)]\s|#{1,6}\s*(?:Step|step)\s+\d+)"
)
_BULLET = re.compile(r"^\s*[-*+•]\s+")
_ANSWER_HEADING = re.compile(r"^#\s*Answer\s*$")
_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\\$])")
_ONLY_INLINE_MATH = re.compile(r"\$[^$]+\$[.,;:]?")
_ASY_OPEN = re.compile(r"\[asy\]")
_BEGIN = re.compile(r"\\begin\{([a-zA-Z*]+)\}")
_INLINE_MATH = re.compile(r"\$\$.+?\$\$|\$[^$]+\$|\\\(.+?\\\)|\\\[.+?\\\]", re.DOTALL)


def check_mode(mode: str | None) -> str:
    """The mode as given, or ``SplitError`` saying why it cannot be used."""
    mode = (mode or DEFAULT_SPLIT).strip() or DEFAULT_SPLIT
    if mode in SPLIT_MODES:
        return mode
    if len(mode) > MAX_PATTERN_CHARS:
        raise SplitError(f"a split pattern is at most {MAX_PATTERN_CHARS} characters")
    if _user_pattern(mode).match(""):
        raise SplitError("a split pattern must not match the empty string")
    return mode


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # a person's mistake is theirs to read, not the log's
    return options


@lru_cache(maxsize=256)
def _user_pattern(mode: str):
    """A person's pattern compiled by RE2 (linear time in the text, whatever the pattern), or
    ``SplitError`` naming the problem: RE2 runs no backreference and no lookaround."""
    try:
        return re2.compile(mode, options=_re2_options())
    except re2.error as e:
        detail = (
            e.args[0].decode(errors="replace")
            if e.args and isinstance(e.args[0], bytes)
            else str(e)
        )
    try:
        re.compile(mode)
    except re.error as e:
        raise SplitError(
            f"split must be one of {', '.join(SPLIT_MODES)} or a regular expression ({e})"
        ) from None
    raise SplitError(
        "split patterns run on RE2 (matching time stays linear on any text), which has no "
        f"backreferences (\\1, (?P=name)) and no lookaround ((?=, (?!, (?<=, (?<!): {detail}; "
        "write the pattern without them"
    ) from None


def split(text: str, mode: str = DEFAULT_SPLIT) -> list[SplitStep]:
    """``text`` cut into steps by ``mode``; empty steps dropped."""
    mode = check_mode(mode)
    text = (text or "").replace("\r\n", "\n").replace("\r", "\n").strip()
    if not text:
        return []
    if mode == "auto":
        raws = _auto(text)
    elif mode == "paragraphs":
        raws = _BLANK.split(text) if _BLANK.search(text) else text.split("\n")
    elif mode == "lines":
        raws = text.split("\n")
    elif mode == "numbered":
        raws = _items(text.split("\n"), bullets=True)
    else:
        raws = _user_pattern(mode).split(text)
    out = []
    for raw in raws:
        raw = (raw or "").strip()
        shown = _CALC.sub("", raw).strip()
        if shown:
            out.append(SplitStep(shown, raw))
    return out


def split_texts(text: str, mode: str = DEFAULT_SPLIT) -> list[str]:
    """The displayed text of each step (no calculator annotations)."""
    return [s.text for s in split(text, mode)]


def strip_annotations(text: str) -> str:
    return _CALC.sub("", text)


# --- auto ------------------------------------------------------------------------------------


def _auto(text: str) -> list[str]:
    if "<think>" in text:
        steps: list[str] = []
        end = 0
        for m in _THINK.finditer(text):
            steps += _auto_plain(text[end : m.start()])
            steps += _auto_plain(m.group(1))
            end = m.end()
        return steps + _auto_plain(text[end:])
    return _auto_plain(text)


def _auto_plain(text: str) -> list[str]:
    text = text.strip()
    if not text:
        return []
    blocks = _blocks(text.split("\n"))
    units: list[str] = []
    if _separates_steps(blocks):
        paragraph: list[tuple[str, str]] = []
        for kind, chunk in [*blocks, ("blank", "")]:
            if kind != "blank":
                paragraph.append((kind, chunk))
            elif paragraph:
                units += _paragraph_units(paragraph)
                paragraph = []
    else:
        # No blank line: one step per line (GSM8K, and models that write a step per line),
        # a formula with the line that introduces it.
        lines = [chunk for kind, chunk in blocks if kind == "line"]
        if _numbered_list(lines):
            units = _items([chunk for _, chunk in blocks], bullets=False)
        else:
            pieces: list[list[str]] = []
            for kind, chunk in blocks:
                if kind == "blank":
                    continue
                if pieces and _continues(kind, chunk, pieces[-1]):
                    pieces[-1].append(chunk)
                else:
                    pieces.append([chunk])
            units = ["\n".join(piece) for piece in pieces]
    return _long_cut(_attach(units))


def _continues(kind: str, chunk: str, piece: list[str]) -> bool:
    """Whether a line (or block) of a one-step-a-line text belongs to the step before it: a
    formula, code or a figure after prose; a formula alone on its line after a sentence that
    has not ended (``... we get:``); the items of a list a line ending with a colon introduced."""
    last = piece[-1].rstrip()
    if kind in ("math", "code"):
        return not _only_display("\n".join(piece))
    # "... is", "... we get:": a sentence that has not ended (one that ends in a formula has)
    unfinished = last.endswith(":") or last[-1:].isalpha()
    if unfinished and _ONLY_INLINE_MATH.fullmatch(chunk.strip()):
        return True
    opened_list = any(ln.rstrip().endswith(":") for ln in piece[:1]) and all(
        _NUMBERED.match(ln) or _BULLET.match(ln) for ln in piece[1:]
    )
    return opened_list and bool(_NUMBERED.match(chunk) or _BULLET.match(chunk))


def _separates_steps(blocks: list[tuple[str, str]]) -> bool:
    """Whether blank lines separate the steps. The blank lines around PRM800K's ``# Answer``
    heading do not: its generator wrote one step per line ("newline delimited") and set the
    answer off with blank lines, so a text whose only blank lines are there is one step a line."""
    for i, (kind, _) in enumerate(blocks):
        if kind != "blank":
            continue
        before = next((c for k, c in reversed(blocks[:i]) if k != "blank"), "")
        after = next((c for k, c in blocks[i + 1 :] if k != "blank"), "")
        if not (_ANSWER_HEADING.match(before.strip()) or _ANSWER_HEADING.match(after.strip())):
            return True
    return False


def _blocks(lines: list[str]) -> list[tuple[str, str]]:
    """("line" | "math" | "code" | "blank", text): display math and fences whole."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            out.append(("blank", ""))
            i += 1
            continue
        if m := _FENCE.match(line):
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith(m.group(1)):
                j += 1
            out.append(("code", "\n".join(lines[i : j + 1])))
            i = j + 1
            continue
        if _ASY_OPEN.search(line) and "[/asy]" not in line:
            # an Asymptote figure, whole (one never closed is text like any other)
            j = next((k for k in range(i + 1, len(lines)) if "[/asy]" in lines[k]), None)
            if j is not None:
                out.append(("code", "\n".join(lines[i : j + 1])))
                i = j + 1
                continue
        if m := _DISPLAY_OPEN.match(line):
            closer = {"\\[": "\\]", "$$": "$$"}.get(m.group(1), f"\\end{{{m.group(2)}}}")
            rest = line[m.end() :]
            j = i
            while closer not in rest and j + 1 < len(lines):
                j += 1
                rest = lines[j]
            out.append(("math", "\n".join(lines[i : j + 1])))
            i = j + 1
            continue
        # A line that leaves an environment open (``\\begin{env}`` not closed on it) goes on to
        # the line that closes it: the writer wrapped the formula, not the step.
        j = i
        while (
            j + 1 < len(lines) and lines[j + 1].strip() and _open_math("\n".join(lines[i : j + 1]))
        ):
            j += 1
        out.append(("line", "\n".join(lines[i : j + 1])))
        i = j + 1
    return out


def _open_math(text: str) -> bool:
    # (An odd count of ``$`` is no sign: GSM8K's solutions write money with it.)
    return any(
        text.count(f"\\begin{{{env}}}") > text.count(f"\\end{{{env}}}")
        for env in _BEGIN.findall(text)
    )


def _paragraph_units(paragraph: list[tuple[str, str]]) -> list[str]:
    """A paragraph as one step, or cut after each display formula when it chains several."""
    lines = [chunk for kind, chunk in paragraph if kind == "line"]
    if sum(1 for kind, _ in paragraph if kind == "math") >= 2:
        return _cut_after_math(paragraph)
    if _numbered_list(lines):
        return _items([chunk for _, chunk in paragraph], bullets=False)
    return ["\n".join(chunk for _, chunk in paragraph)]


def _numbered_list(lines: list[str]) -> bool:
    """Steps written as a numbered list: it starts with item 1 (a list of cases introduced by a
    sentence is one step, as PRM800K's labelers saw it)."""
    return (
        len(lines) >= 2
        and bool(_NUMBERED.match(lines[0]))
        and sum(1 for line in lines if _NUMBERED.match(line)) >= 2
    )


def _cut_after_math(paragraph: list[tuple[str, str]]) -> list[str]:
    """Prose lines, the formula they introduce, then a new unit (and one at each numbered item)."""
    units: list[list[str]] = [[]]
    for kind, chunk in paragraph:
        starts_item = kind == "line" and bool(_NUMBERED.match(chunk))
        if kind == "line" and units[-1] and (_ends_with_math(units[-1]) or starts_item):
            units.append([])
        units[-1].append(chunk)
        if kind == "math":
            units[-1].append("\0math")
    return ["\n".join(c for c in unit if c != "\0math") for unit in units if unit]


def _ends_with_math(unit: list[str]) -> bool:
    return bool(unit) and unit[-1] == "\0math"


def _items(lines: list[str], *, bullets: bool) -> list[str]:
    """One step per numbered (or bulleted) item, continuation lines kept with their item."""
    items: list[list[str]] = [[]]
    for line in lines:
        starts = _NUMBERED.match(line) or (bullets and _BULLET.match(line))
        if starts and items[-1]:
            items.append([])
        if not line.strip() and not bullets:
            continue
        items[-1].append(line)
    return ["\n".join(item).strip() for item in items if "".join(item).strip()]


def _attach(units: list[str]) -> list[str]:
    """Formulas to the sentence that introduces them (one that has not ended with a full stop);
    PRM800K's ``# Answer`` heading to the answer after it."""
    out: list[str] = []
    for unit in units:
        introduced = out and not out[-1].rstrip().endswith((".", "!", "?"))
        if out and (
            (introduced and _only_display(unit.strip())) or _ANSWER_HEADING.match(out[-1].strip())
        ):
            out[-1] = f"{out[-1]}\n\n{unit}"
        else:
            out.append(unit)
    return out


def _only_display(unit: str) -> bool:
    blocks = _blocks(unit.split("\n"))
    return bool(blocks) and all(kind == "math" for kind, _ in blocks)


def _long_cut(units: list[str]) -> list[str]:
    out = []
    for unit in units:
        if len(unit) <= MAX_STEP_CHARS or "```" in unit:
            out.append(unit)
        elif sum(1 for ln in unit.split("\n") if _BULLET.match(ln) or _NUMBERED.match(ln)) > 2:
            out += _line_groups(unit)
        else:
            out += _sentences(unit)
    return out


def _line_groups(unit: str) -> list[str]:
    """A long list cut between its items into pieces of about ``MAX_STEP_CHARS / 2``."""
    pieces: list[str] = []
    for line in unit.split("\n"):
        item = _BULLET.match(line) or _NUMBERED.match(line)
        if pieces and (not item or len(pieces[-1]) + len(line) < MAX_STEP_CHARS // 2):
            pieces[-1] = f"{pieces[-1]}\n{line}"
        else:
            pieces.append(line)
    return pieces


def _sentences(paragraph: str) -> list[str]:
    """A paragraph cut at sentence ends into pieces of about ``MAX_STEP_CHARS / 2``."""
    protected = {}

    def hide(m: re.Match) -> str:
        protected[f"\0{len(protected)}\0"] = m.group(0)
        return f"\0{len(protected) - 1}\0"

    hidden = _INLINE_MATH.sub(hide, paragraph)
    sentences = _SENTENCE_END.split(hidden)
    pieces: list[str] = []
    target = MAX_STEP_CHARS // 2
    for sentence in sentences:
        if pieces and len(_unhide(pieces[-1], protected)) + len(sentence) < target:
            pieces[-1] = f"{pieces[-1]} {sentence}"
        else:
            pieces.append(sentence)
    return [_unhide(p, protected) for p in pieces]


def _unhide(text: str, protected: dict[str, str]) -> str:
    return re.sub(r"\0\d+\0", lambda m: protected[m.group(0)], text)
