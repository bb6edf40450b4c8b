"""A small client of the Prometheus HTTP API (``/api/v1/query``, ``query_range``, label values).

The standard library's urllib is enough: every call is one HTTP request with a timeout, the
answers are small JSON documents, and no dependency has to be installed for it. Every way a
request can fail becomes one :class:`PrometheusError` whose text is the line a person reads
(connection refused, 401, a slow server, a server that is not Prometheus).
"""

from __future__ import annotations

import base64
import http.client
import json
import math
import socket
import ssl
import threading
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, TypeGuard

from gputop.errors import BadArguments, GputopError
from gputop.model.safe_text import terminal_safe
from gputop.sources.prometheus.transport import (
    Answer,
    Closed,
    Expired,
    RedirectRefused,
    Transport,
)

DEFAULT_TIMEOUT = 5.0
"""Seconds a request may take: a Prometheus that answers slower is said to be slow."""

LATEST = 32503680000.0
"""The year 3000, in seconds since 1970: a later sample time is a broken clock or a lie."""

_MAX_BODY = 256 * 1024 * 1024
"""An answer larger than this is not read (a misconfigured proxy streaming something else)."""


class PrometheusError(GputopError):
    """A request that got no usable answer; the message is one line for a person."""

    exit_code = 1


@dataclass(frozen=True, slots=True)
class Auth:
    """How to authenticate to a real server (read from files or the environment by the CLI)."""

    bearer_token: str | None = None
    basic: tuple[str, str] | None = None
    """(user, password) for HTTP basic auth."""
    headers: tuple[tuple[str, str], ...] = ()
    """Extra headers, such as ``X-Scope-OrgID`` for a multi-tenant Mimir or Cortex."""
    ca_file: Path | None = None
    """A CA bundle to check the server's TLS certificate against (a private CA)."""


class Sample(NamedTuple):
    """One series of an instant query: its labels, the evaluation time and the value.

    A tuple, not a dataclass: a refresh of a large fleet makes tens of thousands."""

    labels: Mapping[str, str]
    timestamp: float
    value: float


@dataclass(frozen=True, slots=True)
class Series:
    """One series of a range query: its labels and (time, value) points, oldest first."""

    labels: Mapping[str, str]
    points: tuple[tuple[float, float], ...]


def check_url(url: str) -> str:
    """``url`` without a trailing slash, or BadArguments saying what is wrong with it."""
    parsed = urllib.parse.urlsplit(url.strip())
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise BadArguments(
            f"--prometheus {url!r} is not a URL: give http://HOST:PORT or https://HOST/PATH"
        )
    try:
        parsed.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise BadArguments(f"--prometheus {url!r} has a port that is not a number") from None
    return url.strip().rstrip("/")


