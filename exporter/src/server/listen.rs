//! `--web.listen-address` values and binding them before the server reports ready.

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};

/// Why a listen address could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    /// The value is not `host:port`, `:port` or `[v6]:port`.
    #[error("--web.listen-address {value:?}: {message}")]
    Invalid {
        /// The flag value.
        value: String,
        /// What is wrong.
        message: String,
    },
    /// Binding failed (port in use, no permission, address not on this host).
    #[error("listen on {addr}: {reason}; choose another with --web.listen-address")]
    Bind {
        /// The address that could not be bound.
        addr: SocketAddr,
        /// Why, in words.
        reason: String,
    },
}

/// The socket addresses a flag value stands for; `:9090` means every IPv4 interface.
pub fn resolve(value: &str) -> Result<Vec<SocketAddr>, ListenError> {
    let invalid = |message: &str| ListenError::Invalid {
        value: value.to_string(),
        message: message.to_string(),
    };
    let (host, port) = value
        .rsplit_once(':')
        .ok_or_else(|| invalid("expected host:port or :port"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| invalid("the port must be a number from 0 to 65535"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| invalid(&format!("cannot resolve {host}: {e}")))?
        .collect();
    if addrs.is_empty() {
        return Err(invalid(&format!("{host} resolves to no address")));
    }
    Ok(addrs)
}

/// Binds every address of every value, failing on the first that cannot be bound.
pub fn bind_all(values: &[String]) -> Result<Vec<TcpListener>, ListenError> {
    let mut listeners = Vec::new();
    for value in values {
        for addr in resolve(value)? {
            let listener = TcpListener::bind(addr).map_err(|e| ListenError::Bind {
                addr,
                reason: bind_reason(&e),
            })?;
            listener
                .set_nonblocking(true)
                .map_err(|e| ListenError::Bind {
                    addr,
                    reason: e.to_string(),
                })?;
            listeners.push(listener);
        }
    }
    Ok(listeners)
}

fn bind_reason(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::AddrInUse => "address already in use".to_string(),
        std::io::ErrorKind::PermissionDenied => {
            "permission denied (ports below 1024 need privileges)".to_string()
        }
        std::io::ErrorKind::AddrNotAvailable => "address not available on this host".to_string(),
        _ => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_port_means_all_interfaces() {
        assert_eq!(
            resolve(":9090").unwrap(),
            vec!["0.0.0.0:9090".parse().unwrap()]
        );
    }

    #[test]
    fn explicit_v4_and_v6_addresses() {
        assert_eq!(
            resolve("127.0.0.1:80").unwrap(),
            vec!["127.0.0.1:80".parse().unwrap()]
        );
        assert_eq!(
            resolve("[::1]:80").unwrap(),
            vec!["[::1]:80".parse().unwrap()]
        );
    }

    #[test]
    fn bad_values_are_refused_with_the_value() {
        for value in ["9090", "host:", ":http", ":70000"] {
            let message = resolve(value).unwrap_err().to_string();
            assert!(message.contains(value), "{message}");
        }
    }

    #[test]
    fn port_in_use_names_the_address_and_the_flag() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let message = bind_all(std::slice::from_ref(&addr))
            .unwrap_err()
            .to_string();
        assert_eq!(
            message,
            format!("listen on {addr}: address already in use; choose another with --web.listen-address")
        );
    }
}
