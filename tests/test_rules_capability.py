"""Capability API versions (spec 18.1), one rule at a time: a package declaring one minor version below the
feature's is refused at the place the feature is used, and declaring the feature's own version is enough."""

from __future__ import annotations

import pytest

from conftest import edit
from tagengine._internal.errors import RulesetError
from tagengine._internal.ruleset import Ruleset

LEVELS = [{"label": "Fine", "penalty": 0}, {"label": "Hurt", "penalty": -1}]
KINDS = [{"id": "k", "label": "K", "severity": 0}]


def package(minor: int) -> dict:
    """A package that needs no version above 1.36 until a case adds a feature."""
    return {"manifest": {"schemaVersion": 2, "capabilityApi": {"major": 1, "minor": minor}}, "sheet": {
        "abilities": [{"id": "a", "label": "A"}],
        "training": [{"id": "u", "label": "U", "bonus": 0}, {"id": "t", "label": "T", "bonus": 1}],
        "skills": [{"id": "s", "label": "S", "ability": "a"}],
        "saves": [{"id": "v", "label": "V", "ability": "a"}],
        "sections": [{"id": "sec", "label": "Sec"}],
        "fields": [{"id": "f", "label": "F", "type": "enum", "values": ["x", "y"]}],
        "lists": [{"id": "scars", "label": "Scars", "columns": [{"id": "n", "label": "N", "type": "number"},
                                                               {"id": "pen", "label": "Pen", "type": "number"}]}],
        "live": {"pools": [{"id": "p", "label": "P", "max": {"const": 3}}],
                 "tracks": [{"id": "h", "label": "H", "min": 0, "max": 2, "levels": LEVELS, "kinds": KINDS}]}}}


def boxed(**more):
    return lambda d: d["sheet"]["live"]["tracks"].append(
        {"id": "b", "label": "B", "min": 0, "max": 3, "kinds": KINDS,
         "boxes": {"penalty": {"by": "filled", "table": [[0, 0]]}}, **more})


def rest(step):
    return lambda d: d["sheet"].update(rests=[{"id": "r", "label": "R", "steps": [step]}])


def state(d):
    d["sheet"]["live"]["states"] = [{"id": "st", "label": "St", "values": ["calm", "wild"]}]


