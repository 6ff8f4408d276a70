"""proofmatch serve: the JSON API, bounds, rate limit, inert corpus fragments, and the page in a real
browser (Debian's chromium + chromium-driver, headless, through Selenium)."""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import socket
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from fastapi import FastAPI, Request  # at module level: the endpoints' annotations resolve here
from fastapi.testclient import TestClient
from searchdata import hostile_row

from proofmatch.search.build import build_index
from proofmatch.search.display import fragment_text
from proofmatch.search.explain import explain
from proofmatch.search.index import SearchIndex
from proofmatch.search.server import (
    LOCAL_LIMITS,
    PUBLIC_LIMITS,
    BoundedLog,
    RateLimiter,
    add_arguments,
    is_loopback,
    limits_for,
    server_config,
)
from proofmatch.search.web import CSP, create_app

pytestmark = pytest.mark.usefixtures("one_thread")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
REQUIRE_BROWSER = os.environ.get("PROOFMATCH_REQUIRE_BROWSER") == "1"  # CI: a missing browser fails
SCREENSHOT = os.environ.get("PROOFMATCH_SCREENSHOT")  # also save the page's screenshot here


@pytest.fixture(scope="module")
def hostile(search_demo, tmp_path_factory):
    """A BM25 index (no model needed) of the test part whose first pair's proof is hostile XHTML."""
    d = tmp_path_factory.mktemp("hostile")
    pairs, pid = hostile_row(search_demo["pairs"], d / "pairs.parquet")
    part = pd.read_parquet(search_demo["data"])
    row = part.index[part["pair_id"] == pid][0]
    part.loc[row, "part"] = "test"
    part.at[row, "proof_tokens"] = part.at[
        row, "statement_tokens"
    ]  # so that it ranks first for its statement
    part.to_parquet(d / "data.parquet")
    build_index(d / "ix", d / "data.parquet", method="bm25", pairs_parquet=pairs, parts=["test"])
    return SearchIndex(d / "ix"), pid


def test_api_returns_the_ranked_proofs(search_index):
    client = TestClient(create_app(search_index))
    pid = str(search_index.table.loc[search_index.table["part"] == "test", "pair_id"].iloc[0])
    r = client.get("/api/search", params={"q": pid, "k": 5, "part": "test"})
    assert r.status_code == 200 and r.headers["content-security-policy"] == CSP
    body = r.json()
    _, hits = search_index.search(pid, k=5, part="test")
    assert [x["pair_id"] for x in body["results"]] == [h.pair_id for h in hits]
    assert (
        body["query"]["kind"] == "id"
        and body["index"]["method"] == "model"
        and body["scorer"] == "model"
    )
    assert "learned_score" not in body["results"][0]
    page2 = client.get("/api/search", params={"q": pid, "k": 5, "page": 2}).json()
    assert [x["rank"] for x in page2["results"]] == [6, 7, 8, 9, 10]
    html = client.get("/", params={"q": pid, "part": "test"})
    assert html.status_code == 200 and html.text.count('<li class="result') == 10
    assert "<math" in html.text and 'id="next"' in html.text and 'id="prev"' not in html.text


def test_bad_queries_are_400_with_a_reason(search_index):
    client = TestClient(create_app(search_index, max_query_chars=100))
    for params, message in [
        ({"q": ""}, "empty query"),
        ({"q": "x" * 101}, "query too long: 101 characters (limit 100)"),
        ({"q": "let $x"}, "unbalanced"),
        ({"q": "x", "k": 500}, "k must be between"),
        ({"q": "x", "part": "nope"}, "unknown part"),
        ({"q": "x", "page": 0}, "pages start at 1"),
        ({"q": "x", "page": 101}, "results 1-1000"),
    ]:
        r = client.get("/api/search", params=params)
        assert r.status_code == 400 and message in r.json()["error"], (params, r.text)
    page = client.get("/", params={"q": "let $x"})
    assert page.status_code == 400 and "unbalanced" in page.text and 'id="error"' in page.text


