"""Pages for scorers, managers, global managers and agents (server-rendered; htmx only
enhances). Every page reads through scoring/selectors.py and writes through
scoring/services.py: a call the user may not see is not found (404)."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from datetime import datetime, time
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseRedirect,
    StreamingHttpResponse,
)
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.functional import cached_property
from django.views.decorators.http import require_POST, require_safe

from calls.models import Call
from calls.transcripts import language_name, speaker_names
from handoffs.selectors import handoffs_open_of, speed_figures
from insights.selectors import summary_evidence_of
from notify.selectors import call_told_visible
from pages.appointment_figures import appointment_rows
from pages.appointments import appointment_card
from pages.filters import CallFilter
from pages.forms import AppointmentForm, DashboardForm, ScoreForm, score_initial
from pages.leaderboard import leaderboard
from pages.views_cadence import cadence_card
from pages.views_consent import spoken_revocation_card
from pages.views_thread import thread_context
from scoring.figures import dashboard_figures
from scoring.models import CATEGORY_SLOTS, RevisionKind, Score, Scorecard
from scoring.records import pieces, record_builders, rows
from scoring.selectors import (
    accounts_coachable_by,
    call_attempts,
    call_get_scorable,
    call_get_visible,
    call_may_be_coached_by,
    call_may_be_scored_by,
    calls_visible_to,
    roles_of,
    score_of,
    score_revisions,
    scorecard_of,
    scores_by,
    scores_per_hour,
    scoring_queue_by_account,
    suggestions_of,
)
from scoring.services import (
    categories_snapshot,
    coaching_mark_read,
    coaching_save,
    score_save,
    scorecard_default_parts,
    scoring_claim_next,
    scoring_claim_release,
)
from scoring.suggestions import transcript_lines
from understanding import LANGUAGES
from users.models import User

CALLS_PER_PAGE = 50
# Counting every call in reach costs a scan of all of them; past this many the browser
# says "more than" and the filters narrow it down.
COUNT_UP_TO = 10_000
# What the table shows of a call, its agent and its score (pages/partials/
# call_table.html): a call has some 50 columns, among them its transcript and turns.
TABLE_FIELDS = (
    "received_at",
    "account__name",
    "first_name",
    "last_name",
    "phone",
    "source",
    "agent__first_name",
    "agent__last_name",
    "vendor_agent_id",
    "agent_number",
    "status",
    "response_time",
    "duration",
    "score__category_points",
    *(f"score__cat{slot}" for slot in range(1, CATEGORY_SLOTS + 1)),
    "score__wow",
    "score__coached_at",
    "score__call_end",
)


class CappedPaginator(Paginator):
    """Counts at most ``COUNT_UP_TO + 1`` rows: enough to say "more than 10,000". The
    count drops the page's order: any 10,001 rows say as much as the first 10,001, and
    PostgreSQL then reads them in table order instead of walking the received index and
    fetching each row it names (100,000 calls, 40 runs each interleaved, median:
    20.9 -> 6.6 ms on a loaded machine)."""

    @cached_property
    def count(self) -> int:
        return self.object_list.order_by()[: COUNT_UP_TO + 1].count()  # type: ignore[attr-defined]


def _user(request: HttpRequest) -> User:
    return request.user  # type: ignore[return-value]


def recording_src(url: str) -> str:
    """The service's own recording links as paths, so the player loads them from whatever
    address served the page; a provider's links as they are."""
    base = settings.PUBLIC_BASE_URL
    return url[len(base) :] if base and url.startswith(base + "/") else url


@login_required
@require_safe
def home(request: HttpRequest) -> HttpResponse:
    """Each role's first page: scorers score, managers watch speed to lead, agents read
    their coaching on their own page; anyone else browses the calls they reach."""
    roles = roles_of(_user(request))
    if roles.scorer and not roles.staff:
        return redirect("pages:scoring-home")
    if roles.manager:
        return redirect("pages:dashboard")
    if roles.agent:
        return redirect("pages:agent-home")
    return redirect("pages:call-list")


# --- call browser, export and call page


def _filtered(request: HttpRequest) -> CallFilter:
    user = _user(request)
    calls = calls_visible_to(user).select_related("account", "agent", "score")
    return CallFilter(request.GET, queryset=calls, user=user)


