"""A database outage answers 503 with a short Retry-After that grows with
the outage (docs/cluster.md, "Retry-After during an outage"): seconds at
first, never the operator's 10 minutes, at most 30 s."""

import time

import weave
from weave import db_start, db_stop, new_user, request


def _answers(path, user, pw, count):
    got = []
    for _ in range(count):
        r = request("GET", path, user=user, password=pw)
        assert r.status == 503, r
        got.append((int(r.headers.get("Retry-After")), int(r.headers.get("X-Weave-Backoff"))))
    return got


def test_a_database_outage_gives_a_short_retry_after_that_grows():
    assert int(weave.read_config().get("retry_after", "600")) >= 30
    user, pw = new_user("outage")
    path = f"1.0/{user}/storage/tabs"  # every read of records asks the database
    assert request("GET", path, user=user, password=pw).status == 200
    db_stop()
    try:
        early = _answers(path, user, pw, 20)
        time.sleep(6)
        late = _answers(path, user, pw, 20)
    finally:
        db_start()
    for retry, backoff in early + late:
        assert 1 <= retry <= 30, (early, late)
        assert backoff == retry, (early, late)
    assert min(r for r, _ in early) <= 2, early
    # A process that has seen the database gone for 6 s says at least 8 s
    # (the smallest power of two not below 6); the 20 requests reach some
    # process that served the early ones.
    assert max(r for r, _ in late) >= 8, late
    for _ in range(12):
        assert request("GET", path, user=user, password=pw).status == 200
