//! `--web.config.file`: the Prometheus exporter-toolkit YAML format (TLS, basic auth,
//! response headers), parsed strictly and validated before the server starts.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Why a web config file was refused; every variant names the file and the field.
#[derive(Debug, thiserror::Error)]
pub enum WebConfigError {
    /// The file could not be read.
    #[error("web config {file}: cannot read: {source}")]
    Read {
        /// The config file.
        file: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The YAML is malformed or has an unknown field or a value of the wrong type.
    #[error("web config {file}: {source}")]
    Yaml {
        /// The config file.
        file: PathBuf,
        /// The YAML parser's error, which carries the field path and line.
        source: serde_yaml_ng::Error,
    },
    /// A field has a value poolprof cannot use.
    #[error("web config {file}: {field}: {message}")]
    Invalid {
        /// The config file.
        file: PathBuf,
        /// Dotted path of the field, e.g. `tls_server_config.cert_file`.
        field: String,
        /// What is wrong and what to do.
        message: String,
    },
}

/// A TLS protocol version as written in the file (`TLS12`, `TLS13`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    /// TLS 1.2.
    Tls12,
    /// TLS 1.3.
    Tls13,
}

/// Whether and how clients must present a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate is requested.
    None,
    /// A certificate is optional, but one that is sent must chain to `client_ca_file`.
    VerifyIfGiven,
    /// A certificate chaining to `client_ca_file` is required (mutual TLS).
    RequireAndVerify,
}

/// PEM material, from a file or inline in the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PemSource {
    /// A file path, already resolved against the config file's directory.
    File(PathBuf),
    /// PEM text written in the config itself.
    Inline(String),
}

/// The validated `tls_server_config`.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// Server certificate chain (`cert_file` or `cert`).
    pub cert: PemSource,
    /// Server private key (`key_file` or `key`).
    pub key: PemSource,
    /// Client certificate policy (`client_auth_type`).
    pub client_auth: ClientAuth,
    /// Trust anchors for client certificates (`client_ca_file` or `client_ca`).
    pub client_ca: Option<PemSource>,
    /// Lowest protocol version offered.
    pub min_version: TlsVersion,
    /// Highest protocol version offered.
    pub max_version: TlsVersion,
}

