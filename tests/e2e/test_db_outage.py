"""A database outage answers 503 with a short Retry-After that grows with
the outage (docs/cluster.md, "Retry-After during an outage"): seconds at
first, never the operator's 10 minutes, at most 30 s."""

import time

import weave
from weave import db_start, db_stop, new_user, request

OUTAGE = 8.0  # seconds of requests while the database is down


def test_a_database_outage_gives_a_short_retry_after_that_grows():
    assert int(weave.read_config().get("retry_after", "600")) >= 30
    user, pw = new_user("outage")
    path = f"1.0/{user}/storage/tabs"  # every read of records asks the database
    assert request("GET", path, user=user, password=pw).status == 200
    db_stop()
    answers = []  # (seconds into the outage, Retry-After, X-Weave-Backoff)
    try:
        # Without a pause, so that mod_fcgid keeps handing the requests to
        # the same busy process: the outage clock is each process's own.
        t0 = time.monotonic()
        while time.monotonic() - t0 < OUTAGE:
            r = request("GET", path, user=user, password=pw)
            assert r.status == 503, r
            answers.append((time.monotonic() - t0, int(r.headers.get("Retry-After")),
                            int(r.headers.get("X-Weave-Backoff"))))
    finally:
        db_start()
    for _, retry, backoff in answers:
        assert 1 <= retry <= 30 and backoff == retry, answers[:5]
    assert answers[0][1] <= 2, answers[:5]
    # A process that has seen the database gone for 6 s or more says 8 s
    # (the smallest power of two not below 6), not 1.
    late = [retry for t, retry, _ in answers if t >= 6.5]
    assert late and max(late) >= 8, (late[:20], answers[-5:])
    for _ in range(12):
        assert request("GET", path, user=user, password=pw).status == 200
