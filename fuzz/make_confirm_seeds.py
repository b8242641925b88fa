#!/usr/bin/env python3
"""Writes fuzz/seeds/confirm/: the confirm flows, in the `confirm` target's encoding.

Input: a configuration byte, then operations (fuzz/src/confirm.rs, `Flow::run`). Each seed is
one flow: elicitation answered by the owner, by another client, with every kind of answer and
wrong ids; presses before, at and after the question was shown and around its deadline; answer
budgets and timeouts; 2026-07-28 states echoed, reused, altered, expired, and more approvals than
the engine remembers; forgotten clients; retransmissions; calls too long to hold; a person
calling. Run from the repository root: python3 fuzz/make_confirm_seeds.py.
"""
import os

OUT = "fuzz/seeds/confirm"

# Configuration byte.
TIMEOUT = {1000: 0, 3000: 1, 30000: 2, 250: 3}
BUDGET = {0: 0, 500: 1, 25000: 2, 2000: 3}


def config(timeout=30000, budget=0, p2p=False, entropy=1, small_out=False, asynch=False):
    """`entropy=0` also sets the engine's `confirm_min_shown_ms` to 1000 (1: 0)."""
    return bytes([TIMEOUT[timeout] | BUDGET[budget] << 2 | (0x10 if p2p else 0) | entropy << 5
                  | (0x40 if asynch else 0) | (0x80 if small_out else 0)])


ALICE, BOB, CAROL = 0, 1, 2
VERSIONS = {"2024-11-05": 0, "2025-03-26": 1, "2025-06-18": 2, "2025-11-25": 3, "2026-07-28": 4, "1.0": 5}
CAPS = {"none": 0, "elicitation": 1, "not-object": 2, "form": 3, "twice": 4}
TOOLS = {"reboot": 0, "relay": 1, "plain": 2, "nope": 3}
ARGS = {None: 0, "{}": 1, "on": 2, "off": 3, "spaced": 4, "bad": 5, "escaped": 6, "twice": 7}
REPLIES = {"yes": 0, "no": 1, "decline": 2, "cancel": 3, "error": 4, "ok": 5, "string": 6,
           "no-content": 7, "null": 8, "dup-action": 9, "dup-confirm": 10, "escaped-yes": 11,
           "both": 12, "action-number": 13, "twice": 14, "other-action": 15}
# Answer targets.
LATEST, OWN, OLDER, GUESS, ALTERED, ESCAPED, INTEGER, SHORT = range(8)
# Press times (the `when` byte is this << 1, bit 0 set for "no").
BEFORE, AT_SHOWN, AFTER_SHOWN, NOW, LATER, DEADLINE_MINUS_1, DEADLINE, PAST_DEADLINE = range(8)
# … and at the edges of the minimum a question is shown: just under and just the
# minimum after it was shown, just under and just the minimum after the last press.
SHOWN_MIN_MINUS_1, SHOWN_MIN, LAST_MIN_MINUS_1, LAST_MIN = range(8, 12)
# Client names (the high bits of the capabilities byte): one that imitates the tag and closes a
# quote, "alice-client", none, one cut.
NAME_FORGER, NAME_ALICE, NO_NAME, LONG_NAME = range(4)
# Poll choices.
ADV = {0: 0, 1: 1, 10: 2, 100: 3, 250: 4, 1000: 5, 5000: 6, 30000: 7}
DEADLINE_M1, AT_DEADLINE, OWED_M1, AT_OWED = 8, 9, 10, 11
# 2026-07-28 state choices.
(NO_STATE, STATE_LATEST, STATE_ANY, STATE_ALTERED, STATE_LATER_EXPIRY, STATE_MADE_UP, STATE_V1,
 STATE_NUMBER, STATE_UPPER, STATE_ESCAPED) = range(10)


def init(peer, version, caps, id=0, name=NAME_FORGER):
    return bytes([0, peer, VERSIONS[version], CAPS[caps] | name << 6, id])