def test_degraded_and_unmatched_queries_carry_warnings(search_index):
    """An unknown TeX command and a query with no token in any proof are answered, with a warning
    in the JSON and beside the results on the page."""
    client = TestClient(create_app(search_index))
    body = client.get(
        "/api/search", params={"q": r"Let $\Frobnicate{x} \otimes_R M$ hold", "k": 3}
    ).json()
    assert len(body["results"]) == 3 and body["query"]["converters"] == ["texmath-tolerant"]
    assert "unknown TeX command \\Frobnicate, kept as a symbol" in body["query"]["warnings"][0]
    nothing = client.get("/api/search", params={"q": "qzxv wvkj", "k": 3}).json()
    assert "no word or symbol of the query occurs in any proof" in nothing["query"]["warnings"][-1]
    page = client.get("/", params={"q": "qzxv wvkj"})
    assert page.status_code == 200 and 'class="warning" id="warning-1"' in page.text
    assert "model&#39;s" in page.text or "model's" in page.text


def test_rate_limit_per_client(search_index):
    client = TestClient(create_app(search_index, rate_per_minute=6, burst=3))
    codes = [client.get("/api/search", params={"q": "Let $x$ be"}).status_code for _ in range(5)]
    assert codes == [200, 200, 200, 429, 429]
    r = client.get("/api/search", params={"q": "Let $x$ be"})
    assert r.json()["error"].startswith("too many requests") and int(r.headers["retry-after"]) >= 1
    assert client.get("/static/style.css").status_code == 200  # the style sheet is not counted
    lim = RateLimiter(60, 2)
    assert (
        lim.take("a", 0.0) == 0
        and lim.take("a", 0.0) == 0
        and lim.take("a", 0.0) == pytest.approx(1.0)
    )
    assert (
        lim.take("a", 1.0) == 0 and lim.take("b", 1.0) == 0
    )  # refilled one a second; clients apart
    assert is_loopback("127.0.0.1") and is_loopback("::1") and not is_loopback("0.0.0.0")


def test_page_refusals_keep_the_page_and_say_the_wait(fusion_index):
    """On the page a refusal is the page (429, Retry-After), never a bare JSON body: a refused
    explanation keeps the results of its search (kept in memory: no search token taken) and says
    the wait where the explanation would be; a refused search keeps the query in its box."""
    ix = fusion_index
    text = r"Let $f$ be continuous on $[a, b]$. Then $f$ is bounded."
    client = TestClient(create_app(ix, rate_per_minute=6, burst=2, explain_burst=1))
    first = client.get("/", params={"q": text, "part": "test"})
    assert first.status_code == 200 and first.text.count('<li class="result') == 10
    _, hits = ix.search(text, k=10, part="test")
    ok = client.get("/", params={"q": text, "part": "test", "explain": hits[0].pair_id})
    assert ok.status_code == 200 and 'id="explain-method"' in ok.text
    pid = hits[3].pair_id
    refused = client.get("/", params={"q": text, "part": "test", "explain": pid})
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) >= 1
    assert refused.headers["content-type"].startswith("text/html")
    assert refused.text.count('<li class="result') == 10  # the results are kept
    item = refused.text[refused.text.index(f'data-pair-id="{pid}"') :]
    item = item[: item.index("</li>")]
    assert 'id="explain-error"' in item and re.search(r"ask again in \d+ seconds?", item)
    assert "&lt;" not in refused.text[:200] and not refused.text.lstrip().startswith("{")
    # the kept page took no search token: one is left for a new search, then the next is refused
    assert client.get("/", params={"q": "Let $x$ be real", "part": "test"}).status_code == 200
    again = client.get("/", params={"q": "Let $y$ be prime", "part": "test"})
    assert again.status_code == 429 and int(again.headers["retry-after"]) >= 1
    assert 'id="error"' in again.text and re.search(r"Search again in \d+ seconds?", again.text)
    assert "Let $y$ be prime</textarea>" in again.text  # the query stays in its box
    # the JSON API still answers JSON
    api = client.get("/api/search", params={"q": "Let $z$"})
    assert api.status_code == 429 and api.json()["error"].startswith("too many requests")


def test_serve_limits_are_generous_on_loopback_and_set_by_flags():
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert limits_for(parser.parse_args(["ix"])) == LOCAL_LIMITS
    assert limits_for(parser.parse_args(["ix", "--host", "::1"])) == LOCAL_LIMITS
    assert limits_for(parser.parse_args(["ix", "--host", "0.0.0.0"])) == PUBLIC_LIMITS
    args = parser.parse_args(["ix", "--burst", "5", "--explain-rate-per-minute", "2"])
    assert limits_for(args) == (LOCAL_LIMITS[0], 5, 2.0, LOCAL_LIMITS[3])
    assert all(local > public for local, public in zip(LOCAL_LIMITS, PUBLIC_LIMITS))