@login_required
@require_safe
def call_list(request: HttpRequest) -> HttpResponse:
    """The calls the user may see, filtered, sorted and paged by URL parameters."""
    filtered = _filtered(request)
    calls = filtered.qs
    if filtered.form.is_valid():
        calls = calls.order_by(*(calls.query.order_by or ["-received_at"]), "-id")
    # Page through ids, then read the page's 50 calls with their joins: sorting narrow
    # rows stays in memory where sorting whole joined rows of 100,000 calls spills to disk.
    page = CappedPaginator(calls.values_list("pk", flat=True), CALLS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    ids = list(page.object_list)
    by_id = {
        call.pk: call
        for call in filtered.queryset.filter(pk__in=ids).only(*TABLE_FIELDS)
    }
    page.object_list = [by_id[pk] for pk in ids if pk in by_id]
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "section": "calls",
        "filter": filtered,
        "page_obj": page,
        "calls": page.object_list,
        "query_without_page": query.urlencode(),
        "more_than": COUNT_UP_TO if page.paginator.count > COUNT_UP_TO else None,
        "sort": request.GET.get("sort", ""),
    }
    template = (
        "pages/partials/call_table.html"
        if request.headers.get("HX-Request")
        and request.headers.get("HX-Target") == "results"
        else "pages/call_list.html"
    )
    return render(request, template, context)


class _Echo:
    """csv.writer's file: hands each line back instead of storing it."""

    def write(self, value: str) -> str:
        return value


