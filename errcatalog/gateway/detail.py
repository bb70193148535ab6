"""The screen an upstream's own words about its failure pass before a model may read them: pure, text in, a quote or
a verdict out.

The catalog's code, cause and instruction answer every failure; an upstream's words follow them as a marked quote
(``errcatalog.render.core.UpstreamWords``), because they often carry the one fact the model needs (which table,
which field, which values are accepted). Those words come from outside, so ``screen_detail`` takes out what could
harm the model, the user or the server, in this order:

1. Only the first ``READ_CHARS`` characters are read. An ellipsis at the end (the gateway's mark of a text it cut)
   is set aside and put back on the quote. The TypeScript SDK's wrapper of an error's message (``MCP error -32603:
   ``) goes, wherever the relays before us repeated it: the catalog's answer names the failure's code.
2. The secrets the gateway sent the upstream (``known``) are redacted as they came, and again after step 3.
3. The text is normalised, so that nothing hides from the later steps: the escapes of the gateway's log form
   (``\\x1b``, ``\\x202e``, as ``errcatalog.safety.redacted_for_people`` writes them) and HTML character references
   become their characters; invisible characters (zero-width, bidirectional, private-use, unassigned, Unicode tags,
   variation selectors, blank letters) and control characters are removed, terminal colour codes with them, except
   that controls which separate words become spaces; the text is NFKC-normalised (full-width and mathematical
   letters become plain ones).
4. The text is judged, whole: words aimed at the model withhold all of it, with flags for staff. They are the
   tool-poisoning screen's phrases (``errcatalog.gateway.screen``; a chat role's name only where a turn would start,
   since "Read-only file system: '/x'" is an error), the tokens of chat templates, tool calls and the usual
   imperatives of prompt injection. Judging reads Cyrillic, Greek and Armenian look-alikes that stand beside Latin
   letters as Latin, ``_*~`-`` as spaces (``**ignore**_previous``), and what Unicode tag characters spell. An
   upstream's own advice to the model ("Use git_add to stage changes first") is not among them. Hostile values the
   upstream echoes back ("no such table: ignore all previous instructions...") are judged like the rest: the screen
   cannot know what was echoed.
5. Credentials are redacted before anything is cut or moved, so no cut leaves half of one: the shapes
   ``errcatalog.safety`` knows (bearer, basic and token values, vendors' keys, JWTs, private keys, ``password=``,
   hex runs of 32 and base64 runs of 40 characters or more, passwords in URLs and DSNs, whose scheme and user stay:
   ``postgres://user:[REDACTED]@db``), then keys whose name says secret (``DB_PASSWORD=``, ``"password": "x"``,
   ``client_secret=``), secret query parameters and headers, and the key forms of more vendors as secret scanners
   (detect-secrets, gitleaks) know them; then random-looking tokens of 20 characters or more (``_random_looking``).
6. Tracebacks and stack frames (Python, Node, Java, Go, Rust) are removed, with the source lines and carets beneath
   a frame, and so are the server's own source paths: a source file with a line number, or any path through
   ``site-packages``, ``dist-packages``, ``node_modules`` or a ``dist`` folder's scripts, and a Go log line's header
   (klog's level, date, time, thread and source file, ``E1129 18:53:03.893012 8764 memcache.go:265]``). The
   exception's message stays (``sqlite3.OperationalError: no such column: full_name``), and so does every other path:
   a file server's ``ENOENT: no such file or directory, open '/tmp/x.txt'`` names the fact.
7. Markup is neutralised: HTML comments and elements whose content is code or styling (``script``, ``style``...)
   go with their content, other HTML tags go, angle brackets that would open any other tag become single
   guillemets (U+2039, U+203A: ``<class 'int'>`` stays readable), a markdown link or image becomes its text (its
   URL goes: an image's URL is a beacon that carries data away when a client renders it, a link's a lure), code
   fences and heading marks go and backticks become ``'``. A bare URL stays as plain text: it is often the fact
   ("Failed to fetch https://example.com/").
8. The quote becomes one line (whitespace runs become one space) and is judged again if step 6 or 7 removed
   anything (a removal can join what was apart). Its straight double quotes become single ones, so that it stays
   inside the ``"…"`` the renderer puts around it (typographic quotes stay), and separators left at its ends go. It
   is cut to ``max_chars`` at a word where one is in the last half, ``…`` counted in, never inside ``[REDACTED]``.

Kept on purpose: UUIDs and hex runs under 32 characters (entity ids and short commit ids are facts: "No item found
with id 3f2a...", "Ref 'deadbeef0123' did not resolve"; from 32 on, ``errcatalog.safety`` redacts them, since many
API keys have that form, and a full commit id is one the caller sent); words with slashes (``Mars/Olympus``,
``application/json``); paths that are not the server's source.

No ORM, no I/O, no settings: the bound comes in as ``max_chars``. Python's regular expressions backtrack through
path-like words, and try every alternative at every position, so every pattern that reads the whole text runs in RE2,
most of them in one pass (``_TRIAGE``) that says which steps a text needs at all (``bench/detail_screen_bench.py``
measures the screen).
"""

from __future__ import annotations

import html
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import re2

from errcatalog.gateway.screen import INSTRUCTION_PHRASES, ROLE_MARKER, hidden
from errcatalog.safety import (
    CREDENTIAL_CANDIDATES,
    ELLIPSIS,
    REDACTED,
    UNTRUSTED_TEXT_MAX_CHARS,
    credential_candidate_bytes,
    credentials_redacted,
)

