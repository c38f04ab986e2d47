"""The real Open WebUI for end-to-end tests: the `open-webui` package from PyPI, installed once by `./dev test` into
a venv of its own in the cache folder (as SillyTavern is, tests/st_kit.py), started on a free loopback port with
its data, its static files and its secret in a temporary folder, offline, and stopped (its whole process group)
whatever happens.

`open_webui(tmp, upstream)` is the context manager; without an install it skips the test and says why. `Admin`
is its API as the first user (the admin) uses it: the users, the OpenAI connection with its custom headers, the
models, the Functions, the stored chats.

What the kit learned from Open WebUI 0.12.4's source (open_webui/__init__.py, env.py, config.py,
routers/openai.py, routers/auths.py, utils/headers.py):
- `open-webui serve --host H --port N` is its command. The venv was made under a temporary name and renamed, so its
  scripts' first lines name a folder that is gone: it runs as `<venv>/bin/python -c "from open_webui import app;
  app()" serve ...` (the same Typer app the script calls).
- Its data (`DATA_DIR`: the SQLite database, uploads, caches) and `STATIC_DIR` (it copies its page's static
  files there at every start, into the package folder by default) go under the test's folder; `WEBUI_SECRET_KEY`
  is given, so it writes no `.webui_secret_key` into its working folder.
- Offline: `OFFLINE_MODE=True` (no version check, no model downloads), `HF_HUB_OFFLINE=1`; its default embedding
  model is not in any cache, so it logs an error at start and runs on (nothing here uploads a file); Ollama off.
- The OpenAI connection is `OPENAI_API_BASE_URL` (tagengine's /v1); its custom headers are the connection's
  `headers` in `POST /openai/config/update` (what Admin Settings -> Connections saves), values with templates
  (`{{CHAT_ID}}`, `{{TASK}}`, `{{USER_MESSAGE_PARENT_ID}}`...) filled per request (utils/headers.py).
- With `WEBUI_AUTH=True` (several users) the first user to sign up is the admin; `DEFAULT_USER_ROLE=user` lets the
  admin's added users chat at once. `ENABLE_FORWARD_USER_INFO_HEADERS=True` sends each request's user as
  `X-OpenWebUI-User-Id` (and name, email, role). A connection's models are the admin's alone until the admin
  grants one to users or groups, or makes it Public (Admin Panel -> Models -> Access; `Admin.grant`): its model
  access control (utils/models.py `get_filtered_models`, `check_model_access`) is what keeps each campaign in its
  player's picker, since its one model registry holds every campaign for every user (decision OW-12).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from st_kit import (  # the same process handling as SillyTavern's kit
    cached_install,
    free_port,
    install_error,
    log_tail,
    stop_group,
    until_answers,
)

OWUI_VERSION = "0.12.4"  # the same pin as OWUI_VERSION in ./dev
START_TIMEOUT = 420.0  # seconds: a start imports its whole stack and migrates a new database (about 45-90 s here)
PASSWORD = "Tagengine-test-1"  # every test user's
# the connection's custom headers, as docs/open-webui.md section 3 has the admin set them (OW-7): the request's task
# (empty on a chat's own turn), the chat, and narrations for this connection (OW-4)
CONNECTION_HEADERS = {"X-Tagengine-Type": "{{TASK}}", "X-Tagengine-Chat": "{{CHAT_ID}}",
                      "X-Tagengine-Show": "narration"}


def install_dir() -> Path:
    """The venv `./dev test` installs into (it exports TAGENGINE_OPEN_WEBUI)."""
    return cached_install("TAGENGINE_OPEN_WEBUI", f"open-webui-{OWUI_VERSION}")


def site_packages() -> Path:
    """Where the install's `open_webui` package is: lib/python3.X/site-packages (3.11 or 3.12, whichever made the
    venv); the 3.11 path when nothing is installed, for the skip message."""
    found = sorted(install_dir().glob("lib/python3.*/site-packages"))
    return found[0] if found else install_dir() / "lib" / "python3.11" / "site-packages"


def python() -> Path:
    return install_dir() / "bin" / "python"


def missing() -> str | None:
    """Why Open WebUI cannot run here, or None. `.installed` is written last, once pip has finished."""
    if (install_dir() / ".installed").is_file() and python().exists():
        return None
    why = install_error(install_dir())
    return (f"Open WebUI {OWUI_VERSION} is not installed at {install_dir()} (`./dev test` installs it with pip "
            f"from PyPI, about 7 GB).{why}")


def environment(tmp: Path, upstream: str, auth: bool, extra: Mapping[str, str]) -> dict[str, str]:
    """Open WebUI's settings for a quiet offline test server (see the module's docstring)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "WEBUI_", "OLLAMA_"))}
    env.update({
        "DATA_DIR": str(tmp / "data"), "STATIC_DIR": str(tmp / "static"), "WEBUI_SECRET_KEY": "tagengine-tests",
        "OFFLINE_MODE": "True", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False",
        "DO_NOT_TRACK": "True", "SCARF_NO_ANALYTICS": "True", "ENABLE_OLLAMA_API": "False",
        "OPENAI_API_BASE_URL": upstream, "OPENAI_API_KEY": "none",
        "WEBUI_AUTH": "True" if auth else "False", "DEFAULT_USER_ROLE": "user",
        "ENABLE_FORWARD_USER_INFO_HEADERS": "True",  # model access control on: the admin grants each campaign
        "GLOBAL_LOG_LEVEL": "INFO",
        "HOME": str(tmp / "home"),  # caches it may write (huggingface, tiktoken) stay in the test's folder
    })
    env.update(extra)
    return env


