use std::time::Duration;

use actix_web::dev::ServerHandle;
use awc::http::StatusCode;
use chrono::{DateTime, Utc};
use engram::clock::{Clock, ManualClock};
use engram::config::Settings;
use engram::startup::Application;
use serde_json::{json, Value};
use tempfile::TempDir;

/// `?1`, `?2`… as PostgreSQL writes them: `$1`, `$2`…
fn numbered_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

/// Where every test app's clock starts.
pub const START: &str = "2026-01-01T00:00:00Z";
/// `START` as answers write it.
pub const START_AT: &str = "2026-01-01T00:00:00.000000Z";

pub struct TestApp {
    pub address: String,
    pub client: awc::Client,
    pub clock: ManualClock,
    pub writer: engram::actors::storage::StorageWriter,
    pub reader: engram::actors::storage::Reader,
    pub read_gate: engram::actors::storage::ReadGate,
    handle: ServerHandle,
    server: actix_web::rt::task::JoinHandle<std::io::Result<()>>,
    dir: TempDir,
}

pub fn start_time() -> DateTime<Utc> {
    START.parse().unwrap()
}

/// The PostgreSQL cluster the tests run on (`bash tests/postgres.sh run
/// cargo test`), or `None`: SQLite files in temporary directories.
pub fn postgres_admin_url() -> Option<String> {
    std::env::var("ENGRAM_TEST_DATABASE_URL")
        .ok()
        .filter(|url| !url.is_empty())
}

/// Whether a test about the SQLite file itself (its bytes, its backup API,
/// its encryption) has nothing to test on PostgreSQL: says so, for the
/// test to return.
pub fn sqlite_only(what: &str) -> bool {
    not_run(postgres_admin_url().is_some(), "PostgreSQL", what)
}

/// Whether a test needs PostgreSQL and runs on SQLite: says so and why
/// not (`what`), for the test to return.
pub fn postgres_only(what: &str) -> bool {
    not_run(postgres_admin_url().is_none(), "SQLite", what)
}

/// `skip`, said with why when it holds.
fn not_run(skip: bool, backend: &str, what: &str) -> bool {
    if skip {
        eprintln!("not run on {backend}: {what}");
    }
    skip
}

/// `url` with its database name replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let (server, _) = base.rsplit_once('/').expect("a database URL has a path");
    match query {
        Some(query) => format!("{server}/{name}?{query}"),
        None => format!("{server}/{name}"),
    }
}

/// Runs `work` with a client of the database at `url`, on a thread and
/// runtime of its own (tests call it from inside the actix runtime).
pub fn with_postgres<T: Send + 'static>(
    url: &str,
    work: impl AsyncFnOnce(&tokio_postgres::Client) -> T + Send + 'static,
) -> T {
    let url = url.to_string();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .expect("the test cluster answers");
            let driver = tokio::spawn(connection);
            let out = work(&client).await;
            drop(client);
            let _ = driver.await;
            out
        })
    })
    .join()
    .expect("the database thread ran")
}

/// On PostgreSQL, the database of the test directory `dir`: made on first
/// use, its name kept in the directory so a restarted app finds it.
pub fn postgres_url_for(dir: &std::path::Path) -> Option<String> {
    let admin = postgres_admin_url()?;
    let marker = dir.join("postgres-database");
    if let Ok(name) = std::fs::read_to_string(&marker) {
        return Some(with_database(&admin, &name));
    }
    let name = format!("engram_{}", uuid::Uuid::new_v4().simple());
    let create = format!("CREATE DATABASE {name}");
    with_postgres(&admin, async move |client| {
        client
            .batch_execute(&create)
            .await
            .expect("the test database is made")
    });
    std::fs::write(&marker, &name).expect("the directory is writable");
    Some(with_database(&admin, &name))
}

/// The variable the tests' pepper is in on PostgreSQL, where instances
/// share the pepper through the environment.
const TEST_PEPPER_ENV: &str = "ENGRAM_TEST_PEPPER";

/// Puts the tests' pepper in the environment (inherited by the engram
/// processes tests start).
fn set_test_pepper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| std::env::set_var(TEST_PEPPER_ENV, "ab".repeat(32)));
}