class PrometheusClient:
    """Blocking calls to one Prometheus server; safe to use from several threads."""

    def __init__(
        self,
        url: str,
        auth: Auth | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        kind: str = "Prometheus",
    ):
        """Talk to the server at ``url`` (``http://host:9090`` or a path prefix under a proxy);
        ``kind`` names it in messages (``"the exporter"`` for a scraped target).

        Raises:
            BadArguments: the URL is not an http(s) URL, or the CA file cannot be read.
        """
        base = check_url(url)
        parsed = urllib.parse.urlsplit(base)
        auth = auth or Auth()
        if parsed.username is not None and auth.basic is None:
            # http://user:password@host: the credentials go in a header, not the address.
            user = urllib.parse.unquote(parsed.username)
            password = urllib.parse.unquote(parsed.password or "")
            auth = Auth(auth.bearer_token, (user, password), auth.headers, auth.ca_file)
        if parsed.username is not None:
            netloc = parsed.hostname or ""
            if ":" in netloc:
                netloc = f"[{netloc}]"
            if parsed.port is not None:
                netloc += f":{parsed.port}"
            base = urllib.parse.urlunsplit((parsed.scheme, netloc, parsed.path, "", ""))
        self.url = base
        """The server's address as said in messages (credentials left out)."""
        self.timeout = timeout
        self.kind = kind
        self._headers = _headers(auth)
        context = _tls_context(auth.ca_file) if parsed.scheme == "https" else None
        # Any header the user gave may be a secret (an API key): none of them is sent to
        # another server a redirect names.
        secret = auth.bearer_token is not None or auth.basic is not None or bool(auth.headers)
        self._transport = Transport(
            timeout=timeout, context=context, credentials=secret, max_body=_MAX_BODY
        )
        self._lock = threading.Lock()
        self._round_trips = 0

    @property
    def round_trips(self) -> int:
        """HTTP requests sent so far (the benchmark counts them per refresh)."""
        with self._lock:
            return self._round_trips

    def query(self, promql: str, at: float | None = None) -> list[Sample]:
        """Evaluate ``promql`` at ``at`` (the server's now by default): one sample per series.

        A scalar answer (``time()``) is one sample with no labels.
        """
        params = {"query": promql}
        if at is not None:
            params["time"] = repr(at)
        data = self._call("/api/v1/query", params)
        if not isinstance(data, dict):
            raise PrometheusError(f"{self.url}: unexpected answer to a query")
        kind = data.get("resultType")
        result = data.get("result")
        if kind == "scalar" and isinstance(result, list):
            return [Sample({}, *self._point(result, "a query"))]
        if kind != "vector" or not isinstance(result, list):
            named = f" ({kind!r})" if isinstance(kind, str) and len(kind) <= 20 else ""
            raise PrometheusError(f"{self.url}: unexpected answer to a query{named}")
        try:
            # The fast way first: a large fleet answers with tens of thousands of series.
            samples = [
                Sample(item["metric"], float(item["value"][0]), _number(item["value"][1]))
                for item in result
            ]
        except (KeyError, TypeError, IndexError, ValueError):
            raise PrometheusError(f"{self.url}: malformed series in a query's answer") from None
        join = "".join
        try:
            # Inline, for tens of thousands of series: JSON's keys are strings already;
            # join() takes string values only and dict-less labels have no values().
            for sample in samples:
                join(sample.labels.values())
                if not 0.0 <= sample.timestamp <= LATEST:
                    raise ValueError
        except (TypeError, AttributeError, ValueError):
            raise PrometheusError(self._malformed(sample.labels, "a query")) from None
        return samples

    def query_matrix(self, promql: str) -> list[Series]:
        """Evaluate a range-vector selector (``up[2m]``) now: each series' raw samples."""
        data = self._call("/api/v1/query", {"query": promql})
        return self._matrix(data, "a query")

    def query_range(self, promql: str, start: float, end: float, step: float) -> list[Series]:
        """Evaluate ``promql`` every ``step`` seconds from ``start`` to ``end``."""
        params = {"query": promql, "start": repr(start), "end": repr(end), "step": repr(step)}
        data = self._call("/api/v1/query_range", params)
        return self._matrix(data, "a range query")

    def query_range_counted(
        self, promql: str, start: float, end: float, step: float
    ) -> tuple[list[Series], int | None]:
        """``query_range``, with the number of samples the server says it read for it
        (Prometheus's ``stats=all``; None from a server that does not say)."""
        params = {
            "query": promql,
            "start": repr(start),
            "end": repr(end),
            "step": repr(step),
            "stats": "all",
        }
        data = self._call("/api/v1/query_range", params)
        stats = data.get("stats") if isinstance(data, dict) else None
        samples = stats.get("samples") if isinstance(stats, dict) else None
        total = samples.get("totalQueryableSamples") if isinstance(samples, dict) else None
        return self._matrix(data, "a range query"), total if isinstance(total, int) else None

    def _matrix(self, data: Any, what: str) -> list[Series]:
        if not isinstance(data, dict):
            raise PrometheusError(f"{self.url}: unexpected answer to {what}")
        result = data.get("result")
        if data.get("resultType") != "matrix" or not isinstance(result, list):
            raise PrometheusError(f"{self.url}: unexpected answer to {what}")
        out = []
        for item in result:
            labels = item.get("metric") if isinstance(item, dict) else None
            values = item.get("values") if isinstance(item, dict) else None
            if not _is_labels(labels) or not isinstance(values, list):
                raise PrometheusError(self._malformed(labels, what))
            out.append(Series(labels, tuple(self._point(v, what) for v in values)))
        return out

    def _point(self, pair: object, what: str) -> tuple[float, float]:
        """(time, value) from the API's ``[1700000000.123, "42"]``; NaN for a value it
        cannot read; a time that is no time (NaN, 1e300, before 1970) is a malformed answer."""
        if isinstance(pair, list) and len(pair) == 2:
            at, text = pair
            try:
                seconds = float(at)
            except (TypeError, ValueError):
                seconds = math.nan
            if plausible_time(seconds):
                return seconds, _number(text)
        raise PrometheusError(f"{self.url}: malformed sample (time, value) in the answer to {what}")

    def _malformed(self, labels: object, what: str) -> str:
        if not isinstance(labels, dict):
            return f"{self.url}: malformed series in the answer to {what} (labels not a mapping)"
        if not _is_labels(labels):
            return f"{self.url}: malformed series in the answer to {what} (a label not a string)"
        return f"{self.url}: malformed sample time in the answer to {what}"

    def label_values(self, label: str, match: Sequence[str] = ()) -> list[str]:
        """The values ``label`` takes (``__name__``: the metric names), among ``match``."""
        params = [("match[]", m) for m in match]
        data = self._call(f"/api/v1/label/{urllib.parse.quote(label)}/values", params, get=True)
        if not isinstance(data, list):
            raise PrometheusError(f"{self.url}: unexpected answer to a label query")
        return [v for v in data if isinstance(v, str)]

    def alerts(self) -> list[dict[str, Any]]:
        """The server's active alerts (``/api/v1/alerts``): each with ``labels``,
        ``annotations``, ``state`` (``pending``, ``firing``) and ``activeAt``."""
        data = self._call("/api/v1/alerts", {}, get=True)
        found = data.get("alerts") if isinstance(data, dict) else None
        if not isinstance(found, list):
            raise PrometheusError(f"{self.url}: unexpected answer to the alerts query")
        return [alert for alert in found if isinstance(alert, dict)]

    def fetch_text(self) -> str:
        """GET the URL itself (an exporter's ``/metrics``) and return the text."""
        headers = dict(self._headers, Accept="text/plain;version=0.0.4;q=1,*/*;q=0.1")
        raw, _ = self._send("GET", self.url, headers, exporter=True)
        return raw.decode("utf-8", errors="replace")

    def close(self) -> None:
        """Abort the requests in flight (their callers get a PrometheusError) and refuse
        new ones: quitting never waits on a slow server."""
        self._transport.close()

    def _call(
        self, path: str, params: Mapping[str, str] | list[tuple[str, str]], *, get: bool = False
    ) -> Any:
        encoded = urllib.parse.urlencode(params)
        if get:  # the label endpoints take GET only
            answer = self._send("GET", f"{self.url}{path}?{encoded}", self._headers)
        else:  # a query in the body: no URL length limit for long selectors
            headers = dict(self._headers)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            answer = self._send("POST", self.url + path, headers, encoded.encode())
        return self._payload(*answer)

    def _send(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None = None,
        *,
        exporter: bool = False,
    ) -> tuple[bytes, str]:
        """``exporter``: the request is a scrape of ``/metrics``, not a call to ``/api/v1``."""
        with self._lock:
            self._round_trips += 1
        try:
            answer = self._transport.send(method, url, headers, body)
        except Expired:
            raise PrometheusError(self._slow()) from None
        except Closed:
            raise PrometheusError(f"{self.url}: the request was cancelled") from None
        except RedirectRefused as error:
            raise PrometheusError(f"{self.url}: {terminal_safe(str(error))}") from None
        except (ConnectionError, http.client.HTTPException, OSError, ValueError) as error:
            raise PrometheusError(self._unreachable(error)) from None
        if not 200 <= answer.status < 300:
            raise PrometheusError(self._http_error(answer, exporter))
        return answer.body, answer.content_type

    def _payload(self, raw: bytes, content_type: str) -> Any:
        try:
            document = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError):
            kind = content_type.split(";")[0].strip() or "no content type"
            raise PrometheusError(
                f"{self.url} is not a Prometheus server: /api/v1 answered "
                f"{terminal_safe(kind)}, not JSON"
            ) from None
        if not isinstance(document, dict) or document.get("status") not in ("success", "error"):
            raise PrometheusError(
                f"{self.url} is not a Prometheus server: its JSON is not the /api/v1 format"
            )
        if document["status"] == "error":
            raise PrometheusError(f"{self.url}: {_api_error(document)}")
        return document.get("data")

    def _http_error(self, answer: Answer, exporter: bool = False) -> str:
        code = answer.status
        if code in (401, 403):
            what = "unauthorized" if code == 401 else "forbidden"
            return (
                f"{self.url} refused the request: HTTP {code} {what} (give credentials with "
                "--bearer-token-file, --basic-auth-user and --basic-auth-password-file, or "
                "--header)"
            )
        try:
            document = json.loads(answer.body[: 64 * 1024])
        except (ValueError, UnicodeDecodeError, RecursionError):
            document = None
        if isinstance(document, dict) and document.get("status") == "error":
            return f"{self.url}: {_api_error(document)}"
        if code == 404 and exporter:
            # --targets names exporters: no Prometheus API is expected there.
            return (
                f"{self.url} is not an exporter: HTTP 404 not found "
                "(no metrics in the Prometheus text format there)"
            )
        if code == 404:
            return f"{self.url} is not a Prometheus server: /api/v1 answered HTTP 404 not found"
        reason = " ".join(answer.reason.split())  # one line, whatever the server wrote
        return f"{self.url} answered HTTP {code} {terminal_safe(reason)}".rstrip()

    def _unreachable(self, reason: object) -> str:
        if isinstance(reason, (TimeoutError, socket.timeout)):
            return self._slow()
        if isinstance(reason, ConnectionRefusedError):
            return f"cannot reach {self.kind} at {self.url}: connection refused"
        if isinstance(reason, socket.gaierror):
            return f"cannot reach {self.kind} at {self.url}: unknown host"
        if isinstance(reason, ssl.SSLError):
            why = " ".join(str(reason.reason or reason).split())
            return f"cannot reach {self.kind} at {self.url}: TLS failed ({why})"
        if isinstance(reason, http.client.RemoteDisconnected):
            return f"{self.kind} at {self.url} closed the connection without an answer"
        if isinstance(reason, http.client.HTTPException):
            return f"{self.kind} at {self.url} did not answer in HTTP ({type(reason).__name__})"
        text = getattr(reason, "strerror", None) or str(reason) or type(reason).__name__
        text = " ".join(str(text).split())
        return f"cannot reach {self.kind} at {self.url}: {terminal_safe(text)}"

    def _slow(self) -> str:
        return f"{self.kind} at {self.url} did not answer within {self.timeout:g} s (--timeout)"