def call(peer, tool, args=None, id=1, user=False, pad=0):
    return bytes([1, peer, (id << 1) | int(user), TOOLS[tool], ARGS[args], pad])


def answer(peer, target, reply, idx=0, guess=None):
    b = bytes([2, peer, target, REPLIES[reply], idx])
    if target == GUESS:
        b += guess or bytes(8)
    return b


def press(when, yes=True, current=True, delta=0, idx=0):
    return bytes([3, 0 if current else 1, when << 1 | (0 if yes else 1), delta, idx])


def poll(choice):
    return bytes([4, choice])


def modern(peer, tool, args, caps=1, state=NO_STATE, response=0, id=1, user=False, legacy=False,
           key=False, idx=0, pos=0, state_twice=False):
    flags = int(user) | (2 if legacy else 0) | (4 if key else 0) | id << 3 | (0x40 if state_twice else 0)
    return bytes([5, peer, flags, TOOLS[tool], ARGS[args], caps, state, response, idx, pos])


def reply(name):
    """The `inputResponses` choice answering with `name`."""
    return 3 + REPLIES[name]


def forget(peer):
    return bytes([6, peer])


def raw(peer, text, user=False):
    b = text.encode()
    assert len(b) < 256
    return bytes([7, peer, int(user), len(b)]) + b


SEEDS = {}


def seed(name, *parts):
    SEEDS[name] = b"".join(parts)


# Elicitation: the owner says yes, and each other kind of answer.
seed("elicit-yes", config(), init(ALICE, "2025-06-18", "elicitation"), call(ALICE, "reboot"),
     answer(ALICE, LATEST, "yes"), poll(ADV[10]))
for r in REPLIES:
    seed(f"elicit-{r}", config(), init(ALICE, "2025-11-25", "form"), call(ALICE, "relay", "on"),
         answer(ALICE, OWN, r), answer(ALICE, LATEST, "yes"), poll(ADV[10]))
# Another client's answer, even with the right id, is nobody's.
seed("elicit-other-client", config(), init(ALICE, "2025-06-18", "elicitation"),
     init(BOB, "2025-06-18", "elicitation"), call(ALICE, "reboot"), answer(BOB, LATEST, "yes"),
     poll(ADV[100]), answer(ALICE, OWN, "yes"), call(BOB, "reboot", id=2),
     answer(ALICE, LATEST, "yes"), answer(BOB, OWN, "yes"))
# Wrong ids: guessed, altered, escaped, an integer, the old number scheme, an older question.
for name, target in [("guess", GUESS), ("altered", ALTERED), ("escaped", ESCAPED),
                     ("integer", INTEGER), ("short", SHORT)]:
    seed(f"elicit-id-{name}", config(), init(ALICE, "2025-06-18", "elicitation"),
         call(ALICE, "reboot"), answer(ALICE, target, "yes", idx=3), poll(ADV[100]),
         answer(ALICE, LATEST, "yes"))
seed("elicit-older-id", config(), init(ALICE, "2025-06-18", "elicitation"), call(ALICE, "reboot"),
     answer(ALICE, LATEST, "no"), call(ALICE, "reboot", id=2), answer(ALICE, OLDER, "yes", idx=0),
     answer(ALICE, LATEST, "yes"), answer(ALICE, LATEST, "yes"))
seed("elicit-timeout", config(timeout=1000), init(ALICE, "2025-06-18", "elicitation"),
     call(ALICE, "reboot"), poll(DEADLINE_M1), poll(AT_DEADLINE), answer(ALICE, LATEST, "yes"))
# Elicitation is each client's own: bob declared it, alice did not.
seed("elicit-per-client", config(budget=0), init(BOB, "2025-06-18", "elicitation"),
     init(ALICE, "2024-11-05", "none"), call(ALICE, "reboot"), answer(BOB, LATEST, "yes"),
     poll(ADV[10]), press(AFTER_SHOWN), poll(ADV[10]))