# The bound's default, as the gateway's setting (FAILURE_WORDS_MAX_CHARS) has it.
DEFAULT_MAX_CHARS = 300
# How much of a text is read: twice what the gateway keeps of an upstream's text, so that a caller handing the screen
# a raw text gets the same quote. What lies beyond is never quoted, so it need not be judged.
READ_CHARS = 2 * UNTRUSTED_TEXT_MAX_CHARS

# ``ScreenedDetail.withheld``: why nothing is quoted.
INSTRUCTIONS = "instructions"
# ``ScreenedDetail.flags``: what the screen found or did, in fixed words.
CREDENTIALS = "credentials"
RANDOM_TOKENS = "random tokens"
TRACEBACK = "traceback"
SOURCE_PATHS = "source paths"
MARKUP = "markup"
HIDDEN_CHARACTERS = "hidden characters"
CUT = "cut"
FLAG_WORDS = frozenset(
    {INSTRUCTIONS, CREDENTIALS, RANDOM_TOKENS, TRACEBACK, SOURCE_PATHS, MARKUP, HIDDEN_CHARACTERS, CUT}
)


@dataclass(frozen=True, slots=True)
class ScreenedDetail:
    """An upstream's failure text as a model may read it.

    ``text`` is the quote: one line of at most the bound, ``""`` when withheld or when nothing is left. ``withheld``
    is ``""`` or why nothing is quoted (``INSTRUCTIONS``). ``flags`` are fixed words for staff, never any of the
    text: those of ``FLAG_WORDS``, and for a withheld text the reasons of the phrases it holds (``WITHHELD_REASONS``,
    in the words of ``errcatalog.gateway.screen`` where the phrase is its).
    """

    text: str
    withheld: str
    flags: tuple[str, ...]


_NOTHING = ScreenedDetail("", "", ())


def _bytes_pattern(pattern: str) -> re2._Regexp:
    """``pattern`` for RE2 over UTF-8 bytes in Latin-1 mode (byte by byte, which keeps the automaton small). The
    patterns here start and stop only at ASCII characters, so no match splits a character's bytes."""
    return re2.compile(pattern.encode("latin-1"), _options())


def _options(*, case_sensitive: bool = True) -> re2.Options:
    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = case_sensitive
    options.encoding = re2.Options.Encoding.LATIN1
    return options


def _substituted(pattern: re2._Regexp, replacement: Callable[[re2._Match], bytes], value: str) -> str:
    data = value.encode("utf-8", "surrogatepass")
    replaced = pattern.sub(replacement, data)
    return value if replaced == data else replaced.decode("utf-8", "replace")


# --- Step 3: normalisation -----------------------------------------------------------------------------------------

# ``redacted_for_people`` writes a character that is not printable as ``\x`` and its code in hex, two digits at least.
_LOG_ESCAPE = re.compile(r"\\x([0-9a-f]{2,6})")
# HTML character references with their semicolon: without one, "a=1&copy=2" in a URL would read as a copyright sign.
_CHARACTER_REFERENCE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
# Terminal control sequences (colours, cursor moves, titles): the ESC goes with the other controls, the rest with it.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
# Controls that separate words become spaces, so that words do not join.
_SPACING_CONTROLS = frozenset("\x0b\x0c\x1c\x1d\x1e\x1f\x85")
# Letters and marks that show as nothing (Hangul fillers, the braille blank, the combining grapheme joiner, Khmer's
# invisible vowels): printable to Python, blank to a reader.
_BLANK_LETTERS = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u2800\u3164\uffa0")
# Unicode tag characters spell ASCII invisibly ("ASCII smuggling"): what they spell is judged, then they go.
_TAG_OFFSET = 0xE0000
# The UTF-8 bytes of printable ASCII characters, line breaks, tabs and carriage returns: with them deleted, what is
# left of a text's bytes are its other characters, whole (no byte of a longer character is ASCII).
_PLAIN_ASCII_BYTES = bytes(range(0x20, 0x7F)) + b"\n\t\r"
# Beyond this many distinct characters to remove, the text is rebuilt once rather than replaced character by
# character.
_REPLACE_LIMIT = 16


@lru_cache(maxsize=1024)
def _unescaped(digits: str) -> str:
    """What ``\\x`` and ``digits`` stand for in ``redacted_for_people``'s output: a character that is not printable,
    whose code a prefix of the digits spells as that function writes it (two digits at least, no leading zero
    beyond), and the digits after it; the escape itself when no prefix does. Where prefixes of several lengths
    would do ("\\xe0041": U+0E00 and "41", or the tag letter U+E0041), an assigned character is taken over an
    unassigned one, and a longer code over a shorter."""
    best: tuple[bool, int] | None = None
    for length in range(2, len(digits) + 1):
        code = int(digits[:length], 16)
        if code > 0x10FFFF or f"{code:02x}" != digits[:length]:
            continue
        char = chr(code)
        if not char.isprintable() and char not in "\n\t":
            best = max(best or (False, 0), (unicodedata.category(char) != "Cn", length))
    if best is None:
        return f"\\x{digits}"
    length = best[1]
    return chr(int(digits[:length], 16)) + digits[length:]


def _log_escape(match: re.Match[str]) -> str:
    return _unescaped(match.group(1))


def _character_reference(match: re.Match[str]) -> str:
    return html.unescape(match.group(0))


