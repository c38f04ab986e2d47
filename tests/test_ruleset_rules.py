"""Untrained (UNTR), adjust (ADJ), rests (REST), GM texts (GM, GMREF), clocks, party, combat, capability."""

from __future__ import annotations

from conftest import edit, problems
from tagengine._internal.errors import RulesetError
from tagengine._internal.ruleset import Ruleset


def test_untr_5_by_range(ember):
    d = edit(ember, lambda d: d["sheet"]["sections"][0].update(untrained={"by": -21}))
    assert ("sheet.sections[0].untrained.by", "out-of-range") in problems(d)


def test_untr_4_only_four_forms(ember):
    d = edit(ember, lambda d: d["sheet"]["skills"][0].update(untrained="never"))
    assert ("sheet.skills[0].untrained", "not-allowed") in problems(d)


def test_untr_8_harder_needs_a_target_that_can_move(ember, gravewatch, fifth):
    assert problems(ember) == []  # dice-pool, target 4 within 2..6
    d = edit(ember, lambda d: d["resolution"]["pool"]["target"].update(min=4, max=4))
    assert ("sheet.skills[2].untrained", "harder-cannot-apply") in problems(d)
    d = edit(gravewatch, lambda d: d["sheet"]["skills"][0].update(untrained="harder"))
    assert ("sheet.skills[0].untrained", "harder-cannot-apply") in problems(d)  # no target declared
    d = edit(fifth, lambda d: d["sheet"]["saves"][0].update(untrained="harder"))
    assert ("sheet.saves[0].untrained", "harder-cannot-apply") in problems(d)  # dice-sum


def test_adj_7_at_most_eight_entries(ember):
    d = edit(ember, lambda d: d["resolution"].update(adjust=[{"value": {"const": -1}}] * 9))
    assert ("resolution.adjust", "bad-count") in problems(d)


def test_adj_4_abilities_exist(ember):
    d = edit(ember, lambda d: d["resolution"]["adjust"][0].update(abilities=["might"]))
    assert ("resolution.adjust[0].abilities[0]", "unknown-ref") in problems(d)


def rest(d, i=1):
    return d["sheet"]["rests"][i]["steps"]


def test_rest_2_exactly_one_target(gravewatch):
    d = edit(gravewatch, lambda d: rest(d)[0].update(track="harm"))
    assert ("sheet.rests[1].steps[0]", "one-target") in problems(d)


def test_rest_targets_exist(gravewatch, fifth):
    d = edit(gravewatch, lambda d: rest(d)[0].update(pool="hope"))
    assert ("sheet.rests[1].steps[0].pool", "unknown-ref") in problems(d)
    d = edit(fifth, lambda d: rest(d)[1].update(poolGroup="spell_dice"))
    assert ("sheet.rests[1].steps[1].poolGroup", "unknown-ref") in problems(d)
    d = edit(fifth, lambda d: rest(d)[3].update(listPools="spells"))
    assert ("sheet.rests[1].steps[3].listPools", "unknown-ref") in problems(d)


def test_rest_3_to_or_by(gravewatch):
    d = edit(gravewatch, lambda d: rest(d)[0].update(by={"const": 1}))
    assert ("sheet.rests[1].steps[0]", "to-or-by") in problems(d)


def test_rest_5_state_steps_only_set(gravewatch):
    d = edit(gravewatch, lambda d: rest(d)[4].update(to="dim"))
    assert ("sheet.rests[1].steps[4].to", "unknown-value") in problems(d)
    d = edit(gravewatch, lambda d: (rest(d)[4].pop("to"), rest(d)[4].update(by={"const": 1})))
    assert ("sheet.rests[1].steps[4].by", "state-set-only") in problems(d)


def test_rest_4_wound_step_that_would_mark_is_a_warning(gravewatch):
    d = edit(gravewatch, lambda d: rest(d)[2].update(by={"const": 2}))
    rs = Ruleset.from_dict(d)  # WOUND-43: skipped silently at play, so the file still imports
    assert [(w.path, w.code) for w in rs.warnings] == [("sheet.rests[1].steps[2].by", "heal-only")]


def test_wound_42_rest_kind_belongs_to_the_track(gravewatch):
    d = edit(gravewatch, lambda d: rest(d, 0)[0].update(kind="burn"))
    assert ("sheet.rests[0].steps[0].kind", "unknown-kind") in problems(d)
    d = edit(gravewatch, lambda d: rest(d, 0)[1].update(kind="knock"))
    assert ("sheet.rests[0].steps[1].kind", "key-not-allowed") in problems(d)


def test_rest_7_shared_only_on_pool_group_fraction(fifth):
    d = edit(fifth, lambda d: rest(d)[0].update(shared=True))
    assert ("sheet.rests[1].steps[0].shared", "key-not-allowed") in problems(d)


