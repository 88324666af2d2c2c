"""Python client for engram, the memory service AI agents share over HTTP."""

from .client import AsyncClient, Client
from .errors import EngramError
from .models import (
    ApiKey, Graph, GraphNode, Job, JobRun, Record, RetrieveResult, Selection, Topic, TopicHit,
    TopicIngested,
)

__all__ = [
    "ApiKey", "AsyncClient", "Client", "EngramError", "Graph", "GraphNode", "Job", "JobRun",
    "Record", "RetrieveResult", "Selection", "Topic", "TopicHit", "TopicIngested",
]