seed("elicit-not-object", config(), init(ALICE, "2025-06-18", "not-object"), call(ALICE, "reboot"),
     poll(ADV[10]), press(AFTER_SHOWN), poll(ADV[10]))
seed("elicit-old-revision", config(), init(ALICE, "2025-03-26", "elicitation"),
     call(ALICE, "reboot"), poll(ADV[10]), press(AFTER_SHOWN), poll(ADV[1]))
seed("elicit-reinit", config(), init(ALICE, "2025-06-18", "elicitation"), call(ALICE, "reboot"),
     init(ALICE, "2024-11-05", "none", id=3), answer(ALICE, LATEST, "yes"))

# The device's button: every press time, yes and no.
for when in range(8):
    for yes in (True, False):
        seed(f"press-{when}-{'yes' if yes else 'no'}", config(timeout=1000),
             init(ALICE, "2024-11-05", "none"), call(ALICE, "reboot"), press(AFTER_SHOWN),
             poll(ADV[10]), press(when, yes, delta=3), poll(ADV[1]), press(AFTER_SHOWN),
             poll(ADV[10]))
seed("press-before-shown", config(), call(ALICE, "reboot"), press(NOW), press(LATER), poll(ADV[0]),
     press(AT_SHOWN), press(BEFORE, delta=1), poll(ADV[10]), press(AFTER_SHOWN), poll(ADV[1]))
seed("press-stale-approval", config(), call(ALICE, "reboot"), poll(ADV[10]), press(AFTER_SHOWN, yes=False),
     poll(ADV[10]), call(ALICE, "reboot", id=2), poll(ADV[10]),
     press(LATER, current=False, idx=0), poll(ADV[10]), press(LATER), poll(ADV[10]))
seed("press-twice", config(), call(ALICE, "relay", "on"), poll(ADV[10]), press(AFTER_SHOWN),
     press(LATER, yes=False), poll(ADV[10]))
seed("press-past-deadline", config(timeout=250), call(ALICE, "reboot"), poll(ADV[10]),
     press(PAST_DEADLINE, delta=2), poll(ADV[1]))
seed("press-at-deadline", config(timeout=250), call(ALICE, "reboot"), poll(ADV[10]),
     press(DEADLINE), poll(AT_DEADLINE))
seed("press-deadline-minus-1", config(timeout=250), call(ALICE, "reboot"), poll(ADV[10]),
     press(DEADLINE_MINUS_1), poll(AT_DEADLINE))
# The answer budget: the outcome in the call's answer, or past it a notification.
for budget in (500, 2000, 25000):
    seed(f"budget-{budget}-in-time", config(timeout=3000, budget=budget), call(ALICE, "reboot"),
         poll(ADV[10]), press(AFTER_SHOWN), poll(OWED_M1))
    seed(f"budget-{budget}-past", config(timeout=3000, budget=budget), call(ALICE, "reboot"),
         poll(ADV[10]), poll(OWED_M1), poll(AT_OWED), press(LATER), poll(ADV[1]))
    seed(f"budget-{budget}-timeout", config(timeout=3000, budget=budget), call(ALICE, "relay", "on"),
         poll(AT_OWED), poll(DEADLINE_M1), poll(AT_DEADLINE))
    seed(f"budget-{budget}-declined", config(timeout=3000, budget=budget), call(BOB, "reboot"),
         poll(ADV[1]), press(AFTER_SHOWN, yes=False), poll(ADV[1]))
seed("busy", config(), call(ALICE, "reboot"), call(BOB, "relay", "on", id=2),
     call(BOB, "relay", "off", id=3), poll(ADV[10]), press(AFTER_SHOWN), poll(ADV[10]))
seed("too-long-to-hold", config(), call(ALICE, "reboot", pad=40), call(ALICE, "reboot", pad=20),
     poll(ADV[10]), press(AFTER_SHOWN), poll(ADV[10]))