def test_api_fusion_says_which_scorer_answered_and_explains(fusion_index):
    ix = fusion_index
    client = TestClient(create_app(ix))
    text = r"Let $f$ be continuous on $[a, b]$. Then $f$ is bounded."
    body = client.get("/api/search", params={"q": text, "k": 4, "part": "test"}).json()
    assert body["scorer"] == "fusion" and body["index"]["fusion_weight"] == 0.75
    _, hits = ix.search(text, k=4, part="test")
    for r, h in zip(body["results"], hits):
        assert (
            r["pair_id"],
            r["rank"],
            r["score"],
            r["learned_score"],
            r["bm25_score"],
            r["learned_rank"],
            r["bm25_rank"],
        ) == (h.pair_id, h.rank, h.score, h.learned, h.bm25, h.learned_rank, h.bm25_rank)
    pid = body["results"][2]["pair_id"]
    r = client.get("/api/explain", params={"q": text, "id": pid, "part": "test"})
    assert r.status_code == 200 and r.headers["content-security-policy"] == CSP
    e = r.json()
    assert e["pair_id"] == pid and e["scorer"] == "fusion" and e["method"] == "occlusion"
    assert (
        e["budget"]["perturbations"]
        == len(e["statement"]) + len(e["proof"])
        == e["budget"]["tokens"]
    )
    assert e["score"] == pytest.approx(body["results"][2]["score"], abs=1e-4)
    assert all(isinstance(t["weight"], float) for t in e["statement"] + e["proof"])


def test_explain_errors_and_rate_limit(fusion_index):
    pid = str(fusion_index.table["pair_id"].iloc[0])
    client = TestClient(
        create_app(fusion_index, max_explain_tokens=30, max_query_chars=100, explain_burst=20)
    )
    for params, message in [
        ({"q": "", "id": pid}, "empty query"),
        ({"q": "Let $x$", "id": "no/such"}, "no proof with id"),
        ({"q": "Let $x$"}, "say which proof"),
        ({"q": "x" * 101, "id": pid}, "query too long"),
        ({"q": "Let $x$", "id": pid}, "the limit is 30"),
        ({"q": "Let $x$", "id": pid, "part": "nope"}, "unknown part"),
    ]:
        r = client.get("/api/explain", params=params)
        assert r.status_code == 400 and message in r.json()["error"], (params, r.text)
    page = client.get("/", params={"q": "Let $x$ be real", "explain": "no/such"})
    assert (
        page.status_code == 400
        and 'id="explain-error"' in page.text
        and "no proof with id" in page.text
    )
    limited = TestClient(create_app(fusion_index, rate_per_minute=6, burst=2))
    codes = [
        limited.get("/api/explain", params={"q": "Let $x$", "id": pid}).status_code
        for _ in range(3)
    ]
    assert codes == [200, 200, 429]


def test_page_shows_the_halves_and_highlights_an_explanation(fusion_index):
    ix = fusion_index
    client = TestClient(create_app(ix))
    # the query's own text carries markup: its tokens must come back escaped
    text = r"Let $f$ be continuous on $[a, b]$ <img src=x onerror=alert(1)>. Then $f$ is bounded."
    html = client.get("/", params={"q": text, "part": "test"}).text
    assert html.count('<li class="result') == 10 and html.count('class="explain"') == 10
    assert "fused rank 1" in html and 'class="half learned"' in html and 'class="half bm25"' in html
    assert "fusion of npt and BM25" in html
    _, hits = ix.search(text, k=10, part="test")
    pid = hits[3].pair_id
    page = client.get("/", params={"q": text, "part": "test", "explain": pid})
    assert page.status_code == 200
    item = page.text[page.text.index(f'data-pair-id="{pid}"') :]
    item = item[: item.index("</li>")]
    assert 'id="explanation"' in item and "Occlusion" in item
    e = explain(ix, text, pid, part="test")
    spans = re.findall(r'<span class="tok (\w+)(?: math)?" data-weight="([^"]+)"', item)
    assert len(spans) == len(e["statement"]) + len(e["proof"])
    top = max(abs(t["weight"]) for t in e["statement"] + e["proof"])
    for (cls, w), t in zip(spans, e["statement"] + e["proof"]):
        assert float(w) == pytest.approx(t["weight"], rel=1e-4, abs=1e-9)
        want = (
            "zero"
            if t["weight"] == 0
            else ("pos" if t["weight"] > 0 else "neg")
            + str(max(1, min(5, math.ceil(5 * abs(t["weight"]) / top - 1e-9))))
        )
        assert cls == want
    assert "pos5" in [c for c, _ in spans] or "neg5" in [c for c, _ in spans]
    assert "<img" not in page.text and "&lt;img" in item


