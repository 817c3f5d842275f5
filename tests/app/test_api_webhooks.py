"""Webhooks end to end: a job with `callback_url` run by a real worker, its events
POSTed to a real HTTP receiver that checks the HMAC signature with its own code;
retries on 500 until it accepts, redirects never followed, addresses the deployment
does not allow refused at submit and again at delivery."""
from __future__ import annotations

import httpx
import pytest

from api_helpers import upload
from job_polling import wait_for_job_view
from live_services import LIVE_KEY, MAX_ATTEMPTS, WebhookReceiver, wait_for_delivery_end
from ocr_samples import multi_page_pdf

KEY = LIVE_KEY


@pytest.fixture(scope="module")
def receiver():
    # Bound to every loopback address: 127.0.0.2 reaches it too (the address only the API allows).
    server = WebhookReceiver(host="0.0.0.0")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def services(live_services):
    return live_services


@pytest.fixture(scope="module")
def client(services, receiver):
    with httpx.Client(base_url=services.base_url, headers=services.headers, timeout=30) as api:
        receiver.secret = api.get("/v1/webhooks/secret").json()["secret"]
        yield api


def _submit(client, callback_url: str) -> httpx.Response:
    return client.post("/v1/jobs", files=upload(("two.pdf", multi_page_pdf(2))),
                       data={"formats": "md", "callback_url": callback_url})


def test_a_done_job_is_delivered_signed_after_the_receivers_500s(client, receiver):
    url = f"http://127.0.0.1:{receiver.port}/hook"
    receiver.answers["/hook"] = [500, 500, 200]
    submitted = _submit(client, url)
    assert submitted.status_code == 202, submitted.text
    job_id = submitted.json()["id"]
    assert submitted.json()["callback_url"] == url
    assert wait_for_job_view(client, job_id, {}, timeout_s=120)["state"] == "done"
    [delivery] = wait_for_delivery_end(client, job_id, {})
    assert delivery["state"] == "delivered" and delivery["attempts"] == 3
    assert [attempt["status"] for attempt in delivery["attempts_log"]] == [500, 500, 200]
    posts = receiver.posts("/hook")
    assert len(posts) == 3 and all(post["signature_ok"] for post in posts)
    assert posts[0]["body"] == posts[2]["body"]   # the same event each time, signed afresh
    [event, *_] = receiver.events("/hook")
    assert event["type"] == "job.done" and event["job_id"] == job_id and event["data"]["pages_done"] == 2
    assert posts[0]["headers"]["X-Ocrserve-Event"] == "job.done"
    assert posts[0]["headers"]["Host"] == f"127.0.0.1:{receiver.port}"


def test_a_changed_secret_signs_the_next_delivery_and_the_old_one_fails_the_check(client, receiver):
    old = receiver.secret
    new = client.post("/v1/webhooks/secret").json()["secret"]
    assert new != old and client.get("/v1/webhooks/secret").json()["secret"] == new
    receiver.answers["/rotated"] = [200]
    job_id = _submit(client, f"http://127.0.0.1:{receiver.port}/rotated").json()["id"]
    wait_for_delivery_end(client, job_id, {})
    assert not receiver.posts("/rotated")[0]["signature_ok"]   # the receiver still holds the old secret
    receiver.secret = new
    assert receiver.signature_ok(receiver.posts("/rotated")[0]["headers"], receiver.posts("/rotated")[0]["body"])


def test_a_redirect_is_never_followed(client, receiver):
    receiver.answers["/moved"] = [302]
    job_id = _submit(client, f"http://127.0.0.1:{receiver.port}/moved").json()["id"]
    [delivery] = wait_for_delivery_end(client, job_id, {})
    assert delivery["state"] == "failed" and delivery["attempts"] == MAX_ATTEMPTS
    assert delivery["last_status"] == 302 and "redirects are not followed" in delivery["last_error"]
    assert len(receiver.posts("/moved")) == MAX_ATTEMPTS and receiver.posts("/elsewhere") == []
    assert wait_for_job_view(client, job_id, {})["state"] == "done"   # a failed delivery leaves the job be


@pytest.mark.parametrize("url, words", [
    ("http://10.1.2.3/hook", "not one this server may call"),
    ("http://169.254.169.254/latest/meta-data", "not one this server may call"),
    ("http://localhost:9/hook", "not one this server may call"),
    ("file:///etc/passwd", "http or https"),
    ("gopher://127.0.0.1/", "http or https"),
    ("http://user:pw@127.0.0.1/hook", "user name or password"),
])
def test_addresses_the_deployment_does_not_allow_are_refused_at_submit(client, url, words):
    refused = _submit(client, url)
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "callback_url_not_allowed" and words in refused.json()["error"]["message"]


def test_an_address_the_workers_do_not_allow_is_refused_again_at_delivery(client, receiver):
    """The API allowed 127.0.0.2 when the job was sent; the workers, which deliver, do not now: the
    delivery is checked again, refused without a connection and not retried."""
    job_id = _submit(client, f"http://127.0.0.2:{receiver.port}/inner").json()["id"]
    [delivery] = wait_for_delivery_end(client, job_id, {})
    assert delivery["state"] == "failed" and delivery["attempts"] == 1 and delivery["last_status"] is None
    assert "may not call" in delivery["last_error"] or "not one this server may call" in delivery["last_error"]
    assert receiver.posts("/inner") == []


def test_a_job_cancelled_through_the_api_is_delivered_from_the_workers_outbox(client, services, receiver):
    """The API process makes the change; a worker, which shares only the job store, delivers it."""
    job_id = services.queued_job(KEY, callback_url=f"http://127.0.0.1:{receiver.port}/cancelled")
    assert client.delete(f"/v1/jobs/{job_id}").json()["state"] == "cancelled"
    [delivery] = wait_for_delivery_end(client, job_id, {})
    assert delivery["state"] == "delivered" and delivery["attempts"] == 1
    [post] = receiver.posts("/cancelled")
    assert post["signature_ok"] and receiver.events("/cancelled")[0]["type"] == "job.cancelled"


def test_another_key_sees_no_deliveries_of_the_job(client, services, receiver):
    job_id = _submit(client, f"http://127.0.0.1:{receiver.port}/hook").json()["id"]
    assert httpx.get(f"{services.base_url}/v1/jobs/{job_id}/deliveries").status_code == 401
