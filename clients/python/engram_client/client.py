"""Sync and async clients for every route of engram's API.

Both clients have the same methods: the endpoints are written once (in
``_Endpoints``), each as the request it makes and how its answer is read;
``Client`` sends them with ``httpx.Client`` and returns the answer,
``AsyncClient`` with ``httpx.AsyncClient`` and returns an awaitable of it.

Every refused request raises ``EngramError``. ``429`` and ``503`` are
retried (``max_retries`` times) after the ``Retry-After`` engram sends.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Callable, Dict, List, Optional, TypeVar
from urllib.parse import quote

import httpx

from .errors import EngramError
from .models import (
    ApiKey, Graph, Job, JobRun, Json, Record, RetrieveResult, Topic, TopicHit, TopicIngested,
)

T = TypeVar("T")

RETRIED = (429, 503)
DEFAULT_URL = "http://127.0.0.1:8080"


def _body(fields: Dict[str, Any]) -> Json:
    """The JSON body of a call: the arguments given, without the ones left as None."""
    return {k: v for k, v in fields.items() if v is not None}


def _error(response: httpx.Response) -> EngramError:
    code, message = "unknown", response.text
    try:
        error = response.json()["error"]
        code, message = error["code"], error["message"]
    except (ValueError, KeyError, TypeError):
        pass
    return EngramError(response.status_code, code, message, _retry_after(response))


def _retry_after(response: httpx.Response) -> Optional[float]:
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class _Call:
    """One request and how to read its answer."""

    def __init__(self, method: str, path: str, body: Optional[Json],
                 read: Callable[[httpx.Response], Any]) -> None:
        self.method, self.path, self.body, self.read = method, path, body, read


def _json(read: Callable[[Json], T]) -> Callable[[httpx.Response], T]:
    return lambda response: read(response.json())


def _record(response: httpx.Response) -> Record:
    return Record.from_json(response.json()["record"])


class _Endpoints:
    """Every route, once. ``_send`` is the sync or async client's."""

    def _send(self, call: _Call) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def _do(self, method: str, path: str, body: Optional[Json],
            read: Callable[[httpx.Response], Any]) -> Any:
        return self._send(_Call(method, path, body, read))

    # Health and the API document (no key needed).

    def health(self) -> Json:
        return self._do("GET", "/healthz", None, _json(lambda d: d))

    def ready(self) -> Json:
        return self._do("GET", "/readyz", None, _json(lambda d: d))

    def openapi(self) -> Json:
        """The API document (OpenAPI 3.1)."""
        return self._do("GET", "/openapi.json", None, _json(lambda d: d))

    # Ingestion.

    def ingest_event(self, source: str, event_kind: str, ref: str, **fields: Any) -> Record:
        """An event (episodic memory). Optional: summary, timestamp, tags, scope, sensitivity, embedding."""
        body = _body({"source": source, "event_kind": event_kind, "ref": ref, **fields})
        return self._do("POST", "/v1/ingest/event", body, _record)

    def ingest_tool_output(self, source: str, tool_name: str, **fields: Any) -> Record:
        """A tool call (episodic memory). Optional: args, result, depends_on, timestamp, tags, scope, sensitivity."""
        body = _body({"source": source, "tool_name": tool_name, **fields})
        return self._do("POST", "/v1/ingest/tool-output", body, _record)

    def ingest_observation(self, source: str, subject: str, predicate: str, object: Any = None,
                           **fields: Any) -> Record:
        """A fact (semantic memory) as subject, predicate and object."""
        body = _body({"source": source, "subject": subject, "predicate": predicate,
                      "object": object, **fields})
        return self._do("POST", "/v1/ingest/observation", body, _record)

    def ingest_outcome(self, source: str, target_record_id: str, outcome_status: str,
                       **fields: Any) -> Record:
        """The outcome (success, failure, partial) of an earlier episode."""
        body = _body({"source": source, "target_record_id": target_record_id,
                      "outcome_status": outcome_status, **fields})
        return self._do("POST", "/v1/ingest/outcome", body, _record)

    def ingest_working_state(self, source: str, thread_id: str, state: str,
                             **fields: Any) -> Record:
        """A thread's current task state (working memory)."""
        body = _body({"source": source, "thread_id": thread_id, "state": state, **fields})
        return self._do("POST", "/v1/ingest/working-state", body, _record)

    def ingest_batch(self, items: List[Json]) -> List[Record]:
        """Several items, each with its ``kind``, stored all or none."""
        return self._do("POST", "/v1/ingest/batch", {"items": items},
                        _json(lambda d: [Record.from_json(r) for r in d["records"]]))

    def ingest_conversation(self, source: str, conversation_id: str, turns: List[Json],
                            **fields: Any) -> Json:
        """Appends turns ({speaker, text, at?, ref?, attachments?, embedding?}) to a
        conversation, all or none. Fields: session_id, scope, sensitivity, tags. Answers
        {"conversation_id", "session_id", "new_session", "records": [Record]}."""
        body = _body({"source": source, "conversation_id": conversation_id, "turns": turns,
                      **fields})
        return self._do("POST", "/v1/ingest/conversation", body,
                        _json(lambda d: {**d, "records": [Record.from_json(r)
                                                          for r in d["records"]]}))

    def conversation_turns(self, conversation_id: str, trust: Optional[Json] = None,
                           **fields: Any) -> Json:
        """A page of a conversation's turns the caller may see, in order:
        {"sessions": [{"session_id", "scope"?, "started_at", "turns": [Record]}],
        "next_cursor"}. Fields: scope, session_id, speakers, after, before,
        include_retracted, page_size, cursor (next_cursor, with the same fields)."""
        def page(d: Json) -> Json:
            sessions = [{**s, "turns": [Record.from_json(t) for t in s["turns"]]}
                        for s in d["sessions"]]
            return {**d, "sessions": sessions}
        path = f"/v1/conversations/{quote(conversation_id, safe='')}/turns"
        return self._do("POST", path, _body({"trust": trust, **fields}), _json(page))

    def create_record(self, record: Json) -> Record:
        """A whole record (type, sensitivity, payload, ...), completed by policy."""
        return self._do("POST", "/v1/records", record, _record)

    # Retrieval.

    def retrieve(self, trust: Optional[Json] = None, **fields: Any) -> RetrieveResult:
        """Records the caller may see, best first. Fields: task_descriptor, memory_types,
        min_salience, limit, context, include_retracted, cursor, page_size, tags, sources,
        thread_id, subject, conversation_id, speakers, context_turns (each turn's
        ``raw["context"]``: the turns around it), created_after, created_before,
        query_embedding."""
        return self._do("POST", "/v1/retrieve", _body({"trust": trust, **fields}),
                        _json(RetrieveResult.from_json))

    def retrieve_graph(self, trust: Optional[Json] = None, **fields: Any) -> Graph:
        """Ranked roots and their neighbours through relations and topic links."""
        return self._do("POST", "/v1/retrieve/graph", _body({"trust": trust, **fields}),
                        _json(Graph.from_json))

    def get_record(self, id: str, trust: Optional[Json] = None) -> Record:
        return self._do("POST", f"/v1/retrieve/{id}", _body({"trust": trust}), _record)

    def history(self, id: str, trust: Optional[Json] = None) -> List[Record]:
        """The record's revision chain, oldest first."""
        return self._do("POST", f"/v1/records/{id}/history", _body({"trust": trust}),
                        _json(lambda d: [Record.from_json(r) for r in d["chain"]]))

    # Revision and feedback.

    def supersede(self, old_id: str, new_record: Json, actor: str, rationale: str) -> Record:
        body = {"old_id": old_id, "new_record": new_record, "actor": actor, "rationale": rationale}
        return self._do("POST", "/v1/revisions/supersede", body, _record)

    def fork(self, source_id: str, forked_record: Json, actor: str, rationale: str) -> Record:
        body = {"source_id": source_id, "forked_record": forked_record, "actor": actor,
                "rationale": rationale}
        return self._do("POST", "/v1/revisions/fork", body, _record)

    def retract(self, id: str, actor: str, rationale: str) -> Record:
        body = {"id": id, "actor": actor, "rationale": rationale}
        return self._do("POST", "/v1/revisions/retract", body, _record)

    def merge(self, ids: List[str], merged_record: Json, actor: str, rationale: str) -> Record:
        body = {"ids": ids, "merged_record": merged_record, "actor": actor, "rationale": rationale}
        return self._do("POST", "/v1/revisions/merge", body, _record)

    def contest(self, id: str, actor: str, rationale: str, contesting_ref: Optional[str] = None,
                resolve: Optional[bool] = None) -> Record:
        body = _body({"id": id, "actor": actor, "rationale": rationale,
                      "contesting_ref": contesting_ref, "resolve": resolve})
        return self._do("POST", "/v1/revisions/contest", body, _record)

    def reinforce(self, id: str, actor: str, rationale: str) -> Record:
        body = {"actor": actor, "rationale": rationale}
        return self._do("POST", f"/v1/records/{id}/reinforce", body, _record)

    def penalize(self, id: str, actor: str, rationale: str, amount: float) -> Record:
        body = {"actor": actor, "rationale": rationale, "amount": amount}
        return self._do("POST", f"/v1/records/{id}/penalize", body, _record)

    # Topics.

    def topic_ingest(self, source: str, **fields: Any) -> TopicIngested:
        """Fields: placement, topic_id, title, summary, kind, fields, edges,
        suggest_similar, sensitivity, scope, tags, trust, embedding."""
        return self._do("POST", "/v1/topics/ingest", _body({"source": source, **fields}),
                        _json(TopicIngested.from_json))

    def topic_query(self, trust: Optional[Json] = None, **fields: Any) -> List[TopicHit]:
        """Fields: text, embedding, kind, limit, hops, as_of, include_history."""
        return self._do("POST", "/v1/topics/query", _body({"trust": trust, **fields}),
                        _json(lambda d: [TopicHit.from_json(t) for t in d["topics"]]))

    def topic_view(self, id: str, trust: Optional[Json] = None,
                   as_of: Optional[str] = None) -> Topic:
        return self._do("POST", f"/v1/topics/{id}/view", _body({"trust": trust, "as_of": as_of}),
                        _json(lambda d: Topic.from_json(d["topic"])))

    def field_history(self, id: str, name: str, trust: Optional[Json] = None) -> List[Json]:
        return self._do("POST", f"/v1/topics/{id}/fields/{name}/history", _body({"trust": trust}),
                        _json(lambda d: d["versions"]))

    def summary_history(self, id: str, trust: Optional[Json] = None) -> List[Json]:
        """Every summary the topic has had, oldest first."""
        return self._do("POST", f"/v1/topics/{id}/summary/history", _body({"trust": trust}),
                        _json(lambda d: d["versions"]))

    def add_edge(self, id: str, to_topic_id: str, kind: str, trust: Optional[Json] = None) -> Json:
        body = _body({"to_topic_id": to_topic_id, "kind": kind, "trust": trust})
        return self._do("POST", f"/v1/topics/{id}/edges", body, _json(lambda d: d))

    def remove_edge(self, id: str, to_topic_id: str, kind: str,
                    trust: Optional[Json] = None) -> Json:
        body = _body({"to_topic_id": to_topic_id, "kind": kind, "trust": trust})
        return self._do("DELETE", f"/v1/topics/{id}/edges", body, _json(lambda d: d))

    def archive_topic(self, id: str, trust: Optional[Json] = None) -> Topic:
        return self._do("POST", f"/v1/topics/{id}/archive", _body({"trust": trust}),
                        _json(lambda d: Topic.from_json(d["topic"])))

    # Operations.

    def jobs(self) -> List[Job]:
        return self._do("GET", "/v1/jobs", None,
                        _json(lambda d: [Job.from_json(j) for j in d["jobs"]]))

    def update_job(self, name: str, schedule: Optional[str] = None,
                   enabled: Optional[bool] = None) -> Job:
        return self._do("PUT", f"/v1/jobs/{name}", _body({"schedule": schedule, "enabled": enabled}),
                        _json(lambda d: Job.from_json(d["job"])))

    def run_job(self, name: str) -> JobRun:
        return self._do("POST", f"/v1/jobs/{name}/run", None, _json(JobRun.from_json))

    def keys(self) -> List[ApiKey]:
        return self._do("GET", "/v1/keys", None,
                        _json(lambda d: [ApiKey.from_json(k) for k in d["keys"]]))

    def create_key(self, name: str, roles: Optional[List[str]] = None,
                   max_sensitivity: Optional[str] = None, scopes: Optional[List[str]] = None,
                   rate: Optional[float] = None) -> "tuple[ApiKey, str]":
        """Makes a key; answers it and its secret (shown this once)."""
        body = _body({"name": name, "roles": roles, "max_sensitivity": max_sensitivity,
                      "scopes": scopes, "rate": rate})
        return self._do("POST", "/v1/keys", body,
                        _json(lambda d: (ApiKey.from_json(d["key"]), d["secret"])))

    def revoke_key(self, name: str) -> ApiKey:
        return self._do("DELETE", f"/v1/keys/{name}", None,
                        _json(lambda d: ApiKey.from_json(d["key"])))

    def erase(self, actor: str, rationale: str, ids: Optional[List[str]] = None,
              scope: Optional[str] = None, source: Optional[str] = None,
              subject: Optional[str] = None, dry_run: bool = False,
              trust: Optional[Json] = None, conversation_id: Optional[str] = None) -> Json:
        """Erases records for good, with what was made from them: exactly one
        of ids, scope, source, subject, conversation_id. Answers the report."""
        body = _body({"ids": ids, "scope": scope, "source": source, "subject": subject,
                      "conversation_id": conversation_id, "actor": actor,
                      "rationale": rationale, "dry_run": dry_run, "trust": trust})
        return self._do("POST", "/v1/erase", body, _json(lambda d: d))

    def erasures(self, limit: Optional[int] = None) -> List[Json]:
        """The erasure log, newest first."""
        return self.erasure_log(limit)["erasures"]

    def erasure_log(self, limit: Optional[int] = None, cursor: Optional[str] = None) -> Json:
        """A page of the erasure log, newest first: {"erasures", "next_cursor"?};
        pass next_cursor back, with the same limit, for the page after."""
        query = "&".join(f"{name}={value}" for name, value in
                         (("limit", limit), ("cursor", cursor)) if value is not None)
        path = "/v1/erasures" + (f"?{query}" if query else "")
        return self._do("GET", path, None, _json(lambda d: d))

    def metrics(self) -> Json:
        """Memory aggregates: counts by type, sensitivity and status, salience."""
        return self._do("GET", "/v1/metrics", None, _json(lambda d: d))

    def prometheus_metrics(self) -> str:
        return self._do("GET", "/metrics", None, lambda response: response.text)

    def mcp(self, message: Json) -> Optional[Json]:
        """Sends one JSON-RPC message to the MCP endpoint; answers its response
        (None for a notification)."""
        return self._do("POST", "/mcp", message,
                        lambda r: r.json() if r.status_code == 200 else None)


