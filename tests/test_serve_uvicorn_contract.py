"""Issue 25 item 6: what `server/runtime/head_join.py` takes from uvicorn, a private class, pinned and checked here, so
a uvicorn that changes it fails loudly (SV-7). `HeadJoiningProtocol` subclasses uvicorn's httptools protocol and
wraps the transport `connection_made` is given (`HeadJoiner`, which holds a response head for the next write);
that works while the protocol keeps that very transport and writes a response only through its `write`
(tests/test_serve_head_join.py shows it over a real socket). pyproject.toml pins uvicorn to the versions these
tests ran with.

Issue 26 (SEC-4): `server/runtime/connections.py`'s `GuardedProtocol` subclasses it again, to time a request's head and
body and to cap the connections: it hooks the parser callbacks and `on_response_complete`, and reads the
attributes listed in GUARD_USES; checked here too."""

from __future__ import annotations

import ast
import asyncio
import importlib.metadata
import inspect
import tomllib

import uvicorn
from packaging.requirements import Requirement
from uvicorn.protocols.http import httptools_impl

from conftest import ROOT
from tagengine._internal.server.runtime.connections import Guard, GuardedProtocol
from tagengine._internal.server.runtime.head_join import HeadJoiner, HeadJoiningProtocol

# what uvicorn's protocol and its request cycle call on `self.transport` (uvicorn 0.32.1 to 0.54): HeadJoiner
# handles write (and writelines, close); the rest pass through to the socket's transport
TRANSPORT_CALLS = {"close", "is_closing", "set_protocol", "write"}
# what connections.py's GuardedProtocol overrides (each called by uvicorn's protocol, with these parameters)
# and the attributes it reads (set by uvicorn's protocol on itself, or by its request cycle)
GUARD_HOOKS = {"connection_made": ["self", "transport"], "connection_lost": ["self", "exc"],
               "on_message_begin": ["self"], "on_headers_complete": ["self"], "on_message_complete": ["self"],
               "on_response_complete": ["self"]}
GUARD_USES = {"self.connections", "self.cycle", "self.transport", "self.loop", "self.client"}
CYCLE_USES = {"response_started", "response_complete"}


def test_uvicorn_is_pinned_and_the_installed_one_is_in_the_pin():
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = [Requirement(d) for d in doc["project"]["dependencies"] if Requirement(d).name == "uvicorn"]
    assert len(pins) == 1 and pins[0].specifier and any(s.operator == "<" for s in pins[0].specifier), pins
    installed = importlib.metadata.version("uvicorn")
    assert pins[0].specifier.contains(installed), f"uvicorn {installed} is outside {pins[0]}: check SV-7"


def test_the_protocol_head_join_subclasses_is_there_as_it_was():
    cls = httptools_impl.HttpToolsProtocol
    assert issubclass(HeadJoiningProtocol, cls) and issubclass(cls, asyncio.Protocol)
    assert list(inspect.signature(cls.connection_made).parameters) == ["self", "transport"]
    assert "connection_made" in vars(cls)  # its own, which keeps the transport it is given:
    source = ast.parse(inspect.getsource(cls.connection_made).strip())
    kept = [n for n in ast.walk(source) if isinstance(n, ast.Assign)
            and any(ast.unparse(t) == "self.transport" for t in n.targets) and ast.unparse(n.value) == "transport"]
    assert kept, "HttpToolsProtocol.connection_made no longer keeps `self.transport = transport`"


def test_uvicorn_writes_a_response_only_through_what_head_joiner_handles():
    """Every call uvicorn's httptools module makes on `self.transport` is one HeadJoiner handles (write) or
    passes on unchanged; a new one (sendfile, write_eof...) would bypass a held head."""
    tree = ast.parse(inspect.getsource(httptools_impl))
    calls = {n.attr for n in ast.walk(tree)
             if isinstance(n, ast.Attribute) and ast.unparse(n.value) == "self.transport"}
    assert calls <= TRANSPORT_CALLS, f"uvicorn's protocol now calls transport.{sorted(calls - TRANSPORT_CALLS)}"
    assert "write" in calls
    handled = {"write", "writelines", "close", "flush"}
    assert handled <= set(vars(HeadJoiner))


def test_uvicorn_takes_the_protocol_class_as_its_http_option():
    """`tagengine serve` gives uvicorn the class itself (`http=HeadJoiningProtocol`, server/main.py)."""
    config = uvicorn.Config(lambda scope, receive, send: None, http=HeadJoiningProtocol)
    config.load()
    assert config.http_protocol_class is HeadJoiningProtocol


def test_what_the_connection_guard_hooks_and_reads_is_there_as_it_was():
    """GuardedProtocol (SEC-4) overrides uvicorn's parser callbacks and response hook, and reads the protocol's
    connections (the server's set of them), its current request cycle (whether an answer started or ended),
    its transport, loop and client address: each must still be what uvicorn's protocol has, and uvicorn must
    still call the hooks (by name, from the parser or its cycle)."""
    cls = httptools_impl.HttpToolsProtocol
    assert issubclass(GuardedProtocol, HeadJoiningProtocol)
    source = inspect.getsource(httptools_impl)
    for name, params in GUARD_HOOKS.items():
        assert name in vars(cls), f"HttpToolsProtocol.{name} is gone"
        assert list(inspect.signature(getattr(cls, name)).parameters) == params, name
    assert "on_response=self.on_response_complete" in source  # the cycle calls the protocol's own hook
    tree = ast.parse(source)
    assigned = {ast.unparse(t) for n in ast.walk(tree) if isinstance(n, ast.Assign | ast.AnnAssign)
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])}
    assert assigned >= GUARD_USES, f"uvicorn's protocol no longer sets {sorted(GUARD_USES - assigned)}"
    cycle = ast.parse(inspect.getsource(httptools_impl.RequestResponseCycle))
    cycle_sets = {ast.unparse(t).removeprefix("self.") for n in ast.walk(cycle) if isinstance(n, ast.Assign)
                  for t in n.targets}
    assert cycle_sets >= CYCLE_USES, f"uvicorn's request cycle no longer sets {sorted(CYCLE_USES - cycle_sets)}"
    used = ast.parse(inspect.getsource(GuardedProtocol))
    own = {t.attr for n in ast.walk(used) if isinstance(n, ast.Assign) for t in ast.walk(n)
           if isinstance(t, ast.Attribute) and isinstance(t.ctx, ast.Store)} | {"guard"}
    reads = {ast.unparse(n) for n in ast.walk(used) if isinstance(n, ast.Attribute)
             and isinstance(n.value, ast.Name) and n.value.id in ("self", "p")
             and not n.attr.startswith("_") and n.attr not in GUARD_HOOKS and n.attr not in own}
    assert {r.replace("p.", "self.") for r in reads} <= GUARD_USES, "GuardedProtocol reads more of uvicorn's protocol"


def test_uvicorn_takes_the_guarded_protocol_class():
    protocol = Guard().protocol()
    config = uvicorn.Config(lambda scope, receive, send: None, http=protocol)
    config.load()
    assert config.http_protocol_class is protocol and issubclass(protocol, GuardedProtocol)
