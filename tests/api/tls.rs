//! HTTPS: a service given a certificate and key answers over TLS, to a
//! client that trusts the certificate, and not over plain HTTP.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, ServerName};

use crate::helpers::{raw_request, read_answer, spawn_app_with};

/// `GET path` over TLS to `port`, trusting only `certificate`; answers
/// the whole response.
fn https_get(port: u16, certificate: CertificateDer<'static>, path: &str) -> String {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certificate).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = ServerName::try_from("localhost").unwrap();
    let mut connection = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let mut socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut tls = rustls::Stream::new(&mut connection, &mut socket);
    write!(
        tls,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = Vec::new();
    // The server may close without a close_notify after the response.
    let _ = tls.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[actix_web::test]
async fn the_service_speaks_https_with_the_configured_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert_path = dir.path().join("cert.pem");
    let key_path = dir.path().join("key.pem");
    std::fs::write(&cert_path, generated.cert.pem()).unwrap();
    std::fs::write(&key_path, generated.signing_key.serialize_pem()).unwrap();
    let certificate = generated.cert.der().clone();

    let (cert, key) = (cert_path.clone(), key_path.clone());
    let app = spawn_app_with(move |s| {
        s.server.tls_cert = Some(cert);
        s.server.tls_key = Some(key);
    })
    .await;
    let port: u16 = app.address.rsplit(':').next().unwrap().parse().unwrap();
    let answer =
        actix_web::rt::task::spawn_blocking(move || https_get(port, certificate, "/healthz"))
            .await
            .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.contains("\"status\":\"ok\""), "{answer}");

    // Plain HTTP on the same port gets no HTTP answer.
    let address = app.address.clone();
    let plain = actix_web::rt::task::spawn_blocking(move || {
        read_answer(raw_request(
            &address,
            "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
        ))
        .unwrap_or_default()
    })
    .await
    .unwrap();
    assert!(!plain.contains("200 OK"), "{plain}");
}

#[actix_web::test]
async fn unreadable_tls_files_stop_start_up_naming_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pem");
    let mut settings = crate::helpers::test_settings(&dir.path().join("engram.db"));
    settings.server.tls_cert = Some(missing.clone());
    settings.server.tls_key = Some(missing);
    let (clock, _) = engram::clock::Clock::manual(crate::helpers::start_time());
    let message = engram::startup::Application::build(settings, clock)
        .await
        .err()
        .expect("refused")
        .to_string();
    assert!(message.starts_with("server.tls_cert:"), "{message}");
}

/// The test cluster's authority (tests/postgres.sh), when the tests run
/// on PostgreSQL.
fn database_authority() -> Option<std::path::PathBuf> {
    crate::helpers::postgres_admin_url()?;
    let ca = std::env::var_os("ENGRAM_TEST_DATABASE_CA").map(std::path::PathBuf::from);
    if ca.is_none() {
        eprintln!("not run: ENGRAM_TEST_DATABASE_CA names no authority of the test cluster");
    }
    ca
}

/// Settings for the database over TLS, trusting the authorities in `ca`.
fn over_tls(settings: &mut engram::config::Settings, ca: std::path::PathBuf) {
    let url = settings.storage.postgres_url.take().expect("a database");
    settings.storage.postgres_url = Some(format!("{url}?sslmode=require"));
    settings.storage.postgres_ca_file = Some(ca);
}

/// Why the service refuses to start over TLS trusting `ca`.
async fn refused_over_tls(ca: std::path::PathBuf) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = crate::helpers::test_settings(&dir.path().join("engram.db"));
    over_tls(&mut settings, ca);
    let (clock, _) = engram::clock::Clock::manual(crate::helpers::start_time());
    engram::startup::Application::build(settings, clock)
        .await
        .err()
        .expect("refused")
        .to_string()
}

#[actix_web::test]
async fn with_a_ca_file_every_database_connection_is_tls_to_a_verified_server() {
    let Some(ca) = database_authority() else {
        return;
    };
    let app = spawn_app_with(|settings| over_tls(settings, ca)).await;
    let id = crate::helpers::create_id(
        &app,
        serde_json::json!({"type": "semantic", "sensitivity": "low",
            "payload": {"kind": "semantic", "subject": "db", "predicate": "speaks", "object": "tls"}}),
    )
    .await;
    assert_eq!(app.get_record(&id).await["id"], id.as_str());
    let connections = |ssl: bool| {
        app.sql_number(
            &format!(
                "SELECT COUNT(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
                 WHERE a.datname = current_database() AND a.application_name = 'engram'
                   AND s.ssl = {ssl}"
            ),
            &[],
        )
    };
    assert!(connections(true) >= 2, "the writer and a reader at least");
    assert_eq!(connections(false), 0);

    // An authority that did not sign the server's certificate: refused.
    let other = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let stranger = dir.path().join("other-ca.pem");
    std::fs::write(&stranger, other.cert.pem()).unwrap();
    let message = refused_over_tls(stranger).await;
    assert!(message.contains("certificate"), "{message}");

    // A file without certificates: refused, naming the setting.
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "").unwrap();
    let message = refused_over_tls(empty).await;
    assert!(message.contains("storage.postgres_ca_file"), "{message}");
}
