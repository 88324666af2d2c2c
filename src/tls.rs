//! HTTPS: the rustls configuration made from the PEM files the settings
//! name, with the `ring` provider (no C toolchain beyond a compiler).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("server.tls_cert: cannot read certificates from {path}: {reason}")]
    Certificates { path: String, reason: String },
    #[error("server.tls_key: cannot read a private key from {path}: {reason}")]
    Key { path: String, reason: String },
    #[error("server.tls_cert and server.tls_key do not make a usable pair: {0}")]
    Pair(rustls::Error),
    #[error("storage.postgres_ca_file: cannot read certificates from {path}: {reason}")]
    Authorities { path: String, reason: String },
}

/// The certificates of a PEM file, or why there are none to read.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| e.to_string())?;
    if certificates.is_empty() {
        return Err("the file has no CERTIFICATE section".to_string());
    }
    Ok(certificates)
}

/// The TLS configuration serving the certificate chain in `cert` with the
/// private key in `key`.
pub fn server_config(cert: &Path, key: &Path) -> Result<ServerConfig, TlsError> {
    let certificates = certificates(cert).map_err(|reason| TlsError::Certificates {
        path: cert.display().to_string(),
        reason,
    })?;
    let private_key = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Key {
        path: key.display().to_string(),
        reason: e.to_string(),
    })?;
    ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Pair)?
        .with_no_client_auth()
        .with_single_cert(certificates, private_key)
        .map_err(TlsError::Pair)
}

/// The TLS configuration of a client that trusts the authorities in the
/// PEM file `authorities` only.
pub fn client_config(authorities: &Path) -> Result<ClientConfig, TlsError> {
    let unusable = |reason: String| TlsError::Authorities {
        path: authorities.display().to_string(),
        reason,
    };
    let mut roots = RootCertStore::empty();
    for certificate in certificates(authorities).map_err(unusable)? {
        roots
            .add(certificate)
            .map_err(|e| unusable(e.to_string()))?;
    }
    Ok(
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|e| unusable(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}