def test_hostile_fragment_renders_inert(hostile):
    ix, pid = hostile
    html = TestClient(create_app(ix)).get("/", params={"q": pid}).text
    proof = html[html.index(f'data-pair-id="{pid}"') :]
    proof = proof[: proof.index("</li>")]
    for bad in (
        "<script",
        "pwned",
        "onerror",
        "onclick",
        "javascript:",
        "<iframe",
        "<style",
        "<img",
        "href=",
    ):
        assert bad not in proof, bad
    assert "<math><mi>x</mi><mo>=</mo><mn>1</mn></math>" in proof


# ----------------------------------------------------------------------------- a real browser


class Server:
    """uvicorn in a thread on a free loopback port (stopped at exit)."""

    def __init__(self, app, **config):
        import uvicorn

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.server = uvicorn.Server(
            server_config(app, "127.0.0.1", self.port, log_level="warning", **config)
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        return f"http://127.0.0.1:{self.port}"

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(timeout=10)


def _who_app():
    app = FastAPI()

    @app.get("/who")
    def who(request: Request) -> dict:
        return {"client": request.client.host if request.client else None}

    return app


def _get(url: str, path: str, headers: dict | None = None, timeout: float = 5.0) -> dict | None:
    import json
    import urllib.request

    req = urllib.request.Request(url + path, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())
    except OSError:
        return None


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_slow_clients_are_shed():
    """60 slow sockets against a server capped at 20 connections with a 1 s head deadline: those
    over the cap are closed at once, the others (one trickling its head in a byte at a time)
    within the deadline, and a normal client is answered meanwhile; the warnings stay bounded."""
    server = Server(_who_app(), header_timeout=1.0, max_connections=20)
    records = _Records()  # after uvicorn's logging set-up, which clears its loggers' handlers
    logging.getLogger("uvicorn.error").addHandler(records)
    with server as url:
        host, port = "127.0.0.1", int(url.rsplit(":", 1)[1])
        slow = [socket.create_connection((host, port)) for _ in range(60)]
        for sock in slow:
            sock.sendall(b"GET /who HTTP/1.1\r\nHost: x\r\n")  # a head never finished
        drip = slow[0]
        t0 = time.monotonic()
        answered = None
        while answered is None and time.monotonic() - t0 < 10:
            answered = _get(url, "/who", timeout=2)
            time.sleep(0.1)
        assert answered == {"client": "127.0.0.1"}, "a normal client was locked out"
        for _ in range(5):  # trickling bytes does not extend the deadline
            try:
                drip.sendall(b"X")
            except OSError:
                break
            time.sleep(0.3)
        assert all(_closed_by_server(sock, 3.0) for sock in slow), "a slow socket stayed open"
        assert time.monotonic() - t0 < 8
        for sock in slow:
            sock.close()
        # an idle keep-alive connection is closed too
        idle = socket.create_connection((host, port))
        idle.sendall(b"GET /who HTTP/1.1\r\nHost: x\r\n\r\n")
        idle.settimeout(3)
        response = b""
        while not response.endswith(b"}"):  # the head and the body may come apart
            response += idle.recv(4096)
        assert b"200 OK" in response
        assert _closed_by_server(idle, 3.0)
        idle.close()
    logging.getLogger("uvicorn.error").removeHandler(records)
    # every socket shed or timed out, two messages: each logged at most LOG_BURST (20) times
    shed = [r for r in records.records if "too many open connections" in r.getMessage()]
    timed_out = [r for r in records.records if "no request head" in r.getMessage()]
    assert len(shed) <= 20 and 1 <= len(timed_out) <= 21, (len(shed), len(timed_out))


def test_forwarded_for_is_read_only_from_the_named_proxy():
    headers = {"X-Forwarded-For": "203.0.113.7"}
    with Server(_who_app()) as url:
        assert _get(url, "/who", headers) == {"client": "127.0.0.1"}
    with Server(_who_app(), trusted_proxy="127.0.0.1") as url:
        assert _get(url, "/who", headers) == {"client": "203.0.113.7"}


def test_bounded_log_counts_what_it_left_out():
    bounded = BoundedLog(burst=3, window=0.2)

    def rec() -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "accept failed", (), None)

    assert [bounded.filter(rec()) for _ in range(10)] == [True] * 3 + [False] * 7
    time.sleep(0.25)
    r = rec()
    assert bounded.filter(r) and "7 more like this" in r.msg


