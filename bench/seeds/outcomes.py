"""Part 2's intake leads by outcome (``bench/endpoints.py``): how many leads of an account
each outcome has, warm-up included, to show beside the HTTP errors.

Run as ``python bench/seeds/outcomes.py ACCOUNT`` in the service's checkout; prints
``{outcome: count}`` as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import django


def outcomes(*, account: int) -> dict[str, int]:
    """The account's leads counted by outcome."""
    from django.db.models import Count

    from leads.models import Lead

    counts = (
        Lead.objects.filter(account_id=account)
        .values_list("outcome")
        .annotate(n=Count("id"))
    )
    return dict(counts)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="bench/seeds/outcomes.py", description=__doc__
    )
    parser.add_argument("account", type=int, help="the account's id")
    arguments = parser.parse_args(argv)
    print(json.dumps(outcomes(account=arguments.account)))


if __name__ == "__main__":
    # The service's code is the checkout this runs in (the working directory), not this
    # file's folder, which Python put first and whose modules would shadow the service's
    # apps (``pages``, ``texting``).
    sys.path[0] = os.getcwd()
    django.setup()
    main(sys.argv[1:])
