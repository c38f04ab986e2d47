"""An HTML form's body, as the pages post it: url-encoded, or multipart (a file chosen), read with the standard
library (`email` for multipart: no python-multipart dependency, UI-7). The caller bounds the body's size."""

from __future__ import annotations

import email.parser
import email.policy
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

from ..limits import MAX_FORM_FIELDS


@dataclass(frozen=True)
class Part:
    """One part of a form: its field name, its bytes as posted, and the file's name for a file."""

    name: str
    data: bytes
    filename: str | None = None


def form_parts(content_type: str, body: bytes) -> list[Part]:
    """Every part of a form post, in order; none for a body that cannot be read as a form (parts nested
    thousands deep make the email parser recurse once per level)."""
    if content_type.startswith("multipart/form-data"):
        try:
            msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"Content-Type: " + content_type.encode("latin-1", "replace") + b"\r\n\r\n" + body)
        except RecursionError:
            return []
        out = []
        for part in msg.iter_parts() if msg.is_multipart() else ():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            if isinstance(name, str) and isinstance(payload, bytes):
                out.append(Part(name, payload, part.get_filename()))
        return out
    try:
        pairs = parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
    except ValueError:  # more fields than MAX_FORM_FIELDS
        return []
    return [Part(k, v.encode("utf-8", "surrogatepass")) for k, v in pairs]


@dataclass(frozen=True)
class FormPost:
    """A form's text fields in order (each as UTF-8 text, what is not UTF-8 replaced) and its files by name."""

    fields: list[tuple[str, str]] = field(default_factory=list)
    files: dict[str, Part] = field(default_factory=dict)

    def get(self, name: str, default: str = "") -> str:
        """The last value of a field (a checkbox's hidden `false` comes before its `true`)."""
        found = [v for k, v in self.fields if k == name]
        return found[-1] if found else default


def read_form(content_type: str, body: bytes) -> FormPost:
    post = FormPost()
    for p in form_parts(content_type, body):
        if p.filename is not None:
            post.files[p.name] = p
        else:
            post.fields.append((p.name, p.data.decode("utf-8", "replace")))
    return post
