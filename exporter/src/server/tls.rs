//! Builds the rustls server configuration (ring provider) from `tls_server_config`,
//! loading and checking every certificate and key before the server starts.

use super::cert_reload::{ReloadingCert, CHECK_EVERY};
use super::pem::load_roots;
use super::web_config::{ClientAuth, TlsSettings, TlsVersion, WebConfigError};
use rustls::server::WebPkiClientVerifier;
use rustls::ServerConfig;
use std::path::Path;
use std::sync::Arc;

/// A rustls config ready for `tokio_rustls::TlsAcceptor`, or an error naming the
/// config file, the field and the certificate file at fault.
pub fn server_config(
    settings: &TlsSettings,
    config_file: &Path,
) -> Result<Arc<ServerConfig>, WebConfigError> {
    let invalid = |field: &str, message: String| WebConfigError::Invalid {
        file: config_file.to_path_buf(),
        field: format!("tls_server_config.{field}"),
        message,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let pair = ReloadingCert::load(
        settings.cert.clone(),
        settings.key.clone(),
        provider.clone(),
        CHECK_EVERY,
    )
    .map_err(|e| invalid(e.field, e.message))?;
    let versions = protocol_versions(settings.min_version, settings.max_version);
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| invalid("min_version", e.to_string()))?;
    let builder = match (&settings.client_ca, settings.client_auth) {
        (Some(ca), ClientAuth::VerifyIfGiven | ClientAuth::RequireAndVerify) => {
            let roots = load_roots(ca).map_err(|m| invalid("client_ca_file", m))?;
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if settings.client_auth == ClientAuth::VerifyIfGiven {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| invalid("client_ca_file", e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        _ => builder.with_no_client_auth(),
    };
    let mut config = builder.with_cert_resolver(Arc::new(pair));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn protocol_versions(
    min: TlsVersion,
    max: TlsVersion,
) -> Vec<&'static rustls::SupportedProtocolVersion> {
    [
        (TlsVersion::Tls12, &rustls::version::TLS12),
        (TlsVersion::Tls13, &rustls::version::TLS13),
    ]
    .into_iter()
    .filter(|(v, _)| (min..=max).contains(v))
    .map(|(_, version)| version)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::web_config::WebConfig;

    fn write_pair(dir: &Path) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        std::fs::write(dir.join("server.crt"), cert.pem()).unwrap();
        std::fs::write(dir.join("server.key"), key.serialize_pem()).unwrap();
    }

    fn build(dir: &Path, yaml: &str) -> Result<Arc<ServerConfig>, WebConfigError> {
        let file = dir.join("web.yml");
        std::fs::write(&file, yaml).unwrap();
        let config = WebConfig::load(&file)?;
        server_config(config.tls.as_ref().unwrap(), &file)
    }

    #[test]
    fn loads_a_generated_pair_relative_to_the_config() {
        let dir = tempfile::tempdir().unwrap();
        write_pair(dir.path());
        build(
            dir.path(),
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n",
        )
        .unwrap();
    }

    #[test]
    fn missing_cert_file_names_config_field_and_path() {
        let dir = tempfile::tempdir().unwrap();
        write_pair(dir.path());
        let message = build(
            dir.path(),
            "tls_server_config:\n  cert_file: nope.crt\n  key_file: server.key\n",
        )
        .unwrap_err()
        .to_string();
        assert!(message.contains("web.yml"), "{message}");
        assert!(message.contains("tls_server_config.cert_file"), "{message}");
        assert!(message.contains("nope.crt"), "{message}");
    }

    #[test]
    fn a_key_given_as_cert_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        write_pair(dir.path());
        let message = build(
            dir.path(),
            "tls_server_config:\n  cert_file: server.key\n  key_file: server.key\n",
        )
        .unwrap_err()
        .to_string();
        assert!(message.contains("tls_server_config.cert_file"), "{message}");
    }

    #[test]
    fn mismatched_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        write_pair(dir.path());
        let other = rcgen::KeyPair::generate().unwrap();
        std::fs::write(dir.path().join("other.key"), other.serialize_pem()).unwrap();
        let message = build(
            dir.path(),
            "tls_server_config:\n  cert_file: server.crt\n  key_file: other.key\n",
        )
        .unwrap_err()
        .to_string();
        assert!(message.contains("tls_server_config.key_file"), "{message}");
    }

    #[test]
    fn tls13_only_offers_only_tls13() {
        let versions = protocol_versions(TlsVersion::Tls13, TlsVersion::Tls13);
        assert_eq!(versions.len(), 1);
        assert_eq!(versions[0].version, rustls::ProtocolVersion::TLSv1_3);
        assert_eq!(
            protocol_versions(TlsVersion::Tls12, TlsVersion::Tls13).len(),
            2
        );
    }
}
