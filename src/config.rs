//! Typed settings, layered: the embedded `config/default.toml`, then the file
//! named by `ENGRAM_CONFIG`, then `ENGRAM_*` environment variables.
//!
//! Every layer is merged as TOML before anything is typed, so a file or a
//! variable only needs the keys it changes, and one deserialisation with
//! `deny_unknown_fields` catches misspelt keys from every layer alike.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

use crate::domain::policy::Policy;
use crate::domain::relevance::{Bm25, TurnWeights, Weights};
use crate::domain::schedule::Schedule;
use crate::domain::vector::MAX_DIMENSIONS;

/// The embedded defaults; `config/default.toml` documents each key.
pub const DEFAULT_TOML: &str = include_str!("../config/default.toml");

/// Most writer connections an instance may open on PostgreSQL.
const MOST_POSTGRES_WRITERS: u32 = 16;
/// Largest memory map asked of SQLite, in MiB; it maps at most its
/// compiled `SQLITE_MAX_MMAP_SIZE` (0x7fff0000 bytes, just under this).
const MOST_MMAP_SIZE_MIB: u64 = 2048;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("config file {path} is not valid TOML: {message}")]
    Parse { path: String, message: String },
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub server: ServerSettings,
    pub storage: StorageSettings,
    pub policy: Policy,
    pub retrieval: RetrievalSettings,
    pub jobs: JobsSettings,
    /// engram's own embedder; off unless configured.
    #[serde(default)]
    pub embedding: Option<EmbeddingSettings>,
    pub auth: AuthSettings,
    pub topics: TopicSettings,
    pub conversations: ConversationSettings,
    pub telemetry: TelemetrySettings,
}

/// Conversations: when turns sent without a session open a new one.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationSettings {
    /// Turns sent without a `session_id` continue the conversation's
    /// latest session when its last turn is at most this many minutes
    /// before the first of them; otherwise they open a new session.
    pub session_gap_minutes: u32,
}

impl ConversationSettings {
    pub fn session_gap(&self) -> chrono::Duration {
        chrono::Duration::minutes(i64::from(self.session_gap_minutes))
    }
}

/// What is logged about requests beyond the access log, and where their
/// spans are sent.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetrySettings {
    /// A request that takes at least this long is logged as `slow request`,
    /// with its route, its key's name, and the time its work waited in
    /// queues and ran off the HTTP worker.
    pub slow_request_ms: u64,
    /// An OTLP/HTTP traces endpoint (`http://host:4318/v1/traces`) spans
    /// are sent to, as protobuf; none are sent when it is not set. Else
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces` added, when set.
    #[serde(default)]
    pub otlp_endpoint: Option<String>,
    /// `service.name` of the spans' resource.
    pub otlp_service_name: String,
    /// Longest a finished span waits before it is sent.
    pub otlp_export_ms: u64,
    /// Finished spans waiting to be sent; more are dropped (and counted).
    pub otlp_max_queue: usize,
    /// Most spans sent in one request.
    pub otlp_max_batch: usize,
    /// How long one send may take.
    pub otlp_timeout_ms: u64,
}

/// The standard OpenTelemetry variables that name a collector, which
/// `telemetry.otlp_endpoint` stands in for when it is not set.
#[derive(Default)]
struct OtelEndpoints {
    traces: Option<String>,
    base: Option<String>,
}

impl OtelEndpoints {
    fn take(&mut self, name: &str, value: &str) {
        let value = Some(value.trim().to_string()).filter(|v| !v.is_empty());
        match name {
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" => self.traces = value,
            "OTEL_EXPORTER_OTLP_ENDPOINT" => self.base = value,
            _ => {}
        }
    }

    /// The traces endpoint is used as given; the general one is a base
    /// that `/v1/traces` is added to.
    fn traces_endpoint(self) -> Option<String> {
        self.traces.or_else(|| {
            self.base
                .map(|base| format!("{}/v1/traces", base.trim_end_matches('/')))
        })
    }
}

impl TelemetrySettings {
    fn validate(&self) -> Result<(), ConfigError> {
        let invalid =
            |key: &str, why: &str| Err(ConfigError::Invalid(format!("telemetry.{key}: {why}")));
        if let Some(endpoint) = &self.otlp_endpoint {
            if !endpoint.starts_with("http://") {
                return invalid(
                    "otlp_endpoint",
                    "must be an http:// URL (https is not supported yet: send to a local collector, which forwards over TLS)",
                );
            }
            if endpoint.parse::<awc::http::Uri>().is_err() {
                return invalid("otlp_endpoint", "is not a valid URL");
            }
        }
        if self.otlp_service_name.trim().is_empty() {
            return invalid("otlp_service_name", "must not be empty");
        }
        if self.otlp_export_ms == 0 {
            return invalid("otlp_export_ms", "must be greater than 0");
        }
        if self.otlp_max_queue == 0 {
            return invalid("otlp_max_queue", "must be greater than 0");
        }
        if self.otlp_max_batch == 0 || self.otlp_max_batch > self.otlp_max_queue {
            return invalid(
                "otlp_max_batch",
                "must be greater than 0 and at most telemetry.otlp_max_queue",
            );
        }
        if self.otlp_timeout_ms == 0 {
            return invalid("otlp_timeout_ms", "must be greater than 0");
        }
        Ok(())
    }
}

/// Topics: how much history a field keeps, and when `auto` placement
/// takes an observation for an existing topic.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopicSettings {
    /// Versions a field's history keeps; older ones leave it (their
    /// records stay, retracted, in the supersession chain).
    pub max_field_history: usize,
    /// The least title similarity, from 0 to 1 (`domain::resolution`), at
    /// which `auto` places an observation on an existing topic of the same
    /// scope when no title or alias matches.
    pub match_threshold: f64,
    /// Archiving starts when more than this many topics are not archived.
    pub archive_after_count: usize,
    /// Salience below which a topic may be archived.
    pub archive_below_salience: f64,
    /// Salience a topic gains each time a view or query returns it.
    pub read_reinforcement: f64,
    /// Most topics a query's walk through edges (`hops`) looks at, for all
    /// the topics it returns together; past it, neighbours are cut.
    pub max_hop_nodes: usize,
}

/// API keys: when they are required, and how they are kept.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthSettings {
    pub mode: AuthMode,
    /// Requests per second per key, unless the key has its own rate.
    pub default_rate: f64,
    /// The environment variable holding the pepper of the keys' hashes
    /// (64 hex digits); unset: a file beside the database,
    /// `<db_path>.pepper`, made on first use.
    #[serde(default)]
    pub pepper_env: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMode {
    /// Open while no key exists and the service listens on a loopback
    /// address; otherwise every request needs a key.
    Auto,
    Required,
    Off,
}

/// `scheme://host[:port]`, as browsers send in `Origin`: nothing after
/// the host and port.
fn is_origin(text: &str) -> bool {
    let Some(rest) = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))
    else {
        return false;
    };
    !rest.is_empty()
        && rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '[' | ']'))
}

