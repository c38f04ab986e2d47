"""`tagengine openwebui install` (decision OW-5, `install_function`): the sheet Function
(openwebui/tagengine_sheet.py, an Open WebUI Action) put into an Open WebUI server through its API, as an admin
pasting it would: created, or updated when its id is there already; its valves set to reach tagengine; turned on,
and global so that every model's replies (the campaigns' models among them) show its buttons.

Open WebUI 0.12.4's API (routers/functions.py), each call with `Authorization: Bearer TOKEN` (an admin's API key or
session token): `GET /api/v1/functions/id/{id}` (the Function, or a 401 saying "We could not find
what you're looking for" when there is none), `POST
/api/v1/functions/create` and `POST /api/v1/functions/id/{id}/update` (`{id, name, content, meta: {description}}`),
`POST .../valves/update` (the valves), `POST .../toggle` and `.../toggle/global` (each flips its flag, so each is
called only when the flag is off). The standard library's HTTP client: nothing else is needed, and a failure is
returned as data naming the call and Open WebUI's own message.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..records import frozen
from ..resources import resource_dir

FUNCTION_ID = "tagengine_sheet"  # Open WebUI's id of the Function: letters, digits and underscores
FUNCTION_NAME = "tagengine sheet"
DESCRIPTION = "The game of a tagengine chat under a reply, and a check rolled from it"
MAX_ANSWER = 4 * 1024 * 1024  # bytes of one Open WebUI answer read at most
# how Open WebUI 0.12.4 says a Function id is not there (a 401 with ERROR_MESSAGES.NOT_FOUND), not a bad token
NOT_THERE = "could not find what you're looking for"


def function_file() -> Path:
    """The Function's source: openwebui/ of a checkout, tagengine/openwebui/ of a wheel."""
    return resource_dir("openwebui") / "tagengine_sheet.py"


@frozen
class InstallStopped:
    """Why the install stopped: the call that failed and what Open WebUI said (errors as data)."""

    step: str
    message: str


@frozen
class Installed:
    created: bool  # False: an earlier copy was updated


def install_function(base: str, token: str, valves: dict[str, Any],
                     timeout: float = 30.0) -> Installed | InstallStopped:
    """The Function put into the Open WebUI at `base` (its address, e.g. http://127.0.0.1:8080) with `valves`."""
    api = base.rstrip("/") + "/api/v1/functions"
    here = f"{api}/id/{quote(FUNCTION_ID)}"
    form = {"id": FUNCTION_ID, "name": FUNCTION_NAME, "content": function_file().read_text(encoding="utf-8"),
            "meta": {"description": DESCRIPTION}}
    status, was = call("GET", here, token, None, timeout)
    created = not (status == 200 and isinstance(was, dict) and was.get("id") == FUNCTION_ID)
    if created and not (status in (401, 404) and NOT_THERE in message_of(was)):
        return InstallStopped("read the Function", refused_words(status, was))
    steps = [("create the Function", "POST", f"{api}/create", form)] if created else \
        [("update the Function", "POST", f"{here}/update", form)]
    steps.append(("set its valves", "POST", f"{here}/valves/update", valves))
    for step, method, url, payload in steps:
        status, got = call(method, url, token, payload, timeout)
        if status != 200:
            return InstallStopped(step, refused_words(status, got))
    status, now = call("GET", here, token, None, timeout)
    if status != 200 or not isinstance(now, dict):
        return InstallStopped("read the Function back", refused_words(status, now))
    for flag, path in (("is_active", "toggle"), ("is_global", "toggle/global")):
        if not now.get(flag):
            status, got = call("POST", f"{here}/{path}", token, None, timeout)
            if status != 200:
                return InstallStopped(f"turn on {flag}", refused_words(status, got))
    return Installed(created)


class _Unfollowed(urllib.request.HTTPRedirectHandler):
    """No redirect followed: urllib would send it on with every header, the admin's token too, to any host."""

    def redirect_request(self, *args: Any) -> None:
        return None  # the 3xx comes back as an HTTPError, said in `call`


_OPENER = urllib.request.build_opener(_Unfollowed)


def call(method: str, url: str, token: str, payload: Any, timeout: float) -> tuple[int, Any]:
    """Open WebUI's status and JSON answer; 0 and the reason when it cannot be reached or answers with a redirect
    (not followed: the token goes to the address given and nowhere else)."""
    data = None if payload is None else json.dumps(payload).encode("utf-8")
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with _OPENER.open(request, timeout=timeout) as got:  # an address the operator gave
            return got.status, json_or_text(got.read(MAX_ANSWER + 1))
    except urllib.error.HTTPError as e:
        if 300 <= e.code < 400:
            return 0, (f"{url} answered with a redirect to {str(e.headers.get('Location'))[:300]}, not followed (the "
                       "token goes only to --url): give Open WebUI's own address")
        return e.code, json_or_text(e.read(MAX_ANSWER + 1))
    except (OSError, ValueError) as e:
        return 0, f"Open WebUI cannot be reached at {url}: {e}"


def json_or_text(raw: bytes) -> Any:
    if len(raw) > MAX_ANSWER:
        return f"an answer over {MAX_ANSWER} bytes"
    try:
        return json.loads(raw)
    except ValueError:
        return raw[:200].decode("utf-8", "replace")


def message_of(doc: Any) -> str:
    """Open WebUI's error message (`detail`), or the answer as text."""
    if isinstance(doc, dict):
        detail = doc.get("detail")
        return detail if isinstance(detail, str) else json.dumps(detail)[:300]
    return str(doc)[:300]


def refused_words(status: int, doc: Any) -> str:
    if status == 0:
        return str(doc)
    hint = " (the token must be an admin's: Settings > Account > API keys, or the session token)" \
        if status in (401, 403) else ""
    return f"Open WebUI answered {status}: {message_of(doc)}{hint}"
