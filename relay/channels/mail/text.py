"""The text an agent should see: the new part of a reply, as plain text.

Contacts answer from Gmail, Outlook, Apple Mail, Thunderbird and phones, in
their own language, each quoting the history its own way and adding
signatures. The quoted part must go: the agent has seen it already, and an
opt-out word in *our* quoted message ("reply STOP to opt out") must never opt
the contact out. The rules, measured on the reply fixtures of talon,
email_reply_parser and its ports (``bench/accuracy_text.py``):

* ``>`` lines are history wherever they stand; the attribution line that
  introduces them ("On ... wrote:", "Op ... schreef", "W dniu ... napisał",
  "Den ... skrev", "---- X wrote ----", up to five lines long) goes with them;
  unquoted lines between quotes are the contact's inline answers and stay;
* an attribution line not followed by ``>`` lines, an "Original Message"
  separator or a header block (``From:``/``*From:*``/``De :``/``Von:``/``Od:``/
  ``发件人:`` with ``Sent:``/``Date:``/``To:``/``Subject:`` in the same
  languages) starts history that runs to the end;
* the ``-- `` separator, mobile trailers ("Sent from my iPhone", "Von meinem
  iPhone gesendet", ...), a closing ("Best regards,", "Mvh", "Pozdrawiam")
  followed only by a short signature block, and mailing-list footers end the
  new text of their part.

Never drop new text: a marker with nothing new before it is not trusted, and
if stripping would leave nothing, the unquoted lines are kept.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

#: Languages whose attribution lines, header blocks and trailers are known.
LANGUAGES = (
    "en", "de", "fr", "es", "pt", "it", "nl", "sv", "da", "no", "fi", "pl", "cs", "hu",
    "ru", "uk", "vi", "tr", "zh", "ja",
)  # fmt: skip

#: A quote marker, unless the line is a banner with arrows both ways (">>> link <<<").
_QUOTED = re.compile(r"^\s*>(?!.*<<<\s*$)")
_SIGNATURE = re.compile(r"^\s*--\s*$|^\s*__\s*$")
#: Words that end an attribution line, in the languages above.
_WROTE = (
    r"wrote|writes|schrieb|schreef|geschreven|a\s+[ée]crit|[ée]crit|escribi[óo]|escreveu|"
    r"ha\s+scritto|scrisse|skrev|kirjoitti|napisa[łl](?:a|\(a\))?|napsal(?:a)?|"
    r"написал(?:а|\(а\))?|написав(?:ла)?|пишет|пише|đã\s+viết|írta|yazdı|寫道|写道|"  # noqa: RUF001
    r"に書きました"
)
_ATTRIBUTION = re.compile(rf"(?:^|[\s>\"')])(?:{_WROTE})(?:\s*:?|\s.{{0,100}}:)\s*$", re.IGNORECASE)
_ON_SENT = re.compile(r"^on\b.{5,200}\bsent\s*:\s*$", re.IGNORECASE)
#: "2014-10-17 11:28 GMT+03:00 Name <a@b>:" (old Gmail, Japanese clients): a date, then an address.
_DATE_ADDRESS = re.compile(
    r"^(?:\d{1,4}[-/.年]\s?\d{1,2}[-/.月]\s?\d{1,4}).{0,120}<?[\w.+-]+@[\w.-]+>?\s*:?\s*$"
    r"|^(?=.*\d).{0,200}<[\w.+-]+@[\w.-]+>\s*:\s*$"
)
#: "bla bla--- On Wed, Apr 4, 2012 at 3:59 PM, me@x.com wrote:" sharing a line with the reply.
_INLINE_ON = re.compile(r"\s*-*\s*\bOn\s.{5,150}\bwrote:\s*$")

_FROM_KEYS = (
    "from|de|von|van|da|od|fra|från|от|від|发件人|寄件者|差出人|từ|lähettäjä|feladó|kimden"
)
_OTHER_KEYS = (
    r"sent|date|to|subject|cc|envoyé(?:\s+le)?|à|a|objet|sujet|copie\s+à|message\s+du|enviado|"
    r"para|asunto|assunto|fecha|data|inviato|oggetto|gesendet|an|betreff|datum|verzonden|"
    r"aan|onderwerp|skickat|till|ämne|sendt|til|emne|wysłano|do|temat|отправлено|кому|тема|"
    r"дата|надіслано|发送时间|收件人|主题|日期|送信日時|宛先|件名|ngày|gửi|tới|chủ\s+đề|"
    r"lähetetty|vastaanottaja|aihe|elküldve|címzett|tárgy|gönderildi|konu|kime"
)
_HEADER = re.compile(
    rf"^\s*\*?\s*(?P<key>{_FROM_KEYS}|{_OTHER_KEYS})\s*\*?\s*[:\uff1a]", re.IGNORECASE
)
_ORIGINAL = re.compile(
    r"^\s*[-_=*\s]*(?:original\s+message|ursprüngliche\s+nachricht|message\s+d'origine|"
    r"mensaje\s+original|mensagem\s+original|messaggio\s+originale|oorspronkelijk\s+bericht|"
    r"ursprungligt\s+meddelande|oprindelig\s+meddelelse|opprinnelig\s+melding|"
    r"oprindelig\s+besked|original\s+besked|originalmeddelande|originalnachricht|"
    r"wiadomość\s+oryginalna|исходное\s+сообщение|původní\s+zpráva|alkuperäinen\s+viesti|"
    r"eredeti\s+üzenet|orijinal\s+ileti|reply\s+message|原始邮件|原始郵件)[-_=*\s]*$",
    re.IGNORECASE,
)
_FORWARDED = re.compile(
    r"^\s*[-_=\s]*(?:forwarded\s+message|begin\s+forwarded\s+message|weitergeleitete\s+nachricht|"
    r"message\s+transféré|mensaje\s+reenviado|mensagem\s+encaminhada|messaggio\s+inoltrato|"
    r"doorgestuurd\s+bericht|vidarebefordrat\s+meddelande|videresendt\s+meddelelse)\b",
    re.IGNORECASE,
)
#: Phone and mail-app trailers: "Sent from my iPhone", "Von meinem iPhone gesendet", ...
_MOBILE = re.compile(
    r"^(?:sent\s+(?:from|with|via|using)\s+(?:my\s+|a\s+|an\s+)?[\w\s.'&-]{2,40}"
    r"(?:\s*\(?<?https?://\S+\)?>?)?|get\s+outlook\s+for\s+\S+.*|"
    r"von\s+meinem\s+[\w\s.-]{2,40}\s+gesendet|gesendet\s+von\s+(?:meinem\s+)?[\w\s.-]{2,40}|"
    r"envoyé\s+(?:de|depuis|à\s+partir\s+de)\s+(?:mon\s+)?[\w\s.-]{2,40}|"
    r"enviado\s+(?:desde|de|do|a\s+partir\s+do|a\s+partir\s+de)\s+(?:mi\s+|meu\s+|o\s+meu\s+)?[\w\s.-]{2,40}|"
    r"inviato\s+da\s+(?:il\s+mio\s+)?[\w\s.-]{2,40}|"
    r"(?:verzonden|verstuurd)\s+(?:vanaf|met|van)\s+(?:mijn\s+)?[\w\s.-]{2,40}|"
    r"skickat\s+från\s+(?:min\s+)?[\w\s.-]{2,40}|sendt\s+fra\s+(?:min\s+)?[\w\s.-]{2,40}|"
    r"wysłane\s+z\s+(?:mojego\s+)?[\w\s.-]{2,40}|отправлено\s+(?:с|из)\s+[\w\s.-]{2,40}|"  # noqa: RUF001
    r"gửi\s+từ\s+[\w\s.-]{2,40}|lähetetty\s+[\w\s.-]{2,40}|"
    r"odesláno\s+z\s+[\w\s.-]{2,40})\s*[.!]?\s*(?:<https?://\S+>|\(?https?://\S+\)?)?$",
    re.IGNORECASE,
)
#: Closings that start a signature block when only a short block follows them.
_CLOSING = re.compile(
    r"^(?:(?:best|kind|warm|warmest|many|with)\s+(?:regards|wishes|thanks)|regards|best|cheers|"
    r"sincerely|yours(?:\s+(?:truly|sincerely))?|thanks\s*(?:&|and)\s*regards|"
    r"thank\s+you|thanks|thx|br|"
    r"mit\s+freundlichen\s+grüßen|mit\s+freundlichen\s+grüssen|freundliche\s+grüße|"
    r"viele\s+grüße|liebe\s+grüße|beste\s+grüße|grüße|gruß|lg|mfg|vg|"
    r"cordialement|bien\s+(?:à\s+vous|cordialement)|salutations|bonne\s+journée|amitiés|"
    r"saludos(?:\s+cordiales)?|un\s+saludo|atentamente|cordialmente|abrazos|"
    r"atenciosamente|abraços|abs|att|"
    r"cordiali\s+saluti|distinti\s+saluti|saluti|un\s+saluto|"
    r"met\s+vriendelijke\s+groet(?:en)?|vriendelijke\s+groet(?:en)?|groeten|groetjes|mvg|"
    r"med\s+vänliga?\s+hälsning(?:ar)?|vänliga\s+hälsningar|hälsningar|mvh|"
    r"med\s+venlig\s+hilsen|venlig\s+hilsen|hilsen|vennlig\s+hilsen|kh|"
    r"pozdrawiam|z\s+poważaniem|z\s+powazaniem|pozdrowienia|"
    r"с\s+уважением|всего\s+доброго|с\s+наилучшими\s+пожеланиями|"  # noqa: RUF001
    r"trân\s+trọng|thân\s+ái|s\s+pozdravem|ystävällisin\s+terveisin|terveisin|"
    r"üdvözlettel|saygılarımla)\b"  # noqa: RUF001
    # then a name after a comma or a dash, or a few closing words: not a sentence
    # ("Thanks, Ana" and "Thanks again!" close; "Thank you for your reply." is text)
    r"(?:\s*[,\-\u2013\u2014]\s*\S.{0,40}|\s+(?:again|so\s+much|very\s+much|in\s+advance|"
    r"a\s+lot|all|everyone|&\s*regards|and\s+regards)\b|\s+(?:aus|from|de|da|van|från)\s+\S.{0,30})?"
    r"[\s,.!]*$",
    re.IGNORECASE,
)
#: Mailing-list and notification footers.
_FOOTER = re.compile(
    r"mailing\s+list|listinfo|mailman|to\s+unsubscribe|you\s+received\s+this\s+message\s+because|"
    r"you\s+are\s+receiving\s+this\s+because|reply\s+to\s+this\s+email\s+directly",
    re.IGNORECASE,
)
_RULE = re.compile(r"^\s*(?:[-_=*\u2014\u2013]\s*){2,}$")


def new_part(body: str) -> str:
    """The reply without quoted history, signature, trailer or footer.

    Unquoted lines between ``>`` quotes (an inline reply's answers) are kept.
    If stripping leaves nothing, the unquoted lines of the whole body are kept,
    so a reply is never reduced to nothing.
    """
    lines = body.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    kept = _tidy(_strip(lines))
    return kept or _tidy([line for line in lines if not _QUOTED.match(line)])


def _strip(lines: list[str]) -> list[str]:
    out: list[str] = []
    index = 0
    segment: list[str] = []  # the current run of the contact's own lines

    def close() -> None:
        out.extend(_cut_signature(segment))
        segment.clear()

    while index < len(lines):
        if _QUOTED.match(lines[index]):
            index = _skip_quote(lines, index)
            close()
            continue
        lines, head = _split_shared_line(lines, index)
        if head is not None:
            segment.append(head)
        span = _attribution(lines, index)
        after = _next_nonblank(lines, index + span) if span else None
        if after is not None and _QUOTED.match(lines[after]):
            close()
            index = after
            continue
        if span or _history_starts(lines, index):
            if _has_text(out) or _has_text(segment):
                break
            # nothing new above it (a forward, a bare header): not trusted, kept
            span = span or _header_span(lines, index)
            segment.extend(lines[index : index + span])
            index += span
            continue
        segment.append(lines[index])
        index += 1
    close()
    return out


def _split_shared_line(lines: list[str], index: int) -> tuple[list[str], str | None]:
    """"bla bla--- On ... wrote:": the reply and the attribution share a line;
    the lines with the attribution on a line of its own, and the reply's part."""
    line = lines[index]
    inline = _INLINE_ON.search(line)
    if inline and line[: inline.start()].strip(" -") and re.search(r"\d", inline.group()):
        return [*lines[:index], inline.group().strip(" -"), *lines[index + 1 :]], line[
            : inline.start()
        ]
    return lines, None


def _skip_quote(lines: list[str], index: int) -> int:
    """The index after a ``>`` block; an unquoted line squeezed between two quoted
    ones is a wrapped quoted line (a broken link), not an answer."""
    while index < len(lines) and (
        _QUOTED.match(lines[index]) or _wrapped_quote_line(lines, index)
    ):
        index += 1
    return index


def _wrapped_quote_line(lines: list[str], index: int) -> bool:
    return bool(
        lines[index].strip()
        and 0 < index < len(lines) - 1
        and _QUOTED.match(lines[index + 1])
        and _QUOTED.match(lines[index - 1])
        and not re.search(r"[.!?:]\s*$", lines[index - 1])
    )


def _attribution(lines: list[str], index: int) -> int:
    """How many lines (1 to 5) an attribution line starting here spans; 0 for none.

    One that also matches from a later line after a blank line or a finished
    sentence starts there ("Text paragraph 2" above "Le 2021-04-09 23:25, X a
    écrit :" is the contact's, and so is "... let you know then." above "Op 16
    aug. 2014 05:13 schreef ...")."""
    span = _attribution_at(lines, index)
    for later in range(index + 1, index + span):
        before = lines[later - 1].rstrip()
        if (not before or before.endswith((".", "!", "?"))) and _attribution_at(lines, later):
            return 0
    return span


def _attribution_at(lines: list[str], index: int) -> int:
    """The span of an attribution read from this line on (see :func:`_attribution`).

    Its first line must hold a digit or an address: "Something wrote:" in a
    sentence is text."""
    first = lines[index].strip()
    if not first or (not re.search(r"\d|@", first) and not first.startswith("--")):
        return 0  # a multi-line attribution opens with its date
    joined = ""
    for span in range(1, 6):
        if index + span > len(lines):
            break
        joined = (joined + " " + lines[index + span - 1].strip().lstrip(">").strip()).strip()
        if len(joined) > 400:
            break
        dashed = joined.startswith("--") or joined.endswith("--")
        if not dashed and not joined.endswith((":", ">")):
            continue  # an attribution ends with a colon, an address or dashes
        core = joined.strip("-\u2013 ")
        if not dashed and not re.search(r"\d|@", core):
            continue
        if (
            (_ATTRIBUTION.search(core) and (core.endswith(":") or dashed))
            or _ON_SENT.match(core)
            or (span <= 2 and _DATE_ADDRESS.match(core))
        ):
            return span
    return 0


def _history_starts(lines: list[str], index: int) -> bool:
    """An "Original Message" separator, or a header block of two header lines or more."""
    line = lines[index]
    if _ORIGINAL.match(line) or _FORWARDED.match(line):
        return True
    if _RULE.match(line) and line.strip().startswith("_"):
        after = _next_nonblank(lines, index + 1)
        return after is not None and _header_block(lines, after)
    return _header_block(lines, index)


def _header_block(lines: list[str], index: int) -> bool:
    if not _HEADER.match(lines[index]):
        return False
    keys = set()
    for line in lines[index : index + 8]:
        match = _HEADER.match(line)
        if match:
            keys.add(match.group("key").lower())
    return len(keys) >= 2


def _header_span(lines: list[str], index: int) -> int:
    """The lines of a header block (or separator) starting here, continuations included."""
    end = index + 1
    while end < len(lines) and lines[end].strip() and end - index < 10:
        end += 1
    return end - index


def _cut_signature(segment: list[str]) -> list[str]:
    """The segment up to its signature: ``-- ``, a mobile trailer, a list footer,
    or a closing followed only by a short signature block."""
    for index, line in enumerate(segment):
        text = line.strip()
        if _SIGNATURE.match(line) or _MOBILE.match(text):
            return segment[:index]
        if _RULE.match(line) and any(_FOOTER.search(x) for x in segment[index + 1 : index + 5]):
            return segment[:index]
        if _FOOTER.match(text):
            return segment[:index]
        closing = _CLOSING.match(text) and _has_text(segment[:index])
        if closing and _short_block(segment[index + 1 :]):
            return segment[:index]
    return segment


def _short_block(rest: list[str]) -> bool:
    """Lines that read as a signature: at most six, each short, no question."""
    filled = [line.strip() for line in rest if line.strip()]
    return len(filled) <= 6 and all(len(x) <= 60 and not x.endswith("?") for x in filled)


def _next_nonblank(lines: list[str], index: int) -> int | None:
    while index < len(lines):
        if lines[index].strip():
            return index
        index += 1
    return None


def _has_text(lines: list[str]) -> bool:
    return any(line.strip() and not _RULE.match(line) for line in lines)


def _tidy(lines: list[str]) -> str:
    """Joined, without trailing separator rules or blank runs at either end."""
    while lines and (not lines[-1].strip() or _RULE.match(lines[-1])):
        lines = lines[:-1]
    return re.sub(r"\n\s*\n(?:\s*\n)+", "\n\n", "\n".join(lines)).strip()


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