def test_rest_8_fraction_of_max_range(fifth):
    d = edit(fifth, lambda d: rest(d)[1]["by"].update(fractionOfMax=1.5))
    assert ("sheet.rests[1].steps[1].by.fractionOfMax", "out-of-range") in problems(d)


def test_gmref_1_3_lengths(ember):
    d = edit(ember, lambda d: (d.update(gmReference="x" * 16001), d["gm"].update(checkGuidance="y" * 1501)))
    p = problems(d)
    assert ("gmReference", "too-long") in p
    assert ("gm.checkGuidance", "too-long") in p


def test_gmref_7_prompt_safe(ember):
    for bad in ("two\nlines", "a [tag]", "a {{macro}}", "bell\x07"):
        d = edit(ember, lambda d, bad=bad: d.update(gmReference=bad))
        assert ("gmReference", "unsafe-text") in problems(d), bad


def test_gmref_10_package_declares_schema_2_and_1_145(ember):
    d = edit(ember, lambda d: d["manifest"].update(schemaVersion=1))
    assert ("manifest.schemaVersion", "schema-too-low") in problems(d)
    d = edit(ember, lambda d: d["manifest"].update(capabilityApi={"major": 1, "minor": 144}))
    assert ("gmReference", "capability-too-low") in problems(d)


def test_gm_6_opposition_values(blades):
    d = edit(blades, lambda d: d["gm"].update(opposition="players"))
    assert ("gm.opposition", "not-allowed") in problems(d)


def test_gm_15_16_summary_columns(ember):
    d = edit(ember, lambda d: d["gm"]["sheetSummary"]["lists"][0].update(nameColumn="bulk"))
    assert ("gm.sheetSummary.lists[0].nameColumn", "bad-name-column") in problems(d)
    d = edit(ember, lambda d: d["gm"]["sheetSummary"]["lists"][0].update(columns=["bulk", "packed", "item", "bulk"]))
    assert ("gm.sheetSummary.lists[0].columns", "bad-count") in problems(d)


def test_clock_4_5_6_limits(blades):
    for clocks, path in (({"sizes": [1]}, "clocks.sizes[0]"), ({"sizes": [4, 4]}, "clocks.sizes"),
                         ({"sizes": [2, 3, 4, 5, 6, 7, 8]}, "clocks.sizes"), ({"max": 13}, "clocks.max"),
                         ({"max": 0}, "clocks.max"), ({"text": "t" * 401}, "clocks.text")):
        d = edit(blades, lambda d, c=clocks: d.update(clocks=c))
        assert path in {p for p, _ in problems(d)}, clocks


def test_clock_7_empty_object_enables_defaults(ember):
    rs = Ruleset.from_dict(ember)
    assert rs.file.clocks is not None and rs.file.clocks.sizes == [4, 6, 8] and rs.file.clocks.max == 8


def party(d):
    return d["party"]


def test_party_4_needs_a_field_or_pool(blades):
    d = edit(blades, lambda d: party(d).update(fields=[], pools=[], advancement=None, summary=None, fromMembers=[]))
    d["party"] = {k: v for k, v in d["party"].items() if v is not None}
    assert ("party", "empty-party") in problems(d)


def test_party_5_ids_unique_across_fields_and_pools(blades):
    d = edit(blades, lambda d: party(d)["pools"][0].update(id="heat"))
    assert ("party.pools[0].id", "duplicate-id") in problems(d)


def test_party_6_character_and_party_ids_may_match(blades):
    d = edit(blades, lambda d: party(d)["fields"][0].update(id="stash"))
    d["party"]["advancement"]["fields"][0] = "stash"
    d["party"]["summary"]["fields"][0] = "stash"
    assert problems(d) == []


def test_party_8_9_pool_max_reads_constant_or_party_number_field(blades):
    d = edit(blades, lambda d: party(d)["pools"][0].update(max={"field": "stash"}))
    assert ("party.pools[0].max.field", "unknown-ref") in problems(d)
    d = edit(blades, lambda d: party(d)["pools"][0].update(max={"abilityScore": "insight"}))
    assert ("party.pools[0].max.abilityScore", "party-ref") in problems(d)


def test_party_10_hide_when_names_party_fields(blades):
    d = edit(blades, lambda d: party(d)["pools"][1]["hideWhen"].update(field="playbook"))
    assert ("party.pools[1].hideWhen.field", "unknown-ref") in problems(d)


def test_party_11_advancement_fields(blades):
    d = edit(blades, lambda d: party(d)["advancement"]["fields"].append("lair"))
    assert ("party.advancement.fields[4]", "not-advanceable") in problems(d)


def test_party_12_texts(blades):
    d = edit(blades, lambda d: party(d).update(text="c" * 401))
    assert ("party.text", "too-long") in problems(d)


