"""Issue 25 item 6: what `server/head_join.py` takes from uvicorn, a private class, pinned and checked here, so
a uvicorn that changes it fails loudly (SV-7). `HeadJoiningProtocol` subclasses uvicorn's httptools protocol and
wraps the transport `connection_made` is given (`HeadJoiner`, which holds a response head for the next write);
that works while the protocol keeps that very transport and writes a response only through its `write`
(tests/test_serve_head_join.py shows it over a real socket). pyproject.toml pins uvicorn to the versions these
tests ran with."""

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
from tagengine._internal.server.head_join import HeadJoiner, HeadJoiningProtocol

# what uvicorn's protocol and its request cycle call on `self.transport` (uvicorn 0.32.1 to 0.54): HeadJoiner
# handles write (and writelines, close); the rest pass through to the socket's transport
TRANSPORT_CALLS = {"close", "is_closing", "set_protocol", "write"}


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
