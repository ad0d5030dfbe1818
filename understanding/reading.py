"""Reading a transcript into ``Facts``: what kind of call it was, what was agreed, what the
lead said about vehicles, objections and questions. Each reader keeps the lines that made
it decide; when a reader is unsure it finds nothing."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from understanding import patterns as p
from understanding.facts import (
    CONVERSATION,
    NO_CONVERSATION,
    VOICEMAIL,
    WRONG_NUMBER,
    Appointment,
    Callback,
    Context,
    Evidence,
    Facts,
    Flag,
    Line,
    Objection,
    Question,
    Revocation,
    evidence,
    lines_of,
)
from understanding.times import spoken_days, spoken_times
from understanding.vehicles import trade_in_of, vehicle_of

# Lines apart within which a day said and a time said belong to one proposal, and within
# which an answer agrees to a proposal.
PROPOSAL_SPAN = 3
# Words the agent says alone on a call that make it a message left, not a "hello?".
MESSAGE_WORDS = 15
# Lines before a proposal that may say it is a visit ("Would you like to come in?").
VISIT_LOOKBACK = 6


def understand(turns: Iterable[Mapping[str, Any]], context: Context) -> Facts:
    """What the call established, each fact with the lines that support it. Only a
    conversation has facts beyond its kind: a voicemail, a wrong number or a call in
    which no one spoke establishes nothing else."""
    lines = lines_of(turns)
    facts = Facts(lines=lines)
    facts.kind, facts.kind_evidence = kind_of(lines, context.lead_first_name)
    if facts.kind != CONVERSATION:
        return facts
    lead = [line for line in lines if line.side == "lead"]
    facts.purchased = _flag(lead, p.PURCHASED)
    facts.appointment, facts.cancelled = appointment_of(lines, context.call_date())
    facts.callback = callback_of(lines, context.call_date())
    facts.send_info = _flag(lines, p.SEND_INFO, unless=p.NO_SEND)
    facts.not_interested = _flag(lead, p.NOT_INTERESTED)
    facts.do_not_call = do_not_call_of(lead)
    facts.objections = [
        Objection(kind, found.evidence)
        for kind, pattern in p.OBJECTIONS.items()
        if (found := _flag(lead, pattern)) is not None
    ]
    facts.trade_in = trade_in_of(lines, context)
    facts.vehicle = vehicle_of(lines, context, facts.trade_in)
    facts.open_questions = open_questions(lines)
    facts.answered_questions = answered_questions(lines, context.call_date())
    return facts


def _flag(
    lines: Sequence[Line],
    pattern: re.Pattern[str],
    unless: re.Pattern[str] | None = None,
) -> Flag | None:
    for line in lines:
        if pattern.search(line.text) and not (unless and unless.search(line.text)):
            return Flag(evidence(line))
    return None


def do_not_call_of(lead: Sequence[Line]) -> Revocation | None:
    """The lead's first sentence asking not to be called again, quoted whole."""
    for line in lead:
        for sentence in re.split(r"(?<=[.!?])\s+", line.text):
            if p.DO_NOT_CALL.search(sentence):
                return Revocation(sentence.strip(), evidence(line))
    return None