def test_party_13_summary_has_no_derived(blades):
    d = edit(blades, lambda d: party(d)["summary"].update(derived=["x"]))
    assert ("party.summary.derived", "must-be-empty") in problems(d)


def test_party_7_no_sections_or_abilities(blades):
    d = edit(blades, lambda d: party(d).update(abilities=[]))
    assert ("party.abilities", "unknown-key") in problems(d)


def test_party_29_30_from_members(blades):
    d = edit(blades, lambda d: party(d)["fromMembers"].append({"field": "heat", "count": True, "sum": "stash"}))
    assert ("party.fromMembers[2]", "one-source") in problems(d)
    d = edit(blades, lambda d: party(d)["fromMembers"][1].update(sum="vice"))
    assert ("party.fromMembers[1].sum", "not-numeric") in problems(d)
    d = edit(blades, lambda d: party(d)["fromMembers"].extend([{"field": "heat", "count": True}] * 7))
    assert ("party.fromMembers", "bad-count") in problems(d)


def test_party_27_lists_need_1_163(blades):
    d = edit(blades, lambda d: d["manifest"].update(capabilityApi={"major": 1, "minor": 162}))
    p = problems(d)
    for path in ("party.lists", "party.builder", "party.fromMembers"):  # PARTY-28: the builder needs 1.163 too
        assert (path, "capability-too-low") in p


def test_wound_2_damage_kinds_refused_with_pool_health(fifth):
    d = edit(fifth, lambda d: d["combat"].update(damageKinds={"marks": 1, "map": {}}))
    assert ("combat.damageKinds", "damage-kinds-with-pool") in problems(d)


def test_wound_32_33_health_track_and_kind_map(gravewatch):
    d = edit(gravewatch, lambda d: d["combat"]["damageKinds"]["map"].update(fire="burn"))
    assert ("combat.damageKinds.map.fire", "unknown-kind") in problems(d)


def test_dec_22_each_shortfall_names_feature_place_and_version(gravewatch):
    d = edit(gravewatch, lambda d: d["manifest"].update(capabilityApi={"major": 1, "minor": 38}))
    try:
        Ruleset.from_dict(d)
        raise AssertionError
    except RulesetError as e:
        low = {p.path: p.message for p in e.problems if p.code == "capability-too-low"}
    assert "needs Capability API 1.39" in low["sheet.skills[0].cap"]
    assert "needs Capability API 1.40" in low["sheet.live.tracks[0].extra"]
    assert "needs Capability API 1.42" in low["sheet.live.states"]
    assert "needs Capability API 1.145" in low["gmReference"]
    assert all("declares 1.38" in m for m in low.values())


def test_sheet_20_derived_count_ladder():
    base = {"manifest": {"capabilityApi": {"major": 1, "minor": 84}}, "sheet": {}}
    many = [{"id": f"d{i}", "label": f"D{i}", "op": "sum", "of": [{"const": 1}]} for i in range(121)]
    d = edit(base, lambda d: d["sheet"].update(derived=many))
    assert ("sheet.derived", "capability-too-low") in problems(d)  # more than 120 needs 1.88
    # SHEET-21: more than 240 needs 1.111; SHEET-22: more than 400 needs 1.729
    for n, need in ((60, None), (61, "1.84"), (121, "1.88"), (241, "1.111"), (401, "1.729")):
        derived = [{"id": f"d{i}", "label": f"D{i}", "op": "sum", "of": [{"const": 1}]} for i in range(n)]
        assert Ruleset.from_dict({"sheet": {"derived": derived}}).requires_text == need, n


def test_sheet_13_16_suggestions_and_pick(ember):
    d = edit(ember, lambda d: d["sheet"]["fields"][2].update(suggestions=[f"w{i}" for i in range(41)]))
    assert ("sheet.fields[2].suggestions", "bad-count") in problems(d)
    d = edit(ember, lambda d: d["sheet"]["fields"][1].update(suggestions=["a"]))
    assert ("sheet.fields[1].suggestions", "key-not-allowed") in problems(d)  # D-2: text fields only
    d = edit(ember, lambda d: d["manifest"].update(capabilityApi={"major": 1, "minor": 796}))
    assert ("sheet.fields[2].pick", "capability-too-low") in problems(d)


def test_sheet_29_30_list_columns(ember):
    cols = [{"id": f"c{i}", "label": f"C{i}", "type": "number"} for i in range(25)]
    d = edit(ember, lambda d: d["sheet"]["lists"][0].update(columns=cols))
    assert ("sheet.lists[0].columns", "bad-count") in problems(d)
    d = edit(ember, lambda d: (d["sheet"]["lists"][0]["columns"].extend(cols[:10]),
                               d["manifest"].update(capabilityApi={"major": 1, "minor": 164})))
    assert ("sheet.lists[0].columns", "capability-too-low") in problems(d)


