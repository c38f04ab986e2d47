"""The mixed corpus (English, German, Japanese, code) on which o200k_base's error as an estimate is measured
against every exact tokenizer available offline, and the margins chosen from it (issue 15, K-7, K-16).
`benchmarks/prompt.py` prints the errors and margins; `tests/test_family_margins.py` checks the property the
margins exist for: for each text, o200k's count times (1 + the family's margin) is at least the exact count."""

from __future__ import annotations

import math
from collections.abc import Iterator

from tagengine._internal.prompt.registry import MODEL_FAMILIES, ModelFamily, package_file, shipped_tokenizer
from tagengine._internal.prompt.tokens import TiktokenTokenizer, Tokenizer

SAFETY = 1.25  # the chosen margin is the worst single text's under-count times this, rounded up to a whole %

CORPUS = {
    "English": [
        "The wardens judge the dark by lantern light before each watch and count every grave twice. When the "
        "fog comes in from the marsh, Mira spends a point of grit to keep her footing on the wet stones.",
        "Bram checks the north gate, finds the lock broken, and marks two boxes of strain. The clock named "
        "Alarm ticks forward; three more ticks and the whole village wakes.",
        "Roll two dice for a hard test, keep the highest, and on a six the lantern oil does not run out.",
    ],
    "German": [
        "Die Wächter beurteilen die Dunkelheit im Schein der Laterne und zählen jedes Grab zweimal, bevor die "
        "Nachtwache beginnt. Wenn der Nebel aus dem Moor aufsteigt, verbraucht Mira einen Punkt Zähigkeit.",
        "Bram überprüft das Nordtor, findet das Schloss aufgebrochen und markiert zwei Kästchen Anspannung. "
        "Die Uhr namens Alarm rückt vor; noch drei Schritte, und das ganze Dorf erwacht.",
        "Würfle zwei Würfel für eine schwierige Probe, behalte den höchsten; bei einer Sechs geht das "
        "Lampenöl nicht aus.",
    ],
    "Japanese": [
        "番人たちは見張りの前にランタンの明かりで闇を見定め、すべての墓を二度数える。沼から霧が押し寄せると、"
        "ミラは濡れた石の上で足場を保つために根性を一点使う。",
        "ブラムは北門を確かめ、錠が壊れているのを見つけて、緊張の欄を二つ塗りつぶす。警報という名の時計が進み、"
        "あと三つ進めば村じゅうが目を覚ます。",
        "難しい判定では二つのダイスを振り、高いほうを残す。六が出ればランタンの油は尽きない。",
    ],
    "code": [
        "def spend(state, who, pool, amount=1):\n    live = state.characters[who]\n    if live[pool] < amount:\n"
        "        return Refused(reason=\"not-enough\")\n"
        "    return Ok(state.with_pool(who, pool, live[pool] - amount))\n",
        "[sheet: who=\"Mira\" op=\"spend\" pool=\"grit\" amount=\"1\"] [clock: name=\"Alarm\" tick=\"2\"]\n"
        "{\"role\": \"assistant\", \"content\": \"The door creaks.\", \"swipes\": [0, 1, 2]}",
        "for (let i = 0; i < marks.length; i++) { if (marks[i] > severity) { total += marks[i] * 2; } }",
    ],
}

# Added for the per-family margins (K-16): longer and harder texts in each language, chat-shaped text.
CORPUS["English"] += [
    "\"Hold the line!\" shouted the captain, as the 3rd company's shields locked together at 11:45 p.m.; "
    "nobody noticed the well-worn map (scale 1:25,000) slipping from her belt.",
    "Mira: I light the lantern and step inside. GM: The air smells of wet iron; something skitters away.",
]
CORPUS["German"] += [
    "Donaudampfschifffahrtsgesellschaftskapitän Bräuer überprüfte die Kraftfahrzeughaftpflichtversicherung, "
    "während draußen die Straßenbahn quietschte und die Glühwürmchen über den Bächen tanzten.",
    "„Halt!“, rief die Hauptfrau. „Wer nähert sich dem Tor um Mitternacht?“ – Niemand antwortete; nur "
    "das Knarren der Türangeln und ein leises Flüstern, übertönt vom Regen.",
]
CORPUS["Japanese"] += [
    "「止まれ！」と隊長が叫んだ。午後十一時四十五分、第三中隊の盾が噛み合い、誰も彼女の帯から古い地図が"
    "滑り落ちたことに気づかなかった。",
    "カタカナ語のテスト：ランタン、ダンジョン、ゴブリン、クエスト。ひらがなだけのぶん：よるのみはりはつらい。",
]
CORPUS["code"] += [
    "async def relay(stream):\n    async for chunk in stream:\n        if chunk.get(\"choices\"):\n"
    "            yield chunk[\"choices\"][0][\"delta\"].get(\"content\", \"\")\n",
    "SELECT name, SUM(amount) AS spent FROM receipts WHERE result = 'ok' GROUP BY name ORDER BY spent DESC;",
]


def texts() -> list[str]:
    return [t for group in CORPUS.values() for t in group]


def under_count(tok: Tokenizer, text: str, o200k: Tokenizer | None = None) -> float:
    """exact / o200k - 1 for one text: how much more the real tokenizer counts (negative: fewer)."""
    est = len((o200k or TiktokenTokenizer("o200k_base")).encode(text))
    return len(tok.encode(text)) / max(1, est) - 1


def worst(tok: Tokenizer) -> float:
    """The largest under-count over the corpus's texts, one text at a time."""
    o200k = TiktokenTokenizer("o200k_base")
    return max(under_count(tok, t, o200k) for t in texts())


def margin_for(needed: float) -> float:
    """The margin chosen for a measured worst under-count: times SAFETY, rounded up to a whole percent,
    at least 1%."""
    return max(1, math.ceil(round(needed * SAFETY * 100, 6))) / 100


def family_tokenizers() -> Iterator[tuple[ModelFamily, str, Tokenizer]]:
    """Each family row that is estimated unless an optional extra is installed, with the exact tokenizer
    its margin is measured against (when installed): the file the row ships; for the rows of a family that
    ship none (later Mistral models), the file of the family's first row that ships one (Mistral:
    tekken_240911). Families with no exact tokenizer offline (Claude, Llama 3, Qwen, Gemma, GLM, unknown) are
    not listed: they keep UNKNOWN_MODEL_MARGIN (12%, K-7)."""
    newest: dict[str, tuple[str, Tokenizer]] = {}
    for fam in MODEL_FAMILIES:
        if fam.package_file:
            path = package_file(*fam.package_file)
            if path is not None:
                tok = shipped_tokenizer(path)
                newest.setdefault(fam.name, (fam.package_file[1], tok))
                yield fam, fam.package_file[1], tok
        elif not fam.encoding and fam.name in newest:
            yield fam, newest[fam.name][0], newest[fam.name][1]
