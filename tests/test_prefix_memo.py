"""PrefixMemo (S-30): values along a sequence, found again for the start a new sequence shares with a kept one.
Whatever was kept, the values are those worked out from scratch."""

from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import examples
from tagengine._internal.prefix_memo import ITEM_CHARS, PrefixMemo, shared_start
from tagengine._internal.prompt.tokens import OPENAI_CHAT, TiktokenTokenizer, TokenCounter
from tagengine._internal.server.memory import chain
from tagengine._internal.server.memory.chain import Chain


@pytest.fixture(scope="module")
def heist_campaign(tmp_path_factory):
    from serve_kit import heist_store

    yield from heist_store(tmp_path_factory.mktemp("heist"))


def running(known: list[int], items: list[int]) -> list[int]:
    """Value i: the sum of items[0..i] (depends on the whole start, as a chain key does)."""
    start = known[-1] if known else 0
    return known + list(accumulate(items[len(known):], initial=start))[1:]


def running_lengths(known: list[int], items: list[object]) -> list[int]:
    """`running` of the items' lengths as text: values for items that are not numbers."""
    return running(known, [len(str(x)) for x in items])


def counted(memo: PrefixMemo[int, int], items: list[int]) -> tuple[list[int], list[int]]:
    """The memo's values and the items `more` was asked to work out."""
    asked: list[int] = []

    def more(known: list[int], all_items: list[int]) -> list[int]:
        asked.extend(all_items[len(known):])
        return running(known, all_items)

    return list(memo.values(items, more)), asked


def test_shared_start():
    assert shared_start([1, 2, 3], [1, 2, 3, 4]) == 3
    assert shared_start([1, 2, 3], [1, 9, 3]) == 1
    assert shared_start([], [1]) == 0
    assert shared_start([5], [6]) == 0


@given(st.lists(st.integers(0, 2), max_size=12), st.lists(st.integers(0, 2), max_size=12))
def test_shared_start_is_the_longest_start_two_lists_share(a, b):
    """PF-61: found by halving with comparisons in C; the same as reading item by item."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    assert shared_start(a, b) == n


def test_pf_61_a_growing_chats_bodies_keep_one_sequence_of_messages():
    """PF-61: each turn's body is the chat so far and a last message (the user's new one, or the reminder after it),
    which is not kept: the next turn's body starts with all that was, so one sequence is kept, not one a turn (16
    of them, each compared on every turn)."""
    from tagengine._internal.server.wire.json_codec import ChatBodies, dumps

    bodies = ChatBodies()
    chat = [{"role": "system", "content": "GM"}, {"role": "user", "content": "Go."}]
    for turn in range(20):
        body = {"model": "m", "messages": [*chat, {"role": "system", "content": f"Reminder {turn}"}]}
        assert bodies.dumps(body) == dumps(body)
        chat = [*chat, {"role": "assistant", "content": f"Reply {turn}"}, {"role": "user", "content": f"And {turn}"}]
    assert len(bodies._written) == 1


def test_a_grown_sequence_works_out_only_its_new_items():
    memo: PrefixMemo[int, int] = PrefixMemo(lambda _: 1)
    assert counted(memo, [1, 2, 3]) == ([1, 3, 6], [1, 2, 3])
    assert counted(memo, [1, 2, 3, 4, 5]) == ([1, 3, 6, 10, 15], [4, 5])  # a new turn
    assert counted(memo, [1, 2, 3, 4, 5]) == ([1, 3, 6, 10, 15], [])  # sent again (regenerate)
    assert counted(memo, [1, 2, 3, 7]) == ([1, 3, 6, 13], [7])  # another swipe
    assert counted(memo, [1, 2]) == ([1, 3], [])  # messages deleted


def test_pf_61_the_same_sequence_again_gives_the_kept_values_themselves():
    """PF-61: the values of a sequence the memo keeps (the same history again: a regenerate, a swipe) are the kept
    ones, read-only, nothing copied; a start of a kept sequence is its values' start, and the sequence kept stays
    whole; the items are copied when kept, never the caller's list."""
    memo: PrefixMemo[int, int] = PrefixMemo(lambda _: 1)
    items = [1, 2, 3]
    counted(memo, items)
    kept = memo.values([1, 2, 3], running)
    assert kept == (1, 3, 6) and memo.values([1, 2, 3], running) is kept
    with pytest.raises(TypeError):
        kept[0] = 99  # type: ignore[index]
    assert counted(memo, [1, 2]) == ([1, 3], [])  # a start of it
    assert memo.values([1, 2, 3], running) is kept  # still kept whole
    items[0] = 50  # the items are not kept by reference
    assert counted(memo, [1, 2, 3]) == ([1, 3, 6], [])