def _headers(auth: Auth) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": "gputop"}
    if auth.bearer_token is not None:
        headers["Authorization"] = f"Bearer {auth.bearer_token}"
    elif auth.basic is not None:
        user, password = auth.basic
        token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
        headers["Authorization"] = f"Basic {token}"
    for name, value in auth.headers:
        headers[name] = value
    return headers


def _tls_context(ca_file: Path | None) -> ssl.SSLContext:
    try:
        return ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
    except (OSError, ssl.SSLError) as error:
        raise BadArguments(f"--ca-file {ca_file}: cannot use it as a CA bundle ({error})") from None


def _number(text: object) -> float:
    """A sample's value (``"42"``, ``"NaN"``, ``"+Inf"``); NaN for one it cannot read."""
    try:
        return float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


def plausible_time(seconds: float) -> bool:
    """Whether ``seconds`` since 1970 can be a sample's time: finite, from 1970 to ``LATEST``
    (1e300, NaN or -1e12 is no time; a date from them would raise, not show)."""
    return 0.0 <= seconds <= LATEST


def _is_labels(labels: object) -> TypeGuard[dict[str, str]]:
    """A series' labels as Prometheus writes them: a mapping of strings to strings."""
    if not isinstance(labels, dict):
        return False
    try:
        # join() takes strings only (JSON's keys are strings already).
        "".join(labels.values())
    except TypeError:
        return False
    return True


def _api_error(document: Mapping[str, Any]) -> str:
    kind = document.get("errorType") or "error"
    text = (str(document.get("error") or "no detail").splitlines() or ["no detail"])[0]
    return terminal_safe(f"{kind}: {text}")