@login_required
@require_safe
def call_export(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """The filtered calls as CSV with the members of part 2.3, streamed in chunks."""
    filtered = _filtered(request)
    if not filtered.is_valid():
        return HttpResponseBadRequest(
            "Some filters are not valid: " + filtered.errors.as_text(),
            content_type="text/plain; charset=utf-8",
        )
    writer = csv.writer(_Echo())
    # The page's sort, when one is asked for; the record's date order otherwise.
    ordering = [str(term) for term in filtered.qs.query.order_by]

    def lines() -> Iterator[str]:
        header_written = False
        builders = record_builders(filtered.accounts)
        for row in rows(filtered.qs, ordering=ordering):
            record = builders[row["account_id"]].json(row)
            if not header_written:
                header_written = True
                yield writer.writerow(record.keys())
            yield writer.writerow(record.values())
        if not header_written:
            yield writer.writerow(["id"])

    stamp = timezone.localtime().strftime("%Y%m%d-%H%M")
    response = StreamingHttpResponse(
        pieces(line.encode() for line in lines()),
        content_type="text/csv; charset=utf-8",
    )
    response["Content-Disposition"] = f'attachment; filename="calls-{stamp}.csv"'
    return response


def _visible_call(request: HttpRequest, call_id: int) -> Call:
    call = call_get_visible(user=_user(request), call_id=call_id)
    if call is None:
        raise Http404("No such call.")
    return call


def _scorable_call(request: HttpRequest, call_id: int) -> Call:
    call = call_get_scorable(user=_user(request), call_id=call_id)
    if call is None:
        raise Http404("No such call.")
    return call


@login_required
@require_safe
def call_detail(request: HttpRequest, call_id: int) -> HttpResponse:
    """One call: recording, lead, attempts, score with category names, revisions, coaching,
    appointments, and the lead's thread of texts and calls."""
    call = _visible_call(request, call_id)
    context = call_page_context(call=call, user=_user(request))
    return render(request, "pages/call_detail.html", context)


def call_page_context(
    *,
    call: Call,
    user: User,
    appointment_form: AppointmentForm | None = None,
    appointment_problem: str = "",
) -> dict[str, Any]:
    """What the call page shows ``user`` (its appointment card with the form and problem
    of a refused change, when one is given)."""
    score = score_of(call=call)
    coachable = score is not None and call_may_be_coached_by(user=user, call=call)
    categories = []
    if score is not None:
        categories = [
            (slot, name, getattr(score, f"cat{slot}"))
            for slot, name in enumerate(score.category_names, start=1)
            if name
        ]
    return {
        "section": "calls",
        "call": call,
        "score": score,
        "categories": categories,
        "attempts": call_attempts(call=call),
        "revisions": _revision_lines(call) if score else [],
        "coachable": coachable,
        # A manager's "don't call again", a spoken one to decide (pages/views_consent.py).
        "may_mark_do_not_call": call_may_be_coached_by(user=user, call=call),
        "spoken_revocation": spoken_revocation_card(call=call, user=user),
        "is_agent": call.agent_id == user.pk,
        "may_score": call_may_be_scored_by(user=user, call=call),
        "recording": recording_src(call.recording_url),
        **_transcript_context(call),
        **thread_context(call=call, user=user),
        "told": _told(call=call, user=user),
        "cadence_card": cadence_card(call=call, user=user),
        "appointment_card": appointment_card(
            call=call, user=user, form=appointment_form, problem=appointment_problem
        ),
    }


def _told(*, call: Call, user: User) -> dict[str, Any] | None:
    """The card of who was told of the call (notify's alerts and CRM write-backs), for
    those who may coach it."""
    told = call_told_visible(call=call, user=user)
    if told is None:
        return None
    return {"messages": told, "zone": call.account.timezone}


def _transcript_context(call: Call) -> dict[str, Any]:
    """What the transcript partial shows: the transcript line by line (for the list the
    player seeks from), the summary's sentences with their evidence, and the language the
    lead spoke."""
    transcript = transcript_lines(call.transcript_turns or [], speaker_names(call))
    return {
        "transcript": transcript,
        "summary_sentences": _summary_sentences(call, transcript),
        "language": language_name(call.transcript_language),
        "language_read": call.transcript_language in ("", *LANGUAGES),
    }


def _summary_sentences(
    call: Call, transcript: list[dict[str, Any]]
) -> list[dict[str, str]]:
    """The summary's sentences, each with the transcript lines it was written from as the
    text shown on hover; empty when the summary has no kept evidence."""
    sentences = []
    for item in summary_evidence_of(call=call):
        said = [
            f"Line {line['index'] + 1} ({line['clock']}) {line['speaker']}: {line['text']}"
            for number in item["lines"]
            if 0 <= number < len(transcript)
            for line in [transcript[number]]
        ]
        sentences.append(
            {
                "text": item["sentence"],
                "title": "\n".join(said) or "Not from a particular line",
            }
        )
    return sentences


def _revision_lines(call: Call) -> list[tuple[Any, str]]:
    """Each revision with what it changed, in words ("first score" for the first)."""
    lines = []
    for revision in score_revisions(call=call):
        olds = [old for old, _ in revision.changes.values()]
        if revision.kind == RevisionKind.SCORE and all(old is None for old in olds):
            what = "first score"
        elif revision.kind == RevisionKind.COACHING:
            what = _coaching_change(revision.changes)
        else:
            what = (
                ", ".join(
                    revision.score.member_label(member)
                    for member in sorted(revision.changes)
                )
                or "no change"
            )
        lines.append((revision, what))
    return lines


def _coaching_change(changes: dict[str, list[Any]]) -> str:
    """What a coaching revision did to the notes, as a person says it (the line already
    names the coach, so a change of coach alone reads "notes taken over")."""
    notes = changes.get("coach_notes")
    if notes is None:
        return "notes taken over" if "coached_by" in changes else "no change"
    old, new = notes
    if not old:
        return "notes written"
    if not new:
        return "notes cleared"
    return "notes changed"


@login_required
@require_POST
def call_coach(request: HttpRequest, call_id: int) -> HttpResponse:
    """Save a manager's coaching notes on a scored call."""
    call = _visible_call(request, call_id)
    try:
        coaching_save(
            call=call, coach=_user(request), notes=request.POST.get("notes", "")
        )
    except ValidationError as error:
        for message in error.messages:
            messages.error(request, message)
    else:
        messages.success(
            request, "Coaching notes saved; the agent sees them on this call."
        )
    return redirect("pages:call-detail", call_id=call.pk)


@login_required
@require_POST
def call_coaching_read(request: HttpRequest, call_id: int) -> HttpResponse:
    """The call's agent marks its coaching read."""
    call = _visible_call(request, call_id)
    if coaching_mark_read(call=call, agent=_user(request)):
        messages.success(request, "Coaching marked as read.")
    return redirect("pages:call-detail", call_id=call.pk)


# --- scoring workspace


def _scorer(request: HttpRequest) -> User:
    user = _user(request)
    if not roles_of(user).scorer:
        raise PermissionDenied("Scoring is for scorers.")
    return user


@login_required
@require_safe
def scoring_home(request: HttpRequest) -> HttpResponse:
    """The scorer's start: the queue (how many wait per account, and since when), "score
    next", and what they scored today by hour."""
    scorer = _scorer(request)
    today = datetime.combine(
        timezone.localdate(), time.min, tzinfo=timezone.get_current_timezone()
    )
    per_hour = scores_per_hour(scorer=scorer, since=today)
    by_account = scoring_queue_by_account(scorer=scorer)
    context = {
        "section": "scoring",
        "waiting": sum(row["waiting"] for row in by_account),
        "by_account": by_account,
        "scores": scores_by(scorer=scorer, since=today).order_by("-scored_at")[:200],
        "per_hour": per_hour,
        "scored_today": sum(count for _, count in per_hour),
    }
    return render(request, "pages/home.html", context)


def _next_or_home(request: HttpRequest, scorer: User) -> HttpResponseRedirect:
    call = scoring_claim_next(scorer=scorer)
    if call is None:
        messages.info(request, "The queue is empty: every answered call is scored.")
        return redirect("pages:scoring-home")
    return redirect("pages:scoring-call", call_id=call.pk)


@login_required
@require_POST
def scoring_next(request: HttpRequest) -> HttpResponse:
    """Hold the next call of the queue for this scorer and open it."""
    return _next_or_home(request, _scorer(request))


@login_required
@require_POST
def scoring_skip(request: HttpRequest, call_id: int) -> HttpResponse:
    """Give the call back to the queue and take the next one."""
    scorer = _scorer(request)
    call = _scorable_call(request, call_id)
    scoring_claim_release(call=call, scorer=scorer)
    return redirect("pages:scoring-home")


@login_required
def scoring_call(request: HttpRequest, call_id: int) -> HttpResponse:
    """Score one call: GET shows the workspace, POST saves (and with "next", opens the next)."""
    scorer = _scorer(request)
    call = _scorable_call(request, call_id)
    score: Score | None = getattr(call, "score", None)
    scorecard = scorecard_of(account=call.account)
    if scorecard is None:
        # The defaults, shown and not stored: the first score stores them (score_save).
        categories, choices = scorecard_default_parts(
            scorecard=Scorecard(account=call.account)
        )
    else:
        categories, choices = (
            list(scorecard.categories.all()),
            list(scorecard.choices.all()),
        )
    names = score.category_names if score else categories_snapshot(categories)[0]
    # Suggestions start a new score only: a saved score is what a person decided.
    suggested = None if score else suggestions_of(call=call)
    form = ScoreForm(
        request.POST if request.method == "POST" else None,
        initial=score_initial(call=call, score=score),
        categories=categories,
        choices=choices,
        category_names=names,
        category_points=(
            score.category_points if score else categories_snapshot(categories)[1]
        ),
        suggested=suggested,
    )
    if request.method == "POST":
        if form.is_valid():
            try:
                score_save(call=call, scorer=scorer, values=form.values())
            except ValidationError as error:
                _errors_inline(form, error)
            else:
                messages.success(request, f"Call {call.pk} scored.")
                if "next" in request.POST:
                    return _next_or_home(request, scorer)
                return redirect("pages:scoring-call", call_id=call.pk)
        status = 422
    elif request.method in ("GET", "HEAD"):
        status = 200
    else:
        return HttpResponse(status=405, headers={"Allow": "GET, HEAD, POST"})
    context = {
        "section": "scoring",
        "call": call,
        "score": score,
        "form": form,
        "attempts": call_attempts(call=call),
        "recording": recording_src(call.recording_url),
        **_transcript_context(call),
    }
    return render(request, "pages/score.html", context, status=status)


def _errors_inline(form: ScoreForm, error: ValidationError) -> None:
    if not hasattr(error, "error_dict"):
        for message in error.messages:
            form.add_error(None, message)
        return
    for member, problems in error.message_dict.items():
        for problem in problems:
            form.add_error(member if member in form.fields else None, problem)


# --- speed-to-lead dashboard


@login_required
@require_safe
def dashboard(request: HttpRequest) -> HttpResponse:
    """Speed to lead and agent figures over the accounts the manager may see."""
    user = _user(request)
    if not roles_of(user).manager:
        raise PermissionDenied("The dashboard is for managers.")
    form = DashboardForm(request.GET or None, user=user)
    choice = form.choice()
    figures = dashboard_figures(user=user, **choice)
    form = form.in_force(choice, user=user)
    accounts = accounts_coachable_by(user)
    if choice["account"] is not None:
        accounts = accounts.filter(pk=choice["account"].pk)
    appointments = appointment_rows(
        user=user,
        **choice,
        previous=(figures.previous_first, figures.previous_last)
        if figures.previous_first and figures.previous_last
        else None,
    )
    # Overall (key None) and per agent, from one read of the calls.
    speed = speed_figures(
        accounts=accounts, first=choice["first"], last=choice["last"], by="agent_id"
    )
    context = {
        "section": "dashboard",
        "form": form,
        "f": figures,
        "slots": range(1, CATEGORY_SLOTS + 1),
        # First touch and first human side by side, and who waits for a person now.
        "speed": speed[None],
        "handoffs": handoffs_open_of(accounts=accounts, limit=10),
        # Ranked on the first human, with the first touch and appointment rates beside.
        "leaderboard": leaderboard(
            agents=figures.agents,
            speed=speed,
            appointments=appointments["by_agent"],
        ),
        "appointments": appointments,
    }
    return render(request, "pages/dashboard.html", context)