def test_at_most_keep_sequences_are_kept_and_the_newest_stay():
    memo: PrefixMemo[int, int] = PrefixMemo(lambda _: 1, keep=2)
    for start in (10, 20, 30):
        counted(memo, [start, 1])
    assert counted(memo, [30, 1])[1] == [] and counted(memo, [20, 1])[1] == []
    assert counted(memo, [10, 1])[1] == [10, 1]  # the oldest went


def test_a_sequence_over_half_the_size_bound_is_not_kept_and_the_total_holds():
    memo: PrefixMemo[int, int] = PrefixMemo(lambda n: n, max_size=100)
    counted(memo, [60])
    assert counted(memo, [60])[1] == [60]  # over half: worked out each time
    counted(memo, [40])
    counted(memo, [41])
    counted(memo, [42])  # with [40] kept too the total would pass 100: [40] goes
    assert counted(memo, [42])[1] == [] and counted(memo, [41])[1] == []
    assert counted(memo, [40])[1] == [40]


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.lists(st.integers(0, 3), max_size=8), min_size=1, max_size=12), st.integers(1, 4))
def test_the_values_are_always_those_worked_out_from_scratch(seqs, keep):
    memo: PrefixMemo[int, int] = PrefixMemo(lambda n: n, keep=keep, max_size=40)
    for items in seqs:
        assert counted(memo, items)[0] == running([], items)


class Box:
    """An item equal to another by value, never the same object unless it is that one."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, v: int) -> None:
        self.v = v

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Box) and other.v == self.v


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 11), st.integers(0, 8), st.booleans(),
                          st.lists(st.integers(0, 3), max_size=4)), min_size=1, max_size=12), st.integers(1, 4))
def test_pf_62_the_values_are_those_worked_out_from_scratch_whichever_objects_the_items_are(steps, keep):
    """PF-62: each sequence is a start of an earlier one (its very objects, or equal copies) and some items more;
    whether a kept run holds the same objects or only equal ones, the values are those worked out from scratch."""
    memo: PrefixMemo[Box, int] = PrefixMemo(lambda b: b.v, keep=keep, max_size=40)
    seen: list[list[Box]] = []

    def more(known: list[int], items: list[Box]) -> list[int]:
        return running(known, [b.v for b in items])

    for earlier, length, copied, new in steps:
        start = seen[earlier % len(seen)][:length] if seen else []
        items = [Box(b.v) if copied else b for b in start] + [Box(v) for v in new]
        assert list(memo.values(items, more)) == running([], [b.v for b in items])
        seen.append(items)


@settings(max_examples=examples(50), deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "  b ", "c" * 40]), max_size=6), min_size=1, max_size=8))
def test_chain_keys_are_the_chain_step_by_step(heist_campaign, histories):
    """The keys along a history are first_key, then next_key reply by reply, whatever histories came before."""
    store, c = heist_campaign
    memoised, fresh = Chain(store), Chain(store)
    for replies in histories:
        keys = [chain.first_key(c)]
        for text in replies:
            keys.append(Chain(store).next_key(keys[-1], text))  # a new chain: nothing remembered
        assert list(memoised.keys(c, replies)) == keys
        assert list(fresh.keys(c, replies)) == keys
        fresh = Chain(store)


class Watched(dict):  # type: ignore[type-arg]
    """A message that notes that its role or text was read."""

    read: set[int] = set()

    def __getitem__(self, key: str) -> Any:
        Watched.read.add(id(self))
        return super().__getitem__(key)


class Compared(Watched):
    """A message that notes that it was compared by value (a list compares the very same object by identity)."""

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        Watched.read.add(id(self))
        return super().__eq__(other)


def test_token_counts_of_a_history_are_each_message_counted_alone():
    """Whatever was kept, a history's counts are its messages' counted alone: a message that is another object
    with the same role and text shares the count, another text is counted anew."""
    c = TokenCounter(TiktokenTokenizer("o200k_base"), OPENAI_CHAT)
    fresh = TokenCounter(TiktokenTokenizer("o200k_base"), OPENAI_CHAT)
    history = [{"role": "user", "content": "We go in."}, {"role": "assistant", "content": "The door creaks."}]
    assert list(c.messages(history)) == [fresh.message(m["role"], m["content"]) for m in history]
    other = [dict(history[0]), {"role": "assistant", "content": "The door holds."}, {"role": "user", "content": "Ha"}]
    assert list(c.messages(other)) == [fresh.message(m["role"], m["content"]) for m in other]
    assert list(c.messages([dict(m) for m in history])) == list(c.messages(history))


def test_pf_61_a_start_of_the_very_objects_of_a_kept_history_is_not_read_again(heist_campaign):
    """PF-61: a server's history holds the very message objects of the turn before for the start it shares with it
    (`RecentHistories`), and the messages given are read-only: the token counts and the chain's replies (`said`) find
    that start by the objects' identities, reading only the messages that follow it."""
    store, _ = heist_campaign
    history = [Watched(role="assistant" if i % 2 else "user", content=f"line {i}") for i in range(40)]
    grown = [*history, Watched(role="user", content="And then?")]
    counter, chain_ = TokenCounter(TiktokenTokenizer("o200k_base"), OPENAI_CHAT), Chain(store)
    for read in (counter.messages, chain_.said):
        read(history)
        Watched.read.clear()
        read(grown)
        assert Watched.read == {id(grown[-1])}, read  # the new message, none of the kept start
    fresh = TokenCounter(TiktokenTokenizer("o200k_base"), OPENAI_CHAT)
    assert list(counter.messages(grown)) == [fresh.message(m["role"], m["content"]) for m in grown]
    said, held = Chain(store).said(grown)
    assert list(chain_.said(grown)[0]) == list(said) and chain_.said(grown)[1] == held
    assert list(said) == [m["content"] if m["role"] == "assistant" else None for m in grown]
    assert held == sum(len(m["content"]) + ITEM_CHARS for m in grown)