def _without(value: str, chars: set[str], replacement: str) -> str:
    if len(chars) <= _REPLACE_LIMIT:
        for char in chars:
            value = value.replace(char, replacement)
        return value
    return "".join(replacement if c in chars else c for c in value)


def _removable(char: str) -> bool:
    return char not in "\n\r\t" and (hidden(char) or char in _SPACING_CONTROLS or char in _BLANK_LETTERS)


def _printable(value: str) -> bool:
    """Whether ``value`` holds only printable characters and line breaks, tabs and carriage returns: line by line,
    so that a text of one line is read once, and only a line with a tab or a carriage return is copied."""
    return value.isprintable() or all(
        line.isprintable() or line.replace("\t", " ").replace("\r", " ").isprintable() for line in value.split("\n")
    )


def _normalised(value: str, flags: list[str], *, hinted: bool) -> tuple[str, str]:
    """Step 3: the text with its escapes undone, invisible characters and controls removed, NFKC-normalised; and the
    message its Unicode tag characters spell, when it has any (else ""). ``hinted``: whether the triage saw an
    escape, a reference, a control, a variation selector or a blank letter (the last two are printable to Python)."""
    if "\\x" in value:
        value = _LOG_ESCAPE.sub(_log_escape, value)
    if "&" in value:
        value = _CHARACTER_REFERENCE.sub(_character_reference, value)
    smuggled = ""
    if hinted or not _printable(value):
        others = value.encode("utf-8", "surrogatepass").translate(None, _PLAIN_ASCII_BYTES)
        odd = {char for char in set(others.decode("utf-8", "surrogatepass")) if _removable(char)}
        if odd:
            flags.append(HIDDEN_CHARACTERS)
            if any(ord(char) >= _TAG_OFFSET for char in odd):
                smuggled = "".join(chr(ord(c) - _TAG_OFFSET) if 0xE0020 <= ord(c) <= 0xE007E else " " for c in value)
            if "\x1b" in odd:
                value = _ANSI.sub("", value)
            value = _without(value, odd & _SPACING_CONTROLS, " ")
            value = _without(value, odd - _SPACING_CONTROLS, "")
    if not value.isascii() and not unicodedata.is_normalized("NFKC", value):
        value = unicodedata.normalize("NFKC", value)
    return value, smuggled


# --- Step 4: judging ----------------------------------------------------------------------------------------------

# Letters that look like Latin ones (the Cyrillic, Greek and Armenian letters of Unicode's confusables, TR39, whose
# skeleton is one ASCII letter), typographic quotes and dashes, and line separators: judged as what they look like.
_LOOK_ALIKES: dict[str, str] = {
    **dict(zip("аеһіјкорсухѕԁԛԝӏүɡɑıοανικρυχօսհցզո", "aehijkopcyxsdqwlygaioavikpuxouhgqn", strict=True)),
    **dict(zip("АВЕКМНОРСТХУІЈЅԚԜΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ABEKMHOPCTXYIJSQWABEZHIKMNOPTYX", strict=True)),
    **dict.fromkeys("\u2018\u2019\u02bc\u201b", "'"),
    **dict.fromkeys("\u201c\u201d\u201e", '"'),
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014", "-"),
    **dict.fromkeys("\u2028\u2029", " "),
}
_LOOK_ALIKE_BYTES = tuple((char.encode(), plain.encode()) for char, plain in _LOOK_ALIKES.items())
# A look-alike beside an ASCII letter: a word that mixes scripts, which is how a look-alike hides a phrase. Texts in
# one script (a Russian message with English names between spaces) are read as they are.
_MIXED_SCRIPTS = "|".join(
    f"[A-Za-z]{re.escape(latin1)}|{re.escape(latin1)}[A-Za-z]"
    for latin1 in (char.encode().decode("latin-1") for char in _LOOK_ALIKES)
)
# Read as spaces when judging: markdown's emphasis and code marks, and the separators of names that read as words.
_JUDGED_AS_SPACE = bytes.maketrans(b"_*~`-", b"     ")


def _judging_pattern(pattern: str) -> str:
    """A phrase of ``errcatalog.gateway.screen``, written for text whose whitespace runs are single spaces, for text
    as it comes: an optional space is any whitespace, a space a run of it."""
    return pattern.replace(" ?", r"\s*").replace(" ", r"\s+")


