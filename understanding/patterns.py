"""The words that tell what happened on a call; each list is what people say, matched as
whole words, case-insensitively."""

from __future__ import annotations

import re


def words(*phrases: str) -> re.Pattern[str]:
    """A pattern for any of ``phrases`` (each a regular expression of whole words)."""
    return re.compile(r"(?<!\w)(?:" + "|".join(phrases) + r")(?!\w)", re.IGNORECASE)


# A recorded greeting: "You've reached ..., please leave a message after the tone."
MACHINE = words(
    r"leave (?:me |us )?(?:a |your )?(?:message|name|number)",
    r"after the (?:tone|beep)",
    r"at the (?:tone|beep)",
    r"(?:forwarded|transferred) to (?:an? )?(?:automated )?voice ?mail",
    r"voice ?mail (?:box|service|system) (?:of|for|is)",
    r"mail ?box (?:is full|of|belonging)",
    r"(?:can't|cannot|can not|unable to) (?:take|answer|come to) (?:your|the|my) (?:call|phone)",
    r"(?:is|am|are) not available (?:right now|at the moment|to take)",
    r"record your message",
)
# The agent's side of a voicemail: a message left for someone who did not answer.
MESSAGE_LEFT = words(
    r"sorry (?:I|we) missed you",
    r"leaving (?:you )?a (?:quick )?message",
    r"give (?:me|us) a (?:call|ring) back",
    r"call (?:me|us) back (?:at|on|when)",
    r"when you get this",
    r"my (?:direct )?number is",
    r"you can reach me at",
)
WRONG_NUMBER = words(
    r"wrong number",
    r"(?:have|got|called) the wrong (?:person|number|guy|lady)",
    r"wrong person",
    r"(?:didn't|did not|never) fill(?:ed)? (?:out|in)(?: (?:any|a|the|that|an|this|your))? "
    r"(?:form|request|enquiry|inquiry|anything)",
    r"(?:didn't|did not|never) fill(?:ed)? (?:out|in)(?=\s*(?:[.,!?]|$))",
    r"(?:didn't|did not|never) (?:submit|request|send)(?:ed)?(?: (?:any|a|the|that|an|this))? "
    r"(?:form|request|enquiry|inquiry|anything)",
    r"(?:no one|nobody|no-one) (?:here )?(?:by|named|called) that name",
    r"(?:no one|nobody) (?:here )?named",
)
# The agent owning up to a wrong number: "Oh, sorry, wrong number", "I must have the wrong
# number" (a question or an "if" is not owning up).
AGENT_WRONG_NUMBER = words(
    r"wrong number",
    r"(?:have|got|dialed|dialled|called|reached) the wrong (?:person|number)",
    r"wrong person",
)


def not_here(first_name: str) -> re.Pattern[str] | None:
    """The lead's side saying the person asked for is not there: "There's no Cornelius
    here", "Evangeline doesn't live here"; None without a first name."""
    name = re.escape(first_name.strip())
    if not name:
        return None
    return words(
        rf"(?:there's|there is|there are) no(?:body| one)? (?:named |called )?{name}",
        rf"no {name} (?:here|at this number)",
        rf"{name} (?:doesn't|does not|don't) (?:live|work|stay) here",
    )


