//! Free loopback ports.

use std::net::{Ipv4Addr, TcpListener};

/// Returns a TCP port on 127.0.0.1 that was free a moment ago.
///
/// The port is released before it is returned, so another process may take it first;
/// [`crate::server::Server::start`] retries with a new port when that happens.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap_or_else(|e| panic!("cannot bind 127.0.0.1:0 to find a free port: {e}"));
    listener
        .local_addr()
        .unwrap_or_else(|e| panic!("cannot read the address of a bound socket: {e}"))
        .port()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_port_can_be_bound() {
        let port = free_port();
        assert_ne!(port, 0);
        TcpListener::bind((Ipv4Addr::LOCALHOST, port)).expect("the returned port is bindable");
    }
}