# Words aimed at the model that an error has no reason to say, besides the tool-poisoning phrases: a chat role where a
# turn starts, the tokens of chat templates, the shapes of tool calls, the usual imperatives of prompt injection and
# requests to send data away.
_MODEL_DIRECTED: tuple[tuple[str, str], ...] = (
    (
        r"(?m:(?:^|[.!?>\]\"'])\s*(?:system|assistant|developer|human)\s*:)",
        ROLE_MARKER[1],
    ),
    (
        # Without the noun the tool-poisoning phrase ends on: a library that shortens an echoed value keeps its start
        # (pydantic's input_value='Ignore all previous inst... call x').
        r"\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|earlier|preceding)\b",
        INSTRUCTION_PHRASES[0][1],
    ),
    (
        r"<\|\s*(?:im\s+start|im\s+end|system|user|assistant|endoftext|eot\s+id|start\s+header\s+id)\s*\|>"
        r"|\[/?inst\]|<</?sys>>|(?m:^\s*#{2,}\s*(?:instruction|system|response)\b)",
        "the tokens of a chat template",
    ),
    (
        r'\{\s*"(?:name|tool|tool\s+name|function|recipient\s+name)"\s*:\s*"[^"]{1,100}"\s*,\s*'
        r'"(?:arguments|parameters|args|input)"\s*:'
        r'|"(?:tool\s+calls|function\s+call|tool\s+use)"\s*:'
        r"|<\s*/?\s*(?:tool\s+call|tool\s+use|function\s+calls?|invoke|tool\s+result|function\s+results?)\b",
        "a tool call",
    ),
    (
        r"\byou\s+(?:must|should|need\s+to|have\s+to|will)\s+(?:now|immediately|instead|always|never|secretly)\b"
        r"|\bfrom\s+now\s+on\b|\bas\s+an\s+(?:ai|assistant|language\s+model)\b"
        r"|\b(?:the\s+)?(?:assistant|ai|model|agent|llm)\s+(?:must|should|will)\s+(?:now|always|never|instead)\b"
        r"|\b(?:before|instead\s+of)\s+(?:answering|responding|replying)\b",
        "reads as instructions to the model",
    ),
    (
        r"\b(?:send|email|post|upload|forward|exfiltrate|leak|share)\b(?:\s+\S+){0,3}?\s+"
        r"(?:your|the\s+user'?s|all(?:\s+of)?(?:\s+the)?(?:\s+user'?s)?|the\s+(?:entire|full|whole))\s+"
        r"(?:conversation|chat|history|messages|memory|context|keys?|credentials|passwords?|secrets?|tokens?|files)\b",
        "asks to send data away",
    ),
)
_JUDGED: tuple[tuple[str, str], ...] = (
    *((_judging_pattern(pattern), reason) for pattern, reason in INSTRUCTION_PHRASES),
    *_MODEL_DIRECTED,
)
# The reasons a withheld text's flags may name, besides ``INSTRUCTIONS``.
WITHHELD_REASONS = frozenset(reason for _pattern, reason in _JUDGED)


def _instruction_set() -> re2.Set:
    """All the phrases in one RE2 set: one linear pass says which of them a text holds."""
    phrases = re2.Set.SearchSet(_options(case_sensitive=False))
    for pattern, _reason in _JUDGED:
        phrases.Add(pattern.encode("latin-1"))
    phrases.Compile()
    return phrases


_INSTRUCTIONS = _instruction_set()


def _instruction_reasons(data: bytes, *, mixed_scripts: bool) -> tuple[str, ...]:
    """The reasons of the phrases aimed at the model in a text, given as UTF-8 ``data`` and read as step 4 says;
    ``mixed_scripts``: whether look-alike letters stand beside ASCII ones (``_MIXED_SCRIPTS``)."""
    if mixed_scripts:
        for char, plain in _LOOK_ALIKE_BYTES:
            data = data.replace(char, plain)
    found = _INSTRUCTIONS.Match(data.translate(_JUDGED_AS_SPACE))
    return tuple(dict.fromkeys(_JUDGED[index][1] for index in sorted(found))) if found else ()


# --- Step 5: credentials and random tokens ---------------------------------------------------------------------------

_MORE_CREDENTIALS = (
    # An assignment to a key whose name says secret, also inside a longer name (DB_PASSWORD=, client_secret=,
    # AccountKey=), and such a key quoted in JSON or YAML ("password": "x").
    r"((?i:[\w-]*(?:passw(?:or)?d|pwd|passphrase|secret|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|account[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|session[_-]?id|credentials?)[\w-]*)"
    r"(?:\s*=\s*|[\"']\s*:\s*)[\"']?)[^\s\"',;&<>]+"
    # Secret query parameters: signed URLs, OAuth tokens and codes, ?key= API keys.
    r"|([?&](?i:access_token|id_token|refresh_token|token|sig|signature|x-amz-signature|x-amz-credential"
    r"|x-amz-security-token|client_secret|api_key|apikey|key|code)=)[^&\s#\"'<>]+"
    # Headers that carry a secret besides Authorization, whose bearer and basic values errcatalog.safety reads.
    r"|((?i:\bx-[\w-]*(?:key|token|secret|auth)[\w-]*|\bcookie|\bset-cookie|\bproxy-authorization)\s*:\s*)[^\n]+"
    # Vendors' key forms that errcatalog.safety does not know: GitLab, npm, PyPI, Hugging Face, DigitalOcean, Google
    # OAuth, Slack apps, Square, Shopify, SendGrid, Stripe test keys, webhook secrets, Twilio, Discord, Telegram; and
    # PGP private key blocks.
    r"|\b(?:gl(?:pat|dt|rt|ptt|ft|imt|oas|cbt|soat)-[\w-]{20,}|npm_[A-Za-z0-9]{36,}|pypi-AgE[\w-]{40,}"
    r"|hf_[A-Za-z0-9]{30,}|do[opr]_v1_[a-f0-9]{64}|ya29\.[\w-]{20,}|xapp-[\w-]{20,}|sq0(?:atp|csp)-[\w-]{22,}"
    r"|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|SG\.[\w-]{22}\.[\w-]{43}|[rsp]k_test_[0-9a-zA-Z]{16,}"
    r"|whsec_[A-Za-z0-9+/=]{20,}|(?:AC|SK)[0-9a-fA-F]{32}|[MN][A-Za-z0-9]{23,25}\.[\w-]{6}\.[\w-]{27,}"
    r"|[0-9]{8,10}:AA[\w-]{33})\b"
    r"|-----BEGIN PGP PRIVATE KEY BLOCK-----[\s\S]*?(?:-----END PGP PRIVATE KEY BLOCK-----|\z)"
)
_MORE_CREDENTIALS_RE = _bytes_pattern(_MORE_CREDENTIALS)
_REDACTED_BYTES = REDACTED.encode()