def test_pf_62_a_history_is_found_by_its_own_objects_before_equal_ones_of_another_chat(heist_campaign):
    """PF-62: two chats that start alike (a branch, a second chat from the same card) hold equal messages as other
    objects. A history is found in its own kept run, by identity, though another chat's run, found first, holds
    all of it by value: once it has had a run of its own, no message of it is read again, turn after turn, whichever
    chat was served last."""
    store, _ = heist_campaign
    history = [Compared(role="assistant" if i % 2 else "user", content=f"line {i}") for i in range(40)]
    branch = [*(Compared(m) for m in history), Compared(role="user", content="Elsewhere.")]  # equal, other objects
    counter, chain_ = TokenCounter(TiktokenTokenizer("o200k_base"), OPENAI_CHAT), Chain(store)
    for read in (counter.messages, chain_.said):
        read(history)
        read(branch)  # the most recently used: looked at first, and it holds all of `history` by value
        read(history)
        for _ in range(2):  # the two chats in turn: each finds its own run though the other's was used last
            for chat in (branch, history):
                Watched.read.clear()
                read(chat)
                assert Watched.read == set(), read
    fresh = TokenCounter(TiktokenTokenizer("o200k_base"), OPENAI_CHAT)
    assert list(counter.messages(history)) == [fresh.message(m["role"], m["content"]) for m in history]
    assert list(counter.messages(branch)) == [fresh.message(m["role"], m["content"]) for m in branch]
    assert list(chain_.said(history)[0]) == [m["content"] if m["role"] == "assistant" else None for m in history]


def spied_more(real: Callable[[list[Any], list[Any]], list[Any]],
               worked: list[int]) -> Callable[[list[Any], list[Any]], list[Any]]:
    """A memo's `more`, saying how many items each call was given."""
    def more(known: list[Any], items: list[Any]) -> list[Any]:
        worked.append(len(items))
        return real(known, items)

    return more


def test_a_history_of_many_short_messages_is_kept_by_what_it_holds(monkeypatch):
    """PF-59: a kept item counts as its text and ITEM_CHARS, the memory its tuple, value and size take: a history of
    one-character messages that holds half of the 16 MiB a memo keeps is kept (its counts found again, not worked
    out), one message more is not: some 250 bytes an item, where its text alone let 16 such histories of 20,000
    messages stay (60 MB held under a hostile chat's load, where the bound said 16 MiB)."""
    from tagengine._internal.prefix_memo import held_chars

    assert held_chars("x") == 1 + ITEM_CHARS
    half = PrefixMemo(held_chars).max_size // 2
    most = half // (1 + ITEM_CHARS)
    for n, kept in ((most, True), (most + 1, False)):
        c = TokenCounter(TiktokenTokenizer("o200k_base"), OPENAI_CHAT)
        history = [{"role": "user", "content": "x"}] * n
        c.messages(history)
        worked: list[int] = []
        monkeypatch.setattr(c, "_more", spied_more(c._more, worked))
        assert list(c.messages(history)) == [c.message("user", "x")] * n
        assert worked == ([] if kept else [n]), n


