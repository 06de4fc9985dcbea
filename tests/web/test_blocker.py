"""tests/support/browser.py: the browser tests' chromium reaches 127.0.0.1 and nothing else, and says what else a page asked for."""

from __future__ import annotations

from support.browser import browser_context
from support.servers import serve

PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>blocker</title>
<script src="https://cdn.example.com/lib.js"></script>
<script src="local.js"></script></head>
<body><img alt="remote" id="remote" src="http://images.example.org/a.png"></body></html>"""


def test_other_hosts_fail_and_are_recorded_while_127_0_0_1_is_served(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(PAGE)
    (site / "local.js").write_text("window.localLoaded = true;")
    with serve(site) as base, browser_context(tmp_path / "profile") as (context, blocker):
        page = context.new_page()
        failed = []
        page.on("requestfailed", lambda r: failed.append(r.url))
        page.goto(base + "index.html", wait_until="load")
        state = page.evaluate(
            "() => [window.localLoaded === true, typeof window.cdnLoaded, document.getElementById('remote').naturalWidth]"
        )
        page.close()
    assert state == [True, "undefined", 0], state
    remote = ["https://cdn.example.com/lib.js", "http://images.example.org/a.png"]
    assert sorted(blocker.blocked) == sorted(remote), blocker.blocked
    assert sorted(failed) == sorted(remote), f"chromium let another host through: failed only {failed}"