def kind_of(
    lines: Sequence[Line], first_name: str = ""
) -> tuple[str, tuple[Evidence, ...]]:
    """``voicemail`` when only the agent spoke and left a message, or the lead's side is a
    recorded greeting with nothing said after it; ``wrong_number`` when the lead said it
    was not them ("There's no Cornelius here") or, once the lead's side has answered, the
    agent said it was the wrong number; ``no_conversation`` when no one spoke, or only a
    lead asking whether anyone is there; else ``conversation``."""
    lead = [line for line in lines if line.side == "lead"]
    agent = [line for line in lines if line.side == "agent"]
    if not lead:
        # Only the agent spoke: a message left ("sorry I missed you", or a few sentences)
        # is a voicemail; "Hello? Sam?" into silence is no conversation.
        said = sum(len(line.text.split()) for line in agent)
        message = [line for line in agent if p.MESSAGE_LEFT.search(line.text)]
        if message or said >= MESSAGE_WORDS:
            return VOICEMAIL, evidence(message[0] if message else agent[0])
        return NO_CONVERSATION, ()
    greeting = [line for line in lead if p.MACHINE.search(line.text)]
    if greeting and all(line.index <= greeting[-1].index for line in lead):
        return VOICEMAIL, evidence(*greeting)
    absent = p.not_here(first_name)
    wrong = [
        line
        for line in lead
        if p.WRONG_NUMBER.search(line.text) or (absent and absent.search(line.text))
    ]
    wrong += [
        line
        for line in agent
        if line.index > lead[0].index
        and p.AGENT_WRONG_NUMBER.search(line.text)
        and not line.text.rstrip().endswith("?")
        and not re.search(r"\bif\b", line.text, re.IGNORECASE)
    ]
    if wrong:
        return WRONG_NUMBER, evidence(min(wrong, key=lambda line: line.index))
    if not agent and all(
        p.NOBODY_THERE.search(line.text) or len(line.text.split()) <= 2 for line in lead
    ):
        # "Hello? Is anyone there? I can't hear you.": the lead spoke to no one.
        return NO_CONVERSATION, evidence(lead[0])
    return CONVERSATION, ()


@dataclass
class _Proposal:
    """A day and time being discussed, over the lines that discuss it."""

    date: dt.date | None
    time: dt.time | None
    lines: list[Line] = field(default_factory=list)
    refused: bool = False

    def last(self) -> Line:
        return self.lines[-1]


def _said(line: Line, today: dt.date) -> tuple[dt.date | None, dt.time | None]:
    """The day and time a line names: the first time, and the day said last before it
    ("not Tuesday, Wednesday at ten" is Wednesday) or else the first after it."""
    days = spoken_days(line.text, today)
    times = spoken_times(line.text)
    moment = times[0] if times else None
    if not days:
        return None, moment.value if moment else None  # type: ignore[return-value]
    if moment is None:
        return days[-1].value, None  # type: ignore[return-value]
    before = [day for day in days if day.start < moment.start]
    day = before[-1] if before else days[0]
    return day.value, moment.value  # type: ignore[return-value]


def _clause_said(text: str, today: dt.date) -> str:
    """The last clause of ``text`` that names a day or a time: "Tuesday won't work, can
    we do Thursday at two?" puts Thursday at two, refusing Tuesday, not Thursday."""
    clauses = [
        clause for clause in re.split(r"[,;!?]|\.(?!\d)", text) if clause.strip()
    ]
    named = [
        clause
        for clause in clauses
        if spoken_days(clause, today) or spoken_times(clause)
    ]
    return named[-1] if named else text


def _starts_agreeing(text: str) -> bool:
    opening = " ".join(text.split()[:6])
    agrees = p.AGREE.search(opening)
    refuses = p.REFUSE.search(opening)
    if agrees is None:
        return False
    return refuses is None or refuses.start() > agrees.start()


