"""SillyTavern's own page in a headless Chromium (issue 28): what a person does there, as functions, for the tests of
the tagengine extension (tests/test_st_extension_ui.py). The server is tests/st_kit.py's (`sillytavern(tmp,
ui=True)`); the browser is the system's Chromium, driven by Playwright (as tests/test_pages.py drives it).

Every wait is bounded (`WAIT`, in milliseconds): a step that does not happen fails the test with Playwright's
timeout and the page's console, never hangs it. The selectors are SillyTavern 1.19.0's own (public/index.html,
public/script.js): the API connection's `#main_api`, `#chat_completion_source`, `#custom_api_url_text` and
`#api_button_openai`; the character import's `#character_import_file`; a message is `#chat .mes[mesid=N]` with
its `.mes_text`, its swipe arrows `.swipe_left`/`.swipe_right` and its edit buttons `.mes_edit`,
`.mes_edit_done`, `#curEditTextarea`; the send form's `#send_textarea`, `#send_but`, `#mes_stop`; the options
menu `#options_button` with `#option_regenerate`, `#option_impersonate`; the Author's Note's
`#extension_floating_prompt`.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from browser_kit import launched

try:
    from playwright.sync_api import Error as PlaywrightError
except ImportError:  # no Playwright: the tests that use this kit skip (browser_kit)
    PlaywrightError = Exception  # type: ignore[misc,assignment]

WAIT = 30_000  # ms: one step of the page (a reply of the scripted model comes in well under a second)
SEND_WAIT = 5_000  # ms: for the chat to take a message sent, before Send is clicked again
SEND_TRIES = 3  # clicks on Send at most
START_WAIT = 120_000  # ms: the page's first load (it compiles nothing, but loads every built-in extension)


@contextmanager
def browser() -> Iterator[Any]:
    """A headless Chromium (tests/browser_kit.py: the system's); skips the test when there is none."""
    yield from launched()


class Tavern:
    """One browser page on SillyTavern, and what a person does there."""

    def __init__(self, page: Any, url: str) -> None:
        self.page = page
        self.url = url
        self.console: list[str] = []
        page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: self.console.append(f"page error: {e}"))

    def open(self) -> None:
        """The page, loaded; the first start's welcome (a persona name) saved as it comes."""
        self.page.goto(self.url)
        self.page.wait_for_function("() => window.SillyTavern && !document.getElementById('preloader')",
                                    timeout=START_WAIT)
        welcome = self.page.locator("dialog.popup", has_text="Welcome to SillyTavern")
        with contextlib.suppress(Exception):  # not the first start: no welcome
            welcome.locator(".popup-button-ok").click(timeout=5000)

    def ctx(self, expression: str) -> Any:
        """A value of SillyTavern's context (`c` in `expression`)."""
        return self.page.evaluate(f"() => {{ const c = SillyTavern.getContext(); return {expression}; }}")

    # -- the connection ----------------------------------------------------------------------------------
    def connect(self, base: str) -> None:
        """API Connections: Chat Completion, Custom (OpenAI-compatible), the base URL, Connect."""
        page = self.page
        page.click("#API-status-top")
        page.select_option("#main_api", "openai")
        page.select_option("#chat_completion_source", "custom")
        page.fill("#custom_api_url_text", base)
        page.click("#api_button_openai")
        page.wait_for_function("() => SillyTavern.getContext().onlineStatus !== 'no_connection'", timeout=WAIT)
        page.click("#API-status-top")  # closed again

    # -- characters and chats ------------------------------------------------------------------------------
    def import_card(self, path: Path) -> None:
        """Character Management's Import (a character card file), then its chat opened."""
        self.page.set_input_files("#character_import_file", str(path))
        name = self.page.wait_for_function(
            "() => SillyTavern.getContext().characters.map(c => c.name)", timeout=WAIT)
        assert name

    def open_character(self, name: str) -> None:
        page = self.page
        page.click("#rightNavDrawerIcon")
        page.locator("#rm_print_characters_block .character_select", has_text=name).first.click()
        page.wait_for_function("(n) => SillyTavern.getContext().name2 === n && "
                               "SillyTavern.getContext().chat.length > 0", arg=name, timeout=WAIT)
        if page.locator("#rightNavHolder.openDrawer, #right-nav-panel.openDrawer").count():
            page.click("#rightNavDrawerIcon")

    def new_chat(self) -> None:
        """Options menu: Start new chat, confirmed: the character's greeting alone."""
        chat_id = self.ctx("c.chatId")
        self.option("start_new_chat")
        self.page.locator("dialog.popup", has_text="Start new chat").locator(".popup-button-ok").click(timeout=WAIT)
        self.page.wait_for_function("(old) => SillyTavern.getContext().chatId !== old && "
                                    "SillyTavern.getContext().chat.length === 1", arg=chat_id, timeout=WAIT)

    def messages(self) -> list[str]:
        return list(self.ctx("c.chat.map(m => m.mes)"))

    def idle(self) -> None:
        """No generation running (the Stop button hidden)."""
        self.page.wait_for_function(
            "() => { const s = document.getElementById('mes_stop'); "
            "return !s || getComputedStyle(s).display === 'none'; }",
            timeout=WAIT)

    def send(self, text: str) -> str:
        """A message sent; the reply that comes back (the chat's last message, once the generation ended).

        SillyTavern drops a click on Send that comes while it still finishes the reply before (its Stop button
        already hidden): the text stays in the box and nothing is sent, one walk in three on a quiet machine. A
        person clicks again, and so does this, a few times over (bounded), and only while the chat has not
        taken the message and the box still holds it, so a message is never sent twice."""
        page = self.page
        before = len(self.messages())
        page.fill("#send_textarea", text)
        taken = "(n) => SillyTavern.getContext().chat.length >= n + 1"
        for _ in range(SEND_TRIES - 1):
            page.click("#send_but")
            with contextlib.suppress(PlaywrightError):
                page.wait_for_function(taken, arg=before, timeout=SEND_WAIT)
                break
            if page.input_value("#send_textarea") != text:  # taken after all: the box was emptied
                break
        else:
            page.click("#send_but")  # the last time, with Playwright's own error below
        page.wait_for_function("(n) => SillyTavern.getContext().chat.length >= n + 2", arg=before, timeout=WAIT)
        self.idle()
        return str(self.messages()[-1])

    def option(self, item: str) -> None:
        """An item of the options menu (the ☰ left of the input): `regenerate`, `impersonate`, `continue`...
        The menu opens with an animation, and a click on the ☰ while it is still showing closes it again: on a
        loaded machine the item was found covered ("#chat intercepts pointer events") until the step's time
        ran out. So the ☰ is clicked only while the item is hidden, and the item only once it is visible,
        a few times over (bounded), the last time with Playwright's own error."""
        target = self.page.locator(f"#option_{item}")
        for _ in range(3):
            if not target.is_visible():
                self.page.click("#options_button")
            with contextlib.suppress(PlaywrightError):
                target.wait_for(state="visible", timeout=WAIT // 6)
                target.click(timeout=WAIT // 6)
                return
        if not target.is_visible():
            self.page.click("#options_button")
        target.click(timeout=WAIT)

    def test_message(self) -> None:
        """API Connections -> Test Message, its toast awaited, the drawer closed again. The drawer opens with an
        animation: under load a click on the button as it moved was lost and no toast came, so the button is
        clicked once the drawer shows it, and again (bounded) while no toast has come."""
        button, toast = self.page.locator("#test_api_button"), self.page.locator(".toast-success, .toast-error")
        if not button.is_visible():
            self.page.click("#API-status-top")
        button.wait_for(state="visible", timeout=WAIT)
        for _ in range(3):
            button.click()
            with contextlib.suppress(PlaywrightError):
                toast.first.wait_for(timeout=WAIT // 3)
                break
        else:
            toast.first.wait_for(timeout=WAIT)
        self.page.click("#API-status-top")

    def regenerate(self) -> str:
        self.option("regenerate")
        self.page.wait_for_timeout(200)
        self.idle()
        return str(self.messages()[-1])

    def message(self, mesid: int) -> Any:
        return self.page.locator(f"#chat .mes[mesid='{mesid}']")

    def swipe(self, mesid: int, direction: str) -> None:
        """A swipe arrow of the last message: `right` past the last swipe asks for a new one."""
        m = self.message(mesid)
        m.hover()
        m.locator(f".swipe_{direction}").click()
        self.page.wait_for_timeout(300)
        self.idle()

    def edit(self, mesid: int, text: str) -> None:
        """The message's edit button, its text replaced, then done."""
        m = self.message(mesid)
        m.hover()
        m.locator(".mes_edit").click()
        self.page.fill("#curEditTextarea", text)
        m.locator(".mes_edit_done").click()
        self.page.wait_for_function("([i, t]) => SillyTavern.getContext().chat[i].mes === t || "
                                    "!document.getElementById('curEditTextarea')", arg=[mesid, text], timeout=WAIT)

    def author_note(self, text: str) -> None:
        """The chat's Author's Note set (its panel opened from the options menu, the text typed, closed). The
        menu item toggles the panel, which opens and closes with an animation: it is asked to open only when it
        is closed, and is closed once it has gone."""
        area = self.page.locator("#extension_floating_prompt")
        if not area.is_visible():
            self.option("toggle_AN")
        area.wait_for(state="visible", timeout=WAIT)
        area.fill(text)
        self.page.click("#ANClose")
        area.wait_for(state="hidden", timeout=WAIT)

    def install_extension(self, url: str) -> None:
        """Extensions -> Install extension: the Git URL typed, Install, and the warning about an extension from
        outside SillyTavern's own repositories confirmed; then the success toast."""
        page = self.page
        self.extensions_drawer(opened=True)
        page.click("#third_party_extension_button")
        dialog = page.locator("dialog.popup").last
        dialog.locator("input.popup-input, textarea.popup-input").first.fill(url)
        dialog.locator(".popup-button-ok").click()
        page.locator("dialog.popup", has_text="Install a third-party extension?").locator(".popup-button-ok").click()
        page.locator(".toast-success", has_text="installed successfully").wait_for(timeout=WAIT)
        self.extensions_drawer(opened=False)

    def extension_settings(self, **values: str | bool) -> None:
        """Extensions -> tagengine: each of `address`, `key` typed in turn and left (the input's change event, which
        saves the settings and refreshes the panel), `badges` checked or not, in the order given; the drawer closed
        again."""
        page = self.page
        self.extensions_drawer(opened=True)
        self.tagengine_section()
        for name, value in values.items():
            field = page.locator(f"#tagengine_{name}")
            if isinstance(value, bool):  # once the drawer has opened (its animation moves the box under a click)
                field.wait_for(state="visible", timeout=WAIT)
                field.scroll_into_view_if_needed()
                for _ in range(3):
                    with contextlib.suppress(PlaywrightError):
                        field.set_checked(value, timeout=WAIT // 6)
                        break
                else:
                    field.set_checked(value, timeout=WAIT)
            else:
                field.fill(value)
                field.press("Tab")
        self.extensions_drawer(opened=False)

    def tagengine_section(self) -> Any:
        """The Extensions drawer's tagengine section opened (the drawer open already); its content. Its own drawer
        animates too: a click while it still moved (a loaded machine) left it closed, so it is clicked again, up to
        three times, until its content shows."""
        page = self.page
        toggle = page.locator(".tagengine-settings .inline-drawer-toggle")
        toggle.wait_for(state="visible", timeout=WAIT)
        content = page.locator(".tagengine-settings .inline-drawer-content")
        for _ in range(3):
            if not content.is_visible():
                toggle.click()
            with contextlib.suppress(PlaywrightError):
                content.wait_for(state="visible", timeout=WAIT // 3)
                break
        content.wait_for(state="visible", timeout=WAIT)
        return content

    def extensions_drawer(self, *, opened: bool) -> None:
        """The Extensions drawer's toggle clicked, and the drawer waited for until it is shown (`opened`) or gone.
        It opens and closes with an animation: a settings change right after another, on a loaded machine, clicked
        the toggle while the drawer was still closing, and it ended closed, its tagengine section out of reach."""
        self.page.click("#extensions-settings-button .drawer-toggle")
        self.page.locator("#rm_extensions_block").wait_for(state="visible" if opened else "hidden", timeout=WAIT)

    # -- the extension's panel ---------------------------------------------------------------------------------
    def panel(self) -> Any:
        return self.page.locator("#tagengine_panel")

    def open_panel(self) -> None:
        if "te-open" not in (self.panel().get_attribute("class") or ""):
            self.page.click("#tagengine_toggle")
        self.panel().locator(".te-campaign-words").wait_for(state="visible", timeout=WAIT)

    def panel_says(self, text: str) -> None:
        """Wait until the panel shows `text` (after the refresh an event started)."""
        self.page.wait_for_function(
            "(t) => (document.getElementById('tagengine_panel')?.innerText ?? '').includes(t)", arg=text, timeout=WAIT)


# -- a Git server, for *Install extension* from a Git URL ------------------------------------------------------


class _GitHandler(http.server.BaseHTTPRequestHandler):
    """Git's smart HTTP protocol: each request handed to `git http-backend` as a CGI request (git's own server
    side, as behind any Git host), over the repositories of `root`."""

    root: Path

    def do_GET(self) -> None:
        self._backend(b"")

    def do_POST(self) -> None:
        self._backend(self.rfile.read(int(self.headers.get("content-length") or 0)))

    def _backend(self, body: bytes) -> None:
        path, _, query = self.path.partition("?")
        env = {**os.environ, "GIT_PROJECT_ROOT": str(self.root), "GIT_HTTP_EXPORT_ALL": "1",
               "REQUEST_METHOD": self.command, "PATH_INFO": path, "QUERY_STRING": query,
               "CONTENT_TYPE": self.headers.get("content-type") or "", "CONTENT_LENGTH": str(len(body)),
               "REMOTE_ADDR": "127.0.0.1", "GIT_PROTOCOL": self.headers.get("git-protocol") or ""}
        if self.headers.get("content-encoding"):
            env["HTTP_CONTENT_ENCODING"] = self.headers["content-encoding"]
        got = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60)
        head, _, payload = got.stdout.partition(b"\r\n\r\n")
        status, fields = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                fields.append((name, value.strip()))
        self.send_response(status)
        for name, value in fields:
            self.send_header(name, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # the base class names it `format`
        pass


@contextmanager
def git_server(root: Path) -> Iterator[str]:
    """A Git host on 127.0.0.1, port 0, serving the bare repositories in `root`; its base URL. Stopped on exit."""
    handler = type("Handler", (_GitHandler,), {"root": root})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def extension_repository(files: Path, into: Path, name: str) -> Path:
    """A bare repository `into/<name>.git` of one commit: the files SillyTavern's *Install extension* needs of
    this checkout as they are now (the root manifest.json and sillytavern/extension/), at the same paths."""
    work = into / f"{name}-work"
    (work / "sillytavern").mkdir(parents=True)
    shutil.copyfile(files / "manifest.json", work / "manifest.json")
    shutil.copytree(files / "sillytavern" / "extension", work / "sillytavern" / "extension")
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid", "-c", "init.defaultBranch=main"]
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the extension"]):
        subprocess.run([*git, *step], cwd=work, check=True, capture_output=True, timeout=60)
    bare = into / f"{name}.git"
    subprocess.run([*git, "clone", "-q", "--bare", str(work), str(bare)], check=True, capture_output=True, timeout=60)
    return bare