def _more_credential(match: re2._Match) -> bytes:
    """What a match of ``_MORE_CREDENTIALS`` becomes: its name kept, its secret redacted."""
    assigned, query, header = match.groups()
    return bytes(assigned or query or header or b"") + _REDACTED_BYTES


# A candidate random token: a run of 20 or more token characters in which a letter and a digit meet (a run with
# none is a name: get_current_timeArguments). As 19 alternatives, one for each place of the meeting, so that it
# stays a plain automaton.
_T = "[A-Za-z0-9+=_-]"
_MEET = "(?:[A-Za-z][0-9]|[0-9][A-Za-z])"
_TOKEN_CANDIDATE = "|".join(f"{_T}{{{before}}}{_MEET}{_T}{{{max(18 - before, 0)},}}" for before in range(19))
_TOKEN_RE = _bytes_pattern(f"{_T}{{20,}}")
_PIECES = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SEPARATORS = re.compile(r"[-_=+]")
_HEX_IDS = re.compile(r"[0-9a-fA-F]{1,31}(?:[-_][0-9a-fA-F]{1,31})*")


def _random_looking(token: str) -> bool:
    """Whether a run of 20 or more token characters reads as random (a key, a session id) rather than as a name.

    Measured on the 53,635 such runs in this project's installed Python packages and on random tokens of 20-32
    characters: random ones come in short pieces of letters and digits (``aZ3kQ9xL``: a, Z, 3, k, Q...), names in
    words (``sha256WithRSAEncryption``, ``K8S_NODE_CPU_USAGE``). A run is random when its pieces average under three
    characters and under 70% of it lies in words of three letters or more, unless separators cut it into parts
    under six characters on average (``gpt-4o-mini-2024-07-18``) or it is made of hex ids (UUIDs, commit ids; see
    the module's docstring). That finds 92-98% of random base62 and URL-safe tokens, 68-84% of base64 (longer ones
    are ``errcatalog.safety``'s) and 69-76% of single-case ones; what it took for random among the packages' runs
    were, by eye, keys, hashes and base64 data.
    """
    parts = len(_SEPARATORS.findall(token)) + 1
    if parts > 1 and len(token) / parts < 6:
        return False
    if _HEX_IDS.fullmatch(token):
        return False
    pieces = _PIECES.findall(token)
    letters_and_digits = sum(map(len, pieces))
    if letters_and_digits < 16 or len(pieces) * 3 <= letters_and_digits:
        return False
    words = sum(len(piece) for piece in pieces if len(piece) >= 3 and not piece[0].isdigit())
    if words >= 0.7 * letters_and_digits:
        return False
    counts = Counter(token).values()
    entropy = -sum(count / len(token) * math.log2(count / len(token)) for count in counts)
    return entropy >= 3.0


def _token(match: re2._Match) -> bytes:
    token = bytes(match.group(0))
    return _REDACTED_BYTES if _random_looking(token.decode("ascii")) else token


# --- Step 6: tracebacks, stack frames and the server's source paths ---------------------------------------------------

_SOURCE_EXTENSIONS = r"(?:py|pyc|pyx|pyi|js|mjs|cjs|jsx|ts|mts|cts|tsx|go|rs|java|kt|scala|rb|php|cs)"
_LOCATION = rf"[^\s()'\"]*[./\\][^\s()'\"]*\.{_SOURCE_EXTENSIONS}:[0-9]+"
# Runs of lines that are frames or a traceback's scaffolding: Python's frames with the source line and carets
# beneath them (indented deeper), Node's and Java's "at" lines, Go's goroutine dumps and Rust's backtraces to their
# end (a blank line), and a location alone on its line with the code beneath it (Node's code frame).
_FRAME_LINES = (
    r"(?m:^(?:[ \t]*(?:"
    r'File "[^"\n]*", line [0-9]+[^\n]*(?:\n[ \t]{4,}[^\n]*)*'
    r"|at (?:async )?[^\n]*?(?:[^\s()]*[./\\:][^\s()]*:[0-9]+(?::[0-9]+)?\)?"
    r"|\((?:native|<anonymous>|Native Method|Unknown Source|index [0-9]+)\))"
    r"|\.\.\. [0-9]+ more|[\^~]+"
    r"|Traceback \(most recent call last\):?"
    r"|During handling of the above exception, another exception occurred:"
    r"|The above exception was the direct cause of the following exception:"
    r"|note: run with `RUST_BACKTRACE=[^`\n]*`[^\n]*"
    r"|(?:goroutine [0-9]+ \[[^\]\n]*\]:|stack backtrace:)(?:\n[^\n]*[^\s][^\n]*)*"
    rf"|{_LOCATION}(?::[0-9]+)?(?: \+0x[0-9a-f]+)?(?:\n[ \t]+[^\s][^\n]*)*"
    r")[ \t]*(?:\n|\z))+)"
)
# The server's own source paths inside a line, with the preposition that points at one: a source file with a line
# number, anything under the package folders, a dist folder's scripts, and Python's frame written inline.
_SOURCE_PATH = (
    # A Go log line's header (klog, glog): it says where in the server the line was written, the words after it what.
    r"(?m:^[IWEF][0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}[ \t]+[0-9]+ [\w.-]+\.go:[0-9]+\][ \t]?)|"
    r"(?:\b(?:in|at|from)\s+)?(?:"
    r'File "[^"\n]*", line [0-9]+(?:, in [^\s,]+)?'
    r"|(?:file://)?(?:[A-Za-z]:)?[\w.@+~\\/-]*[\\/](?:site-packages|dist-packages|node_modules)[\\/][^\s'\"()<>,;]*"
    r"|(?:file://)?(?:[A-Za-z]:)?[\w.@+~\\/-]*[\\/]dist[\\/][\w.@+\\/-]*\.(?:js|mjs|cjs|map)(?::[0-9]+(?::[0-9]+)?)?"
    rf"|(?:file://)?(?:[A-Za-z]:)?[\w.@+~\\/-]*\.{_SOURCE_EXTENSIONS}"
    r"(?::[0-9]+(?::[0-9]+)?|\([0-9]+\)|\", line [0-9]+))"
)
_FRAME_LINES_RE = _bytes_pattern(_FRAME_LINES)
_SOURCE_PATH_RE = _bytes_pattern(_SOURCE_PATH)
# What a removed path leaves behind: empty brackets and quotes.
_PATH_LEFTOVERS = re.compile(r"\(\s*\)|\[\s*\]|(?<![\w'])''(?![\w'])|(?<![\w\"])\"\"(?![\w\"])")


