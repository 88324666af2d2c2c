"""What engram answers, as typed objects.

Each model keeps the JSON it was made from in ``raw``, so fields added to
engram later are still reachable before the client knows them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

Json = Dict[str, Any]


@dataclass
class Record:
    """A memory record: its kind (``type``), trust level, standing and payload."""

    id: str
    type: str
    sensitivity: str
    confidence: float
    salience: float
    status: str
    tags: List[str]
    created_at: str
    updated_at: str
    payload: Json
    scope: Optional[str] = None
    lifecycle: Json = field(default_factory=dict)
    provenance: Json = field(default_factory=dict)
    relations: List[Json] = field(default_factory=list)
    audit_log: List[Json] = field(default_factory=list)
    raw: Json = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: Json) -> "Record":
        return cls(
            id=data["id"], type=data["type"], sensitivity=data["sensitivity"],
            confidence=data["confidence"], salience=data["salience"],
            status=data["status"], tags=list(data.get("tags", [])),
            created_at=data["created_at"], updated_at=data["updated_at"],
            payload=data["payload"], scope=data.get("scope"),
            lifecycle=data.get("lifecycle", {}), provenance=data.get("provenance", {}),
            relations=list(data.get("relations", [])),
            audit_log=list(data.get("audit_log", [])), raw=data,
        )


@dataclass
class Selection:
    """Which of the competing procedures to use, and how sure engram is."""

    selected: List[Record]
    confidence: float
    needs_more: bool
    scores: List[Json]

    @classmethod
    def from_json(cls, data: Json) -> "Selection":
        return cls(
            selected=[Record.from_json(r) for r in data["selected"]],
            confidence=data["confidence"], needs_more=data["needs_more"],
            scores=list(data.get("scores", [])),
        )


@dataclass
class RetrieveResult:
    """Records best first, each record's score, and the selection."""

    records: List[Record]
    scores: List[Json]
    selection: Optional[Selection] = None
    next_cursor: Optional[str] = None
    raw: Json = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: Json) -> "RetrieveResult":
        selection = data.get("selection")
        return cls(
            records=[Record.from_json(r) for r in data["records"]],
            scores=list(data.get("scores", [])),
            selection=Selection.from_json(selection) if selection else None,
            next_cursor=data.get("next_cursor"), raw=data,
        )


@dataclass
class GraphNode:
    record: Record
    root: bool
    hop: int

    @classmethod
    def from_json(cls, data: Json) -> "GraphNode":
        return cls(record=Record.from_json(data["record"]), root=data["root"], hop=data["hop"])


@dataclass
class Graph:
    """Ranked root records and what they link to."""

    nodes: List[GraphNode]
    edges: List[Json]

    @classmethod
    def from_json(cls, data: Json) -> "Graph":
        return cls(nodes=[GraphNode.from_json(n) for n in data["nodes"]],
                   edges=list(data["edges"]))


@dataclass
class JobRun:
    started_at: str
    finished_at: str
    duration_ms: int
    result: Optional[Json] = None
    error: Optional[str] = None

    @classmethod
    def from_json(cls, data: Json) -> "JobRun":
        return cls(started_at=data["started_at"], finished_at=data["finished_at"],
                   duration_ms=data["duration_ms"], result=data.get("result"),
                   error=data.get("error"))


@dataclass
class Job:
    """A maintenance job: its schedule, whether it is on, and its newest runs."""

    name: str
    schedule: str
    enabled: bool
    running: bool
    next_run: Optional[str] = None
    last_run: Optional[JobRun] = None
    recent_runs: List[JobRun] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: Json) -> "Job":
        last = data.get("last_run")
        return cls(name=data["name"], schedule=data["schedule"], enabled=data["enabled"],
                   running=data["running"], next_run=data.get("next_run"),
                   last_run=JobRun.from_json(last) if last else None,
                   recent_runs=[JobRun.from_json(run) for run in data.get("recent_runs", [])])


@dataclass
class ApiKey:
    """An API key as engram lists it (never its secret)."""

    name: str
    roles: List[str]
    max_sensitivity: str
    scopes: List[str]
    created_at: str
    revoked_at: Optional[str] = None
    #: Requests per second the key is held to: its own, or the server's
    #: ``auth.default_rate`` when ``rate_is_default``.
    rate: Optional[float] = None
    rate_is_default: bool = False
    raw: Json = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: Json) -> "ApiKey":
        grant = data.get("grant", data)
        return cls(name=data["name"], roles=list(grant.get("roles", [])),
                   max_sensitivity=grant.get("max_sensitivity", ""),
                   scopes=list(grant.get("scopes", [])), created_at=data["created_at"],
                   revoked_at=data.get("revoked_at"), rate=data.get("rate"),
                   rate_is_default=bool(data.get("rate_is_default", False)), raw=data)


@dataclass
class Topic:
    """A topic, with its fields and edges when read through a view or query."""

    id: str
    title: str
    summary: str
    sensitivity: str
    salience: float
    archived: bool
    kind: Optional[str] = None
    scope: Optional[str] = None
    tags: List[str] = field(default_factory=list)
    fields: Dict[str, Json] = field(default_factory=dict)
    edges: List[Json] = field(default_factory=list)
    raw: Json = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, data: Json) -> "Topic":
        return cls(id=data["id"], title=data["title"], summary=data.get("summary", ""),
                   sensitivity=data["sensitivity"], salience=data["salience"],
                   archived=data["archived"], kind=data.get("kind"), scope=data.get("scope"),
                   tags=list(data.get("tags", [])), fields=dict(data.get("fields", {})),
                   edges=list(data.get("edges", [])), raw=data)


@dataclass
class TopicHit:
    topic: Topic
    score: float
    neighbors: List[Json]
    history: Optional[Dict[str, List[Json]]] = None

    @classmethod
    def from_json(cls, data: Json) -> "TopicHit":
        return cls(topic=Topic.from_json(data["topic"]), score=data["score"],
                   neighbors=list(data["neighbors"]), history=data.get("history"))


@dataclass
class TopicIngested:
    """Where a topics ingest went and what it did to each field."""

    topic_id: str
    placement: str
    applied: List[Json]
    edges_added: int
    similar_topic_ids: List[str]
    #: Why `auto` extended the topic it did: ``{"topic_id", "by", "score"}``,
    #: ``by`` one of ``title``, ``alias``, ``similar``.
    matched: Optional[Json] = None

    @classmethod
    def from_json(cls, data: Json) -> "TopicIngested":
        return cls(topic_id=data["topic_id"], placement=data["placement"],
                   applied=list(data["applied"]), edges_added=data["edges_added"],
                   similar_topic_ids=list(data["similar_topic_ids"]),
                   matched=data.get("matched"))
