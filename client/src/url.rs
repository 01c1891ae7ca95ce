//! `nfs://host[:port]/path` URLs, as the `pnfs` command line takes them (RFC 2224's form,
//! without its public-filehandle details: the path is from the server's root), and
//! `nfs+rdma://host[:port]/path` for the same over RPC-over-RDMA (port 20049 by default).

use std::net::{SocketAddr, ToSocketAddrs};

use crate::error::{Error, Result};

/// The NFS port when a URL names none.
pub const DEFAULT_PORT: u16 = 2049;

/// The NFS-over-RDMA port when an `nfs+rdma://` URL names none (IANA "nfsrdma", knfsd's).
pub const DEFAULT_RDMA_PORT: u16 = 20049;

/// A parsed `nfs://` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NfsUrl {
    /// Host name or address (brackets removed from an IPv6 literal).
    pub host: String,
    /// Port.
    pub port: u16,
    /// Path from the server's root, starting with `/` (`/` for the root itself).
    pub path: String,
    /// RPC-over-RDMA (`nfs+rdma://`) rather than TCP.
    pub rdma: bool,
}

impl NfsUrl {
    /// Parses `nfs://host[:port][/path]` or `nfs+rdma://host[:port][/path]`.
    pub fn parse(s: &str) -> Result<NfsUrl> {
        let (rdma, rest) = match (s.strip_prefix("nfs://"), s.strip_prefix("nfs+rdma://")) {
            (Some(rest), _) => (false, rest),
            (None, Some(rest)) => (true, rest),
            (None, None) => return Err(Error::Invalid(format!("{s}: not an nfs:// URL"))),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, tail) = v6
                .split_once(']')
                .ok_or_else(|| Error::Invalid(format!("{s}: unclosed [ in the host")))?;
            let port = match tail.strip_prefix(':') {
                Some(p) => Some(p),
                None if tail.is_empty() => None,
                None => return Err(Error::Invalid(format!("{s}: junk after the IPv6 host"))),
            };
            (h, port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(Error::Invalid(format!("{s}: no host")));
        }
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .map_err(|_| Error::Invalid(format!("{s}: bad port {p:?}")))?,
            None if rdma => DEFAULT_RDMA_PORT,
            None => DEFAULT_PORT,
        };
        Ok(NfsUrl {
            host: host.to_string(),
            port,
            path: if path.is_empty() {
                "/".into()
            } else {
                path.to_string()
            },
            rdma,
        })
    }

    /// The same server over RPC-over-RDMA: an `nfs://` URL on the default NFS port moves to
    /// the default NFS-over-RDMA port (the command line's `--rdma`).
    pub fn over_rdma(&self) -> NfsUrl {
        if self.rdma {
            return self.clone();
        }
        NfsUrl {
            port: if self.port == DEFAULT_PORT {
                DEFAULT_RDMA_PORT
            } else {
                self.port
            },
            rdma: true,
            ..self.clone()
        }
    }

    /// The server's socket address (the first the host name resolves to).
    pub fn addr(&self) -> Result<SocketAddr> {
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| Error::Invalid(format!("{}: {e}", self.host)))?
            .next()
            .ok_or_else(|| Error::Invalid(format!("{}: no address", self.host)))
    }

    /// The same server with another path.
    pub fn with_path(&self, path: &str) -> NfsUrl {
        NfsUrl {
            path: path.to_string(),
            ..self.clone()
        }
    }
}

impl std::fmt::Display for NfsUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = if self.rdma { "nfs+rdma" } else { "nfs" };
        if self.host.contains(':') {
            write!(f, "{scheme}://[{}]:{}{}", self.host, self.port, self.path)
        } else {
            write!(f, "{scheme}://{}:{}{}", self.host, self.port, self.path)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_and_without_port_and_path() {
        let u = NfsUrl::parse("nfs://127.0.0.1:20490/a/b").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 20490, "/a/b")
        );
        let u = NfsUrl::parse("nfs://server").unwrap();
        assert_eq!((u.port, u.path.as_str()), (2049, "/"));
        let u = NfsUrl::parse("nfs://[::1]:2050/x").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("::1", 2050, "/x")
        );
        assert_eq!(u.to_string(), "nfs://[::1]:2050/x");
        assert!(!u.rdma);
    }

    #[test]
    fn rdma_urls_default_to_port_20049() {
        let u = NfsUrl::parse("nfs+rdma://10.99.0.1/big").unwrap();
        assert_eq!((u.port, u.rdma, u.path.as_str()), (20049, true, "/big"));
        assert_eq!(u.to_string(), "nfs+rdma://10.99.0.1:20049/big");
        let u = NfsUrl::parse("nfs+rdma://h:7/").unwrap();
        assert_eq!((u.port, u.rdma), (7, true));
        let u = NfsUrl::parse("nfs://h/x").unwrap().over_rdma();
        assert_eq!((u.port, u.rdma), (20049, true));
        let u = NfsUrl::parse("nfs://h:3049/x").unwrap().over_rdma();
        assert_eq!((u.port, u.rdma), (3049, true));
        assert!(NfsUrl::parse("nfs+tcp://h/").is_err());
    }

    #[test]
    fn bad_urls_are_refused_with_a_reason() {
        for bad in [
            "http://x/",
            "nfs://",
            "nfs://:20/",
            "nfs://h:port/",
            "nfs://[::1/",
        ] {
            let e = NfsUrl::parse(bad).unwrap_err().to_string();
            assert!(
                e.contains(bad.trim_end_matches('/')) || e.contains("nfs://"),
                "{bad}: {e}"
            );
        }
    }
}