CASES = [
    pytest.param(lambda d: d["sheet"]["skills"][0].update(section="sec"), "sheet.skills[0].section", 41, id="SHEET-6"),
    pytest.param(lambda d: d["sheet"]["saves"][0].update(section="sec"), "sheet.saves[0].section", 41,
                 id="SHEET-6-save"),
    pytest.param(lambda d: d["sheet"]["skills"][0].update(untrained="refuse"), "sheet.skills[0].untrained", 41,
                 id="UNTR-17"),
    pytest.param(lambda d: d["sheet"]["saves"][0].update(untrained={"by": -1}), "sheet.saves[0].untrained", 41,
                 id="UNTR-17-save"),
    pytest.param(lambda d: d["sheet"]["sections"][0].update(untrained={"by": -1}), "sheet.sections[0].untrained", 41,
                 id="UNTR-17-section"),
    pytest.param(state, "sheet.live.states", 42, id="STATE-17"),
    pytest.param(lambda d: d["sheet"].update(derived=[
        {"id": "e", "label": "E", "op": "enumTable", "from": {"field": "f"}, "table": {"x": 1}}]),
        "sheet.derived[0]", 42, id="STATE-17-enumTable"),
    pytest.param(lambda d: (state(d), rest({"state": "st", "to": "default"})(d)), "sheet.rests[0].steps[0].state", 42,
                 id="STATE-17-rest-step"),
    pytest.param(boxed(), "sheet.live.tracks[1].boxes", 40, id="WOUND-61"),
    pytest.param(boxed(fill="indexed", onFull="refuse"), "sheet.live.tracks[1].fill", 40, id="WOUND-61-fill"),
    pytest.param(boxed(fill="indexed", onFull="refuse"), "sheet.live.tracks[1].onFull", 40, id="WOUND-61-onFull"),
    pytest.param(lambda d: d["sheet"]["live"]["tracks"][0].update(
        extra={"list": "scars", "countColumn": "n", "penaltyColumn": "pen"}), "sheet.live.tracks[0].extra", 40,
        id="WOUND-61-extra"),
    pytest.param(rest({"track": "h", "kind": "k", "to": "min"}), "sheet.rests[0].steps[0].kind", 40,
                 id="WOUND-61-rest-kind"),
    pytest.param(lambda d: d.update(gm={"opposition": "engine"}), "gm.opposition", 774, id="GM-12"),
    pytest.param(lambda d: d.update(gm={"opposition": "game-master"}), "gm.opposition", 774, id="GM-12-game-master"),
    pytest.param(lambda d: d.update(clocks={}), "clocks", 143, id="CLOCK-1"),
    pytest.param(lambda d: d.update(party={"label": "Crew", "fields": [{"id": "heat", "label": "Heat",
                                                                         "type": "number"}]}), "party", 144,
                 id="PARTY-1"),
    pytest.param(lambda d: d["sheet"]["lists"][0]["columns"][0].update(roll={"count": 1, "sides": 6}),
                 "sheet.lists[0].columns[0].roll", 85, id="SHEET-34"),
    pytest.param(lambda d: d["sheet"].update(derived=[{"id": "m", "label": "M", "op": "multiply",
                                                       "of": [{"const": 1}, {"const": 2}]}]),
                 "sheet.derived[0]", 82, id="SHEET-25"),
    pytest.param(lambda d: d["sheet"]["fields"].append({"id": "t", "label": "T", "type": "text",
                                                        "suggestions": ["a"]}),
                 "sheet.fields[1].suggestions", 796, id="SHEET-13"),
    pytest.param(lambda d: d["sheet"]["fields"].append({"id": "t", "label": "T", "type": "text", "suggestions": ["a"],
                                                        "pick": {"const": 1}}),
                 "sheet.fields[1].pick", 797, id="SHEET-16"),
    pytest.param(lambda d: d["sheet"]["lists"].append({"id": "wide", "label": "W", "columns": [
        {"id": f"c{i}", "label": f"C{i}", "type": "number"} for i in range(13)]}),
                 "sheet.lists[1].columns", 165, id="SHEET-30"),
    pytest.param(lambda d: d["sheet"]["live"]["tracks"].append({"id": "pt", "label": "PT", "min": 0,
                                                                 "max": {"const": 3}}),
                 "sheet.live.tracks[1].max", 37, id="TRACK-7"),
    pytest.param(lambda d: d["sheet"]["live"]["tracks"].append({"id": "pt", "label": "PT", "min": 0, "max": 3,
                                                                 "alwaysShow": True}),
                 "sheet.live.tracks[1].alwaysShow", 37, id="TRACK-7-alwaysShow"),
    pytest.param(lambda d: d["sheet"]["live"]["pools"][0].update(hideWhen={"field": "f", "in": ["x"]}),
                 "sheet.live.pools[0].hideWhen", 39, id="HIDE-8"),
    pytest.param(lambda d: d["sheet"]["live"]["pools"][0].update(hideWhen={"field": "f", "notEquals": "x"}),
                 "sheet.live.pools[0].hideWhen", 39, id="HIDE-8-notEquals"),
    pytest.param(lambda d: d["sheet"].update(derived=[{"id": "s", "label": "S", "op": "sum", "of": [
        {"listSum": {"list": "scars", "column": "n"}}]}]), "sheet.derived[0].of[0]", 39, id="REF-16"),
    pytest.param(lambda d: d["sheet"]["saves"][0].update(cap={"const": 2}), "sheet.saves[0].cap", 39,
                 id="CAP-7-save"),
    pytest.param(lambda d: d.update(party={"label": "Crew", "fields": [{"id": "heat", "label": "Heat",
                                                                         "type": "number"}],
                                           "fromMembers": [{"field": "heat", "count": True}]}),
                 "party.fromMembers", 163, id="PARTY-29"),
    pytest.param(lambda d: d.update(party={"label": "Crew", "fields": [{"id": "heat", "label": "Heat",
                                                                         "type": "number"}],
                                           "lists": [{"id": "loot", "label": "Loot", "columns": [
                                               {"id": "n", "label": "N", "type": "text"}]}]}),
                 "party.lists", 163, id="PARTY-27"),
]


@pytest.mark.parametrize(("mutate", "path", "minor"), CASES)
def test_feature_needs_its_capability_version(mutate, path, minor):
    """Spec 18.1: the version each feature needs, checked one minor version below and at the version itself."""
    assert Ruleset.from_dict(edit(package(minor), mutate)).file is not None  # the version itself is enough
    with pytest.raises(RulesetError) as e:
        Ruleset.from_dict(edit(package(minor - 1), mutate))
    found = [p for p in e.value.problems if p.path == path]
    assert [p.code for p in found] == ["capability-too-low"]
    assert f"needs Capability API 1.{minor}" in found[0].message


def test_base_package_needs_no_version_above_1_36():
    """The cases above add one feature each to this package, so it must import on its own."""
    assert Ruleset.from_dict(package(36)).file is not None
