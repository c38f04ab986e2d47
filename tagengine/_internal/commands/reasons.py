"""The one table of refusal reasons (DEC-20). Nothing else may be used as a `reason`."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

COMMAND_LIMIT = 40  # DEC-6, CLOCK-22: commands applied per reply; later ones are refused `command-limit`

# read-only: `tagengine.REASONS` is this table, and nothing may add a reason to it at run time
REASONS: Mapping[str, tuple[str, str]] = MappingProxyType({
    # any tag
    "malformed": ("any tag", "opens like a tag but does not parse (DEC-2, DEC-3)"),
    "unknown-attribute": ("any tag", "an attribute this command does not take (DEC-7)"),
    "duplicate-attribute": ("any tag", "the same attribute twice (DEC-7)"),
    "missing-attribute": ("any tag", "a required attribute is missing (DEC-7)"),
    "one-action": ("any tag", "a clock tag asks for no action or several (CLOCK-17, DEC-7)"),
    "command-limit": ("any tag", f"more than {COMMAND_LIMIT} commands in one reply (DEC-6, CLOCK-22)"),
    "ambiguous": ("any tag", "a name matches two things (DEC-8)"),
    "invalid-amount": ("any tag", "a number that is not a whole number with an optional sign (DEC-9)"),
    "invalid-value": ("any tag", "a value the target cannot take (DEC-9, DEC-15)"),
    "bad-text": ("any tag", "a value that is not valid UTF-8 text, so no state could save it (H-3)"),
    # clocks
    "clocks-disabled": ("clocks", "the ruleset has no `clocks` (CLOCK-2)"),
    "bad-name": ("clocks", "a clock name that breaks CLOCK-16"),
    "bad-size": ("clocks", "a size not in `clocks.sizes` (CLOCK-11)"),
    "clock-exists": ("clocks", "a clock with that name exists, compared case-insensitively (CLOCK-11)"),
    "clock-limit": ("clocks", "`clocks.max` clocks are kept already (CLOCK-11)"),
    "unknown-clock": ("clocks", "no clock has that name (CLOCK-21)"),
    # sheets
    "unknown-op": ("sheets", "an `op` the engine does not know"),
    "unsupported-op": ("sheets", "an op this sheet does not allow (DEC-13)"),
    "unknown-character": ("sheets", "`who` names no character (DEC-14)"),
    "unknown-sheet": ("sheets", "`sheet` names no sheet (DEC-14, PARTY-19)"),
    "unknown-pool": ("sheets", "no such pool (DEC-14)"),
    "unknown-track": ("sheets", "no such track (DEC-14)"),
    "unknown-kind": ("sheets", "no such damage kind on the track (DEC-14)"),
    "unknown-state": ("sheets", "no such live state (STATE-12)"),
    "unknown-value": ("sheets", "the state has no such value (STATE-12)"),
    "unknown-condition": ("sheets", "no such condition (DEC-14)"),
    "unknown-field": ("sheets", "no such field (DEC-14)"),
    "unknown-rest": ("sheets", "no such rest (DEC-14)"),
    "hidden": ("sheets", "the target is hidden on this sheet (DEC-14, STATE-10)"),
    "insufficient": ("sheets", "fewer points remain than the spend asks (DEC-5 table, PARTY-19)"),
    "wound-track": ("sheets", "the plain `track` command on a wound track (WOUND-30)"),
    "not-wound-track": ("sheets", "`kind` on a plain track (DEC-16)"),
    "missing-kind": ("sheets", "marking a wound track needs `kind` (DEC-16)"),
    "bad-box": ("sheets", "`box` outside the track (DEC-16)"),
    "track-full": ("sheets", "no free box on a track with `onFull: \"refuse\"` (WOUND-52, WOUND-53)"),
    "unknown-damage-type": ("sheets", "a hit's `type` names no damage type of `combat`, or none the health track's "
                            "map gives a kind (CB-2)"),
    "not-advanceable": ("sheets", "a party field not in `advancement.fields` (DEC-15)"),
    # edits (a player's, written by the engine)
    "unverified-edit": ("edits", "an edit receipt whose `mac` does not verify here: not written by the engine for "
                                 "this point of the chat (docs/decisions.md ED-8)"),
    "invalid-edit": ("edits", "an edit receipt whose changes no longer fit the sheet (ED-9)"),
    # checks
    "untrained": ("checks", "the character is untrained and the rule is `refuse` (UNTR-9)"),
    "unknown-skill": ("checks", "no such skill (docs/decisions.md CK-8)"),
    "unknown-ability": ("checks", "no such ability, in `ability=` or `with=` (CK-8)"),
    "unknown-save": ("checks", "no such save (CK-8)"),
    "too-many-dice": ("checks", "the sheet gives the check more than 100 dice to roll (CK-13)"),
    "no-difficulty": ("checks", "`dc` outside dice-sum, or `difficulty` where the target per die cannot move (CK-5)"),
})
