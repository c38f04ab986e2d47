"""Issue 35 items 6, 7 and 8, each bound at both sides, against `tagengine serve` on loopback (the attacks at
full size, with a /healthz probe, are tests/test_forms_under_attack.py):

- a form of more fields (url-encoded) or parts (multipart) than its bound is a 413 that says which, where it was
  read as an empty form (nothing saved, the player told "saved"); one at the bound is read;
- the checker's page lists PROBLEMS_SHOWN problems and says how many more;
- a refused edit echoes what was typed whole within its input's own bound, else cut with "…"."""

from __future__ import annotations

import json

import httpx
from test_pages_hostile import FORM, kept, serving

from tagengine._internal.commands.sheet_edits import ECHO_CHARS, ECHO_PATH
from tagengine._internal.pages.ruleset_inspection import PROBLEMS_SHOWN
from tagengine._internal.server.limits import MAX_FORM_FIELDS, MAX_FORM_PARTS

BOUNDARY = "b0und"
MULTIPART = {"content-type": f"multipart/form-data; boundary={BOUNDARY}"}


def multipart(fields: list[tuple[str, str]]) -> bytes:
    parts = [f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n' for k, v in fields]
    return ("".join(parts) + f"--{BOUNDARY}--\r\n").encode()


def test_a_form_past_its_count_of_fields_or_parts_is_a_413_and_one_at_it_is_read(tmp_path):
    at_parts = [("fields.vice", "Weird")] + [(f"_n{i}", "x") for i in range(MAX_FORM_PARTS - 1)]
    at_fields = "&".join(["fields.vice=Weird", *(f"_n{i}=x" for i in range(MAX_FORM_FIELDS - 1))]).encode()
    with serving(tmp_path, played=True) as url, httpx.Client(base_url=url, timeout=60) as c:
        before = kept(tmp_path)
        past = [c.post("/ui/c/heist/edit/Cutter", content=multipart([*at_parts, ("_more", "x")]), headers=MULTIPART),
                c.post("/ui/c/heist/edit/Cutter", content=at_fields + b"&_more=x", headers=FORM)]
        draft = c.post("/ui/c/heist/draft/Cutter", content=multipart([*at_parts, ("_more", "x")]), headers=MULTIPART)
        checker = c.post("/ui/check", content=multipart([("ruleset", "{}")] * (MAX_FORM_PARTS + 1)),
                         headers=MULTIPART)
        assert kept(tmp_path) == before  # nothing saved past a bound
        parts = c.post("/ui/c/heist/draft/Cutter", content=multipart(at_parts), headers=MULTIPART)
        fields = c.post("/ui/c/heist/edit/Cutter", content=at_fields, headers=FORM)
        vice = c.get("/tagengine/api/c/heist/characters/Cutter").json()["form"]
    for r in (*past, checker):
        assert r.status_code == 413 and r.text.startswith("<!doctype html>"), r.text[:300]
    assert f"more than {MAX_FORM_PARTS} parts" in past[0].text and f"more than {MAX_FORM_FIELDS} fields" in past[1].text
    assert draft.status_code == 413 and draft.json()["error"]["code"] == "request_too_large"
    assert parts.status_code == 200 and parts.json()["problems"] == []
    assert fields.status_code == 303  # read whole: the one change saved
    shown = next(i for s in vice["sections"] for i in s["inputs"] if i["path"] == "fields.vice")
    assert shown["value"] == "Weird"


def test_multipart_is_read_as_browsers_post_it(tmp_path):
    """A file and a text field, a quoted name, a filename* (RFC 8187), a preamble and an epilogue, a part of a
    million lines (the email parser read it line by line); a body with no boundary is an empty form."""
    ruleset = json.dumps({"sheet": {}})  # no name: the ruleset is named by its file's stem
    body = (f"preamble\r\n--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.json\"; "
            f"filename*=utf-8''%E2%82%AC.json\r\nContent-Type: application/json\r\n\r\n{ruleset}\r\n"
            f"--{BOUNDARY}\r\ncontent-disposition: form-data; name=\"ruleset\"\r\n\r\n" + "\r\n" * 1_000_000
            + f"\r\n--{BOUNDARY}--\r\nepilogue").encode()
    with serving(tmp_path, played=False) as url, httpx.Client(base_url=url, timeout=60) as c:
        checked = c.post("/ui/check", content=body, headers=MULTIPART)
        bare = c.post("/ui/check", content=body, headers={"content-type": "multipart/form-data"})
    assert checked.status_code == 200 and "€</h2>" in checked.text.replace(" ", "")  # filename* over filename
    assert bare.status_code == 200 and "€" not in bare.text  # no boundary: nothing read, the empty form


def test_the_checkers_page_lists_its_bound_of_problems_and_counts_the_rest(tmp_path):
    many = {"manifest": {"name": "Many"}, **{f"k{i}": 0 for i in range(PROBLEMS_SHOWN + 40)}}
    few = {"manifest": {"name": "Few"}, **{f"k{i}": 0 for i in range(PROBLEMS_SHOWN - 10)}}
    with serving(tmp_path, played=False) as url, httpx.Client(base_url=url, timeout=60) as c:
        pages = {name: c.post("/ui/check", files={"file": ("r.json", json.dumps(doc).encode())}).text
                 for name, doc in (("many", many), ("few", few))}
    shown = pages["many"].count('<tr class="problem">')
    assert shown == PROBLEMS_SHOWN
    count = int(pages["many"].split('class="badge refused">', 1)[1].split(" ", 1)[0])
    assert f"…and {count - PROBLEMS_SHOWN} more problems, not shown" in pages["many"]
    assert pages["few"].count('<tr class="problem">') == int(
        pages["few"].split('class="badge refused">', 1)[1].split(" ", 1)[0]) and "more problems" not in pages["few"]


def test_a_refused_edit_echoes_what_was_typed_within_its_bound_whole_and_past_it_cut(tmp_path):
    """`vice` holds 80 characters: 300 typed come back whole (ECHO_CHARS), more are cut there with "…", in the
    problems and in the form (API) and on the page; ember-roads' `notes` holds 2000: a refused value of 1 500
    comes back whole, one of 3 000 cut at 2 000. A path the sheet does not have is cut at ECHO_PATH."""
    api = "/tagengine/api/c/heist/characters/Cutter"
    with serving(tmp_path, played=True) as url, httpx.Client(base_url=url, timeout=60) as c:
        whole = c.post(api, json={"changes": {"fields.vice": "v" * ECHO_CHARS}}).json()
        cut = c.post(api, json={"changes": {"fields.vice": "w" * (4 << 20)}})
        path = c.post(api, json={"changes": {"p" * (4 << 20): 1}})
        listed = c.post(api, json={"changes": [["x"] * 100_000]})
        page = c.post("/ui/c/heist/edit/Cutter", content=b"fields.vice=" + b"u" * (3 << 20) + b"&was:fields.vice="
                      + b"t" * 100_000, headers=FORM)
        notes = "/tagengine/api/c/roads/characters/Mira"
        inside = c.post(notes, json={"changes": {"fields.notes": "n" * 1500 + "\x01"}}).json()
        outside = c.post(notes, json={"changes": {"fields.notes": "o" * 3000}}).json()
    assert whole["problems"][0]["value"] == "v" * ECHO_CHARS and whole["problems"][0]["code"] == "too-long"
    assert cut.status_code == 422 and len(cut.content) < 64 * 1024, len(cut.content)
    doc = cut.json()
    assert doc["problems"][0]["value"] == "w" * ECHO_CHARS + "…"
    assert doc["problems"][0]["message"] == f"is {4 << 20} characters; at most 80"
    vice = next(i for s in doc["form"]["sections"] for i in s["inputs"] if i["path"] == "fields.vice")
    assert vice["value"] == "w" * ECHO_CHARS + "…" and vice["problems"][0]["value"] == vice["value"]
    assert path.status_code == 422 and len(path.content) < 64 * 1024
    assert path.json()["problems"][0]["path"] == "p" * ECHO_PATH + "…"
    assert listed.status_code == 422 and len(listed.content) < 64 * 1024
    assert page.status_code == 422 and len(page.content) < 256 * 1024 and "u" * ECHO_CHARS + "…" in page.text
    assert "t" * (ECHO_CHARS + 1) not in page.text  # the value it was opened at, likewise
    assert inside["problems"][0]["code"] == "bad-text" and inside["problems"][0]["value"] == "n" * 1500 + "\x01"
    assert outside["problems"][0]["value"] == "o" * 2000 + "…"