/// A validated web config.
#[derive(Debug, Clone, Default)]
pub struct WebConfig {
    /// The file it came from, for messages.
    pub file: PathBuf,
    /// TLS, when `tls_server_config` configures it.
    pub tls: Option<TlsSettings>,
    /// User name → bcrypt hash; empty means no basic auth.
    pub basic_auth_users: BTreeMap<String, String>,
    /// Extra response headers (`http_server_config.headers`).
    pub headers: Vec<(String, String)>,
    /// Settings accepted for compatibility but not applied, for the startup log.
    pub ignored: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    tls_server_config: Option<RawTls>,
    #[serde(default)]
    http_server_config: Option<RawHttp>,
    #[serde(default)]
    basic_auth_users: Option<BTreeMap<String, String>>,
    #[serde(default)]
    rate_limit: Option<RawRateLimit>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTls {
    cert_file: Option<String>,
    key_file: Option<String>,
    cert: Option<String>,
    key: Option<String>,
    client_auth_type: Option<String>,
    client_ca_file: Option<String>,
    client_ca: Option<String>,
    min_version: Option<String>,
    max_version: Option<String>,
    cipher_suites: Option<Vec<String>>,
    curve_preferences: Option<Vec<String>>,
    prefer_server_cipher_suites: Option<bool>,
    client_allowed_sans: Option<Vec<String>>,
}

impl RawTls {
    fn is_set(&self) -> bool {
        let text = [
            &self.cert_file,
            &self.key_file,
            &self.cert,
            &self.key,
            &self.client_auth_type,
            &self.client_ca_file,
            &self.client_ca,
            &self.min_version,
            &self.max_version,
        ];
        text.iter()
            .any(|v| v.as_deref().is_some_and(|s| !s.is_empty()))
            || self.cipher_suites.is_some()
            || self.curve_preferences.is_some()
            || self.prefer_server_cipher_suites.is_some()
            || self.client_allowed_sans.is_some()
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    http2: Option<bool>,
    headers: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRateLimit {
    #[allow(dead_code)] // read only to accept the field; --web.max-requests applies instead
    burst: Option<u64>,
    #[allow(dead_code)]
    interval: Option<String>,
}

/// Response headers exporter-toolkit lets users set, with the values it allows
/// (an empty list allows any value).
const ALLOWED_HEADERS: &[(&str, &[&str])] = &[
    ("Strict-Transport-Security", &[]),
    ("X-Content-Type-Options", &["nosniff"]),
    ("X-Frame-Options", &["deny", "sameorigin"]),
    ("X-XSS-Protection", &[]),
    ("Content-Security-Policy", &[]),
];

impl WebConfig {
    /// Reads and validates `file`; relative paths inside resolve against its directory.
    pub fn load(file: &Path) -> Result<WebConfig, WebConfigError> {
        let text = std::fs::read_to_string(file).map_err(|source| WebConfigError::Read {
            file: file.to_path_buf(),
            source,
        })?;
        Self::parse(&text, file)
    }

    /// Validates config text as if it had been read from `file`.
    pub fn parse(text: &str, file: &Path) -> Result<WebConfig, WebConfigError> {
        // An empty file is a valid config that turns nothing on, as in exporter-toolkit.
        let raw: RawConfig = if text.trim().is_empty() {
            RawConfig::default()
        } else {
            serde_yaml_ng::from_str(text).map_err(|source| WebConfigError::Yaml {
                file: file.to_path_buf(),
                source,
            })?
        };
        let checker = Checker {
            file,
            dir: file.parent().unwrap_or(Path::new("")),
        };
        checker.build(raw)
    }
}

struct Checker<'a> {
    file: &'a Path,
    dir: &'a Path,
}

impl Checker<'_> {
    fn invalid(&self, field: &str, message: impl Into<String>) -> WebConfigError {
        WebConfigError::Invalid {
            file: self.file.to_path_buf(),
            field: field.to_string(),
            message: message.into(),
        }
    }

    fn build(&self, raw: RawConfig) -> Result<WebConfig, WebConfigError> {
        let mut ignored = Vec::new();
        let tls = match raw.tls_server_config {
            Some(tls) => self.tls(tls, &mut ignored)?,
            None => None,
        };
        let basic_auth_users = self.users(raw.basic_auth_users.unwrap_or_default())?;
        let mut headers = Vec::new();
        if let Some(http) = raw.http_server_config {
            if http.http2 == Some(true) {
                ignored.push("http_server_config.http2: poolprof serves HTTP/1.1 only".to_string());
            }
            headers = self.headers(http.headers.unwrap_or_default())?;
        }
        if raw.rate_limit.is_some() {
            ignored.push("rate_limit: use --web.max-requests to bound load".to_string());
        }
        Ok(WebConfig {
            file: self.file.to_path_buf(),
            tls,
            basic_auth_users,
            headers,
            ignored,
        })
    }