seed("a-person-calls", config(), call(ALICE, "reboot", user=True), call(ALICE, "reboot", id=2),
     call(BOB, "reboot", id=2, user=True), poll(ADV[10]), press(AFTER_SHOWN), poll(ADV[1]))
seed("relay-when", config(), call(ALICE, "relay", "off"), call(ALICE, "relay", "on", id=2),
     call(ALICE, "relay", "spaced", id=3), call(ALICE, "relay", "escaped", id=4),
     call(ALICE, "relay", "bad", id=5), call(ALICE, "relay", "twice", id=6), call(ALICE, "relay", id=7))
seed("retransmission", config(), init(ALICE, "2025-06-18", "elicitation"), call(ALICE, "reboot"),
     answer(ALICE, LATEST, "yes"), call(ALICE, "reboot"), call(BOB, "reboot"),
     call(ALICE, "plain", id=2), call(ALICE, "plain", id=2))
seed("retransmission-while-held", config(), call(ALICE, "reboot", user=True),
     call(ALICE, "reboot", id=2), call(ALICE, "reboot", id=2, user=True), poll(ADV[10]),
     press(AFTER_SHOWN), poll(ADV[1]))
# A client that is gone leaves nothing waiting.
seed("forget", config(), init(ALICE, "2025-06-18", "elicitation"), call(ALICE, "reboot"),
     forget(BOB), forget(ALICE), answer(ALICE, LATEST, "yes"), call(BOB, "reboot", id=2),
     poll(ADV[10]), forget(BOB), press(LATER, current=False), poll(ADV[10]))
# A yes to a call too long to run in the output buffer beside it: refused, saying so, to the
# caller.
seed("no-room-elicit", config(small_out=True), init(ALICE, "2025-06-18", "elicitation"),
     call(ALICE, "reboot", pad=22), answer(ALICE, LATEST, "yes"), call(ALICE, "reboot", id=2),
     answer(ALICE, LATEST, "yes"))
for budget in (0, 500):
    seed(f"no-room-device-{budget}", config(small_out=True, budget=budget), init(BOB, "2024-11-05", "none"),
         call(BOB, "reboot", pad=22), poll(ADV[10]), press(AFTER_SHOWN), poll(ADV[10]),
         call(BOB, "reboot", id=2), poll(ADV[10]), press(AFTER_SHOWN), poll(ADV[10]))

# One point-to-point client.
seed("p2p-elicit", config(p2p=True), init(ALICE, "2025-06-18", "elicitation"),
     call(ALICE, "reboot"), answer(BOB, LATEST, "yes"), call(ALICE, "reboot", id=2))
seed("p2p-device", config(p2p=True, budget=500), call(ALICE, "reboot"), poll(ADV[100]),
     press(AFTER_SHOWN), poll(ADV[1]), forget(CAROL))

# 2026-07-28: a signed, single-use state.
seed("modern-yes-once", config(), modern(ALICE, "relay", "on"),
     modern(ALICE, "relay", "on", state=STATE_LATEST, response=reply("yes"), id=2),
     modern(BOB, "relay", "on", state=STATE_LATEST, response=reply("yes"), id=3),
     modern(ALICE, "relay", "on", state=STATE_LATEST, response=reply("yes"), id=2))
seed("modern-no-elicitation", config(), modern(ALICE, "reboot", "{}", caps=0),
     modern(ALICE, "reboot", "{}", caps=2), modern(ALICE, "reboot", "{}", caps=3))
for r in REPLIES:
    seed(f"modern-{r}", config(), modern(ALICE, "reboot", "{}"),
         modern(ALICE, "reboot", "{}", state=STATE_LATEST, response=reply(r), id=2),
         modern(ALICE, "reboot", "{}", state=STATE_LATEST, response=reply("yes"), id=3))
