"""The prometheus check (issue 25) against a REAL Prometheus server: Debian's package, installed by the
project (sandbox/scripts/install-prometheus.sh, a prerequisite of `make test`, run again by the fixture
when missing), started by each test on a free loopback port, scraping every second a metrics endpoint
the test serves (the release's request counters). Nothing here is a mock: the PromQL is evaluated, and
a query that does not parse is refused with the server's own error.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rollguard.core.resources import JOBS
from tests.helpers.cluster import (
    DC,
    NEW,
    OLD,
    SELECTOR,
    create_group,
    dc_body,
    resource_versions,
    rollguard,
    view,
)
from tests.helpers.servers import http_server, prometheus, scraped

RATIO = 'sum(rate(http_requests_total{code=~"5.."}[10s])) / sum(rate(http_requests_total[10s]))'


class Counters:
    """The release's request counters, as its /metrics says them: every scrape, 100 more requests, of
    which ``errors`` answered 500."""

    def __init__(self) -> None:
        self.ok = self.failed = 0
        self.errors = 0
        self.lock = threading.Lock()

    def answer(self, path: str) -> tuple[int, bytes]:
        if path != "/metrics":
            return 404, b"not found"
        with self.lock:
            self.ok += 100 - self.errors
            self.failed += self.errors
            text = (
                "# HELP http_requests_total Requests served.\n# TYPE http_requests_total counter\n"
                f'http_requests_total{{code="200"}} {self.ok}\nhttp_requests_total{{code="500"}} {self.failed}\n'
            )
        return 200, text.encode()


@pytest.fixture
def prom(tmp_path: Path) -> Iterator[tuple[str, Counters]]:
    counters = Counters()
    with (
        http_server(counters.answer) as metrics,
        prometheus(tmp_path, target=metrics.removeprefix("http://")) as url,
    ):
        scraped(url, "count_over_time(http_requests_total[10s])", samples=3)
        yield url, counters


def checks(tmp_path: Path, url: str, query: str = RATIO, **extra: str) -> Path:
    fields = "".join(f"\n      {k}: {v}" for k, v in extra.items())
    path = tmp_path / "checks.yaml"
    path.write_text(f"""checks:
  - name: error-ratio
    timeout: 60s
    prometheus:
      url: "{url}"
      query: '{query}'
      below: 0.01
      for: 3s
      interval: 1s{fields}
""")
    return path


def test_a_healthy_error_ratio_passes(sandbox, namespace, client, tmp_path: Path, prom):
    url, _counters = prom
    create_group(client, namespace, [dc_body("dc1", OLD), dc_body("dc2", OLD)])
    result = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        "--image",
        f"dc/dc1={NEW}",
        "--image",
        f"dc/dc2={NEW}",
        "--verify",
        str(checks(tmp_path, url)),
        report=tmp_path / "r.json",
    )
    assert result.code == 0, result.stdout + result.stderr
    assert all(view(client, namespace, DC, n).images == {"app": NEW} for n in ("dc1", "dc2"))
    [check] = result.report["checks"]
    assert check["kind"] == "prometheus" and check["outcome"] == "passed", check
    assert "ok: 0 below 0.01" in check["evidence"]  # the ratio the server computed


def test_a_high_error_ratio_fails_and_reverts(sandbox, namespace, client, tmp_path: Path, prom):
    url, counters = prom
    counters.errors = 20  # one request in five answers 500
    create_group(client, namespace, [dc_body("dc1", OLD), dc_body("dc2", OLD)])
    scraped(
        url,
        'count_over_time(http_requests_total{code="500"}[10s]) and increase(http_requests_total{code="500"}[10s]) > 0',
        samples=1,
    )
    result = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        "--image",
        f"dc/dc1={NEW}",
        "--image",
        f"dc/dc2={NEW}",
        "--verify",
        str(checks(tmp_path, url, failures="2")),
        report=tmp_path / "r.json",
    )
    assert result.code == 1, result.stdout + result.stderr
    assert all(view(client, namespace, DC, n).images == {"app": OLD} for n in ("dc1", "dc2"))
    report = result.report
    assert report["status"] == "reverted"
    assert report["error"].startswith("check 'error-ratio' (prometheus) failed: 2 failed evaluation(s)"), (
        report["error"]
    )
    assert "not below 0.01" in report["error"]


def test_an_empty_result_fails_unless_said(sandbox, namespace, client, tmp_path: Path, prom):
    url, _counters = prom
    create_group(client, namespace, [dc_body("dc1", OLD)])
    absent = 'sum(rate(http_requests_total{code="599"}[10s]))'  # no such series: an empty vector
    result = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        "--image",
        f"dc/dc1={NEW}",
        "--verify",
        str(checks(tmp_path, url, absent)),
        report=tmp_path / "r.json",
    )
    assert result.code == 1 and "empty result" in result.report["error"], result.stdout + result.stderr
    assert view(client, namespace, DC, "dc1").images == {"app": OLD}
    passing = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        "--image",
        f"dc/dc1={NEW}",
        "--verify",
        str(checks(tmp_path, url, absent, empty="pass")),
        report=tmp_path / "p.json",
    )
    assert passing.code == 0, passing.stdout + passing.stderr
    assert "empty result (empty: pass)" in passing.report["checks"][0]["evidence"]


def test_a_query_that_does_not_parse_is_refused_with_the_servers_error(
    sandbox, namespace, client, tmp_path: Path, prom
):
    url, _counters = prom
    create_group(client, namespace, [dc_body("dc1", OLD)])
    before = resource_versions(client, namespace)
    result = rollguard(
        sandbox.kubeconfig,
        "rollout",
        "-n",
        namespace,
        "-l",
        SELECTOR,
        "--image",
        f"dc/dc1={NEW}",
        "--verify",
        str(checks(tmp_path, url, "sum(rate(http_requests_total[1m]) /")),
        report=tmp_path / "r.json",
    )
    assert result.code == 2, result.stdout + result.stderr
    error = result.report["error"]
    assert "check 'error-ratio': the query does not parse: 400 " in error and "parse error" in error, error
    assert resource_versions(client, namespace) == before
    assert client.list(JOBS, namespace=namespace)["items"] == []