def _removed(match: re2._Match) -> bytes:
    return b""


def _frames_removed(value: str, flags: list[str]) -> str:
    """Step 6: runs of frame lines removed, then the server's source paths in what is left."""
    without_frames = _substituted(_FRAME_LINES_RE, _removed, value)
    if without_frames is not value:
        flags.append(TRACEBACK)
    without_paths = _substituted(_SOURCE_PATH_RE, _removed, without_frames)
    if without_paths is without_frames:
        return without_frames
    flags.append(SOURCE_PATHS)
    return _PATH_LEFTOVERS.sub("", without_paths)


# --- Step 7: markup -----------------------------------------------------------------------------------------------

_HTML_COMMENT = re.compile(r"<!--[\s\S]*?(?:-->|$)")
_CONTENT_ELEMENTS = ("script", "style", "iframe", "object", "embed", "svg", "math", "template", "noscript", "textarea")
# Elements whose content is code, styling or a document of its own go with it. RE2: Python's engine would read to
# the end of the text again for each opening tag that is never closed.
_HTML_WITH_CONTENT_RE = re2.compile(
    "|".join(rf"<{name}\b[^>]*>[\s\S]*?</{name}\s*>" for name in _CONTENT_ELEMENTS).encode(),
    _options(case_sensitive=False),
)
# Any tag, read once; ``_tag`` says what it becomes by its name, so that a text of many "<" costs one look at each.
_TAG = re.compile(r"<(/?)([A-Za-z][\w:-]{0,63})([^<>]*)>|<[!?][^<>]*>")
# HTML's elements (the WHATWG list and the obsolete ones browsers still render): their tags go, their text stays.
# Text-level elements (b, span...) go as a browser shows them, joining what they stood between ("ig<b></b>nore"
# reads "ignore", and is judged so); the others separate what they stood between.
_TEXT_LEVEL = frozenset({
    "a", "abbr", "b", "bdi", "bdo", "big", "cite", "code", "data", "del", "dfn", "em", "font", "i", "ins", "kbd",
    "mark", "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time", "tt", "u", "var", "wbr",
})  # fmt: skip
_BLOCK_LEVEL = frozenset({
    "address", "area", "article", "aside", "audio", "base", "blink", "blockquote", "body", "br", "button", "canvas",
    "caption", "center", "col", "colgroup", "datalist", "dd", "details", "dialog", "dir", "div", "dl", "dt", "embed",
    "fieldset", "figcaption", "figure", "footer", "form", "frame", "frameset", "h1", "h2", "h3", "h4", "h5", "h6",
    "head", "header", "hgroup", "hr", "html", "iframe", "img", "input", "label", "legend", "li", "link", "main",
    "map", "marquee", "math", "menu", "meta", "meter", "nav", "noscript", "object", "ol", "optgroup", "option",
    "output", "p", "param", "picture", "pre", "progress", "rp", "rt", "ruby", "script", "search", "section",
    "select", "slot", "source", "style", "summary", "svg", "table", "tbody", "td", "template", "textarea", "tfoot",
    "th", "thead", "title", "tr", "track", "ul", "video",
})  # fmt: skip
_AUTOLINK = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*")
_OPENS_A_TAG = re.compile(r"<(?=[A-Za-z/!?])")
# Single guillemets stand for the angle brackets of what would be a tag: they read the same and open nothing.
_OPEN_ANGLE, _CLOSE_ANGLE = "\u2039", "\u203a"
# A markdown link, its text in group 1 and its destination and title (with parentheses nested once) after. An image
# is a link once its "!" is gone. Without nested brackets in the text, Python's engine reads it without backtracking
# into them, and a link it cannot read still loses its "](" below.
_MARKDOWN_LINK = re.compile(r"\[([^\[\]\n]*)\]\([^()\n]*(?:\([^()\n]*\)[^()\n]*)*\)")
_FENCE = re.compile(r"(?m)^[ \t]*(?:`{3,}|~{3,})")
_BACKTICKS = re.compile(r"`+")
_HEADING = re.compile(r"(?m)^[ \t]{0,3}#{1,6}(?:[ \t]+|$)")


