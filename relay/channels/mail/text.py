"""The text an agent should see: the new part of a reply, as plain text.

Contacts answer from Gmail, Outlook, Apple Mail and phones, each quoting the
history its own way and adding signatures. The quoted part must go: the agent
has seen it already, and an opt-out word in *our* quoted message ("reply STOP
to opt out") must never opt the contact out. mail-parser-reply (a maintained
port of GitHub's email_reply_parser, with many languages) finds the quote
headers; a few lines here add what it leaves: the RFC 3676 signature
separator and "Sent from my phone" trailers.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

#: Languages whose quote headers ("On ... wrote:", "Am ... schrieb", "Le ... a écrit") are known.
LANGUAGES = ("en", "de", "fr", "es", "it", "nl", "sv", "da", "pl", "cs")

_SIGNATURE = re.compile(r"^--\s*$")
_MOBILE = re.compile(
    r"^(sent from my \w+|sent from (outlook|mail|yahoo mail) for \w+|get outlook for \w+|"
    r"von meinem \w+ gesendet|envoyé de mon \w+|enviado desde mi \w+|inviato da \w+)",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"^\s*>")


def new_part(body: str) -> str:
    """The reply without quoted history, signature or mobile trailer.

    Lines quoted with ``>`` are dropped wherever they stand (also between the
    answers of an inline reply). If stripping leaves nothing, the unquoted
    lines of the whole body are kept, so a reply is never reduced to nothing.
    """
    text = body.replace("\r\n", "\n").replace("\r", "\n")
    kept = _cut_signature(_unquoted(_latest_reply(text))).strip()
    return kept or _cut_signature(_unquoted(text)).strip()


def _unquoted(text: str) -> str:
    """Without ``>`` lines: what is quoted was written before, whoever wrote it."""
    return "\n".join(line for line in text.split("\n") if not _QUOTED.match(line))


def _latest_reply(text: str) -> str:
    from mailparser_reply import EmailReplyParser

    try:
        reply = EmailReplyParser(languages=list(LANGUAGES)).parse_reply(text)
    except Exception:  # a library bug on odd input must not lose the message
        return text
    return text if reply is None else reply


def _cut_signature(text: str) -> str:
    """Drop everything from a ``-- `` line or a "Sent from my iPhone" line on."""
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if _SIGNATURE.match(line) or _MOBILE.match(line.strip()):
            return "\n".join(lines[:index])
    return text


_BLOCKS = frozenset(
    {"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol", "hr"}
)
_SKIP = frozenset({"script", "style", "head", "title"})


class _TextExtractor(HTMLParser):
    """HTML to text: block tags break lines, ``<blockquote>`` content is ``>``-quoted
    (so Gmail's and Outlook's quoted history is stripped like in plain text)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = [""]
        self.depth = 0
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skipping += 1
        elif tag == "blockquote":
            self._break()
            self.depth += 1
        elif tag in _BLOCKS:
            self._break()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCKS:
            self._break()

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif tag == "blockquote":
            self._break()
            self.depth = max(0, self.depth - 1)
        elif tag in _BLOCKS:
            self._break()

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        text = re.sub(r"\s+", " ", data)
        if not self.lines[-1]:
            text = text.lstrip()
            if text and self.depth:
                text = "> " * self.depth + text
        self.lines[-1] += text

    def _break(self) -> None:
        self.lines[-1] = self.lines[-1].rstrip()
        if self.lines[-1] or (len(self.lines) > 1 and self.lines[-2]):
            self.lines.append("")


def html_to_text(html: str) -> str:
    """Readable text from an HTML-only email, with quoted blocks marked by ``>``."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    return re.sub(r"\n{3,}", "\n\n", "\n".join(parser.lines)).strip()