    fn tls(
        &self,
        raw: RawTls,
        ignored: &mut Vec<String>,
    ) -> Result<Option<TlsSettings>, WebConfigError> {
        let field = |name: &str| format!("tls_server_config.{name}");
        // Any setting in the section means TLS was meant: refuse rather than fall back
        // to plain HTTP when the certificate is missing.
        let section_set = raw.is_set();
        let cert = self.pem_source(raw.cert_file, raw.cert, "cert_file", "cert")?;
        let key = self.pem_source(raw.key_file, raw.key, "key_file", "key")?;
        let client_ca = self.pem_source(
            raw.client_ca_file,
            raw.client_ca,
            "client_ca_file",
            "client_ca",
        )?;
        let client_auth = self.client_auth(raw.client_auth_type.as_deref())?;
        if !section_set {
            return Ok(None);
        }
        let cert = cert.ok_or_else(|| {
            self.invalid(
                &field("cert_file"),
                "missing: TLS needs cert_file (or cert) and key_file (or key)",
            )
        })?;
        let key = key.ok_or_else(|| {
            self.invalid(
                &field("key_file"),
                "missing: TLS needs cert_file (or cert) and key_file (or key)",
            )
        })?;
        match (client_auth, &client_ca) {
            (ClientAuth::None, Some(_)) => {
                return Err(self.invalid(
                    &field("client_auth_type"),
                    "client_ca_file is set but client_auth_type is NoClientCert: \
                     set RequireAndVerifyClientCert or VerifyClientCertIfGiven",
                ))
            }
            (ClientAuth::VerifyIfGiven | ClientAuth::RequireAndVerify, None) => {
                return Err(self.invalid(
                    &field("client_ca_file"),
                    "missing: verifying client certificates needs client_ca_file (or client_ca)",
                ))
            }
            _ => {}
        }
        if raw.client_allowed_sans.is_some() {
            return Err(self.invalid(
                &field("client_allowed_sans"),
                "not supported by poolprof: remove it and issue client certificates from a dedicated client_ca_file",
            ));
        }
        let min_version = self.version(
            raw.min_version.as_deref(),
            &field("min_version"),
            TlsVersion::Tls12,
        )?;
        let max_version = self.version(
            raw.max_version.as_deref(),
            &field("max_version"),
            TlsVersion::Tls13,
        )?;
        if min_version > max_version {
            return Err(self.invalid(&field("min_version"), "is above max_version"));
        }
        if raw.cipher_suites.is_some_and(|s| !s.is_empty()) {
            ignored.push(format!(
                "{}: rustls offers only its modern AEAD suites",
                field("cipher_suites")
            ));
        }
        if raw.curve_preferences.is_some_and(|c| !c.is_empty()) {
            ignored.push(format!(
                "{}: rustls chooses among X25519, P-256 and P-384",
                field("curve_preferences")
            ));
        }
        if raw.prefer_server_cipher_suites == Some(false) {
            ignored.push(format!(
                "{}: the server's order is always used",
                field("prefer_server_cipher_suites")
            ));
        }
        Ok(Some(TlsSettings {
            cert,
            key,
            client_auth,
            client_ca,
            min_version,
            max_version,
        }))
    }

    fn pem_source(
        &self,
        path: Option<String>,
        inline: Option<String>,
        path_field: &str,
        inline_field: &str,
    ) -> Result<Option<PemSource>, WebConfigError> {
        let path = path.filter(|p| !p.is_empty());
        let inline = inline.filter(|p| !p.is_empty());
        match (path, inline) {
            (Some(_), Some(_)) => Err(self.invalid(
                &format!("tls_server_config.{path_field}"),
                format!("set either {path_field} or {inline_field}, not both"),
            )),
            (Some(path), None) => Ok(Some(PemSource::File(self.dir.join(path)))),
            (None, Some(pem)) => Ok(Some(PemSource::Inline(pem))),
            (None, None) => Ok(None),
        }
    }

    fn client_auth(&self, value: Option<&str>) -> Result<ClientAuth, WebConfigError> {
        match value.unwrap_or("") {
            "" | "NoClientCert" => Ok(ClientAuth::None),
            "VerifyClientCertIfGiven" => Ok(ClientAuth::VerifyIfGiven),
            "RequireAndVerifyClientCert" => Ok(ClientAuth::RequireAndVerify),
            "RequestClientCert" | "RequireAnyClientCert" | "RequireClientCert" => Err(self
                .invalid(
                    "tls_server_config.client_auth_type",
                    format!(
                        "{} accepts certificates nobody verified and is not supported: \
                     use RequireAndVerifyClientCert or VerifyClientCertIfGiven with client_ca_file",
                        value.unwrap_or("")
                    ),
                )),
            other => Err(self.invalid(
                "tls_server_config.client_auth_type",
                format!(
                    "unknown value {other:?}: expected NoClientCert, VerifyClientCertIfGiven \
                     or RequireAndVerifyClientCert"
                ),
            )),
        }
    }

