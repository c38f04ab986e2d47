"""The real SillyTavern for end-to-end tests (issues 12 and 16): its server (the `sillytavern` npm package),
installed once by `./dev test` into a cache folder outside the repo, started on a free loopback port with a
temporary data root and config, and stopped (its whole process group) whatever happens.

`sillytavern(tmp)` is the context manager; with no install (no npm, no registry) it skips the test and says
why. `sillytavern(tmp, ui=True)` is the server a person's browser opens (issue 28, tests/st_ui.py): the default
content copied in as for a new user (settings, presets), UI extensions on, run in its own folder. Helpers for its
HTTP API: `generate` / `generate_stream` (POST /api/backends/chat-completions/generate,
the endpoint the app's own page calls), `save_chat` / `get_chat` (POST /api/chats/save and /api/chats/get),
`save_group_chat` / `get_group_chat` (the same for group chats), `chat_file` / `group_chat_file` (where a
chat is stored) and `st_jsonl` (the bytes SillyTavern writes for a chat).

What the kit learned from SillyTavern 1.19.0's source (src/server-main.js, src/endpoints/chats.js,
src/endpoints/backends/chat-completions.js):
- The CSRF protection stays on, as a user has it: a session cookie and `GET /csrf-token`, then the
  token in `X-CSRF-Token` on every POST (`connect` below does it).
- Requests from 127.0.0.1 pass the whitelist; with user accounts off every request is the user
  `default-user` (the data root's `default-user/` folder): no login, no basic auth.
- `--configPath` keeps its config.yaml out of the install folder (it writes the defaults into the file).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

ST_VERSION = "1.19.0"  # the same pin as ST_VERSION in ./dev
START_TIMEOUT = 240.0  # seconds: a first start compiles the page's libraries (about 15-40 s), later ones ~3 s
USER = "default-user"
# Settings for a quiet offline server: no default content copied in, no extension or tokenizer downloads,
# no access log. JSON is YAML, and SillyTavern adds every other key with its default.
CONFIG = {
    "skipContentCheck": True,
    "whitelistMode": True,
    "whitelistDockerHosts": False,
    "enableDownloadableTokenizers": False,
    "extensions": {"enabled": False, "autoUpdate": False, "models": {"autoDownload": False}},
    "logging": {"enableAccessLog": False},
    "browserLaunch": {"enabled": False},
}
# Issue 28: for a browser on SillyTavern's page. Its first start copies in the content a new user gets (the page
# does not load without a settings.json) and UI extensions are on; `git.backend: system` makes an extension's
# install from a Git URL use the system's git, as it does for a user who has it.
UI_CONFIG = {**CONFIG, "skipContentCheck": False, "extensions": {**CONFIG["extensions"], "enabled": True},
             "git": {"backend": "system"}}


def cached_install(variable: str, folder: str) -> Path:
    """Where `./dev test` installs an outside app the tests drive: the folder it exports in `variable`, else
    `folder` in tagengine's cache folder (the same rule as ./dev's)."""
    given = os.environ.get(variable)
    if given:
        return Path(given)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "tagengine" / folder


def install_error(folder: Path) -> str:
    """What `./dev test` wrote beside `folder` when its install failed (`FOLDER.error`), as " " and its first 600
    characters on one line, for a skip's reason; "" when there is none."""
    err = Path(f"{folder}.error")
    return " " + " ".join(err.read_text(errors="replace").split())[:600] if err.is_file() else ""


def install_dir() -> Path:
    """The npm prefix `./dev test` installs into (it exports TAGENGINE_SILLYTAVERN)."""
    return cached_install("TAGENGINE_SILLYTAVERN", f"sillytavern-{ST_VERSION}")


def server_js() -> Path:
    return install_dir() / "node_modules" / "sillytavern" / "server.js"