seed("modern-other-arguments", config(), modern(ALICE, "relay", "on"),
     modern(ALICE, "relay", "spaced", state=STATE_LATEST, response=reply("yes"), id=2),
     modern(ALICE, "relay", "escaped", state=STATE_LATEST, response=reply("yes"), id=3),
     modern(ALICE, "reboot", "{}", state=STATE_LATEST, response=reply("yes"), id=4),
     modern(ALICE, "reboot", None, state=STATE_LATEST, response=reply("yes"), id=4))
seed("modern-altered", config(), modern(ALICE, "reboot", None),
     *[modern(ALICE, "reboot", None, state=STATE_ALTERED, response=reply("yes"), pos=p, id=2)
       for p in (0, 3, 10, 20, 40, 50)],
     modern(ALICE, "reboot", None, state=STATE_LATER_EXPIRY, response=reply("yes"), id=3),
     modern(ALICE, "reboot", None, state=STATE_MADE_UP, response=reply("yes"), id=3),
     modern(ALICE, "reboot", None, state=STATE_V1, response=reply("yes"), id=3),
     modern(ALICE, "reboot", None, state=STATE_NUMBER, response=reply("yes"), id=3),
     modern(ALICE, "reboot", None, state=STATE_UPPER, response=reply("yes"), id=3),
     modern(ALICE, "reboot", None, state=STATE_ESCAPED, response=reply("yes"), id=3),
     modern(ALICE, "reboot", None, state=STATE_LATEST, response=reply("yes"), id=3, state_twice=True),
     modern(ALICE, "reboot", None, state=STATE_LATEST, response=reply("yes"), id=4))
seed("modern-expired", config(timeout=1000), modern(ALICE, "reboot", None), poll(ADV[1000]),
     modern(ALICE, "reboot", None, state=STATE_LATEST, response=reply("yes"), id=2),
     modern(ALICE, "reboot", None), poll(ADV[250]), poll(ADV[250]), poll(ADV[250]),
     poll(ADV[250]),
     modern(ALICE, "reboot", None, state=STATE_LATEST, response=reply("yes"), id=3))
seed("modern-ask-again", config(), modern(ALICE, "reboot", None),
     modern(ALICE, "reboot", None, state=STATE_LATEST, response=0, id=2),
     modern(ALICE, "reboot", None, state=STATE_LATEST, response=1, id=3),
     modern(ALICE, "reboot", None, state=STATE_LATEST, response=2, id=4),
     modern(ALICE, "reboot", None, state=STATE_ANY, response=reply("yes"), id=5))
# More approvals than the engine remembers: the fifth live one is refused.
seed("modern-spent-full", config(),
     *[modern(ALICE, "reboot", None, id=i % 5) + modern(ALICE, "reboot", None, state=STATE_LATEST,
                                                        response=reply("yes"), id=i % 5)
       for i in range(6)],
     poll(ADV[30000]), poll(ADV[1000]),
     modern(ALICE, "reboot", None), modern(ALICE, "reboot", None, state=STATE_LATEST, response=reply("yes")))
# A legacy call carrying a state and a yes is held all the same.
seed("legacy-with-state", config(), modern(ALICE, "reboot", None),
     modern(ALICE, "reboot", None, state=STATE_LATEST, response=reply("yes"), legacy=True, id=2),
     poll(ADV[10]), press(AFTER_SHOWN, yes=False), poll(ADV[1]))
seed("modern-idempotency", config(), modern(ALICE, "reboot", None, key=True),
     modern(ALICE, "reboot", None, state=STATE_LATEST, response=reply("yes"), key=True, id=2),
     modern(ALICE, "reboot", None, state=STATE_LATEST, response=reply("yes"), key=True, id=2),
     modern(ALICE, "reboot", None, key=True, id=2), modern(BOB, "reboot", None, key=True, id=2))
seed("modern-person", config(), modern(ALICE, "reboot", None, user=True),
     modern(ALICE, "relay", "off"), modern(ALICE, "relay", "on", user=True, caps=0))