def _proposals(lines: Sequence[Line], today: dt.date) -> list[tuple[_Proposal, Line]]:
    """Every day and time agreed, in order, with the line that agreed it: named and
    confirmed in one line ("I have you down for Tuesday at ten"), or proposed and answered
    with a yes by the other side. A day and a time said a few lines apart are one
    proposal; a new day drops the time said for another day."""
    agreed: list[tuple[_Proposal, Line]] = []
    pending: _Proposal | None = None
    for line in lines:
        date, moment = _said(line, today)
        recent = (
            pending is not None and line.index - pending.last().index <= PROPOSAL_SPAN
        )
        if date is not None or moment is not None:
            previous = pending
            if pending is not None and recent and date in (None, pending.date):
                if date is None:
                    date = pending.date
                elif moment is None and date == pending.date:
                    moment = pending.time
                lines_so_far = [*pending.lines, line]
            else:
                lines_so_far = [line]
            question = line.text.rstrip().endswith("?")
            before = lines[line.index - 1] if line.index else None
            answers = (
                before is not None
                and before.side != line.side
                and before.text.rstrip().endswith("?")
            )
            # A day and time only stated ("We close at six today") is not put to the
            # other side: their "okay" agrees to nothing.
            confirms = bool(p.CONFIRM.search(line.text))
            offered = (
                question or answers or confirms or bool(p.PROPOSE.search(line.text))
            )
            refused = not offered or (
                bool(p.REFUSE.search(_clause_said(line.text, today))) and not confirms
            )
            # "Yes, Tuesday at two" agrees to what the other side just put; a "Sounds
            # good" before a day and time of one's own agrees to something else.
            restates = (
                previous is not None
                and recent
                and previous.last().side != line.side
                and not previous.refused
                and _starts_agreeing(line.text)
            )
            pending = _Proposal(date, moment, lines_so_far, refused)
            if not question and (confirms or restates):
                agreed.append((pending, line))
            continue
        if (
            pending is not None
            and recent
            and line.side != pending.last().side
            and not pending.refused
            and _starts_agreeing(line.text)
        ):
            agreed.append((pending, line))
            pending = _Proposal(pending.date, pending.time, [*pending.lines, line])
    return agreed


def _is_visit(proposal: _Proposal, agreed_by: Line, lines: Sequence[Line]) -> bool:
    """Whether an agreed proposal is an appointment at the dealership: never one first
    said as a callback's day; a visit word in its lines or the few before; or, with no such word, a day and a time agreed with no talk of
    a callback about it ("Can I call you Tuesday at two?" is a callback)."""
    first = proposal.lines[0].index
    if p.CALLBACK_LEAD.search(proposal.lines[0].text) or p.CALLBACK_AGENT.search(
        proposal.lines[0].text
    ):
        # "Can you call me back? Thursday after five": the day is the callback's, even
        # when a visit is talked of later ("Would you want to come see the truck?").
        return False
    own = [*proposal.lines, agreed_by]
    around = [*lines[max(0, first - VISIT_LOOKBACK) : first], *own]
    if any(p.VISIT.search(line.text) for line in around):
        return True
    near = [*lines[max(0, first - 2) : first], *own]
    callback = any(
        p.CALLBACK_LEAD.search(line.text) or p.CALLBACK_AGENT.search(line.text)
        for line in near
    )
    return proposal.time is not None and not callback


def appointment_of(
    lines: Sequence[Line], today: dt.date
) -> tuple[Appointment | None, Flag | None]:
    """The last appointment agreed (a reschedule replaces the earlier one) and, when the
    last word on it was a cancellation with no new time agreed after it, that."""
    appointment: Appointment | None = None
    cancelled: Flag | None = None
    agreed = [
        (proposal, line)
        for proposal, line in _proposals(lines, today)
        if _is_visit(proposal, line, lines) and proposal.date is not None
    ]
    events: list[tuple[int, str, Any]] = [
        (line.index, "agreed", (proposal, line)) for proposal, line in agreed
    ]
    events += [
        (line.index, "cancel", line)
        for line in lines
        if p.CANCEL.search(line.text)
        and not p.NO_CANCEL.search(line.text)
        and not re.search(r"\bif\b", line.text, re.I)
    ]
    for _, what, item in sorted(
        events, key=lambda event: (event[0], event[1] == "agreed")
    ):
        if what == "cancel":
            if appointment is not None:
                appointment, cancelled = None, Flag(evidence(item))
            continue
        proposal, line = item
        said = [*proposal.lines, line]
        kind = "visit"
        if any(p.TEST_DRIVE.search(each.text) for each in lines[: line.index + 1]):
            kind = "test drive"
        elif any(p.SERVICE.search(each.text) for each in said):
            kind = "service"
        appointment = Appointment(proposal.date, proposal.time, kind, evidence(*said))
        cancelled = None
    return appointment, cancelled


def _unowned(line: Line) -> Line:
    """The line without the days it says as owning something ("tomorrow's appointment",
    "Friday's test drive"): they name what is on that day, not when to call."""
    return replace(line, text=p.DAY_OWNING.sub(" ", line.text))