fn is_host_name(text: &str) -> bool {
    let ipv6 = text
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .is_some_and(|inner| inner.parse::<std::net::Ipv6Addr>().is_ok());
    ipv6 || (!text.is_empty()
        && text.len() <= 253
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-')))
}

impl StorageSettings {
    /// The database as messages name it: the SQLite file, or the
    /// PostgreSQL URL without its password.
    pub fn database_name(&self) -> String {
        match self.backend {
            Backend::Sqlite => self.db_path.display().to_string(),
            Backend::Postgres => redact_password(self.postgres_url.as_deref().unwrap_or_default()),
        }
    }

    /// The database's encryption key, from the variable
    /// `encryption_key_env` names; `None` when none is named.
    pub fn encryption_key(&self) -> Result<Option<String>, ConfigError> {
        let Some(var) = &self.encryption_key_env else {
            return Ok(None);
        };
        match std::env::var(var) {
            Ok(key) if !key.is_empty() => Ok(Some(key)),
            _ => Err(ConfigError::Invalid(format!(
                "storage.encryption_key_env: it names {var}, which is not set or empty; \
                 set it to the database's key"
            ))),
        }
    }
}

impl Settings {
    /// Where the pepper file is kept when no `auth.pepper_env` is set.
    pub fn pepper_path(&self) -> PathBuf {
        let mut path = self.storage.db_path.clone().into_os_string();
        path.push(".pepper");
        PathBuf::from(path)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    pub listen: String,
    pub workers: usize,
    pub max_body_bytes: usize,
    pub max_body_bytes_in_flight: usize,
    pub body_read_timeout_ms: u64,
    pub shutdown_timeout_seconds: u64,
    pub log_format: LogFormat,
    /// PEM files of the certificate chain and its private key: with both,
    /// the service speaks HTTPS only.
    #[serde(default)]
    pub tls_cert: Option<PathBuf>,
    #[serde(default)]
    pub tls_key: Option<PathBuf>,
    /// Origins (`https://app.example.com`) whose pages browsers may let
    /// call the API; empty: no cross-origin calls.
    #[serde(default)]
    pub cors_origins: Vec<String>,
    /// Host names, besides loopback ones, that requests may name in
    /// `Host`; on an address other than loopback, setting any turns the
    /// check on.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageSettings {
    /// `sqlite` (the file at `db_path`) or `postgres` (the database at
    /// `postgres_url`).
    #[serde(default)]
    pub backend: Backend,
    pub db_path: PathBuf,
    /// `postgres://user:password@host:port/database`; set by
    /// `ENGRAM_DATABASE_URL`, which also selects the backend.
    #[serde(default)]
    pub postgres_url: Option<String>,
    /// PEM certificates of the authorities that sign the PostgreSQL
    /// server's certificate: when set, every connection to the database
    /// is TLS, the server's certificate and host name verified.
    #[serde(default)]
    pub postgres_ca_file: Option<PathBuf>,
    /// Writer connections per instance on PostgreSQL (SQLite has one).
    pub postgres_writers: u32,
    pub pool_size: u32,
    pub busy_timeout_ms: u64,
    pub writer_cache_size_kib: u64,
    pub reader_cache_size_kib: u64,
    /// SQLite: MiB of the database file read through a memory map.
    pub mmap_size_mib: u64,
    pub write_queue_capacity: usize,
    pub max_writes_per_transaction: usize,
    pub write_timeout_ms: u64,
    pub read_timeout_ms: u64,
    /// The environment variable holding the database's encryption key;
    /// needs a build with the `sqlcipher` feature.
    #[serde(default)]
    pub encryption_key_env: Option<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    #[default]
    Sqlite,
    Postgres,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobsSettings {
    pub decay_chunk_size: usize,
    pub compress_after_hours: i64,
    pub min_interval_seconds: u64,
    /// How often the stored schedules, runs and leases are read back (what
    /// other processes on the same database changed).
    pub sync_interval_ms: u64,
    pub decay: JobSettings,
    pub consolidation: JobSettings,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSettings {
    pub schedule: String,
    pub enabled: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrievalSettings {
    pub max_limit: usize,
    pub selection_confidence_threshold: f64,
    pub max_response_bytes: usize,
    pub max_reads_in_flight: usize,
    /// A text query of a caller that may see at most this many records
    /// reads them whole rather than through the full-text index.
    pub scan_records: usize,
    /// 0: fixed by the first vector stored.
    pub embedding_dimensions: usize,
    pub weights: Weights,
    /// BM25's `k1` and `b`, for every text query.
    pub bm25_k1: f64,
    pub bm25_b: f64,
    /// How turns rank by their neighbours and their session.
    pub turns: TurnWeights,
}

impl RetrievalSettings {
    pub fn bm25(&self) -> Bm25 {
        Bm25 {
            k1: self.bm25_k1,
            b: self.bm25_b,
        }
    }

    pub fn embedding_dimensions(&self) -> Option<usize> {
        (self.embedding_dimensions > 0).then_some(self.embedding_dimensions)
    }
}

/// `[embedding]`: an OpenAI-compatible embeddings endpoint engram sends the
/// search text of records to, in the background, for their vectors.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddingSettings {
    /// The URL requests are POSTed to, e.g.
    /// `http://127.0.0.1:11434/v1/embeddings`.
    pub endpoint: String,
    pub model: String,
    /// The environment variable holding the API key, sent as a bearer
    /// token; none sent when absent.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Asked of the model (`dimensions`), for models that can shorten
    /// their vectors; every vector must have this many.
    #[serde(default)]
    pub dimensions: Option<usize>,
    #[serde(default = "EmbeddingSettings::default_batch_size")]
    pub batch_size: usize,
    #[serde(default = "EmbeddingSettings::default_timeout_ms")]
    pub timeout_ms: u64,
    /// The first wait after a failed request; it doubles with each failure
    /// up to `max_backoff_ms`.
    #[serde(default = "EmbeddingSettings::default_backoff_ms")]
    pub backoff_ms: u64,
    #[serde(default = "EmbeddingSettings::default_max_backoff_ms")]
    pub max_backoff_ms: u64,
    /// How often, when idle, the embedder looks for records without a
    /// vector.
    #[serde(default = "EmbeddingSettings::default_poll_ms")]
    pub poll_ms: u64,
}

impl EmbeddingSettings {
    fn default_batch_size() -> usize {
        64
    }
    fn default_timeout_ms() -> u64 {
        30_000
    }
    fn default_backoff_ms() -> u64 {
        1_000
    }
    fn default_max_backoff_ms() -> u64 {
        60_000
    }
    fn default_poll_ms() -> u64 {
        1_000
    }
}

/// `scheme://user:password@host/...` as `scheme://user:***@host/...`.
fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((credentials, host)) => match credentials.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{path}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// Environment variables that name a key directly, besides the generic
/// `ENGRAM_<SECTION>__<KEY>` form.
const ENV_ALIASES: &[(&str, &str, &str)] = &[
    ("ENGRAM_LISTEN", "server", "listen"),
    ("ENGRAM_DB_PATH", "storage", "db_path"),
    ("ENGRAM_DATABASE_URL", "storage", "postgres_url"),
];

impl Settings {
    /// Loads the layered configuration from the process environment.
    pub fn load(config_path: Option<PathBuf>) -> Result<Settings, ConfigError> {
        let path = config_path.or_else(|| std::env::var_os("ENGRAM_CONFIG").map(PathBuf::from));
        let file = match path {
            Some(path) => {
                let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
                    path: path.display().to_string(),
                    source,
                })?;
                Some((path.display().to_string(), text))
            }
            None => None,
        };
        Self::from_layers(file, std::env::vars())
    }

    /// The embedded defaults alone.
    pub fn embedded() -> Settings {
        Self::from_layers(None, std::iter::empty()).expect("embedded default config is valid")
    }

    /// Merges the layers; `file` is `(name, contents)`.
    pub fn from_layers(
        file: Option<(String, String)>,
        env: impl Iterator<Item = (String, String)>,
    ) -> Result<Settings, ConfigError> {
        let mut merged: toml::Table =
            DEFAULT_TOML
                .parse()
                .map_err(|e: toml::de::Error| ConfigError::Parse {
                    path: "<embedded default>".into(),
                    message: e.to_string(),
                })?;
        if let Some((path, text)) = file {
            let overlay: toml::Table =
                text.parse()
                    .map_err(|e: toml::de::Error| ConfigError::Parse {
                        path: path.clone(),
                        message: e.message().to_string(),
                    })?;
            merge(&mut merged, overlay);
        }
        let mut database_url_given = false;
        let mut otel = OtelEndpoints::default();
        for (name, value) in env {
            otel.take(&name, &value);
            let Some(path) = env_key(&name) else {
                continue;
            };
            database_url_given |= name == "ENGRAM_DATABASE_URL" && !value.is_empty();
            let (key, sections) = path.split_last().expect("at least two parts");
            let mut table = &mut merged;
            for section in sections {
                let entry = table
                    .entry(section.clone())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                table = entry.as_table_mut().ok_or_else(|| {
                    ConfigError::Invalid(format!("{name}: {section} is a value, not a section"))
                })?;
            }
            table.insert(key.clone(), env_value(&value));
        }
        // A database URL in the environment is a choice of backend too.
        if database_url_given {
            if let Some(storage) = merged.get_mut("storage").and_then(|s| s.as_table_mut()) {
                storage.insert("backend".into(), toml::Value::String("postgres".into()));
            }
        }
        // The path names the key (`storage.pool_size`) whichever layer
        // set it.
        let mut settings: Settings = serde_path_to_error::deserialize(toml::Value::Table(merged))
            .map_err(|e| {
            let path = e.path().to_string();
            let message = e.into_inner().message().trim().to_string();
            if path == "." {
                ConfigError::Invalid(message)
            } else {
                ConfigError::Invalid(format!("{path}: {message}"))
            }
        })?;
        if settings.telemetry.otlp_endpoint.is_none() {
            settings.telemetry.otlp_endpoint = otel.traces_endpoint();
        }
        settings.validate()?;
        Ok(settings)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, why: &str| Err(ConfigError::Invalid(format!("{key}: {why}")));
        if self.server.listen.parse::<SocketAddr>().is_err() {
            return invalid(
                "server.listen",
                "must be host:port with an IP address, e.g. 127.0.0.1:8080",
            );
        }
        if self.server.max_body_bytes < 1024 {
            return invalid("server.max_body_bytes", "must be at least 1024");
        }
        if self.server.max_body_bytes_in_flight < self.server.max_body_bytes {
            return invalid(
                "server.max_body_bytes_in_flight",
                "must be at least server.max_body_bytes, or no body of the largest size could be read",
            );
        }
        if self.server.body_read_timeout_ms == 0 {
            return invalid("server.body_read_timeout_ms", "must be greater than 0");
        }
        if self.server.tls_cert.is_some() != self.server.tls_key.is_some() {
            return invalid(
                if self.server.tls_cert.is_some() {
                    "server.tls_key"
                } else {
                    "server.tls_cert"
                },
                "server.tls_cert and server.tls_key are set together (both PEM files) or not at all",
            );
        }
        for origin in &self.server.cors_origins {
            if !is_origin(origin) {
                return invalid(
                    "server.cors_origins",
                    &format!(
                        "{origin:?} is not an origin: scheme and host, and a port if any, \
                         like https://app.example.com or http://localhost:3000"
                    ),
                );
            }
        }
        for host in &self.server.allowed_hosts {
            if !is_host_name(host) {
                return invalid(
                    "server.allowed_hosts",
                    &format!(
                        "{host:?} is not a host name: a name or an address without scheme or \
                         port, like engram.example.com or 192.0.2.7"
                    ),
                );
            }
        }
        if self
            .storage
            .encryption_key_env
            .as_deref()
            .is_some_and(str::is_empty)
        {
            return invalid(
                "storage.encryption_key_env",
                "must name an environment variable",
            );
        }
        if let Err(e) =
            crate::domain::access::check_rate("auth.default_rate", self.auth.default_rate)
        {
            return invalid("auth.default_rate", &e.message);
        }
        if self.auth.pepper_env.as_deref().is_some_and(str::is_empty) {
            return invalid("auth.pepper_env", "must name an environment variable");
        }
        if self.topics.max_hop_nodes == 0 {
            return invalid("topics.max_hop_nodes", "must be at least 1");
        }
        if self.topics.max_field_history == 0 {
            return invalid("topics.max_field_history", "must be at least 1");
        }
        if self.conversations.session_gap_minutes == 0
            || self.conversations.session_gap_minutes > 525_600
        {
            return invalid(
                "conversations.session_gap_minutes",
                "must be from 1 to 525600 (a year)",
            );
        }
        if !(self.topics.match_threshold > 0.0 && self.topics.match_threshold <= 1.0) {
            return invalid("topics.match_threshold", "must be in (0, 1]");
        }
        if !(0.0..=1.0).contains(&self.topics.archive_below_salience) {
            return invalid("topics.archive_below_salience", "must be in [0, 1]");
        }
        if !(0.0..=1.0).contains(&self.topics.read_reinforcement) {
            return invalid("topics.read_reinforcement", "must be in [0, 1]");
        }
        if self.storage.backend == Backend::Postgres {
            let url = self.storage.postgres_url.as_deref().unwrap_or_default();
            if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                return invalid(
                    "storage.postgres_url",
                    "the postgres backend needs a URL of the form postgres://user@host:port/database \
                     (or ENGRAM_DATABASE_URL)",
                );
            }
            // Keys are stored as hashes under the pepper: instances that
            // share a database must share it, which a file beside each
            // instance cannot promise.
            if self.auth.pepper_env.is_none() {
                return invalid(
                    "auth.pepper_env",
                    "the postgres backend needs the pepper from an environment variable \
                     (the same on every instance): set auth.pepper_env to its name",
                );
            }
            if self.storage.encryption_key_env.is_some() {
                return invalid(
                    "storage.encryption_key_env",
                    "applies to SQLite only; on PostgreSQL, encryption at rest is the database's",
                );
            }
            let asks_tls = [
                "sslmode=require",
                "sslmode=verify-ca",
                "sslmode=verify-full",
            ]
            .iter()
            .any(|mode| url.contains(mode));
            if asks_tls && self.storage.postgres_ca_file.is_none() {
                return invalid(
                    "storage.postgres_ca_file",
                    "the database URL asks for TLS: name the PEM file of the authorities that \
                     sign the server's certificate",
                );
            }
        }
        if self.storage.db_path.as_os_str().is_empty() {
            return invalid("storage.db_path", "must not be empty");
        }
        if self.storage.pool_size == 0 {
            return invalid("storage.pool_size", "must be at least 1");
        }
        if !(1..=MOST_POSTGRES_WRITERS).contains(&self.storage.postgres_writers) {
            return invalid(
                "storage.postgres_writers",
                &format!("must be from 1 to {MOST_POSTGRES_WRITERS}"),
            );
        }
        if self.storage.mmap_size_mib > MOST_MMAP_SIZE_MIB {
            return invalid(
                "storage.mmap_size_mib",
                &format!("must be at most {MOST_MMAP_SIZE_MIB}"),
            );
        }
        if self.jobs.sync_interval_ms < 100 {
            return invalid("jobs.sync_interval_ms", "must be at least 100");
        }
        if self.storage.write_queue_capacity == 0 {
            return invalid("storage.write_queue_capacity", "must be at least 1");
        }
        if self.storage.max_writes_per_transaction == 0 {
            return invalid("storage.max_writes_per_transaction", "must be at least 1");
        }
        if self.storage.write_timeout_ms == 0 {
            return invalid("storage.write_timeout_ms", "must be at least 1");
        }
        if self.storage.read_timeout_ms == 0 {
            return invalid("storage.read_timeout_ms", "must be at least 1");
        }
        let p = &self.policy;
        if !(p.initial_salience.is_finite() && p.initial_salience >= 0.0) {
            return invalid("policy.initial_salience", "must be a finite number >= 0");
        }
        if !(p.reinforcement_gain.is_finite() && p.reinforcement_gain >= 0.0) {
            return invalid("policy.reinforcement_gain", "must be a finite number >= 0");
        }
        if !(p.max_salience.is_finite() && p.max_salience > 0.0) {
            return invalid("policy.max_salience", "must be a finite number > 0");
        }
        if !(p.min_salience.is_finite() && p.min_salience >= 0.0) {
            return invalid("policy.min_salience", "must be a finite number >= 0");
        }
        if p.initial_salience > p.max_salience {
            return invalid(
                "policy.initial_salience",
                "must not be above policy.max_salience",
            );
        }
        for (key, value) in [
            (
                "policy.episodic_half_life_seconds",
                p.episodic_half_life_seconds,
            ),
            (
                "policy.working_half_life_seconds",
                p.working_half_life_seconds,
            ),
            (
                "policy.semantic_half_life_seconds",
                p.semantic_half_life_seconds,
            ),
            (
                "policy.competence_half_life_seconds",
                p.competence_half_life_seconds,
            ),
            (
                "policy.plan_graph_half_life_seconds",
                p.plan_graph_half_life_seconds,
            ),
        ] {
            if value <= 0 {
                return invalid(key, "must be > 0");
            }
        }
        if self.jobs.decay_chunk_size == 0 {
            return invalid("jobs.decay_chunk_size", "must be at least 1");
        }
        if self.jobs.compress_after_hours <= 0 {
            return invalid("jobs.compress_after_hours", "must be > 0");
        }
        if self.jobs.min_interval_seconds == 0 {
            return invalid("jobs.min_interval_seconds", "must be at least 1");
        }
        for (key, job) in [
            ("jobs.decay.schedule", &self.jobs.decay),
            ("jobs.consolidation.schedule", &self.jobs.consolidation),
        ] {
            let checked = Schedule::parse_checked(
                &job.schedule,
                chrono::Utc::now(),
                self.jobs.min_interval_seconds,
            );
            if let Err(why) = checked {
                return invalid(key, &why);
            }
        }
        if self.retrieval.max_response_bytes < 65536 {
            return invalid("retrieval.max_response_bytes", "must be at least 65536");
        }
        if self.retrieval.max_limit == 0 {
            return invalid("retrieval.max_limit", "must be at least 1");
        }
        if self.retrieval.max_reads_in_flight == 0 {
            return invalid("retrieval.max_reads_in_flight", "must be at least 1");
        }
        if let Err(why) = self.retrieval.bm25().check() {
            return invalid("retrieval", &why);
        }
        if let Err(why) = self.retrieval.turns.check() {
            return invalid("retrieval.turns", &why);
        }
        if let Err(why) = self.retrieval.weights.check() {
            return invalid("retrieval.weights", &why);
        }
        if self.retrieval.embedding_dimensions > MAX_DIMENSIONS {
            return invalid(
                "retrieval.embedding_dimensions",
                &format!("must be at most {MAX_DIMENSIONS}"),
            );
        }
        if let Some(embedding) = &self.embedding {
            embedding.validate(self.retrieval.embedding_dimensions())?;
        }
        self.telemetry.validate()?;
        let threshold = self.retrieval.selection_confidence_threshold;
        if !(0.0..=1.0).contains(&threshold) {
            return invalid(
                "retrieval.selection_confidence_threshold",
                "must be within [0, 1]",
            );
        }
        Ok(())
    }

    pub fn listen_addr(&self) -> SocketAddr {
        self.server.listen.parse().expect("validated at load")
    }
}

impl EmbeddingSettings {
    fn validate(&self, retrieval_dimensions: Option<usize>) -> Result<(), ConfigError> {
        let invalid =
            |key: &str, why: &str| Err(ConfigError::Invalid(format!("embedding.{key}: {why}")));
        if !self.endpoint.starts_with("http://") {
            return invalid(
                "endpoint",
                "must be an http:// URL (https is not supported yet: put a local TLS proxy in front)",
            );
        }
        if self.endpoint.parse::<awc::http::Uri>().is_err() {
            return invalid("endpoint", "is not a valid URL");
        }
        if self.model.trim().is_empty() {
            return invalid("model", "must not be empty");
        }
        if let Some(name) = &self.api_key_env {
            if std::env::var_os(name).is_none() {
                return invalid(
                    "api_key_env",
                    &format!("the environment variable {name} is not set"),
                );
            }
        }
        if let Some(dimensions) = self.dimensions {
            if dimensions == 0 || dimensions > MAX_DIMENSIONS {
                return invalid(
                    "dimensions",
                    &format!("must be within 1..={MAX_DIMENSIONS}"),
                );
            }
            if retrieval_dimensions.is_some_and(|r| r != dimensions) {
                return invalid(
                    "dimensions",
                    "must equal retrieval.embedding_dimensions when both are set",
                );
            }
        }
        if self.batch_size == 0 || self.batch_size > 2048 {
            return invalid("batch_size", "must be within 1..=2048");
        }
        for (key, value) in [
            ("timeout_ms", self.timeout_ms),
            ("backoff_ms", self.backoff_ms),
            ("poll_ms", self.poll_ms),
        ] {
            if value == 0 {
                return invalid(key, "must be at least 1");
            }
        }
        if self.max_backoff_ms < self.backoff_ms {
            return invalid("max_backoff_ms", "must be at least embedding.backoff_ms");
        }
        Ok(())
    }

    /// The API key, read from `api_key_env`.
    pub fn api_key(&self) -> Option<String> {
        self.api_key_env
            .as_ref()
            .and_then(|name| std::env::var(name).ok())
    }
}

/// Deep merge: tables merge key by key, anything else is replaced.
fn merge(base: &mut toml::Table, overlay: toml::Table) {
    for (key, value) in overlay {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(base_table)), toml::Value::Table(overlay_table)) => {
                merge(base_table, overlay_table)
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// The key path an environment variable sets: `ENGRAM_JOBS__DECAY__ENABLED`
/// is `jobs.decay.enabled`. Variables without a `__` are not settings
/// (except the aliases), so `ENGRAM_CONFIG` is not mistaken for one.
fn env_key(name: &str) -> Option<Vec<String>> {
    if let Some((_, section, key)) = ENV_ALIASES.iter().find(|(alias, _, _)| *alias == name) {
        return Some(vec![section.to_string(), key.to_string()]);
    }
    let rest = name.strip_prefix("ENGRAM_")?;
    let path: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
    (path.len() >= 2 && path.iter().all(|part| !part.is_empty())).then_some(path)
}

/// An environment value is read as a TOML value when it is one (numbers,
/// booleans), and as a plain string otherwise, so paths need no quoting.
fn env_value(raw: &str) -> toml::Value {
    let wrapped = format!("v = {raw}");
    match wrapped.parse::<toml::Table>() {
        Ok(mut table) => table
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(raw.to_string())),
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Iterator<Item = (String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn embedded_defaults_match_the_documented_values() {
        let settings = Settings::embedded();
        assert_eq!(settings.server.listen, "127.0.0.1:8080");
        assert_eq!(settings.storage.db_path, PathBuf::from("./data/engram.db"));
        assert_eq!(settings.policy, Policy::default());
        assert_eq!(settings.policy.episodic_half_life_seconds, 3600);
        assert_eq!(settings.retrieval.selection_confidence_threshold, 0.7);
    }

    #[test]
    fn environment_overrides_the_file_which_overrides_the_defaults() {
        let file = Some((
            "f.toml".to_string(),
            "[storage]\npool_size = 9\ndb_path = \"/a.db\"\n".to_string(),
        ));
        let settings = Settings::from_layers(
            file,
            env(&[
                ("ENGRAM_DB_PATH", "/tmp/x.db"),
                ("ENGRAM_LISTEN", "0.0.0.0:9000"),
                ("ENGRAM_RETRIEVAL__MAX_LIMIT", "50"),
            ]),
        )
        .unwrap();
        assert_eq!(settings.storage.pool_size, 9);
        assert_eq!(settings.storage.db_path, PathBuf::from("/tmp/x.db"));
        assert_eq!(settings.server.listen, "0.0.0.0:9000");
        assert_eq!(settings.retrieval.max_limit, 50);
    }

    #[test]
    fn a_database_url_in_the_environment_selects_postgres() {
        assert_eq!(Settings::embedded().storage.backend, Backend::Sqlite);
        let url = "postgres://engram@db:5432/engram";
        let err = Settings::from_layers(None, env(&[("ENGRAM_DATABASE_URL", url)]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("auth.pepper_env"), "{err}");
        let settings = Settings::from_layers(
            None,
            env(&[
                ("ENGRAM_DATABASE_URL", url),
                ("ENGRAM_AUTH__PEPPER_ENV", "ENGRAM_PEPPER"),
            ]),
        )
        .unwrap();
        assert_eq!(settings.storage.backend, Backend::Postgres);
        assert_eq!(settings.storage.postgres_url.as_deref(), Some(url));
        let file = |text: &str| Some(("f.toml".to_string(), text.to_string()));
        let err = Settings::from_layers(file("[storage]\nbackend = \"postgres\"\n"), env(&[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("storage.postgres_url"), "{err}");
        let err = Settings::from_layers(
            file("[storage]\nbackend = \"postgres\"\nencryption_key_env = \"K\"\n"),
            env(&[
                ("ENGRAM_DATABASE_URL", url),
                ("ENGRAM_AUTH__PEPPER_ENV", "ENGRAM_PEPPER"),
            ]),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("storage.encryption_key_env"), "{err}");
        let err = Settings::from_layers(file("[storage]\nbackend = \"mysql\"\n"), env(&[]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("storage.backend"), "{err}");
        let tls_url = "postgres://engram@db:5432/engram?sslmode=require";
        let err = Settings::from_layers(
            None,
            env(&[
                ("ENGRAM_DATABASE_URL", tls_url),
                ("ENGRAM_AUTH__PEPPER_ENV", "ENGRAM_PEPPER"),
            ]),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("storage.postgres_ca_file"), "{err}");
        assert_eq!(
            redact_password("postgres://u:pw@h:5432/db?sslmode=require"),
            "postgres://u:***@h:5432/db?sslmode=require"
        );
        assert_eq!(redact_password("postgres://u@h/db"), "postgres://u@h/db");
    }

    #[test]
    fn nested_keys_can_be_set_from_the_environment() {
        let settings = Settings::from_layers(
            None,
            env(&[
                ("ENGRAM_JOBS__DECAY__SCHEDULE", "0 */5 * * * *"),
                ("ENGRAM_JOBS__CONSOLIDATION__ENABLED", "false"),
            ]),
        )
        .unwrap();
        assert_eq!(settings.jobs.decay.schedule, "0 */5 * * * *");
        assert!(!settings.jobs.consolidation.enabled);
        let err = Settings::from_layers(None, env(&[("ENGRAM_JOBS__DECAY__SCHEDULE", "hourly")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("jobs.decay.schedule"), "{err}");
    }

    #[test]
    fn spans_are_sent_only_to_a_collector_that_is_named() {
        assert_eq!(Settings::embedded().telemetry.otlp_endpoint, None);
        let endpoint = |pairs: &[(&str, &str)]| {
            Settings::from_layers(None, env(pairs))
                .unwrap()
                .telemetry
                .otlp_endpoint
        };
        assert_eq!(
            endpoint(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")]).as_deref(),
            Some("http://collector:4318/v1/traces")
        );
        assert_eq!(
            endpoint(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://traces:4318/custom"
                ),
            ])
            .as_deref(),
            Some("http://traces:4318/custom")
        );
        assert_eq!(
            endpoint(&[
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://traces:4318/custom"
                ),
                (
                    "ENGRAM_TELEMETRY__OTLP_ENDPOINT",
                    "http://mine:4318/v1/traces"
                ),
            ])
            .as_deref(),
            Some("http://mine:4318/v1/traces")
        );
        for (pairs, key) in [
            (
                vec![(
                    "ENGRAM_TELEMETRY__OTLP_ENDPOINT",
                    "https://c:4318/v1/traces",
                )],
                "telemetry.otlp_endpoint",
            ),
            (
                vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")],
                "telemetry.otlp_endpoint",
            ),
            (
                vec![("ENGRAM_TELEMETRY__OTLP_MAX_QUEUE", "0")],
                "telemetry.otlp_max_queue",
            ),
            (
                vec![("ENGRAM_TELEMETRY__OTLP_MAX_BATCH", "4096")],
                "telemetry.otlp_max_batch",
            ),
            (
                vec![("ENGRAM_TELEMETRY__OTLP_EXPORT_MS", "0")],
                "telemetry.otlp_export_ms",
            ),
            (
                vec![("ENGRAM_TELEMETRY__OTLP_SERVICE_NAME", " ")],
                "telemetry.otlp_service_name",
            ),
        ] {
            let err = Settings::from_layers(None, env(&pairs))
                .unwrap_err()
                .to_string();
            assert!(err.contains(key), "{pairs:?}: {err}");
        }
    }

    #[test]
    fn the_maxima_the_api_document_states_are_the_default_ones() {
        let settings = Settings::embedded();
        assert_eq!(
            settings.retrieval.max_limit,
            crate::domain::schema::DOCUMENTED_MAX_LIMIT
        );
        assert_eq!(
            crate::domain::policy::Policy::default().max_salience,
            crate::domain::schema::DOCUMENTED_MAX_SALIENCE
        );
    }

    #[test]
    fn an_unknown_key_is_refused_by_name() {
        let file = Some((
            "f.toml".to_string(),
            "[storage]\npool_sise = 9\n".to_string(),
        ));
        let err = Settings::from_layers(file, std::iter::empty())
            .unwrap_err()
            .to_string();
        assert!(err.contains("pool_sise"), "{err}");
    }

    #[test]
    fn a_bad_value_is_refused_by_key() {
        let err = Settings::from_layers(None, env(&[("ENGRAM_LISTEN", "nowhere")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("server.listen"), "{err}");
        let err = Settings::from_layers(
            None,
            env(&[("ENGRAM_POLICY__EPISODIC_HALF_LIFE_SECONDS", "0")]),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("policy.episodic_half_life_seconds"), "{err}");
        let err = Settings::from_layers(None, env(&[("ENGRAM_STORAGE__POOL_SIZE", "abc")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("storage.pool_size: invalid type"), "{err}");
        let err = Settings::from_layers(None, env(&[("ENGRAM_STORAGE__MMAP_SIZE_MIB", "2049")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("storage.mmap_size_mib: must be at most 2048"),
            "{err}"
        );
        for writers in ["0", "17"] {
            let err =
                Settings::from_layers(None, env(&[("ENGRAM_STORAGE__POSTGRES_WRITERS", writers)]))
                    .unwrap_err()
                    .to_string();
            assert!(
                err.contains("storage.postgres_writers: must be from 1 to 16"),
                "{err}"
            );
        }
    }

    #[test]
    fn the_embedder_is_off_unless_configured_and_checked_when_it_is() {
        assert!(Settings::embedded().embedding.is_none());
        let with = |toml: &str| {
            Settings::from_layers(
                Some(("f.toml".to_string(), format!("[embedding]\n{toml}"))),
                std::iter::empty(),
            )
        };
        let settings =
            with("endpoint = \"http://127.0.0.1:9/v1/embeddings\"\nmodel = \"m\"").unwrap();
        let embedding = settings.embedding.unwrap();
        assert_eq!((embedding.batch_size, embedding.timeout_ms), (64, 30_000));
        for (toml, key) in [
            (
                "endpoint = \"https://api.example/v1\"\nmodel = \"m\"",
                "embedding.endpoint",
            ),
            (
                "endpoint = \"http://x/e\"\nmodel = \" \"",
                "embedding.model",
            ),
            (
                "endpoint = \"http://x/e\"\nmodel = \"m\"\napi_key_env = \"ENGRAM_TEST_UNSET_KEY\"",
                "embedding.api_key_env",
            ),
            (
                "endpoint = \"http://x/e\"\nmodel = \"m\"\nbatch_size = 0",
                "embedding.batch_size",
            ),
            (
                "endpoint = \"http://x/e\"\nmodel = \"m\"\nbackoff_ms = 10\nmax_backoff_ms = 5",
                "embedding.max_backoff_ms",
            ),
            ("model = \"m\"", "endpoint"),
        ] {
            let err = with(toml).unwrap_err().to_string();
            assert!(err.contains(key), "{toml}: {err}");
        }
        let err = Settings::from_layers(
            Some((
                "f.toml".to_string(),
                "[retrieval]\nembedding_dimensions = 384\n[embedding]\nendpoint = \"http://x/e\"\nmodel = \"m\"\ndimensions = 256\n".to_string(),
            )),
            std::iter::empty(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("embedding.dimensions"), "{err}");
    }
}