def missing() -> str | None:
    """Why SillyTavern cannot run here, or None."""
    js = server_js()
    if not js.is_file():
        why = install_error(install_dir())
        return (f"SillyTavern {ST_VERSION} is not installed at {install_dir()} (`./dev test` installs it with npm "
                f"from the npm registry).{why}")
    node = shutil.which("node")
    if node is None:
        return "SillyTavern needs Node.js: no `node` on PATH"
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        major = int(out.lstrip("v").split(".")[0])
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        return f"SillyTavern needs Node.js >= 20: `node --version` failed: {e}"
    if major < 20:
        return f"SillyTavern {ST_VERSION} needs Node.js >= 20; this machine has {out}"
    return None


def connect(url: str, timeout: float = 60.0) -> httpx.Client:
    """An httpx client for SillyTavern's API that keeps the session cookie and sends the CSRF token."""
    client = httpx.Client(base_url=url, timeout=timeout)
    try:
        got = client.get("/csrf-token")
        got.raise_for_status()
        client.headers["X-CSRF-Token"] = got.json()["token"]
    except BaseException:
        client.close()
        raise
    return client


@dataclass
class SillyTavern:
    url: str
    data: Path  # its data root
    log: Path  # what it printed
    client: httpx.Client

    def user_dir(self) -> Path:
        return self.data / USER


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def log_tail(log: Path, n: int = 40) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


def stop_group(proc: subprocess.Popen[bytes], grace: float = 15.0) -> None:
    """The whole process group: SIGTERM (SillyTavern saves its stats and exits, uvicorn shuts down), `grace` seconds
    for it, then SIGKILL; bounded."""
    if proc.poll() is None:
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 15.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
    with contextlib.suppress(ProcessLookupError, PermissionError):  # children a server that exited left behind
        os.killpg(proc.pid, signal.SIGKILL)


def _webpack_seed() -> Path:
    return install_dir() / "webpack-seed"


def _seed(data: Path) -> None:
    """Outside Docker SillyTavern compiles its page's libraries into <data root>/_webpack at every start (~15 s
    from nothing): a copy of the first compile, kept next to the install, makes later starts take ~3 s."""
    seed = _webpack_seed()
    if seed.is_dir() and not (data / "_webpack").exists():
        shutil.copytree(seed, data / "_webpack")


def _keep_seed(data: Path) -> None:
    built, seed = data / "_webpack", _webpack_seed()
    if not built.is_dir() or seed.exists():
        return
    tmp = seed.with_name(f"{seed.name}.{os.getpid()}")
    try:
        shutil.copytree(built, tmp)
        tmp.rename(seed)  # another run may have won: then keep its copy
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


