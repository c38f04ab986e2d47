"""Lark parses one candidate tag into a `Tag` (grammars/tags.lark); the parser is built once, lazily, and kept in
the cache folder (decision PF-70).

A well-formed tag is read with regular expressions made of the grammar's own terminals (SC-5); those
terminals are kept in the cache folder (decision PF-3), so a command whose tags all read that way never
imports lark: a cold `tagengine apply` saves the 40 ms of importing it and building the parser.
"""

from __future__ import annotations

import io
import json
import re
import sys
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from .. import disk_cache
from ..errors import TagengineError
from ..resources import read_bytes, read_text
from .model import MAX_ATTRIBUTES, RESULT_KEYS, Attr, Tag
from .vocabulary import RECORD_KEYS

if TYPE_CHECKING:
    from lark import Lark, Token, Transformer
    from lark.exceptions import UnexpectedInput

_ESCAPE = {'\\"': '"', "\\\\": "\\"}


def unescape(body: str) -> str:
    """Undo the two escapes of DEC-1; any other backslash stays as written."""
    if "\\" not in body:
        return body
    out, i = [], 0
    while i < len(body):
        pair = body[i:i + 2]
        if pair in _ESCAPE:
            out.append(_ESCAPE[pair])
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


PARSER_KIND = "parsers"  # the cache folder's subfolder for Lark's analysis of the grammar
PROOF = "[proof: key='value' flag]"  # a tag (of no kind) a kept parser must read as the grammar does, into:
PROOF_PARTS = ("proof", (("key", "value"), ("flag", None)))


@cache
def parser() -> Lark:
    """Lark's LALR parser of the grammar, built on first use, lark imported with it. What building it computes
    (the grammar read, its LALR tables) is read back from the cache folder when this lark, on this Python, built it
    for this grammar before (decision PF-70): building it was 20-30 ms of a cold command that meets a malformed
    tag, reading it back 1-2. A parser read back names no code (`_plain_data_only`) and must read a tag as the
    grammar does (`PROOF`) before it is used: an entry that holds anything else is a miss. A parse gives Lark's tree,
    which `TagBuilder` turns into the tag's parts: `Lark.load` takes no transformer, so a parser built here does
    without one too."""
    from lark import Lark

    grammar = read_text("grammars", "tags.lark")
    key = disk_cache.digest(grammar.encode(), _lark_source(), sys.implementation.cache_tag.encode())
    kept = disk_cache.read_entry(PARSER_KIND, key)
    if kept is not None:
        try:
            _plain_data_only(kept)  # so Lark's own unpickling below can name no code to run
            loaded = Lark.load(io.BytesIO(kept))
            if _tag_builder().transform(loaded.parse(PROOF)) == PROOF_PARTS:  # and it reads a tag as the grammar does
                return loaded
        except Exception:  # an entry this lark cannot read, or that does not read tags, is a miss, as a spoilt one is
            pass
    built = Lark(grammar, parser="lalr")
    saved = io.BytesIO()
    built.save(saved)
    disk_cache.write_entry(PARSER_KIND, key, saved.getvalue())
    return built