PURCHASED = words(
    r"already (?:bought|purchased)",
    r"(?:bought|purchased) (?:one|it|a \w+|something) (?:already|elsewhere|somewhere else)",
    r"(?:bought|purchased) (?:elsewhere|somewhere else)",
    r"already (?:got|found|picked up) (?:one|a (?:new )?(?:car|truck|vehicle|new one))",
    r"went with (?:another|a different) (?:dealer|dealership)",
)
NO_CANCEL = words(
    r"(?:don't|do not|won't|will not|not going to|no need to) (?:want to |need to )?cancel",
    r"(?:can|will|should) (?:still )?make it",
)
CANCEL = words(
    r"cancel(?:led|ling)?",
    r"(?:can't|cannot|can not|won't|will not|not going to|won't be able to) make it",
    r"(?:can't|cannot|won't) (?:come|come in|make) (?:in )?(?:any more|anymore)",
)
# Agreement with what was just proposed.
AGREE = words(
    r"yes",
    r"yeah",
    r"yep",
    r"yup",
    r"sure",
    r"ok(?:ay)?",
    r"perfect",
    r"great",
    r"sounds (?:good|great|perfect|fine)",
    r"(?:that|this|it) works",
    r"works (?:for me|for us|great|fine)",
    r"(?:that's|that is|is) (?:fine|good|great|perfect)",
    r"see you (?:then|there|soon)",
    r"deal",
    r"let's do (?:it|that)",
    r"absolutely",
    r"definitely",
    r"i'll be there",
    r"we'll be there",
    r"i can do (?:that|it)",
    r"done",
)
# A time agreed in the line that names it: "Thursday at two thirty works for me", "I have
# you down for Tuesday at ten".
# A lead who hears no one: "Hello? Is anyone there? I can't hear you."
NOBODY_THERE = words(
    r"hello",
    r"(?:is )?any(?:one|body) there",
    r"(?:can't|cannot|can not) hear (?:you|anything)",
    r"who is this",
)
CONFIRM = words(
    r"works for (?:me|us)",
    r"(?:that|this|it) works",
    r"is (?:fine|good|great|perfect)",
    r"works(?=\s*(?:[.,!]|$))",
    r"it is(?=\s*(?:[.!]|$))",
    r"see you",
    r"(?:have|put|got|booked|pencil(?:ed)?|set) you (?:down|in|up)",
    r"you're (?:all )?(?:set|booked|confirmed)",
    r"(?:booked|confirmed|scheduled) (?:you |it |that )?for",
    r"i'll be there",
    r"we'll be there",
    r"let's (?:do|say|go with|make it)",
    r"i can do",
)
# Words that put a day and time to the other side ("How about Tuesday at two?").
PROPOSE = words(
    r"how about",
    r"what about",
    r"(?:can|could|would|will|shall) (?:you|we|I)",
    r"(?:you|we|I) (?:can|could)",
    r"let's",
    r"maybe",
    r"(?:I'm|I am|we're|we are) (?:free|available|around|off)",
    r"I (?:can|could) (?:do|come|make)",
    r"works?",
    r"(?:is|are) (?:good|better|best|fine)",
    r"would be",
    r"instead",
    r"(?:come|stop|swing|drop) (?:in|by)",
    r"see you",
)
REFUSE = words(
    r"no(?! problem| worries)",
    r"nope",
    r"nah",
    r"(?:can't|cannot|can not|won't) (?:do|make)",
    r"doesn't work",
    r"does not work",
    r"won't work",
    r"not (?:good|great|possible|available)",
    r"busy",
)
# Words that make a day and time an appointment at the dealership, not a callback.
VISIT = words(
    r"come (?:in|by|down|over|see)",
    r"stop (?:in|by)",
    r"swing by",
    r"drop (?:in|by)",
    r"appointment",
    r"test ?drive",
    r"visit",
    r"see you",
    r"see (?:it|the car|the truck) in person",
    r"bring (?:it|her|him|the \w+) in",
    r"(?:have|put|got|booked|pencil(?:ed)?) you (?:down|in)",
    r"book(?:ed)?",
    r"schedul(?:e|ed)",
    r"meet",
    r"showroom",
    r"be there",
    r"come to the (?:store|dealership|lot)",
    r"reschedul(?:e|ed)",
    r"move (?:it|that|the appointment)",
)
TEST_DRIVE = words(r"test ?drive")
SERVICE = words(
    r"service (?:appointment|department)",
    r"oil change",
    r"maintenance",
    r"bring (?:it|her|him) in for",
)
# A day said as owning something: "tomorrow's appointment", "Friday's test drive".
DAY_OWNING = words(
    r"(?:today|tonight|tomorrow|monday|tuesday|wednesday|thursday|friday|saturday|"
    r"sunday)(?:'s|\u2019s)"
)
CALLBACK_LEAD = words(
    r"call (?:me|us|him|her|them) back",
    r"call back",
    r"callback",
    r"call me (?:later|tomorrow|tonight|next week|in the|this|on|after|around|at)",
    r"give me a (?:call|ring)",
    r"try me (?:again|later|tomorrow)",
    r"reach me (?:later|tomorrow|after|at|on)",
)
CALLBACK_AGENT = words(
    r"(?:I'll|I will|I'm going to|I am going to|let me|can I|could I|should I|may I|"
    r"I can|we'll|we will) (?:call|give|ring|try) you (?:back|a call|a ring|again)",
    r"(?:I'll|I will|can I|could I) (?:call|reach|touch base with|follow up with) you "
    r"(?:back |again )?(?:later|tomorrow|tonight|next week|on|at|after|around)",
)
NO_CALLBACK = words(
    r"(?:don't|do not|no need to|not necessary to) (?:call|bother)",
    r"stop calling",
)
SEND_INFO = words(
    r"(?:e-?mail|text|send|shoot|forward)(?: (?:you|me|it|that|them|those|over|along|"
    r"across|the|a|my|your|our|some|all|quick))* (?:price|prices|pricing|details|info|"
    r"information|quote|numbers|link|listing|pictures|photos|picture|brochure|specs|"
    r"breakdown|figures|options|payment|payments|offer|window sticker)",
    r"(?:send|e-?mail|text|shoot) (?:it|that|them|those|everything) (?:over|to (?:me|you))",
    r"(?:I'll|I will|I'm going to|let me|can you|could you|just) (?:e-?mail|text|send) "
    r"(?:you|me)",
)
NO_SEND = words(r"(?:don't|do not|no need to) (?:e-?mail|text|send)")
NOT_INTERESTED = words(
    r"not (?:really |actually )?interested(?! in\b)",
    r"no longer interested",
    r"(?:changed|change) (?:my|our) minds?(?=\s*(?:[.!]|$))",
    r"not in the market",
    r"not looking (?:any more|anymore)",
    r"stop calling",
    r"take me off",
    r"(?:don't|do not) (?:need|want) (?:a|the|any) (?:car|truck|vehicle)",
)
# The lead asking not to be called again ("don't call me again", "take me off your
# list"): a revocation of consent to calls, suggested for a person to confirm. Bare
# "don't call me" / "stop calling me" count only where the clause ends there, so "don't
# call me before 5" and "stop calling me by my first name" do not.
CLAUSE_END = r"(?=\s*(?:[.!?;]|$|,?\s*(?:please|thanks|thank you|okay|ok)\b))"
DO_NOT_CALL = words(
    r"(?:don't|do not|never|please don't|please do not) (?:ever )?(?:call|ring|phone) "
    r"(?:me|this number|us|here|my (?:phone|number|cell))(?: ever)? "
    r"(?:again|anymore|any more|ever again)",
    r"(?:don't|do not|never) (?:ever )?(?:call|ring|phone) "
    r"(?:me|this number|us|my (?:phone|number|cell))" + CLAUSE_END,
    r"stop (?:calling|ringing|phoning)(?: (?:me|this number|us|my (?:phone|number|cell)))?"
    r"(?: (?:again|anymore|any more|every day|all the time|so much|constantly))?"
    + CLAUSE_END,
    r"(?:take|get|cross) (?:me|my (?:phone )?number|my name|this number) off "
    r"(?:of )?(?:your|the|this) (?:calling |call |contact |phone |mailing )?lists?",
    r"(?:remove|delete|erase) (?:me|my (?:phone |cell )?number|this number|my "
    r"details|my info(?:rmation)?)(?: from (?:your|the) (?:calling |call |contact )?"
    r"(?:list|lists|system|database|records))?" + CLAUSE_END,
    r"(?:remove|delete|erase) (?:me|my (?:phone |cell )?number|this number) from "
    r"(?:your|the) (?:calling |call |contact )?(?:list|lists|system|database|records)",
    r"(?:put|add) (?:me|my (?:phone )?number|this number) (?:on|to) (?:your|the) "
    r"do[ -]not[ -]call list",
    r"(?:I )?(?:don't|do not) want (?:any more|anymore|any|more|these|your) "
    r"(?:phone )?calls",
    r"(?:don't|do not) want (?:you|anyone|you guys|y'all) (?:to )?(?:call|calling|ring) "
    r"(?:me )?(?:again|anymore|any more)",
    r"(?:no|don't|do not) (?:more|want) (?:calls|phone calls)(?: please)?" + CLAUSE_END,
)
OBJECTIONS = {
    "price": words(
        r"too (?:expensive|pricey|much|high)",
        r"(?:price|payment|payments|rate|interest|monthly) (?:is|are|was|seems?) "
        r"(?:too |a bit |kind of |pretty )?(?:high|steep|much)",
        r"(?:out of|over|above|outside) (?:my|our) (?:budget|price range)",
        r"(?:can't|cannot|can not) afford",
        r"(?:better|lower|best) (?:price|deal|rate|payment)",
        r"cheaper",
    ),
    "timing": words(
        r"not ready",
        r"just (?:looking|browsing|starting)",
        r"not in a (?:hurry|rush)",
        r"(?:in a |next )(?:few months|couple (?:of )?months|year)",
        r"not (?:right )?now",
        r"down the road",
        r"not (?:buying|this) (?:yet|week|month)",
        r"(?:after|until) (?:the holidays|tax season|my lease)",
    ),
    "spouse": words(
        r"(?:talk|speak|check|discuss it|run it by|ask) (?:to |with )?my "
        r"(?:wife|husband|spouse|partner)",
        r"my (?:wife|husband|spouse|partner) (?:has to|needs to|wants to|would need|decides)",
    ),
    "elsewhere": words(
        r"(?:another|other|a different) (?:dealer|dealership|dealers|lot)",
        r"shopping around",
        r"(?:looking|checking) (?:at )?(?:other|a few other) (?:places|dealers|options)",
        r"(?:quote|offer|price) from",
        r"carmax",
        r"carvana",
    ),
}
TRADE = words(r"trad(?:e|ing)(?:[\s-]+in)?", r"trade-ins?", r"part[\s-]?ex(?:change)?")
NO_TRADE = words(
    r"no trade(?:[\s-]in)?",
    r"(?:don't|do not|won't|will not|not going to) (?:have )?(?:a |any )?trad(?:e|ing)",
    r"(?:don't|do not) have (?:a |any(?:thing)? )?(?:trade|car|vehicle|anything)",
    r"not trading",
    r"nothing to trade",
    r"(?:sold|totaled|totalled) (?:it|my|the)",
    r"keeping (?:it|my|the)",
)
# The lead's own car, not one they are shopping for.
OWNED = words(
    r"my",
    r"mine",
    r"(?:I|we) (?:currently |still )?(?:have|own|drive|'ve got)",
    r"(?:I'm|I am|we're|we are|I've been|we've been) (?:currently |still )?driving",
)
ANSWER_NO = re.compile(r"^\W*(?:no|nope|nah|not really)\b", re.IGNORECASE)
ANSWER_YES = re.compile(
    r"^\W*(?:yes|yeah|yep|yup|sure|I do|we do|I have|we have)\b", re.IGNORECASE
)
# The agent's reply that deals with a question even when it does not answer it yet.
ADDRESSES = words(
    r"let me (?:check|find out|see|look|ask)",
    r"(?:I'll|I will|I'm going to|I can) (?:check|find out|look into|get back|ask|confirm|send)",
    r"good question",
    r"great question",
    r"(?:yes|yeah|yep|no|sure|absolutely|definitely|of course)",
    r"(?:it|it's|that's|that|they|there|we|we've|we're|you|you'll|you'd)\s+\w+",
    r"\$?\d",
)
QUESTION_OPENERS = words(
    r"what",
    r"what's",
    r"which",
    r"when",
    r"where",
    r"how",
    r"how's",
    r"why",
    r"who",
    r"(?:do|does|did|is|are|was|were|can|could|will|would|should|has|have) "
    r"(?:you|it|this|that|the|they|there|he|she|we|y'all)",
)
# Words a question may start with before its opener: "And has it been in an accident?"
LEADING = re.compile(
    r"^(?:(?:and|so|also|but|oh|okay|ok|well|um|uh|hm+|then)\b[\s,]*)+", re.IGNORECASE
)
# A question that asks the other side to do something, not to tell something.
REQUEST = re.compile(
    r"^(?:can|could|would|will|should|may|shall)\s+(?:I|we|you|y'all)\b", re.IGNORECASE
)
PHATIC = words(
    r"how are you",
    r"how's it going",
    r"who is this",
    r"who's this",
    r"who's calling",
    r"are you there",
    r"can you hear me",
    r"what was that",
    r"sorry\?",
    r"hello",
    r"is this",
)
STOP = {
    "what",
    "which",
    "when",
    "where",
    "does",
    "have",
    "that",
    "this",
    "with",
    "your",
    "about",
    "there",
    "they",
    "will",
    "would",
    "could",
    "should",
    "there's",
    "it's",
    "what's",
    "from",
    "just",
    "like",
    "know",
    "want",
    "much",
    "many",
    "also",
    "still",
    "then",
    "than",
    "them",
    "these",
    "those",
    "here",
    "were",
    "been",
    "being",
    "into",
}