class _Settings:
    def __init__(self, url: str, api_key: Optional[str], max_retries: int,
                 max_retry_wait: float) -> None:
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.url = url.rstrip("/")
        self.max_retries = max_retries
        self.max_retry_wait = max_retry_wait

    def wait(self, response: httpx.Response, attempt: int) -> Optional[float]:
        """Seconds to wait before retrying ``response``; None: do not retry."""
        if response.status_code not in RETRIED or attempt >= self.max_retries:
            return None
        return min(_retry_after(response) or 1.0, self.max_retry_wait)


def _answer(call: _Call, response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise _error(response)
    return call.read(response)


class Client(_Endpoints):
    """engram over HTTP, one call at a time.

    >>> with Client("http://127.0.0.1:8080", api_key="...") as engram:
    ...     engram.health()
    """

    def __init__(self, url: str = DEFAULT_URL, api_key: Optional[str] = None, *,
                 timeout: float = 30.0, max_retries: int = 3, max_retry_wait: float = 30.0,
                 http: Optional[httpx.Client] = None) -> None:
        self._settings = _Settings(url, api_key, max_retries, max_retry_wait)
        self._http = http or httpx.Client(timeout=timeout)

    def _send(self, call: _Call) -> Any:
        attempt = 0
        while True:
            response = self._http.request(
                call.method, self._settings.url + call.path, json=call.body,
                headers=self._settings.headers)
            wait = self._settings.wait(response, attempt)
            if wait is None:
                return _answer(call, response)
            attempt += 1
            time.sleep(wait)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncClient(_Endpoints):
    """engram over HTTP with asyncio: every method answers an awaitable.

    >>> async with AsyncClient(api_key="...") as engram:
    ...     await engram.health()
    """

    def __init__(self, url: str = DEFAULT_URL, api_key: Optional[str] = None, *,
                 timeout: float = 30.0, max_retries: int = 3, max_retry_wait: float = 30.0,
                 http: Optional[httpx.AsyncClient] = None) -> None:
        self._settings = _Settings(url, api_key, max_retries, max_retry_wait)
        self._http = http or httpx.AsyncClient(timeout=timeout)

    async def _send(self, call: _Call) -> Any:  # type: ignore[override]
        attempt = 0
        while True:
            response = await self._http.request(
                call.method, self._settings.url + call.path, json=call.body,
                headers=self._settings.headers)
            wait = self._settings.wait(response, attempt)
            if wait is None:
                return _answer(call, response)
            attempt += 1
            await asyncio.sleep(wait)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()