@dataclass
class OpenWebUI:
    url: str
    folder: Path
    log: Path
    started_in: float  # seconds from the command to the first answer of /health, printed by the tests

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=120.0)


def _start(tmp: Path, env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    cmd = [str(python()), "-c", "from open_webui import app; app()", "serve", "--host", "127.0.0.1",
           "--port", str(port)]
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    return proc, f"http://127.0.0.1:{port}"


@contextmanager
def open_webui(tmp: Path, upstream: str, auth: bool = True,
               extra: Mapping[str, str] | None = None) -> Iterator[OpenWebUI]:
    """Open WebUI on a free loopback port, its folders under `tmp`, its OpenAI connection at `upstream` (a /v1 base
    URL); skips without an install. `auth`: user accounts (the first to sign up is the admin)."""
    why = missing()
    if why is not None:
        pytest.skip(why)
    tmp.mkdir(parents=True, exist_ok=True)
    for sub in ("data", "static", "home"):
        (tmp / sub).mkdir(exist_ok=True)
    log = tmp / "open-webui.log"
    env = environment(tmp, upstream, auth, extra or {})
    t0 = time.monotonic()
    deadline = t0 + START_TIMEOUT
    proc, url = _start(tmp, env, log)
    try:
        up = until_answers(proc, f"{url}/health", deadline, timeout=5.0)
        if not up and proc.poll() is not None and b"address already in use" in log.read_bytes():
            stop_group(proc, grace=20.0)  # the free port was taken between our probe and its bind: one more try
            proc, url = _start(tmp, env, log)
            up = until_answers(proc, f"{url}/health", deadline, timeout=5.0)
        if not up:
            raise AssertionError(f"Open WebUI did not start within {START_TIMEOUT:.0f} s (exit code {proc.poll()}); "
                                 f"its log:\n{log_tail(log)}")
        yield OpenWebUI(url, tmp, log, time.monotonic() - t0)
    finally:
        stop_group(proc, grace=20.0)


# -- its API --------------------------------------------------------------------------------------------------------


@dataclass
class User:
    name: str
    email: str
    id: str
    token: str


@dataclass
class Admin:
    """The first user, signed up through the API (what the page's first sign-up does), and what an admin does."""

    owui: OpenWebUI
    user: User = field(init=False)

    def __post_init__(self) -> None:
        self.user = self._signed_up("Game Host", "host@example.invalid")

    def _signed_up(self, name: str, email: str) -> User:
        with self.owui.client() as c:
            got = c.post("/api/v1/auths/signup", json={"name": name, "email": email, "password": PASSWORD})
            got.raise_for_status()
            doc = got.json()
        return User(name, email, doc["id"], doc["token"])

    def client(self) -> httpx.Client:
        return self.owui.client(self.user.token)

    def add_user(self, name: str, email: str) -> User:
        """Admin Panel -> Users -> Add User (role user); then signed in, for their token."""
        with self.client() as c:
            got = c.post("/api/v1/auths/add", json={"name": name, "email": email, "password": PASSWORD,
                                                    "role": "user"})
            got.raise_for_status()
        with self.owui.client() as c:
            got = c.post("/api/v1/auths/signin", json={"email": email, "password": PASSWORD})
            got.raise_for_status()
            doc = got.json()
        return User(name, email, doc["id"], doc["token"])

    def connect(self, base: str, key: str = "none", headers: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Admin Settings -> Connections -> the OpenAI connection: its URL, key and custom headers, saved."""
        config = {"0": {"enable": True, "headers": dict(CONNECTION_HEADERS if headers is None else headers),
                        "connection_type": "external", "auth_type": "bearer"}}
        with self.client() as c:
            got = c.post("/openai/config/update", json={"ENABLE_OPENAI_API": True, "OPENAI_API_BASE_URLS": [base],
                                                        "OPENAI_API_KEYS": [key], "OPENAI_API_CONFIGS": config})
            got.raise_for_status()
            doc: dict[str, Any] = got.json()
            return doc


    def grant(self, model_id: str, name: str, *user_ids: str) -> None:
        """Admin Panel -> Models -> the model -> Access: who may read it, by user id ("*": Public). Its access grants
        replaced (POST /api/v1/models/model/access/update, the page's call, which makes the model's entry when the
        connection's model has none yet). Open WebUI lists a model to a user who is not an admin, and lets them chat
        with it and use a Function's buttons on it, only when a grant lets them read it (`get_filtered_models`,
        `check_model_access`); BYPASS_MODEL_ACCESS_CONTROL lists it to everyone but the buttons still check."""
        grants = [{"principal_type": "user", "principal_id": u, "permission": "read"} for u in user_ids]
        with self.client() as c:
            got = c.post("/api/v1/models/model/access/update",
                         json={"id": model_id, "name": name, "access_grants": grants})
            got.raise_for_status()


def models(owui: OpenWebUI, token: str) -> list[str]:
    """The model ids a user's model picker lists (GET /api/models, as the page asks)."""
    with owui.client(token) as c:
        got = c.get("/api/models", params={"refresh": "true"})
        got.raise_for_status()
        return [m["id"] for m in got.json().get("data", [])]


def chats(owui: OpenWebUI, token: str) -> list[dict[str, Any]]:
    """A user's chats as the sidebar lists them (id, title)."""
    with owui.client(token) as c:
        got = c.get("/api/v1/chats/")
        got.raise_for_status()
        return list(got.json())


def chat(owui: OpenWebUI, token: str, chat_id: str) -> dict[str, Any]:
    """One stored chat: its `history` (`messages` by id, each with `parentId`, `childrenIds`, `role`, `content`,
    and `currentId`, the branch on screen), its title and tags."""
    with owui.client(token) as c:
        got = c.get(f"/api/v1/chats/{chat_id}")
        got.raise_for_status()
        doc: dict[str, Any] = got.json()["chat"]
        return doc


def branch(stored: dict[str, Any]) -> list[dict[str, str]]:
    """The messages of the branch on screen, oldest first, as Open WebUI sends them (role, content): from the
    history's `currentId` up its `parentId`s."""
    history = stored["history"]
    out: list[dict[str, str]] = []
    at = history.get("currentId")
    while at:
        m = history["messages"][at]
        out.append({"role": m["role"], "content": m["content"]})
        at = m.get("parentId")
    return out[::-1]