# Raw messages: hand-written answers and calls.
seed("raw-answers", config(), init(ALICE, "2025-06-18", "elicitation"), call(ALICE, "reboot"),
     raw(ALICE, '{"jsonrpc":"2.0","id":"confirm-0000000000000000","result":{"action":"accept","content":{"confirm":true}}}'),
     raw(ALICE, '{"jsonrpc":"2.0","id":1,"result":{"action":"accept","content":{"confirm":true}}}'),
     raw(ALICE, '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}'),
     raw(ALICE, '{"jsonrpc":"2.0","id":"x","result":{}}'),
     answer(ALICE, LATEST, "yes"))
seed("raw-calls", config(), raw(ALICE, '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"c.reboot","_meta":{"progressToken":1}}}'),
     raw(BOB, '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"c.reboot","task":{}}}'),
     raw(BOB, '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"c.reboot","_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}'),
     raw(BOB, '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"_meta":{}}}'),
     poll(ADV[10]), press(AFTER_SHOWN), poll(ADV[1]))

# A question is read before a press answers it (1 s), and a press within 1 s of the
# last is a bounce: the second half of a quick double press never approves the next question.
seed("double-press", config(entropy=0, budget=25000), init(ALICE, "2024-11-05", "none"),
     init(BOB, "2024-11-05", "none", name=NAME_ALICE), call(ALICE, "reboot"), poll(ADV[10]),
     press(SHOWN_MIN), poll(ADV[10]), call(BOB, "relay", "on", id=2), poll(ADV[10]),
     press(LAST_MIN_MINUS_1, delta=1), poll(ADV[10]), press(LAST_MIN, delta=0), poll(ADV[1000]),
     press(LAST_MIN, delta=0), poll(ADV[10]))
seed("press-min-edges", config(entropy=0), init(ALICE, "2024-11-05", "none"), call(ALICE, "reboot"),
     poll(ADV[10]), press(SHOWN_MIN_MINUS_1), press(SHOWN_MIN), press(LAST_MIN, delta=3),
     poll(ADV[10]))
# The question names the call's arguments and the client (its tag first, then the name its
# initialize gave in quotes, cut when long, nothing without one), in the waiting answer, after the
# budget, and in the elicitation.
seed("question-names", config(budget=0), init(ALICE, "2024-11-05", "none", name=LONG_NAME),
     call(ALICE, "relay", "on"), init(ALICE, "2024-11-05", "none", name=NAME_ALICE), poll(ADV[10]),
     press(AFTER_SHOWN), poll(ADV[10]), call(CAROL, "relay", "on", id=2), poll(ADV[10]),
     press(AFTER_SHOWN), poll(ADV[10]))
seed("question-after-budget", config(budget=500), init(BOB, "2024-11-05", "none", name=NO_NAME),
     call(BOB, "relay", "on"), poll(ADV[10]), poll(OWED_M1), poll(AT_OWED), press(LATER),
     poll(ADV[10]))
seed("question-elicited", config(), init(ALICE, "2025-06-18", "elicitation", name=LONG_NAME),
     call(ALICE, "relay", "on"), answer(ALICE, LATEST, "yes"), poll(ADV[10]))

# The async paths (`handle_async`, `poll_async`) run an approved call with their own code.
for asynch_seed in ["elicit-yes", "press-2-yes", "press-before-shown", "budget-500-in-time", "double-press",
                    "budget-500-past", "no-room-elicit", "no-room-device-0", "no-room-device-500",
                    "modern-yes-once", "elicit-other-client", "retransmission"]:
    data = SEEDS[asynch_seed]
    SEEDS[f"async-{asynch_seed}"] = bytes([data[0] | 0x40]) + data[1:]

os.makedirs(OUT, exist_ok=True)
for name, data in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"{len(SEEDS)} seeds in {OUT}")