def _start(tmp: Path, data: Path, config: Path, log: Path, cwd: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [shutil.which("node") or "node", str(server_js()), "--configPath", str(config), "--dataRoot", str(data),
           "--listen", "false", "--listenAddressIPv4", "127.0.0.1", "--port", str(port),
           "--browserLaunchEnabled", "false"]
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    return proc, url


def until_answers(proc: subprocess.Popen[bytes], probe: str, deadline: float, timeout: float = 2.0) -> bool:
    """Polls until the server answers a GET of `probe` with 200 (True) or exits (False); bounded by `deadline`,
    each GET by `timeout` seconds."""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if httpx.get(probe, timeout=timeout).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    return False


@contextmanager
def sillytavern(tmp: Path, ui: bool = False) -> Iterator[SillyTavern]:
    """SillyTavern's server on a free loopback port, data root and config under `tmp`; skips without an install.
    `ui`: for a browser (UI_CONFIG), run in SillyTavern's own folder, whose `./public` its image thumbnails read."""
    why = missing()
    if why is not None:
        pytest.skip(why)
    tmp.mkdir(parents=True, exist_ok=True)
    data, config, log = tmp / "st-data", tmp / "st-config.yaml", tmp / "st.log"
    data.mkdir(exist_ok=True)
    config.write_text(json.dumps(UI_CONFIG if ui else CONFIG))
    cwd = server_js().parent if ui else tmp
    _seed(data)
    deadline = time.monotonic() + START_TIMEOUT
    proc, url = _start(tmp, data, config, log, cwd)
    try:
        up = until_answers(proc, f"{url}/csrf-token", deadline)
        if not up and proc.poll() is not None and b"EADDRINUSE" in log.read_bytes():
            stop_group(proc)  # the free port was taken between our probe and its bind: one more try
            proc, url = _start(tmp, data, config, log, cwd)
            up = until_answers(proc, f"{url}/csrf-token", deadline)
        if not up:
            raise AssertionError(f"SillyTavern did not start within {START_TIMEOUT:.0f} s (exit code {proc.poll()}); "
                                 f"its log:\n{log_tail(log)}")
        _keep_seed(data)
        client = connect(url)
        try:
            yield SillyTavern(url, data, log, client)
        finally:
            client.close()
    finally:
        stop_group(proc)


# -- chat completions, the way the app's page asks its server ---------------------------------------------------


def generate(st: SillyTavern, body: dict[str, Any]) -> tuple[int, Any]:
    """POST /api/backends/chat-completions/generate, not streamed: (status, JSON answer)."""
    got = st.client.post("/api/backends/chat-completions/generate", json={**body, "stream": False})
    return got.status_code, got.json()


def generate_stream(st: SillyTavern, body: dict[str, Any]) -> tuple[int, str, list[Any]]:
    """The same, streamed: (status, the text of the content deltas, every SSE data item as parsed JSON).
    SillyTavern pipes the model's SSE bytes through unchanged."""
    items: list[Any] = []
    with st.client.stream("POST", "/api/backends/chat-completions/generate", json={**body, "stream": True}) as got:
        raw = got.read().decode("utf-8")
    for block in raw.split("\n\n"):
        for line in block.splitlines():
            if line.startswith("data:") and line[5:].strip() != "[DONE]":
                items.append(json.loads(line[5:]))
    text = "".join(c.get("delta", {}).get("content") or "" for it in items if isinstance(it, dict)
                   for c in it.get("choices") or [])
    return got.status_code, text, items


# -- chat files ---------------------------------------------------------------------------------------------------


def save_chat(st: SillyTavern, character: str, file_name: str, chat: list[dict[str, Any]],
              force: bool = False) -> httpx.Response:
    """POST /api/chats/save: `chat` is the header object then the messages; `force` skips the integrity check
    (what the app sends after the user confirms overwriting a chat changed elsewhere)."""
    body: dict[str, Any] = {"avatar_url": f"{character}.png", "file_name": file_name, "chat": chat}
    if force:
        body["force"] = True
    return st.client.post("/api/chats/save", json=body)


def get_chat(st: SillyTavern, character: str, file_name: str) -> Any:
    """POST /api/chats/get: the stored chat as a list (header first, lines that are not JSON left out); [] for no
    such file, {} when the character has no chat folder yet (the call then makes it)."""
    got = st.client.post("/api/chats/get", json={"avatar_url": f"{character}.png", "file_name": file_name})
    got.raise_for_status()
    return got.json()


def chat_file(st: SillyTavern, character: str, file_name: str) -> Path:
    return st.user_dir() / "chats" / character / f"{file_name}.jsonl"


def save_group_chat(st: SillyTavern, chat_id: str, chat: list[dict[str, Any]], force: bool = False) -> httpx.Response:
    """POST /api/chats/group/save: a group chat by its id (the same integrity check as save_chat)."""
    body: dict[str, Any] = {"id": chat_id, "chat": chat}
    if force:
        body["force"] = True
    return st.client.post("/api/chats/group/save", json=body)


def get_group_chat(st: SillyTavern, chat_id: str) -> Any:
    """POST /api/chats/group/get: the stored group chat as a list; [] for no such file."""
    got = st.client.post("/api/chats/group/get", json={"id": chat_id})
    got.raise_for_status()
    return got.json()


def group_chat_file(st: SillyTavern, chat_id: str) -> Path:
    return st.user_dir() / "group chats" / f"{chat_id}.jsonl"


def st_jsonl(chat: list[dict[str, Any]]) -> str:
    """The text SillyTavern writes for a chat: each object as JavaScript's JSON.stringify gives it (no spaces,
    keys in the order given, non-ASCII as is), one a line, no newline after the last. Python's json gives the
    same text for strings, ints, booleans, null, lists and objects (not for floats such as 1.0 -> `1`)."""
    return "\n".join(json.dumps(m, ensure_ascii=False, separators=(",", ":")) for m in chat)