def _tag(match: re.Match[str]) -> str:
    name = match.group(2)
    if name is None:  # <!DOCTYPE html>, <?xml ...?>
        return " "
    name = name.lower()
    if name in _TEXT_LEVEL:
        return ""
    if name in _BLOCK_LEVEL:
        return " "
    inner = match.group(0)[1:-1]
    if not match.group(1) and _AUTOLINK.fullmatch(inner):
        return inner  # <https://example.com>: the URL as plain text
    return f"{_OPEN_ANGLE}{inner}{_CLOSE_ANGLE}"  # <class 'int'>, <module>: readable, and no tag


def _spaced(match: re2._Match) -> bytes:
    return b" "


def _markup_neutralised(value: str, needs: frozenset[int], flags: list[str]) -> str:
    """Step 7: the HTML and markdown a client would render, as plain text; ``needs``: what the triage saw."""
    before = value
    if _HTML_AT in needs:
        if "<!--" in value:
            value = _HTML_COMMENT.sub("", value)
        value = _substituted(_HTML_WITH_CONTENT_RE, _spaced, value)
        value = _TAG.sub(_tag, value)
    if _LINK_AT in needs:
        # The redaction marker is ours, and stays one: "[REDACTED](x)" is not a link.
        value = value.replace(f"{REDACTED}(", f"{REDACTED} (").replace("![", "[")
        value = _MARKDOWN_LINK.sub(r"\1", value)
        # What the pattern could not read (a link split oddly, nested deeper) still opens no link.
        value = value.replace("](", "] (")
    if _CODE_AT in needs:
        if "```" in value or "~~~" in value:
            value = _FENCE.sub("", value)
        value = _BACKTICKS.sub("'", value)
    if _HEADING_AT in needs:
        value = _HEADING.sub("", value)
    if "<" in value:
        # Last, since a link's text meets what follows it ("[<](x)b"): no "<" that would open a tag is left.
        value = _OPENS_A_TAG.sub(_OPEN_ANGLE, value)
    if value != before:
        flags.append(MARKUP)
    return value


# --- One pass that says which steps a text needs ------------------------------------------------------------------