@pytest.fixture(scope="module")
def browser():
    if not (CHROMIUM and CHROMEDRIVER):
        if REQUIRE_BROWSER:
            pytest.fail(
                "chromium and chromium-driver are required here (apt-get install chromium chromium-driver)"
            )
        pytest.skip("Debian's chromium and chromium-driver are not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1100,1500",
        "--no-first-run",
        "--disable-extensions",
    ):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _gold_findable_statement(search_index, search_demo) -> tuple[str, str]:
    """A test statement of the LaTeXML markup whose typed text finds its proof in the top 10 of the
    test proofs (the test checks the page, not the model's MRR)."""
    pairs = pd.read_parquet(search_demo["pairs"]).set_index("pair_id")
    for pid in search_index.table.loc[search_index.table["part"] == "test", "pair_id"]:
        xml = pairs.loc[pid, "statement_xml"]
        if "m:math" in xml or "<math" not in xml or xml.count("<math") != xml.count("alttext="):
            continue  # only statements whose formulas all kept their TeX can be typed
        text = fragment_text(xml)
        _, hits = search_index.search(text, k=10, part="test")
        if pid in [h.pair_id for h in hits]:
            return pid, text
    raise AssertionError("no test statement's text finds its proof in the top 10")


def test_browser_types_a_statement_and_finds_its_proof(search_index, search_demo, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import Select, WebDriverWait

    pid, text = _gold_findable_statement(search_index, search_demo)
    with Server(create_app(search_index)) as url:
        browser.get(url + "/")
        box = browser.find_element(By.ID, "q")
        box.send_keys(text)
        Select(browser.find_element(By.ID, "part")).select_by_value("test")
        browser.find_element(By.ID, "submit").click()
        WebDriverWait(browser, 30).until(EC.presence_of_element_located((By.ID, "summary")))
        results = browser.find_elements(By.CSS_SELECTOR, "li.result")
        assert len(results) == 10
        assert pid in [r.get_attribute("data-pair-id") for r in results]
        assert browser.find_element(By.ID, "q").get_attribute("value") == text
        # MathML is laid out by the browser: a formula of the proof has a size
        math = browser.find_elements(By.CSS_SELECTOR, "li.result .proof math")
        assert math and math[0].size["width"] > 0 and math[0].size["height"] > 0
        browser.find_element(By.ID, "next").click()
        WebDriverWait(browser, 30).until(EC.url_contains("page=2"))
        assert browser.find_element(By.CSS_SELECTOR, "ol.results").get_attribute("start") == "11"
        if SCREENSHOT:
            browser.back()
            WebDriverWait(browser, 30).until(EC.presence_of_element_located((By.ID, "summary")))
            browser.execute_script("window.scrollTo(0, 0)")
            Path(SCREENSHOT).parent.mkdir(parents=True, exist_ok=True)
            browser.save_screenshot(SCREENSHOT)


def test_browser_runs_nothing_from_a_hostile_fragment(hostile, browser):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    ix, pid = hostile
    with Server(create_app(ix)) as url:
        browser.get(f"{url}/?q={pid}")
        item = browser.find_element(By.CSS_SELECTOR, f'li.result[data-pair-id="{pid}"]')
        assert "Clearly" in item.text
        assert browser.title != "pwned" and "proofmatch search" in browser.title
        with pytest.raises(NoAlertPresentException):
            browser.switch_to.alert.text  # noqa: B018
        assert not item.find_elements(By.CSS_SELECTOR, "script, img, iframe, a, style")
        assert item.find_elements(By.CSS_SELECTOR, "math mi")
        item.find_element(By.CSS_SELECTOR, ".proof math mi").click()  # no onclick left to fire
        assert browser.title != "pwned"
        assert (
            browser.execute_script("return document.body.offsetHeight") > 100
        )  # <style> did not hide it


def test_browser_explains_a_fusion_result(fusion_index, browser):
    """Search a fusion index in Chromium, press "Why this proof?" on one result, and get its tokens
    back highlighted by the style sheet (no script runs: the button is a form)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import Select, WebDriverWait

    text = r"Let $f$ be continuous on $[a, b]$. Then $f$ is bounded."
    with Server(create_app(fusion_index)) as url:
        browser.get(url + "/")
        browser.find_element(By.ID, "q").send_keys(text)
        Select(browser.find_element(By.ID, "part")).select_by_value("test")
        browser.find_element(By.ID, "submit").click()
        WebDriverWait(browser, 30).until(EC.presence_of_element_located((By.ID, "summary")))
        assert "fusion of npt and BM25" in browser.find_element(By.ID, "index-info").text
        results = browser.find_elements(By.CSS_SELECTOR, "li.result")
        assert len(results) == 10
        second = results[1]
        pid = second.get_attribute("data-pair-id")
        meta = second.find_element(By.CSS_SELECTOR, ".meta").text
        assert "fused rank 2" in meta and "learned" in meta and "BM25" in meta
        second.find_element(By.CSS_SELECTOR, "button.explain").click()
        WebDriverWait(browser, 30).until(EC.presence_of_element_located((By.ID, "explanation")))
        panel = browser.find_element(By.ID, "explanation")
        assert panel.get_attribute("data-pair-id") == pid
        owner = panel.find_element(By.XPATH, "ancestor::li[contains(@class, 'result')]")
        assert owner.get_attribute("data-pair-id") == pid  # shown under the result it explains
        assert "Occlusion" in browser.find_element(By.ID, "explain-method").text
        assert browser.find_element(By.ID, "q").get_attribute("value") == text  # the search stays
        statement = panel.find_elements(By.CSS_SELECTOR, "#explain-statement .tok")
        proof = panel.find_elements(By.CSS_SELECTOR, "#explain-proof .tok")
        e = explain(fusion_index, text, pid, part="test")
        assert len(statement) == len(e["statement"]) and len(proof) == len(e["proof"])
        lit = [s for s in statement + proof if s.get_attribute("class").split()[1] != "zero"]
        assert lit and any(float(s.get_attribute("data-weight")) != 0 for s in lit)
        strongest = max(lit, key=lambda s: abs(float(s.get_attribute("data-weight"))))
        assert strongest.get_attribute("class").split()[1] in ("pos5", "neg5")
        colour = strongest.value_of_css_property("background-color")
        assert colour not in ("rgba(0, 0, 0, 0)", "transparent"), (
            colour
        )  # the style sheet coloured it
        if SCREENSHOT:
            shot = Path(SCREENSHOT).with_name(Path(SCREENSHOT).stem + "-why.png")
            shot.parent.mkdir(parents=True, exist_ok=True)
            browser.execute_script("arguments[0].scrollIntoView()", panel)
            browser.save_screenshot(str(shot))


def test_browser_keeps_the_results_when_an_explanation_is_refused(fusion_index, browser):
    """Press "Why this proof?" on two results in a row with an explanation budget of one: the
    second is refused inside the page, under its result, with the wait; the ten results and the
    query stay. Then searches past the burst: the refusal is on the page, the query in its box."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import Select, WebDriverWait

    text = r"Let $f$ be continuous on $[a, b]$. Then $f$ is bounded."
    app = create_app(fusion_index, rate_per_minute=2, burst=2, explain_burst=1)
    with Server(app) as url:
        browser.get(url + "/")
        browser.find_element(By.ID, "q").send_keys(text)
        Select(browser.find_element(By.ID, "part")).select_by_value("test")
        browser.find_element(By.ID, "submit").click()
        WebDriverWait(browser, 30).until(EC.presence_of_element_located((By.ID, "summary")))
        browser.find_elements(By.CSS_SELECTOR, "li.result button.explain")[0].click()
        WebDriverWait(browser, 30).until(EC.presence_of_element_located((By.ID, "explain-method")))
        fourth = browser.find_elements(By.CSS_SELECTOR, "li.result")[3]
        pid = fourth.get_attribute("data-pair-id")
        fourth.find_element(By.CSS_SELECTOR, "button.explain").click()
        WebDriverWait(browser, 30).until(EC.presence_of_element_located((By.ID, "explain-error")))
        message = browser.find_element(By.ID, "explain-error")
        assert re.search(r"ask again in \d+ seconds?", message.text), message.text
        owner = message.find_element(By.XPATH, "ancestor::li[contains(@class, 'result')]")
        assert owner.get_attribute("data-pair-id") == pid  # said beside the result asked about
        assert len(browser.find_elements(By.CSS_SELECTOR, "li.result")) == 10  # results kept
        assert browser.find_element(By.ID, "q").get_attribute("value") == text
        assert message.is_displayed() and message.size["height"] > 0
        if SCREENSHOT:
            shot = Path(SCREENSHOT).with_name(Path(SCREENSHOT).stem + "-refused.png")
            shot.parent.mkdir(parents=True, exist_ok=True)
            browser.save_screenshot(str(shot))
        # one search token left (the kept pages took none), then a refusal on the page
        for query in ("Let $x$ be real.", "Let $y$ be prime."):
            box = browser.find_element(By.ID, "q")
            box.clear()
            box.send_keys(query)
            browser.find_element(By.ID, "submit").click()
            WebDriverWait(browser, 30).until(EC.staleness_of(box))
        error = browser.find_element(By.ID, "error")
        assert re.search(r"Search again in \d+ seconds?", error.text), error.text
        assert browser.find_element(By.ID, "q").get_attribute("value") == "Let $y$ be prime."
        assert "proofmatch search" in browser.title  # the page, not a JSON body


# ----------------------------------------------------------------------------- the HTML report

REPORT_SNAKEFILE = """
import sys
sys.path.insert(0, {src!r})
from proofmatch import result_tables as RT

CONDA = None
LATEX_TARGETS = []
TRANSFER_TARGETS = []


include: {rules!r}


rule demo_md:
    output:
        md="results/tables/demo.md",
    run:
        import pandas as pd
        from proofmatch.render import write_table

        df = pd.DataFrame({{"Model": ["NPT <b>&", "BM25"], "MRR": [12.345, float("nan")]}})
        write_table(df, output.md, "results/tables/demo.tex", "results/tables/demo.csv",
                    caption="Scores <i>in</i> % & more.")
"""


@pytest.mark.slow
def test_browser_opens_a_table_of_the_html_report(tmp_path, browser):
    """``snakemake --report``: a table is an HTML result (rule table_html, from its .md) that the
    report opens in place in Chromium, caption and cells escaped; a Markdown one would only be a
    download link that Chromium does not open."""
    import subprocess
    import sys

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    repo = Path(__file__).resolve().parents[1]
    (tmp_path / "Snakefile").write_text(
        REPORT_SNAKEFILE.format(
            src=str(repo / "src"), rules=str(repo / "workflow/rules/report.smk")
        )
    )
    snakemake = [sys.executable, "-m", "snakemake", "-c1"]
    for args in (["results/tables/demo.html"], ["--report", "r.html", "results/tables/demo.html"]):
        done = subprocess.run(
            snakemake + args, cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    browser.get((tmp_path / "r.html").as_uri())
    wait = WebDriverWait(browser, 30)
    wait.until(EC.element_to_be_clickable((By.LINK_TEXT, "Results"))).click()
    wait.until(EC.element_to_be_clickable((By.XPATH, "//a[normalize-space()='Tables']"))).click()
    row = wait.until(
        EC.presence_of_element_located(
            (By.XPATH, "//tr[td[normalize-space()='results/tables/demo.html']]")
        )
    )
    row.find_element(By.CSS_SELECTOR, "a[iconname='eye']").click()
    frame = wait.until(EC.presence_of_element_located((By.TAG_NAME, "iframe")))
    assert frame.get_attribute("src").startswith("data:text/html")
    browser.switch_to.frame(frame)
    try:
        caption = browser.find_element(By.CSS_SELECTOR, "p.caption")
        assert caption.text == "Scores <i>in</i> % & more."  # shown as text, not markup
        cells = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "table tbody td")]
        assert cells == ["NPT <b>&", "12.35", "BM25", "–"]
        heads = [c.text for c in browser.find_elements(By.CSS_SELECTOR, "table thead th")]
        assert heads == ["Model", "MRR"]
        table = browser.find_element(By.TAG_NAME, "table")
        assert table.size["width"] > 0 and table.size["height"] > 0
    finally:
        browser.switch_to.default_content()
