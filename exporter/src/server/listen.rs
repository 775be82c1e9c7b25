//! `--web.listen-address` values and binding them before the server reports ready.

use socket2::{Domain, Protocol, Socket, Type};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, ToSocketAddrs};

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
        /// The host has no IPv6 (the wildcard bind falls back to IPv4).
        ipv6_missing: bool,
    },
}

/// What one `--web.listen-address` value asks to listen on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// `:port`: every interface, IPv6 and IPv4 alike where the host has IPv6.
    AllInterfaces(u16),
    /// `host:port` or `[v6]:port`: the addresses the host resolves to.
    Addresses(Vec<SocketAddr>),
}

/// What a flag value stands for.
pub fn resolve(value: &str) -> Result<Endpoint, ListenError> {
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
    if host.is_empty() {
        return Ok(Endpoint::AllInterfaces(port));
    }
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| invalid(&format!("cannot resolve {host}: {e}")))?
        .collect();
    if addrs.is_empty() {
        return Err(invalid(&format!("{host} resolves to no address")));
    }
    Ok(Endpoint::Addresses(addrs))
}

/// Binds every address of every value, failing on the first that cannot be bound.
pub fn bind_all(values: &[String]) -> Result<Vec<TcpListener>, ListenError> {
    let mut listeners = Vec::new();
    for value in values {
        match resolve(value)? {
            Endpoint::AllInterfaces(port) => listeners.push(bind_all_interfaces(port)?),
            Endpoint::Addresses(addrs) => {
                for addr in addrs {
                    listeners.push(bind(addr, false)?);
                }
            }
        }
    }
    Ok(listeners)
}

/// One dual-stack socket on `[::]:port` (IPv4 clients arrive as mapped addresses),
/// as Prometheus's own exporters do; `0.0.0.0:port` on a host without IPv6.
fn bind_all_interfaces(port: u16) -> Result<TcpListener, ListenError> {
    let v6 = SocketAddr::from((Ipv6Addr::UNSPECIFIED, port));
    match bind(v6, true) {
        Err(ListenError::Bind { ipv6_missing, .. }) if ipv6_missing => {
            bind(SocketAddr::from((Ipv4Addr::UNSPECIFIED, port)), false)
        }
        other => other,
    }
}

/// A listening, non-blocking socket on `addr`; `dual_stack` also takes IPv4 on an
/// IPv6 wildcard address whatever the host's `bindv6only` default.
fn bind(addr: SocketAddr, dual_stack: bool) -> Result<TcpListener, ListenError> {
    let failed = |e: std::io::Error| ListenError::Bind {
        addr,
        reason: bind_reason(&e),
        ipv6_missing: addr.is_ipv6()
            && matches!(
                e.raw_os_error(),
                Some(libc::EAFNOSUPPORT | libc::EADDRNOTAVAIL)
            ),
    };
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(failed)?;
    if dual_stack {
        socket.set_only_v6(false).map_err(failed)?;
    }
    socket.set_reuse_address(true).map_err(failed)?;
    socket.bind(&addr.into()).map_err(failed)?;
    socket.listen(1024).map_err(failed)?;
    socket.set_nonblocking(true).map_err(failed)?;
    Ok(socket.into())
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
        assert_eq!(resolve(":9090").unwrap(), Endpoint::AllInterfaces(9090));
    }

    #[test]
    fn explicit_v4_and_v6_addresses() {
        assert_eq!(
            resolve("127.0.0.1:80").unwrap(),
            Endpoint::Addresses(vec!["127.0.0.1:80".parse().unwrap()])
        );
        assert_eq!(
            resolve("[::1]:80").unwrap(),
            Endpoint::Addresses(vec!["[::1]:80".parse().unwrap()])
        );
    }

    #[test]
    fn a_bare_port_takes_ipv4_and_ipv6_clients_on_one_socket() {
        let listeners = bind_all(&[":0".to_string()]).unwrap();
        assert_eq!(listeners.len(), 1);
        let local = listeners[0].local_addr().unwrap();
        let port = local.port();
        std::net::TcpStream::connect(("127.0.0.1", port)).expect("IPv4 client refused");
        // IPv6 is only expected where this host has it.
        if std::net::TcpListener::bind("[::1]:0").is_ok() {
            assert!(local.is_ipv6(), "bound {local}, not the IPv6 wildcard");
            std::net::TcpStream::connect(("::1", port)).expect("IPv6 client refused");
        }
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
