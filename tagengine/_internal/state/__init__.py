"""The game state: the model (immutable all the way down), reading a file without trusting it, writing it.

values.py   clocks, wound marks, live values, freeze()      defaults.py  blank cards, character names
model.py    GameState                                       read.py      the lenient reader (warnings)
write.py    the JSON document                               format.py    the file format and its schema
"""

from .defaults import default_card, default_party, default_value, name_problems
from .model import GameState, from_json
from .read import Reader, StateParts
from .values import (
    COUNT_MAX,
    FORMAT,
    NO_LIVE,
    PARTY,
    Clock,
    Dice,
    LiveValues,
    WoundMarks,
    empty_map,
    freeze,
    thaw,
    updated,
)
from .write import clocks_json, dice_json, live_json, state_json

__all__ = [
    "COUNT_MAX",
    "FORMAT",
    "NO_LIVE",
    "PARTY",
    "Clock",
    "Dice",
    "GameState",
    "LiveValues",
    "Reader",
    "StateParts",
    "WoundMarks",
    "clocks_json",
    "default_card",
    "default_party",
    "default_value",
    "dice_json",
    "empty_map",
    "freeze",
    "from_json",
    "live_json",
    "name_problems",
    "state_json",
    "thaw",
    "updated",
]