def _plain_data_only(payload: bytes) -> None:
    """Raise unless `payload` is a pickle of plain data only (dicts, lists, tuples, text, numbers, None: what
    `Lark.save` writes). An entry in the cache folder that names a class or a function is not one Lark wrote, and
    is refused before anything it names is found, as the ruleset's entries are (`ruleset.kept`). pickle is imported
    here, with lark: a command that needs no parser does without it."""
    import pickle

    class PlainData(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            raise pickle.UnpicklingError(f"{module}.{name} is not plain data")

    PlainData(io.BytesIO(payload)).load()


@cache
def _tag_builder() -> Transformer[Token, tuple[str, tuple[Attr, ...]]]:
    """What turns a parse's tree into the tag's name and attributes (lark imported with it)."""
    from lark import Token, Transformer, v_args

    @v_args(inline=True)
    class TagBuilder(Transformer[Token, tuple[str, tuple[Attr, ...]]]):
        def start(self, name: Token, *attrs: Attr) -> tuple[str, tuple[Attr, ...]]:
            return str(name).lower(), attrs

        def pair(self, key: Token, value: str) -> Attr:
            return str(key), value

        def flag(self, key: Token) -> Attr:
            return str(key), None

        def quoted(self, tok: Token) -> str:
            return unescape(str(tok)[1:-1])

        def typographic(self, tok: Token) -> str:
            return str(tok)[1:-1]

        single = typographic

        def bare(self, tok: Token) -> str:
            return str(tok)

    return TagBuilder()


class Malformed(TagengineError, ValueError):
    """The candidate opens like a tag but does not parse; the message says where and why."""


def _describe(err: UnexpectedInput, text: str) -> str:
    col = getattr(err, "column", None)
    pos = getattr(err, "pos_in_stream", None)
    if pos is None or pos < 0:
        return "the tag ends before it is complete"
    ch = text[pos] if pos < len(text) else "end of tag"
    return f"unexpected {ch!r} at column {col}"


_CACHED_UP_TO = 4096  # characters: a longer candidate is rare, and 4096 of them would pin gigabytes


TERMINALS_KIND = "tags"  # the cache folder's subfolder for the grammar's terminals


def _lark_source() -> bytes:
    """The source of lark's own `__init__.py` (it names lark's version), read without importing lark."""
    from importlib.util import find_spec

    spec = find_spec("lark")
    if spec is None or spec.origin is None:
        return b""
    with open(spec.origin, "rb") as f:
        return f.read()


def terminals() -> dict[str, str]:
    """Each terminal of the grammar as the regular expression Lark's lexer uses, from the cache folder when
    this grammar was read by this lark before (its key: the grammar's text and lark's source); else from
    Lark, and kept."""
    grammar = read_bytes("grammars", "tags.lark")
    key = disk_cache.digest(grammar, _lark_source())
    kept = disk_cache.read_entry(TERMINALS_KIND, key)
    if kept is not None:
        try:
            found = json.loads(kept)
        except ValueError:
            found = None
        if isinstance(found, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in found.items()):
            return found
    found = {d.name: d.pattern.to_regexp() for d in parser().terminals}
    disk_cache.write_entry(TERMINALS_KIND, key, json.dumps(found, sort_keys=True).encode())
    return found


Expressions = tuple[str, str, str, str]  # a tag's head `[name:`, one attribute, its end, the start of a tag


@cache
def _tag_pieces() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """A well-formed tag's pieces as regular expressions, built from the grammar's own terminals, so the
    syntax is still written only in grammars/tags.lark: its head `[` NAME `:`, one attribute (KEY (`=` value)?),
    its end `]`, blanks ignored between tokens. Each token is taken whole, as Lark's lexer takes it (the terminals'
    own possessive runs; `_lexed` takes each attribute as its first match and never goes back), so each match is
    linear. Terminals from the cache folder that do not make these expressions are read again from Lark."""
    try:
        head, attr, end, _ = _expressions(terminals())
        return re.compile(head), re.compile(attr), re.compile(end)
    except (KeyError, re.error):
        head, attr, end, _ = _expressions(_lark_terminals())
        return re.compile(head), re.compile(attr), re.compile(end)


@cache
def _tag_start() -> re.Pattern[str]:
    """The start of a tag (see `broken`), from the same terminals: compiled apart, on the stream filter's
    first use, since nothing else reads it and it was a third of what a cold `apply` spent compiling
    regular expressions (PF-44)."""
    try:
        return re.compile(_expressions(terminals())[3])
    except (KeyError, re.error):
        return re.compile(_expressions(_lark_terminals())[3])


def _lark_terminals() -> dict[str, str]:
    return {d.name: d.pattern.to_regexp() for d in parser().terminals}


def _expressions(t: dict[str, str]) -> Expressions:
    ws = f"(?:{t['GAP']})?"
    # in the order of Lark's lexer: SQUOTED's priority first, then the longest
    value = f"(?:(?P<q>{t['SQUOTED']})|(?P<s>{t['STRING']})|(?P<t>{t['TYPO']})|(?P<b>{t['BARE']}))"
    head = rf"\[{ws}(?P<name>{t['NAME']}){ws}:"
    attr = f"{ws}(?P<key>{t['KEY']})(?:{ws}={ws}{value})?"
    end = f"{ws}(?:{t['_CLOSE']})"
    # The start of a tag, cut after a token: whole attributes (a flag only when no `=` follows it), then
    # perhaps a key and its `=`; at most MAX_ATTRIBUTES keys in all. Each token is taken whole (atomic).
    key, plain_value = f"(?>{t['KEY']})", "(?>" + re.sub(r"\(\?P<[a-z]+>", "(?:", value) + ")"
    closed_attr = f"{ws}{key}(?:{ws}={ws}{plain_value}|(?!{ws}=))"
    start = rf"\[{ws}(?>{t['NAME']}){ws}:(?>{closed_attr}){{0,{MAX_ATTRIBUTES - 1}}}+(?:{ws}{key}{ws}=)?{ws}"
    return head, attr, end, start


def _lexed(text: str) -> Tag | None:
    """The tag a well-formed candidate holds, read with regular expressions: its head, then one attribute after
    another, each taken whole where the last ended (the grammar's `(attribute)*` as an atomic, possessive
    repetition: what one expression of the whole tag read, without compiling that expression, some 2 ms of every
    cold command that reads a tag), then its end; None for anything else (a malformed tag, more than
    MAX_ATTRIBUTES attributes), which Lark then judges and explains. For every text it reads, the Tag equals
    Lark's (a property test compares them): Lark's per-token cost made dense tags take over a second per MB
    (SC-5)."""
    head, attr, end = _tag_pieces()
    m = head.match(text)
    if m is None:
        return None
    pos = m.end()
    attrs: list[Attr] = []
    while (a := attr.match(text, pos)) is not None:  # in the whole text: a single-quoted value looks past its quote
        if len(attrs) == MAX_ATTRIBUTES:
            return None
        s, q, t = a.group("s"), a.group("q") or a.group("t"), a.group("b")
        attrs.append((a.group("key"), unescape(s[1:-1]) if s is not None else q[1:-1] if q is not None else t))
        pos = a.end()
    if end.fullmatch(text, pos) is None:
        return None
    return tag_of(m.group("name").lower(), attrs)


@lru_cache(maxsize=4096)
def _verdict(text: str) -> Tag | str:
    """The Tag, or why the candidate is malformed; both cached, since models repeat their mistakes."""
    return _lexed(text) or judged_by_lark(text)


def judged_by_lark(text: str) -> Tag | str:
    """The grammar's own verdict: the Tag, or where and why the candidate fails.

    A tag with more than MAX_ATTRIBUTES attributes is malformed, judged after that many: parsing
    costs per token, and 1 MB of attributes in one tag must not take seconds (SC-3).
    """
    from lark.exceptions import LarkError, UnexpectedInput

    try:
        walk = parser().parse_interactive(text)
        keys = 0
        for token in walk.iter_parse():  # Lark costs per token: stop a tag that no command could use
            if token.type == "KEY":
                keys += 1
                if keys > MAX_ATTRIBUTES:
                    return f"more than {MAX_ATTRIBUTES} attributes"
        tree = walk.resume_parse()  # type: ignore[no-untyped-call]  # lark leaves this one unannotated
        name, attrs = _tag_builder().transform(tree)
    except UnexpectedInput as e:
        return _describe(e, text)
    except LarkError as e:  # pragma: no cover - any other parser failure is still a malformed tag
        return str(e).splitlines()[0]
    return tag_of(name, attrs)


def tag_of(name: str, attrs: tuple[Attr, ...] | list[Attr]) -> Tag:
    """The Tag, without the attributes the engine writes: the receipt's and, for a kind with one, its
    roll record (DEC-4); the model's own copies are discarded."""
    record = RECORD_KEYS.get(name)
    if record is None:
        return Tag(name, tuple((k, v) for k, v in attrs if k not in RESULT_KEYS))
    return Tag(name, tuple((k, v) for k, v in attrs if k not in RESULT_KEYS and k not in record))


def broken(lines: str) -> bool:
    """Whether the start of a candidate, made of whole lines, already fails to parse whatever follows.

    No token spans a line break, so an error on a finished line stays; the stream filter uses this to
    show the lines after a cut-off tag without waiting for the end of the reply (SC-4). A start that one
    regular expression reads as whole tokens of a tag (`_tag_start`) is not broken; Lark judges the rest:
    its per-token cost made a dense tag streamed a character at a time cost half a second per 200 KB.
    """
    return _tag_start().fullmatch(lines) is None and broken_by_lark(lines)


def broken_by_lark(lines: str) -> bool:
    """`broken` as the grammar itself says it, token by token."""
    from lark.exceptions import LarkError, UnexpectedInput

    try:
        keys = 0
        for token in parser().parse_interactive(lines).iter_parse():
            if token.type == "KEY":
                keys += 1
                if keys > MAX_ATTRIBUTES:
                    return True
    except UnexpectedInput:
        return True
    except LarkError:  # pragma: no cover - any other parser failure: do not decide early
        return False
    return False


def verdict(text: str) -> Tag | str:
    """`parse` without raising: the Tag, or why the candidate is malformed (the scanner's way in: an
    exception per malformed tag costs more than the tag)."""
    return _verdict(text) if len(text) <= _CACHED_UP_TO else _verdict.__wrapped__(text)


def parse(text: str) -> Tag:
    """Parse one complete candidate `[name: ...]`; Malformed says where it fails. Pure and cached.

    A `raw` attribute is kept: the scanner reads it as an earlier malformed verdict (DEC-5).
    """
    found = verdict(text)
    if isinstance(found, str):
        raise Malformed(found)
    return found