def test_sheet_33_roll_sides_column(fifth):
    d = edit(fifth, lambda d: d["sheet"]["lists"][0]["columns"][3]["roll"].update(sides={"column": "name"}))
    assert ("sheet.lists[0].columns[3].roll.sides.column", "bad-sides") in problems(d)


def test_dec_25_labels_are_quotable(ember):
    d = edit(ember, lambda d: d["sheet"]["live"]["pools"][0].update(label='Gr"it'))
    assert ("sheet.live.pools[0].label", "unsafe-text") in problems(d)


def test_sheet_2_sections_exist(ember):
    # SHEET-3: a skill names its section with `section` too, and the section must exist
    d = edit(ember, lambda d: d["sheet"]["skills"][0].update(section="mining"))
    assert ("sheet.skills[0].section", "unknown-section") in problems(d)


def test_every_problem_in_one_run(gravewatch):
    d = edit(gravewatch, lambda d: (
        d["sheet"]["live"]["tracks"][0].update(max=5),
        d["resolution"].update(penaltyFrom="strainx"),
        d["sheet"]["live"]["states"][0].update(default="dim"),
        d["clocks"] if "clocks" in d else d.update(clocks={"max": 20})))
    p = problems(d)
    for want in (("sheet.live.tracks[0].max", "wound-max-mismatch"), ("resolution.penaltyFrom", "unknown-ref"),
                 ("sheet.live.states[0].default", "unknown-value"), ("clocks.max", "out-of-range")):
        assert want in p


def test_capability_versions_per_feature():
    """REF-16, CAP-7, HIDE-8, ADJ-12, SHEET-34, REST-7, TRACK-7, GM-18: each feature names its version."""
    base = {"manifest": {"capabilityApi": {"major": 1, "minor": 36}}, "sheet": {
        "abilities": [{"id": "a", "label": "A"}],
        "skills": [{"id": "s", "label": "S", "ability": "a"}],
        "fields": [{"id": "f", "label": "F", "type": "number"}],
        "lists": [{"id": "l", "label": "L", "columns": [{"id": "n", "label": "N", "type": "number"},
                                                        {"id": "t", "label": "T", "type": "text"}]}],
        "live": {"pools": [{"id": "p", "label": "P", "max": {"const": 3}, "group": "g"},
                           {"id": "q", "label": "Q", "max": {"const": 3}, "group": "g"}],
                 "tracks": [{"id": "t", "label": "T", "max": 3}]}}}
    cases = [
        (lambda d: d["sheet"].update(derived=[{"id": "x", "label": "X", "op": "sum", "of": [{"livePool": "p"}]}]),
         "sheet.derived[0].of[0]", "1.39"),
        (lambda d: d["sheet"]["skills"][0].update(cap={"const": 2}), "sheet.skills[0].cap", "1.39"),
        (lambda d: d["sheet"]["live"]["pools"][0].update(hideWhen={"field": "f", "notEquals": 1}),
         "sheet.live.pools[0].hideWhen", "1.39"),
        (lambda d: d.update(resolution={"type": "dice-sum", "adjust": [{"value": {"const": 1}}]}),
         "resolution.adjust", "1.38"),
        (lambda d: d["sheet"]["lists"][0]["columns"][0].update(roll={"count": 1, "sides": 6}),
         "sheet.lists[0].columns[0].roll", "1.85"),
        (lambda d: d["sheet"].update(rests=[{"id": "r", "label": "R", "steps": [
            {"poolGroup": "g", "by": {"fractionOfMax": 0.5}, "shared": True}]}]), "sheet.rests[0].steps[0].shared",
         "1.77"),
        (lambda d: d["sheet"]["live"]["tracks"][0].update(alwaysShow=True), "sheet.live.tracks[0].alwaysShow", "1.37"),
        (lambda d: d.update(gm={"sheetSummary": {"lists": [{"list": "l", "nameColumn": "t"}]}}),
         "gm.sheetSummary.lists[0]", "1.37"),
    ]
    assert problems(base) == []
    for mutate, path, version in cases:
        d = edit(base, mutate)
        try:
            Ruleset.from_dict(d)
            raise AssertionError(path)
        except RulesetError as e:
            (p,) = [p for p in e.problems if p.code == "capability-too-low"]
        assert p.path == path and f"needs Capability API {version}" in p.message


def test_ref_8_live_pool_cannot_read_a_row_pool(fifth):
    d = edit(fifth, lambda d: d["sheet"]["derived"].append(
        {"id": "uses", "label": "U", "op": "sum", "of": [{"livePool": "features"}]}))
    assert ("sheet.derived[11].of[0].livePool", "unknown-ref") in problems(d)