    fn version(
        &self,
        value: Option<&str>,
        field: &str,
        default: TlsVersion,
    ) -> Result<TlsVersion, WebConfigError> {
        match value {
            None | Some("") => Ok(default),
            Some("TLS12") => Ok(TlsVersion::Tls12),
            Some("TLS13") => Ok(TlsVersion::Tls13),
            Some(v @ ("TLS10" | "TLS11")) => Err(self.invalid(
                field,
                format!("{v} is insecure and not supported: use TLS12 or TLS13"),
            )),
            Some(other) => Err(self.invalid(
                field,
                format!("unknown TLS version {other:?}: expected TLS12 or TLS13"),
            )),
        }
    }

    fn users(
        &self,
        users: BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, WebConfigError> {
        for (user, hash) in &users {
            let field = format!("basic_auth_users.{user}");
            if user.is_empty() || user.contains(':') {
                return Err(
                    self.invalid(&field, "a user name must be non-empty and contain no ':'")
                );
            }
            if bcrypt::HashParts::from_str(hash).is_err() {
                return Err(self.invalid(
                    &field,
                    "is not a bcrypt hash: generate one with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`",
                ));
            }
        }
        Ok(users)
    }

    fn headers(
        &self,
        headers: BTreeMap<String, String>,
    ) -> Result<Vec<(String, String)>, WebConfigError> {
        headers
            .into_iter()
            .map(|(name, value)| {
                let field = format!("http_server_config.headers.{name}");
                let Some((canonical, allowed)) = ALLOWED_HEADERS
                    .iter()
                    .find(|(known, _)| known.eq_ignore_ascii_case(&name))
                else {
                    let names: Vec<_> = ALLOWED_HEADERS.iter().map(|(n, _)| *n).collect();
                    return Err(self.invalid(
                        &field,
                        format!(
                            "this header cannot be configured; allowed: {}",
                            names.join(", ")
                        ),
                    ));
                };
                if !allowed.is_empty() && !allowed.contains(&value.as_str()) {
                    return Err(self.invalid(
                        &field,
                        format!("invalid value {value:?}; expected one of {allowed:?}"),
                    ));
                }
                if hyper::header::HeaderValue::from_str(&value).is_err() {
                    return Err(self.invalid(&field, "contains characters not allowed in a header"));
                }
                Ok((canonical.to_string(), value))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<WebConfig, WebConfigError> {
        WebConfig::parse(text, Path::new("conf/web.yml"))
    }

    fn err(text: &str) -> String {
        parse(text)
            .expect_err("config should be refused")
            .to_string()
    }

    #[test]
    fn empty_file_turns_nothing_on() {
        let config = parse("").unwrap();
        assert!(config.tls.is_none());
        assert!(config.basic_auth_users.is_empty());
    }

    #[test]
    fn relative_paths_resolve_against_the_config_directory() {
        let config =
            parse("tls_server_config:\n  cert_file: a.crt\n  key_file: /abs/a.key\n").unwrap();
        let tls = config.tls.unwrap();
        assert_eq!(tls.cert, PemSource::File(PathBuf::from("conf/a.crt")));
        assert_eq!(tls.key, PemSource::File(PathBuf::from("/abs/a.key")));
        assert_eq!(tls.min_version, TlsVersion::Tls12);
        assert_eq!(tls.client_auth, ClientAuth::None);
    }

    #[test]
    fn unknown_field_is_named_with_file_and_line() {
        let message = err("tls_server_config:\n  cert_file: a\n  key_file: b\n  cert_flie: c\n");
        assert!(message.contains("conf/web.yml"), "{message}");
        assert!(message.contains("cert_flie"), "{message}");
        assert!(message.contains("line 4"), "{message}");
    }

    #[test]
    fn malformed_yaml_names_the_file_and_line() {
        let message = err("basic_auth_users:\n  alice: [unclosed\n");
        assert!(message.contains("conf/web.yml"), "{message}");
        assert!(message.contains("line"), "{message}");
    }

    #[test]
    fn wrong_type_names_the_field() {
        let message = err("basic_auth_users: 3\n");
        assert!(message.contains("basic_auth_users"), "{message}");
    }

    #[test]
    fn missing_key_file_is_named() {
        let message = err("tls_server_config:\n  cert_file: a.crt\n");
        assert!(message.contains("tls_server_config.key_file"), "{message}");
    }

    #[test]
    fn tls_settings_without_a_certificate_are_refused() {
        let message = err("tls_server_config:\n  min_version: TLS13\n");
        assert!(message.contains("tls_server_config.cert_file"), "{message}");
        assert!(parse("tls_server_config: {}\n").unwrap().tls.is_none());
    }

    #[test]
    fn min_version_is_checked() {
        let base = "tls_server_config:\n  cert_file: a\n  key_file: b\n";
        let config = parse(&format!("{base}  min_version: TLS13\n")).unwrap();
        assert_eq!(config.tls.unwrap().min_version, TlsVersion::Tls13);
        let message = err(&format!("{base}  min_version: TLS10\n"));
        assert!(
            message.contains("tls_server_config.min_version"),
            "{message}"
        );
        let message = err(&format!("{base}  min_version: TLS99\n"));
        assert!(message.contains("TLS99"), "{message}");
    }

    #[test]
    fn client_auth_needs_a_ca_and_a_ca_needs_client_auth() {
        let base = "tls_server_config:\n  cert_file: a\n  key_file: b\n";
        let message = err(&format!(
            "{base}  client_auth_type: RequireAndVerifyClientCert\n"
        ));
        assert!(
            message.contains("tls_server_config.client_ca_file"),
            "{message}"
        );
        let message = err(&format!("{base}  client_ca_file: ca.crt\n"));
        assert!(
            message.contains("tls_server_config.client_auth_type"),
            "{message}"
        );
        let config = parse(&format!(
            "{base}  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
        ))
        .unwrap();
        let tls = config.tls.unwrap();
        assert_eq!(tls.client_auth, ClientAuth::RequireAndVerify);
        assert_eq!(
            tls.client_ca,
            Some(PemSource::File(PathBuf::from("conf/ca.crt")))
        );
    }

    #[test]
    fn unverified_client_cert_modes_are_refused() {
        let message = err(
            "tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAnyClientCert\n",
        );
        assert!(message.contains("client_auth_type"), "{message}");
    }

    #[test]
    fn basic_auth_users_must_hold_bcrypt_hashes() {
        let hash = bcrypt::hash("secret", 4).unwrap();
        let config = parse(&format!("basic_auth_users:\n  alice: '{hash}'\n")).unwrap();
        assert_eq!(config.basic_auth_users["alice"], hash);
        let message = err("basic_auth_users:\n  bob: plaintext\n");
        assert!(message.contains("basic_auth_users.bob"), "{message}");
    }

    #[test]
    fn headers_are_limited_to_the_toolkit_list() {
        let config = parse("http_server_config:\n  headers:\n    X-Frame-Options: deny\n").unwrap();
        assert_eq!(
            config.headers,
            vec![("X-Frame-Options".to_string(), "deny".to_string())]
        );
        let message = err("http_server_config:\n  headers:\n    X-Frame-Options: allow\n");
        assert!(
            message.contains("http_server_config.headers.X-Frame-Options"),
            "{message}"
        );
        let message = err("http_server_config:\n  headers:\n    Server: poolprof\n");
        assert!(message.contains("headers.Server"), "{message}");
    }

    #[test]
    fn unsupported_but_harmless_settings_are_reported_as_ignored() {
        let config =
            parse("http_server_config:\n  http2: true\nrate_limit:\n  burst: 5\n  interval: 1s\n")
                .unwrap();
        assert_eq!(config.ignored.len(), 2, "{:?}", config.ignored);
    }
}