# What step 3 must undo in an ASCII text (controls, the log's escapes, character references), and what
# ``str.isprintable`` takes for printable in others: variation selectors (U+FE00-FE0F, U+E0100-E01EF) and blank
# letters, as UTF-8 bytes.
_NORMALISING_HINT = (
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\\x[0-9a-f]{2}|&(?:#[0-9]|#[xX][0-9a-fA-F]|[A-Za-z][A-Za-z0-9]{1,31};)"
    r"|\xef\xb8[\x80-\x8f]|\xf3\xa0[\x84-\x87][\x80-\xbf]|"
    + "|".join(re.escape(char.encode().decode("latin-1")) for char in sorted(_BLANK_LETTERS))
)
_TRIAGE_PATTERNS: tuple[bytes, ...] = tuple(
    pattern if isinstance(pattern, bytes) else pattern.encode("latin-1")
    for pattern in (
        CREDENTIAL_CANDIDATES,
        _MORE_CREDENTIALS,
        _TOKEN_CANDIDATE,
        f"{_FRAME_LINES}|{_SOURCE_PATH}",
        r"<[A-Za-z/!?]",
        r"\]\(",
        r"`|(?m:^[ \t]*~~~)",
        r"(?m:^[ \t]{0,3}#{1,6}(?:[ \t]|$))",
        _NORMALISING_HINT,
        _MIXED_SCRIPTS,
    )
)
(
    _CREDENTIALS_AT,
    _MORE_CREDENTIALS_AT,
    _TOKENS_AT,
    _FRAMES_AT,
    _HTML_AT,
    _LINK_AT,
    _CODE_AT,
    _HEADING_AT,
    _NORMALISING_AT,
    _MIXED_SCRIPTS_AT,
) = range(len(_TRIAGE_PATTERNS))


def _triage_set() -> re2.Set:
    """Each pattern finds at least what the Python pass it stands for would change, so that a pass it does not
    find can be skipped."""
    triage = re2.Set.SearchSet(_options())
    for pattern in _TRIAGE_PATTERNS:
        triage.Add(pattern)
    triage.Compile()
    return triage


_TRIAGE = _triage_set()


def _triage(data: bytes) -> frozenset[int]:
    return frozenset(_TRIAGE.Match(data) or ())


# --- Step 1: the SDK's wrapper -------------------------------------------------------------------------------------

# The TypeScript SDK's McpError writes a message as "MCP error <code>: <message>"; a server that passes one on wraps
# it again.
_SDK_WRAPPER = re.compile(r"MCP error -?[0-9]{1,6}: ")


# --- Step 8: one line, bounded ------------------------------------------------------------------------------------

# Separators a removal can leave at either end of the quote (dashes only when a space stands beside them: "-1" is a
# number).
_EDGE_JUNK = " :;,|\u2022\u00b7-\u2013\u2014"
_DANGLING = re.compile(
    r"^(?:[\s:;,|\u2022\u00b7]|[-\u2013\u2014]+(?=\s))+|(?:[\s:;,|\u2022\u00b7]|(?<=\s)[-\u2013\u2014]+)+$"
)


def _cut(value: str, max_chars: int) -> str:
    """``value`` in at most ``max_chars`` characters with ``…`` at the end: cut at a word where one is in the last
    half, never inside ``[REDACTED]``."""
    budget = max_chars - len(ELLIPSIS)
    if budget <= 0:
        return ELLIPSIS[:max_chars]
    cut = value[:budget]
    opening = cut.rfind("[")
    if opening != -1 and value.startswith(REDACTED, opening) and opening + len(REDACTED) > budget:
        cut = cut[:opening]
    space = cut.rfind(" ")
    if space >= budget // 2:
        cut = cut[:space]
    return cut.rstrip(_EDGE_JUNK) + ELLIPSIS


# --- The screen ---------------------------------------------------------------------------------------------------


def screen_detail(text: str, *, known: Sequence[str] = (), max_chars: int = DEFAULT_MAX_CHARS) -> ScreenedDetail:
    """An upstream's failure text as a model may read it: a one-line quote of at most ``max_chars`` characters, or
    nothing, withheld, when the text speaks to the model. ``known``: the secrets the gateway sent the upstream
    (header and environment values), redacted wherever they appear. The steps, and what each keeps, are the
    module's docstring's."""
    if not isinstance(text, str) or not text:
        return _NOTHING
    flags: list[str] = []
    value = text[:READ_CHARS]
    was_cut = value.endswith(ELLIPSIS)
    if was_cut:
        value = value[: -len(ELLIPSIS)]
    if "MCP error " in value:
        value = _SDK_WRAPPER.sub("", value)
    secrets = [secret for secret in known if isinstance(secret, str) and len(secret) >= 4]

    def secrets_redacted(value: str) -> str:
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
                if CREDENTIALS not in flags:
                    flags.append(CREDENTIALS)
        return value

    # Steps 2 and 3.
    value = secrets_redacted(value)
    data = credential_candidate_bytes(value)
    needs = _triage(data)
    smuggled = ""
    if _NORMALISING_AT in needs or not value.isascii():
        normalised, smuggled = _normalised(value, flags, hinted=_NORMALISING_AT in needs)
        if normalised != value:
            value = secrets_redacted(normalised)
            data = credential_candidate_bytes(value)
            needs = _triage(data)

    # Step 4.
    reasons = _instruction_reasons(data, mixed_scripts=_MIXED_SCRIPTS_AT in needs)
    if smuggled:
        spelled = credential_candidate_bytes(smuggled)
        reasons += _instruction_reasons(spelled, mixed_scripts=_MIXED_SCRIPTS_AT in _triage(spelled))
    if reasons:
        return ScreenedDetail("", INSTRUCTIONS, (INSTRUCTIONS, *dict.fromkeys(reasons), *flags))

    # Steps 5 to 7.
    judged = value
    value = credentials_redacted(value, candidates=_CREDENTIALS_AT in needs)
    if _MORE_CREDENTIALS_AT in needs:
        value = _substituted(_MORE_CREDENTIALS_RE, _more_credential, value)
    if value != judged and CREDENTIALS not in flags:
        flags.append(CREDENTIALS)
    if _TOKENS_AT in needs:
        tokens_redacted = _substituted(_TOKEN_RE, _token, value)
        if tokens_redacted != value:
            flags.append(RANDOM_TOKENS)
            value = tokens_redacted
    if _FRAMES_AT in needs:
        value = _frames_removed(value, flags)
    if value != judged:
        # A redaction or a removal can make markup of what was none ("[REDACTED](x)", "<" meeting a letter): each
        # markup step runs where its mark is in the changed text.
        marks = ((_HTML_AT, "<"), (_LINK_AT, "]("), (_CODE_AT, "`"), (_CODE_AT, "~~~"), (_HEADING_AT, "#"))
        needs = needs | {at for at, mark in marks if mark in value}
    value = _markup_neutralised(value, needs, flags)

    # Step 8.
    if value != judged and (TRACEBACK in flags or SOURCE_PATHS in flags or MARKUP in flags):
        # A removal can join what was apart ("ig<!-- -->nore"): the text is judged again as it now reads.
        quoted = credential_candidate_bytes(value)
        mixed_scripts = not value.isascii() and _MIXED_SCRIPTS_AT in _triage(quoted)
        reasons = _instruction_reasons(quoted, mixed_scripts=mixed_scripts)
        if reasons:
            return ScreenedDetail("", INSTRUCTIONS, (INSTRUCTIONS, *reasons, *flags))
    # Whitespace runs are made single in as much of the text as the quote can show, or in all of it when that
    # much shrinks to within the bound.
    whole = value
    head = whole[: 2 * max(max_chars, 0) + 64]
    value = " ".join(head.split())
    if len(head) < len(whole) and len(value) <= max_chars:
        value = " ".join(whole.split())
    value = value.replace('"', "'")
    if value[:1] in _EDGE_JUNK or value[-1:] in _EDGE_JUNK:
        value = _DANGLING.sub("", value)
    if len(value) > max_chars or (was_cut and value and len(value) + len(ELLIPSIS) > max_chars):
        value = _cut(value, max_chars)
        flags.append(CUT)
    elif was_cut and value:
        value = value.rstrip(_EDGE_JUNK) + ELLIPSIS
        flags.append(CUT)
    return ScreenedDetail(value, "", tuple(flags))