def test_the_chains_keys_of_many_short_replies_are_kept_by_what_they_hold(heist_campaign, monkeypatch):
    """PF-59, as the token counts: the chain's keys along a history of one-character replies are kept while the
    first key (64 characters) and the replies, ITEM_CHARS an item more, hold half of 16 MiB, not one reply more."""

    store, c = heist_campaign
    half = PrefixMemo(len).max_size // 2
    most = (half - len(chain.first_key(c)) - ITEM_CHARS) // (1 + ITEM_CHARS)
    for n, kept in ((most, True), (most + 1, False)):
        memo = Chain(store)
        replies = [str(i % 10) for i in range(n)]
        memo.keys(c, replies)
        worked: list[int] = []
        monkeypatch.setattr(memo, "_more", spied_more(memo._more, worked))
        memo.keys(c, replies)
        assert (worked == []) is kept, n


def test_pf_71_a_sequence_finds_its_own_kept_run_without_a_step_for_each_other_one(monkeypatch):
    """PF-71: on a server that holds many chats, each memo keeps 16 sequences; the request's own one (the same list
    again, or one or two items more, the start made of the very objects kept) is found by the identity of its last
    item, and the other chats' runs are neither looked at one by one nor compared by value (a run as long as the
    request's, ahead of it, holds items that count their comparisons). A sequence of equal items that are other
    objects is still found by the scan, and every value is the one worked out from scratch."""
    import tagengine._internal.prefix_memo as prefix_memo

    memo: PrefixMemo[object, int] = PrefixMemo(lambda _: 1)
    sums = running_lengths

    class Watched:
        """An item that counts the times it is compared by value."""

        compared = 0

        def __eq__(self, other: object) -> bool:
            Watched.compared += 1
            return self is other

    others: list[list[object]] = [[f"chat {k}", f"turn {k}"] for k in range(14)]
    others.append([Watched(), Watched(), Watched()])  # as long as the first look-up's sequence, and ahead of it
    mine: list[object] = ["mine", "item a", "item b"]
    for seq in [mine, *others]:
        memo.values(seq, sums)
    # its run last after the others', first again after this look-up
    assert len(memo) == 16 and memo.values(mine, sums) == tuple(sums([], mine))

    scanned: list[int] = []
    scan = prefix_memo._alike_first
    monkeypatch.setattr(prefix_memo, "_alike_first", lambda runs, items: scanned.append(len(runs)) or scan(runs, items))
    for more in ([], ["item c"], ["item d", "item e"]):  # again (a swipe); a prefill more; a reply and a message more
        seq = [*mine, *more]
        for other in others:
            memo.values(other, sums)  # the other chats' turns in between: its run goes to the back again
        Watched.compared = 0
        assert list(memo.values(seq, sums)) == sums([], seq)
        mine = seq
        assert scanned == [] and Watched.compared == 0, (scanned, Watched.compared)  # nothing else read
    grown = [*mine, "item f", "item g", "item h"]  # three items more: looked for by the scan, from the kept start
    asked: list[object] = []
    assert list(memo.values(grown, lambda known, items: asked.extend(items[len(known):]) or sums(known, items))) \
        == sums([], grown)
    assert scanned == [16] and asked == ["item f", "item g", "item h"]
    copy = ["".join(list(x)) for x in grown]  # equal items, other objects: not found by identity, found by the scan
    assert not any(x is y for x, y in zip(copy, grown, strict=True))
    assert list(memo.values(copy, sums)) == sums([], copy) and scanned == [16, 16]


def test_pf_71_of_two_runs_that_end_on_one_object_the_more_recent_is_found_without_the_scan(monkeypatch):
    """Two chats whose last item is the same object (CPython shares the empty string, and small numbers): the index
    names the more recently used run, so the chat that just played finds its own without the scan."""
    import tagengine._internal.prefix_memo as prefix_memo

    memo: PrefixMemo[object, int] = PrefixMemo(lambda _: 1)
    older, newer = ["chat a", ""], ["chat b", ""]
    memo.values(older, running_lengths)
    memo.values(newer, running_lengths)
    monkeypatch.setattr(prefix_memo, "_alike_first", lambda runs, items: pytest.fail("scanned"))
    assert list(memo.values(newer, running_lengths)) == running_lengths([], newer)