/// The environment that points an engram process at the database of
/// the test directory `db_path` is in (the SQLite file `db_path`).
pub fn database_env_for(db_path: &std::path::Path) -> Vec<(&'static str, String)> {
    let mut env = vec![("ENGRAM_DB_PATH", db_path.display().to_string())];
    if let Some(url) = postgres_url_for(db_path.parent().expect("a directory")) {
        set_test_pepper();
        env.push(("ENGRAM_DATABASE_URL", url));
        env.push(("ENGRAM_AUTH__PEPPER_ENV", TEST_PEPPER_ENV.to_string()));
    }
    env
}

/// Settings for a test app whose database lives in the directory of
/// `db_path`: the SQLite file itself, or (with a test cluster) a
/// PostgreSQL database of its own.
pub fn test_settings(db_path: &std::path::Path) -> Settings {
    let mut settings = Settings::embedded();
    if let Some(url) = postgres_url_for(db_path.parent().expect("a directory")) {
        set_test_pepper();
        settings.storage.backend = engram::config::Backend::Postgres;
        settings.storage.postgres_url = Some(url);
        settings.auth.pepper_env = Some(TEST_PEPPER_ENV.to_string());
    }
    settings.server.listen = "127.0.0.1:0".to_string();
    settings.server.workers = 1;
    settings.server.shutdown_timeout_seconds = 1;
    settings.storage.db_path = db_path.to_path_buf();
    settings.storage.pool_size = 2;
    settings.storage.writer_cache_size_kib = 2048;
    settings.storage.reader_cache_size_kib = 2048;
    // No scheduled run may land in the middle of a test; the tests about
    // the schedule turn it back on, and the others run jobs on demand.
    settings.jobs.decay.enabled = false;
    settings.jobs.consolidation.enabled = false;
    settings
}

/// A deadline for a poll loop: `wait` sleeps a moment, or fails the test
/// with what was being waited for once the time is up.
pub struct Deadline {
    until: std::time::Instant,
    what: &'static str,
}

impl Deadline {
    pub fn after(seconds: u64, what: &'static str) -> Self {
        Deadline {
            until: std::time::Instant::now() + Duration::from_secs(seconds),
            what,
        }
    }

    #[track_caller]
    pub fn wait(&self) -> impl std::future::Future<Output = ()> {
        assert!(
            std::time::Instant::now() < self.until,
            "gave up waiting for {}",
            self.what
        );
        actix_web::rt::time::sleep(Duration::from_millis(5))
    }
}

/// The targets of `record`'s relations with `predicate`, in order.
pub fn relations(record: &Value, predicate: &str) -> Vec<String> {
    record["relations"]
        .as_array()
        .expect("relations")
        .iter()
        .filter(|r| r["predicate"] == predicate)
        .map(|r| r["target_id"].as_str().expect("a target id").to_string())
        .collect()
}