def callback_of(lines: Sequence[Line], today: dt.date) -> Callback | None:
    """The last callback asked for: by the lead ("call me back tomorrow"), or offered by
    the agent ("I'll call you back at four") and not refused; with the day and time said
    in its line or the answer to it."""
    found: Callback | None = None
    for at, line in enumerate(lines):
        if p.NO_CALLBACK.search(line.text):
            continue
        asked = line.side == "lead" and p.CALLBACK_LEAD.search(line.text)
        offered = line.side == "agent" and p.CALLBACK_AGENT.search(line.text)
        if not (asked or offered):
            continue
        answer = next(
            (each for each in lines[at + 1 :] if each.side != line.side), None
        )
        if (
            offered
            and line.text.rstrip().endswith("?")
            and (answer is None or not _starts_agreeing(answer.text))
        ):
            continue
        date, moment = _said(_unowned(line), today)
        lines_used = [line]
        if date is None and moment is None and answer is not None:
            date, moment = _said(_unowned(answer), today)
            if date is not None or moment is not None:
                lines_used.append(answer)
        by = "lead" if asked else "agent"
        if (
            offered
            and found is not None
            and found.by == "lead"
            and line.index - found.evidence[-1].line <= 2
        ):
            # The agent's answer to the lead's request: still the lead's request.
            by = "lead"
            date = date or found.date
            moment = moment or found.time
            lines_used = [*(lines[item.line] for item in found.evidence), *lines_used]
        found = Callback(by, date, moment, evidence(*lines_used))
    return found


def _content_words(text: str) -> set[str]:
    return {
        word
        for word in re.findall(r"[a-z0-9']+", text.lower())
        if len(word) >= 4 and word not in p.STOP
    }


def _questions(text: str) -> list[str]:
    sentences = re.findall(r"[^.!?]*\?", text)
    asked = [p.LEADING.sub("", sentence.strip()) for sentence in sentences]
    return [
        sentence
        for sentence in asked
        if len(sentence.split()) >= 4
        and p.QUESTION_OPENERS.match(sentence)
        and not p.PHATIC.search(sentence)
    ]


def open_questions(lines: Sequence[Line]) -> list[Question]:
    """The lead's questions nothing after answered: the agent's next line is only
    questions of its own sharing no word with it (or there is none), and no later line of
    the agent's shares a word with it. A reply that says anything, or promises to find
    out, counts as an answer."""
    found = []
    for at, line in enumerate(lines):
        if line.side != "lead":
            continue
        for question in _questions(line.text):
            after = [each for each in lines[at + 1 :] if each.side == "agent"]
            if after and _addressed(question, after):
                continue
            found.append(Question(question[0].upper() + question[1:], evidence(line)))
    return found


def answered_questions(lines: Sequence[Line], today: dt.date) -> list[Question]:
    """The lead's questions about the car or the deal that the agent's next line dealt
    with (it says something, or promises to find out): not a request ("Can you call me
    back?", "Could we do Friday?") nor a day or time put forward ("Would ten be too
    early?"), which are the appointment's and the callback's."""
    found = []
    for at, line in enumerate(lines):
        if line.side != "lead":
            continue
        after = [each for each in lines[at + 1 :] if each.side == "agent"]
        if not after:
            continue
        for question in _questions(line.text):
            if p.REQUEST.match(question) or spoken_days(question, today):
                continue
            if spoken_times(question) or not _addressed(question, after[:1]):
                continue
            text = question[0].upper() + question[1:]
            found.append(Question(text, evidence(line, after[0])))
    return found


def _addressed(question: str, after: Sequence[Line]) -> bool:
    reply = after[0].text
    asked = _content_words(question)
    if any(asked & _content_words(line.text) for line in after):
        return True
    statements = [s for s in re.split(r"(?<=[.!?])\s+", reply) if not s.endswith("?")]
    if any(p.ADDRESSES.search(statement) for statement in statements if statement):
        return True
    return bool(re.search(r"let me (?:check|find out)|get back to you", reply, re.I))
