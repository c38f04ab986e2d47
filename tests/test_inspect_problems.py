"""Each problem a ruleset's inspection reports, whole: its path, code, message and the value it names (issue 29,
docs/mutation.md: the codes were tested, the messages and values often not). Each case breaks a sample ruleset
in one to a few places, named by the rules they break; `tests/golden/inspect-problems.json` holds what each must
report, problems and warnings. A case may add what is allowed at a bound beside a mistake (a fraction of 1, a
target of 1..6, an untrained `by` of 20): the golden then shows that nothing is reported for it.

Regenerate after an intended change with `UPDATE_GOLDEN=1 ./dev test tests/test_inspect_problems.py`, then read
the diff."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest

from conftest import GOLDEN, sample_dict
from tagengine import Ruleset
from tagengine._internal.errors import RulesetError

EXPECTED = GOLDEN / "inspect-problems.json"


def _derived(entry: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["sheet"].setdefault("derived", []).append(entry)


def _track(i: int, **changes: Any) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        t = d["sheet"]["live"]["tracks"][i]
        for k, v in changes.items():
            if v is None:
                t.pop(k, None)
            else:
                t[k] = v
    return edit


def _rest_on_luck(d: dict[str, Any]) -> None:
    d["sheet"]["rests"][0]["steps"][1]["track"] = "luck"


def _box_penalty_above_0(d: dict[str, Any]) -> None:
    d["sheet"]["live"]["tracks"][1]["boxes"]["penalty"]["table"] = [[0, -1], [1, 2]]


def _cap_reads_its_reader(d: dict[str, Any]) -> None:
    d["sheet"]["derived"].append({"id": "x", "label": "X", "op": "sum", "of": [{"skillMod": "dig"}]})
    d["sheet"]["skills"][0]["cap"] = {"derived": "x"}


def _both(*edits: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        for e in edits:
            e(d)
    return edit


def _rest_step(rest: int, step: int, **changes: Any) -> Callable[[dict[str, Any]], None]:
    def edit(d: dict[str, Any]) -> None:
        st = d["sheet"]["rests"][rest]["steps"][step]
        for k, v in changes.items():
            if v is None:
                st.pop(k, None)
            else:
                st[k] = v
    return edit


def _summary(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["gm"]["sheetSummary"].update(changes)


def _number_field(**keys: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["sheet"]["fields"].append({"id": "n", "label": "N", "type": "number", **keys})


def _more_members(d: dict[str, Any]) -> None:
    d["party"]["fromMembers"] = [{"field": "size", "count": True}] * 9


STEP = {"id": "s", "label": "S", "op": "stepTable", "from": {"field": "level"}}
ENUM = {"id": "e", "label": "E", "op": "enumTable", "default": 0}
KIND = {"id": "k", "label": "K", "severity": 0}

CASES: dict[str, tuple[str, Callable[[dict[str, Any]], None]]] = {
    "SHEET-26 an empty step table": ("ember-roads", _derived({**STEP, "table": []})),
    "SHEET-26 a step table whose thresholds fall": ("ember-roads", _derived({**STEP, "table": [[2, 1], [1, 2]]})),
    "WOUND-45 a box penalty above 0": ("gravewatch", _box_penalty_above_0),
    "REST-2 a rest step naming an unknown track": ("ember-roads", _rest_on_luck),
    "CAP-5 a derived value read by the cap of the skill it reads": ("ember-roads", _cap_reads_its_reader),
    "SHEET-12 a number field's default that is a flag": ("ember-roads", _number_field(default=True)),
    "SHEET-12 maxLength on a number field whose min is its max": ("ember-roads", _number_field(
        min=3, max=3, default=3, maxLength=5)),
    "SHEET-12 text fields of maxLength 0 and 1, labels for no value, an enum's keys on text": ("ember-roads", _both(
        lambda d: d["sheet"]["fields"].extend([
            {"id": "t0", "label": "T0", "type": "text", "maxLength": 0},
            {"id": "t1", "label": "T1", "type": "text", "maxLength": 1, "values": ["a"]},
            {"id": "e", "label": "E", "type": "enum", "values": ["a"], "default": "a", "valueLabels": {"b": "B"}}]))),
    "SHEET-13 suggestions: one is enough, 41 too many, 101 characters too long; a pick without them": (
        "ember-roads", lambda d: d["sheet"]["fields"].extend([
            {"id": "t1", "label": "T1", "type": "text", "suggestions": ["one"]},
            {"id": "t41", "label": "T41", "type": "text", "suggestions": [f"w{n}" for n in range(41)]},
            {"id": "tl", "label": "TL", "type": "text", "suggestions": ["x" * 100, "y" * 101]},
            {"id": "tp", "label": "TP", "type": "text", "pick": {"const": 1}}])),
    "REF-1 a value reference to an unknown field": ("ember-roads", _derived({
        "id": "r", "label": "R", "op": "sum", "of": [{"field": "colour"}]})),
    "REF-1 references to a text field, an unknown skill and save, a list sum of an unknown list": (
        "ember-roads", _derived({"id": "r", "label": "R", "op": "sum", "of": [
            {"field": "roads"}, {"skillMod": "swim"}, {"saveMod": "luck"},
            {"listSum": {"list": "cargo", "column": "bulk"}}]})),
    "REF-2 REF-9 a list sum of an unknown and of a text column, an unknown live track, a plain track's penalty": (
        "ember-roads", _derived({"id": "r", "label": "R", "op": "sum", "of": [
            {"listSum": {"list": "gear", "column": "weight"}}, {"listSum": {"list": "gear", "column": "item"}},
            {"liveTrack": "luck"}, {"liveTrack": "weariness", "read": "penalty"}]})),
    "HIDE-2 HIDE-3 a hiding rule of no values, and one no value can match": ("ember-roads", lambda d: d["sheet"][
        "fields"].extend([{"id": "h1", "label": "H1", "type": "text", "hideWhen": {"field": "calling", "in": []}},
                          {"id": "h2", "label": "H2", "type": "text",
                           "hideWhen": {"field": "calling", "in": ["scout", "sailor"]}}])),
    "STATE-2 STATE-3 a state of one value, a label for no value, a label with brackets": ("ember-roads", lambda d: d[
        "sheet"]["live"]["states"].extend([
            {"id": "s1", "label": "S1", "values": ["a"], "default": "a"},
            {"id": "s2", "label": "S2", "values": ["a", "b"], "default": "a", "valueLabels": {"c": "C", "b": "[B]"}}])),
    "SHEET-23 SHEET-25 operands: a sum of none, a multiply of one, a step table without `from`, a sum with one": (
        "ember-roads", lambda d: d["sheet"]["derived"].extend([
            {"id": "a", "label": "A", "op": "sum", "of": []},
            {"id": "b", "label": "B", "op": "multiply", "of": [{"const": 2}]},
            {"id": "c", "label": "C", "op": "stepTable", "table": [[1, 1]]},
            {"id": "e", "label": "E", "op": "sum", "of": [{"const": 1}], "from": {"field": "level"}}])),
    "DEC-8 ids used twice: a skill, a live pool, a list's column": ("ember-roads", _both(
        lambda d: d["sheet"]["skills"].append({**d["sheet"]["skills"][0]}),
        lambda d: d["sheet"]["live"]["pools"].append({**d["sheet"]["live"]["pools"][0]}),
        lambda d: d["sheet"]["lists"][0]["columns"].append({**d["sheet"]["lists"][0]["columns"][1]}))),
    "STATE-7 a state's default that is no value; live text of 0 characters": ("ember-roads", _both(
        lambda d: d["sheet"]["live"]["states"][0].update(default="asleep"),
        lambda d: d["sheet"]["live"].setdefault("text", []).append({"id": "t", "label": "T", "maxLength": 0}))),
    "SHEET-2 a skill in a section the sheet does not declare": ("ember-roads", lambda d: d["sheet"]["skills"][0].update(
        section="sea")),
    "PARTY-11 PARTY-27 an enum field advanced, a builder on an unknown list, a list twice": ("blades-like", _both(
        lambda d: d["party"]["advancement"]["fields"].append("lair"),
        lambda d: d["party"]["builder"]["steps"][0].update(list="gangs"),
        lambda d: d["party"]["lists"].append({**d["party"]["lists"][0]}))),
    "PARTY-27 thirteen party lists": ("blades-like", lambda d: d["party"]["lists"].extend(
        {**d["party"]["lists"][0], "id": f"l{n}"} for n in range(12))),
    "PARTY-4 a party sheet with no field and no pool": ("blades-like", lambda d: d["party"].update(
        fields=[], pools=[], advancement=None, fromMembers=[])),
    "SHEET-8 CK-14 abilities out of range, a skill of an unknown ability, a die of 1 side, an untrained by of 20":
        ("gravewatch", _both(
            lambda d: d["sheet"]["abilities"][0].update(min=4, max=3, default=None),
            lambda d: d["sheet"]["abilities"][1].update(default=9),
            lambda d: d["sheet"]["skills"][0].update(ability="luck"),
            lambda d: d["sheet"]["skills"][1].update(untrained={"by": 20}),
            lambda d: d["resolution"].update(die=1))),
    "PEN-3 pool settings on dice-sum, a target outside its range": ("fifth-like", lambda d: d["resolution"].update(
        pool={"min": 1, "target": {"value": 7, "min": 2, "max": 6}})),
    "CK-14 a target off a d2": ("gravewatch", lambda d: d["resolution"].update(
        die=2, pool={"min": 1, "target": {"value": 2, "min": 1, "max": 3}})),
    "CK-14 a target of 1..6 on a d6 is fine (beside a label of 80 characters with a bracket)": ("gravewatch", _both(
        lambda d: d["resolution"].update(pool={"min": 1, "target": {"value": 1, "min": 1, "max": 6}}),
        lambda d: d["sheet"]["live"]["states"][0]["valueLabels"].update(lit="[" + "x" * 79, out="[" + "y" * 80))),
    "PEN-5 a penalty read from a plain track": ("ember-roads", lambda d: d["resolution"].update(
        penaltyFrom="weariness")),
    "WOUND-32 health naming a pool and a track": ("gravewatch", lambda d: d["combat"].update(
        health={"track": "harm", "pool": "resolve"})),
    "WOUND-32 health naming an unknown pool, with damage kinds": ("gravewatch", lambda d: d["combat"].update(
        health={"pool": "blood"})),
    "WOUND-32 health on a plain track, with damage kinds": ("ember-roads", lambda d: d.update(combat={
        "health": {"track": "weariness"}, "damageKinds": {"marks": 1, "map": {"blunt": "knock"}}})),
    "SHEET-29 SHEET-31 SHEET-33 a list: a roll of a text column's sides, a row pool of text uses, 25 columns": (
        "fifth-like", _both(
            lambda d: d["sheet"]["lists"][0]["columns"][3]["roll"].update(sides={"column": "name"}),
            lambda d: d["sheet"]["lists"][0]["pools"].update(maxColumn="name"),
            lambda d: d["sheet"]["lists"][0]["columns"].extend(
                {"id": f"c{n}", "label": f"C{n}", "type": "number", "maxLength": 3} for n in range(21)),
            lambda d: d["sheet"]["lists"][0].update(hideWhen={"field": "casting", "equals": "often"}))),
    "WOUND-33 WOUND-35 a damage type mapped to no kind of the track, per-point damage on a track of levels": (
        "gravewatch", lambda d: d["combat"].update(damage="per-point", damageKinds={"marks": 1, "map": {
            "blunt": "knock", "fire": "burn"}})),
    "CLOCK-4 CLOCK-5 CLOCK-6 clocks of 13 segments, twice 4, at most 1, a text too long": ("blades-like", lambda d: d[
        "clocks"].update(sizes=[4, 4, 13], max=1, text="x" * 401)),
    "CAP-4 CAP-5 CAP-6 a cap reading a modifier, and one reading it through two derived values; a value read below":
        ("ember-roads", _both(
            lambda d: d["sheet"]["derived"].extend([
                {"id": "a", "label": "A", "op": "sum", "of": [{"derived": "z"}]},
                {"id": "m", "label": "M", "op": "sum", "of": [{"skillMod": "haul"}]},
                {"id": "n", "label": "N", "op": "sum", "of": [{"derived": "m"}]},
                {"id": "z", "label": "Z", "op": "sum", "of": [{"const": 1}]}]),
            lambda d: d["sheet"]["skills"][0].update(cap={"skillMod": "listen"}),
            lambda d: d["sheet"]["skills"][3].update(cap={"derived": "n"}))),
    "REF-14 a pool's maximum read through the second of two skills, the one capped by a live pool": ("ember-roads",
        _both(lambda d: d["sheet"]["derived"].insert(0, {"id": "x", "label": "X", "op": "sum", "of": [
            {"skillMod": "haul"}, {"skillMod": "dig"}]}),
            lambda d: d["sheet"]["skills"][0].update(cap={"livePool": "grit"}),
            lambda d: d["sheet"]["live"]["pools"][0].update(max={"derived": "x"}))),
    "GM-13 a summary naming an unknown field and derived value": ("fifth-like", _summary(
        fields=["class", "colour"], derived=["spell_dc", "luck"])),
    "GM-16 a summary naming an unknown list": ("fifth-like", _summary(lists=[{"list": "spells"}])),
    "GM-16 a summary naming an unknown column, its names in an enum column": ("fifth-like", _summary(
        lists=[{"list": "features", "nameColumn": "die", "columns": ["power", "weight"]}])),
    "STATE-16 a rest step naming an unknown state": ("gravewatch", _rest_step(1, 4, state="mood")),
    "REST-3 a fraction of the max above 1": ("fifth-like", _rest_step(
        1, 1, by={"fractionOfMax": 1.5, "round": "down", "min": -1})),
    "REST-3 a whole max restored, at least 0, beside a fraction on a track": ("fifth-like", _both(
        _rest_step(1, 1, by={"fractionOfMax": 1, "round": "down", "min": 0}),
        _rest_step(1, 4, by={"fractionOfMax": 0.5, "round": "down"}))),
    "WOUND-43 rest steps that would mark a wound track": ("gravewatch", _both(
        _rest_step(1, 2, by={"const": 2}), _rest_step(0, 0, to="max"))),
    "WOUND-40 a rest step reducing a track to fewer than 0 marks": ("gravewatch", _rest_step(1, 3, to=-1)),
    "ENUM-2 an enum table reading a constant": ("ember-roads", _derived({
        **ENUM, "from": {"const": 1}, "table": {"scout": 1}})),
    "ENUM-2 an enum table reading an unknown field": ("ember-roads", _derived({
        **ENUM, "from": {"field": "colour"}, "table": {"red": 1}})),
    "ENUM-2 an enum table reading a number field": ("ember-roads", _derived({
        **ENUM, "from": {"field": "level"}, "table": {"1": 1}})),
    "ENUM-2 an enum table reading an unknown live state": ("ember-roads", _derived({
        **ENUM, "from": {"liveState": "mood"}, "table": {"calm": 1}})),
    "ENUM-1 an enum table without a table": ("ember-roads", _derived({**ENUM, "from": {"liveState": "stance"}})),
    "ENUM-3 an enum table of no rows": ("ember-roads", _derived({
        **ENUM, "from": {"liveState": "stance"}, "table": {}})),
    "PARTY-29 nine entries read from the members": ("blades-like", _more_members),
    "TRACK-3 a plain track whose min is above its max": ("ember-roads", _track(0, min=5, max=2, default=None)),
    "TRACK-3 a plain track whose default is below its min": ("ember-roads", _track(0, min=2, default=1)),
    "WOUND-10 a wound track with levels and boxes": ("gravewatch", _track(0, boxes={})),
    "WOUND-6 a wound track of seven kinds": ("gravewatch", _track(
        0, kinds=[{**KIND, "id": k, "severity": n} for n, k in enumerate(["knock", "tear", "a", "b", "c", "d", "e"])])),
    "HIDE-7 a hidden wound track": ("gravewatch", _track(0, hideWhen={"field": "watch", "equals": "dawn"})),
    "WOUND-44 a boxed track of 65 boxes": ("gravewatch", _track(1, max=65)),
    "WOUND-55 extra levels on a track of boxes": ("gravewatch", _track(
        1, extra={"list": "scars", "countColumn": "levels", "penaltyColumn": "penalty"})),
    "WOUND-56 extra levels counted by a text column": ("gravewatch", _track(
        0, extra={"list": "scars", "countColumn": "name", "penaltyColumn": "penalty"})),
}


def problems_of(name: str, edit: Callable[[dict[str, Any]], None]) -> dict[str, list[list[Any]]]:
    data = sample_dict(name)
    edit(data)
    try:
        rs = Ruleset.from_dict(data)
    except RulesetError as e:
        return {"problems": [[p.path, p.code, p.message, p.value] for p in e.problems]}
    return {"warnings": [[p.path, p.code, p.message, p.value] for p in rs.warnings]}


def test_golden_inspection_problems_name_their_path_code_message_and_value():
    got = {case: problems_of(name, edit) for case, (name, edit) in CASES.items()}
    if os.environ.get("UPDATE_GOLDEN"):
        EXPECTED.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert got == json.loads(EXPECTED.read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", list(CASES))
def test_each_case_reports_something(case):
    """A case that reports nothing tests nothing."""
    name, edit = CASES[case]
    found = problems_of(name, edit)
    assert found.get("problems") or found.get("warnings"), case