/// Stores a whole record; answers it as stored.
pub async fn create(app: &TestApp, body: Value) -> Value {
    let (status, created) = app.post("/v1/records", &body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created["record"].clone()
}

/// Stores a whole record; answers its id.
pub async fn create_id(app: &TestApp, body: Value) -> String {
    create(app, body).await["id"].as_str().unwrap().to_string()
}

/// Within 1e-9.
pub fn close(actual: &Value, expected: f64) -> bool {
    (actual.as_f64().unwrap_or(f64::NAN) - expected).abs() < 1e-9
}

/// Within 1e-6, for values that went through decay arithmetic.
pub fn near(actual: &Value, expected: f64) -> bool {
    (actual.as_f64().unwrap_or(f64::NAN) - expected).abs() < 1e-6
}

/// Starts the service on a fresh database.
pub async fn spawn_app() -> TestApp {
    let dir = tempfile::tempdir().expect("temp dir");
    spawn_app_in(dir, |_| {}).await
}

/// Starts the service on a fresh database with adjusted settings.
pub async fn spawn_app_with(adjust: impl FnOnce(&mut Settings)) -> TestApp {
    let dir = tempfile::tempdir().expect("temp dir");
    spawn_app_in(dir, adjust).await
}

/// Starts the service on the database in `dir`, which may hold data.
pub async fn spawn_app_in(dir: TempDir, adjust: impl FnOnce(&mut Settings)) -> TestApp {
    let db_path = dir.path().join("engram.db");
    let mut settings = test_settings(&db_path);
    adjust(&mut settings);
    if std::env::var_os("TEST_LOG").is_some() {
        engram::telemetry::init(engram::config::LogFormat::Text, &settings.telemetry);
    }
    let (clock, handle) = Clock::manual(start_time());
    let app = Application::build(settings, clock)
        .await
        .expect("the service starts");
    let address = format!("http://{}", app.local_addr());
    let server_handle = app.handle();
    let writer = app.writer();
    let reader = app.reader();
    let read_gate = app.read_gate();
    let server = actix_web::rt::spawn(app.run_until_stopped());
    TestApp {
        address,
        client: awc::Client::builder()
            .timeout(Duration::from_secs(60))
            .finish(),
        clock: handle,
        writer,
        reader,
        read_gate,
        handle: server_handle,
        server,
        dir,
    }
}

impl TestApp {
    /// POSTs JSON; answers the status and the JSON body.
    pub async fn post(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        let response = self
            .client
            .post(format!("{}{}", self.address, path))
            .send_json(body)
            .await
            .expect("request sent");
        read(response).await
    }

    /// POSTs raw bytes as JSON.
    pub async fn post_raw(&self, path: &str, body: impl Into<Vec<u8>>) -> (StatusCode, Value) {
        let response = self
            .client
            .post(format!("{}{}", self.address, path))
            .insert_header(("content-type", "application/json"))
            .send_body(body.into())
            .await
            .expect("request sent");
        read(response).await
    }

    pub async fn put(&self, path: &str, body: &Value) -> (StatusCode, Value) {
        let response = self
            .client
            .put(format!("{}{}", self.address, path))
            .send_json(body)
            .await
            .expect("request sent");
        read(response).await
    }

    /// Sends `method path` with an optional JSON body and API key; answers
    /// the status, the JSON body and the headers.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        key: Option<&str>,
    ) -> (StatusCode, Value, awc::http::header::HeaderMap) {
        let method = awc::http::Method::from_bytes(method.as_bytes()).expect("a method");
        let mut request = self
            .client
            .request(method, format!("{}{}", self.address, path));
        if let Some(key) = key {
            request = request.insert_header(("authorization", format!("Bearer {key}")));
        }
        let response = match body {
            Some(body) => request.send_json(body).await,
            None => request.send().await,
        }
        .expect("request sent");
        let headers = response.headers().clone();
        let (status, body) = read(response).await;
        (status, body, headers)
    }

    /// The `Location` a `GET path` is sent to with a `308` (asked on a raw
    /// connection: the client would follow it).
    pub async fn permanent_redirect(&self, path: &str) -> String {
        let address = self.address.clone();
        let head = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        let answer =
            actix_web::rt::task::spawn_blocking(move || read_answer(raw_request(&address, &head)))
                .await
                .unwrap()
                .unwrap();
        assert!(answer.starts_with("HTTP/1.1 308"), "{answer}");
        answer
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("location")
                    .then(|| value.trim().to_string())
            })
            .unwrap_or_else(|| panic!("no location in {answer}"))
    }

    /// Makes an API key over HTTP with `admin` (none while the service is
    /// open); answers its secret.
    pub async fn make_key(&self, admin: Option<&str>, key: Value) -> String {
        let (status, body, _) = self.send("POST", "/v1/keys", Some(&key), admin).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["secret"].as_str().expect("a secret").to_string()
    }

    /// Makes the first key, `root`: an admin of every scope and
    /// sensitivity (after it, keys are needed); answers its secret.
    pub async fn root_key(&self) -> String {
        self.make_key(
            None,
            json!({"name": "root", "roles": ["admin"], "max_sensitivity": "hyper"}),
        )
        .await
    }

    /// Runs a maintenance job now and answers its result.
    pub async fn run_job(&self, name: &str) -> Value {
        let (status, body) = self
            .post(&format!("/v1/jobs/{name}/run"), &Value::Null)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["result"].clone()
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        let response = self
            .client
            .get(format!("{}{}", self.address, path))
            .send()
            .await
            .expect("request sent");
        read(response).await
    }

    /// Every record a fully trusted caller can see, retracted ones too.
    pub async fn all_records(&self) -> Vec<Value> {
        let (status, body) = self
            .post(
                "/v1/retrieve",
                &json!({"trust": trust("hyper", &[]), "include_retracted": true}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["records"].as_array().unwrap().clone()
    }

    pub async fn get_record(&self, id: &str) -> Value {
        let (status, body) = self
            .post(
                &format!("/v1/retrieve/{id}"),
                &json!({"trust": trust("hyper", &[])}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["record"].clone()
    }

    /// Record `id` as key `key` sees it.
    pub async fn get_record_as(&self, key: &str, id: &str) -> Value {
        let (status, body, _) = self
            .send(
                "POST",
                &format!("/v1/retrieve/{id}"),
                Some(&json!({})),
                Some(key),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["record"].clone()
    }

    /// The ids of the supersession history through `id`, as a fully
    /// trusted caller sees it.
    pub async fn history_ids(&self, id: &str) -> Vec<String> {
        let (status, body) = self
            .post(
                &format!("/v1/records/{id}/history"),
                &json!({"trust": trust("hyper", &[])}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        ids_in(&body, "chain")
    }

    /// Holds every writer until the answer is released (or dropped).
    pub async fn block_writer(&self) -> WritersHeld {
        use std::sync::{mpsc, Arc, Mutex};
        let (release, wait) = mpsc::channel::<()>();
        let (started, is_started) = mpsc::channel::<()>();
        let wait = Arc::new(Mutex::new(wait));
        let started = Arc::new(Mutex::new(started));
        for n in 0..self.writer.writers() {
            let (writer, wait, started) = (self.writer.clone(), wait.clone(), started.clone());
            let job = Hold {
                started: Some(started),
                wait,
                adds_only: n > 0,
            };
            // The first writer takes the first; each other one goes to the
            // least busy writer, which is not yet blocked.
            actix_web::rt::spawn(async move {
                let _ = writer.write(job).await;
            });
            let deadline = Deadline::after(10, "a writer to take the blocking job");
            while is_started.try_recv().is_err() {
                deadline.wait().await;
            }
        }
        WritersHeld { _release: release }
    }

    /// The database file the service runs on (SQLite).
    pub fn db_path(&self) -> std::path::PathBuf {
        self.dir.path().join("engram.db")
    }

    /// The environment that points another engram process at this app's
    /// database.
    pub fn database_env(&self) -> Vec<(&'static str, String)> {
        database_env_for(&self.db_path())
    }

    /// A number `sql` answers on the app's database, through a second
    /// connection, for tests that check what is stored. Parameters are
    /// text, written `?1`, `?2`… for either backend.
    pub fn sql_number(&self, sql: &str, params: &[&str]) -> i64 {
        match postgres_url_for(self.dir.path()) {
            Some(url) => {
                let sql = numbered_placeholders(sql);
                let params: Vec<String> = params.iter().map(|p| p.to_string()).collect();
                with_postgres(&url, async move |client| {
                    let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = params
                        .iter()
                        .map(|p| p as &(dyn tokio_postgres::types::ToSql + Sync))
                        .collect();
                    let row = client
                        .query_one(&sql, &params)
                        .await
                        .expect("the query runs");
                    row.try_get::<_, i64>(0)
                        .or_else(|_| row.try_get::<_, i32>(0).map(i64::from))
                        .expect("a number")
                })
            }
            None => self
                .sqlite()
                .query_row(sql, rusqlite::params_from_iter(params), |r| r.get(0))
                .unwrap(),
        }
    }

    /// Runs statements on the app's database through a second connection,
    /// for tests that need stored data no request could produce.
    pub fn sql_execute(&self, sql: &str) {
        match postgres_url_for(self.dir.path()) {
            Some(url) => {
                let sql = sql.to_string();
                with_postgres(&url, async move |client| {
                    client
                        .batch_execute(&sql)
                        .await
                        .expect("the statements run")
                })
            }
            None => self.sqlite().execute_batch(sql).unwrap(),
        }
    }

    fn sqlite(&self) -> rusqlite::Connection {
        let conn = rusqlite::Connection::open(self.db_path()).unwrap();
        conn.busy_timeout(Duration::from_secs(10)).unwrap();
        conn
    }

    /// Stops the server (queued writes finish) and hands back its directory.
    pub async fn stop(self) -> TempDir {
        self.handle.stop(true).await;
        self.server.await.expect("server task").expect("server ran");
        self.dir
    }
}

async fn read<S>(mut response: awc::ClientResponse<S>) -> (StatusCode, Value)
where
    S: futures_util::Stream<Item = Result<actix_web::web::Bytes, awc::error::PayloadError>> + Unpin,
{
    let status = response.status();
    let bytes = response
        .body()
        .limit(64 * 1024 * 1024)
        .await
        .expect("response body");
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
    };
    (status, body)
}

pub fn trust(max_sensitivity: &str, scopes: &[&str]) -> Value {
    json!({"max_sensitivity": max_sensitivity, "authenticated": true, "actor_id": "tester", "scopes": scopes})
}

/// Asserts an error response: status, code, and a message containing
/// `needle`.
#[track_caller]
pub fn assert_error(response: &(StatusCode, Value), status: StatusCode, code: &str, needle: &str) {
    let (actual, body) = response;
    assert_eq!(*actual, status, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(needle),
        "message {message:?} lacks {needle:?}"
    );
}

/// The ids of the records of a retrieval answer, in order.
pub fn ids(body: &Value) -> Vec<String> {
    ids_in(body, "records")
}

/// The ids of the records listed in `body[field]`, in order.
fn ids_in(body: &Value, field: &str) -> Vec<String> {
    body[field]
        .as_array()
        .unwrap_or_else(|| panic!("no {field} in {body}"))
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

pub fn event(source: &str) -> Value {
    json!({"source": source, "event_kind": "user_input", "ref": "msg-1", "summary": "hello"})
}

/// Sends `head` (a request line, headers and perhaps part of a body) on a
/// raw connection to `address` (`http://host:port`); the caller finishes
/// or abandons it.
pub fn raw_request(address: &str, head: &str) -> std::net::TcpStream {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(address.trim_start_matches("http://")).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.flush().unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

/// Everything the server sends back on a raw connection until it closes.
pub fn read_answer(mut stream: std::net::TcpStream) -> std::io::Result<String> {
    use std::io::Read;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    Ok(answer)
}

/// The writers [`TestApp::block_writer`] holds: every one goes on when
/// this is released or dropped.
pub struct WritersHeld {
    /// Dropped, it wakes every held writer.
    _release: std::sync::mpsc::Sender<()>,
}

impl WritersHeld {
    pub fn release(self) {}
}

/// Sends `method path` with `headers` and `body` on a raw connection;
/// answers the status and the body.
pub async fn raw(
    app: &TestApp,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &str,
) -> (u16, String) {
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    for header in headers {
        head.push_str(header);
        head.push_str("\r\n");
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    let address = app.address.clone();
    let answer =
        actix_web::rt::task::spawn_blocking(move || read_answer(raw_request(&address, &head)))
            .await
            .unwrap()
            .unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// A storage job that tells `started` it runs, then holds its storage
/// thread until `wait` gets a message or its sender is dropped.
pub struct Hold {
    pub started: Option<std::sync::Arc<std::sync::Mutex<std::sync::mpsc::Sender<()>>>>,
    pub wait: std::sync::Arc<std::sync::Mutex<std::sync::mpsc::Receiver<()>>>,
    /// Declared as adding new rows only: it may go to any writer.
    pub adds_only: bool,
}

impl engram::service::job::Job for Hold {
    type Output = ();
    const NAME: &'static str = "hold";

    fn adds_only(&self) -> bool {
        self.adds_only
    }

    fn run(
        self,
        _: &mut dyn engram::store::Transaction,
    ) -> Result<(), engram::service::ServiceError> {
        if let Some(started) = self.started {
            let _ = started.lock().unwrap().send(());
        }
        let _ = self.wait.lock().unwrap().recv();
        Ok(())
    }
}

/// A storage job with a bug: it panics.
pub struct Panics;

impl engram::service::job::Job for Panics {
    type Output = ();
    const NAME: &'static str = "panics";

    fn run(
        self,
        _: &mut dyn engram::store::Transaction,
    ) -> Result<(), engram::service::ServiceError> {
        panic!("a bug in a storage job")
    }
}
