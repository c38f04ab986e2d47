"""`tagengine openwebui`, the Open WebUI kit (docs/open-webui.md, decision OW-5): `openwebui function` prints the
sheet Function's source (to paste into Admin Panel > Functions) or, with --path, where the file is; `openwebui
install` puts it into an Open WebUI server through its API (`_internal/openwebui/function.py`).

Exit codes as everywhere: 0 ok, 1 Open WebUI refused or could not be reached (the step and its message named),
2 usage (no token).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, TextIO

from .conventions import API_KEY_VARIABLE, ArgParser, Usage

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

TOKEN_VARIABLE = "OPEN_WEBUI_TOKEN"  # the admin's token, out of the command line (and the shell's history)


def add_openwebui(ow: ArgumentParser) -> None:
    sub = ow.add_subparsers(dest="openwebui_command", required=True, parser_class=ArgParser)
    fn = sub.add_parser("function", help="the sheet Function's source, to paste into Open WebUI (Admin Panel > "
                        "Functions > New Function)")
    fn.add_argument("--path", action="store_true", help="print where its file is instead")
    fn.set_defaults(func=cmd_openwebui_function, short_lived=True)
    ins = sub.add_parser("install", help="install the sheet Function into an Open WebUI server through its API (an "
                         "earlier copy is updated), its valves set, turned on for every model")
    ins.add_argument("--url", required=True, help="Open WebUI's address, e.g. http://127.0.0.1:8080")
    ins.add_argument("--token", help=f"an admin's API key or session token (default: ${TOKEN_VARIABLE})")
    ins.add_argument("--server", default="http://127.0.0.1:5005", help="tagengine serve's address as Open WebUI's "
                     "server reaches it (default http://127.0.0.1:5005)")
    ins.add_argument("--api-key", default="", help=f"tagengine serve's --api-key, for the Function to send (default: "
                                                    f"${API_KEY_VARIABLE})")
    ins.add_argument("--user-header", default="X-OpenWebUI-User-Id", help="the header tagengine serve "
                     "--user-header reads; the Function sends the user's id in it (default X-OpenWebUI-User-Id; "
                     "'' for none)")
    ins.set_defaults(func=cmd_openwebui_install, short_lived=True)


def cmd_openwebui_function(args: Namespace, out: TextIO, err: TextIO) -> int:
    from ..openwebui.function import function_file

    path = function_file()
    out.write(f"{path}\n" if args.path else path.read_text(encoding="utf-8"))
    return 0


def cmd_openwebui_install(args: Namespace, out: TextIO, err: TextIO) -> int:
    from ..openwebui.function import FUNCTION_NAME, InstallStopped, install_function

    token = args.token or os.environ.get(TOKEN_VARIABLE)
    if not token:
        raise Usage(f"tagengine openwebui install: give an admin's token with --token or ${TOKEN_VARIABLE}")
    api_key = args.api_key or os.environ.get(API_KEY_VARIABLE, "")
    valves = {"tagengine_url": args.server, "api_key": api_key, "user_header": args.user_header}
    got = install_function(args.url, token, valves)
    if isinstance(got, InstallStopped):
        err.write(f"tagengine openwebui install: could not {got.step}: {got.message}\n")
        return 1
    out.write(f"{'installed' if got.created else 'updated'} the Function '{FUNCTION_NAME}' in {args.url}, on for "
              f"every model, reaching tagengine at {args.server}: its buttons (Game sheet, Roll a check) are under "
              "each reply\n")
    return 0
